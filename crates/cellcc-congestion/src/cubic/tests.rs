//! CUBIC formula tests with worked numbers, and stories of a sender acking rounds.

use super::*;
use crate::testing::Driver;
use crate::{Dur, PacingStatus, INFINITE_SSTHRESH};

/// One bulk CUBIC sender: the window is always full (no losses unless a story calls
/// [`fast_recovery`] or `rto`).
fn flow(cfg: CubicConfig) -> Driver<Cubic> {
    Driver::started(Cubic::new(cfg), |s| s.is_cwnd_limited = true).bulk()
}

/// ACK clocking on an uncongested path: a round's ACKs spread evenly over one `rtt`.
fn clocked_round(f: &mut Driver<Cubic>, rtt: Dur) {
    let gap = rtt / u64::from(f.outstanding());
    f.ack_round(gap, rtt);
}

/// A loss repaired by fast recovery lasting one `rtt`: ssthresh from CUBIC, cwnd set to
/// it when recovery ends (as PRR leaves it), outstanding data acked.
fn fast_recovery(f: &mut Driver<Cubic>, rtt: Dur) {
    f.lose();
    f.advance(rtt);
    f.recover();
}

/// A sender just out of fast recovery from a loss at cwnd = `w_max` (the first loss, so
/// W_max = `w_max` and cwnd = β·`w_max`), with no epoch started yet.
fn after_loss(w_max: u32, rtt: Dur) -> Driver<Cubic> {
    let mut f = flow(CubicConfig::default());
    f.sock.cwnd = w_max;
    f.fill();
    fast_recovery(&mut f, rtt);
    f
}

fn ms(v: u64) -> Dur {
    Dur::from_ms(v)
}

fn us(v: u64) -> Dur {
    Dur::from_us(v)
}

// ---------------------------------------------------------------------------------
// Formulas
// ---------------------------------------------------------------------------------

#[test]
fn derived_constants_match_linux() {
    let d = Derived::new(&CubicConfig::default());
    // 8·1741/3 = 4642 (integer), / 307 = 15.
    assert_eq!(d.beta_scale, 15);
    assert_eq!(d.cube_rtt_scale, 410);
    // 2^40 / 410 = 2681735677.5…
    assert_eq!(d.cube_factor, 2_681_735_677);
}

#[test]
fn k_for_w_max_100_and_cwnd_70() {
    // K = ∛((W_max − cwnd)/C) = ∛(30 / 0.400390625) s = ∛74.927 s = 4.21579 s
    //   = 4316.97 units of 2^-10 s. (With C = 0.4 exactly: 4.2172 s = 4318.4 units.)
    // Fixed point: ∛(30 · ⌊2^40/410⌋) = ∛(30 · 2681735677) = ∛80452070310 = 4316.97.
    let mut c = Cubic::new(CubicConfig::default());
    c.w_max = 100;
    c.start_epoch(70, 0, 1);
    assert_eq!(c.origin_point, 100);
    assert_eq!(c.k, 4317);
    // At or above W_max the curve starts at its plateau: K = 0, origin = cwnd.
    c.w_max = 60;
    c.start_epoch(70, 0, 1);
    assert_eq!((c.k, c.origin_point), (0, 70));
}

#[test]
fn ssthresh_is_beta_cwnd_with_floor_two() {
    let mut f = flow(CubicConfig::default());
    f.sock.cwnd = 100;
    // 100 · 717 / 1024 = 70.02 → 70; W_max = 100 (first loss).
    assert_eq!(f.cc.ssthresh(&f.sock), 70);
    assert_eq!(f.cc.w_max, 100);
    assert_eq!(f.cc.epoch_start, None);
    f.sock.cwnd = 2;
    // 2 · 717 / 1024 = 1.4 → 1, raised to 2.
    assert_eq!(f.cc.ssthresh(&f.sock), 2);
}

