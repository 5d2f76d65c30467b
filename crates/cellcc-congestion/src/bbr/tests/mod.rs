//! Scenario tests: BBR driving the deterministic fake network in [`pipe`].
//!
//! The reference path is 10 Mbit/s with a 40 ms RTT and 1448-byte packets:
//!
//! ```text
//! bw  = 10e6 / 8 / 1448 = 863.26 packets/s = 0.000 863 26 packets/µs
//!     × 2^24 = 14 483.1  -> the filter settles at exactly 14 483
//! BDP = 863.26 × 0.040 = 34.53 packets -> bdp(gain 1) = 35, bdp(gain 2) = 70
//! TSO goal = 2 segments (pacing rate between 150 kB/s and ~3 MB/s), budget 3 × 2 = 6
//! ```

mod pipe;

use pipe::{Path, Pipe, Policer, Step};
use proptest::prelude::*;

use super::{Bbr, BbrConfig, Mode, BBR_UNIT};
use crate::{Bandwidth, CaEvent, CaState, CongestionControl, Dur, RateSample, Sock, Time};

/// The link rate in BBR units (see the module header).
const LINK_BW: u32 = 14_483;

fn ten_mbps_run(secs: u64, seed: u64) -> Pipe {
    let mut p = Pipe::new(
        Path::ten_mbps_40ms(),
        BbrConfig {
            cycle_seed: seed,
            ..BbrConfig::default()
        },
    );
    p.run_until(Time::from_secs(secs));
    p
}

/// `bbr_rate_bytes_per_sec` with the default 1 % margin, for checks.
fn pacing(bw: u32, gain: u32) -> u64 {
    Bbr::default().rate_bytes_per_sec(pipe::MSS, u64::from(bw), gain)
}

/// `ceil(bw × min_rtt × gain)` + 3 × 2 TSO segments, rounded up to even.
fn target(bw: u32, min_rtt_us: u32, gain: u32, extra: u32) -> u32 {
    let bdp =
        ((u64::from(bw) * u64::from(min_rtt_us) * u64::from(gain)) >> 8).div_ceil(1 << 24) as u32;
    (bdp + extra + 6).next_multiple_of(2)
}

fn is_probe_bw(s: &Step) -> bool {
    matches!(s.mode, Mode::ProbeBw { .. })
}

fn cycle_idx(s: &Step) -> Option<usize> {
    match s.mode {
        Mode::ProbeBw { cycle_idx, .. } => Some(cycle_idx),
        _ => None,
    }
}

/// One line per round: the snapshot below reads as the story of the first second.
fn round_summary(log: &[Step], until: Time) -> String {
    let mut out = String::new();
    for s in log.iter().filter(|s| s.round_start && s.t <= until) {
        let phase = match s.mode {
            Mode::ProbeBw { cycle_idx, .. } => format!("probe_bw[{cycle_idx}]"),
            m => m.name().to_string(),
        };
        out += &format!(
            "r{:<3} {:>7}us {:<12} cwnd {:>3} inflight {:>3} pacing {:>8} gain {:>3} bw {:>5} rtt {:>6}us\n",
            s.round,
            s.t.as_us(),
            phase,
            s.cwnd,
            s.in_flight,
            s.pacing_rate,
            s.pacing_gain,
            s.max_bw,
            s.rtt.as_us()
        );
    }
    out
}

