//! RTT estimation and the retransmission timeout: RFC 6298 as Linux implements it
//! (`tcp_rtt_estimator`, `tcp_set_rto` in `net/ipv4/tcp_input.c`). The windowed minimum
//! behind `tcp_min_rtt` is [`cellcc_congestion::minmax::Minmax`] (`lib/win_minmax.c`),
//! fed by `tcp_update_rtt_min` in `input.rs`.
//!
//! Model. All values are integer microseconds, with Linux's scalings: `srtt` is kept ×8,
//! `mdev` ×4. The first sample `m` gives `srtt = m`, `mdev = m/2` (so `4·mdev = 2m`) and
//! `rttvar = max(2m, rto_min)`. Later samples move srtt by 1/8 of the error and mdev by
//! 1/4 of (|error| − mdev), with only 1/32 when the RTT fell by more than mdev (Linux's
//! Eifel-like damping). `mdev_max` is the largest `4·mdev` of the current round trip
//! (floored at `rto_min`); `rttvar` jumps up to it at once and, once per round trip (when
//! `snd_una` passes `rtt_seq`), decays by a quarter of its excess over `mdev_max`.
//! `RTO = srtt + rttvar`.
//!
//! Differences from RFC 6298:
//! 1. `rttvar` is floored at `rto_min` instead of flooring the RTO (RFC 6298 §2.4):
//!    `RTO = srtt + max(4·mdev, rto_min)`.
//! 2. The mdev gain is 1/32 when the sample is below `srtt − mdev` (Linux).
//! 3. `rttvar` decays only once per round trip, towards the round trip's largest mdev.

use cellcc_units::Dur;

/// Linux's RTT estimator state (`srtt_us`, `mdev_us`, `mdev_max_us`, `rttvar_us`,
/// `rtt_seq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    /// Smoothed RTT ×8, µs (`srtt_us`); zero before the first sample.
    srtt_us8: u64,
    /// Mean deviation ×4, µs (`mdev_us`).
    mdev_us: u64,
    /// Largest `mdev_us` in the current round trip (`mdev_max_us`).
    mdev_max_us: u64,
    /// The variance term of the RTO, µs (`rttvar_us`).
    rttvar_us: u64,
    /// `snd_nxt` when the current round trip started (`rtt_seq`).
    rtt_seq: u64,
    /// `tcp_rto_min_us`.
    rto_min_us: u64,
}

impl RttEstimator {
    /// An estimator without samples, with RTO floor `rto_min` (`tcp_rto_min`).
    pub fn new(rto_min: Dur) -> Self {
        RttEstimator {
            srtt_us8: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            rto_min_us: rto_min.as_us(),
        }
    }

    /// Whether any sample was taken.
    pub fn has_sample(&self) -> bool {
        self.srtt_us8 != 0
    }

    /// `srtt_us` (×8), µs; zero before the first sample.
    pub fn srtt_us8(&self) -> u64 {
        self.srtt_us8
    }

    /// Smoothed RTT, µs (`srtt_us >> 3`).
    pub fn srtt_us(&self) -> u64 {
        self.srtt_us8 >> 3
    }

    /// Mean deviation ×4, µs (`mdev_us`).
    pub fn mdev_us(&self) -> u64 {
        self.mdev_us
    }

    /// `rttvar_us`.
    pub fn rttvar_us(&self) -> u64 {
        self.rttvar_us
    }

    /// Unrounded, unbounded RTO in µs (`(srtt_us >> 3) + rttvar_us`, `__tcp_set_rto`);
    /// `None` before the first sample.
    pub fn rto_us(&self) -> Option<u64> {
        self.has_sample().then(|| self.srtt_us() + self.rttvar_us)
    }

