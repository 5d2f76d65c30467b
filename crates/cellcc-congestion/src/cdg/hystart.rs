//! CDG's own HyStart variant (`tcp_cdg_hystart_update`, Linux 6.x), after Ha & Rhee's
//! HyStart as in CUBIC, with Hayes' changes: it runs at any cwnd (not only from 16
//! packets), uses the round's delayed-ACK-filtered minimum RTT, restarts the ACK train
//! whenever the flow is not cwnd-limited, and uses µs thresholds with a 125 µs floor.
//!
//! - ACK train: ACKs at most 3 ms apart for longer than `max(delay_min/2, 125 µs)`
//!   since the round began ⇒ leave slow start.
//! - Delay: from the 9th ACK of a round on, the round's minimum RTT above
//!   `max(9/8·delay_min, 125 µs)` ⇒ leave slow start.
//!
//! Either sets `ssthresh = cwnd`. The round (train start, sample count) is reset by
//! the per-RTT step in `cong_avoid`.

use crate::Sock;

use super::Cdg;

/// `hystart_detect` bit enabling the ACK-train detector.
pub const HYSTART_ACK_TRAIN: u8 = 1;
/// `hystart_detect` bit enabling the delay detector.
pub const HYSTART_DELAY: u8 = 2;

/// Largest ACK spacing that continues a train, µs.
const ACK_TRAIN_GAP_US: u64 = 3000;
/// Floor of both thresholds, µs: below it timer and scheduling noise dominate.
const THRESH_FLOOR_US: u64 = 125;
/// ACKs per round before the delay test is made.
const DELAY_MIN_SAMPLES: u16 = 8;

impl Cdg {
    /// `tcp_cdg_hystart_update`: called in slow start before the per-RTT step.
    pub(super) fn hystart_update(&mut self, sock: &mut Sock) {
        if self.rtt.min > 0 && (self.delay_min == 0 || self.rtt.min < self.delay_min) {
            self.delay_min = self.rtt.min;
        }
        if self.delay_min == 0 {
            return;
        }
        let delay_min = self.delay_min as u64;
        if self.cfg.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now_us = sock.now.as_us();
            match self.last_ack_us {
                Some(last) if sock.is_cwnd_limited() => {
                    if now_us < last + ACK_TRAIN_GAP_US {
                        self.last_ack_us = Some(now_us);
                        let base_owd = (delay_min / 2).max(THRESH_FLOOR_US);
                        if now_us > self.round_start_us + base_owd {
                            self.hystart_exits += 1;
                            sock.ssthresh = sock.cwnd;
                            return;
                        }
                    }
                }
                _ => {
                    self.last_ack_us = Some(now_us);
                    self.round_start_us = now_us;
                }
            }
        }
        if self.cfg.hystart_detect & HYSTART_DELAY != 0 {
            if self.sample_cnt < DELAY_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (delay_min + delay_min / 8).max(THRESH_FLOOR_US);
                if self.rtt.min as u64 > thresh {
                    self.hystart_exits += 1;
                    sock.ssthresh = sock.cwnd;
                }
            }
        }
    }
}
