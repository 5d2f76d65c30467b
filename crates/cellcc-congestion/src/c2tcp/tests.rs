//! C2TCP formula tests with worked numbers from the papers, and stories of a sender
//! receiving ACKs with chosen RTTs.

use super::detector::{inv_sqrt_scale, newton_step};
use super::epoch::CubicEpoch;
use super::tuner::{linux_update, paper_update};
use super::*;
use crate::testing::Driver;
use crate::Time;

fn ms(v: u64) -> Dur {
    Dur::from_ms(v)
}

fn us(v: u64) -> Dur {
    Dur::from_us(v)
}

fn jsac(edit: impl FnOnce(&mut C2tcpConfig)) -> C2tcp {
    let mut cfg = C2tcpConfig {
        tuner: false,
        alpha: 2.0,
        ..C2tcpConfig::default()
    };
    edit(&mut cfg);
    C2tcp::new(cfg)
}

fn ifip(edit: impl FnOnce(&mut C2tcpIfipConfig)) -> C2tcp {
    let mut cfg = C2tcpIfipConfig::default();
    edit(&mut cfg);
    C2tcp::ifip(cfg)
}

/// One sender. Unless a story says otherwise the flow is not cwnd-limited, so the base
/// algorithm never grows cwnd and every change of cwnd is C2TCP's. The stories set
/// `ca_state` by hand and expect `cong_avoid` on every ACK, as the kernel module sees
/// it; the driver's PRR stand-in is off.
fn flow(cc: C2tcp, cwnd: u32, ssthresh: u32) -> Driver<C2tcp> {
    let mut f = Driver::new(cc);
    f.init();
    f.sock.cwnd = cwnd;
    f.sock.ssthresh = ssthresh;
    f.sock.is_cwnd_limited = false;
    f.sock.max_packets_out = 0;
    f.cong_avoid_in_reduction = true;
    f
}

/// The story's time `since_zero`.
fn t(since_zero: Dur) -> Time {
    Time::ZERO + since_zero
}

// ---------------------------------------------------------------------------------
// Action Enforcer: Eq. (1)
// ---------------------------------------------------------------------------------

#[test]
fn jsac_eq1_adds_setpoint_over_rtt_per_window() {
    // Setpoint 40 ms, rtt 25 ms, cwnd 20: each acked packet adds (40/25)·(1/20) = 0.08.
    // 12 packets give 0.96 (no growth), the 13th 1.04: cwnd 21.
    let mut e = Enforcer::default();
    let mut s = Sock::new(1448, Time::ZERO);
    s.cwnd = 20;
    for _ in 0..12 {
        e.increase(&mut s, ms(40), ms(25), 1);
    }
    assert_eq!(s.cwnd, 20);
    e.increase(&mut s, ms(40), ms(25), 1);
    assert_eq!(s.cwnd, 21);

    // Over windows: Setpoint/rtt = 1.6 packets per RTT. From cwnd 100, the first +1
    // needs ⌈1/0.016⌉ = 63 packets, the next ⌈(101 − 0.8)/1.6⌉ = 63 more at 101, the
    // third 64 more at 102: cwnd is 101 after one window (100 packets) and 103 after
    // two (200 packets): 3 packets in 2 RTTs, the 3.2 of Eq. (1) floored.
    let mut e = Enforcer::default();
    s.cwnd = 100;
    let mut at = Vec::new();
    for k in 1..=200 {
        let before = s.cwnd;
        e.increase(&mut s, ms(40), ms(25), 1);
        if s.cwnd != before {
            at.push(k);
        }
    }
    assert_eq!(at, vec![63, 126, 190]);
    assert_eq!(s.cwnd, 103);
}

#[test]
fn jsac_eq1_counts_packets_not_acks() {
    // Setpoint/rtt = 40/20 = 2 per RTT at cwnd 10: 0.2 per packet. Delayed ACKs of two
    // packets: 0.4, 0.8, then 1.2 at the third ACK.
    let mut e = Enforcer::default();
    let mut s = Sock::new(1448, Time::ZERO);
    s.cwnd = 10;
    e.increase(&mut s, ms(40), ms(20), 2);
    e.increase(&mut s, ms(40), ms(20), 2);
    assert_eq!(s.cwnd, 10);
    e.increase(&mut s, ms(40), ms(20), 2);
    assert_eq!(s.cwnd, 11);
}

