//! min_rtt tracking and PROBE_RTT (`bbr_update_min_rtt`, `bbr_check_probe_rtt_done`).
//!
//! min_rtt is the minimum RTT seen over a 10 s window. When it has not been refreshed
//! for 10 s, BBR enters PROBE_RTT: cwnd drops to 4 packets so the bottleneck queue
//! drains (for this and, cooperatively, for other BBR flows) and the true propagation
//! delay can be measured. After at least 200 ms and one packet-timed round with
//! inflight at that floor, BBR restores the saved cwnd and returns to PROBE_BW (or to
//! STARTUP if the pipe was never filled). 200 ms per 10 s bounds the cost at ~2 %, and
//! flows with natural pauses (web, RPC, video chunks) refresh min_rtt without paying it.
//!
//! Both timers run on jiffies (`sock.jiffies()`, resolution `1/sock.hz`) as in the
//! kernel, so with `hz = 250` PROBE_RTT lasts a multiple of 4 ms.

use super::{dur_to_us_u32, Bbr, Mode};
use crate::{RateSample, Sock};

/// Window of the min_rtt filter, seconds (`bbr_min_rtt_win_sec`).
pub(super) const MIN_RTT_WIN_SEC: u32 = 10;
/// Minimum time at the cwnd floor in PROBE_RTT, ms (`bbr_probe_rtt_mode_ms`).
pub(super) const PROBE_RTT_MODE_MS: u32 = 200;
/// Minimum cwnd, packets (`bbr_cwnd_min_target`): a receiver that ACKs every other
/// packet needs 4 in flight to keep two ACKs coming.
pub(super) const CWND_MIN_TARGET: u32 = 4;

/// `msecs_to_jiffies`: `ms` in ticks of `hz`, rounded up.
fn msecs_to_jiffies(ms: u32, hz: u32) -> u64 {
    (u64::from(ms) * u64::from(hz)).div_ceil(1000)
}

impl Bbr {
    /// `bbr_update_min_rtt`: feed the min_rtt filter; enter, run and leave PROBE_RTT.
    pub(super) fn update_min_rtt(&mut self, sock: &mut Sock, rs: &RateSample) {
        let now = sock.jiffies();
        let win = u64::from(self.config.min_rtt_win_sec) * u64::from(sock.hz);
        let filter_expired = now > self.min_rtt_stamp + win;

        // Take a lower RTT, or any RTT once the window has expired (unless the ACK may
        // have been delayed, which inflates it).
        if let Some(rtt) = rs.rtt {
            let rtt_us = dur_to_us_u32(rtt);
            if rtt_us < self.min_rtt_us || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = now;
            }
        }

        if self.config.probe_rtt_mode_ms > 0
            && filter_expired
            && !self.idle_restart
            && !matches!(self.mode, Mode::ProbeRtt { .. })
        {
            // Dip to drain the queue. The kernel switches mode before saving cwnd, so
            // the save keeps the larger of the old prior_cwnd and cwnd.
            self.transition(Mode::ProbeRtt {
                done_stamp: None,
                round_done: false,
            });
            self.save_cwnd(sock.cwnd);
        }

        if let Mode::ProbeRtt { done_stamp, .. } = self.mode {
            // Mark the flow app-limited until what is in flight now is delivered, so the
            // low-rate samples of this mode do not pull the bandwidth estimate down.
            let in_flight = sock.packets_in_flight();
            sock.app_limited = (sock.delivered + u64::from(in_flight)).max(1);

            // Hold the floor for max(200 ms, 1 round), counted from when inflight first
            // gets down to it.
            if done_stamp.is_none() && in_flight <= self.config.cwnd_min_target {
                self.mode = Mode::ProbeRtt {
                    done_stamp: Some(
                        now + msecs_to_jiffies(self.config.probe_rtt_mode_ms, sock.hz),
                    ),
                    round_done: false,
                };
                self.next_rtt_delivered = sock.delivered; // start a round now
            } else if done_stamp.is_some() {
                if let Mode::ProbeRtt { round_done, .. } = &mut self.mode {
                    *round_done |= self.round_start;
                }
                if let Mode::ProbeRtt {
                    round_done: true, ..
                } = self.mode
                {
                    self.check_probe_rtt_done(sock);
                }
            }
        }