    /// `tcp_rtt_estimator`: feed one sample of `m_us` µs. `snd_una` and `snd_nxt` are the
    /// values after the ACK that produced the sample (they delimit round trips).
    pub fn update(&mut self, m_us: u64, snd_una: u64, snd_nxt: u64) {
        let m = m_us as i64;
        if self.srtt_us8 == 0 {
            // No previous measure: srtt = m, 4·mdev = 2m so that RTO = 3m (or m + rto_min).
            self.srtt_us8 = (m as u64) << 3;
            self.mdev_us = (m as u64) << 1;
            self.rttvar_us = self.mdev_us.max(self.rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
            self.srtt_us8 = self.srtt_us8.max(1);
            return;
        }
        let mut err = m - (self.srtt_us8 >> 3) as i64;
        let srtt = self.srtt_us8 as i64 + err; // srtt = 7/8 srtt + 1/8 m
        let mdev = self.mdev_us as i64;
        if err < 0 {
            err = -err;
            err -= mdev >> 2;
            // The RTT fell: use a finer gain (1/32) for mdev so the RTO neither grows
            // nor collapses quickly.
            if err > 0 {
                err >>= 3;
            }
        } else {
            err -= mdev >> 2;
        }
        // mdev = 3/4 mdev + 1/4 |error| (err ≥ -mdev/4 keeps it non-negative).
        self.mdev_us = (mdev + err) as u64;
        if self.mdev_us > self.mdev_max_us {
            self.mdev_max_us = self.mdev_us;
            if self.mdev_max_us > self.rttvar_us {
                self.rttvar_us = self.mdev_max_us;
            }
        }
        if snd_una > self.rtt_seq {
            // A round trip ended: decay rttvar towards this round trip's max deviation.
            if self.mdev_max_us < self.rttvar_us {
                self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max_us = self.rto_min_us;
        }
        self.srtt_us8 = (srtt.max(1)) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;

    #[test]
    fn first_sample_sets_srtt_and_rto_of_m_plus_max_2m_rto_min() {
        // m = 100 ms: srtt = 100 ms, 4·mdev = 200 ms, rttvar = max(200, 200) ms,
        // RTO = 100 + 200 = 300 ms = m + max(2m, 200 ms).
        let mut e = RttEstimator::new(Dur::from_ms(200));
        e.update(100 * MS, 0, 10);
        assert_eq!(e.srtt_us(), 100 * MS);
        assert_eq!(e.mdev_us(), 200 * MS);
        assert_eq!(e.rttvar_us(), 200 * MS);
        assert_eq!(e.rto_us(), Some(300 * MS));
        // m = 50 ms: 4·mdev = 100 ms < rto_min, so rttvar = 200 ms and RTO = 250 ms.
        let mut e = RttEstimator::new(Dur::from_ms(200));
        e.update(50 * MS, 0, 10);
        assert_eq!(e.rto_us(), Some(250 * MS));
        // m = 300 ms: rttvar = 600 ms, RTO = 900 ms = 3m.
        let mut e = RttEstimator::new(Dur::from_ms(200));
        e.update(300 * MS, 0, 10);
        assert_eq!(e.rto_us(), Some(900 * MS));
    }

    #[test]
    fn later_samples_follow_linux_gains() {
        let mut e = RttEstimator::new(Dur::from_ms(200));
        // srtt8 = 800000, mdev = 200000, rttvar = 200000.
        e.update(100 * MS, 0, 10);
        // 120 ms, a new round trip (snd_una 11 > rtt_seq 10):
        // err = 20000; srtt8 = 820000 (srtt 102.5 ms);
        // mdev += 20000 - 200000/4 = -30000 → 170000; no new max; round trip ended:
        // rttvar (200000) is not above mdev_max (200000) so stays; RTO = 302.5 ms.
        e.update(120 * MS, 11, 20);
        assert_eq!(e.srtt_us8(), 820_000);
        assert_eq!(e.mdev_us(), 170_000);
        assert_eq!(e.rttvar_us(), 200_000);
        assert_eq!(e.rto_us(), Some(302_500));
        // 20 ms (RTT fell by more than mdev): err = -82500; |err| - 170000/4 = 40000,
        // damped to 40000/8 = 5000 → mdev 175000 (undamped it would be 210000).
        // srtt8 = 820000 - 82500 = 737500.
        e.update(20 * MS, 11, 20);
        assert_eq!(e.srtt_us8(), 737_500);
        assert_eq!(e.mdev_us(), 175_000);
        assert_eq!(e.rttvar_us(), 200_000);
    }

    #[test]
    fn rttvar_jumps_to_mdev_max_and_decays_once_per_round_trip() {
        let mut e = RttEstimator::new(Dur::from_ms(200));
        e.update(100 * MS, 0, 10);
        // 300 ms in the same round trip: err = 200000, srtt8 = 1000000 (125 ms);
        // mdev = 200000 + 200000 - 50000 = 350000 > mdev_max → rttvar = 350000.
        e.update(300 * MS, 5, 10);
        assert_eq!(e.srtt_us(), 125_000);
        assert_eq!(e.mdev_us(), 350_000);
        assert_eq!(e.rttvar_us(), 350_000);
        assert_eq!(e.rto_us(), Some(475_000));
        // Next round trip, sample equal to srtt: err = 0, mdev = 350000 - 87500 = 262500;
        // round trip ends: mdev_max (350000, from the previous sample of this round trip)
        // equals rttvar, no decay; mdev_max resets to rto_min.
        e.update(125 * MS, 11, 20);
        assert_eq!(e.mdev_us(), 262_500);
        assert_eq!(e.rttvar_us(), 350_000);
        // Another round trip: mdev = 262500 - 65625 = 196875 < mdev_max (200000):
        // rttvar decays by (350000 - 200000)/4 = 37500 → 312500.
        e.update(125 * MS, 21, 30);
        assert_eq!(e.mdev_us(), 196_875);
        assert_eq!(e.rttvar_us(), 312_500);
    }
}
