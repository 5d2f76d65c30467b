//! HyStart: leave slow start before the first loss (Linux 6.x `tcp_cubic.c`,
//! `hystart_update` and `bictcp_hystart_reset`; Ha & Rhee, "Taming the elephants: New
//! TCP slow start", Computer Networks 55(9), 2011).
//!
//! Slow start is cut into rounds of one window each: a round starts when the first
//! packet sent after the previous round started is acked (`snd_una` passes `end_seq`).
//! Within a round two detectors run on every RTT sample, once cwnd ≥
//! `hystart_low_window`:
//! - ACK train: ACKs keep arriving at most `hystart_ack_delta_us` apart for longer than
//!   a threshold. HyStart's original threshold is half the min RTT; pacing can stretch
//!   a slow-start window over up to half an RTT, so Linux waits for `delay_min +
//!   ack_delay` on paced sockets and half of that on unpaced ones.
//! - Delay increase: the smallest RTT of the round (taken over all its samples, judged
//!   from the ninth on) exceeds `delay_min + clamp(delay_min/8, 4 ms, 16 ms)`.
//!
//! Either one ends slow start by setting ssthresh to the current cwnd (done by the
//! caller). Times are µs (`tcp_mstamp`), as in Linux since 5.7.

use crate::{PacingStatus, Sock};

use super::CubicConfig;

/// `hystart_detect` bit enabling ACK-train detection (`HYSTART_ACK_TRAIN`).
pub const HYSTART_ACK_TRAIN: u8 = 0x1;
/// `hystart_detect` bit enabling delay-increase detection (`HYSTART_DELAY`).
pub const HYSTART_DELAY: u8 = 0x2;

/// RTT samples per round taken before the delay test can fire (`HYSTART_MIN_SAMPLES`):
/// the minimum of 8 samples filters ACK compression and scheduler noise.
const MIN_SAMPLES: u8 = 8;
/// Lower clamp of the delay-increase margin, µs (`HYSTART_DELAY_MIN`): below 4 ms, RTT
/// noise on short paths would end slow start early.
const DELAY_THRESH_MIN_US: u32 = 4_000;
/// Upper clamp of the delay-increase margin, µs (`HYSTART_DELAY_MAX`): on long paths,
/// 16 ms of queueing is already enough evidence.
const DELAY_THRESH_MAX_US: u32 = 16_000;
/// Largest GSO packet the stack would build, bytes (`sk_gso_max_size`, 64 KiB on
/// common NICs): sizes the pacing cushion of the ACK-train threshold.
const GSO_MAX_SIZE: u64 = 65_536;
/// Cap on that cushion, µs (`USEC_PER_MSEC` in `hystart_ack_delay`).
const ACK_DELAY_MAX_US: u64 = 1_000;
/// Microseconds per second, for the cushion's rate conversion.
const US_PER_S: u64 = 1_000_000;

/// Which HyStart detector ended slow start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HystartExit {
    /// The ACK train of a round grew longer than the path's min RTT (or half of it).
    AckTrain,
    /// The round's min RTT rose by more than `clamp(delay_min/8, 4 ms, 16 ms)`.
    Delay,
}

/// HyStart state (the HyStart half of Linux's `struct bictcp`).
#[derive(Clone, Debug, Default)]
pub(super) struct HyStart {
    /// `found`: the detector that ended slow start; `None` until then. Cleared only by
    /// a full reset (connection start, RTO), so HyStart runs once per slow start from
    /// a fresh state.
    pub(super) found: Option<HystartExit>,
    /// `round_start`: when the current round began, µs.
    pub(super) round_start_us: u64,
    /// `end_seq`: `snd_nxt` when the round began; the round ends once it is acked.
    pub(super) end_seq: u64,
    /// `last_ack`: the latest ACK of the current train, µs.
    pub(super) last_ack_us: u64,
    /// `curr_rtt`: smallest RTT sample of this round, µs (`u32::MAX` before the first).
    pub(super) curr_rtt_us: u32,
    /// `sample_cnt`: RTT samples counted this round, up to [`MIN_SAMPLES`].
    pub(super) sample_cnt: u8,
}

impl HyStart {
    /// `bictcp_hystart_reset`: start a new round now.
    pub(super) fn start_round(&mut self, sock: &Sock) {
        let now_us = sock.now.as_us();
        self.round_start_us = now_us;
        self.last_ack_us = now_us;
        self.end_seq = sock.snd_nxt;
        self.curr_rtt_us = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `hystart_update`: feed one RTT sample (µs, ≥ 1) taken in slow start before any
    /// exit. Returns the detector that fired, if one did; the caller records it and sets
    /// ssthresh.
    pub(super) fn on_rtt_sample(
        &mut self,
        sock: &Sock,
        cfg: &CubicConfig,
        delay_min_us: u32,
        delay_us: u32,
    ) -> Option<HystartExit> {
        // Rounds are tracked at any cwnd, so the first round above the low window starts
        // on a round boundary (Linux's January 2025 fix; before it, this check came first).
        if sock.snd_una > self.end_seq {
            self.start_round(sock);
        }
        if sock.cwnd < cfg.hystart_low_window {
            return None;
        }
        let mut exit = None;

        if cfg.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now_us = sock.now.as_us();
            if now_us.saturating_sub(self.last_ack_us) <= u64::from(cfg.hystart_ack_delta_us) {
                self.last_ack_us = now_us;
                let mut threshold_us = u64::from(delay_min_us) + ack_delay_us(sock);
                // Unpaced sockets keep HyStart's original delay_min / 2.
                if sock.pacing_status == PacingStatus::None {
                    threshold_us >>= 1;
                }
                if now_us.saturating_sub(self.round_start_us) > threshold_us {
                    exit = Some(HystartExit::AckTrain);
                }
            }
        }

        if cfg.hystart_detect & HYSTART_DELAY != 0 {
            // Min over every sample of the round (Linux ≥ 5.8), tested from the ninth.
            self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            if self.sample_cnt < MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let margin_us = (delay_min_us >> 3).clamp(DELAY_THRESH_MIN_US, DELAY_THRESH_MAX_US);
                if u64::from(self.curr_rtt_us) > u64::from(delay_min_us) + u64::from(margin_us) {
                    exit = exit.or(Some(HystartExit::Delay));
                }
            }
        }
        exit
    }
}

/// `hystart_ack_delay`: time for 4 GSO packets at the pacing rate, at most 1 ms — the
/// ACK-train cushion for pacing and ACK aggregation. Zero before a pacing rate is set.
fn ack_delay_us(sock: &Sock) -> u64 {
    if sock.pacing_rate == 0 {
        return 0;
    }
    (GSO_MAX_SIZE * 4 * US_PER_S / sock.pacing_rate).min(ACK_DELAY_MAX_US)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Time;

    #[test]
    fn ack_delay_cushion_is_four_gso_packets_capped_at_one_ms() {
        let mut s = Sock::new(1448, Time::ZERO);
        assert_eq!(ack_delay_us(&s), 0);
        // 4 · 65536 B at 1 GB/s = 262 µs.
        s.pacing_rate = 1_000_000_000;
        assert_eq!(ack_delay_us(&s), 262);
        // At 12.5 MB/s (100 Mbit/s) it would be 21 ms: capped at 1 ms.
        s.pacing_rate = 12_500_000;
        assert_eq!(ack_delay_us(&s), 1_000);
    }
}
