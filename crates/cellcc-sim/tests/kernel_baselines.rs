//! Acceptance tests of the kernel-derived baselines (Vegas, Westwood+, Illinois, CDG):
//! each checks the behaviour that defines the algorithm on a simulated path and prints
//! the numbers it measured; rerun them with
//! `cargo test --release --locked -p cellcc-sim --test kernel_baselines -- --nocapture`.
//!
//! The trace smoke test skips when `../shared/traces/mahimahi` is absent (and fails under
//! `CELLCC_REQUIRE_TRACES=1`, see `common`). Set `CELLCC_TEST_PLOTS=DIR` to also write
//! each run's time series into DIR.

mod common;
use common::{conserved, down_traces, show, simulate};

use cellcc_sim::SimOutput;

/// Bytes on the wire per full segment: 1448 payload + 52 header bytes (IP, TCP with
/// timestamps), as the simulator charges them.
const WIRE_BYTES: f64 = 1500.0;

/// A constant downlink of `rate_mbps`, `one_way_ms` of propagation delay each way, with
/// `queue` (a TOML inline table), a 100 Mbit/s uplink, one bulk flow of `scheme`.
fn path(
    rate_mbps: f64,
    one_way_ms: f64,
    queue: &str,
    scheme: &str,
    params: &str,
    duration_s: f64,
    bin_ms: f64,
) -> String {
    format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\nrate_mbps = {rate_mbps}\n\
         delay_ms = {one_way_ms}\nqueue = {queue}\n[uplink]\nrate_mbps = 100.0\n\
         delay_ms = {one_way_ms}\n[metrics]\nbin_ms = {bin_ms}\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n"
    )
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
        &path(
            rate_mbps,
            10.0,
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

// ----- Westwood+ -------------------------------------------------------------------------

/// A cwnd reduction seen in the time series: where it ended, the cwnd it ended at, and
/// the ssthresh set when it began (Reno's half of cwnd at the loss).
struct Reduction {
    t_end_s: f64,
    cwnd: u32,
    ssthresh_at_entry: u32,
}

/// Gap without any cwnd decrease that separates two reductions, s. On these links a
/// loss episode lasts at most a few RTTs (< 0.2 s) and episodes are > 0.5 s apart.
const EPISODE_GAP_S: f64 = 0.2;

/// cwnd reductions of flow 0 that start after `from_s`: runs of bins in which cwnd
/// fell, with no fall for [`EPISODE_GAP_S`] between runs. During an episode PRR lowers
/// cwnd toward Reno's ssthresh; when it ends Westwood+ sets cwnd (and ssthresh) to
/// BWE·RTTmin, and afterwards cwnd only grows until the next loss. So the cwnd in the
/// last bin in which it fell is the window right after the reduction.
fn reductions(out: &SimOutput, from_s: f64) -> Vec<Reduction> {
    let ts = &out.timeseries;
    let idx = rows(out, 0, 0.0, f64::MAX);
    let mut found: Vec<Reduction> = Vec::new();
    for w in idx.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (Some(c0), Some(c1), Some(s1)) = (ts.cwnd[a], ts.cwnd[b], ts.ssthresh[b]) else {
            continue;
        };
        if c1 >= c0 || ts.t_s[b] < from_s {
            continue;
        }
        match found.last_mut() {
            Some(r) if ts.t_s[b] - r.t_end_s <= EPISODE_GAP_S => {
                r.t_end_s = ts.t_s[b];
                r.cwnd = c1;
            }
            _ => found.push(Reduction {
                t_end_s: ts.t_s[b],
                cwnd: c1,
                ssthresh_at_entry: s1,
            }),
        }
    }
    found
}