#[test]
fn linux_increase_goes_through_the_shared_counter() {
    let mut s = Sock::new(1448, Time::ZERO);
    s.cwnd = 20;
    // SP_ms 40, r_ms 25: ⌊40/25⌋ = 1 per ACK (the paper's 1.6/cwnd is floored per ACK).
    for _ in 0..19 {
        Enforcer::increase_linux(&mut s, 40, 25);
    }
    assert_eq!((s.cwnd, s.cwnd_cnt), (20, 19));
    Enforcer::increase_linux(&mut s, 40, 25);
    assert_eq!((s.cwnd, s.cwnd_cnt), (21, 0));
    // r_ms 13: ⌊40/13⌋ = 3 per ACK; 7 ACKs make 21 ≥ 21 → +1 with nothing left.
    for _ in 0..7 {
        Enforcer::increase_linux(&mut s, 40, 13);
    }
    assert_eq!((s.cwnd, s.cwnd_cnt), (22, 0));
    // Credit the base left in the counter counts too: 20 + 3 ≥ 22 → +1, 1 left.
    s.cwnd_cnt = 20;
    Enforcer::increase_linux(&mut s, 40, 13);
    assert_eq!((s.cwnd, s.cwnd_cnt), (23, 1));
    // Sub-ms RTT: r_ms 0 divides by 1.
    s.cwnd_cnt = 0;
    Enforcer::increase_linux(&mut s, 40, 0);
    assert_eq!(s.cwnd_cnt, 40 - 23);
    assert_eq!(s.cwnd, 24);
}

#[test]
fn linux_ifip_increase_grows_one_packet_and_restarts_the_counter() {
    let mut s = Sock::new(1448, Time::ZERO);
    s.cwnd = 5;
    // Target 100 ms, r_ms 30: ⌊100/30⌋ = 3 per ACK; 3 then 6 ≥ 5: +1 and the counter
    // restarts at 0 (v2.2 would keep 1).
    Enforcer::increase_linux_ifip(&mut s, 100, 30);
    assert_eq!((s.cwnd, s.cwnd_cnt), (5, 3));
    Enforcer::increase_linux_ifip(&mut s, 100, 30);
    assert_eq!((s.cwnd, s.cwnd_cnt), (6, 0));
    // r_ms 1: 100 at once is still only +1.
    Enforcer::increase_linux_ifip(&mut s, 100, 1);
    assert_eq!((s.cwnd, s.cwnd_cnt), (7, 0));
}

// ---------------------------------------------------------------------------------
// Condition Detector: Algorithm 1
// ---------------------------------------------------------------------------------

#[test]
fn interval_over_sqrt_n_exactly() {
    // 40 ms/√2 = 28.2842712 ms, 40 ms/√3 = 23.0940108 ms, 100 ms/√4 = 50 ms.
    assert_eq!(inv_sqrt_scale(ms(40), 1), ms(40));
    assert_eq!(inv_sqrt_scale(ms(40), 2), Dur::from_ns(28_284_271));
    assert_eq!(inv_sqrt_scale(ms(40), 3), Dur::from_ns(23_094_010));
    assert_eq!(inv_sqrt_scale(ms(100), 4), ms(50));
}

#[test]
fn codel_newton_steps_approximate_inv_sqrt() {
    // x' = x(3 − n·x²)/2 from x = 1: n = 1 stays at 1.0; then one step per n:
    // 0.5 (1/√2 = 0.707), 0.5625 (0.577), 0.4878 (0.5), 0.4415 (0.447).
    let r1 = newton_step(u16::MAX, 1);
    assert_eq!(r1, u16::MAX);
    let r2 = newton_step(r1, 2);
    assert_eq!(r2, 32769);
    let r3 = newton_step(r2, 3);
    assert_eq!(r3, 36864); // 0.5625 · 65536
    let r4 = newton_step(r3, 4);
    assert_eq!(r4, 31968);
    let r5 = newton_step(r4, 5);
    assert_eq!(r5, 28935);
}

