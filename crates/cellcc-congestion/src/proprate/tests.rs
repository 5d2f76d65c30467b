//! Formula tests with worked numbers from the paper, and state-machine stories that drive
//! the controller ACK by ACK through a hand-made [`Sock`].
//!
//! The reference path of the stories: 1448-byte packets, base RTT 40 ms, timestamps in
//! 1 ms ticks, the receiver getting 2 packets per ms (ρ = 2 × 1448 B / 1 ms =
//! 2 896 000 B/s = 2000 packets/s, so ⌈ρ·RTT⌉ = 80 packets), and RD = 30 ticks when the
//! buffer is empty.

use super::*;
use crate::testing::{Driver, MSS};
use crate::Time;

// ρ below is 2 × MSS bytes per ms.
const _: () = assert!(MSS == 1448);
const RHO: u64 = 2_896_000;
const BASE_RD: u32 = 30;
/// Offset of the stories' clocks, ms.
const EPOCH_MS: u64 = 1000;

fn ms(v: u64) -> Dur {
    Dur::from_ms(v)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// ----- Eq. 3–8 -------------------------------------------------------------------------

/// PR(L), PR(M), PR(H) at RTT = 40 ms and L_max = 120 ms (the paper's setup, see the
/// `l_max_ms` default): L_max − RTT = 80 ms, so the crossover of Eq. 6 is t̄_buff = 40 ms.
#[test]
fn regimes_of_the_presets_at_rtt_40ms() {
    let (l_max, rtt) = (ms(120), ms(40));
    // Eq. 6: 20 < 80/2 → buffer emptied; 40 < 40 is false → buffer full (PR(M) is "at
    // the crossover"); 80 → buffer full.
    assert_eq!(regime(ms(20), l_max, rtt), Regime::BufferEmptied);
    assert_eq!(regime(ms(40), l_max, rtt), Regime::BufferFull);
    assert_eq!(regime(ms(80), l_max, rtt), Regime::BufferFull);
    // No room for buffer delay at all (L_max ≤ RTT): buffer full.
    assert_eq!(regime(ms(20), ms(40), rtt), Regime::BufferFull);
}

/// PR(L), Eq. 8 with T = 20 ms, RTT = 40 ms, L_max = 120 ms, by hand:
///
/// ```text
/// U     = (2·20/80)^(1/4) = 0.5^0.25                      = 0.840 896
/// k_f   = (2/U·20 + 40)/(20 + 40) = (47.568 28 + 40)/60  = 1.459 471
/// D_max = U³·80 = 0.594 604·80                            = 47.568 28 ms  (= 2T/U)
/// t_f   = D_max/(k_f − 1) = 47.568 28/0.459 471           = 103.528 3 ms
/// (1−U)/U                                                 = 0.189 207
/// k_d   = (40 − 0.189 207·1.459 471·103.528 3)
///       / (20/U + 40 − 0.189 207·103.528 3)
///       = (40 − 28.588 62)/(23.784 14 + 40 − 19.588 36)
///       = 11.411 38/44.195 78                             = 0.258 202
/// ```
#[test]
fn eq8_pr_l_at_rtt_40ms() {
    let e = eq8(ms(20), ms(40), ms(120));
    assert!(close(e.u, 0.840_896, 1e-6), "{e:?}");
    assert!(close(e.k_f, 1.459_471, 1e-6), "{e:?}");
    assert!(close(e.d_max_ms, 47.568_28, 1e-5), "{e:?}");
    assert!(close(e.t_f_ms, 103.528_3, 1e-4), "{e:?}");
    assert!(close(e.k_d, 0.258_202, 1e-6), "{e:?}");
    // Eq. 5: the waveform's mean is ½·U⁴·(L_max − RTT) = ½·0.5·80 = 20 ms = t̄_buff.
    assert!(close(0.5 * e.u.powi(4) * 80.0, 20.0, 1e-9));
    // The controller uses these unclamped (0.1 ≤ k_d ≤ 0.99, k_f ≥ 1.01).
    let g = Gains::new(Regime::BufferEmptied, ms(20), ms(40), ms(120), 0.1);
    assert!(close(g.k_f, e.k_f, 1e-12) && close(g.k_d, e.k_d, 1e-12));
    assert_eq!(g.d_max, Dur::from_ns(47_568_284));
}

/// PR(M) and PR(H), Eq. 7 with RTT = 40 ms, by hand:
///
/// ```text
/// PR(M), T = 40: k_f = (60 + 40)/(40 + 40) = 1.25      k_d = (20 + 40)/80 = 0.75
/// PR(H), T = 80: k_f = (120 + 40)/(80 + 40) = 4/3     k_d = (40 + 40)/120 = 2/3
/// ```
#[test]
fn eq7_pr_m_and_pr_h_at_rtt_40ms() {
    let (k_f, k_d) = eq7(ms(40), ms(40));
    assert!(close(k_f, 1.25, 1e-12) && close(k_d, 0.75, 1e-12));
    let (k_f, k_d) = eq7(ms(80), ms(40));
    assert!(close(k_f, 4.0 / 3.0, 1e-12) && close(k_d, 2.0 / 3.0, 1e-12));
    let g = Gains::new(Regime::BufferFull, ms(80), ms(40), ms(120), 0.1);
    assert_eq!((g.u, g.d_max), (1.0, ms(120)));
    // Eq. 8 at the crossover (T = 40: U = 1) is a different waveform — D_min = 0,
    // D_max = 2T: k_f = (80 + 40)/80 = 1.5, k_d = 40/80 = 0.5 — hence Eq. 6's switch.
    let e = eq8(ms(40), ms(40), ms(120));
    assert_eq!(e.u, 1.0);
    assert!(close(e.k_f, 1.5, 1e-12) && close(e.k_d, 0.5, 1e-12));
}

/// Eq. 7's gains produce Eq. 3's waveform when the observation lags by T + RTT (§3):
/// D_max = T + (k_f − 1)(T + RTT) = 3T/2 and D_min = T − (1 − k_d)(T + RTT) = T/2.
#[test]
fn eq7_gains_give_the_eq3_waveform() {
    for (t, rtt) in [(20.0, 20.0), (40.0, 40.0), (80.0, 40.0), (120.0, 20.0)] {
        let (k_f, k_d) = eq7(Dur::from_secs_f64(t / 1e3), Dur::from_secs_f64(rtt / 1e3));
        assert!(close(t + (k_f - 1.0) * (t + rtt), 1.5 * t, 1e-9));
        assert!(close(t - (1.0 - k_d) * (t + rtt), 0.5 * t, 1e-9));
    }
}

/// With the acceptance runs' RTT of 20 ms, PR(L)'s Eq. 8 k_d is negative:
/// U = (40/100)^(1/4) = 0.795 271, k_f = (50.297 34 + 20)/40 = 1.757 433,
/// t_f = 50.297 34/0.757 433 = 66.405 0, (1−U)/U = 0.257 435,
/// k_d = (20 − 0.257 435·1.757 433·66.405 0)/(25.148 67 + 20 − 0.257 435·66.405 0)
///     = (20 − 30.042 5)/(45.148 67 − 17.094 9) = −0.357 99: clamped to k_d_min.
#[test]
fn eq8_k_d_is_clamped_when_rtt_is_short() {
    let e = eq8(ms(20), ms(20), ms(120));
    assert!(close(e.k_d, -0.357_993, 1e-6), "{e:?}");
    let g = Gains::new(Regime::BufferEmptied, ms(20), ms(20), ms(120), 0.1);
    assert_eq!(g.k_d, 0.1);
    assert!(close(g.k_f, 1.757_433, 1e-6));
    // Degenerate T = RTT = 0 gives NaN gains; the clamps still give usable ones.
    let g = Gains::new(Regime::BufferFull, Dur::ZERO, Dur::ZERO, ms(120), 0.1);
    assert_eq!((g.k_f, g.k_d), (params::K_F_MIN, 0.1));
}

// ----- the controller, ACK by ACK ------------------------------------------------------

/// A connection driven by hand: `send` puts packets in flight, [`ack`] delivers them with
/// chosen receiver and sender timestamps.
type Conn = Driver<PropRate>;

fn conn(config: PropRateConfig) -> Conn {
    Driver::started(PropRate::new(config), |s| {
        s.min_rtt = ms(40);
        s.srtt = ms(40);
    })
}

/// PR(H) (t̄_buff = 80 ms: buffer full, k_f = 4/3, k_d = 2/3, D_max = 120 ms).
fn pr_h(nfl: bool) -> Conn {
    conn(PropRateConfig {
        t_buff_ms: 80.0,
        nfl,
        ..PropRateConfig::default()
    })
}

/// An ACK at `now_ms` for `n` packets, sent by the receiver at tick `rx`, for segments
/// sent at tick `tx = rx − BASE_RD − t_buff_ms` (the echoed TSecr, and the RTT sample
/// `now − tx`). Story times are offset by [`EPOCH_MS`] on both clocks, so that early
/// segments with large delays were not sent before time zero.
fn ack(c: &mut Conn, now_ms: u64, n: u32, rx: u32, t_buff_ms: u32) {
    let (now_ms, rx) = (now_ms + EPOCH_MS, rx + EPOCH_MS as u32);
    let tx = rx - BASE_RD - t_buff_ms;
    c.at(Time::from_ms(now_ms));
    c.sock.rcv_tsval = rx;
    c.sock.rcv_tsecr = tx;
    c.ack_with(&RateSample {
        acked_sacked: n,
        delivered: u64::from(n),
        interval: Some(ms(40)),
        rtt: Some(ms(now_ms - u64::from(tx))),
        ..RateSample::default()
    });
}

/// ACKs of 2 packets, one per ms from `now_ms` (receiver tick `now_ms − 10`), each
/// reporting `t_buff_ms`: ρ samples stay at exactly [`RHO`].
fn ack_pairs(c: &mut Conn, now_ms: u64, pairs: u32, t_buff_ms: u32) -> u64 {
    for i in 0..u64::from(pairs) {
        ack(c, now_ms + i, 2, (now_ms + i - 10) as u32, t_buff_ms);
    }
    now_ms + u64::from(pairs)
}

/// Slow Start done: a first burst of 10 in one tick (no estimate), a second of 20 at 2
/// packets per ms (ρ = 2 896 000 B/s). Returns the time reached, in Fill.
fn through_slow_start(c: &mut Conn) -> u64 {
    c.send(10);
    for _ in 0..5 {
        ack(c, 40, 2, 30, 0);
    }
    c.send(20);
    let t = ack_pairs(c, 80, 10, 0);
    assert_eq!(c.cc.phase(), "buffer_fill");
    t
}

#[test]
fn slow_start_doubles_the_burst_until_timestamps_give_a_rate() {
    let mut c = pr_h(true);
    assert_eq!(c.cc.phase(), "slow_start");
    assert_eq!(c.sock.pacing_status, PacingStatus::Needed);
    // The burst goes out at line rate: window = the 10 burst packets.
    assert_eq!((c.sock.cwnd, c.sock.pacing_rate), (10, u64::MAX));
    c.send(10);
    assert_eq!(c.sock.cwnd, 10);
    // All 10 arrive in receiver tick 30 (5 ACKs): no estimate, the burst doubles.
    for i in 0..5 {
        assert!(
            matches!(c.cc.state(), State::SlowStart(b) if b.len == 10),
            "ack {i}"
        );
        // While the burst is acknowledged nothing new may be sent.
        assert_eq!(c.sock.cwnd, c.sock.packets_in_flight().max(1));
        ack(&mut c, 40, 2, 30, 0);
    }
    assert!(matches!(c.cc.state(), State::SlowStart(b) if b.len == 20));
    assert_eq!(c.sock.cwnd, 20);
    assert_eq!(c.cc.rho(), None);
    // 20 packets over ticks 70..=79: 18 packets after the first tick in 9 ms =
    // 18 × 1448 B / 0.009 s = 2 896 000 B/s.
    c.send(20);
    ack_pairs(&mut c, 80, 10, 0);
    assert_eq!(c.cc.phase(), "buffer_fill");
    assert_eq!(c.cc.rho(), Some(RHO));
    // RD_min was set by the first burst: t_buff of the last ACK (RD = 30) is 0.
    assert_eq!(c.cc.t_buff(), Some(Dur::ZERO));
}

#[test]
fn fill_and_drain_pace_at_k_f_and_k_d_times_rho_and_switch_at_t() {
    let mut c = pr_h(false);
    let mut t = through_slow_start(&mut c);
    // Fill: σ_f = 4/3 × 2 896 000 = 3 861 333 B/s. Window cap = ρ·(RTT + D_max) =
    // 2 896 000 × 0.160 / 1448 = 320 packets.
    assert_eq!(c.sock.pacing_rate, 3_861_333);
    assert_eq!(c.sock.cwnd, 320);
    c.send(100);
    t = ack_pairs(&mut c, t, 5, 79);
    assert_eq!(c.cc.phase(), "buffer_fill");
    assert_eq!(c.cc.rho(), Some(RHO));
    // t_buff = 80 ms = T: Drain at σ_d = 2/3 × 2 896 000 = 1 930 666 B/s.
    t = ack_pairs(&mut c, t, 1, 80);
    assert_eq!(c.cc.phase(), "buffer_drain");
    assert_eq!(c.sock.pacing_rate, 1_930_666);
    assert_eq!(c.sock.cwnd, 320);
    // Still above T: stay; below: Fill again.
    t = ack_pairs(&mut c, t, 3, 120);
    assert_eq!(c.cc.phase(), "buffer_drain");
    ack_pairs(&mut c, t, 1, 79);
    assert_eq!(c.cc.phase(), "buffer_fill");
    assert_eq!(c.sock.pacing_rate, 3_861_333);
    assert_eq!(c.cc.threshold(), ms(80), "no NFL: T stays t̄_buff");
    assert_eq!(c.cc.transitions(), 3);
    // What `info` reports is the waveform in use: Eq. 7's 4/3 and 2/3, T, ρ and D_max.
    let info: std::collections::HashMap<_, _> = c.cc.info().into_iter().collect();
    assert!(close(info["k_f"], 4.0 / 3.0, 1e-9) && close(info["k_d"], 2.0 / 3.0, 1e-9));
    assert_eq!(
        (info["buffer_full"], info["u"], info["threshold_ms"]),
        (1.0, 1.0, 80.0)
    );
    assert!(close(info["rho_mbps"], RHO as f64 * 8.0 / 1e6, 1e-9));
    assert_eq!((info["d_max_ms"], info["transitions"]), (120.0, 3.0));
}

/// Drain → Monitor after ⌈ρ·RTT⌉ = 80 packets; the Monitor burst, then σ_m; back to
/// Drain when the burst saw a lower rate, to Fill (with the new ρ) when it saw a higher.
#[test]
fn monitor_follows_rtt_rho_packets_of_drain_and_measures_afresh() {
    let mut c = pr_h(false);
    let mut t = through_slow_start(&mut c);
    c.send(40);
    t = ack_pairs(&mut c, t, 1, 90);
    assert_eq!(c.cc.phase(), "buffer_drain");
    // 79 packets sent in Drain (ACKs keep t_buff above T): still Drain.
    c.send(79);
    t = ack_pairs(&mut c, t, 1, 100);
    assert_eq!(c.cc.phase(), "buffer_drain");
    // The 80th: Monitor. A back-to-back burst of 10: line rate, window in_flight + 10.
    c.send(1);
    t = ack_pairs(&mut c, t, 1, 100);
    assert_eq!(c.cc.phase(), "monitor");
    assert_eq!(c.cc.monitors(), 1);
    assert_eq!(c.sock.pacing_rate, u64::MAX);
    let in_flight = c.sock.packets_in_flight();
    assert_eq!(c.sock.cwnd, in_flight + 10);
    c.send(10);
    // Burst out: σ_m = σ_d/2 = 2 896 000 × 2/3 / 2 = 965 333 B/s, the usual cap.
    t = ack_pairs(&mut c, t, 1, 100);
    assert_eq!(c.cc.phase(), "monitor");
    assert_eq!(c.sock.pacing_rate, 965_333);
    assert_eq!(c.sock.cwnd, 320);
    // Deliver what was in flight before the burst (2 per ms, as before) ...
    let before_burst = c.sock.packets_in_flight() - 10;
    t = ack_pairs(&mut c, t, before_burst / 2, 100);
    assert_eq!(c.cc.phase(), "monitor");
    // ... then the burst at 1 packet per ms: 1448 B/ms < ρ → back to Drain.
    for i in 0..10 {
        ack(&mut c, t + i, 1, (t + i - 10) as u32, 100);
    }
    assert_eq!(c.cc.phase(), "buffer_drain");
    // ρ kept running through Monitor and saw the slower burst too; Drain paces at k_d·ρ.
    let rho = c.cc.rho().unwrap();
    assert!(rho < RHO, "{rho}");
    assert_eq!(c.sock.pacing_rate, (rho as f64 * 2.0 / 3.0) as u64);
    t += 10;

    // Again to Monitor (80 more packets in Drain), this time the burst arrives at
    // 5 packets per ms: 7 240 000 B/s ≥ ρ → Fill, the burst's rate folded into ρ as one
    // EWMA sample (weight 1/8), not replacing it.
    c.send(80);
    t = ack_pairs(&mut c, t, 1, 100);
    assert_eq!(c.cc.phase(), "monitor");
    c.send(10);
    let before_burst = c.sock.packets_in_flight() - 10;
    t = ack_pairs(&mut c, t, before_burst / 2, 100);
    ack(&mut c, t, 5, (t - 10) as u32, 100);
    assert_eq!(c.cc.phase(), "monitor", "one timestamp gives no rate");
    let before = c.cc.rho().unwrap() as f64;
    ack(&mut c, t + 1, 5, (t - 9) as u32, 100);
    assert_eq!(c.cc.phase(), "buffer_fill");
    let after = c.cc.rho().unwrap() as f64;
    // The same ACK also closed a window for the EWMA, so allow that sample's share.
    let folded = before + (7_240_000.0 - before) / 8.0;
    assert!(
        (after - folded).abs() < 0.02 * folded,
        "{before} -> {after}"
    );
    assert_eq!(c.cc.monitors(), 2);
}

#[test]
fn rto_returns_to_slow_start_from_any_state() {
    let mut c = pr_h(true);
    let t = through_slow_start(&mut c);
    c.send(30);
    ack_pairs(&mut c, t, 1, 90);
    assert_eq!(c.cc.phase(), "buffer_drain");
    // The stack's RTO: everything outstanding is lost, cwnd = in_flight + 1, Loss.
    c.rto();
    assert_eq!(c.cc.phase(), "slow_start");
    assert!(matches!(c.cc.state(), State::SlowStart(b) if b.len == 10));
    assert_eq!(c.sock.pacing_rate, u64::MAX);
    // ρ is kept until the new burst measures it; ssthresh and undo leave things alone.
    assert_eq!(c.cc.rho(), Some(RHO));
    assert_eq!(c.cc.ssthresh(&c.sock), c.sock.ssthresh);
    assert_eq!(c.cc.undo_cwnd(&c.sock), c.sock.cwnd);
}

/// Negative feedback at controller level (PR(H), T = t̄_buff = 80 ms at first). A window
/// closes once ⌈ρ·RTT⌉ = 80 packets were delivered after the ACK that opened it: the
/// first window is that ACK plus 40 ACKs of 2, the next ones 40 ACKs.
#[test]
fn nfl_lowers_t_in_fill_after_too_much_delay_and_not_without_the_loop() {
    for nfl in [true, false] {
        let mut c = pr_h(nfl);
        let mut t = through_slow_start(&mut c);
        c.send(200);
        // Window 1 in Drain, every sample 120 ms: t_actual = 120 ms (first window).
        // Drain only ever raises T, and only when t_actual < t̄: T stays 80.
        t = ack_pairs(&mut c, t, 1, 120);
        assert_eq!(c.cc.phase(), "buffer_drain");
        t = ack_pairs(&mut c, t, 39, 120);
        assert_eq!(c.cc.t_actual(), None);
        t = ack_pairs(&mut c, t, 1, 120);
        assert_eq!(c.cc.t_actual(), Some(ms(120)));
        assert_eq!(c.cc.threshold(), ms(80));
        // Window 2 in Fill, every sample 50 ms: t_actual = 120 − 15 + 6.25 = 111.25 ms.
        // In Fill with t_actual > t̄: T = 80 − ln(31.25) = 80 − 3.442 019 = 76.557 981 ms.
        t = ack_pairs(&mut c, t, 1, 50);
        assert_eq!(c.cc.phase(), "buffer_fill");
        c.send(100);
        t = ack_pairs(&mut c, t, 38, 50);
        assert_eq!(c.cc.t_actual(), Some(ms(120)));
        assert_eq!(c.cc.threshold(), ms(80));
        ack_pairs(&mut c, t, 1, 50);
        assert_eq!(c.cc.t_actual(), Some(Dur::from_us(111_250)));
        let expect = if nfl {
            Dur::from_ns(76_557_981)
        } else {
            ms(80)
        };
        assert_eq!(c.cc.threshold(), expect, "nfl = {nfl}");
    }
}

/// RD's send time is that of the newest (S)ACKed segment when there is an RTT sample:
/// the echoed TSval is stale after a loss (§4.1), and with delayed ACKs it is the older
/// segment of the pair, sent one pacing interval earlier.
#[test]
fn rd_uses_the_send_time_of_the_newest_acked_packet() {
    let mut c = pr_h(true);
    let t = through_slow_start(&mut c);
    c.send(20);
    // A delayed ACK of a pair paced 50 ms apart (Drain at a low rate) echoes the first
    // segment, sent at tick rx − 30 − 50; the second, which triggered the ACK, was sent
    // 40 ms ago: RD = 30 = RD_min, t_buff = 0 and Fill is kept.
    let t = t + EPOCH_MS;
    let rs = RateSample {
        acked_sacked: 2,
        rtt: Some(ms(40)),
        ..RateSample::default()
    };
    c.at(Time::from_ms(t));
    c.sock.rcv_tsval = (t - 10) as u32;
    c.sock.rcv_tsecr = (t - 10 - 30 - 50) as u32;
    c.ack_with(&rs);
    assert_eq!(c.cc.t_buff(), Some(Dur::ZERO));
    // Without an RTT sample (a retransmission was acked), an in-order ACK falls back to
    // TSecr: t_buff = 50 ms (< T = 80: still Fill).
    c.ack_with(&RateSample::default());
    assert_eq!(c.cc.t_buff(), Some(ms(50)));
    assert_eq!(c.cc.phase(), "buffer_fill");
    // A SACK-carrying ACK echoes an old TSval (tick rx − 30 − 500: 500 ms "delay"), but
    // its newest SACKed packet was sent 40 ms ago (rs.rtt): RD = rx − (now − 40) =
    // (now − 10) − (now − 40) = 30 = RD_min → t_buff = 0, and Fill is kept.
    c.sock.rcv_tsval = (t - 10) as u32;
    c.sock.rcv_tsecr = (t - 10 - 30 - 500) as u32;
    c.sack_with(&rs);
    assert_eq!(c.cc.t_buff(), Some(Dur::ZERO));
    assert_eq!(c.cc.phase(), "buffer_fill");
    // Without an RTT sample, such an ACK gives no t_buff sample at all.
    let before = c.cc.t_buff();
    c.sock.rcv_tsecr = 1;
    c.sack_with(&RateSample::default());
    assert_eq!(c.cc.t_buff(), before);
    assert_eq!(c.cc.phase(), "buffer_fill");
}

#[test]
fn window_cap_and_rates_have_floors() {
    let mut c = pr_h(true);
    through_slow_start(&mut c);
    // A collapsed estimate is read as 10 packets/s = 14 480 B/s: σ_f = 19 306 B/s, and
    // the cap 14 480 × 0.16 / 1448 = 1.6 → 4 packets (CWND_MIN).
    c.cc.rho.set(1);
    c.cc.set_pacing_rate(&mut c.sock);
    c.cc.set_cwnd(&mut c.sock);
    assert_eq!(c.sock.pacing_rate, 19_306);
    assert_eq!(c.sock.cwnd, CWND_MIN);
}