#[test]
fn first_second_on_10_mbps_40_ms() {
    let p = ten_mbps_run(1, 0);
    p.maybe_write_trace("bbr_first_second_10mbps_40ms");
    let first = p.log.iter().find(|s| is_probe_bw(s)).unwrap();
    assert_eq!((first.t.as_ms(), cycle_idx(first)), (792, Some(2)));
    // Rounds 1-4: STARTUP doubles the delivery rate each round (419 -> 4194 -> 8388 ->
    // 12 952); round 5 measures the link (14 483) and rounds 5-7 see no 25 % growth
    // over 12 952, so round 7 enters DRAIN (pacing 88/256 of bw), which takes one
    // round; PROBE_BW starts at 0.79 s in phase 2 for seed 0 (first draw 6: 7 - 6 = 1,
    // advanced to 2) and then cycles, phase 0 pacing at 5/4 and phase 1 at 3/4.
    let expect = "\
r1     40000us startup      cwnd  11 inflight   9 pacing  1034467 gain 739 bw   419 rtt  40000us
r2     80000us startup      cwnd  21 inflight  19 pacing  1034467 gain 739 bw  4194 rtt  40000us
r3    120000us startup      cwnd  41 inflight  30 pacing  2068934 gain 739 bw  8388 rtt  40000us
r4    160153us startup      cwnd  72 inflight  59 pacing  3194663 gain 739 bw 12952 rtt  40000us
r5    229657us startup      cwnd 106 inflight 105 pacing  3572291 gain 739 bw 14483 rtt  69078us
r6    440486us startup      cwnd 106 inflight 105 pacing  3572291 gain 739 bw 14483 rtt 120473us
r7    681433us drain        cwnd 107 inflight 105 pacing   425387 gain  88 bw 14483 rtt 120473us
r8    848243us probe_bw[3]  cwnd  86 inflight  39 pacing  1237491 gain 256 bw 14483 rtt  46230us
r9    894579us probe_bw[4]  cwnd  86 inflight  39 pacing  1237491 gain 256 bw 14483 rtt  45762us
r10   940915us probe_bw[5]  cwnd  78 inflight  38 pacing  1237491 gain 256 bw 14483 rtt  45293us
r11   986092us probe_bw[6]  cwnd  78 inflight  38 pacing  1237491 gain 256 bw 14483 rtt  44837us
";
    assert_eq!(round_summary(&p.log, Time::from_secs(1)), expect);
}

#[test]
fn startup_paces_at_high_gain_times_the_bandwidth_estimate() {
    let p = ten_mbps_run(1, 0);
    // The first ACK carries the first RTT (40 ms): the initial rate becomes
    // 739/256 × 10 packets / 40 ms = 1 034 467 B/s. After that, each ACK paces at
    // 739/256 × 0.99 × max_bw, never lower than before.
    let mut expected = 1_034_467;
    for s in p.log.iter().take_while(|s| s.mode == Mode::Startup) {
        assert_eq!(s.pacing_gain, 739);
        expected = expected.max(pacing(s.max_bw, 739));
        assert_eq!(s.pacing_rate, expected, "at {}", s.t);
    }
    // At the link rate: 14 483 × 1448 × 739 >> 8, × 990 000 >> 24 = 3 572 291 B/s,
    // i.e. 2.887 × 0.99 × 1.25 MB/s (2.885 × 1.2375e6 = 3 570 188 with the exact gain).
    assert_eq!(pacing(LINK_BW, 739), 3_572_291);
    let last = p.log.iter().rfind(|s| s.mode == Mode::Startup).unwrap();
    assert_eq!((last.max_bw, last.pacing_rate), (LINK_BW, 3_572_291));
}

#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let p = ten_mbps_run(1, 0);
    let starts: Vec<&Step> = p.log.iter().filter(|s| s.round_start).collect();
    let exit = starts.iter().position(|s| s.mode != Mode::Startup).unwrap();
    let exit_step = starts[exit];
    assert_eq!(exit_step.mode, Mode::Drain);
    assert!(exit_step.full_bw_reached);
    // The three round starts that counted: full_bw stayed 12 952 (round 4) and the max
    // (14 483) stayed under 12 952 × 320 / 256 = 16 190.
    for (k, s) in starts[exit - 2..=exit].iter().enumerate() {
        assert_eq!(s.full_bw_cnt as usize, k + 1);
        assert_eq!(s.full_bw, 12_952);
        assert!(u64::from(s.max_bw) < u64::from(s.full_bw) * 320 / 256);
    }
    assert_eq!(exit_step.round, 7);
    // Entering DRAIN reports the BDP target through ssthresh: 35 + 6 = 41 -> 42.
    assert_eq!(exit_step.ssthresh, 42);
    // No ACK between round starts changes the decision.
    let first_drain = p.log.iter().position(|s| s.mode == Mode::Drain).unwrap();
    assert!(p.log[first_drain].round_start);
}

