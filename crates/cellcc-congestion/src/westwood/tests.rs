//! Westwood+ formula tests with worked numbers: the two 7/8 filters, the sampling
//! interval, duplicate-ACK accounting, BWE·RTTmin and the episode-end events.

use super::*;
use crate::{Dur, Time};

const MSS: u32 = 1448;

fn sock() -> Sock {
    let mut s = Sock::new(MSS, Time::ZERO);
    s.is_cwnd_limited = true;
    s
}

fn started() -> (Westwood, Sock) {
    let mut s = sock();
    let mut w = Westwood::default();
    w.init(&mut s);
    (w, s)
}

/// At `t_ms`, an ACK moving snd_una to `una` (a duplicate if unchanged), with RTT
/// sample `rtt_us`; hooks in Linux's order.
fn ack(w: &mut Westwood, s: &mut Sock, t_ms: u64, una: u64, rtt_us: Option<u64>) {
    s.now = Time::from_ms(t_ms);
    let slow = una == s.snd_una;
    s.snd_una = una;
    w.in_ack_event(s, slow);
    w.pkts_acked(
        s,
        &AckSample {
            pkts_acked: 1,
            rtt: rtt_us.map(Dur::from_us),
            in_flight: 10,
        },
    );
}

#[test]
fn first_sample_fills_both_filters_then_seven_eighths_smoothing() {
    let mut w = Westwood::new(WestwoodConfig::default());
    // 30 000 bytes over 60 jiffies: 500 B/jiffy into both stages.
    w.bk = 30_000;
    w.filter(60);
    assert_eq!((w.bw_ns_est, w.bw_est), (500, 500));
    // Next sample 1000 B/jiffy: bw_ns = (7·500 + 1000)/8 = 562 (562.5 floored);
    // bw_est = (7·500 + 562)/8 = 507 (507.75 floored).
    w.bk = 60_000;
    w.filter(60);
    assert_eq!((w.bw_ns_est, w.bw_est), (562, 507));
}

#[test]
fn bwe_times_rttmin_in_packets_with_a_floor_of_two() {
    let (mut w, _) = started();
    // Nothing measured yet: 2 packets.
    assert_eq!(w.bw_rttmin(), 2);
    // 12 Mbit/s of 1500-byte packets carries 1448 payload bytes per ms; at HZ = 1000
    // with RTTmin 22 jiffies: 1448·22/1448 = 22 packets.
    w.bw_est = 1448;
    w.rtt_min = 22;
    assert_eq!(w.bw_rttmin(), 22);
    // 1000 B/jiffy · 22 / 1448 = 15.19 → 15.
    w.bw_est = 1000;
    assert_eq!(w.bw_rttmin(), 15);
}

#[test]
fn rtt_samples_round_up_to_jiffies_and_feed_rttmin_on_the_next_ack() {
    let (mut w, mut s) = started();
    assert_eq!((w.rtt, w.rtt_min), (20_000, 20_000));
    // 21.005 ms at HZ = 1000 → 22 jiffies.
    ack(&mut w, &mut s, 21, 1, Some(21_005));
    assert_eq!(w.rtt, 22);
    // RTTmin is updated in in_ack_event, which runs before pkts_acked: the next ACK.
    ack(&mut w, &mut s, 22, 2, Some(30_000));
    assert_eq!((w.rtt, w.rtt_min), (30, 22));
    ack(&mut w, &mut s, 23, 3, None);
    assert_eq!(w.rtt_min, 22);
    // At HZ = 250 (4 ms ticks): 21 005 µs · 250 / 10^6 = 5.25 → 6 jiffies.
    s.hz = 250;
    ack(&mut w, &mut s, 24, 4, Some(21_005));
    assert_eq!(w.rtt, 6);
}

