//! Sanity against known behaviour of Cubic and BBR (issue acceptance list).
//!
//! Set `CELLCC_TEST_PLOTS=DIR` to also write each run's time series as JSON columns into
//! DIR, so a failing test is one step away from a picture (`pandas.read_json` + plot).

mod common;
use common::{mean_qdelay, shared_trace, simulate};

use std::path::PathBuf;

use cellcc_sim::Scenario;

fn constant_link(scheme: &str, queue: &str, duration_s: f64) -> String {
    // 12 Mbit/s, 10 ms each way ⇒ 20 ms RTT; 1 BDP = 12e6 × 0.02 / 8 / 1500 = 20 packets.
    format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\nrate_mbps = 12.0\ndelay_ms = 10.0\nqueue = {queue}\n\
         [uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n[[flows]]\nscheme = \"{scheme}\"\n"
    )
}

#[test]
fn cubic_fills_a_one_bdp_droptail_link() {
    let out = simulate(
        "cubic-1bdp",
        &constant_link("cubic", "{ kind = \"droptail\", packets = 20 }", 60.0),
    );
    let row = &out.summary[0];
    let util = row.utilisation.unwrap();
    println!(
        "cubic 1 BDP: utilisation {util:.4}, throughput {:.2} Mbit/s, drops {}",
        row.throughput_mbps, row.drops
    );
    assert!(util >= 0.95, "utilisation {util}");
    assert!(row.drops > 0, "a 1-BDP buffer must overflow under Cubic");
}

#[test]
fn cubic_queueing_delay_grows_without_bound_in_an_infinite_buffer() {
    // Nothing else may bound the queue: a send buffer of 1 GiB (Linux's default 4 MiB
    // `tcp_wmem` maximum caps it, the next test).
    let text = constant_link("cubic", "{ kind = \"infinite\" }", 60.0)
        + "[tcp]\nwmem = [4096, 16384, 1073741824]\n";
    let out = simulate("cubic-infinite", &text);
    let early = mean_qdelay(&out, 10.0, 20.0);
    let mid = mean_qdelay(&out, 30.0, 40.0);
    let late = mean_qdelay(&out, 50.0, 60.0);
    println!("cubic infinite buffer: mean queueing delay {early:.0} → {mid:.0} → {late:.0} ms");
    assert!(
        mid > early && late > mid,
        "queueing delay must keep growing: {early} {mid} {late}"
    );
    assert!(
        late > 1000.0,
        "after a minute the queue holds seconds of data: {late} ms"
    );
    assert_eq!(out.summary[0].drops, 0);
    // The send buffer never binds. The receive window does, late: the 32 MiB `tcp_rmem`
    // maximum offers 21 MB (5/8 of it), 14 s of queue at 12 Mbit/s, which CUBIC's queue
    // reaches in the run's last quarter.
    let (busy, rwnd, sndbuf) = chronographs(&out.summary[0]);
    println!("busy {busy} s, rwnd-limited {rwnd} s, sndbuf-limited {sndbuf} s");
    assert!(busy >= 59.9, "busy {busy} s of 60");
    assert_eq!(sndbuf, 0.0);
    assert!((5.0..=20.0).contains(&rwnd), "rwnd-limited {rwnd} s");
}

/// The sender's chronographs (`tcpi_busy_time`, `tcpi_rwnd_limited`,
/// `tcpi_sndbuf_limited`), seconds.
fn chronographs(row: &cellcc_sim::metrics::SummaryRow) -> (f64, f64, f64) {
    (
        row.busy_s.unwrap(),
        row.rwnd_limited_s.unwrap(),
        row.sndbuf_limited_s.unwrap(),
    )
}

#[test]
fn a_receive_window_under_the_bdp_holds_the_sender_back_all_the_time() {
    // A fixed 16 KiB receive buffer offers a 10 KB window (5/8 of it, the payload share of
    // 2304-byte truesize), a third of the link's 30 KB BDP: the flight stays at the
    // window, cwnd has room, and every pass ends at the window (`tcpi_rwnd_limited`).
    let text = constant_link("cubic", "{ kind = \"infinite\" }", 20.0)
        + "[tcp]\nautotune = false\nrmem = [4096, 16384, 16384]\n";
    let out = simulate("cubic-small-rwnd", &text);
    let row = &out.summary[0];
    let (busy, rwnd, sndbuf) = chronographs(row);
    println!(
        "16 KiB receive buffer: {:.2} Mbit/s, busy {busy} s, rwnd-limited {rwnd} s, sndbuf-limited {sndbuf} s",
        row.throughput_mbps
    );
    assert!(
        row.throughput_mbps < 0.5 * 12.0,
        "{} Mbit/s",
        row.throughput_mbps
    );
    assert!(
        rwnd >= 19.5 && busy >= 19.9,
        "rwnd-limited {rwnd} s, busy {busy} s of 20"
    );
    assert_eq!(sndbuf, 0.0);
}

