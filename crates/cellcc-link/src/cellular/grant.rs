//! The UE's uplink scheduling gate: packets (TCP ACKs) wait at the UE until an uplink
//! grant, and every packet waiting when a grant arrives is sent in the slot it grants.
//!
//! Sources: César (see `cellular/mod.rs`) §II-A ("a UE sends a scheduling request (SR) to
//! the BS to obtain the uplink scheduling grant"; LTE SR periodicity 5–80 ms), §III-A
//! ("the UE accumulates TCP ACKs and sends them in a batch when the uplink resource is
//! granted"), §IV-B and Fig. 5 (all ACKs of a set share one uplink resource). The MAC
//! procedure follows 3GPP TS 36.321 (LTE MAC, Release 15) §5.4.5 (a regular BSR is
//! triggered when data arrives while the UE's buffer is empty) and §5.4.4 (the BSR
//! triggers an SR, which stays pending, and is sent at every SR occasion, until a grant
//! accommodates the pending data); NR MAC (TS 38.321 §5.4.4–5.4.5) is the same.
//!
//! Model, per arrival at `a` (all instants are integer nanoseconds):
//!
//! ```text
//!                  arrival while the buffer is empty
//!   ┌───────┐      (regular BSR → SR pending)            ┌────────────┐
//!   │ EMPTY │ ─────────────────────────────────────────► │ SR PENDING │ ◄──┐ SR occasion s
//!   └───────┘                                            └────────────┘ ───┘ (uplink time):
//!       ▲                                                      │              send an SR;
//!       │                            a grant arrives at g      │              grant at s + G
//!       │          (answer to an SR, earlier or not, or a      │
//!       │           proactive grant): the SR is cancelled      ▼
//!       │                                               ┌────────────┐  arrivals ≤ g ride
//!       └────────────── g passes: buffer emptied ────── │  WAITING g │  along (no new BSR)
//!                       into the transport block sent   └────────────┘
//!                       at tx(g) = first uplink instant ≥ g + K
//! ```
//!
//! * SR occasions are `sr_offset + n × sr_period`, only those in uplink time under TDD.
//! * A grant answering an SR sent at `s` arrives at `s + G` (`grant_delay_ms`); the
//!   transmission it allows is `K` later (`ul_tx_delay_ms`), moved to the next uplink time
//!   under TDD. Proactive grants (`proactive_grant_period_ms`: the base station
//!   pre-schedules the UE without waiting for an SR) arrive at every multiple of their
//!   period.
//! * An SR stays pending from the trigger until the first grant at or after it, and is
//!   sent at every occasion before that grant; each SR sent yields a grant even if the
//!   buffer is empty by then (the base station cannot know), and such a grant carries the
//!   packets waiting at its time.
//! * A grant carries every packet that arrived at or before it (no size limit); later
//!   arrivals wait for a later grant. Release order is arrival order.
//!
//! For a steady ACK stream this releases a batch at every SR occasion (plus G + K), so
//! the gaps between releases are 0 inside a batch and the SR period between batches:
//! the ACK-gap histogram and the RTT lines of César Fig. 3 and Fig. 6. "Steady" means an
//! ACK in every window `(g, s']` between a grant `g = s + G` and the next occasion `s'`:
//! an ACK after `s'` waits for the occasion after, so the batch after `g` is two periods
//! later. When `G` is close to the SR period the window is short (1 ms on `lte-fdd-sr5`),
//! and a stream with a longer, regular spacing locks onto every other occasion: one ACK
//! every 2 ms (every second 1500 B packet of a 12 Mbit/s link) gives batches every 10 ms
//! on `lte-fdd-sr5`, one every 1 ms gives 5 ms. The gaps then depend on the receiver's
//! ACK policy, not only on the SR period.
//!
//! Differences from the paper and the standard:
//! 1. The paper describes the mechanism only; timing values come from the presets
//!    (`presets.rs`), each with its source.
//! 2. The transport block is filled with what is waiting when the grant arrives, not
//!    when the UE builds it (a few hundred µs before `tx`); grants have no size limit.
//! 3. No sr-ProhibitTimer, no SR transmission limit (dsr-TransMax) and no random access
//!    fallback; the PDCCH carrying a grant is not restricted to downlink time.
//! 4. Uplink transmissions are instantaneous at `tx(g)`; HARQ retransmission of the
//!    uplink block is left to the [`crate::Harq`] stage.

use std::collections::VecDeque;

use cellcc_units::{Dur, Time};

use super::{offset_below, Occasions, OccasionsError, TddConfig, TddPattern};
use crate::params::{dur_ms, positive_dur_ms, ParamError};
use crate::stage::{held_stage_methods, HeldPackets, Stage};