#[test]
fn jsac_good_normal_bad_and_interval_over_sqrt_n() {
    let mut f = flow(jsac(|_| {}), 100, 50);
    assert_eq!(f.cc.phase(), "good");
    // First sample defines MINRTT = 20 ms; Setpoint = 2 × 20 = 40 ms; 20 < 40: good.
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    assert_eq!(f.cc.min_rtt(), Some(ms(20)));
    assert_eq!(f.cc.setpoint(), Some(ms(40)));
    assert_eq!(f.cc.phase(), "good");
    // 45 ms ≥ Setpoint: Normal; next_time = 10 + Interval (40) = 50 ms.
    f.at(t(ms(10))).ack(1, Some(ms(45)));
    assert_eq!(f.cc.phase(), "normal");
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + ms(50));
    // At 50 ms exactly, now > next_time is false.
    f.at(t(ms(50))).ack(1, Some(ms(45)));
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("normal", 100));
    // Just after: Bad. ssthresh from CUBIC: ⌊100·717/1024⌋ = 70; cwnd = 1; TCP state
    // unchanged.
    let t1 = ms(50) + Dur::from_ns(1);
    f.at(t(t1)).ack(1, Some(ms(45)));
    assert_eq!(f.cc.phase(), "bad");
    assert_eq!((f.sock.cwnd, f.sock.ssthresh), (1, 70));
    assert_eq!(f.sock.ca_state, CaState::Open);
    assert_eq!(f.cc.detector.backoffs_plus_one(), 2);
    // Second back-off an Interval/√1 later: cwnd (5 by now) back to 1, ssthresh
    // max(⌊5·717/1024⌋, 2) = 3.
    f.at(t(ms(70))).ack(1, Some(ms(45)));
    assert_eq!(f.sock.cwnd, 1);
    f.sock.cwnd = 5;
    let t2 = t1 + ms(40);
    f.at(t(t2)).ack(1, Some(ms(45)));
    assert_eq!(f.sock.cwnd, 5, "not before Interval/√1");
    f.at(t(t2 + Dur::from_ns(1))).ack(1, Some(ms(45)));
    assert_eq!((f.sock.cwnd, f.sock.ssthresh), (1, 3));
    // Then Interval/√2 = 28.284271 ms, then Interval/√3 = 23.094010 ms.
    let t3 = t2 + Dur::from_ns(1) + Dur::from_ns(28_284_271);
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + t3);
    f.at(t(t3 + Dur::from_ns(1))).ack(1, Some(ms(45)));
    let t4 = t3 + Dur::from_ns(1) + Dur::from_ns(23_094_010);
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + t4);
    assert_eq!(f.cc.detector.backoffs_plus_one(), 4);
    // A good sample ends the episode: N = 1, and the next episode waits a full
    // Interval again.
    f.at(t(ms(200))).ack(1, Some(ms(30)));
    assert_eq!(f.cc.phase(), "good");
    assert_eq!(f.cc.detector.backoffs_plus_one(), 1);
    // Three back-offs in all (just after t1, t2 and t3).
    let info = f.cc.info();
    assert_eq!(info[0], ("backoffs", 3.0));
    assert_eq!(info[1], ("alpha", 2.0));
    assert_eq!(info[2], ("min_rtt_ms", 20.0));
    f.at(t(ms(210))).ack(1, Some(ms(45)));
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + ms(250));
}

#[test]
fn jsac_good_samples_grow_cwnd_by_setpoint_over_rtt() {
    // MINRTT 20 ms (first sample: +2/100 of a packet), Setpoint 40 ms; then rtt 25 ms:
    // 1.6/100 per packet. Credit 0.02 + 0.016k reaches 1 at k = 62 (Q16: 131072 +
    // 104857·62 = 6632206 ≥ 6553600; k = 61 gives 6527349).
    let mut f = flow(jsac(|_| {}), 100, 50);
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    for k in 1..=61 {
        f.at(t(ms(1 + k))).ack(1, Some(ms(25)));
    }
    assert_eq!(f.sock.cwnd, 100);
    f.at(t(ms(63))).ack(1, Some(ms(25)));
    assert_eq!(f.sock.cwnd, 101);
    // Normal samples add nothing.
    for k in 0..200 {
        f.at(t(ms(64) + us(k))).ack(1, Some(ms(40)));
    }
    assert_eq!(f.sock.cwnd, 101);
    assert_eq!(f.cc.phase(), "normal");
}

#[test]
fn jsac_alpha_one_is_never_good() {
    // Setpoint = MINRTT and rtt ≥ MINRTT always, so rtt < Setpoint never holds.
    let mut f = flow(jsac(|c| c.alpha = 1.0), 50, 10);
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    assert_eq!(f.cc.phase(), "normal");
    f.at(t(ms(21))).ack(1, Some(ms(20)));
    assert_eq!(f.cc.phase(), "normal", "an Interval (20 ms) has not passed");
    f.at(t(ms(22))).ack(1, Some(ms(20)));
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("bad", 1));
}

#[test]
fn paper_fidelity_does_not_act_during_loss_recovery() {
    let mut f = flow(jsac(|_| {}), 100, 50);
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    // Recovery: an imaginary loss would be part of the episode being handled.
    f.sock.ca_state = CaState::Recovery;
    for k in 0..100 {
        f.at(t(ms(2 + k))).ack(1, Some(ms(45)));
    }
    assert_eq!(
        (f.cc.phase(), f.sock.cwnd, f.sock.ssthresh),
        ("good", 100, 50)
    );
    // Samples still feed MINRTT.
    f.at(t(ms(110))).ack(1, Some(ms(15)));
    assert_eq!(f.cc.min_rtt(), Some(ms(15)));
    // Back in Open the episode starts from the first high sample.
    f.sock.ca_state = CaState::Open;
    f.at(t(ms(120))).ack(1, Some(ms(45)));
    assert_eq!(f.cc.phase(), "normal");
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + ms(120 + 30));
}

