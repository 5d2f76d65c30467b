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

/// Verizon-EVDO-driving as `cellcc validate` runs it (20 ms each way, 150 KB drop-tail
/// both ways, the flow's SYN at 26 ms as in the kernel's runs).
fn evdo(down: &std::path::Path, up: &std::path::Path, scheme: &str, handshake: bool) -> String {
    format!(
        "duration_s = 12\nseed = 1\n[metrics]\npacket_log = true\nbin_ms = 10\n\
         [downlink]\ntrace = \"{}\"\ndelay_ms = 20\nqueue = {{ kind = \"droptail\", bytes = 150000 }}\n\
         [uplink]\ntrace = \"{}\"\ndelay_ms = 20\nqueue = {{ kind = \"droptail\", bytes = 150000 }}\n\
         [tcp]\nhandshake = {handshake}\n\
         [[flows]]\nscheme = \"{scheme}\"\nstart_s = 0.006\n",
        down.display(),
        up.display()
    )
}

#[test]
fn on_verizon_evdo_the_handshake_gives_hystart_the_kernels_first_rtt() {
    let Some(down) = common::shared_trace("Verizon-EVDO-driving.down") else {
        return;
    };
    let up = common::shared_trace("Verizon-EVDO-driving.up").unwrap();
    // ssthresh once CUBIC's HyStart has left slow start, and the flow's smallest RTT.
    let exit = |out: &cellcc_sim::SimOutput| {
        let ts = &out.timeseries;
        (0..ts.len())
            .filter(|&i| ts.flow[i] == 0)
            .find_map(|i| ts.ssthresh[i])
            .expect("HyStart ends slow start within 12 s")
    };
    let with = simulate("evdo-handshake", &evdo(&down, &up, "cubic", true));
    let without = simulate("evdo-no-handshake", &evdo(&down, &up, "cubic", false));
    let (w, wo) = (exit(&with), exit(&without));
    println!(
        "Verizon-EVDO-driving: HyStart leaves slow start at ssthresh {w} with the handshake, \
         {wo} without (the kernel's three runs: 52); min RTT {:?} / {:?} ms (kernel 153)",
        with.summary[0].rtt_min_ms, without.summary[0].rtt_min_ms
    );
    // The kernel's first data reaches the link at 1096 ms, with the two handshake ACKs.
    let first = events(with.packet_log.as_deref().unwrap(), 1200)
        .into_iter()
        .find(|e| e.1 == "+" && e.2 == 1504)
        .unwrap();
    assert_eq!(first.0, 1096);
    // Its first RTT sample is 154 ms (the kernel's min_rtt: 153 ms); without the handshake it is the
    // 87 ms of a data packet that caught the 1143 ms uplink opportunity, and HyStart's
    // delay threshold (delay_min + 16 ms) stops slow start at half the kernel's window.
    assert!((50..=56).contains(&w), "{w}");
    assert!(wo <= 32, "{wo}");
    let rtt_min = with.summary[0].rtt_min_ms.unwrap();
    assert!((150.0..=156.0).contains(&rtt_min), "{rtt_min}");
}
