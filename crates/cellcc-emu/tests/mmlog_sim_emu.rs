//! The simulator's and the emulator's `mm-link` logs of the same arrivals are the same,
//! byte for byte, below their headers (which name the program, command line and start).
//!
//! The simulator runs a scenario whose only downlink traffic before the end is a UDP CBR
//! source (the one TCP flow starts too late for its packets to reach the link). The
//! emulator's sans-I/O path ([`Direction`]) is fed the same send times, through the same
//! delay, queue and link, advanced at every wake-up or only every 6.3 ms (a late loop).
//! The CBR spacing is not a whole number of milliseconds, so most arrivals fall inside a
//! millisecond; on a trace link departures are at whole milliseconds and on the
//! constant-rate link inside them too. Mahimahi's delay, `floor(departure ms) −
//! floor(arrival ms)`, then differs from `floor(exact delay)` for most packets: every test
//! here fails on the simulator's writer before issue 18, which logged the exact delay
//! rounded down (and, with arrivals on whole milliseconds, an arrival before the
//! departures served at its millisecond).

use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use cellcc_emu::path::{Direction, Way};
use cellcc_link::mmlog::{LogHeader, MmLog, OpportunityCursor};
use cellcc_link::{BernoulliLoss, Link};
use cellcc_sim::traffic::{CbrConfig, UdpSource};
use cellcc_sim::Scenario;
use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// A writer into shared memory, to read what the direction logged.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An irregular 10 ms trace: 13 opportunities, some sharing a millisecond (13.2 Mbit/s
/// on average, 15.6 Mbit/s over its first 5 ms).
const TRACE: &str = "1\n1\n2\n4\n4\n4\n5\n5\n7\n8\n9\n9\n10\n";

/// A sparser 10 ms trace: 6 opportunities (7.2 Mbit/s), none at the start of the period.
const SPARSE: &str = "2\n3\n5\n8\n9\n10\n";

/// The scenario: `link` is the `[downlink]` capacity key, `cbr` the background source.
fn scenario(dir: &Path, link: &str, cbr: &str, queue: &str) -> Scenario {
    std::fs::write(dir.join("t.trace"), TRACE).unwrap();
    std::fs::write(dir.join("sparse.trace"), SPARSE).unwrap();
    let text = format!(
        r#"
name = "mmlog"
duration_s = 2.0
seed = 7

[downlink]
{link}
delay_ms = 10.0
queue = {queue}

[uplink]
rate_mbps = 100.0
delay_ms = 10.0

[[flows]]                   # starts 1 ms before the end: nothing reaches the link
scheme = "cubic"
start_s = 1.999

[[background]]
source = {cbr}

[metrics]
packet_log = true
"#
    );
    Scenario::parse(&text, "mmlog.toml", Some(dir)).unwrap()
}

/// The CBR config of the scenario's background source.
fn cbr_config(sc: &Scenario) -> CbrConfig {
    match &sc.background[0].source {
        cellcc_sim::traffic::BackgroundSource::Cbr(c) => c.clone(),
        _ => unreachable!(),
    }
}

/// The emulator's log of the scenario's downlink fed the CBR send times. With `late`,
/// the direction is advanced only at multiples of `late`, as by an event loop woken late:
/// each stage keeps its own schedule, so the log must not change.
fn emulator_log(sc: &Scenario, late: Option<Dur>) -> String {
    let end = Time::ZERO + sc.duration;
    let link =
        Link::<u64>::try_with_seed(sc.downlink.service.clone(), sc.downlink.queue.clone(), 1)
            .unwrap();
    let cursor = OpportunityCursor::for_service(&sc.downlink.service);
    let shared = Shared::default();
    let header = LogHeader {
        program: "cellcc-emu",
        direction: "downlink",
        command_line: Some("cellcc-emu (test)".into()),
        queue: String::new(),
        init_timestamp_ms: 0,
    };
    let out: Box<dyn Write + Send> = Box::new(shared.clone());
    let log = MmLog::new(out, &header, cursor).unwrap();
    let mut d = Direction::new(
        Way::Downlink,
        link,
        sc.downlink.delay,
        BernoulliLoss::NONE,
        ChaCha8Rng::seed_from_u64(1),
        Some(log),
    );
    let source = UdpSource::cbr(&cbr_config(sc)).unwrap();
    let bytes = source.packet_bytes();
    // Runs what is due before `t`.
    let run_to = |d: &mut Direction<u64>, t: Time| {
        while let Some(w) = d.next_wakeup().filter(|&w| w < t) {
            let now = match late {
                Some(step) => Time(w.as_ns().next_multiple_of(step.as_ns())),
                None => w,
            };
            d.advance(now.min(Time(t.as_ns() - 1)));
            while d.pop_ready().is_some() {}
        }
    };
    for (i, sent) in source.take_while(|&t| t < end).enumerate() {
        run_to(&mut d, sent);
        d.ingress(sent, i as u64, bytes);
    }
    run_to(&mut d, end);
    d.finish_log(end).unwrap();
    let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
    text
}

