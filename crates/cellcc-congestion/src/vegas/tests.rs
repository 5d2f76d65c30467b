//! Vegas formula tests with worked numbers: the once-per-RTT decision, the slow-start
//! exit, the Reno fallback and the state hooks.

use super::*;
use crate::testing::{cwnd_limited_sock, from_pairs, pkts_acked};
use crate::{Dur, INFINITE_SSTHRESH};

/// A connection in Open with `cwnd`/`ssthresh`, a full window in flight, Vegas enabled
/// at `snd_nxt = 100`.
fn setup(cwnd: u32, ssthresh: u32) -> (Vegas, Sock) {
    let mut s = cwnd_limited_sock(cwnd, ssthresh);
    s.snd_nxt = 100;
    s.snd_una = 100 - u64::from(cwnd);
    let mut v = Vegas::default();
    v.init(&mut s);
    (v, s)
}

fn sample(v: &mut Vegas, s: &mut Sock, rtt_us: u64) {
    pkts_acked(v, s, 1, Some(Dur::from_us(rtt_us)));
}

/// Feed `rtts` as one round's samples, then the ACK that ends the round.
fn round(v: &mut Vegas, s: &mut Sock, rtts: &[u64]) {
    for &r in rtts {
        sample(v, s, r);
    }
    s.snd_una = 101;
    s.snd_nxt = 101 + u64::from(s.cwnd);
    v.cong_avoid(s, 1);
}

#[test]
fn base_rtt_is_the_smallest_sample_plus_one_microsecond() {
    let (mut v, mut s) = setup(20, 10);
    assert_eq!(v.base_rtt_us(), None);
    sample(&mut v, &mut s, 25_000);
    sample(&mut v, &mut s, 20_000);
    sample(&mut v, &mut s, 22_000);
    assert_eq!(v.base_rtt_us(), Some(20_001));
    assert_eq!((v.min_rtt_us, v.cnt_rtt), (20_001, 3));
}

#[test]
fn four_queued_packets_hold_five_decrease_one_increase() {
    // baseRTT 20.001 ms (from an earlier round), this RTT's minimum 25.001 ms.
    // cwnd 20: diff = 20·5000/20001 = 4 (4.9998 floored) = beta → hold.
    let (mut v, mut s) = setup(20, 10);
    v.base_rtt_us = 20_001;
    round(&mut v, &mut s, &[25_000, 26_000, 25_500]);
    assert_eq!(v.phase(), "hold");
    assert_eq!(v.last_diff, Some(4));
    assert_eq!(s.cwnd, 20);
    // cwnd 21: diff = 21·5000/20001 = 5 > beta → cwnd 20, ssthresh = min(10, 20), then
    // tcp_current_ssthresh = max(10, 20·3/4) = 15.
    let (mut v, mut s) = setup(21, 10);
    v.base_rtt_us = 20_001;
    round(&mut v, &mut s, &[25_000, 26_000, 25_500]);
    assert_eq!((v.phase(), v.last_diff), ("decrease", Some(5)));
    assert_eq!((s.cwnd, s.ssthresh), (20, 15));
    // minRTT 21.001 ms: diff = 20·1000/20001 = 0 < alpha → cwnd 21.
    let (mut v, mut s) = setup(20, 10);
    v.base_rtt_us = 20_001;
    round(&mut v, &mut s, &[21_000, 23_000, 22_000]);
    assert_eq!((v.phase(), v.last_diff), ("increase", Some(0)));
    assert_eq!(s.cwnd, 21);
}

#[test]
fn slow_start_ends_at_the_achieved_rate_plus_one() {
    // cwnd 40, baseRTT 20.001 ms, minRTT 30.001 ms: diff = 40·10000/20001 = 19 > gamma;
    // target = 40·20001/30001 = 26 (26.67 floored) → cwnd = ssthresh = 27.
    let (mut v, mut s) = setup(40, INFINITE_SSTHRESH);
    v.base_rtt_us = 20_001;
    round(&mut v, &mut s, &[30_000, 31_000, 30_500]);
    assert_eq!(v.phase(), "leave_slow_start");
    assert_eq!((s.cwnd, s.ssthresh), (27, 27));
    // Now in congestion avoidance: no growth between decisions.
    v.cong_avoid(&mut s, 1);
    assert_eq!(s.cwnd, 27);
}

