//! Named cellular scheduling presets and the `[scheduling]` scenario table.
//!
//! A scenario names a preset and may override any of its parameters:
//!
//! ```toml
//! [scheduling]
//! preset = "lte-fdd-sr5"
//! sr_period_ms = 10.0          # optional overrides, same names as the preset fields
//! tdd = { period_ms = 2.5, dl_ms = 2.0 }
//! ```
//!
//! [`SchedulingConfig::resolve`] expands the preset, applies the overrides, validates,
//! and returns the uplink and downlink gate configurations (or an error naming the key).
//!
//! Where the values come from:
//! * LTE TTI 1 ms: one subframe (3GPP TS 36.211 §4.1).
//! * LTE SR periodicity 5, 10, 20, 40, 80 ms: `sr-ConfigIndex`, TS 36.213 Table
//!   10.1.5-1 (1 and 2 ms also exist); César §II-A quotes the same set.
//! * LTE grant 4 ms after the SR and PUSCH 4 ms after the grant: the usual uplink latency
//!   breakdown of 3GPP TR 36.881 (LTE latency reduction study: 3 ms eNB processing + 1 ms
//!   PDCCH after the SR); PUSCH in subframe n + 4 for a grant in subframe n is TS 36.213
//!   §8.0 (FDD).
//! * NR slot 0.5 ms at 30 kHz subcarrier spacing: TS 38.211 v18.3.0 §4.3.2.
//! * NR SR periodicity 0.5–5 ms: `SchedulingRequestResourceConfig.periodicityAndOffset`
//!   (TS 38.331) in slots; César §V-B measured 5 ms on all three carriers' 5G.
//! * NR grant → PUSCH offset K2 (TS 38.214 v18.3.0 §6.1.2.1) and SR → grant processing: 2
//!   slots (1 ms) each, a typical configuration chosen here, not a measured value. On the
//!   FDD preset the SR → grant time is 1 slot: with a grant delay equal to the SR period,
//!   data arriving just after a grant would always wait a full period for the next
//!   occasion, and the pattern would become 2 ms instead of the SR period.
//! * NR TDD 2.5 ms (DDDSU: 2 ms downlink + special, 0.5 ms uplink) and 5 ms
//!   (DDDDDDDSUU: 4 ms + 1 ms): `dl-UL-TransmissionPeriodicity` (TS 38.331); César §V-B
//!   found a 2.5 ms uplink–downlink switch time on all three carriers' 5G.
//! * César §V-B: LTE on one carrier used a 20 ms SR period yet showed an 8 ms ACK pattern,
//!   which the authors attribute to a vendor scheduling rule (`lte-sr20-burst8`, modelled
//!   as downlink bursts and proactive uplink grants every 8 ms, the 20 ms SR as fallback);
//!   5G showed a 5 ms pattern where the SR period dominates (`nr-tdd-2.5ms-sr5`) and a
//!   2.5 ms one where the TDD switch dominates (`nr-tdd-2.5ms`, modelled as a grant in
//!   every uplink period without an SR). These two mappings are this project's reading
//!   of the paper, not parameters it reports.

use super::{DownlinkGate, DownlinkGateConfig, TddConfig, UplinkGrant, UplinkGrantConfig};
use crate::params::ParamError;

/// A named set of scheduling parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Preset {
    /// The name a scenario gives as `preset` (`lte-fdd-sr5`).
    pub name: &'static str,
    /// One line, for `cellcc` to list the presets.
    pub description: &'static str,
    /// TTI (slot) length, ms: 1 in LTE, 0.5 in NR at 30 kHz.
    pub tti_ms: f64,
    /// Scheduling-request periodicity, ms.
    pub sr_period_ms: f64,
    /// First SR occasion within the period, ms.
    pub sr_offset_ms: f64,
    /// From an SR to the grant answering it, ms.
    pub grant_delay_ms: f64,
    /// From a grant to the uplink transmission it allows, ms.
    pub ul_tx_delay_ms: f64,
    /// Grants sent every this many ms without an SR (pre-scheduling); `None`: none.
    pub proactive_grant_period_ms: Option<f64>,
    /// The downlink serves the UE every this many TTIs.
    pub dl_every_ttis: u32,
    /// Which TTI of each group of `dl_every_ttis` is served.
    pub dl_offset_ttis: u32,
    /// TDD uplink/downlink pattern; `None` for FDD.
    pub tdd: Option<TddConfig>,
}

