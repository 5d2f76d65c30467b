//! The base station's downlink scheduling gate: a UE is served only at some TTIs, so
//! packets that have crossed the radio link are delivered in bursts at those TTIs.
//!
//! Sources: César (see `cellular/mod.rs`) §II-A ("the BS schedules
//! resources for multiple UEs every transmission time interval (typically 1 ms)"),
//! §III-A ("a UE may not receive downlink resources consistently, but rather in
//! bursts"), §IV-B ("if a BS allocates downlink resources to a UE in a bursty manner every
//! 10 ms, the end-time difference will be 10 ms"; a TDD uplink–downlink switch time of
//! 2.5 or 5 ms sets the pattern). TTI lengths: LTE 1 ms subframes (3GPP TS 36.211 §4.1),
//! NR 0.5 ms slots at 30 kHz subcarrier spacing (TS 38.211 v18.3.0 §4.3.2).
//!
//! Model: TTI `n` spans `[n × tti, (n + 1) × tti)`. The UE is served at the TTIs with
//! `n mod dl_every_ttis = dl_offset_ttis` that lie wholly in downlink time (TDD). A
//! packet that leaves the radio link at `a` is delivered at the start of the first served
//! TTI at or after `a` (every 4 TTIs, offset 0):
//!
//! ```text
//!  TTI        0    1    2    3    4    5    6    7    8
//!  served     *                   *                   *
//!  arrivals     a  b      c d                     e
//!  delivered                      abcd                e
//! ```
//!
//! The gate holds, never drops or reorders, so over any long span it delivers what the
//! link delivers (the link's capacity is kept); it only moves each delivery to a burst
//! instant. With `dl_every_ttis = 1`, no TDD and whole-millisecond departures (a
//! Mahimahi trace link) on a 1 ms TTI, it changes nothing.
//!
//! Differences from the paper and from a real scheduler:
//! 1. The served TTIs are a fixed pattern; the paper's channel- and load-dependent
//!    allocation (sets skipped or shrunk) is not modelled. The amount served per burst is
//!    whatever the link released since the previous burst (the link sets the capacity).
//! 2. Delivery is at the start of the served TTI; decoding time at the UE is part of the
//!    propagation delay.

use cellcc_units::{Dur, Time};

use super::{Occasions, OccasionsError, TddConfig};
use crate::params::{positive_dur_ms, ParamError};
use crate::stage::{held_stage_methods, HeldPackets, Stage};

/// Downlink gate parameters. Defaults: LTE, 1 ms TTI, served every TTI, FDD.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DownlinkGateConfig {
    /// TTI (slot) length: 1 ms in LTE, 0.5 ms in NR at 30 kHz. Default 1 ms.
    pub tti_ms: f64,
    /// The UE is served every this many TTIs (≥ 1). Default 1.
    pub dl_every_ttis: u32,
    /// Which TTI of each group is served (below `dl_every_ttis`). Default 0.
    pub dl_offset_ttis: u32,
    /// TDD pattern: only TTIs wholly in downlink time are served. Default none (FDD).
    pub tdd: Option<TddConfig>,
}

impl Default for DownlinkGateConfig {
    fn default() -> Self {
        DownlinkGateConfig {
            tti_ms: 1.0,
            dl_every_ttis: 1,
            dl_offset_ttis: 0,
            tdd: None,
        }
    }
}

impl DownlinkGateConfig {
    /// Checks every parameter; the error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.served().map(|_| ())
    }

    fn served(&self) -> Result<(Occasions, Dur), ParamError> {
        let tti = positive_dur_ms("tti_ms", self.tti_ms)?;
        if self.dl_every_ttis == 0 {
            return Err(ParamError::new(
                "dl_every_ttis",
                "must be at least 1 (1 = served every TTI)",
            ));
        }
        if self.dl_offset_ttis >= self.dl_every_ttis {
            return Err(ParamError::new(
                "dl_offset_ttis",
                format!(
                    "must be below dl_every_ttis = {}, got {}",
                    self.dl_every_ttis, self.dl_offset_ttis
                ),
            ));
        }
        let step = tti * u64::from(self.dl_every_ttis);
        let offset = tti * u64::from(self.dl_offset_ttis);
        let tdd = match &self.tdd {
            Some(t) => Some(t.pattern().map_err(|e| e.within("tdd"))?),
            None => None,
        };
        let occasions = Occasions::new(step, offset, tdd.as_ref(), |p, t| {
            p.is_downlink_slot(t, tti)
        })
        .map_err(|e| match e {
            OccasionsError::NoneAllowed => ParamError::new(
                "dl_offset_ttis",
                "no served TTI lies wholly in TDD downlink time; change dl_every_ttis, \
                 dl_offset_ttis or tdd.dl_ms",
            ),
            OccasionsError::TooLong => ParamError::new(
                "tti_ms",
                "the served-TTI period and the TDD period have no short common multiple; \
                 use a TTI that divides the TDD period",
            ),
        })?;
        Ok((occasions, tti))
    }
}

/// Counters since the gate was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BurstStats {
    /// Packets that entered the gate.
    pub packets: u64,
    /// IP bytes of those packets.
    pub ip_bytes: u64,
    /// Served TTIs that delivered at least one packet.
    pub bursts: u64,
}

/// The downlink burst / TDD gate, a [`Stage`]. See the module docs.
#[derive(Clone, Debug)]
pub struct DownlinkGate<T> {
    served: Occasions,
    /// Release times non-decreasing (see `push`).
    held: HeldPackets<T>,
    last_burst: Option<Time>,
    stats: BurstStats,
}

impl<T> DownlinkGate<T> {
    /// Builds the gate; the error names the bad key.
    pub fn new(cfg: &DownlinkGateConfig) -> Result<Self, ParamError> {
        let (served, _) = cfg.served()?;
        Ok(DownlinkGate {
            served,
            held: HeldPackets::new(),
            last_burst: None,
            stats: BurstStats::default(),
        })
    }

    /// Counters since the gate was built.
    pub fn stats(&self) -> &BurstStats {
        &self.stats
    }
}

impl<T> Stage<T> for DownlinkGate<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let release = self.served.at_or_after(now);
        if self.last_burst != Some(release) {
            self.last_burst = Some(release);
            self.stats.bursts += 1;
        }
        self.stats.packets += 1;
        self.stats.ip_bytes += u64::from(ip_len);
        self.held.push(release, (item, ip_len));
    }

    held_stage_methods!();
}