#[test]
fn fast_convergence_lowers_w_max_after_a_loss_below_it() {
    let mut c = Cubic::new(CubicConfig::default());
    let mut s = Sock::new(1448, Time::ZERO);
    s.cwnd = 100;
    assert_eq!(c.ssthresh(&s), 70);
    assert_eq!(c.w_max, 100);
    // Second loss at 90 < W_max = 100: W_max = 90 · (1024 + 717) / 2048 = 76.5 → 76,
    // ssthresh = 90 · 717 / 1024 = 63.02 → 63.
    s.cwnd = 90;
    assert_eq!(c.ssthresh(&s), 63);
    assert_eq!(c.w_max, 76);
    // A loss above W_max sets it to cwnd.
    s.cwnd = 120;
    assert_eq!(c.ssthresh(&s), 84); // 120 · 717 / 1024 = 84.02
    assert_eq!(c.w_max, 120);

    // Without fast convergence W_max is always cwnd.
    let mut c = Cubic::new(CubicConfig {
        fast_convergence: false,
        ..CubicConfig::default()
    });
    s.cwnd = 100;
    c.ssthresh(&s);
    s.cwnd = 90;
    assert_eq!(c.ssthresh(&s), 63);
    assert_eq!(c.w_max, 90);
}

#[test]
fn cnt_is_capped_at_20_before_the_first_loss() {
    // Slow start ended without a loss (W_max = 0): the curve starts at its plateau, K = 0,
    // origin = cwnd, so the target one RTT ahead is ≈ cwnd: cnt would be 100·cwnd.
    let mut f = flow(CubicConfig {
        hystart: false,
        ..CubicConfig::default()
    });
    f.sock.cwnd = 50;
    f.sock.ssthresh = 50;
    f.fill();
    f.advance(ms(1)).ack(1, Some(ms(40)));
    assert_eq!(f.cc.k, 0);
    assert_eq!(f.cc.cnt, 20);
    assert_eq!(f.cc.phase(), "convex");
}

#[test]
fn cnt_floor_allows_at_most_one_packet_per_two_acked() {
    // W_max = 100, cwnd = 70, and the flow is application-limited in congestion
    // avoidance for 30 s: cong_avoid returns early, the epoch keeps its start. When it is
    // cwnd-limited again, t − K ≈ 25.9 s and the target is 100 + 0.4·25.9³ ≈ 7000
    // packets: cwnd/(target − cwnd) = 0, floored to 2.
    let mut f = after_loss(100, ms(100));
    clocked_round(&mut f, ms(100));
    let cwnd0 = f.sock.cwnd;
    f.sock.is_cwnd_limited = false;
    f.sock.now += Dur::from_secs(30);
    f.advance(ms(1)).ack(1, Some(ms(100)));
    assert_eq!(f.sock.cwnd, cwnd0);
    f.sock.is_cwnd_limited = true;
    // Credit left over from the old, larger cnt is applied first, as one packet.
    let pending = u32::from(f.sock.cwnd_cnt >= CNT_MIN);
    for _ in 0..100 {
        f.advance(us(100)).ack(1, Some(ms(100)));
        assert_eq!(f.cc.cnt, CNT_MIN);
    }
    // 100 packets acked at cnt = 2: +50.
    assert_eq!(f.sock.cwnd, cwnd0 + pending + 50);
    assert_eq!(f.cc.phase(), "convex");
}

