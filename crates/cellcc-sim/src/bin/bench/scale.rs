//! `make bench` scaling scenarios: what one delivered packet costs as a shared cell gains
//! UEs and as a link gains flows.
//!
//! * Cell: N UEs (default 4, 32, 128, 1024) in a PF cell of 1 ms TTIs, every UE on the
//!   same trace (`TMobile-LTE-short.down`, so one parsed copy serves all) at its own
//!   offset, each with a 750-packet drop-tail queue (the LTE study's RLC buffer). UE 0
//!   carries one CUBIC flow; UEs 1..N share 8 Mbit/s of CBR background traffic
//!   (8/(N − 1) Mbit/s each, starts staggered over 1 s). Set-up is the CPU time of
//!   building the scenario (trace loading included); the run's CPU time is divided by
//!   the data packets delivered (flow and background).
//! * Many flows: N CUBIC flows (default 1, 10, 100, 1000) on a 1 Gbit/s downlink,
//!   10 ms each way, a 4000-packet drop-tail queue, 5 s; CPU time per delivered packet.
//!
//! Configurations are alternated within each repetition (1, 2, …, then 1, 2, … again),
//! so a burst of load on a shared machine falls on all of them; each line gives the
//! median and the spread (min–max) of the repetitions.

use std::path::Path;

use cellcc_sim::Scenario;

use super::{median, run_or_exit, thread_cpu_ns};

/// UE counts of the cell scenario.
pub(super) const DEFAULT_UES: &[usize] = &[4, 32, 128, 1024];
/// Flow counts of the many-flows scenario.
pub(super) const DEFAULT_FLOWS: &[usize] = &[1, 10, 100, 1000];
/// Simulated length of the cell runs, s.
const CELL_DURATION_S: f64 = 20.0;
/// Total CBR background load of the cell, Mbit/s (about half the trace's mean).
const CELL_BACKGROUND_MBPS: f64 = 8.0;
/// One period of `TMobile-LTE-short.down`, ms: UE offsets are spread over it.
const TRACE_PERIOD_MS: u64 = 140_000;
/// Simulated length of the many-flows runs, s.
const FLOWS_DURATION_S: f64 = 5.0;

/// The cell scenario with `ues` UEs on `trace`.
pub(super) fn cell_text(trace: &Path, ues: usize) -> String {
    let trace = trace.display();
    let mut s = format!(
        "name = \"bench-cell-{ues}\"\nduration_s = {CELL_DURATION_S:.1}\nseed = 1\n\
         [uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n\
         [cell]\nscheduler = \"pf\"\ntti_ms = 1.0\n"
    );
    for u in 0..ues {
        let offset = u as u64 * TRACE_PERIOD_MS / ues as u64;
        s.push_str(&format!(
            "[[cell.ues]]\ntrace = \"{trace}\"\noffset_ms = {offset}\n\
             queue = {{ kind = \"droptail\", packets = 750 }}\n"
        ));
    }
    s.push_str("[[flows]]\nscheme = \"cubic\"\nue = 0\n");
    let per_ue = CELL_BACKGROUND_MBPS / (ues.max(2) - 1) as f64;
    for u in 1..ues {
        let start = (u % 1000) as f64 / 1000.0;
        s.push_str(&format!(
            "[[background]]\nue = {u}\n\
             source = {{ kind = \"cbr\", rate_mbps = {per_ue}, packet_bytes = 1500, start_s = {start} }}\n"
        ));
    }
    s
}

/// The many-flows scenario with `flows` CUBIC flows.
pub(super) fn flows_text(flows: usize) -> String {
    let mut s = format!(
        "name = \"bench-flows-{flows}\"\nduration_s = {FLOWS_DURATION_S:.1}\nseed = 1\n\
         [downlink]\nrate_mbps = 1000.0\ndelay_ms = 10.0\n\
         queue = {{ kind = \"droptail\", packets = 4000 }}\n\
         [uplink]\nrate_mbps = 1000.0\ndelay_ms = 10.0\n"
    );
    for _ in 0..flows {
        s.push_str("[[flows]]\nscheme = \"cubic\"\n");
    }
    s
}

/// One configuration's measurements over the repetitions.
struct Config {
    label: String,
    text: String,
    setup_ms: Vec<f64>,
    ns_per_packet: Vec<f64>,
    packets: u64,
}

fn spread(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// Runs every configuration `runs` times, alternating, and prints one line each.
pub(super) fn run(title: &str, what: &str, configs: Vec<(String, String)>, runs: usize) {
    println!("{title}");
    println!(
        "{:<10} {:>10} {:>16} {:>11} {:>20} {:>8}",
        what, "packets", "set-up ms (CPU)", "ns/packet", "spread (min-max)", "/ first"
    );
    let mut configs: Vec<Config> = configs
        .into_iter()
        .map(|(label, text)| Config {
            label,
            text,
            setup_ms: Vec::new(),
            ns_per_packet: Vec::new(),
            packets: 0,
        })
        .collect();
    for _ in 0..runs {
        for c in configs.iter_mut() {
            let c0 = thread_cpu_ns();
            let sc = Scenario::parse(&c.text, "bench", None).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(2);
            });
            let c1 = thread_cpu_ns();
            let out = run_or_exit(&sc);
            let c2 = thread_cpu_ns();
            let packets = out.conservation.data_delivered;
            assert!(
                c.packets == 0 || c.packets == packets,
                "{}: the run is deterministic",
                c.label
            );
            c.packets = packets;
            c.setup_ms.push((c1 - c0) as f64 * 1e-6);
            c.ns_per_packet
                .push((c2 - c1) as f64 / packets.max(1) as f64);
        }
    }
    let mut first = None;
    for c in configs.iter_mut() {
        let (lo, hi) = spread(&c.ns_per_packet);
        let ns = median(&mut c.ns_per_packet);
        let base = *first.get_or_insert(ns);
        println!(
            "{:<10} {:>10} {:>16.1} {:>11.0} {:>20} {:>8.2}",
            c.label,
            c.packets,
            median(&mut c.setup_ms),
            ns,
            format!("{lo:.0}-{hi:.0}"),
            ns / base
        );
    }
}
