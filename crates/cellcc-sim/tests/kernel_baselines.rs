//! Acceptance tests of the kernel-derived baselines (Vegas, Westwood+, Illinois, CDG):
//! each checks the behaviour that defines the algorithm on a simulated path and prints
//! the numbers it measured; rerun them with
//! `cargo test --release --locked -p cellcc-sim --test kernel_baselines -- --nocapture`.
//!
//! The trace smoke test skips when `../shared/traces/mahimahi` is absent. Set
//! `CELLCC_TEST_PLOTS=DIR` to also write each run's time series into DIR.

mod common;
use common::{simulate, traces_dir};

use cellcc_sim::metrics::SummaryRow;
use cellcc_sim::SimOutput;

/// Bytes on the wire per full segment: 1448 payload + 52 header bytes (IP, TCP with
/// timestamps), as the simulator charges them.
const WIRE_BYTES: f64 = 1500.0;

/// A constant downlink of `rate_mbps`, 10 ms each way, with `queue` (a TOML inline table),
/// a 100 Mbit/s uplink, one bulk flow of `scheme`.
fn constant_link(
    rate_mbps: f64,
    queue: &str,
    scheme: &str,
    params: &str,
    duration_s: f64,
    bin_ms: f64,
) -> String {
    format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\nrate_mbps = {rate_mbps}\n\
         delay_ms = 10.0\nqueue = {queue}\n[uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n\
         [metrics]\nbin_ms = {bin_ms}\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n"
    )
}

fn show(label: &str, r: &SummaryRow) {
    println!(
        "{label}: throughput {:.3} Mbit/s, utilisation {:.3}, RTT mean {:.1} ms (min {:.1}), \
         queueing delay mean {:.1} ms (p95 {:.1}), drops {}, retransmits {}, RTOs {}",
        r.throughput_mbps,
        r.utilisation.unwrap_or(f64::NAN),
        r.rtt_mean_ms.unwrap_or(f64::NAN),
        r.rtt_min_ms.unwrap_or(f64::NAN),
        r.qdelay_mean_ms.unwrap_or(f64::NAN),
        r.qdelay_p95_ms.unwrap_or(f64::NAN),
        r.drops,
        r.retransmits,
        r.rtos
    );
}

/// Indices of flow-0 rows (or link rows for `flow = -1`) with `t_s` in `[from, to)`.
fn rows(out: &SimOutput, flow: i64, from_s: f64, to_s: f64) -> Vec<usize> {
    let ts = &out.timeseries;
    (0..ts.len())
        .filter(|&i| ts.flow[i] == flow && ts.t_s[i] >= from_s && ts.t_s[i] < to_s)
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "no samples");
    v.iter().sum::<f64>() / v.len() as f64
}

fn info(out: &SimOutput, key: &str) -> f64 {
    out.cc_info[0]
        .values
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no {key} in {:?}", out.cc_info[0]))
        .1
}

// ----- Vegas -----------------------------------------------------------------------------

/// Vegas (alpha = 2, beta = 4) keeps between 2 and 4 of its packets queued at the
/// bottleneck in steady state: JSAC 1995 §3.2, Linux `tcp_vegas.c`. 12 Mbit/s, 20 ms
/// propagation RTT, an unlimited buffer; measured over [20, 60) s both from the link's
/// queue occupancy (sampled every 10 ms, the packet in service not counted) and from the
/// packets' queueing delay × rate. The simulator's queueing delay runs from enqueue to
/// the end of the packet's own transmission (docs/metrics.md), so the packets found
/// ahead on arrival are `qdelay / (1 packet time) − 1`.
#[test]
fn vegas_keeps_two_to_four_packets_queued_on_a_constant_link() {
    let rate_mbps = 12.0;
    let out = simulate(
        "vegas-constant",
        &constant_link(
            rate_mbps,
            "{ kind = \"infinite\" }",
            "vegas",
            "",
            60.0,
            10.0,
        ),
    );
    let r = &out.summary[0];
    show("vegas, 12 Mbit/s, unlimited buffer", r);
    let ts = &out.timeseries;
    let occupancy: Vec<f64> = rows(&out, -1, 20.0, 60.0)
        .into_iter()
        .filter_map(|i| ts.queue_packets[i].map(|q| q as f64))
        .collect();
    let qdelay: Vec<f64> = rows(&out, 0, 20.0, 60.0)
        .into_iter()
        .filter_map(|i| ts.qdelay_ms[i])
        .collect();
    let pkt_ms = WIRE_BYTES * 8.0 / (rate_mbps * 1e3);
    let q_occupancy = mean(&occupancy);
    let q_delay = mean(&qdelay) / pkt_ms - 1.0;
    let cwnds: Vec<f64> = rows(&out, 0, 20.0, 60.0)
        .into_iter()
        .filter_map(|i| ts.cwnd[i].map(f64::from))
        .collect();
    println!(
        "  steady state [20, 60) s: mean queue {q_occupancy:.2} packets (occupancy), \
         {q_delay:.2} packets (queueing delay {:.2} ms × rate − own transmission); cwnd {:.1}..{:.1}; \
         final phase {}, {:?}",
        mean(&qdelay),
        cwnds.iter().cloned().fold(f64::MAX, f64::min),
        cwnds.iter().cloned().fold(0.0, f64::max),
        out.cc_info[0].phase,
        out.cc_info[0].values
    );
    for (what, q) in [("occupancy", q_occupancy), ("queueing delay", q_delay)] {
        assert!(
            (2.0..=4.0).contains(&q),
            "mean queue by {what} {q:.2} packets outside [2, 4]"
        );
    }
    assert!(
        r.utilisation.unwrap() > 0.9,
        "Vegas should keep the link busy"
    );
    assert_eq!(r.drops, 0);
}
