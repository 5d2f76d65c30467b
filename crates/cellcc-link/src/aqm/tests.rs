//! Configuration (serde spelling, defaults, validation, display) and the lazy replay of
//! PIE's periodic updates. Algorithm tests with worked numbers live next to the code
//! (`codel.rs`, `pie/rfc.rs`, `pie/mahimahi.rs`); link-level acceptance tests in
//! `tests/aqm.rs`.

use std::collections::VecDeque;

use cellcc_units::{Dur, Time};
use serde::de::value::{Error as DeError, MapDeserializer};
use serde::de::{IntoDeserializer, Visitor};
use serde::Deserialize;

use super::*;
use crate::discipline::QueueSpec;
use crate::queue::{PacketQueue, Queued};

/// A scalar of a scenario table, to deserialize a `QueueSpec` as the scenario loader
/// does (an internally tagged map) without a TOML parser.
#[derive(Clone, Copy)]
enum V {
    S(&'static str),
    U(u64),
    B(bool),
}

struct VDeserializer(V);

impl<'de> serde::Deserializer<'de> for VDeserializer {
    type Error = DeError;
    fn deserialize_any<W: Visitor<'de>>(self, visitor: W) -> Result<W::Value, DeError> {
        match self.0 {
            V::S(s) => visitor.visit_str(s),
            V::U(u) => visitor.visit_u64(u),
            V::B(b) => visitor.visit_bool(b),
        }
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct
        enum identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, DeError> for V {
    type Deserializer = VDeserializer;
    fn into_deserializer(self) -> VDeserializer {
        VDeserializer(self)
    }
}

fn parse(fields: &[(&'static str, V)]) -> Result<QueueSpec, String> {
    QueueSpec::deserialize(MapDeserializer::new(fields.iter().copied())).map_err(|e| e.to_string())
}

#[test]
fn scenario_spelling_and_defaults() {
    use V::*;
    let codel = parse(&[
        ("kind", S("codel")),
        ("target_ms", U(5)),
        ("interval_ms", U(100)),
        ("packets", U(1000)),
        ("variant", S("rfc")),
    ]);
    assert_eq!(
        codel,
        Ok(QueueSpec::Codel(CodelConfig {
            packets: Some(1000),
            ..CodelConfig::default()
        }))
    );
    let pie = parse(&[
        ("kind", S("pie")),
        ("qdelay_ref_ms", U(15)),
        ("max_burst_ms", U(150)),
        ("variant", S("mahimahi")),
    ]);
    assert_eq!(
        pie,
        Ok(QueueSpec::Pie(PieConfig {
            variant: AqmVariant::Mahimahi,
            ..PieConfig::default()
        }))
    );
    let options = parse(&[
        ("kind", S("pie")),
        ("delay_estimator", S("dequeue_rate")),
        ("derandomize", B(true)),
        ("t_update_ms", U(10)),
        ("bytes", U(100_000)),
    ])
    .unwrap();
    let QueueSpec::Pie(options) = options else {
        panic!("{options:?}")
    };
    assert_eq!(
        options.delay_estimator,
        Some(PieDelayEstimator::DequeueRate)
    );
    assert!(options.derandomize && !options.cap_drop_adjustment);
    assert_eq!((options.t_update_ms(), options.bytes), (10, Some(100_000)));
    // Every parameter has a default: the RFC's.
    let bare = parse(&[("kind", S("codel"))]).unwrap();
    assert_eq!(bare, QueueSpec::Codel(CodelConfig::default()));
    assert_eq!(
        (
            CodelConfig::default().target_ms,
            CodelConfig::default().interval_ms
        ),
        (5, 100)
    );
    let p = PieConfig::default();
    assert_eq!(
        (p.qdelay_ref_ms, p.max_burst_ms, p.t_update_ms()),
        (15, 150, 15)
    );
    let m = PieConfig {
        variant: AqmVariant::Mahimahi,
        ..p
    };
    assert_eq!(m.t_update_ms(), 30);
}

#[test]
fn scenario_spelling_errors() {
    use V::*;
    let unknown = parse(&[("kind", S("codel")), ("target", U(5))]).unwrap_err();
    assert!(unknown.contains("unknown field `target`"), "{unknown}");
    let variant = parse(&[("kind", S("pie")), ("variant", S("linux"))]).unwrap_err();
    assert!(variant.contains("unknown variant `linux`"), "{variant}");
    let estimator = parse(&[("kind", S("pie")), ("delay_estimator", S("rate"))]).unwrap_err();
    assert!(estimator.contains("unknown variant `rate`"), "{estimator}");
}

#[test]
fn validation_names_the_parameter() {
    let codel = |c: CodelConfig| c.validate().unwrap_err().to_string();
    let d = CodelConfig::default();
    assert_eq!(
        codel(CodelConfig { target_ms: 0, ..d }),
        "codel: target_ms must be > 0"
    );
    assert_eq!(
        codel(CodelConfig {
            interval_ms: 0,
            ..d
        }),
        "codel: interval_ms must be > 0"
    );
    assert_eq!(
        codel(CodelConfig {
            bytes: Some(0),
            ..d
        }),
        "codel: bytes must be > 0; omit it for no bytes limit"
    );
    let pie = |c: PieConfig| c.validate().unwrap_err();
    let p = PieConfig::default();
    assert_eq!(
        pie(PieConfig {
            qdelay_ref_ms: 0,
            ..p
        })
        .parameter,
        "qdelay_ref_ms"
    );
    assert_eq!(
        pie(PieConfig {
            t_update_ms: Some(0),
            ..p
        })
        .to_string(),
        "pie: t_update_ms must be > 0"
    );
    assert_eq!(
        pie(PieConfig {
            max_burst_ms: MAX_AQM_TIME_MS + 1,
            ..p
        })
        .parameter,
        "max_burst_ms"
    );
    // 0 disables burst protection in the RFC variant; Mahimahi refuses it.
    assert!(PieConfig {
        max_burst_ms: 0,
        ..p
    }
    .validate()
    .is_ok());
    let m = PieConfig {
        variant: AqmVariant::Mahimahi,
        ..p
    };
    assert_eq!(
        pie(PieConfig {
            max_burst_ms: 0,
            ..m
        })
        .parameter,
        "max_burst_ms"
    );
    for (config, parameter) in [
        (
            PieConfig {
                delay_estimator: Some(PieDelayEstimator::Timestamp),
                ..m
            },
            "delay_estimator",
        ),
        (
            PieConfig {
                cap_drop_adjustment: true,
                ..m
            },
            "cap_drop_adjustment",
        ),
    ] {
        let err = pie(config);
        assert_eq!(err.parameter, parameter);
        assert!(err.to_string().contains("rfc-variant option"), "{err}");
    }
    // Through the queue spec and the link constructor.
    let spec = QueueSpec::Codel(CodelConfig {
        interval_ms: 0,
        ..d
    });
    assert_eq!(
        spec.validate().unwrap_err().to_string(),
        "codel: interval_ms must be > 0"
    );
}

#[test]
fn display_uses_mahimahi_spelling() {
    let codel = CodelConfig {
        variant: AqmVariant::Mahimahi,
        packets: Some(1000),
        ..CodelConfig::default()
    };
    assert_eq!(
        QueueSpec::Codel(codel).to_string(),
        "codel target=5, interval=100, packets=1000"
    );
    assert_eq!(
        CodelConfig::default().to_string(),
        "codel target=5, interval=100, variant=rfc"
    );
    let pie = PieConfig {
        variant: AqmVariant::Mahimahi,
        bytes: Some(150_000),
        ..PieConfig::default()
    };
    assert_eq!(
        QueueSpec::Pie(pie).to_string(),
        "pie qdelay_ref=15, max_burst=150, bytes=150000"
    );
    let rfc = PieConfig {
        t_update_ms: Some(15),
        delay_estimator: Some(PieDelayEstimator::DequeueRate),
        derandomize: true,
        ..PieConfig::default()
    };
    assert_eq!(
        rfc.to_string(),
        "pie qdelay_ref=15, max_burst=150, variant=rfc, delay_estimator=dequeue_rate, \
         derandomize=true"
    );
    let slow = PieConfig {
        t_update_ms: Some(15),
        ..pie
    };
    assert!(slow.to_string().ends_with(", t_update=15"), "{slow}");
}

/// One step of a deterministic workload: an arrival at `t`, or a dequeue at `t`.
#[derive(Clone, Copy, Debug)]
enum Step {
    Arrive(Time),
    Depart(Time),
}

/// 3 s of 15 Mbit/s into a 10 Mbit/s server, 2 s idle, then 2 s at 5 Mbit/s.
fn workload() -> Vec<Step> {
    let mut steps = Vec::new();
    let mut arrivals: Vec<Time> = (0..3750u64).map(|k| Time::from_us(800 * k)).collect();
    arrivals.extend((0..833u64).map(|k| Time::from_secs(5) + Dur::from_us(2400 * k)));
    let departures = (0..7000u64).map(|k| Time::from_us(1200 * k + 1));
    steps.extend(arrivals.into_iter().map(Step::Arrive));
    steps.extend(departures.map(Step::Depart));
    steps.sort_by_key(|s| match *s {
        Step::Arrive(t) | Step::Depart(t) => t,
    });
    steps
}

/// Runs `workload` on a PIE queue; `ticks` adds a timer call every `tick` between
/// events. Returns the arrivals dropped early and the drop probability after each step.
fn replay(config: PieConfig, tick: Option<Dur>) -> (Vec<usize>, Vec<u64>) {
    let mut q: Pie<usize> = Pie::new(config, 42).unwrap();
    let mut drops = VecDeque::new();
    let mut probs = Vec::new();
    let mut next_tick = Time::ZERO;
    for (i, step) in workload().into_iter().enumerate() {
        let (Step::Arrive(t) | Step::Depart(t)) = step;
        if let Some(tick) = tick {
            while next_tick < t {
                q.tick(next_tick);
                next_tick += tick;
            }
        }
        match step {
            Step::Arrive(t) => {
                let p = Queued {
                    item: i,
                    ip_len: 1500,
                    charged_bytes: 1500,
                    enqueued_at: t,
                };
                q.enqueue(t, p, &mut drops).unwrap();
            }
            Step::Depart(t) => {
                q.dequeue(t, &mut drops);
            }
        }
        probs.push(q.drop_prob().to_bits());
    }
    (drops.into_iter().map(|d| d.item).collect(), probs)
}

#[test]
fn rfc_pie_lazy_replay_equals_a_timer() {
    for estimator in [PieDelayEstimator::Timestamp, PieDelayEstimator::DequeueRate] {
        let config = PieConfig {
            delay_estimator: Some(estimator),
            ..PieConfig::default()
        };
        let (lazy_drops, lazy_probs) = replay(config, None);
        for tick in [
            Dur::from_us(100),
            Dur::from_ms(1),
            Dur::from_ms(15),
            Dur::from_ms(7),
        ] {
            let (drops, probs) = replay(config, Some(tick));
            assert_eq!(drops, lazy_drops, "{estimator:?}, tick {tick}");
            assert!(probs == lazy_probs, "{estimator:?}, tick {tick}");
        }
        assert!(
            lazy_drops.len() > 100,
            "{estimator:?}: the workload overloads"
        );
        assert!(lazy_probs.iter().any(|&p| f64::from_bits(p) > 0.2));
        assert_eq!(f64::from_bits(*lazy_probs.last().unwrap()), 0.0);
    }
}