#[test]
fn drain_lasts_until_inflight_fits_the_bdp() {
    let p = ten_mbps_run(2, 0);
    let drain: Vec<&Step> = p.log.iter().filter(|s| s.mode == Mode::Drain).collect();
    assert!(!drain.is_empty());
    // DRAIN paces at 88/256 of the estimate: 14 483 -> 425 387 B/s.
    assert!(drain.iter().all(|s| s.pacing_rate == pacing(LINK_BW, 88)));
    // Every ACK in DRAIN saw more in flight than the unit-gain target 42 ...
    let bdp_target = target(LINK_BW, 40_000, BBR_UNIT, 0);
    assert_eq!(bdp_target, 42);
    assert!(drain.iter().skip(1).all(|s| s.in_flight > bdp_target));
    // ... and the first PROBE_BW ACK was the first with at most 42.
    let first_bw = p.log.iter().find(|s| is_probe_bw(s)).unwrap();
    assert!(first_bw.in_flight <= bdp_target);
    assert!(first_bw.t > drain.last().unwrap().t);
}

/// Phases of the gain cycle seen in the log before PROBE_RTT, as
/// (cycle_idx, start µs, index in the log of the ACK that started it).
fn phases(log: &[Step], until: Time) -> Vec<(usize, u64, usize)> {
    let mut out: Vec<(usize, u64, usize)> = Vec::new();
    for (i, s) in log.iter().enumerate().filter(|(_, s)| s.t < until) {
        if let Mode::ProbeBw {
            cycle_idx,
            cycle_mstamp_us,
        } = s.mode
        {
            if out
                .last()
                .is_none_or(|&(_, start, _)| start != cycle_mstamp_us)
            {
                out.push((cycle_idx, cycle_mstamp_us, i));
            }
        }
    }
    out
}

#[test]
fn probe_bw_cycles_through_eight_gains_of_about_one_min_rtt() {
    let p = ten_mbps_run(10, 0);
    let ph = phases(&p.log, Time::from_secs(10));
    assert!(ph.len() > 150);
    let gains = [320, 192, 256, 256, 256, 256, 256, 256];
    for w in ph.windows(2) {
        let ((idx, start, _), (next_idx, next_start, ended_at)) = (w[0], w[1]);
        assert_eq!(next_idx, (idx + 1) % 8, "phases advance one by one");
        let len_us = next_start - start;
        let ending = &p.log[ended_at];
        if idx == 1 {
            // 3/4 ends after a min_rtt, or as soon as inflight is down to the BDP.
            assert!(len_us > 40_000 || ending.prior_in_flight <= 42, "{w:?}");
        } else {
            // 5/4 and 1.0 last longer than min_rtt (40 ms) by delivered_mstamp.
            assert!(len_us > 40_000, "phase {idx} lasted {len_us} us");
        }
        // The gain of a phase is applied from the ACK that starts it.
        assert_eq!(ending.pacing_gain, gains[next_idx]);
        assert_eq!(ending.pacing_rate, pacing(ending.bw, gains[next_idx]));
    }
    // The 3/4 phase usually ends early here: the probe's queue drains in < 40 ms.
    assert!(ph
        .windows(2)
        .any(|w| w[0].0 == 1 && w[1].1 - w[0].1 <= 40_000));
}