#[test]
fn update_recomputes_at_most_once_per_jiffy_and_every_hz_over_32_when_cwnd_is_still() {
    // Just after a loss from 100 to 70, cnt ≈ 40: a few ACKs leave cwnd at 70.
    let mut f = after_loss(100, ms(100));
    f.advance(ms(1)).ack(1, Some(ms(100)));
    let t0 = f.cc.last_time;
    assert_eq!((f.cc.last_cwnd, f.sock.cwnd), (70, 70));
    // cwnd unchanged: no recomputation up to HZ/32 = 31 jiffies later, one at 32.
    f.advance(ms(31)).ack(1, Some(ms(100)));
    assert_eq!(f.cc.last_time, t0);
    f.advance(ms(1)).ack(1, Some(ms(100)));
    assert_eq!(f.cc.last_time, t0 + 32);
    assert_eq!(f.sock.cwnd, 70);
    // In the same jiffy, even a changed cwnd does not re-evaluate the curve: a stale cnt
    // survives (only the Reno bound and the floor apply).
    f.cc.cnt = 1234;
    f.sock.cwnd = 71;
    f.advance(us(100)).ack(1, Some(ms(100)));
    assert_eq!(f.cc.last_time, t0 + 32);
    assert_eq!((f.cc.last_cwnd, f.cc.cnt), (70, 1234));
    // The next jiffy re-evaluates it.
    f.advance(ms(1)).ack(1, Some(ms(100)));
    assert_eq!(f.cc.last_cwnd, 71);
    assert!(f.cc.cnt < 100, "cnt = {}", f.cc.cnt);
}

// ---------------------------------------------------------------------------------
// Stories
// ---------------------------------------------------------------------------------

#[test]
fn window_returns_to_w_max_at_k_along_a_concave_then_convex_curve() {
    // Loss at cwnd 100 on a 100 ms path: cwnd 70, K = 4.216 s. ACK clocking at a fixed
    // RTT; sample cwnd at the end of each round.
    let rtt = ms(100);
    let mut f = after_loss(100, rtt);
    assert_eq!(f.sock.cwnd, 70);
    let start = f.sock.now;
    let mut trace = Vec::new(); // (seconds since the loss, cwnd)
    while f.sock.now < start + Dur::from_secs(8) {
        clocked_round(&mut f, rtt);
        trace.push(((f.sock.now - start).as_secs_f64(), f.sock.cwnd));
    }
    let cwnd_at = |t: f64| {
        trace
            .iter()
            .find(|(s, _)| *s >= t)
            .expect("trace covers 8 s")
            .1
    };
    assert_eq!(f.cc.k, 4317);

    // W(t) is evaluated one min RTT ahead, so cwnd reaches W_max around t = K.
    let at_k = cwnd_at(4.216);
    assert!((97..=103).contains(&at_k), "cwnd at K = {at_k}");

    // Concave: growth slows toward the plateau. W(1 s) − W(0) = 0.4·(4.2³ − 3.2³) ≈ 16.7,
    // W(4) − W(3) = 0.4·(1.2³ − 0.2³) ≈ 0.7.
    let first_second = cwnd_at(1.0) - cwnd_at(0.0);
    let last_second = cwnd_at(4.2) - cwnd_at(3.2);
    assert!(first_second >= 12, "{first_second}");
    assert!(last_second <= 3, "{last_second}");
    // Convex: growth accelerates beyond it. W(K + 2) − W(K + 1) = 0.4·(8 − 1) = 2.8,
    // W(K + 3.5) − W(K + 2.5) = 0.4·(3.5³ − 2.5³) = 10.9.
    let early_convex = cwnd_at(6.2) - cwnd_at(5.2);
    let late_convex = cwnd_at(7.7) - cwnd_at(6.7);
    assert!(
        late_convex > early_convex + 4,
        "{early_convex} then {late_convex}"
    );
    // Plateau: never more than a few packets above W_max within a second of K.
    assert!(cwnd_at(5.2) <= 103);
    assert_eq!(f.cc.phase(), "convex");
}

