//! PROBE_BW: gain cycling around the bandwidth estimate (`bbr_reset_probe_bw_mode`,
//! `bbr_is_next_cycle_phase`, `bbr_advance_cycle_phase`, `bbr_update_cycle_phase`).
//!
//! Eight phases of about one min_rtt each: pace at 5/4 × bw to probe for more
//! bandwidth, at 3/4 to drain the queue the probe made (or yield to other flows), then
//! cruise at 1.0 for six phases. The first phase is random so that flows sharing a
//! bottleneck do not probe in lock step; it is never the 3/4 phase, which would only
//! drain an empty queue.
//!
//! ```text
//! phase:  0     1     2   3   4   5   6   7
//! gain:  5/4   3/4    1   1   1   1   1   1
//! ends:  >min_rtt and   >min_rtt    >min_rtt (wall clock only)
//!        (loss or       or inflight
//!        inflight >=    <= BDP
//!        5/4 BDP)
//! ```

use super::{Bbr, Mode, BBR_UNIT};
use crate::{RateSample, Sock};

/// Phases in a gain cycle (`CYCLE_LEN`).
pub(super) const CYCLE_LEN: usize = 8;
/// The pacing gain of each phase, ×1/256 (`bbr_pacing_gain[]`).
pub(super) const PACING_GAIN: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4, // probe for more available bw
    BBR_UNIT * 3 / 4, // drain the queue and/or yield bw to other flows
    BBR_UNIT,         // cruise at 1.0 × bw to use the pipe
    BBR_UNIT,         // ... without creating excess queue
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The starting phase is randomised over this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u32 = 7;
/// PROBE_BW cwnd gain, ×1/256 (`bbr_cwnd_gain`): 2 × BDP tolerates ACKs delayed or
/// stretched by up to one round without stalling.
pub(super) const CWND_GAIN: u32 = BBR_UNIT * 2;

/// The deterministic stand-in for the kernel's `get_random_u32_below()` used to pick
/// the starting phase: a SplitMix64 stream seeded from [`super::BbrConfig::cycle_seed`].
/// SplitMix64 is tiny, portable, passes BigCrush, and gives equal streams on every
/// machine, which is all a phase choice needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CycleRng {
    state: u64,
}

impl CycleRng {
    pub(super) fn new(seed: u64) -> Self {
        CycleRng { state: seed }
    }

    /// Next 64-bit output (SplitMix64: golden-ratio increment, then two
    /// xor-shift-multiply rounds).
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by multiply-shift on 32 random bits, as the kernel's
    /// `get_random_u32_below` does (its rejection step, which removes a bias below
    /// 2^-29 for n = 7, is omitted).
    pub(super) fn below(&mut self, n: u32) -> u32 {
        let r = (self.next_u64() >> 32) as u32;
        ((u64::from(r) * u64::from(n)) >> 32) as u32
    }
}

impl Bbr {
    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase other than 3/4.
    ///
    /// The kernel picks `CYCLE_LEN - 1 - rand(7)` ∈ {1..7} and then advances once, so the
    /// first phase is in {2..7, 0}.
    pub(super) fn reset_probe_bw_mode(&mut self, sock: &Sock) {
        let picked = CYCLE_LEN - 1 - self.cycle_rng.below(CYCLE_RAND) as usize;
        self.transition(Mode::ProbeBw {
            cycle_idx: (picked + 1) % CYCLE_LEN, // flip to the next phase of the cycle
            cycle_mstamp_us: sock.delivered_mstamp.as_us(),
        });
    }

    /// `bbr_update_cycle_phase`: advance the gain cycle when the phase is done.
    pub(super) fn update_cycle_phase(&mut self, sock: &Sock, rs: &RateSample) {
        if matches!(self.mode, Mode::ProbeBw { .. }) && self.is_next_cycle_phase(sock, rs) {
            self.advance_cycle_phase(sock);
        }
    }

    /// `bbr_advance_cycle_phase`: next phase, starting now (by `delivered_mstamp`).
    fn advance_cycle_phase(&mut self, sock: &Sock) {
        if let Mode::ProbeBw {
            cycle_idx,
            cycle_mstamp_us,
        } = &mut self.mode
        {
            *cycle_idx = (*cycle_idx + 1) % CYCLE_LEN;
            *cycle_mstamp_us = sock.delivered_mstamp.as_us();
        }
    }

    /// `bbr_is_next_cycle_phase`: end the phase when it has lasted a min_rtt and/or hit
    /// its in-flight goal. Reads the pacing gain set by the previous ACK.
    fn is_next_cycle_phase(&self, sock: &Sock, rs: &RateSample) -> bool {
        let Mode::ProbeBw {
            cycle_mstamp_us, ..
        } = self.mode
        else {
            return false;
        };
        let elapsed_us = sock
            .delivered_mstamp
            .as_us()
            .saturating_sub(cycle_mstamp_us);
        let is_full_length = elapsed_us > u64::from(self.min_rtt_us);

        // Gain 1.0 paces at the estimate to use the pipe without adding queue: wall
        // clock only.
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }

        let inflight = self.packets_in_net_at_edt(sock, rs.prior_in_flight);
        let bw = self.max_bw();