/// Westwood+ (Linux `tcp_westwood.c`): after each loss episode cwnd is set to
/// BWE·RTTmin, the measured bandwidth-delay product. 12 Mbit/s, 20 ms propagation RTT,
/// droptail buffers of 1 BDP (22 packets) and 3 BDP; 1 ms time-series bins. The cwnd in
/// the last bin of each reduction is compared with the estimate the controller reports
/// (`bwe_rttmin_pkts`, stable on a constant link) and with the link's own BDP at
/// Westwood's jiffy-rounded RTTmin (payload rate × RTTmin / mss). With the 3-BDP buffer
/// Reno's halving would leave ~2 BDP; Westwood+ must come down to ~1 BDP.
#[test]
fn westwood_sets_cwnd_to_bwe_times_rttmin_after_each_loss() {
    let rate_mbps = 12.0;
    let bdp_pkts = 22u64; // 12 Mbit/s × 21 ms / 1500 B = 21, rounded up
    for buffers in [1u64, 3] {
        let bytes = buffers * bdp_pkts * WIRE_BYTES as u64;
        let queue = format!("{{ kind = \"droptail\", bytes = {bytes} }}");
        let out = simulate(
            &format!("westwood-{buffers}bdp"),
            &path(rate_mbps, 10.0, &queue, "westwood", "", 30.0, 1.0),
        );
        let r = &out.summary[0];
        show(
            &format!("westwood, 12 Mbit/s, {buffers}-BDP droptail ({bytes} B)"),
            r,
        );
        let estimate = info(&out, "bwe_rttmin_pkts");
        let bw_mbps = info(&out, "bw_est_mbps");
        let rtt_min_ms = info(&out, "rtt_min_ms");
        let payload_bytes_per_ms = rate_mbps * 1e3 / 8.0 * 1448.0 / WIRE_BYTES;
        let link_bdp = payload_bytes_per_ms * rtt_min_ms / 1448.0;
        let ends = reductions(&out, 5.0);
        println!(
            "  BWE {bw_mbps:.3} Mbit/s (payload capacity {:.3}), RTTmin {rtt_min_ms} ms: \
             BWE·RTTmin {estimate} packets, link BDP at RTTmin {link_bdp:.1} packets; \
             {} reductions after 5 s",
            payload_bytes_per_ms * 8.0 / 1e3,
            ends.len()
        );
        println!(
            "    cwnd right after each reduction: {:?}; ssthresh at their starts (Reno's half): {:?}",
            ends.iter().map(|e| e.cwnd).collect::<Vec<_>>(),
            ends.iter().map(|e| e.ssthresh_at_entry).collect::<Vec<_>>()
        );
        assert!(r.drops > 0, "the buffer must force losses");
        assert!(ends.len() >= 3, "too few loss episodes: {}", ends.len());
        assert!(
            (info(&out, "cwr_completions") as usize) >= ends.len(),
            "every reduction in the series must end with a CompleteCwr"
        );
        for e in &ends {
            let c = f64::from(e.cwnd);
            assert!(
                (c - estimate).abs() <= 0.1 * estimate + 1.0,
                "cwnd {c} after the reduction ending at {:.3} s is not BWE·RTTmin {estimate}",
                e.t_end_s
            );
            assert!(
                (c - link_bdp).abs() <= 0.15 * link_bdp,
                "cwnd {c} at {:.3} s is not the link's BDP {link_bdp:.1}",
                e.t_end_s
            );
            if buffers == 3 {
                assert!(
                    c < 0.75 * f64::from(e.ssthresh_at_entry),
                    "with a 3-BDP buffer Westwood+ must go below Reno's half ({})",
                    e.ssthresh_at_entry
                );
            }
        }
    }
}

// ----- Illinois --------------------------------------------------------------------------

