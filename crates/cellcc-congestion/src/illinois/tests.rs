//! Illinois formula tests with worked numbers: α(d_a, d_m), β(d_a, d_m), the theta
//! guard, the fixed-point increase and the loss response.

use super::*;
use crate::testing::{cwnd_limited_sock as sock, from_pairs, pkts_acked};
use crate::Dur;

fn sample(cc: &mut Illinois, s: &mut Sock, pkts: u32, rtt_us: Option<u64>) {
    pkts_acked(cc, s, pkts, rtt_us.map(Dur::from_us));
}

#[test]
fn alpha_is_max_at_low_delay_and_falls_to_min_at_max_delay() {
    let mut cc = Illinois::default();
    // d_m = 10 ms: d1 = 100 µs. d_a = 100 µs ≤ d1 and delay never above: α = 10.
    assert_eq!(cc.alpha_for(100, 10_000), ALPHA_MAX);
    // d_a = 5 ms: dm' = 9900, da' = 4900; 4900·1242/38 = 160 152;
    // α = 9900·1280/(9900 + 160 152) = 74 (74.5 floored) ≈ 0.58.
    assert_eq!(cc.alpha_for(5_000, 10_000), 74);
    assert!(cc.rtt_above);
    // d_a = d_m: 9900·1242/38 = 323 573; α = 12 672 000/333 473 = 38 = α_min ≈ 0.3.
    assert_eq!(cc.alpha_for(10_000, 10_000), ALPHA_MIN);
    assert_eq!((ALPHA_MIN, ALPHA_MAX), (38, 1280));
}

#[test]
fn alpha_returns_to_max_only_after_theta_low_delay_rtts() {
    let mut cc = Illinois::default();
    cc.alpha = cc.alpha_for(10_000, 10_000);
    assert_eq!(cc.alpha, ALPHA_MIN);
    // Four low-delay RTTs keep α; the fifth (theta = 5) restores α_max.
    for _ in 0..4 {
        cc.alpha = cc.alpha_for(0, 10_000);
        assert_eq!(cc.alpha, ALPHA_MIN);
    }
    cc.alpha = cc.alpha_for(0, 10_000);
    assert_eq!(cc.alpha, ALPHA_MAX);
    assert!(!cc.rtt_above);
    // Delay stays low: α_max at once from now on.
    assert_eq!(cc.alpha_for(0, 10_000), ALPHA_MAX);
}

#[test]
fn beta_is_an_eighth_at_low_delay_a_half_at_high_delay_linear_between() {
    // d_m = 10 ms: d2 = 1 ms, d3 = 8 ms.
    assert_eq!(beta_for(1_000, 10_000), BETA_MIN);
    assert_eq!(beta_for(8_000, 10_000), BETA_MAX);
    assert_eq!(beta_for(9_000, 10_000), BETA_MAX);
    // d_a = 4.5 ms: (8·8000 − 32·1000 + 24·4500)/7000 = 140 000/7000 = 20 (β = 0.3125).
    assert_eq!(beta_for(4_500, 10_000), 20);
    assert_eq!((BETA_MIN, BETA_MAX), (8, 32));
}

#[test]
fn ssthresh_removes_beta_of_cwnd() {
    let mut cc = Illinois::default();
    let s = sock(100, 50);
    cc.beta = BETA_MIN;
    // 100 − ⌊100·8/64⌋ = 100 − 12 = 88.
    assert_eq!(cc.ssthresh(&s), 88);
    cc.beta = 20;
    // 100 − ⌊2000/64⌋ = 100 − 31 = 69.
    assert_eq!(cc.ssthresh(&s), 69);
    cc.beta = BETA_MAX;
    assert_eq!(cc.ssthresh(&s), 50);
    assert_eq!(cc.ssthresh(&sock(3, 2)), 2);
}

