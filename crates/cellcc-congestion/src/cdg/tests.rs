//! CDG formula tests with worked numbers: gradient sums and their extrapolation, the
//! backoff probability, the two ssthresh rules, ineffectual-backoff detection, the
//! delayed-ACK filter, the shadow window and CDG's HyStart.

use super::*;
use crate::testing::{cwnd_limited_sock as sock, from_pairs, pkts_acked};
use crate::{Dur, Time, INFINITE_SSTHRESH};

fn mm(min: i32, max: i32) -> MinMax {
    MinMax { min, max }
}

/// Feed one RTT's (min, max) and take its gradient.
fn push(cdg: &mut Cdg, min: i32, max: i32) -> i32 {
    cdg.rtt = mm(min, max);
    let g = cdg.grad();
    cdg.rtt_prev = cdg.rtt;
    g
}

fn sample(cdg: &mut Cdg, s: &mut Sock, pkts: u32, rtt_us: u64) {
    pkts_acked(cdg, s, pkts, Some(Dur::from_us(rtt_us)));
}

#[test]
fn gradients_are_window_sums_extrapolated_until_the_window_fills() {
    let mut cdg = Cdg::new(CdgConfig::default());
    cdg.rtt_prev = mm(20_000, 25_000);
    // g_min = +1000, g_max = −1000: g = g_min; one of 8 slots filled → ×8/1 = 8000.
    assert_eq!(push(&mut cdg, 21_000, 24_000), 8_000);
    // g_min = +1000, g_max = +2000: sums (2000, 1000) → 2000·8/2 = 8000.
    assert_eq!(push(&mut cdg, 22_000, 26_000), 8_000);
    // Min falls by 3000: sums (−1000, 1000) → g = g_max sum 1000 → ·8/3 = 2666.
    assert_eq!(push(&mut cdg, 19_000, 26_000), 2_666);
    // Fill the window with flat RTTs: after 8 pushes the sum is used as is.
    for _ in 0..4 {
        push(&mut cdg, 19_000, 26_000);
    }
    assert!(!cdg.gfilled);
    assert_eq!(push(&mut cdg, 19_000, 26_000), 1_000);
    assert!(cdg.gfilled);
    // The 9th push evicts the first gradient (+1000, −1000): sums (−1000 − 1000 + 0,
    // 1000 + 1000 + 0) = (−2000, 2000).
    assert_eq!(push(&mut cdg, 19_000, 26_000), 2_000);
    assert_eq!(cdg.gsum, mm(-2_000, 2_000));
}

#[test]
fn window_of_one_uses_the_raw_gradient() {
    let mut cdg = Cdg::new(CdgConfig {
        window: 1,
        ..CdgConfig::default()
    });
    cdg.rtt_prev = mm(20_000, 25_000);
    assert_eq!(push(&mut cdg, 20_500, 25_000), 500);
    assert_eq!(push(&mut cdg, 20_500, 26_000), 1_000);
    assert!(cdg.gfilled);
}

#[test]
fn backoff_probability_is_one_minus_exp_of_minus_g_over_g_scale() {
    // g = 8000 µs (window sum) × 42 = 336 000 → P = 1 − e^(−0.336) = 0.2854.
    let mut cdg = Cdg::new(CdgConfig {
        use_ineff: 0,
        backoff_seed: 1,
        ..CdgConfig::default()
    });
    let mut s = sock(100, 50);
    let n = 20_000;
    let mut hits = 0;
    for _ in 0..n {
        s.cwr_request = false;
        if cdg.backoff(&mut s, 8_000) {
            hits += 1;
            assert!(s.cwr_request);
        }
    }
    let p = f64::from(hits) / f64::from(n);
    assert!((p - 0.2854).abs() < 0.01, "P(backoff) = {p}");
    // No gradient, no backoff; a huge one always.
    assert!(!cdg.backoff(&mut s, 0));
    assert!(cdg.backoff(&mut s, 10_000_000));
}