#[test]
fn linux_fidelity_acts_during_recovery_with_the_prr_guard() {
    let cc = jsac(|c| {
        c.fidelity = Fidelity::Linux;
        c.base = Base::Newreno;
    });
    let mut f = flow(cc, 100, 50);
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    f.at(t(ms(10))).ack(1, Some(ms(45)));
    // Recovery entered just after a reset: PRR's prior_cwnd is 1; PRR holds cwnd at 30.
    f.sock.ca_state = CaState::Recovery;
    f.sock.prior_cwnd = 1;
    f.sock.cwnd = 30;
    f.at(t(ms(51))).ack(1, Some(ms(45)));
    // prior_ssthresh = tcp_current_ssthresh() = ssthresh in Recovery; NewReno: 30/2.
    assert_eq!((f.sock.prior_ssthresh, f.sock.ssthresh), (50, 15));
    assert_eq!(f.sock.cwnd, 1);
    // Guard: PRR's reference is the cwnd the back-off found, not 1.
    assert_eq!(f.sock.prior_cwnd, 30);
}

#[test]
fn acks_without_rtt_samples_are_ignored() {
    let mut f = flow(jsac(|_| {}), 100, 50);
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    f.at(t(ms(10))).ack(1, Some(ms(45)));
    // Long past next_time, but no sample: nothing happens.
    f.at(t(ms(500))).ack(1, None);
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("normal", 100));
}

#[test]
fn newreno_base_halves_on_backoff() {
    let mut f = flow(jsac(|c| c.base = Base::Newreno), 100, 50);
    assert_eq!(f.cc.base().name(), "newreno");
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    f.at(t(ms(10))).ack(1, Some(ms(45)));
    f.at(t(ms(51))).ack(1, Some(ms(45)));
    assert_eq!((f.sock.cwnd, f.sock.ssthresh), (1, 50));
}

#[test]
fn ifip_algorithm_1_good_waiting_bad() {
    // Target 100 ms, Interval 100 ms (the IFIP evaluation's setting).
    let mut f = flow(ifip(|_| {}), 10, 5);
    assert_eq!(f.cc.name(), "c2tcp-ifip");
    // rtt 80 ms < Target: Target/rtt = 1.25 packets per RTT, 0.125 per packet at
    // cwnd 10: exactly 8 packets per +1.
    for k in 1..=7 {
        f.at(t(ms(k))).ack(1, Some(ms(80)));
    }
    assert_eq!(f.sock.cwnd, 10);
    f.at(t(ms(8))).ack(1, Some(ms(80)));
    assert_eq!((f.sock.cwnd, f.cc.phase()), (11, "good"));
    // 150 ms: waiting phase until next_time = 20 + 100 ms.
    f.at(t(ms(20))).ack(1, Some(ms(150)));
    assert_eq!(f.cc.phase(), "waiting");
    f.at(t(ms(120))).ack(1, Some(ms(150)));
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("waiting", 11));
    let t1 = ms(120) + us(1);
    f.at(t(t1)).ack(1, Some(ms(150)));
    // Bad: ssthresh = ⌊11·717/1024⌋ = 7, cwnd = 1.
    assert_eq!((f.cc.phase(), f.sock.cwnd, f.sock.ssthresh), ("bad", 1, 7));
    // Then Interval/√1, Interval/√2 = 70.710678 ms, Interval/√3 = 57.735026 ms.
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + t1 + ms(100));
    let t2 = t1 + ms(100) + us(1);
    f.at(t(t2)).ack(1, Some(ms(150)));
    assert_eq!(
        f.cc.detector.next_time(),
        Time::ZERO + t2 + Dur::from_ns(70_710_678)
    );
    let t3 = t2 + Dur::from_ns(70_710_678) + us(1);
    f.at(t(t3)).ack(1, Some(ms(150)));
    assert_eq!(
        f.cc.detector.next_time(),
        Time::ZERO + t3 + Dur::from_ns(57_735_026)
    );
    // Good again at rtt 99 ms.
    f.at(t(ms(400))).ack(1, Some(ms(99)));
    assert_eq!(f.cc.phase(), "good");
}

// ---------------------------------------------------------------------------------
// Linux fidelity
// ---------------------------------------------------------------------------------