#[test]
fn probe_bw_never_starts_in_the_drain_phase() {
    let mut first_phases = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let p = ten_mbps_run(1, seed);
        let first = p
            .log
            .iter()
            .find_map(cycle_idx)
            .expect("PROBE_BW within 1 s");
        assert_ne!(first, 1, "seed {seed} started PROBE_BW in the 3/4 phase");
        first_phases.insert(first);
    }
    // Seven possible starts {0, 2..7}; 40 seeds see all of them.
    assert_eq!(
        first_phases.into_iter().collect::<Vec<_>>(),
        vec![0, 2, 3, 4, 5, 6, 7]
    );
}

#[test]
fn steady_state_cwnd_is_twice_the_bdp_plus_aggregation_and_tso_budget() {
    let p = ten_mbps_run(10, 0);
    let steady: Vec<(usize, &Step)> = p
        .log
        .iter()
        .enumerate()
        .filter(|(_, s)| s.t >= Time::from_secs(3) && s.t < Time::from_secs(10) && is_probe_bw(s))
        .collect();
    for &(i, s) in &steady {
        // cwnd = min(cwnd + acked, target), target = bdp(2) + extra_acked + 6, even,
        // + 2 in phase 0.
        let probe = if cycle_idx(s) == Some(0) { 2 } else { 0 };
        let t = target(s.bw, s.min_rtt_us, 2 * BBR_UNIT, s.extra_acked) + probe;
        assert_eq!(s.cwnd, (p.log[i - 1].cwnd + 1).min(t), "at {}", s.t);
    }
    // In numbers: bw 14 483, min_rtt 40 ms, extra_acked 2 (ACK-spacing jitter):
    // 2 × 34.53 -> 70, + 2 + 6 = 78 packets; 80 while probing at 5/4.
    let s = steady
        .iter()
        .find(|(_, s)| cycle_idx(s) == Some(3))
        .unwrap()
        .1;
    assert_eq!(
        (s.bw, s.min_rtt_us, s.extra_acked, s.cwnd),
        (LINK_BW, 40_000, 2, 78)
    );
    assert!(steady
        .iter()
        .all(|(_, s)| s.cwnd == 78 || (cycle_idx(s) == Some(0) && s.cwnd <= 80)));
    // And the link is used: ≥ 95 % of 10 Mbit/s over the last 5 s before PROBE_RTT.
    let delivered = steady
        .iter()
        .filter(|(_, s)| s.t >= Time::from_secs(5))
        .count() as u64;
    assert!(
        delivered * 1448 * 8 / 5 > 9_500_000,
        "{delivered} packets in 5 s"
    );
}

#[test]
fn probe_rtt_after_10_s_holds_4_packets_for_200_ms_and_a_round() {
    let p = ten_mbps_run(12, 0);
    let enter = p
        .log
        .iter()
        .position(|s| matches!(s.mode, Mode::ProbeRtt { .. }))
        .unwrap();
    let before = &p.log[enter - 1];
    // min_rtt was last lowered by the very first ACK (40 ms at 40 ms): jiffy 40. The
    // window expires when jiffies > 40 + 10 × 1000, i.e. at the first ACK after 10.040 s.
    assert_eq!(before.min_rtt_stamp, 40);
    assert!(before.t <= Time::from_ms(10_041) && p.log[enter].t >= Time::from_ms(10_041));
    let cwnd_before = before.cwnd;
    assert_eq!(cwnd_before, 78);

    let exit = enter
        + p.log[enter..]
            .iter()
            .position(|s| !matches!(s.mode, Mode::ProbeRtt { .. }))
            .unwrap();
    let probe = &p.log[enter..exit];
    assert!(probe.iter().all(|s| s.cwnd <= 4), "cwnd is capped at 4");
    assert!(
        probe.iter().all(|s| s.app_limited != 0),
        "samples are marked app-limited"
    );

    // The 200 ms start when inflight first reaches 4 (done_stamp set on that ACK) ...
    let floor = probe
        .iter()
        .find(|s| {
            matches!(
                s.mode,
                Mode::ProbeRtt {
                    done_stamp: Some(_),
                    ..
                }
            )
        })
        .unwrap();
    let Mode::ProbeRtt {
        done_stamp: Some(done),
        ..
    } = floor.mode
    else {
        unreachable!()
    };
    assert_eq!(done, floor.t.as_ms() + 200);
    // ... and PROBE_RTT ends on the first ACK after jiffy `done` once a round passed.
    let out = &p.log[exit];
    assert!(out.t.as_ms() > done && p.log[exit - 1].t.as_ms() <= done);
    assert!(out.round > floor.round);
    assert!(out.t - floor.t >= Dur::from_ms(200));
    // Back to PROBE_BW (the pipe was full) with cwnd restored and min_rtt re-measured.
    assert!(is_probe_bw(out));
    assert_eq!(out.cwnd, cwnd_before);
    assert_eq!(out.min_rtt_us, 40_000);
    assert_eq!(out.min_rtt_stamp, out.t.as_ms());
    // About 1/40 of the time is spent there: no second PROBE_RTT before 20 s.
    assert!(out.t - p.log[enter].t < Dur::from_ms(300));
}