#[test]
fn backoff_sets_ssthresh_to_beta_and_raises_the_shadow_window() {
    let mut cdg = Cdg::default();
    let mut s = sock(100, 50);
    cdg.shadow_wnd = 80;
    assert!(cdg.backoff(&mut s, 10_000_000));
    assert_eq!((cdg.state, cdg.shadow_wnd), (CdgState::Backoff, 100));
    // 100·724/1024 = 70 (70.7 floored); the undo point is remembered.
    assert_eq!(cdg.ssthresh(&s), 70);
    assert_eq!(cdg.undo_cwnd(&sock(60, 50)), 100);
    // The end of CWR forgets the backoff state and starts a new RTT window.
    cdg.rtt = mm(30_000, 31_000);
    s.snd_nxt = 500;
    cdg.cwnd_event(&mut s, CaEvent::CompleteCwr);
    assert_eq!(cdg.state, CdgState::Unknown);
    assert_eq!(
        (cdg.rtt_seq, cdg.rtt_prev, cdg.rtt),
        (500, mm(30_000, 31_000), mm(0, 0))
    );
}

#[test]
fn loss_uses_half_the_shadow_window() {
    let mut cdg = Cdg::new(CdgConfig::default());
    // shadow 120, cwnd 80 (backed off earlier): shadow = min(60, 80) = 60;
    // ssthresh = max(2, 60, 40) = 60 instead of Reno's 40.
    cdg.shadow_wnd = 120;
    assert_eq!(cdg.ssthresh(&sock(80, 50)), 60);
    assert_eq!(cdg.shadow_wnd, 60);
    // The shadow is capped at 2·cwnd: shadow 400, cwnd 80 → min(200, 80) = 80.
    cdg.shadow_wnd = 400;
    assert_eq!(cdg.ssthresh(&sock(80, 50)), 80);
    // Without the shadow heuristic: Reno's half.
    let mut plain = Cdg::new(CdgConfig {
        use_shadow: false,
        ..CdgConfig::default()
    });
    plain.shadow_wnd = 120;
    assert_eq!(plain.ssthresh(&sock(80, 50)), 40);
}

#[test]
fn ineffectual_backoffs_stop_after_use_ineff_until_delay_falls() {
    let mut cdg = Cdg::default();
    let mut s = sock(100, 50);
    for _ in 0..5 {
        assert!(cdg.backoff(&mut s, 10_000_000));
    }
    // The 6th certain backoff is suppressed: 5 backoffs never lowered the delay.
    assert!(!cdg.backoff(&mut s, 10_000_000));
    assert_eq!((cdg.backoffs, cdg.backoffs_ineffectual), (5, 1));
    // A gradient sum ≤ −32 µs shows a backoff worked: the count restarts.
    cdg.rtt_prev = mm(30_000, 31_000);
    push(&mut cdg, 29_900, 30_900);
    assert_eq!(cdg.backoff_cnt, 0);
    assert!(cdg.backoff(&mut s, 10_000_000));
}

#[test]
fn delayed_ack_filter_lets_lone_acks_only_lower_the_minimum() {
    let mut cdg = Cdg::default();
    let mut s = sock(20, INFINITE_SSTHRESH);
    // A lone ACK with no stretch ACK before: a normal sample.
    sample(&mut cdg, &mut s, 1, 30_000);
    assert_eq!(cdg.rtt, mm(30_000, 30_000));
    // Two stretch ACKs arm the filter (delack = 2).
    sample(&mut cdg, &mut s, 2, 31_000);
    sample(&mut cdg, &mut s, 2, 32_000);
    assert_eq!((cdg.delack, cdg.rtt), (2, mm(30_000, 32_000)));
    // Lone ACKs now: a high one is ignored, a low one still lowers the minimum.
    sample(&mut cdg, &mut s, 1, 45_000);
    sample(&mut cdg, &mut s, 1, 25_000);
    assert_eq!((cdg.delack, cdg.rtt), (0, mm(25_000, 32_000)));
    // SACKed data in flight disables the filter.
    cdg.delack = 3;
    s.sacked_out = 1;
    sample(&mut cdg, &mut s, 1, 45_000);
    assert_eq!(cdg.rtt.max, 45_000);
}