#[test]
fn reno_estimate_leads_on_short_rtt_paths() {
    // On a 2 ms path CUBIC's curve gains only ~4 packets in the first 0.2 s, while an
    // AIMD flow with α = 8/15 gains 0.533 per RTT: 100 rounds → +53. cwnd follows W_est.
    let rtt = ms(2);
    let mut f = after_loss(100, rtt);
    for _ in 0..100 {
        clocked_round(&mut f, rtt);
    }
    assert_eq!(f.cc.phase(), "reno_friendly");
    // W_est = 70 + acked/(1.875·cwnd): about 70 + 100·8/15 = 123.
    let w_est = f.cc.w_est;
    assert!((115..=125).contains(&w_est), "W_est = {w_est}");
    assert!(
        f.sock.cwnd + 2 >= w_est && f.sock.cwnd <= w_est,
        "cwnd {} W_est {w_est}",
        f.sock.cwnd
    );
    // The cubic curve alone would be at W(0.2 s + RTT) = 100 − 0.4·(4.216 − 0.202)³ ≈ 74.
    assert!(f.sock.cwnd > 110);

    // Without TCP friendliness, cwnd stays on the curve.
    let mut g = after_loss(100, rtt);
    g.cc.cfg.tcp_friendliness = false;
    for _ in 0..100 {
        clocked_round(&mut g, rtt);
    }
    assert!((72..=78).contains(&g.sock.cwnd), "cwnd = {}", g.sock.cwnd);
    assert_eq!(g.cc.phase(), "concave");
}

#[test]
fn rtt_samples_are_ignored_for_one_second_after_an_epoch_starts() {
    let mut f = after_loss(100, ms(100));
    // The first ACK after recovery: no epoch yet, the sample counts.
    f.advance(ms(1)).ack(1, Some(ms(100)));
    assert_eq!(f.cc.delay_min_us, 100_000);
    let epoch = f.cc.epoch_start.expect("epoch started");
    // 999 jiffies later a lower sample is still ignored; at 1000 it counts.
    f.sock.now = Time::from_ms(epoch + 999);
    f.ack(1, Some(ms(80)));
    assert_eq!(f.cc.delay_min_us, 100_000);
    f.advance(ms(1)).ack(1, Some(ms(80)));
    assert_eq!(f.cc.delay_min_us, 80_000);
}

#[test]
fn idle_period_shifts_the_epoch() {
    let mut f = after_loss(100, ms(100));
    clocked_round(&mut f, ms(100));
    let epoch = f.cc.epoch_start.expect("epoch started");
    let last_ack = f.sock.now;
    // The application pauses 5 s, then sends again with nothing in flight.
    f.sock.now = last_ack + Dur::from_secs(5);
    f.cc.cwnd_event(&mut f.sock, CaEvent::TxStart);
    assert_eq!(f.cc.epoch_start, Some(epoch + 5000));
    // The shift never moves the epoch past now.
    f.cc.epoch_start = Some(f.sock.jiffies() - 10);
    f.cc.cwnd_event(&mut f.sock, CaEvent::TxStart);
    assert_eq!(f.cc.epoch_start, Some(f.sock.jiffies()));
    // Other events and reduced states (no epoch) leave it alone.
    f.cc.epoch_start = None;
    f.cc.cwnd_event(&mut f.sock, CaEvent::TxStart);
    assert_eq!(f.cc.epoch_start, None);
}

#[test]
fn hystart_delay_increase_ends_slow_start() {
    // 40 ms path, ACKs 3 ms apart (longer than the 2 ms train spacing, so only the delay
    // detector can fire). Threshold: 40 + clamp(40/8, 4, 16) = 45 ms.
    let mut f = flow(CubicConfig::default());
    f.ack_round(ms(3), ms(40)); // cwnd 10 → 20
    f.ack_round(ms(3), ms(40)); // 20 → 40
    assert_eq!((f.sock.cwnd, f.sock.ssthresh), (40, INFINITE_SSTHRESH));
    // The queue builds: every sample of the next round is 46 ms. The round's first 8
    // samples set curr_rtt; the 9th finds 46 > 45 and exits with cwnd = 40 + 8.
    for i in 0..9 {
        assert_eq!(f.cc.hystart_exit(), None, "exited after {i} ACKs");
        f.advance(ms(3)).ack(1, Some(ms(46)));
    }
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::Delay));
    assert_eq!(f.sock.ssthresh, 48);
    assert_eq!(f.sock.cwnd, 48);
    assert_eq!(f.cc.phase(), "convex");
}