/// The log below its header: the event lines, as bytes.
fn body(log: &str) -> &str {
    let mut at = 0;
    while log[at..].starts_with('#') {
        at += log[at..].find('\n').map_or(log.len() - at, |i| i + 1);
    }
    &log[at..]
}

/// The lines that differ, with their neighbours, for the failure message.
fn first_difference(sim: &[&str], emu: &[&str]) -> String {
    let i = sim
        .iter()
        .zip(emu)
        .position(|(a, b)| a != b)
        .unwrap_or(sim.len().min(emu.len()));
    let from = i.saturating_sub(3);
    format!(
        "first difference at event line {i} of {} (sim) / {} (emu)\nsim: {:?}\nemu: {:?}",
        sim.len(),
        emu.len(),
        &sim[from..(i + 3).min(sim.len())],
        &emu[from..(i + 3).min(emu.len())],
    )
}

/// Runs both sides and compares; returns the number of departures.
fn check(link: &str, cbr: &str, queue: &str, kinds: &[&str]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(dir.path(), link, cbr, queue);
    let sim = cellcc_sim::run(&sc).unwrap().packet_log.unwrap();
    let s: Vec<&str> = body(&sim).lines().collect();
    for late in [None, Some(Dur::from_us(6_300))] {
        let emu = emulator_log(&sc, late);
        assert!(
            sim.starts_with('#') && emu.starts_with('#'),
            "headers first"
        );
        let e: Vec<&str> = body(&emu).lines().collect();
        assert!(s == e, "late {late:?}: {}", first_difference(&s, &e));
        assert_eq!(body(&sim).as_bytes(), body(&emu).as_bytes());
    }
    // Mahimahi's order: by millisecond, and on a trace link the opportunities and the
    // departures they served before the arrivals of their millisecond.
    let trace_link = link.starts_with("trace");
    let (mut last_ms, mut arrived) = (0, false);
    for line in &s {
        let mut fields = line.split(' ');
        let t: u64 = fields.next().unwrap().parse().unwrap();
        assert!(t >= last_ms, "out of order at {line:?}");
        if t > last_ms {
            (last_ms, arrived) = (t, false);
        }
        match fields.next() {
            Some("+") => arrived = true,
            Some("#" | "-") if trace_link => {
                assert!(!arrived, "{line:?} after an arrival of its ms")
            }
            _ => {}
        }
    }
    // Every kind of line the link makes is there.
    for kind in kinds {
        assert!(s.iter().any(|l| l.contains(kind)), "no `{kind}` line");
    }
    s.iter().filter(|l| l.contains(" - ")).count()
}

#[test]
fn trace_link_logs_agree() {
    // 1400-byte packets every 2/3 ms (16.8 Mbit/s, 16.85 charged, into 15.6 Mbit/s):
    // two arrivals in three inside a ms, the third on a whole ms, where opportunities are.
    let deps = check(
        r#"trace = "t.trace""#,
        r#"{ kind = "cbr", rate_mbps = 16.8, packet_bytes = 1400 }"#,
        r#"{ kind = "droptail", packets = 20 }"#,
        &[" # ", " + ", " - ", " d "],
    );
    assert!(deps > 1000, "{deps}");
}

#[test]
fn constant_rate_link_logs_agree() {
    // 1000-byte packets every 0.7 ms into a 10 Mbit/s link (0.8 ms each): both arrival
    // and departure times fall inside milliseconds.
    let deps = check(
        "rate_mbps = 10.0",
        r#"{ kind = "cbr", rate_mbps = 11.428571, packet_bytes = 1000 }"#,
        r#"{ kind = "droptail", packets = 30 }"#,
        &[" + ", " - ", " d "],
    );
    assert!(deps > 1000, "{deps}");
}

#[test]
fn arrivals_on_whole_milliseconds_follow_the_departures_served_there() {
    // 1500-byte packets every 1.5 ms into 7.2 Mbit/s: every other arrival is on a whole
    // ms, at which a departure often falls too; Mahimahi serves it before the arrival.
    let deps = check(
        r#"trace = "sparse.trace""#,
        r#"{ kind = "cbr", rate_mbps = 8.0, packet_bytes = 1500 }"#,
        r#"{ kind = "droptail", packets = 10 }"#,
        &[" # ", " + ", " - ", " d "],
    );
    assert!(deps > 1000, "{deps}");
}

#[test]
fn drop_head_and_codel_logs_agree() {
    for queue in [
        r#"{ kind = "drophead", packets = 10 }"#,
        r#"{ kind = "codel", target_ms = 5, interval_ms = 100, packets = 50 }"#,
    ] {
        check(
            r#"trace = "sparse.trace""#,
            r#"{ kind = "cbr", rate_mbps = 8.0, packet_bytes = 1500 }"#,
            queue,
            &[" # ", " + ", " - ", " d "],
        );
    }
}