#[test]
fn linux_floors_to_ms_compares_inclusively_and_uses_newton_spacing() {
    let mut f = flow(
        jsac(|c| {
            c.fidelity = Fidelity::Linux;
            c.base = Base::Newreno; // no CUBIC epoch gate in this story
        }),
        100,
        50,
    );
    // MINRTT 20.4 ms → 20 ms; Setpoint = ⌊20 · 200/100⌋ = 40 ms.
    f.at(t(ms(1))).ack(1, Some(us(20_400)));
    assert_eq!(f.cc.setpoint(), Some(ms(40)));
    // 40.9 ms floors to 40 ≤ 40: good (the paper: 40.9 < 40.8 is false).
    f.at(t(ms(2))).ack(1, Some(us(40_900)));
    assert_eq!(f.cc.phase(), "good");
    // 41 ms: the episode starts at 10.5 ms; next_time 50.5 ms, read back as 50 ms.
    f.at(t(us(10_500))).ack(1, Some(ms(41)));
    assert_eq!(f.cc.phase(), "normal");
    f.at(t(ms(50))).ack(1, Some(ms(41)));
    assert_eq!(f.cc.phase(), "normal");
    // 50.3 ms > 50 ms: back-off (the paper would wait past 50.5 ms).
    f.at(t(us(50_300))).ack(1, Some(ms(41)));
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("bad", 1));
    // prior_ssthresh = tcp_current_ssthresh() = max(50, ¾·100) = 75; NewReno: 50.
    assert_eq!((f.sock.prior_ssthresh, f.sock.ssthresh), (75, 50));
    // Spacing 40 ms × 0xFFFF/2^16 = 39.999 ms, then × 32769/2^16 = 20.000 ms, then
    // × 36864/2^16 = 22.5 ms (Newton steps, not 1/√2, 1/√3).
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + us(50_300 + 39_999));
    // next_time 90.299 ms is read as 90 ms.
    f.at(t(us(90_001))).ack(1, Some(ms(41)));
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + us(90_001 + 20_000));
    f.at(t(us(110_500))).ack(1, Some(ms(41)));
    assert_eq!(f.cc.detector.next_time(), Time::ZERO + us(110_500 + 22_500));
}

#[test]
fn linux_hook_is_blind_for_one_second_after_a_cubic_epoch_start() {
    let cc = jsac(|c| c.fidelity = Fidelity::Linux);
    let mut f = flow(cc, 10, 10);
    f.sock.is_cwnd_limited = true;
    // Congestion avoidance (cwnd = ssthresh): the first ACK opens CUBIC's epoch at
    // jiffy 1 after C2TCP's hook ran (MINRTT 20 ms).
    f.at(t(ms(1))).ack(1, Some(ms(20)));
    assert_eq!(f.cc.min_rtt(), Some(ms(20)));
    assert!(f.cc.in_blackout(&f.sock));
    // For one second RTTs of 100 ms are not seen at all: no episode, no back-off, no
    // MINRTT update.
    for k in 1..1000 {
        f.sock.is_cwnd_limited = false;
        f.at(t(ms(1 + k))).ack(1, Some(ms(100)));
        assert_eq!(f.cc.phase(), "good", "at {} ms", 1 + k);
    }
    assert_eq!(f.sock.cwnd, 10);
    // From jiffy 1001 the hook runs: Normal, then Bad an Interval (40 ms) later.
    f.at(t(ms(1001))).ack(1, Some(ms(100)));
    assert_eq!(f.cc.phase(), "normal");
    f.at(t(ms(1042))).ack(1, Some(ms(100)));
    assert_eq!((f.cc.phase(), f.sock.cwnd), ("bad", 1));

    // With paper fidelity the same story backs off 40 ms after the first high RTT.
    let mut p = flow(jsac(|_| {}), 10, 10);
    p.sock.is_cwnd_limited = true;
    p.at(t(ms(1))).ack(1, Some(ms(20)));
    p.sock.is_cwnd_limited = false;
    p.at(t(ms(2))).ack(1, Some(ms(100)));
    p.at(t(ms(43))).ack(1, Some(ms(100)));
    assert_eq!((p.cc.phase(), p.sock.cwnd), ("bad", 1));
}