#[test]
fn full_bandwidth_reached_persists_through_probe_rtt() {
    let p = ten_mbps_run(12, 0);
    let reached = p.log.iter().position(|s| s.full_bw_reached).unwrap();
    assert!(p.log[reached..].iter().all(|s| s.full_bw_reached));
    assert!(p.log[reached..].iter().all(|s| s.mode != Mode::Startup));
}

#[test]
fn a_policer_engages_the_long_term_bandwidth() {
    // 10 Mbit/s link behind a 2 Mbit/s token bucket of 30 kB: after the bucket empties,
    // every round that sends faster than 2 Mbit/s loses ~20 % or more of its packets.
    // 2 Mbit/s = 172.65 packets/s = 2896.6 in BBR units.
    let path = Path {
        policer: Some(Policer {
            rate: Bandwidth::from_bps(2_000_000),
            bucket_bytes: 30_000,
        }),
        ..Path::ten_mbps_40ms()
    };
    let mut p = Pipe::new(path, BbrConfig::default());
    p.run_until(Time::from_secs(6));
    p.maybe_write_trace("bbr_policer_2mbps");

    let on = p
        .log
        .iter()
        .position(|s| s.lt_use_bw)
        .expect("lt_bw engages");
    assert!(p.log[on].t < Time::from_secs(1));
    let off = on + p.log[on..].iter().position(|s| !s.lt_use_bw).unwrap();
    let engaged = &p.log[on..off];
    // While policed: bw = lt_bw within 2 % of the token rate, pacing gain 1.0 (no
    // probing), and it lasts 48 rounds of PROBE_BW.
    for s in engaged {
        assert!(s.bw.abs_diff(2897) * 50 <= 2897, "lt_bw {}", s.bw);
        assert_eq!(s.pacing_gain, BBR_UNIT);
    }
    assert_eq!(p.log[off].round - p.log[on].round, 48);
    // Throughput matches the policer: 1.9-2.1 Mbit/s over the last 4 s.
    let goodput = p.goodput_bps(Dur::from_secs(4));
    assert!((1_900_000..2_100_000).contains(&goodput), "{goodput} bit/s");
}

/// Feed one valid rate sample that starts a new round and measures `bw`.
fn sample_round(bbr: &mut Bbr, sock: &mut Sock, bw: u32, app_limited: bool) {
    sock.delivered += 100;
    let rs = RateSample {
        prior_delivered: bbr.next_rtt_delivered,
        // delivered × 2^24 / interval_us = bw with interval 2^24 µs.
        delivered: u64::from(bw),
        interval: Some(Dur::from_us(1 << 24)),
        is_app_limited: app_limited,
        acked_sacked: 1,
        ..RateSample::default()
    };
    bbr.update_bw(sock, &rs);
}