/// LTE FDD with SR period `sr`: 1 ms TTI, grant 4 ms after the SR, PUSCH 4 ms after the
/// grant, served every TTI.
const fn lte_fdd(name: &'static str, description: &'static str, sr: f64) -> Preset {
    Preset {
        name,
        description,
        tti_ms: 1.0,
        sr_period_ms: sr,
        sr_offset_ms: 0.0,
        grant_delay_ms: 4.0,
        ul_tx_delay_ms: 4.0,
        proactive_grant_period_ms: None,
        dl_every_ttis: 1,
        dl_offset_ttis: 0,
        tdd: None,
    }
}

/// NR DDDSU at 0.5 ms slots.
const NR_TDD_2_5: TddConfig = TddConfig {
    period_ms: 2.5,
    dl_ms: 2.0,
};

/// NR TDD with SR every 5 ms in the first uplink slot, grant and K2 of 2 slots each.
const fn nr_tdd(
    name: &'static str,
    description: &'static str,
    tdd: TddConfig,
    proactive_grant_period_ms: Option<f64>,
) -> Preset {
    Preset {
        name,
        description,
        tti_ms: 0.5,
        sr_period_ms: 5.0,
        sr_offset_ms: tdd.dl_ms,
        grant_delay_ms: 1.0,
        ul_tx_delay_ms: 1.0,
        proactive_grant_period_ms,
        dl_every_ttis: 1,
        dl_offset_ttis: 0,
        tdd: Some(tdd),
    }
}

/// Every preset, in the order `cellcc` lists them.
pub const PRESETS: &[Preset] = &[
    lte_fdd("lte-fdd-sr5", "LTE FDD, SR every 5 ms, grant +4 ms, PUSCH +4 ms, served every 1 ms TTI", 5.0),
    lte_fdd("lte-fdd-sr10", "LTE FDD, SR every 10 ms, grant +4 ms, PUSCH +4 ms, served every 1 ms TTI", 10.0),
    lte_fdd("lte-fdd-sr20", "LTE FDD, SR every 20 ms, grant +4 ms, PUSCH +4 ms, served every 1 ms TTI", 20.0),
    lte_fdd("lte-fdd-sr40", "LTE FDD, SR every 40 ms, grant +4 ms, PUSCH +4 ms, served every 1 ms TTI", 40.0),
    lte_fdd("lte-fdd-sr80", "LTE FDD, SR every 80 ms, grant +4 ms, PUSCH +4 ms, served every 1 ms TTI", 80.0),
    Preset {
        dl_every_ttis: 8,
        proactive_grant_period_ms: Some(8.0),
        ..lte_fdd(
            "lte-sr20-burst8",
            "LTE FDD, downlink bursts and uplink grants every 8 ms (8 TTIs), SR every 20 ms as fallback",
            20.0,
        )
    },
    Preset {
        name: "nr-fdd-sr1",
        description: "NR FDD, 0.5 ms slots, SR every 1 ms, grant +0.5 ms, PUSCH +1 ms",
        tti_ms: 0.5,
        sr_period_ms: 1.0,
        sr_offset_ms: 0.0,
        grant_delay_ms: 0.5,
        ul_tx_delay_ms: 1.0,
        proactive_grant_period_ms: None,
        dl_every_ttis: 1,
        dl_offset_ttis: 0,
        tdd: None,
    },
    nr_tdd(
        "nr-tdd-2.5ms",
        "NR TDD DDDSU (2.5 ms), 0.5 ms slots, a grant every 2.5 ms without SR (switch-dominated)",
        NR_TDD_2_5,
        Some(2.5),
    ),
    nr_tdd(
        "nr-tdd-2.5ms-sr5",
        "NR TDD DDDSU (2.5 ms), 0.5 ms slots, SR every 5 ms (SR-dominated)",
        NR_TDD_2_5,
        None,
    ),
    nr_tdd(
        "nr-tdd-5ms",
        "NR TDD DDDDDDDSUU (5 ms), 0.5 ms slots, SR every 5 ms",
        TddConfig {
            period_ms: 5.0,
            dl_ms: 4.0,
        },
        None,
    ),
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Overrides of a preset's TDD pattern; a missing key keeps the preset's value.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TddOverride {
    /// Replaces the preset's TDD period, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// Replaces the preset's downlink time per period, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_ms: Option<f64>,
}

/// The `[scheduling]` table: a preset plus optional overrides of each of its
/// parameters (see [`Preset`] for their meaning, [`UplinkGrantConfig`] and
/// [`DownlinkGateConfig`] for their checks). A preset's TDD pattern cannot be removed;
/// choose an FDD preset instead. `proactive_grant_period_ms = 0` removes proactive
/// grants.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulingConfig {
    /// Name of the preset to start from (see [`PRESETS`]).
    pub preset: String,
    /// Overrides [`Preset::tti_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tti_ms: Option<f64>,
    /// Overrides [`Preset::sr_period_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sr_period_ms: Option<f64>,
    /// Overrides [`Preset::sr_offset_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sr_offset_ms: Option<f64>,
    /// Overrides [`Preset::grant_delay_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_delay_ms: Option<f64>,
    /// Overrides [`Preset::ul_tx_delay_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_tx_delay_ms: Option<f64>,
    /// Overrides [`Preset::proactive_grant_period_ms`]; 0 removes proactive grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactive_grant_period_ms: Option<f64>,
    /// Overrides [`Preset::dl_every_ttis`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_every_ttis: Option<u32>,
    /// Overrides [`Preset::dl_offset_ttis`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_offset_ttis: Option<u32>,
    /// Overrides the preset's TDD pattern key by key; on an FDD preset, adds one (both keys
    /// required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tdd: Option<TddOverride>,
}