#[test]
fn the_default_send_buffer_caps_cubic_in_an_infinite_buffer() {
    // Linux's `tcp_wmem` maximum, 4 MiB, holds about 2125 segments with their overhead
    // (the kernel's `unacked` stopped at 2125 in docs/validation.md, Gap 2): at 12 Mbit/s
    // that is 2125 × 1500 × 8 / 12e6 ≈ 2.1 s of queue, less the 20 ms round trip.
    let out = simulate(
        "cubic-infinite-wmem",
        &constant_link("cubic", "{ kind = \"infinite\" }", 60.0),
    );
    let mid = mean_qdelay(&out, 30.0, 40.0);
    let late = mean_qdelay(&out, 50.0, 60.0);
    println!("cubic infinite buffer, default wmem: mean queueing delay {mid:.0} → {late:.0} ms");
    assert!(
        (late - mid).abs() <= 0.01 * mid,
        "the queue must stop growing: {mid} {late}"
    );
    assert!(
        (1900.0..=2200.0).contains(&late),
        "about 2.1 s of queue: {late} ms"
    );
    assert_eq!(out.summary[0].drops, 0);
    // Once the queue stops growing, the send buffer holds the writer back: cwnd has
    // room and nothing unsent is left (`tcpi_sndbuf_limited`).
    let (busy, rwnd, sndbuf) = chronographs(&out.summary[0]);
    println!("busy {busy} s, rwnd-limited {rwnd} s, sndbuf-limited {sndbuf} s");
    assert!(
        sndbuf >= 30.0 && rwnd < 0.6,
        "sndbuf-limited {sndbuf} s, rwnd-limited {rwnd} s"
    );
}

#[test]
fn bbr_keeps_queueing_delay_low_at_high_utilisation() {
    let out = simulate(
        "bbr-infinite",
        &constant_link("bbr", "{ kind = \"infinite\" }", 60.0),
    );
    let row = &out.summary[0];
    let util = row.utilisation.unwrap();
    let p95 = row.qdelay_p95_ms.unwrap();
    let min_rtt = row.rtt_min_ms.unwrap();
    println!("bbr infinite buffer: utilisation {util:.4}, p95 queueing delay {p95:.1} ms, min RTT {min_rtt:.1} ms");
    assert!(util >= 0.90, "utilisation {util}");
    assert!(
        p95 < 2.0 * min_rtt,
        "p95 queueing delay {p95} ms vs min RTT {min_rtt} ms"
    );
}

#[test]
fn on_tmobile_lte_cubic_queues_seconds_and_bbr_an_order_of_magnitude_less() {
    let Some(down) = shared_trace("TMobile-LTE-short.down") else {
        return;
    };
    let up = shared_trace("TMobile-LTE-short.up").unwrap();
    let text = |scheme: &str| {
        format!(
            "duration_s = 140.0\nseed = 1\n[downlink]\ntrace = \"{}\"\ndelay_ms = 10.0\n\
             [uplink]\ntrace = \"{}\"\ndelay_ms = 10.0\n[[flows]]\nscheme = \"{scheme}\"\n",
            down.display(),
            up.display()
        )
    };
    let cubic = simulate("tmobile-cubic", &text("cubic"));
    let bbr = simulate("tmobile-bbr", &text("bbr"));
    let c = cubic.summary[0].qdelay_mean_ms.unwrap();
    let b = bbr.summary[0].qdelay_mean_ms.unwrap();
    println!(
        "TMobile-LTE-short, infinite queue: cubic mean queueing delay {c:.0} ms ({:.2} Mbit/s), bbr {b:.0} ms ({:.2} Mbit/s)",
        cubic.summary[0].throughput_mbps, bbr.summary[0].throughput_mbps
    );
    assert!(
        c >= 1000.0,
        "cubic mean queueing delay should be in the seconds: {c} ms"
    );
    assert!(
        b * 10.0 <= c,
        "bbr {b} ms should be an order of magnitude below cubic {c} ms"
    );
}

/// Every shipped example scenario loads (those naming absent shared traces are skipped).
#[test]
fn example_scenarios_load() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("shared/traces") && shared_trace("TMobile-LTE-short.down").is_none() {
                continue;
            }
            Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            loaded += 1;
        }
    }
    assert!(
        loaded >= 1,
        "no example scenario found in {}",
        dir.display()
    );
}