/// Uplink grant gate parameters. Defaults: LTE FDD with a 5 ms SR period (the
/// `lte-fdd-sr5` preset).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UplinkGrantConfig {
    /// SR periodicity. Default 5 ms.
    pub sr_period_ms: f64,
    /// First SR occasion, below `sr_period_ms`. Default 0.
    pub sr_offset_ms: f64,
    /// From an SR to the grant answering it. Default 4 ms.
    pub grant_delay_ms: f64,
    /// From a grant to the uplink transmission it allows. Default 4 ms.
    pub ul_tx_delay_ms: f64,
    /// Grants sent every period without an SR (pre-scheduling); `None` or 0: none.
    /// Default none.
    pub proactive_grant_period_ms: Option<f64>,
    /// TDD pattern: SR occasions and transmissions only in uplink time. Default none
    /// (FDD).
    pub tdd: Option<TddConfig>,
}

impl Default for UplinkGrantConfig {
    fn default() -> Self {
        UplinkGrantConfig {
            sr_period_ms: 5.0,
            sr_offset_ms: 0.0,
            grant_delay_ms: 4.0,
            ul_tx_delay_ms: 4.0,
            proactive_grant_period_ms: None,
            tdd: None,
        }
    }
}

impl UplinkGrantConfig {
    /// Checks every parameter; the error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        Schedule::new(self).map(|_| ())
    }
}

/// [`UplinkGrantConfig`] in nanoseconds, with its occasion tables.
#[derive(Clone, Debug)]
struct Schedule {
    sr_occasions: Occasions,
    proactive: Option<Occasions>,
    grant_delay: Dur,
    tx_delay: Dur,
    tdd: Option<TddPattern>,
}

impl Schedule {
    fn new(cfg: &UplinkGrantConfig) -> Result<Self, ParamError> {
        let sr_period = positive_dur_ms("sr_period_ms", cfg.sr_period_ms)?;
        let sr_offset = offset_below("sr_offset_ms", cfg.sr_offset_ms, sr_period, "sr_period_ms")?;
        let grant_delay = dur_ms("grant_delay_ms", cfg.grant_delay_ms)?;
        let tx_delay = dur_ms("ul_tx_delay_ms", cfg.ul_tx_delay_ms)?;
        let tdd = match &cfg.tdd {
            Some(t) => Some(t.pattern().map_err(|e| e.within("tdd"))?),
            None => None,
        };
        // TS 36.213 §10.1.5 / TS 38.213 §9.2.4: SRs go on uplink control resources.
        let sr_occasions =
            Occasions::new(sr_period, sr_offset, tdd.as_ref(), |p, t| p.is_uplink(t)).map_err(
                |e| match e {
                    OccasionsError::NoneAllowed => ParamError::new(
                        "sr_offset_ms",
                        "no SR occasion falls in TDD uplink time; choose sr_offset_ms and \
                 sr_period_ms so that some offset + n × period lands in [dl_ms, period_ms) \
                 of the TDD period",
                    ),
                    OccasionsError::TooLong => ParamError::new(
                        "sr_period_ms",
                        "the SR period and the TDD period have no short common multiple; use \
                 periods on a common slot grid (e.g. multiples of 0.5 ms)",
                    ),
                },
            )?;
        let proactive = match cfg.proactive_grant_period_ms {
            Some(ms) if ms != 0.0 => {
                let period = positive_dur_ms("proactive_grant_period_ms", ms)?;
                Some(
                    Occasions::new(period, Dur::ZERO, None, |_, _| true)
                        .expect("an unfiltered grid always has an instant"),
                )
            }
            _ => None,
        };
        Ok(Schedule {
            sr_occasions,
            proactive,
            grant_delay,
            tx_delay,
            tdd,
        })
    }

    /// When the transport block granted at `grant` goes out.
    fn tx_time(&self, grant: Time) -> Time {
        let tx = grant.saturating_add(self.tx_delay);
        match &self.tdd {
            Some(p) => p.uplink_at_or_after(tx),
            None => tx,
        }
    }
}

/// What the UE's uplink buffer is doing, as seen by the next arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UeBuffer {
    /// Nothing waits for a grant: the next arrival triggers a BSR and an SR.
    Empty,
    /// Packets wait for the grant at `grant`; arrivals up to then ride along.
    Waiting { grant: Time },
}

/// Counters since the gate was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GrantStats {
    /// Packets that entered the gate.
    pub packets: u64,
    /// SRs sent (redundant ones included).
    pub srs_sent: u64,
    /// Grants that carried at least one packet.
    pub grants_used: u64,
}