#[test]
fn bandwidth_filter_keeps_the_max_of_ten_rounds() {
    let mut sock = Sock::new(1448, Time::ZERO);
    let mut bbr = Bbr::default();
    bbr.init(&mut sock);
    sample_round(&mut bbr, &mut sock, 1000, false); // round 1
    for round in 2..=11 {
        sample_round(&mut bbr, &mut sock, 600, false);
        assert_eq!(bbr.max_bw(), 1000, "round {round}");
    }
    // Round 12 is more than 10 rounds after round 1: the max falls to 600.
    sample_round(&mut bbr, &mut sock, 600, false);
    assert_eq!((bbr.round_count(), bbr.max_bw()), (12, 600));
}

#[test]
fn app_limited_samples_below_the_max_are_ignored() {
    let mut sock = Sock::new(1448, Time::ZERO);
    let mut bbr = Bbr::default();
    bbr.init(&mut sock);
    sample_round(&mut bbr, &mut sock, 1000, false);
    // Thirty app-limited rounds at 100: never added, so 1000 never expires.
    for _ in 0..30 {
        sample_round(&mut bbr, &mut sock, 100, true);
    }
    assert_eq!(bbr.max_bw(), 1000);
    // An app-limited sample at least as high as the max is taken.
    sample_round(&mut bbr, &mut sock, 1200, true);
    assert_eq!(bbr.max_bw(), 1200);
    // Invalid samples (no interval) neither count a round nor feed the filter.
    let rounds = bbr.round_count();
    let rs = RateSample {
        prior_delivered: bbr.next_rtt_delivered,
        delivered: 5000,
        ..RateSample::default()
    };
    bbr.update_bw(&sock, &rs);
    assert_eq!((bbr.round_count(), bbr.max_bw()), (rounds, 1200));
}

#[test]
fn rto_loss_state_ends_the_round_and_resets_full_bw_tracking() {
    let mut p = ten_mbps_run(1, 0);
    assert!(p.bbr.full_bw > 0);
    p.bbr.set_state(&mut p.sock, CaState::Loss);
    assert_eq!(p.bbr.full_bw, 0);
    assert!(p.bbr.round_start);
    assert_eq!(p.bbr.prev_ca_state, CaState::Loss);
    // The RTO counts as a loss for policer detection: sampling starts.
    assert!(p.bbr.lt.is_sampling);
    // Full-pipe state itself is kept.
    assert!(p.bbr.full_bw_reached());
}

#[test]
fn undo_keeps_cwnd_and_restarts_full_pipe_and_policer_tracking() {
    let mut p = ten_mbps_run(1, 0);
    p.bbr.full_bw_cnt = 2;
    p.bbr.lt.is_sampling = true;
    let cwnd = p.sock.cwnd;
    assert_eq!(p.bbr.undo_cwnd(&p.sock), cwnd);
    assert_eq!((p.bbr.full_bw, p.bbr.full_bw_cnt), (0, 0));
    assert!(!p.bbr.lt.is_sampling && !p.bbr.lt_use_bw());
}

#[test]
fn restart_from_idle_paces_at_the_estimate_in_probe_bw() {
    let mut p = ten_mbps_run(2, 0);
    assert!(matches!(p.bbr.mode(), Mode::ProbeBw { .. }));
    // Not app-limited: TX_START is ignored.
    p.bbr.cwnd_event(&mut p.sock, CaEvent::TxStart);
    assert!(!p.bbr.idle_restart);
    // App-limited restart: pace at 1.0 × bw whatever the phase, and do not start
    // PROBE_RTT until data is acked again.
    p.sock.app_limited = p.sock.delivered + 1;
    p.sock.pacing_rate = 1;
    p.bbr.cwnd_event(&mut p.sock, CaEvent::TxStart);
    assert!(p.bbr.idle_restart);
    assert_eq!(p.sock.pacing_rate, pacing(p.bbr.bw(), BBR_UNIT));
    assert_eq!(p.bbr.ack_aggr.epoch_acked, 0);
}