#[test]
fn slow_start_continues_while_at_most_gamma_packets_queue() {
    // cwnd 10, baseRTT 20.001 ms, minRTT 22.001 ms: diff = 10·2000/20001 = 0 → slow
    // start: +acked on the deciding ACK and on every other ACK.
    let (mut v, mut s) = setup(10, INFINITE_SSTHRESH);
    v.base_rtt_us = 20_001;
    round(&mut v, &mut s, &[22_000, 22_000, 22_000]);
    assert_eq!((v.phase(), s.cwnd), ("slow_start", 11));
    v.cong_avoid(&mut s, 2);
    assert_eq!(s.cwnd, 13);
}

#[test]
fn too_few_samples_in_a_round_fall_back_to_reno() {
    // Only 2 samples in the round: Reno's +1/cwnd step instead of a decision, even
    // though diff would be large.
    let (mut v, mut s) = setup(20, 10);
    round(&mut v, &mut s, &[20_000, 40_000]);
    assert_eq!(v.phase(), "reno");
    assert_eq!((s.cwnd, s.cwnd_cnt), (20, 1));
    // The counters were reset for the next round.
    assert_eq!((v.cnt_rtt, v.min_rtt_us), (0, NO_RTT_US));
}

#[test]
fn vegas_is_off_outside_open_and_restarts_a_round_on_reopen() {
    let (mut v, mut s) = setup(20, 10);
    v.set_state(&mut s, CaState::Recovery);
    s.ca_state = CaState::Recovery;
    // Off: every ACK is a Reno step.
    for r in [20_000, 30_000, 30_000, 30_000] {
        sample(&mut v, &mut s, r);
    }
    s.snd_una = 150;
    v.cong_avoid(&mut s, 1);
    assert_eq!(v.phase(), "reno");
    // Back to Open: the round restarts at the current snd_nxt, so the next decision
    // waits for it.
    s.snd_nxt = 200;
    v.set_state(&mut s, CaState::Open);
    assert_eq!((v.beg_snd_nxt, v.cnt_rtt), (200, 0));
    assert!(v.doing_vegas_now);
    // baseRTT survives a state change but not an idle restart.
    assert_eq!(v.base_rtt_us(), Some(20_001));
    v.cwnd_event(&mut s, CaEvent::TxStart);
    assert_eq!(v.base_rtt_us(), None);
}

#[test]
fn cwnd_never_drops_below_two() {
    let (mut v, mut s) = setup(2, 2);
    v.base_rtt_us = 10_001;
    round(&mut v, &mut s, &[100_000, 100_000, 100_000]);
    assert_eq!(v.phase(), "decrease");
    assert_eq!(s.cwnd, 2);
}

#[test]
fn loss_response_is_renos() {
    let (mut v, mut s) = setup(40, 10);
    assert_eq!(v.ssthresh(&s), 20);
    s.prior_cwnd = 50;
    assert_eq!(v.undo_cwnd(&s), 50);
}

fn parse(pairs: &[(&str, u32)]) -> Result<VegasConfig, serde::de::value::Error> {
    from_pairs(pairs)
}

#[test]
fn config_defaults_validation_and_unknown_keys() {
    let d = parse(&[]).unwrap();
    assert_eq!(d, VegasConfig::default());
    assert_eq!((d.alpha, d.beta, d.gamma), (2, 4, 1));
    assert!(d.validate().is_ok());
    let e = parse(&[("alpha", 5)]).unwrap().validate().unwrap_err();
    assert_eq!(e.field, "beta");
    let err = parse(&[("delta", 1)]).unwrap_err().to_string();
    assert!(err.contains("unknown field `delta`"), "{err}");
}