#[test]
fn cubic_epoch_mirror_follows_bictcp_update() {
    let mut s = Sock::new(1448, Time::ZERO);
    s.is_cwnd_limited = true;
    let mut e = CubicEpoch::default();
    let at = |s: &mut Sock, jiffy: u64| s.now = Time::ZERO + ms(jiffy);

    // Slow start: an ACK that stops at ssthresh leaves nothing for CA, no epoch; one
    // with a leftover opens it.
    s.cwnd = 8;
    s.ssthresh = 10;
    s.max_packets_out = 8;
    at(&mut s, 5);
    e.on_cong_avoid(&s, 2);
    assert_eq!(e.epoch_start(), None);
    e.on_cong_avoid(&s, 3);
    assert_eq!(e.epoch_start(), Some(5));
    at(&mut s, 1004);
    assert!(e.in_blackout(&s));
    at(&mut s, 1005);
    assert!(!e.in_blackout(&s));

    // A reduction ends the epoch. With cwnd equal to the last recomputation's and
    // within HZ/32 = 31 jiffies of it, bictcp_update returns before opening one.
    s.cwnd = 10;
    s.ssthresh = 7;
    at(&mut s, 100);
    e.reset();
    e.on_cong_avoid(&s, 1);
    assert_eq!(e.epoch_start(), Some(100));
    e.on_ssthresh();
    at(&mut s, 131);
    e.on_cong_avoid(&s, 1);
    assert_eq!(e.epoch_start(), None);
    at(&mut s, 132);
    e.on_cong_avoid(&s, 1);
    assert_eq!(e.epoch_start(), Some(132));

    // Not cwnd-limited: nothing.
    e.on_ssthresh();
    s.is_cwnd_limited = false;
    at(&mut s, 400);
    e.on_cong_avoid(&s, 1);
    assert_eq!(e.epoch_start(), None);

    // Idle: last send at 200 ms, transmission restarts at 500 ms: the epoch moves by
    // 300 jiffies (to 432), never past now.
    s.is_cwnd_limited = true;
    s.cwnd = 11;
    at(&mut s, 132);
    e.on_cong_avoid(&s, 1);
    assert_eq!(e.epoch_start(), Some(132));
    s.lsndtime = Time::ZERO + ms(200);
    at(&mut s, 500);
    e.on_cwnd_event(&s, CaEvent::TxStart);
    assert_eq!(e.epoch_start(), Some(432));
    // An RTO forgets everything.
    e.on_set_state(CaState::Loss);
    assert_eq!(e.epoch_start(), None);
}

// ---------------------------------------------------------------------------------
// Tuner: Algorithm 3
// ---------------------------------------------------------------------------------

#[test]
fn tuner_algorithm_3_worked_numbers() {
    // Target 50 ms, α = 1.5.
    // avg 40 < 50: α += (50 − 40)/(2·40) = 0.125 → 1.625.
    assert_eq!(paper_update(1500, 40, 50), 1625);
    // avg 60 > 50: α −= 2·(60 − 50)/50 = 0.4 → 1.1. The same 10 ms error moves α
    // down 3.2× more than up: the update is asymmetric.
    assert_eq!(paper_update(1500, 60, 50), 1100);
    // avg 100: α −= 2 → clamped to min_α = 1.
    assert_eq!(paper_update(1500, 100, 50), 1000);
    // Target 100, avg 10 from α = 9: α += 90/20 = 4.5 → clamped to max_α = 10.
    assert_eq!(paper_update(9000, 10, 100), 10_000);
    // On target: unchanged. Units cancel: ns work like ms.
    assert_eq!(paper_update(1500, 50, 50), 1500);
    assert_eq!(paper_update(1500, 40_000_000, 50_000_000), 1625);
    // (50 − 30)/(2·30) = 0.3333… floors to 0.333.
    assert_eq!(paper_update(2000, 30, 50), 2333);
}

#[test]
fn reference_tuner_worked_numbers() {
    // α ×100 = 150, T = 50 ms. avg 40: 150 + ⌊⌊10·150/2⌋/40⌋ = 150 + ⌊750/40⌋ = 168.
    assert_eq!(linux_update(1500, 40, 50), 1680);
    // avg 60: 150 − ⌊2·10·150/60⌋ = 150 − 50 = 100.
    assert_eq!(linux_update(1500, 60, 50), 1000);
    // α 200, avg 55: 200 − ⌊2·5·200/55⌋ = 200 − 36 = 164.
    assert_eq!(linux_update(2000, 55, 50), 1640);
    // avg 0 (no sample above 0 ms): unchanged.
    assert_eq!(linux_update(1500, 0, 50), 1500);
    // α 900, avg 20, T 100: 900 + ⌊⌊80·900/2⌋/20⌋ = 900 + 1800 → 1000 (α = 10).
    assert_eq!(linux_update(9000, 20, 100), 10_000);
    // α 100, avg 500, T 50: 100 − 180 → clamped to 100.
    assert_eq!(linux_update(1000, 500, 50), 1000);
}

/// ACKs every 10 ms from `from` to `to` (exclusive) with RTT `rtt`.
fn acks_every_10ms(f: &mut Driver<C2tcp>, from_ms: u64, to_ms: u64, rtt: Dur) {
    for at_ms in (from_ms..to_ms).step_by(10) {
        f.at(t(ms(at_ms))).ack(1, Some(rtt));
    }
}

