//! Link-layer retransmission delay (HARQ): a packet whose radio transmission fails is
//! sent again one HARQ round trip later, so it arrives late instead of being lost.
//!
//! Sources: the TCP-over-LTE study shared with this project (§2: radio retransmissions
//! increase delay and degrade goodput; §4: HARQ makes the capacity vary); 3GPP TS 36.213
//! (Release 15) §7.3 and §8.3: in LTE FDD the HARQ feedback for subframe n comes in n + 4
//! and a retransmission follows at n + 8, so each retransmission adds 8 ms (8 HARQ
//! processes); TS 36.321 §5.3.2.1 / §5.4.2.1: at most `maxHARQ-Tx` transmissions, 4 in
//! common configurations (3 retransmissions). Link adaptation aims at about 10 % block
//! error rate on the first transmission.
//!
//! Model, per packet, independently: each transmission fails with probability `bler`;
//! the packet needs `k` retransmissions, the number of failures before the first success,
//! capped at `max_retx` (after which it is delivered anyway: the RLC recovery of a HARQ
//! failure is not modelled). So `P(k = j) = bler^j × (1 − bler)` for `j < max_retx`,
//! `P(k = max_retx) = bler^max_retx`, and the mean is `Σ_{j=1..max_retx} bler^j`. The
//! packet is delayed by `k × rtt_ms`:
//!
//! ```text
//!   in_order = true  (RLC AM / UM reordering, the default):
//!       release_i = max(release_{i-1}, arrival_i + k_i × rtt)   later packets wait
//!   in_order = false (no reordering at the receiver):
//!       release_i = arrival_i + k_i × rtt                        packets can overtake
//! ```
//!
//! Differences from a real HARQ entity: retransmissions do not consume link capacity
//! (the link stage before this one already charged the packet once); the packet is the
//! unit of retransmission (a transport block may hold several); the RLC reordering timer
//! (`t-Reordering`) never expires early.

use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;

use crate::loss::BernoulliLoss;
use crate::params::{positive_dur_ms, probability, ParamError};
use crate::stage::{held_stage_methods, HeldPackets, Stage};

/// Most retransmissions allowed; 3GPP's `maxHARQ-Tx` goes up to 28 transmissions.
const MAX_RETX_LIMIT: u32 = 28;

/// HARQ parameters: `harq = { bler = 0.1, max_retx = 3, rtt_ms = 8.0, in_order = true }`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HarqConfig {
    /// Probability that one transmission fails. Default 0.1 (the usual first-transmission
    /// target of link adaptation).
    pub bler: f64,
    /// Most retransmissions of one packet. Default 3 (4 transmissions).
    pub max_retx: u32,
    /// Delay per retransmission. Default 8 ms (LTE FDD).
    pub rtt_ms: f64,
    /// Deliver in arrival order (later packets wait behind a retransmitted one). Default
    /// true.
    pub in_order: bool,
}

impl Default for HarqConfig {
    fn default() -> Self {
        HarqConfig {
            bler: 0.1,
            max_retx: 3,
            rtt_ms: 8.0,
            in_order: true,
        }
    }
}

impl HarqConfig {
    /// Check `bler` is a probability, `rtt_ms` a positive duration and `max_retx` at most 28;
    /// the error names the field.
    pub fn validate(&self) -> Result<(), ParamError> {
        probability("bler", self.bler)?;
        positive_dur_ms("rtt_ms", self.rtt_ms)?;
        if self.max_retx > MAX_RETX_LIMIT {
            return Err(ParamError::new(
                "max_retx",
                format!("must be at most {MAX_RETX_LIMIT}, got {}", self.max_retx),
            ));
        }
        Ok(())
    }

    /// Mean retransmissions per packet, `Σ_{j=1..max_retx} bler^j`.
    pub fn mean_retx(&self) -> f64 {
        (1..=self.max_retx).map(|j| self.bler.powi(j as i32)).sum()
    }
}

/// Counters since the stage was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HarqStats {
    /// Packets that entered the stage.
    pub packets: u64,
    /// Retransmissions drawn over all packets.
    pub retransmissions: u64,
    /// Packets that used every retransmission.
    pub at_max_retx: u64,
}

/// The HARQ delay stage. See the module docs.
#[derive(Clone, Debug)]
pub struct Harq<T> {
    config: HarqConfig,
    fails: BernoulliLoss,
    rtt: Dur,
    rng: ChaCha8Rng,
    last_release: Time,
    /// Release order, ties in arrival order; out of arrival order unless `in_order`.
    held: HeldPackets<T>,
    stats: HarqStats,
}

impl<T> Harq<T> {
    /// A HARQ stage drawing from `rng` (give each stage its own stream).
    pub fn new(config: HarqConfig, rng: ChaCha8Rng) -> Result<Self, ParamError> {
        config.validate()?;
        Ok(Harq {
            fails: BernoulliLoss::new(config.bler),
            rtt: positive_dur_ms("rtt_ms", config.rtt_ms)?,
            config,
            rng,
            last_release: Time::ZERO,
            held: HeldPackets::new(),
            stats: HarqStats::default(),
        })
    }

    /// Counters since the stage was built.
    pub fn stats(&self) -> &HarqStats {
        &self.stats
    }

    /// Retransmissions the next packet needs: failures before the first success, at most
    /// `max_retx`. One draw per transmission attempt made.
    fn retransmissions(&mut self) -> u32 {
        let mut k = 0;
        while k < self.config.max_retx && self.fails.drops(&mut self.rng) {
            k += 1;
        }
        k
    }
}

impl<T> Stage<T> for Harq<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let k = self.retransmissions();
        self.stats.packets += 1;
        self.stats.retransmissions += u64::from(k);
        if k == self.config.max_retx && k > 0 {
            self.stats.at_max_retx += 1;
        }
        let own = now.saturating_add(self.rtt * u64::from(k));
        let release = if self.config.in_order {
            own.max(self.last_release)
        } else {
            own
        };
        self.last_release = self.last_release.max(release);
        self.held.push(release, (item, ip_len));
    }

    held_stage_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::test_value::{from, V};

    #[test]
    fn the_table_spelling_and_defaults() {
        let c: HarqConfig =
            from(V::M(vec![("bler", V::F(0.2)), ("in_order", V::B(false))])).unwrap();
        assert_eq!(
            c,
            HarqConfig {
                bler: 0.2,
                in_order: false,
                ..HarqConfig::default()
            }
        );
        assert_eq!((c.max_retx, c.rtt_ms), (3, 8.0));
        let e = from::<HarqConfig>(V::M(vec![("retx", V::I(2))])).unwrap_err();
        assert!(e.contains("unknown field `retx`"), "{e}");
    }
}