#[test]
fn increase_is_alpha_over_cwnd_per_packet_acked() {
    // α = 10 at cwnd 100: delta = cnt·1280/128 = 10·cnt ≥ 100 after 10 packets: +1,
    // i.e. +10 packets per window.
    let mut cc = Illinois::default();
    let mut s = sock(100, 50);
    cc.end_seq = u64::MAX; // no per-RTT update in this test
    cc.acked = 1; // single-packet ACKs
    for _ in 0..9 {
        cc.cong_avoid(&mut s, 1);
    }
    assert_eq!((s.cwnd, s.cwnd_cnt), (100, 9));
    cc.cong_avoid(&mut s, 1);
    assert_eq!((s.cwnd, s.cwnd_cnt), (101, 0));
    // α = α_min = 38: cnt·38/128 ≥ 100 needs cnt = 337: +1 per 337 packets acked,
    // ≈ 0.297 packets per window of 100.
    cc.alpha = ALPHA_MIN;
    s.cwnd = 100;
    for _ in 0..336 {
        cc.cong_avoid(&mut s, 1);
    }
    assert_eq!((s.cwnd, s.cwnd_cnt), (100, 336));
    cc.cong_avoid(&mut s, 1);
    assert_eq!(s.cwnd, 101);
}

#[test]
fn the_increase_counts_pkts_acked_once_then_one_per_call() {
    // Linux adds `acked` from pkts_acked on the first cong_avoid after it and 1 on
    // later calls (`ca->acked = 1`).
    let mut cc = Illinois::default();
    let mut s = sock(100, 50);
    cc.end_seq = u64::MAX;
    sample(&mut cc, &mut s, 3, None);
    cc.cong_avoid(&mut s, 3);
    assert_eq!(s.cwnd_cnt, 3);
    cc.cong_avoid(&mut s, 3);
    assert_eq!(s.cwnd_cnt, 4);
}

#[test]
fn per_rtt_update_uses_the_average_delay_of_the_round() {
    let mut cc = Illinois::default();
    let mut s = sock(40, 20);
    s.snd_nxt = 100;
    cc.init(&mut s);
    // Samples 20, 30, 25 ms: base 20, max 30, avg 25 → d_a = 5 ms, d_m = 10 ms.
    for r in [20_000, 30_000, 25_000] {
        sample(&mut cc, &mut s, 1, Some(r));
    }
    s.snd_una = 101;
    cc.cong_avoid(&mut s, 1);
    assert_eq!((cc.alpha, cc.beta), (74, beta_for(5_000, 10_000)));
    // β at d_a = 5 ms: (64 000 − 32 000 + 120 000)/7000 = 21.
    assert_eq!(cc.beta, 21);
    assert_eq!(cc.phase(), "adaptive");
    assert_eq!((cc.cnt_rtt, cc.end_seq), (0, 100));
    // Below win_thresh it is Reno.
    s.cwnd = 10;
    sample(&mut cc, &mut s, 1, Some(30_000));
    s.snd_una = 102;
    cc.cong_avoid(&mut s, 1);
    assert_eq!((cc.alpha, cc.beta, cc.phase()), (128, 32, "reno"));
}

#[test]
fn rtt_samples_are_clamped_and_an_rto_resets_to_reno() {
    let mut cc = Illinois::default();
    let mut s = sock(40, 20);
    sample(&mut cc, &mut s, 1, Some(10_000_000));
    assert_eq!(cc.max_rtt, RTT_MAX_US);
    assert_eq!(RTT_MAX_US, 3_355_443);
    cc.alpha = ALPHA_MIN;
    cc.beta = BETA_MIN;
    cc.set_state(&mut s, CaState::Loss);
    assert_eq!(
        (cc.alpha, cc.beta, cc.phase()),
        (ALPHA_BASE, BETA_MAX, "reno")
    );
    // Recovery does not reset.
    cc.alpha = ALPHA_MIN;
    cc.set_state(&mut s, CaState::Recovery);
    assert_eq!(cc.alpha, ALPHA_MIN);
}

fn parse(pairs: &[(&str, u32)]) -> Result<IllinoisConfig, serde::de::value::Error> {
    from_pairs(pairs)
}

#[test]
fn config_defaults_validation_and_unknown_keys() {
    let d = parse(&[]).unwrap();
    assert_eq!((d.win_thresh, d.theta), (15, 5));
    assert!(d.validate().is_ok());
    assert_eq!(
        parse(&[("theta", 300)])
            .unwrap()
            .validate()
            .unwrap_err()
            .field,
        "theta"
    );
    let err = parse(&[("alpha", 1)]).unwrap_err().to_string();
    assert!(err.contains("unknown field `alpha`"), "{err}");
}
