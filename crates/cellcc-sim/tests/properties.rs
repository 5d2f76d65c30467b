//! Invariants over random scenarios: exactly-once delivery, packet conservation,
//! determinism, and seed sensitivity.

use cellcc_sim::{run, Scenario};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Spec {
    rate_mbps: f64,
    trace: Option<Vec<u32>>,
    delay_ms: f64,
    up_delay_ms: f64,
    queue: Option<(bool, u64)>,
    loss: f64,
    ack_loss: f64,
    flows: Vec<(String, f64, u64)>,
    duration_s: f64,
    seed: u64,
}

fn scenario_text(s: &Spec, trace_path: Option<&str>) -> String {
    let capacity = match trace_path {
        Some(p) => format!("trace = \"{p}\""),
        None => format!("rate_mbps = {}", s.rate_mbps),
    };
    let queue = match s.queue {
        None => "{ kind = \"infinite\" }".to_string(),
        Some((true, n)) => format!("{{ kind = \"droptail\", packets = {n} }}"),
        Some((false, n)) => format!("{{ kind = \"drophead\", packets = {n} }}"),
    };
    let mut t = format!(
        "duration_s = {}\nseed = {}\n[downlink]\n{capacity}\ndelay_ms = {}\nqueue = {queue}\nloss = {}\n\
         [uplink]\nrate_mbps = 50.0\ndelay_ms = {}\nloss = {}\n",
        s.duration_s, s.seed, s.delay_ms, s.loss, s.up_delay_ms, s.ack_loss
    );
    for (scheme, start, bytes) in &s.flows {
        t += &format!(
            "[[flows]]\nscheme = \"{scheme}\"\nstart_s = {start}\napp = {{ bytes = {bytes} }}\n"
        );
    }
    t
}