#[test]
fn sampling_interval_is_max_of_rtt_and_50_ms() {
    let (mut w, mut s) = started();
    // The first ACK re-anchors snd_una at what it acks (so its segment is not counted)
    // and sets rtt = 30 jiffies.
    ack(&mut w, &mut s, 1, 1, Some(30_000));
    // One segment acked per ms: after 50 ms (not 30) the interval is still open ...
    for t in 2..=50 {
        ack(&mut w, &mut s, t, t, Some(30_000));
    }
    assert_eq!(w.bw_est, 0);
    // ... and closes at Δ = 51 > 50 jiffies, before this ACK's segment is added:
    // 49 segments (t = 2..50), 49·1448/51 = 1391 B/jiffy (1391.2 floored).
    ack(&mut w, &mut s, 51, 51, Some(30_000));
    assert_eq!(w.bw_est, 1391);
    assert_eq!(w.bk, u64::from(MSS));
    // With RTT 80 ms the next interval needs Δ > 80.
    for t in 52..=130 {
        ack(&mut w, &mut s, t, t, Some(80_000));
    }
    ack(&mut w, &mut s, 131, 131, Some(80_000));
    assert_eq!(w.bw_ns_est, 1391, "Δ = 80 is not > 80");
    // Δ = 81: 81 segments, 1448 B/jiffy; bw_ns = (7·1391 + 1448)/8 = 1398 and
    // bw_est = (7·1391 + 1398)/8 = 1391 (1391.9 floored).
    ack(&mut w, &mut s, 132, 132, Some(80_000));
    assert_eq!((w.bw_ns_est, w.bw_est), (1398, 1391));
}

#[test]
fn duplicate_acks_count_one_segment_and_are_not_counted_twice() {
    let (mut w, mut s) = started();
    ack(&mut w, &mut s, 1, 10, None);
    let bk0 = w.bk;
    // Three duplicate ACKs: one MSS each, remembered in `accounted`.
    for t in 2..=4 {
        ack(&mut w, &mut s, t, 10, None);
    }
    assert_eq!(w.bk - bk0, 3 * u64::from(MSS));
    assert_eq!(w.accounted, 3 * u64::from(MSS));
    // The cumulative ACK for 4 segments (the hole plus the 3 SACKed): 4·1448 = 5792
    // > accounted 4344 → counts 5792 − 4344 = 1448, accounted back to 0.
    s.sacked_out = 3;
    s.now = Time::from_ms(5);
    s.snd_una = 14;
    w.in_ack_event(&mut s, true);
    assert_eq!(w.bk - bk0, 4 * u64::from(MSS));
    assert_eq!(w.accounted, 0);
}

#[test]
fn end_of_episode_sets_cwnd_and_ssthresh_to_bwe_rttmin() {
    let (mut w, mut s) = started();
    w.bw_est = 1448;
    w.rtt_min = 22;
    s.cwnd = 60;
    // Recovery entry is Reno's: half of cwnd.
    assert_eq!(w.ssthresh(&s), 30);
    s.ssthresh = 30;
    s.cwnd = 30;
    w.cwnd_event(&mut s, CaEvent::CompleteCwr);
    assert_eq!((s.cwnd, s.ssthresh), (22, 22));
    assert_eq!(w.last_cwr_cwnd, Some(22));
    // An RTO sets ssthresh only and makes the next RTT the new minimum.
    s.cwnd = 40;
    w.cwnd_event(&mut s, CaEvent::Loss);
    assert_eq!((s.cwnd, s.ssthresh), (40, 22));
    ack(&mut w, &mut s, 100, 5, Some(50_000));
    ack(&mut w, &mut s, 101, 6, None);
    assert_eq!(w.rtt_min, 50);
}

#[test]
fn info_reports_the_estimate_in_link_units() {
    let (mut w, _) = started();
    w.bw_est = 1448;
    w.rtt_min = 22;
    let info = w.info();
    let get = |k: &str| info.iter().find(|(n, _)| *n == k).unwrap().1;
    // 1448 B/ms = 11.584 Mbit/s of payload.
    assert!((get("bw_est_mbps") - 11.584).abs() < 1e-9);
    assert_eq!(get("rtt_min_ms"), 22.0);
    assert_eq!(get("bwe_rttmin_pkts"), 22.0);
}

#[test]
fn config_takes_no_keys() {
    let err = crate::testing::from_pairs::<WestwoodConfig>(&[("beta", 1)]).unwrap_err();
    assert!(err.to_string().contains("unknown field `beta`"), "{err}");
}