        // Gain > 1 tries to raise inflight to gain × BDP, which may take longer than
        // min_rtt on a short path; but do not persist through losses, as a shallow
        // buffer may not hold that much.
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(sock, bw, self.pacing_gain));
        }

        // Gain < 1 drains the queue the probe made; once inflight is down to the BDP
        // the queue is gone and persisting would under-use the pipe.
        is_full_length || inflight <= self.inflight(sock, bw, BBR_UNIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Dur, Time};

    #[test]
    fn the_starting_phase_is_never_the_drain_phase_and_covers_the_rest() {
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..64 {
            let mut rng = CycleRng::new(seed);
            for _ in 0..100 {
                let picked = CYCLE_LEN - 1 - rng.below(CYCLE_RAND) as usize;
                seen[(picked + 1) % CYCLE_LEN] += 1;
            }
        }
        assert_eq!(seen[1], 0, "phase 1 (gain 3/4) must never start a cycle");
        // 6400 draws over 7 phases: ~914 each; all well away from 0.
        for (idx, n) in seen.iter().enumerate().filter(|(i, _)| *i != 1) {
            assert!((800..1030).contains(n), "phase {idx} started {n} times");
        }
    }

    #[test]
    fn the_stream_is_fixed_by_the_seed() {
        let draws = |seed| {
            let mut rng = CycleRng::new(seed);
            (0..16).map(|_| rng.below(7)).collect::<Vec<_>>()
        };
        assert_eq!(draws(42), draws(42));
        assert_ne!(draws(42), draws(43));
        // SplitMix64's first output for seed 0 is 0xE220A8397B1DCDAF:
        // (0xE220A839 * 7) >> 32 = 6.
        assert_eq!(CycleRng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(draws(0)[0], 6);
    }

    /// PROBE_BW at 10 Mbit/s, min_rtt 40 ms, in `cycle_idx` started at t = 0.
    fn probe_bw_at(cycle_idx: usize) -> (Bbr, Sock) {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        bbr.bw.reset(0, 14_483);
        bbr.min_rtt_us = 40_000;
        bbr.full_bw_reached = true;
        bbr.mode = Mode::ProbeBw {
            cycle_idx,
            cycle_mstamp_us: 0,
        };
        bbr.update_gains();
        sock.pacing_rate = 1_237_500; // TSO goal 2
        (bbr, sock)
    }

    fn at(sock: &mut Sock, us: u64) {
        sock.now = Time::from_us(us);
        sock.delivered_mstamp = sock.now;
    }

    #[test]
    fn cruise_phases_last_just_over_one_min_rtt() {
        let (mut bbr, mut sock) = probe_bw_at(3);
        let rs = RateSample {
            prior_in_flight: 0,
            ..RateSample::default()
        };
        at(&mut sock, 40_000);
        bbr.update_cycle_phase(&sock, &rs);
        assert_eq!(
            bbr.mode,
            Mode::ProbeBw {
                cycle_idx: 3,
                cycle_mstamp_us: 0
            }
        );
        at(&mut sock, 40_001);
        bbr.update_cycle_phase(&sock, &rs);
        assert_eq!(
            bbr.mode,
            Mode::ProbeBw {
                cycle_idx: 4,
                cycle_mstamp_us: 40_001
            }
        );
    }

    #[test]
    fn probing_phase_needs_time_and_either_inflight_or_loss() {
        let (mut bbr, mut sock) = probe_bw_at(0);
        // 5/4 target: ceil(34.53 * 1.25) = 44, + 6 = 50, + 2 in phase 0 = 52; the
        // departing TSO burst (2) is counted, so 50 in flight reaches it.
        at(&mut sock, 50_000);
        let short = RateSample {
            prior_in_flight: 49,
            ..RateSample::default()
        };
        bbr.update_cycle_phase(&sock, &short);
        assert!(matches!(bbr.mode, Mode::ProbeBw { cycle_idx: 0, .. }));
        let lossy = RateSample {
            prior_in_flight: 49,
            losses: 1,
            ..RateSample::default()
        };
        bbr.update_cycle_phase(&sock, &lossy);
        assert!(matches!(bbr.mode, Mode::ProbeBw { cycle_idx: 1, .. }));

        let (mut bbr, mut sock) = probe_bw_at(0);
        let full = RateSample {
            prior_in_flight: 50,
            ..RateSample::default()
        };
        at(&mut sock, 30_000); // not a full min_rtt yet
        bbr.update_cycle_phase(&sock, &full);
        assert!(matches!(bbr.mode, Mode::ProbeBw { cycle_idx: 0, .. }));
        at(&mut sock, 40_001);
        bbr.update_cycle_phase(&sock, &full);
        assert!(matches!(bbr.mode, Mode::ProbeBw { cycle_idx: 1, .. }));
    }

    #[test]
    fn drain_phase_ends_early_once_inflight_is_down_to_the_bdp() {
        let (mut bbr, mut sock) = probe_bw_at(1);
        // BDP target at gain 1: 35 + 6 = 41 -> 42.
        at(&mut sock, 10_000);
        bbr.update_cycle_phase(
            &sock,
            &RateSample {
                prior_in_flight: 43,
                ..RateSample::default()
            },
        );
        assert!(matches!(bbr.mode, Mode::ProbeBw { cycle_idx: 1, .. }));
        bbr.update_cycle_phase(
            &sock,
            &RateSample {
                prior_in_flight: 42,
                ..RateSample::default()
            },
        );
        assert_eq!(
            bbr.mode,
            Mode::ProbeBw {
                cycle_idx: 2,
                cycle_mstamp_us: 10_000
            }
        );
    }

    #[test]
    fn entering_probe_bw_starts_the_phase_clock_at_delivered_mstamp() {
        let (mut bbr, mut sock) = probe_bw_at(0);
        sock.delivered_mstamp = Time::ZERO + Dur::from_ms(7);
        bbr.reset_probe_bw_mode(&sock);
        let Mode::ProbeBw {
            cycle_idx,
            cycle_mstamp_us,
        } = bbr.mode
        else {
            panic!()
        };
        assert_ne!(cycle_idx, 1);
        assert_eq!(cycle_mstamp_us, 7_000);
    }
}