        // An idle restart ends only once a new (S)ACK for data is processed.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done`: if the 200 ms have passed, restart the min_rtt window,
    /// restore cwnd and leave PROBE_RTT.
    pub(super) fn check_probe_rtt_done(&mut self, sock: &mut Sock) {
        let Mode::ProbeRtt {
            done_stamp: Some(done),
            ..
        } = self.mode
        else {
            return;
        };
        if sock.jiffies() <= done {
            return;
        }
        self.min_rtt_stamp = sock.jiffies(); // wait a while until the next PROBE_RTT
        sock.cwnd = sock.cwnd.max(self.prior_cwnd);
        self.reset_mode(sock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Dur, Time};

    #[test]
    fn msecs_to_jiffies_rounds_up() {
        assert_eq!(msecs_to_jiffies(200, 1000), 200);
        assert_eq!(msecs_to_jiffies(200, 250), 50);
        assert_eq!(msecs_to_jiffies(201, 250), 51);
        assert_eq!(msecs_to_jiffies(200, 100), 20);
    }

    fn rtt_sample(ms: u64) -> RateSample {
        RateSample {
            rtt: Some(Dur::from_ms(ms)),
            delivered: 1,
            ..RateSample::default()
        }
    }

    #[test]
    fn lower_samples_refresh_min_rtt_and_higher_ones_wait_for_expiry() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        bbr.update_min_rtt(&mut sock, &rtt_sample(50));
        assert_eq!((bbr.min_rtt_us, bbr.min_rtt_stamp), (50_000, 0));
        sock.now = Time::from_secs(5);
        bbr.update_min_rtt(&mut sock, &rtt_sample(60));
        assert_eq!((bbr.min_rtt_us, bbr.min_rtt_stamp), (50_000, 0));
        // Expiry needs jiffies > stamp + 10 * hz: 10.000 s is not yet expired.
        sock.now = Time::from_secs(10);
        bbr.update_min_rtt(&mut sock, &rtt_sample(60));
        assert_eq!(bbr.min_rtt_us, 50_000);
        assert_eq!(bbr.mode, Mode::Startup);
        // At 10.001 s the 60 ms sample is taken and PROBE_RTT starts (the pipe was
        // never filled, so it will return to STARTUP). Nothing is in flight, so the
        // 200 ms clock starts at once: done after jiffy 10 001 + 200.
        sock.now = Time::from_ms(10_001);
        bbr.update_min_rtt(&mut sock, &rtt_sample(60));
        assert_eq!((bbr.min_rtt_us, bbr.min_rtt_stamp), (60_000, 10_001));
        assert_eq!(
            bbr.mode,
            Mode::ProbeRtt {
                done_stamp: Some(10_201),
                round_done: false
            }
        );
        // A round and 200 ms later it returns to STARTUP.
        bbr.round_start = true;
        sock.now = Time::from_ms(10_202);
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert_eq!(bbr.mode, Mode::Startup);
    }

    #[test]
    fn probe_rtt_waits_for_the_floor_then_200_ms_and_a_round() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        bbr.full_bw_reached = true;
        bbr.min_rtt_us = 40_000;
        sock.cwnd = 80;
        sock.packets_out = 80;
        sock.delivered = 5000;

        sock.now = Time::from_ms(10_001);
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert!(matches!(
            bbr.mode,
            Mode::ProbeRtt {
                done_stamp: None,
                ..
            }
        ));
        assert_eq!(bbr.prior_cwnd, 80);
        assert_eq!(sock.app_limited, 5080);

        // Inflight drains to 4 at 10.050 s: the 200 ms clock starts, and a round.
        sock.now = Time::from_ms(10_050);
        sock.packets_out = 4;
        sock.delivered = 5076;
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert_eq!(
            bbr.mode,
            Mode::ProbeRtt {
                done_stamp: Some(10_250),
                round_done: false
            }
        );
        assert_eq!(bbr.next_rtt_delivered, 5076);

        // A round ends at 10.100 s, but 200 ms have not passed.
        sock.now = Time::from_ms(10_100);
        bbr.round_start = true;
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert_eq!(
            bbr.mode,
            Mode::ProbeRtt {
                done_stamp: Some(10_250),
                round_done: true
            }
        );
        // 10.250 s is not after the stamp; 10.251 s is.
        bbr.round_start = false;
        sock.now = Time::from_ms(10_250);
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert!(matches!(bbr.mode, Mode::ProbeRtt { .. }));
        sock.cwnd = 4;
        sock.now = Time::from_ms(10_251);
        bbr.update_min_rtt(&mut sock, &RateSample::default());
        assert!(matches!(bbr.mode, Mode::ProbeBw { .. }));
        assert_eq!(sock.cwnd, 80, "cwnd restored to the saved value");
        assert_eq!(bbr.min_rtt_stamp, 10_251);
    }

    #[test]
    fn probe_rtt_mode_ms_zero_disables_probe_rtt() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::new(crate::bbr::BbrConfig {
            probe_rtt_mode_ms: 0,
            ..Default::default()
        });
        bbr.init(&mut sock);
        sock.now = Time::from_secs(30);
        bbr.update_min_rtt(&mut sock, &rtt_sample(70));
        assert_eq!(bbr.mode, Mode::Startup);
        assert_eq!(bbr.min_rtt_us, 70_000);
    }
}