#[test]
fn tuner_runs_every_half_second_and_follows_the_target_schedule() {
    let cc = jsac(|c| {
        c.tuner = true;
        c.alpha = 1.5;
        c.target_ms = 50.0;
        c.target_schedule = vec![[1.0, 30.0], [2.0, 0.0]];
    });
    let mut f = flow(cc, 20, 10);
    // RTT 40 ms all along: MINRTT 40, Setpoint 60, always good.
    acks_every_10ms(&mut f, 10, 500, ms(40));
    assert_eq!(f.cc.alpha(), Some(1.5));
    // The ACK at 500 ms ends the first cycle: avg 40 < 50 → α = 1.625.
    f.at(t(ms(500))).ack(1, Some(ms(40)));
    assert_eq!(f.cc.alpha(), Some(1.625));
    assert_eq!(f.cc.setpoint(), Some(ms(65)));
    // At 1 s Target becomes 30: avg 40 > 30 → α −= 2·10/30 = 0.666 → 0.959 → 1.
    acks_every_10ms(&mut f, 510, 1000, ms(40));
    assert_eq!(f.cc.target(), Some(ms(50)));
    f.at(t(ms(1000))).ack(1, Some(ms(40)));
    assert_eq!(f.cc.target(), Some(ms(30)));
    assert_eq!(f.cc.alpha(), Some(1.0));
    // At 2 s Target 0 = 2 × MINRTT = 80 ms: avg 40 → α += 40/80 = 0.5 → 1.5.
    acks_every_10ms(&mut f, 1010, 2000, ms(40));
    f.at(t(ms(2000))).ack(1, Some(ms(40)));
    assert_eq!(f.cc.target(), Some(Dur::ZERO));
    assert_eq!(f.cc.alpha(), Some(1.5));
}

#[test]
fn tuner_skips_cycles_without_samples() {
    let cc = jsac(|c| {
        c.tuner = true;
        c.alpha = 1.5;
    });
    let mut f = flow(cc, 20, 10);
    f.at(t(ms(10))).ack(1, Some(ms(40)));
    // Nothing until 1.2 s; the ACK then ends the cycle that holds the 10-ms sample.
    f.at(t(ms(1200))).ack(1, Some(ms(40)));
    assert_eq!(f.cc.alpha(), Some(1.625));
    // The next cycle, ended at 1.7 s by an ACK without an RTT sample, holds the 1.2-s
    // sample: α = 1.75. The one after holds none: unchanged.
    f.at(t(ms(1700))).ack(1, None);
    assert_eq!(f.cc.alpha(), Some(1.75));
    f.at(t(ms(2300))).ack(1, None);
    assert_eq!(f.cc.alpha(), Some(1.75));
}

#[test]
fn linux_tuner_starts_from_its_alpha_while_the_kernel_runs_two() {
    let cc = jsac(|c| {
        c.tuner = true;
        c.alpha = 1.5;
        c.fidelity = Fidelity::Linux;
        c.base = Base::Newreno;
    });
    let mut f = flow(cc, 20, 10);
    acks_every_10ms(&mut f, 10, 500, us(40_700));
    assert_eq!(f.cc.alpha(), Some(2.0));
    assert_eq!(f.cc.setpoint(), Some(ms(80)));
    // avg 40.7 → 40 ms: 150 + ⌊⌊10·150/2⌋/40⌋ = 168.
    f.at(t(ms(500))).ack(1, Some(us(40_700)));
    assert_eq!(f.cc.alpha(), Some(1.68));
    // Setpoint ⌊40 · 168/100⌋ = 67 ms.
    assert_eq!(f.cc.setpoint(), Some(ms(67)));
}

#[test]
fn linux_tuner_resolves_target_zero_once() {
    let cc = jsac(|c| {
        c.tuner = true;
        c.alpha = 1.5;
        c.target_ms = 0.0;
        c.fidelity = Fidelity::Linux;
        c.base = Base::Newreno;
    });
    let mut f = flow(cc, 20, 10);
    // MINRTT 20.7 ms → 20 ms: Target = 40 ms. Samples alternate 20.7 and 40.7 ms:
    // mean 30.7 → 30 ms. α = 150 + ⌊⌊10·150/2⌋/30⌋ = 175.
    for k in 0..50 {
        let rtt = if k % 2 == 0 { us(20_700) } else { us(40_700) };
        f.at(t(ms(10 * k))).ack(1, Some(rtt));
    }
    f.at(t(ms(500))).ack(1, Some(us(20_700)));
    assert_eq!(f.cc.alpha(), Some(1.75));
    // MINRTT drops to 10 ms, but Target stays 40 (set once): mean ≈ 30 → 30 ms again:
    // 175 + ⌊⌊10·175/2⌋/30⌋ = 175 + 29 = 204.
    f.at(t(ms(510))).ack(1, Some(ms(10)));
    for k in 0..48 {
        let rtt = if k % 2 == 0 { us(20_700) } else { us(40_700) };
        f.at(t(ms(520 + 10 * k))).ack(1, Some(rtt));
    }
    f.at(t(ms(1000))).ack(1, Some(us(30_000)));
    assert_eq!(f.cc.min_rtt(), Some(ms(10)));
    assert_eq!(f.cc.alpha(), Some(2.04));
}