#[test]
fn hystart_delay_increase_below_the_margin_does_not_exit() {
    let mut f = flow(CubicConfig::default());
    f.ack_round(ms(3), ms(40));
    f.ack_round(ms(3), ms(40));
    // 44 ms ≤ 45 ms, round after round.
    for _ in 0..3 {
        f.ack_round(ms(3), ms(44));
    }
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(f.sock.ssthresh, INFINITE_SSTHRESH);
    assert_eq!(f.sock.cwnd, 320);
}

#[test]
fn hystart_does_not_run_below_the_low_window() {
    // The same rise from 40 to 46 ms happens while cwnd is below hystart_low_window = 64.
    let cfg = CubicConfig {
        hystart_low_window: 64,
        ..CubicConfig::default()
    };
    let mut f = flow(cfg);
    f.ack_round(ms(3), ms(40)); // 10 → 20
    f.ack_round(ms(3), ms(46)); // 20 → 40
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(f.sock.cwnd, 40);
    // In the next round, the k-th ACK sees cwnd = 40 + k − 1: HyStart counts samples
    // from the 25th ACK (cwnd 64) and the 9th of them, at the 33rd ACK, exits at cwnd 72.
    for _ in 0..32 {
        f.advance(ms(3)).ack(1, Some(ms(46)));
    }
    assert_eq!(f.cc.hystart_exit(), None);
    f.advance(ms(3)).ack(1, Some(ms(46)));
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::Delay));
    assert_eq!(f.sock.ssthresh, 72);
}

#[test]
fn hystart_ack_train_ends_slow_start_on_an_unpaced_socket() {
    // 20 ms min RTT, ACKs 1 ms apart (a bottleneck of one packet per ms). Not paced and no
    // pacing rate: the train must outlast delay_min / 2 = 10 ms.
    let mut f = flow(CubicConfig::default());
    f.ack_round(ms(1), ms(20)); // 10 → 20; cwnd reaches 16 mid-round, train broken
    assert_eq!(f.cc.hystart_exit(), None);
    // Next round starts at cwnd 20; its 12th ACK is 11 ms after the first: 11 > 10.
    for _ in 0..11 {
        f.advance(ms(1)).ack(1, Some(ms(20)));
    }
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(f.sock.cwnd, 31);
    f.advance(ms(1)).ack(1, Some(ms(20)));
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::AckTrain));
    assert_eq!(f.sock.ssthresh, 31);
}

#[test]
fn hystart_ack_train_waits_a_full_min_rtt_on_a_paced_socket() {
    // Paced at 12.5 MB/s: the cushion is min(1 ms, 4·64 KiB / rate = 21 ms) = 1 ms, the
    // threshold 20 + 1 = 21 ms. A 20-ACK round (20 → 40) is too short: 19 ms.
    let mut f = flow(CubicConfig::default());
    f.sock.pacing_status = PacingStatus::Needed;
    f.sock.pacing_rate = 12_500_000;
    f.ack_round(ms(1), ms(20));
    f.ack_round(ms(1), ms(20));
    assert_eq!(f.cc.hystart_exit(), None);
    // In the 40-ACK round the 23rd ACK is 22 ms after the first: cwnd 40 + 22.
    for _ in 0..23 {
        f.advance(ms(1)).ack(1, Some(ms(20)));
    }
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::AckTrain));
    assert_eq!(f.sock.ssthresh, 62);
}

#[test]
fn hystart_ack_train_needs_closely_spaced_acks() {
    // 3 ms apart > hystart_ack_delta_us = 2 ms: no train; RTT flat: no delay verdict.
    let cfg = CubicConfig {
        hystart_detect: HYSTART_ACK_TRAIN,
        ..CubicConfig::default()
    };
    let mut f = flow(cfg);
    for _ in 0..5 {
        f.ack_round(ms(3), ms(20));
    }
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(f.sock.cwnd, 320);
}