/// Illinois (Liu, Başar, Srikant 2008; Linux `tcp_illinois.c`) sets α once per RTT from
/// the average queueing delay d_a relative to the largest seen, d_m: α = 10 while
/// d_a ≤ d_m/100, falling as κ1/(κ2 + d_a) to ≈ 0.3 at d_a = d_m. 12 Mbit/s, 20 ms
/// propagation RTT, 30 s. With a short droptail buffer (10 packets, half a BDP) delay
/// stays low and α reaches 10; with a deep one (500 packets, ~0.5 s) the queue stays
/// long, α falls to its minimum, averages well below Reno's 1 and never returns to 10.
///
/// α = 10 exactly needs d_a ≤ d_m/100 (here ≤ 0.1 ms) for `theta` = 5 RTTs once delay
/// has been higher; an unpaced sender's ACK-clocked pairs of back-to-back segments add
/// about half a packet time (0.5 ms) to the average RTT even with an empty queue, and
/// with β = 1/8 at low delay a loss rarely empties the 10-packet queue. So α = 10 is
/// reached (before the first build-up and in short spells later) but is not the common
/// case: the share of updates at 10 is printed below.
#[test]
fn illinois_alpha_is_ten_at_low_delay_and_near_its_minimum_at_high_delay() {
    let rate_mbps = 12.0;
    let run = |packets: u64| {
        let bytes = packets * WIRE_BYTES as u64;
        let queue = format!("{{ kind = \"droptail\", bytes = {bytes} }}");
        let out = simulate(
            &format!("illinois-{packets}pkts"),
            &path(rate_mbps, 10.0, &queue, "illinois", "", 30.0, 10.0),
        );
        show(
            &format!("illinois, 12 Mbit/s, {packets}-packet droptail"),
            &out.summary[0],
        );
        println!(
            "  phase {}, {:?}",
            out.cc_info[0].phase, out.cc_info[0].values
        );
        out
    };
    let short = run(10);
    let deep = run(500);
    let s_max = info(&short, "alpha_max_seen");
    let s_share = info(&short, "alpha_max_share");
    let s_mean = info(&short, "alpha_mean");
    let (d_min, d_mean, d_share) = (
        info(&deep, "alpha_min_seen"),
        info(&deep, "alpha_mean"),
        info(&deep, "alpha_max_share"),
    );
    println!(
        "  short buffer: largest α {s_max:.2} (α = 10 in {:.1} % of {} updates), mean α \
         {s_mean:.2}, queueing delay mean {:.1} ms; deep buffer: smallest α {d_min:.3}, \
         mean α {d_mean:.2}, final α {:.3}, α = 10 in {:.1} % of {} updates, queueing \
         delay mean {:.1} ms",
        100.0 * s_share,
        info(&short, "alpha_updates"),
        short.summary[0].qdelay_mean_ms.unwrap(),
        info(&deep, "alpha"),
        100.0 * d_share,
        info(&deep, "alpha_updates"),
        deep.summary[0].qdelay_mean_ms.unwrap(),
    );
    assert!(short.summary[0].drops > 0 && deep.summary[0].drops > 0);
    // Low delay: α rises to α_max = 10.
    assert_eq!(s_max, 10.0, "short buffer: α never reached 10");
    assert!(s_share > 0.0);
    // High delay: α falls to α_min = 38/128 ≈ 0.297 (within one 1/128 step of the
    // fixed point: 40/128 = 0.3125), averages below Reno's 1, and never returns to 10.
    assert!(d_min <= 0.32, "deep buffer: smallest α {d_min}");
    assert!(d_mean < 0.6, "deep buffer: mean α {d_mean}");
    assert_eq!(d_share, 0.0, "deep buffer: α returned to 10");
    assert!(s_mean > d_mean, "α must be larger at low delay");
}

// ----- CDG -------------------------------------------------------------------------------

/// Number of bins of flow 0 in `[from_s, to_s)` whose cwnd is below the previous bin's.
fn cwnd_decreases(out: &SimOutput, from_s: f64, to_s: f64) -> usize {
    let ts = &out.timeseries;
    rows(out, 0, from_s, to_s)
        .windows(2)
        .filter(|w| matches!((ts.cwnd[w[0]], ts.cwnd[w[1]]), (Some(a), Some(b)) if b < a))
        .count()
}