#[test]
fn linux_ifip_compares_whole_milliseconds_inclusively() {
    let cc = ifip(|c| {
        c.fidelity = Fidelity::Linux;
        c.base = Base::Newreno;
    });
    let mut f = flow(cc, 10, 5);
    // 100.9 ms floors to 100 ≤ Target 100: good, +⌊100/100⌋ = 1 in the counter.
    f.at(t(ms(1))).ack(1, Some(us(100_900)));
    assert_eq!((f.cc.phase(), f.sock.cwnd_cnt), ("good", 1));
    f.at(t(ms(2))).ack(1, Some(ms(101)));
    assert_eq!(f.cc.phase(), "waiting");
}

// ---------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------

#[test]
fn defaults_validate() {
    let c = C2tcpConfig::default();
    assert_eq!(c.validate(), Ok(()));
    assert_eq!(
        (c.target_ms, c.alpha, c.tuner, c.tuning_cycle_ms),
        (50.0, 1.5, true, 500.0)
    );
    assert_eq!((c.fidelity, c.base), (Fidelity::Paper, Base::Cubic));
    let i = C2tcpIfipConfig::default();
    assert_eq!(i.validate(), Ok(()));
    assert_eq!((i.target_ms, i.interval_ms), (100.0, 100.0));
    assert_eq!(C2tcp::new(c).name(), "c2tcp");
}

#[test]
fn validate_names_the_field() {
    let field = |c: C2tcpConfig| c.validate().unwrap_err().field;
    let base = C2tcpConfig::default;
    assert_eq!(
        field(C2tcpConfig {
            target_ms: -1.0,
            ..base()
        }),
        "target_ms"
    );
    assert_eq!(
        field(C2tcpConfig {
            alpha: 0.5,
            ..base()
        }),
        "alpha"
    );
    assert_eq!(
        field(C2tcpConfig {
            alpha: 11.0,
            ..base()
        }),
        "alpha"
    );
    assert_eq!(
        field(C2tcpConfig {
            tuning_cycle_ms: 0.0,
            ..base()
        }),
        "tuning_cycle_ms"
    );
    assert_eq!(
        field(C2tcpConfig {
            target_schedule: vec![[1.0, 50.0], [1.0, 60.0]],
            ..base()
        }),
        "target_schedule[1]"
    );
    assert_eq!(
        field(C2tcpConfig {
            target_schedule: vec![[1.0, f64::NAN]],
            ..base()
        }),
        "target_schedule[0]"
    );
    assert_eq!(
        field(C2tcpConfig {
            base: Base::Newreno,
            cubic: Some(crate::cubic::CubicConfig::default()),
            ..base()
        }),
        "cubic"
    );
    // Linux fidelity: whole ms and α in hundredths, as the kernel holds them.
    let linux = || C2tcpConfig {
        fidelity: Fidelity::Linux,
        ..base()
    };
    assert_eq!(
        field(C2tcpConfig {
            target_ms: 50.5,
            ..linux()
        }),
        "target_ms"
    );
    assert_eq!(
        field(C2tcpConfig {
            alpha: 1.505,
            ..linux()
        }),
        "alpha"
    );
    assert_eq!(
        C2tcpConfig {
            target_ms: 50.5,
            ..base()
        }
        .validate(),
        Ok(())
    );
    let e = C2tcpIfipConfig {
        interval_ms: 0.0,
        ..C2tcpIfipConfig::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "interval_ms");
    assert!(
        e.to_string()
            .starts_with("c2tcp-ifip.interval_ms: 0 ms is out of range"),
        "{e}"
    );
}

#[test]
fn config_deserializes_and_rejects_unknown_keys() {
    use serde::de::value::{Error, MapDeserializer};
    use serde::Deserialize;
    let parse = |pairs: Vec<(&str, &str)>| -> Result<C2tcpConfig, Error> {
        C2tcpConfig::deserialize(MapDeserializer::new(pairs.into_iter()))
    };
    let c = parse(vec![("fidelity", "linux"), ("base", "newreno")]).unwrap();
    assert_eq!((c.fidelity, c.base), (Fidelity::Linux, Base::Newreno));
    assert_eq!(c.target_ms, 50.0);
    let e = parse(vec![("fidelity", "kernel")]).unwrap_err().to_string();
    assert!(e.contains("unknown variant `kernel`"), "{e}");
    let e = parse(vec![("setpoint", "1")]).unwrap_err().to_string();
    assert!(e.contains("unknown field `setpoint`"), "{e}");
}