/// A validated `[scheduling]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedScheduling {
    /// The preset the table named.
    pub preset: &'static Preset,
    /// The uplink grant gate's parameters, overrides applied.
    pub uplink: UplinkGrantConfig,
    /// The downlink gate's parameters, overrides applied.
    pub downlink: DownlinkGateConfig,
}

impl ResolvedScheduling {
    /// The uplink grant gate (after the uplink link, before the uplink delay).
    pub fn uplink_gate<T>(&self) -> UplinkGrant<T> {
        UplinkGrant::new(&self.uplink).expect("validated by SchedulingConfig::resolve")
    }

    /// The downlink gate (after the downlink radio link).
    pub fn downlink_gate<T>(&self) -> DownlinkGate<T> {
        DownlinkGate::new(&self.downlink).expect("validated by SchedulingConfig::resolve")
    }

    /// Every parameter in effect, as a `[scheduling]` table with all overrides filled in
    /// (for run artifacts: the parameters behind a preset name stay visible).
    pub fn expanded(&self) -> SchedulingConfig {
        SchedulingConfig {
            preset: self.preset.name.to_string(),
            tti_ms: Some(self.downlink.tti_ms),
            sr_period_ms: Some(self.uplink.sr_period_ms),
            sr_offset_ms: Some(self.uplink.sr_offset_ms),
            grant_delay_ms: Some(self.uplink.grant_delay_ms),
            ul_tx_delay_ms: Some(self.uplink.ul_tx_delay_ms),
            proactive_grant_period_ms: Some(self.uplink.proactive_grant_period_ms.unwrap_or(0.0)),
            dl_every_ttis: Some(self.downlink.dl_every_ttis),
            dl_offset_ttis: Some(self.downlink.dl_offset_ttis),
            tdd: self.downlink.tdd.map(|t| TddOverride {
                period_ms: Some(t.period_ms),
                dl_ms: Some(t.dl_ms),
            }),
        }
    }
}