/// The uplink grant gate, a [`Stage`]. See the module docs.
#[derive(Clone, Debug)]
pub struct UplinkGrant<T> {
    schedule: Schedule,
    buffer: UeBuffer,
    /// Grants answering SRs already sent, increasing; those before the last arrival are
    /// pruned lazily.
    sr_grants: VecDeque<Time>,
    /// Release times non-decreasing (see `push`).
    held: HeldPackets<T>,
    stats: GrantStats,
}

impl<T> UplinkGrant<T> {
    /// Builds the gate; the error names the bad key.
    pub fn new(cfg: &UplinkGrantConfig) -> Result<Self, ParamError> {
        Ok(UplinkGrant {
            schedule: Schedule::new(cfg)?,
            buffer: UeBuffer::Empty,
            sr_grants: VecDeque::new(),
            held: HeldPackets::new(),
            stats: GrantStats::default(),
        })
    }

    /// Counters since the gate was built.
    pub fn stats(&self) -> &GrantStats {
        &self.stats
    }

    /// The grant that carries a packet arriving at `a`, sending the SRs its arrival
    /// causes. Every change of `buffer` happens here.
    fn grant_for(&mut self, a: Time) -> Time {
        if let UeBuffer::Waiting { grant } = self.buffer {
            if grant >= a {
                // TS 36.321 §5.4.5: data arriving into a non-empty buffer of the same
                // priority triggers no new BSR, so no new SR; it rides along.
                return grant;
            }
        }
        // Buffer empty: regular BSR → SR pending from `a` (TS 36.321 §5.4.5, §5.4.4).
        while self.sr_grants.front().is_some_and(|&g| g < a) {
            self.sr_grants.pop_front();
        }
        let earlier = [
            self.sr_grants.front().copied(),
            self.schedule.proactive.as_ref().map(|p| p.at_or_after(a)),
        ]
        .into_iter()
        .flatten()
        .min();
        let first_sr = self.schedule.sr_occasions.at_or_after(a);
        let grant = match earlier {
            // A grant arrives before (or at) the first SR occasion: it cancels the SR.
            Some(g) if g <= first_sr => g,
            _ => {
                // TS 36.321 §5.4.4: the pending SR is sent at every occasion until a
                // grant arrives; each SR sent is answered G later.
                let own = first_sr.saturating_add(self.schedule.grant_delay);
                let grant = earlier.map_or(own, |g| g.min(own));
                let mut s = first_sr;
                while s < grant {
                    self.sr_grants
                        .push_back(s.saturating_add(self.schedule.grant_delay));
                    self.stats.srs_sent += 1;
                    let next = self
                        .schedule
                        .sr_occasions
                        .at_or_after(s.saturating_add(Dur::from_ns(1)));
                    if next <= s {
                        break; // saturated at the end of time
                    }
                    s = next;
                }
                grant
            }
        };
        self.stats.grants_used += 1;
        self.buffer = UeBuffer::Waiting { grant };
        grant
    }
}

impl<T> Stage<T> for UplinkGrant<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let grant = self.grant_for(now);
        let release = self.schedule.tx_time(grant);
        debug_assert!(
            self.held.last_pending().is_none_or(|last| last <= release),
            "grants are non-decreasing in arrival order and tx_time is monotone"
        );
        self.held.push(release, (item, ip_len));
        self.stats.packets += 1;
    }

    held_stage_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_spelling_and_defaults() {
        use crate::params::test_value::{from, V};
        let c: UplinkGrantConfig = from(V::M(vec![
            ("sr_period_ms", V::F(10.0)),
            (
                "tdd",
                V::M(vec![("period_ms", V::F(5.0)), ("dl_ms", V::F(4.0))]),
            ),
        ]))
        .unwrap();
        assert_eq!(c.sr_period_ms, 10.0);
        assert_eq!(c.grant_delay_ms, 4.0, "defaults fill the rest");
        let e = from::<UplinkGrantConfig>(V::M(vec![("sr_ms", V::F(10.0))])).unwrap_err();
        assert!(e.contains("unknown field `sr_ms`"), "{e}");
    }

    #[test]
    fn a_grant_is_counted_once_however_many_packets_ride_it() {
        let cfg = UplinkGrantConfig {
            ul_tx_delay_ms: 0.0,
            ..UplinkGrantConfig::default()
        };
        let mut gate = UplinkGrant::new(&cfg).unwrap();
        for us in [300, 1000, 6200, 9500] {
            gate.push(Time::from_us(us), (), 52);
        }
        // 0.3, 1.0, 6.2 ride the grant at 9 ms; 9.5 needs the SR at 10 ms.
        assert_eq!(
            gate.stats(),
            &GrantStats {
                packets: 4,
                srs_sent: 2,
                grants_used: 2
            }
        );
    }
}