fn load(s: &Spec) -> (Scenario, Option<tempdir::Dir>) {
    let dir = s.trace.as_ref().map(|ts| tempdir::Dir::with_trace(ts));
    let text = scenario_text(s, dir.as_ref().map(|d| d.trace.as_str()));
    let sc = Scenario::parse(&text, "prop.toml", None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (sc, dir)
}

/// A throwaway directory holding one generated trace.
mod tempdir {
    pub(crate) struct Dir {
        path: std::path::PathBuf,
        pub trace: String,
    }
    impl Dir {
        pub(crate) fn with_trace(ts: &[u32]) -> Dir {
            use std::sync::atomic::{AtomicU64, Ordering};
            static N: AtomicU64 = AtomicU64::new(0);
            let path = std::env::temp_dir().join(format!(
                "cellcc-prop-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            let file = path.join("t.trace");
            let body: String = ts.iter().map(|t| format!("{t}\n")).collect();
            std::fs::write(&file, body).unwrap();
            Dir {
                trace: file.display().to_string(),
                path,
            }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn arb_trace() -> impl Strategy<Value = Vec<u32>> {
    // 1..40 ms of opportunities with gaps and repeats; the trace loops.
    prop::collection::vec(0u32..4, 5..60).prop_map(|gaps| {
        let mut t = 0;
        let mut out = Vec::with_capacity(gaps.len());
        for g in gaps {
            t += g;
            out.push(t.max(1));
        }
        out
    })
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    (
        1.0f64..30.0,
        prop::option::of(arb_trace()),
        0.0f64..40.0,
        0.0f64..40.0,
        prop::option::of((any::<bool>(), 4u64..200)),
        prop_oneof![Just(0.0), 0.0f64..0.05],
        prop_oneof![Just(0.0), 0.0f64..0.05],
        prop::collection::vec(
            (
                prop::sample::select(vec!["newreno", "cubic", "bbr"]),
                0.0f64..2.0,
                1u64..400_000,
            ),
            1..4,
        ),
        any::<u64>(),
    )
        .prop_map(
            |(rate, trace, d, ud, queue, loss, ack_loss, flows, seed)| Spec {
                rate_mbps: (rate * 10.0).round() / 10.0,
                trace,
                delay_ms: d.round(),
                up_delay_ms: ud.round(),
                queue,
                loss: (loss * 1000.0).round() / 1000.0,
                ack_loss: (ack_loss * 1000.0).round() / 1000.0,
                flows: flows
                    .into_iter()
                    .map(|(s, st, b)| (s.to_string(), (st * 10.0).round() / 10.0, b))
                    .collect(),
                duration_s: 40.0,
                seed: seed % 1_000_000,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every payload byte reaches the application exactly once: never more than the
    /// flow's size, and all of it once the flow completes. Every data packet is
    /// delivered, dropped or still in the network at the end.
    #[test]
    fn delivery_is_exactly_once_and_packets_are_conserved(spec in arb_spec()) {
        let (sc, _dir) = load(&spec);
        let out = run(&sc).expect("the scenario runs");
        for (i, (_, _, bytes)) in spec.flows.iter().enumerate() {
            let row = &out.summary[i];
            prop_assert!(row.app_bytes <= *bytes, "flow {i} delivered {} > {bytes}", row.app_bytes);
            if row.completion_s.is_some() {
                prop_assert_eq!(row.app_bytes, *bytes);
            }
        }
        let c = out.conservation;
        prop_assert_eq!(c.data_sent, c.data_delivered + c.data_dropped + c.data_in_network, "{:?}", c);
        prop_assert_eq!(c.acks_sent, c.acks_delivered + c.acks_dropped + c.acks_in_network, "{:?}", c);
    }

    /// The same scenario and seed give bit-identical output.
    #[test]
    fn identical_seed_gives_identical_output(spec in arb_spec()) {
        let (sc, _dir) = load(&spec);
        let a = run(&sc).expect("the scenario runs");
        let b = run(&sc).expect("the scenario runs");
        prop_assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
        prop_assert_eq!(serde_json::to_string(&a.timeseries).unwrap(), serde_json::to_string(&b.timeseries).unwrap());
        prop_assert_eq!(a.events, b.events);
    }
}

/// Small flows on a lossless path all complete, delivering every byte.
#[test]
fn finite_flows_complete_without_loss() {
    let spec = Spec {
        rate_mbps: 10.0,
        trace: None,
        delay_ms: 10.0,
        up_delay_ms: 10.0,
        queue: Some((true, 50)),
        loss: 0.0,
        ack_loss: 0.0,
        flows: vec![
            ("cubic".into(), 0.0, 1_000_000),
            ("bbr".into(), 0.5, 2_000_000),
            ("newreno".into(), 1.0, 12_345),
        ],
        duration_s: 20.0,
        seed: 3,
    };
    let (sc, _dir) = load(&spec);
    let out = run(&sc).expect("the scenario runs");
    for (i, (_, _, bytes)) in spec.flows.iter().enumerate() {
        assert_eq!(out.summary[i].app_bytes, *bytes, "flow {i}");
        assert!(
            out.summary[i].completion_s.is_some(),
            "flow {i} did not complete"
        );
    }
}

/// Different seeds draw different random losses.
#[test]
fn different_seeds_give_different_loss_patterns() {
    let mk = |seed| Spec {
        rate_mbps: 10.0,
        trace: None,
        delay_ms: 10.0,
        up_delay_ms: 10.0,
        queue: None,
        loss: 0.02,
        ack_loss: 0.0,
        flows: vec![("cubic".into(), 0.0, 5_000_000)],
        duration_s: 10.0,
        seed,
    };
    let outs: Vec<_> = (1..=3)
        .map(|s| run(&load(&mk(s)).0).expect("the scenario runs"))
        .collect();
    let series: Vec<String> = outs
        .iter()
        .map(|o| serde_json::to_string(&o.timeseries.egress_mbps).unwrap())
        .collect();
    let drops: Vec<u64> = outs.iter().map(|o| o.summary[0].drops_random).collect();
    assert!(
        drops.iter().all(|&d| d > 0),
        "2% loss must drop something: {drops:?}"
    );
    assert_ne!(series[0], series[1]);
    assert_ne!(series[1], series[2]);
    assert_ne!(series[0], series[2]);
}