#[test]
fn without_hystart_slow_start_runs_until_loss() {
    let cfg = CubicConfig {
        hystart: false,
        ..CubicConfig::default()
    };
    let mut f = flow(cfg);
    // RTT climbs from 40 to 200 ms with ACKs 1 ms apart: both detectors would fire.
    for (round, rtt) in [40, 80, 120, 160, 200].into_iter().enumerate() {
        f.ack_round(ms(1), ms(rtt));
        assert_eq!(f.sock.cwnd, 10 << (round + 1));
    }
    assert_eq!(f.sock.ssthresh, INFINITE_SSTHRESH);
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(f.cc.phase(), "slow_start");
    // The loss ends it: ssthresh = 320 · 717 / 1024 = 224.06 → 224.
    fast_recovery(&mut f, ms(200));
    assert_eq!((f.sock.cwnd, f.sock.ssthresh), (224, 224));
}

#[test]
fn initial_ssthresh_applies_only_without_hystart() {
    let cfg = CubicConfig {
        hystart: false,
        initial_ssthresh: 30,
        ..CubicConfig::default()
    };
    assert_eq!(flow(cfg).sock.ssthresh, 30);
    let cfg = CubicConfig {
        initial_ssthresh: 30,
        ..CubicConfig::default()
    };
    assert_eq!(flow(cfg).sock.ssthresh, INFINITE_SSTHRESH);
}

#[test]
fn rto_resets_everything_including_hystart() {
    let mut f = flow(CubicConfig::default());
    f.ack_round(ms(3), ms(40));
    f.ack_round(ms(3), ms(40));
    for _ in 0..9 {
        f.advance(ms(3)).ack(1, Some(ms(46)));
    }
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::Delay));
    clocked_round(&mut f, ms(46));
    assert!(f.cc.epoch_start.is_some());

    f.rto();
    assert_eq!(f.cc.hystart_exit(), None);
    assert_eq!(
        (f.cc.w_max, f.cc.delay_min_us, f.cc.epoch_start),
        (0, 0, None)
    );
    assert_eq!((f.cc.cnt, f.cc.k, f.cc.w_est, f.cc.ack_cnt), (0, 0, 0, 0));
    // A new HyStart round began at the RTO, when everything outstanding was lost.
    assert_eq!(f.cc.hystart.end_seq, f.sock.snd_una);
    assert_eq!(f.sock.cwnd, 1);
    // The clocked round grew cwnd 48 → 50 (cnt 20 before any loss); ssthresh was
    // computed before the reset: 50 · 717 / 1024 = 35.01 → 35.
    assert_eq!(f.sock.ssthresh, 35);
    assert_eq!(f.cc.phase(), "slow_start");

    // HyStart runs again in the next slow start and sees an RTT rise at cwnd 16..24,
    // before ssthresh 35 is reached. The min RTT is relearnt (no epoch, so no 1 s
    // filter) as 40 ms; 50 ms exceeds 40 + 5.
    f.ack_round(ms(3), ms(40)); // 1 → 2
    f.ack_round(ms(3), ms(40)); // 2 → 4
    f.ack_round(ms(3), ms(40)); // 4 → 8
    f.ack_round(ms(3), ms(40)); // 8 → 16
    assert_eq!(f.cc.delay_min_us, 40_000);
    for _ in 0..9 {
        f.advance(ms(3)).ack(1, Some(ms(50)));
    }
    assert_eq!(f.cc.hystart_exit(), Some(HystartExit::Delay));
    assert_eq!(f.sock.ssthresh, 24);
}

#[test]
fn not_cwnd_limited_means_no_growth_and_no_update() {
    let mut f = after_loss(100, ms(100));
    f.sock.is_cwnd_limited = false;
    for _ in 0..50 {
        f.advance(ms(2)).ack(1, Some(ms(100)));
    }
    assert_eq!(f.sock.cwnd, 70);
    assert_eq!(f.cc.epoch_start, None);
}