#[test]
fn same_seed_same_trace_and_the_seed_moves_the_cycle() {
    let a = ten_mbps_run(3, 7);
    let b = ten_mbps_run(3, 7);
    assert_eq!(a.log, b.log);
    let first = |p: &Pipe| p.log.iter().find_map(cycle_idx);
    let starts: std::collections::BTreeSet<_> =
        (0..8).map(|seed| first(&ten_mbps_run(1, seed))).collect();
    assert!(
        starts.len() > 1,
        "different seeds give different starting phases"
    );
}

#[test]
fn only_the_kernels_transitions_are_legal() {
    let bw0 = Mode::ProbeBw {
        cycle_idx: 2,
        cycle_mstamp_us: 0,
    };
    let rtt0 = Mode::ProbeRtt {
        done_stamp: None,
        round_done: false,
    };
    let modes = [Mode::Startup, Mode::Drain, bw0, rtt0];
    let legal = |from: Mode, to: Mode, full: bool| {
        let bbr = Bbr {
            mode: from,
            full_bw_reached: full,
            ..Bbr::default()
        };
        bbr.is_legal_transition(to)
    };
    let mut allowed = Vec::new();
    for full in [false, true] {
        for from in modes {
            for to in modes {
                if legal(from, to, full) {
                    allowed.push(format!(
                        "{}->{}{}",
                        from.name(),
                        to.name(),
                        if full { " (full)" } else { "" }
                    ));
                }
            }
        }
    }
    assert_eq!(
        allowed,
        [
            "startup->probe_rtt",
            "drain->probe_rtt",
            "probe_bw->probe_rtt",
            "probe_rtt->startup",
            "startup->drain (full)",
            "startup->probe_rtt (full)",
            "drain->probe_bw (full)",
            "drain->probe_rtt (full)",
            "probe_bw->probe_bw (full)",
            "probe_bw->probe_rtt (full)",
            "probe_rtt->probe_bw (full)",
        ]
    );
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "illegal BBR transition Startup -> ProbeBw")]
fn an_illegal_transition_is_caught_in_debug_builds() {
    let mut bbr = Bbr::default();
    bbr.transition(Mode::ProbeBw {
        cycle_idx: 0,
        cycle_mstamp_us: 0,
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Over random paths: transitions stay legal (debug assertions), cwnd never leaves
    /// [4, ...] in Open state nor exceeds 4 in PROBE_RTT, pacing never stops, the
    /// full-pipe flag never reverts, and every packet is delivered, lost or in flight.
    #[test]
    fn invariants_hold_on_random_paths(
        rate_kbps in 500u64..=50_000,
        rtt_ms in 5u64..=200,
        queue in 2u32..=300,
        policed in proptest::option::of((200u64..=20_000, 3_000u64..=100_000)),
        seed in any::<u64>(),
    ) {
        let path = Path {
            rate: Bandwidth::from_bps(rate_kbps * 1000),
            rtt: Dur::from_ms(rtt_ms),
            queue_packets: queue,
            policer: policed.map(|(kbps, bucket_bytes)| Policer {
                rate: Bandwidth::from_bps(kbps * 1000),
                bucket_bytes,
            }),
        };
        let mut p = Pipe::new(path, BbrConfig { cycle_seed: seed, ..BbrConfig::default() });
        p.run_until(Time::from_secs(4));

        let mut reached = false;
        for s in &p.log {
            if s.ca_state == CaState::Open {
                prop_assert!(s.cwnd >= 4, "cwnd {} at {}", s.cwnd, s.t);
            }
            if matches!(s.mode, Mode::ProbeRtt { .. }) {
                prop_assert!(s.cwnd <= 4);
            }
            prop_assert!(s.pacing_rate > 0);
            prop_assert!(!reached || s.full_bw_reached);
            reached = s.full_bw_reached;
        }
        let in_flight = u64::from(p.sock.packets_out);
        prop_assert_eq!(p.sent, p.sock.delivered + p.sock.lost + in_flight);
    }
}