/// CDG (Hayes & Armitage 2011; Linux `tcp_cdg.c`) backs off when the RTT gradients
/// rise, before the buffer overflows. 12 Mbit/s, 20 ms propagation RTT, a deep droptail
/// buffer (1000 packets, ~1 s), 60 s: CDG reduces cwnd many times with no packet lost
/// while the queue builds, and keeps the queueing delay far below CUBIC's on the same
/// link (CUBIC fills the buffer until it drops).
#[test]
fn cdg_backs_off_on_rising_delay_without_losses() {
    let queue = format!(
        "{{ kind = \"droptail\", bytes = {} }}",
        1000 * WIRE_BYTES as u64
    );
    let cdg = simulate("cdg-deep", &path(12.0, 10.0, &queue, "cdg", "", 60.0, 10.0));
    let cubic = simulate(
        "cubic-deep",
        &path(12.0, 10.0, &queue, "cubic", "", 60.0, 10.0),
    );
    show("cdg, 12 Mbit/s, 1000-packet droptail", &cdg.summary[0]);
    println!("  {:?}", cdg.cc_info[0].values);
    show("cubic, same link", &cubic.summary[0]);
    let r = &cdg.summary[0];
    let backoffs = info(&cdg, "backoffs");
    let decreases = cwnd_decreases(&cdg, 0.0, 60.0);
    let (q_cdg, q_cubic) = (
        r.qdelay_mean_ms.unwrap(),
        cubic.summary[0].qdelay_mean_ms.unwrap(),
    );
    println!(
        "  CDG: {backoffs} delay backoffs, cwnd fell in {decreases} of the 10 ms bins, \
         {} drops, {} retransmissions; mean queueing delay CDG {q_cdg:.1} ms vs CUBIC \
         {q_cubic:.1} ms (p95 {:.1} vs {:.1}), throughput {:.2} vs {:.2} Mbit/s",
        r.drops,
        r.retransmits,
        r.qdelay_p95_ms.unwrap(),
        cubic.summary[0].qdelay_p95_ms.unwrap(),
        r.throughput_mbps,
        cubic.summary[0].throughput_mbps
    );
    assert_eq!(r.drops, 0, "CDG must back off before the buffer overflows");
    assert_eq!(r.retransmits, 0);
    assert!(backoffs >= 10.0, "too few delay backoffs: {backoffs}");
    assert!(decreases >= 10, "cwnd fell in only {decreases} bins");
    assert!(
        q_cdg < 0.25 * q_cubic,
        "CDG's queueing delay {q_cdg} ms is not far below CUBIC's {q_cubic} ms"
    );
    assert!(r.utilisation.unwrap() > 0.8, "CDG must still use the link");
}

// ----- every Mahimahi trace --------------------------------------------------------------

/// Each new scheme runs 20 s on every `.down` trace of the shared Mahimahi set (10 ms
/// each way, 150 KB droptail buffer, 100 Mbit/s uplink) without panicking, delivers
/// data, and accounts for every packet.
#[test]
fn kernel_baselines_run_on_every_mahimahi_trace() {
    let Some(traces) = down_traces() else { return };
    for trace in &traces {
        for scheme in ["vegas", "westwood", "illinois", "cdg"] {
            let text = format!(
                "duration_s = 20.0\nseed = 1\n[downlink]\ntrace = \"{}\"\ndelay_ms = 10.0\n\
                 queue = {{ kind = \"droptail\", bytes = 150000 }}\n\
                 [uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n\
                 [[flows]]\nscheme = \"{scheme}\"\n",
                trace.display()
            );
            let name = trace.file_stem().unwrap().to_string_lossy().to_string();
            let out = simulate(&format!("{scheme}-{name}"), &text);
            let r = &out.summary[0];
            show(&format!("{name}, {scheme}"), r);
            assert!(
                r.throughput_mbps > 0.0,
                "{scheme} on {name} delivered nothing"
            );
            conserved(&format!("{scheme} on {name}"), &out);
        }
    }
}
