//! `[tcp] handshake`: the three-way handshake on the links, as the kernel's flow runs it
//! through the emulator (its mm-link log is the reference: Verizon-EVDO-driving, whose
//! uplink's first opportunity comes 1056 ms in).

use std::fmt::Write;

mod common;
use common::{conserved, simulate};

/// A path whose uplink opens late: downlink opportunities every 10 ms, uplink ones from
/// 1056 ms on, 20 ms each way, a flow starting at 6 ms.
fn late_uplink(dir: &std::path::Path, handshake: bool) -> String {
    let mut down = String::new();
    let mut up = String::new();
    for t in (10..=3000).step_by(10) {
        writeln!(down, "{t}").unwrap();
    }
    for t in (1056..=3000).step_by(10) {
        writeln!(up, "{t}").unwrap();
    }
    std::fs::write(dir.join("d.trace"), down).unwrap();
    std::fs::write(dir.join("u.trace"), up).unwrap();
    format!(
        "duration_s = 3\nseed = 1\n[metrics]\npacket_log = true\nbin_ms = 10\n\
         [downlink]\ntrace = \"{d}\"\ndelay_ms = 20\n\
         [uplink]\ntrace = \"{u}\"\ndelay_ms = 20\n\
         [tcp]\nhandshake = {handshake}\n\
         [[flows]]\nscheme = \"cubic\"\nstart_s = 0.006\n",
        d = dir.join("d.trace").display(),
        u = dir.join("u.trace").display(),
    )
}

/// The log's (time, kind, bytes) lines up to `until` ms.
fn events(log: &str, until: u64) -> Vec<(u64, String, u32)> {
    log.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2].parse().unwrap(),
            )
        })
        .filter(|(t, kind, _)| *t <= until && kind != "#")
        .collect()
}

#[test]
fn the_handshake_crosses_the_links_as_in_the_kernels_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = simulate("handshake", &late_uplink(dir.path(), true));
    conserved("handshake", &out);
    let ev = events(out.packet_log.as_deref().unwrap(), 1120);
    let arrivals: Vec<(u64, u32)> = ev
        .iter()
        .filter(|e| e.1 == "+")
        .map(|e| (e.0, e.2))
        .collect();
    // The SYN (a 60-byte datagram, 64 in the log) at 6 + 20 ms; no SYN-ACK can leave
    // before 1056 ms, so the SYN goes again after its 1 s timer.
    assert_eq!(arrivals[..2], [(26, 64), (1026, 64)]);
    // Both SYN-ACKs leave at 1056 and reach the sender at 1076: it ACKs the first,
    // answers the second with a challenge ACK, then sends its initial window.
    let mut expected = vec![(1096, 56), (1096, 56)];
    expected.extend(std::iter::repeat_n((1096, 1504), 10));
    assert_eq!(arrivals[2..], expected[..]);
    // The two ACKs take 112 bytes of the 1100 ms opportunity, so the first data packet
    // leaves at 1110, not at 1100.
    let first_data = ev.iter().find(|e| e.1 == "-" && e.2 == 1504).unwrap();
    assert_eq!(first_data.0, 1110);
    // The first srtt is the SYN-ACK's wait, timed by the first SYN's timestamp echo.
    let ts = &out.timeseries;
    let first = (0..ts.len())
        .find(|&i| ts.flow[i] == 0 && ts.srtt_ms[i].is_some())
        .unwrap();
    assert_eq!(ts.srtt_ms[first], Some(1070.0));
}

#[test]
fn without_the_handshake_data_starts_at_the_flow_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = simulate("no-handshake", &late_uplink(dir.path(), false));
    conserved("no-handshake", &out);
    let ev = events(out.packet_log.as_deref().unwrap(), 100);
    assert_eq!(ev[0], (26, "+".to_string(), 1504));
    assert!(ev.iter().all(|e| e.2 == 1504));
}