#[test]
fn undo_is_renos() {
    let mut f = after_loss(100, ms(100));
    f.sock.prior_cwnd = 100;
    assert_eq!(f.cc.undo_cwnd(&f.sock), 100);
}

// ---------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------

fn parse(pairs: &[(&str, u32)]) -> Result<CubicConfig, serde::de::value::Error> {
    crate::testing::from_pairs(pairs)
}

#[test]
fn config_defaults_and_validation() {
    assert_eq!(parse(&[]).unwrap(), CubicConfig::default());
    let cfg = parse(&[
        ("beta", 512),
        ("hystart_detect", 2),
        ("hystart_low_window", 8),
    ])
    .unwrap();
    assert_eq!(
        (cfg.beta, cfg.hystart_detect, cfg.hystart_low_window),
        (512, 2, 8)
    );
    assert_eq!(cfg.bic_scale, 41);

    let err = parse(&[("beta", 1024)]).unwrap_err().to_string();
    assert!(err.contains("1024 is out of range 1..=1023"), "{err}");
    assert!(parse(&[("bic_scale", 0)]).is_err());
    assert!(parse(&[("hystart_detect", 4)]).is_err());
    let err = parse(&[("hystar", 1)]).unwrap_err().to_string();
    assert!(err.contains("unknown field `hystar`"), "{err}");
}

#[test]
fn small_beta_does_not_stall_the_reno_estimate() {
    // beta = 100: beta_scale = 8·1124/3/924 = 3, and (cwnd·3) >> 3 = 0 for cwnd = 2.
    let cfg = CubicConfig {
        beta: 100,
        ..CubicConfig::default()
    };
    let mut c = Cubic::new(cfg);
    c.ack_cnt = 5;
    c.w_est = 2;
    c.cnt = 50;
    c.apply_reno_bound(2);
    // Floored at one packet per step: 4 steps, 1 left.
    assert_eq!((c.w_est, c.ack_cnt), (6, 1));
    assert_eq!(c.cnt, 0); // then raised to CNT_MIN by update()
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        Ack { gap_us: u64, pkts: u32, rtt_ms: u64 },
        Loss,
        Rto,
        Idle { secs: u64 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            20 => (1u64..5_000, 1u32..4, 5u64..300)
                .prop_map(|(gap_us, pkts, rtt_ms)| Step::Ack { gap_us, pkts, rtt_ms }),
            1 => Just(Step::Loss),
            1 => Just(Step::Rto),
            1 => (1u64..20).prop_map(|secs| Step::Idle { secs }),
        ]
    }

    proptest! {
        /// Over random ACK/loss/idle sequences: cwnd never shrinks in cong_avoid, grows in
        /// congestion avoidance by at most one packet per two acked (plus one carried
        /// credit), ssthresh stays ≥ 2, and cnt ≥ 2 after every recomputation.
        #[test]
        fn growth_is_bounded(steps in proptest::collection::vec(step(), 1..400)) {
            let mut f = flow(CubicConfig::default());
            for s in steps {
                match s {
                    Step::Ack { gap_us, pkts, rtt_ms } => {
                        let before = f.sock.cwnd;
                        let in_ca = !f.sock.in_slow_start();
                        f.advance(us(gap_us)).ack(pkts, Some(ms(rtt_ms)));
                        prop_assert!(f.sock.cwnd >= before);
                        if in_ca {
                            prop_assert!(f.sock.cwnd - before <= pkts.div_ceil(2) + 1);
                            prop_assert!(f.cc.cnt >= CNT_MIN);
                        }
                    }
                    Step::Loss => fast_recovery(&mut f, ms(50)),
                    Step::Rto => f.rto(),
                    Step::Idle { secs } => {
                        f.sock.now += Dur::from_secs(secs);
                        f.cc.cwnd_event(&mut f.sock, CaEvent::TxStart);
                    }
                }
                prop_assert!(f.sock.ssthresh >= MIN_SSTHRESH);
            }
        }
    }
}