#[test]
fn per_rtt_step_backs_off_and_skips_growth_otherwise_grows_the_shadow_with_cwnd() {
    let mut cdg = Cdg::default();
    let mut s = sock(40, 20);
    s.snd_nxt = 100;
    cdg.init(&mut s);
    assert_eq!((cdg.rtt_seq, cdg.shadow_wnd), (100, 40));
    // Between RTT boundaries: Reno growth, and the shadow follows.
    for _ in 0..40 {
        cdg.cong_avoid(&mut s, 1);
    }
    assert_eq!((s.cwnd, cdg.shadow_wnd), (41, 41));
    // An RTT boundary with a huge rising gradient: certain backoff, no growth.
    cdg.rtt_prev = mm(20_000, 20_000);
    cdg.rtt = mm(120_000, 120_000);
    s.snd_una = 101;
    s.snd_nxt = 141;
    cdg.cong_avoid(&mut s, 1);
    assert!(s.cwr_request);
    assert_eq!((cdg.phase(), s.cwnd, cdg.rtt_seq), ("backoff", 41, 141));
    // Not cwnd-limited: no growth and the shadow falls to cwnd.
    let mut cdg = Cdg::default();
    let mut s = sock(40, 20);
    cdg.init(&mut s);
    cdg.shadow_wnd = 60;
    s.is_cwnd_limited = false;
    cdg.cong_avoid(&mut s, 1);
    assert_eq!((s.cwnd, cdg.shadow_wnd), (40, 40));
}

#[test]
fn hystart_delay_detector_fires_at_nine_eighths_of_the_minimum() {
    let mut cdg = Cdg::new(CdgConfig {
        hystart_detect: HYSTART_DELAY,
        ..CdgConfig::default()
    });
    let mut s = sock(20, INFINITE_SSTHRESH);
    cdg.delay_min = 20_000;
    // Round minimum 22.5 ms = 9/8 · 20 ms is not above the threshold ...
    cdg.rtt = mm(22_500, 24_000);
    for _ in 0..9 {
        cdg.hystart_update(&mut s);
    }
    assert_eq!(s.ssthresh, INFINITE_SSTHRESH);
    // ... 22.501 ms is (the first 8 ACKs of a round are only counted).
    cdg.rtt = mm(22_501, 24_000);
    cdg.hystart_update(&mut s);
    assert_eq!(s.ssthresh, 20);
}

#[test]
fn hystart_ack_train_fires_after_half_the_minimum_delay() {
    let mut cdg = Cdg::new(CdgConfig {
        hystart_detect: HYSTART_ACK_TRAIN,
        ..CdgConfig::default()
    });
    let mut s = sock(20, INFINITE_SSTHRESH);
    s.max_packets_out = 20;
    cdg.rtt = mm(20_000, 20_000);
    // ACKs 1 ms apart: the train starts at 0 ms; base_owd = 20 ms / 2 = 10 ms.
    for t in 0..=10 {
        s.now = Time::from_ms(t);
        cdg.hystart_update(&mut s);
    }
    assert_eq!(s.ssthresh, INFINITE_SSTHRESH, "10 ms is not > 10 ms");
    s.now = Time::from_us(10_001);
    cdg.hystart_update(&mut s);
    assert_eq!(s.ssthresh, 20);
    // A gap of 3 ms or more breaks the train (nothing happens on that ACK).
    let mut cdg2 = Cdg::new(cdg.cfg);
    let mut s2 = sock(20, INFINITE_SSTHRESH);
    s2.max_packets_out = 20;
    cdg2.rtt = mm(20_000, 20_000);
    cdg2.hystart_update(&mut s2);
    s2.now = Time::from_ms(3);
    cdg2.hystart_update(&mut s2);
    assert_eq!(cdg2.last_ack_us, Some(0));
}

fn parse(toml_like: &[(&str, u32)]) -> Result<CdgConfig, serde::de::value::Error> {
    from_pairs(toml_like)
}

#[test]
fn config_defaults_and_validation() {
    let d = CdgConfig::default();
    assert_eq!(
        (
            d.window,
            d.backoff_beta,
            d.backoff_factor,
            d.hystart_detect,
            d.use_ineff
        ),
        (8, 724, 42, 3, 5)
    );
    assert!(d.use_shadow && !d.use_tolerance);
    assert!(d.validate().is_ok());
    assert_eq!(parse(&[]).unwrap(), d);
    let bad = |c: CdgConfig| c.validate().unwrap_err().field;
    assert_eq!(bad(CdgConfig { window: 6, ..d }), "window");
    assert_eq!(bad(CdgConfig { window: 512, ..d }), "window");
    assert_eq!(bad(CdgConfig { window: 0, ..d }), "window");
    assert_eq!(
        bad(CdgConfig {
            backoff_beta: 1025,
            ..d
        }),
        "backoff_beta"
    );
    assert_eq!(
        bad(CdgConfig {
            hystart_detect: 4,
            ..d
        }),
        "hystart_detect"
    );
    let err = parse(&[("gamma", 1)]).unwrap_err().to_string();
    assert!(err.contains("unknown field `gamma`"), "{err}");
}