impl SchedulingConfig {
    /// Expands the preset, applies the overrides and validates both gates.
    pub fn resolve(&self) -> Result<ResolvedScheduling, ParamError> {
        let preset = preset(&self.preset).ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            ParamError::new(
                "preset",
                format!(
                    "unknown preset `{}`; valid presets: {}",
                    self.preset,
                    names.join(", ")
                ),
            )
        })?;
        let tdd = match (&self.tdd, preset.tdd) {
            (None, tdd) => tdd,
            (Some(o), base) => {
                let missing = |key: &str| {
                    ParamError::new(
                        format!("tdd.{key}"),
                        format!(
                            "required: preset `{}` has no TDD pattern to take it from",
                            preset.name
                        ),
                    )
                };
                Some(TddConfig {
                    period_ms: o
                        .period_ms
                        .or(base.map(|b| b.period_ms))
                        .ok_or_else(|| missing("period_ms"))?,
                    dl_ms: o
                        .dl_ms
                        .or(base.map(|b| b.dl_ms))
                        .ok_or_else(|| missing("dl_ms"))?,
                })
            }
        };
        let proactive = self
            .proactive_grant_period_ms
            .or(preset.proactive_grant_period_ms)
            .filter(|&ms| ms != 0.0);
        let uplink = UplinkGrantConfig {
            sr_period_ms: self.sr_period_ms.unwrap_or(preset.sr_period_ms),
            sr_offset_ms: self.sr_offset_ms.unwrap_or(preset.sr_offset_ms),
            grant_delay_ms: self.grant_delay_ms.unwrap_or(preset.grant_delay_ms),
            ul_tx_delay_ms: self.ul_tx_delay_ms.unwrap_or(preset.ul_tx_delay_ms),
            proactive_grant_period_ms: proactive,
            tdd,
        };
        let downlink = DownlinkGateConfig {
            tti_ms: self.tti_ms.unwrap_or(preset.tti_ms),
            dl_every_ttis: self.dl_every_ttis.unwrap_or(preset.dl_every_ttis),
            dl_offset_ttis: self.dl_offset_ttis.unwrap_or(preset.dl_offset_ttis),
            tdd,
        };
        // TDD errors name `tdd.*` in both; check the uplink first (SR placement errors
        // are the likelier mistake when a TDD pattern is overridden).
        uplink.validate()?;
        downlink.validate()?;
        Ok(ResolvedScheduling {
            preset,
            uplink,
            downlink,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::test_value::{from, V};

    #[test]
    fn every_preset_resolves_and_names_are_unique() {
        for (i, p) in PRESETS.iter().enumerate() {
            let cfg = SchedulingConfig {
                preset: p.name.to_string(),
                ..SchedulingConfig::default()
            };
            let r = cfg.resolve().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(r.preset.name, p.name);
            // Expanding and resolving again gives the same gates.
            let again = r.expanded().resolve().unwrap();
            assert_eq!(again.uplink, r.uplink, "{}", p.name);
            assert_eq!(again.downlink, r.downlink, "{}", p.name);
            assert!(PRESETS[..i].iter().all(|q| q.name != p.name));
            assert!(!p.description.is_empty() && !p.description.contains('\n'));
        }
    }

    #[test]
    fn the_table_spelling() {
        let cfg: SchedulingConfig = from(V::M(vec![
            ("preset", V::S("nr-tdd-2.5ms")),
            ("sr_period_ms", V::F(2.5)),
            ("dl_every_ttis", V::I(2)),
            ("tdd", V::M(vec![("dl_ms", V::F(1.5))])),
        ]))
        .unwrap();
        let r = cfg.resolve().unwrap();
        assert_eq!(r.uplink.sr_period_ms, 2.5);
        assert_eq!(r.downlink.dl_every_ttis, 2);
        assert_eq!(
            r.uplink.tdd,
            Some(TddConfig {
                period_ms: 2.5,
                dl_ms: 1.5
            })
        );
        assert_eq!(r.uplink.tdd, r.downlink.tdd);
        let e = from::<SchedulingConfig>(V::M(vec![
            ("preset", V::S("lte-fdd-sr5")),
            ("sr_period", V::F(5.0)),
        ]))
        .unwrap_err();
        assert!(e.contains("unknown field `sr_period`"), "{e}");
        let e = from::<SchedulingConfig>(V::M(vec![
            ("preset", V::S("lte-fdd-sr5")),
            ("tdd", V::M(vec![("dl", V::F(1.0))])),
        ]))
        .unwrap_err();
        assert!(e.contains("unknown field `dl`"), "{e}");
    }
}
