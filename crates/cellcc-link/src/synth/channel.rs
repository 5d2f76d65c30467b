//! A UE driving along a straight road past a cell site: SINR per TTI from path loss,
//! correlated shadowing and Rayleigh fast fading, then CQI and transport block size.
//!
//! Sources:
//! - 3GPP TR 38.901 V16.1.0 (2019-12), Table 7.4.1-1: UMa NLOS path loss
//!   `PL' = 13.54 + 39.08·log10(d_3D) + 20·log10(f_c) − 0.6·(h_UT − 1.5)` dB (d in m, f_c
//!   in GHz), shadow fading σ_SF = 6 dB; Table 7.5-6: shadowing decorrelation distance
//!   50 m for UMa NLOS.
//! - Free-space path loss (Friis; ITU-R P.525): `20·log10(4π·d·f_c / c)`. The TCP-over-LTE
//!   mobility study (E. Atxutegi et al., shared as `papers/tcp-over-lte-study.txt`),
//!   Table 2, runs ns-3 LENA with FriisPropagationLossModel, EVA60/EVA200 fading, LTE
//!   band 7 (2.6 GHz) and 100 PRBs; §4 (III & IV) moves the UE out of/into the cell at
//!   60 and 200 km/h.
//! - M. Gudmundson, "Correlation model for shadow fading in mobile radio systems",
//!   Electronics Letters 27(23), 1991: shadowing in dB is Gauss–Markov in the distance
//!   travelled, correlation `exp(−Δx / d_corr)`.
//! - Rayleigh fading by a sum of sinusoids (Y. R. Zheng, C. Xiao, IEEE Trans.
//!   Communications 51(6), 2003; see `fading.rs`), Doppler `f_d = v·f_c / c` (W. C.
//!   Jakes, "Microwave Mobile Communications", 1974).
//! - Link budget defaults: values typical of macro-cell system simulations (46 dBm per
//!   carrier, 14 dBi site antenna gain, 9 dB UE noise figure, as in 3GPP TR 36.814
//!   Annex A), heights from TR 38.901 Table 7.4.1-1 (h_BS = 25 m, h_UT = 1.5 m); carrier
//!   2.6 GHz, 20 MHz (100 PRBs) as the LTE study's band 7 setup.
//!
//! Geometry (plan view). Sites stand every `2·cell_radius_m` beside the road, all at
//! `road_offset_m`; the UE stays served by the site at along-road position 0 and is
//! interfered with by the nearest other site:
//!
//! ```text
//!   neighbour            serving               neighbour
//!      *                    *                     *          sites
//!      |<----- 2R --------->|<------- 2R -------->|
//!      :                    : road_offset_m
//!  ====:====================:==========UE=>=======:=====    road
//!                           0          s(t)
//!   away:    s(t) = start_distance_m + v·t
//!   towards: s(t) = start_distance_m − v·t   (must stay ≥ 0 for the whole trace)
//!   pass:    s(t) = start_distance_m − v·t   (drives past the site and away again)
//! ```
//!
//! Per TTI k (t = k·TTI): `SINR = EIRP − PL(d_serv) + X_k + 10·log10(Σ_a |h_a(t)|²)
//! − 10·log10(I + N)` with `I = load · (EIRP − PL(d_neigh))` in mW,
//! `N = −174 dBm/Hz + 10·log10(B) + NF`, B the occupied bandwidth (PRBs × 12 × SCS).
//! The receive antennas are combined by maximum-ratio combining, so their fading power
//! gains add.
//!
//! Differences from the LTE study's setup (ns-3 LENA, EVA60/EVA200):
//! 1. Fading is flat (one Rayleigh process per receive antenna for the whole carrier)
//!    instead of the frequency-selective EVA tapped delay line; a wideband CQI sees the
//!    fading of the whole band, so this overstates the depth of fades for wide carriers.
//! 2. One serving site and one interfering neighbour, no handover: past `cell_radius_m`
//!    the neighbour is the stronger site, the SINR falls below the MRC gain (about 3 dB
//!    with 2 antennas) and soon to CQI 0, and the link fades out.
//! 3. Interference does not fade and is not shadowed; the scheduler share is a fluid
//!    fraction of every TTI (no per-TTI scheduling decisions, no HARQ, no BLER).
//! 4. The default path loss is TR 38.901 UMa NLOS (the `max` with the LOS formula is
//!    omitted; d_2D is clamped to ≥ 10 m, the model's lower validity limit); `free_space`
//!    gives the study's Friis model.
//! 5. Floating-point transcendental functions (cos, log10, exp) come from the platform's
//!    maths library, so the trace is reproducible on one platform; on another, a SINR
//!    within rounding of a CQI threshold could in principle pick the neighbouring CQI.

use std::f64::consts::PI;

use cellcc_units::{Dur, NS_PER_MS};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::Deserialize;

use super::fading::{normal, RayleighProcess};
use super::{invalid, lte_tables, nr_tables, SynthError};

/// Speed of light, m/s.
const SPEED_OF_LIGHT: f64 = 299_792_458.0;
/// Thermal noise density at 290 K, dBm/Hz.
const THERMAL_NOISE_DBM_PER_HZ: f64 = -174.0;
/// Lower validity limit of the UMa path loss model in d_2D (TR 38.901 Table 7.4.1-1).
const UMA_MIN_DISTANCE_M: f64 = 10.0;
/// Free-space path loss is meaningless inside the near field; clamp d_3D to this.
const FREE_SPACE_MIN_DISTANCE_M: f64 = 1.0;
/// Highest speed accepted (a high-speed train is 350 km/h).
const MAX_SPEED_KMH: f64 = 500.0;
/// Smallest scheduler share: the share is applied in parts per million.
const MIN_SCHEDULER_SHARE: f64 = 1e-6;
/// Random stream of the shadowing process.
const STREAM_SHADOWING: u64 = 1;
/// Random stream of the fading phases.
const STREAM_FADING: u64 = 2;

/// Radio access technology: which tables turn CQI into bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rat {
    /// LTE: TS 36.213 tables, 1 ms TTI, 15 kHz.
    Lte,
    /// NR: TS 38.214 §5.1.3.2, slot = 1 ms × 15 kHz / SCS.
    Nr,
}

/// Which way the UE drives along the road (see the geometry in the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Moving away from the site: s(t) = start_distance_m + v·t.
    Away,
    /// Moving towards the site, never reaching it: s(t) = start_distance_m − v·t ≥ 0.
    Towards,
    /// Driving past the site and away again: s(t) = start_distance_m − v·t, through 0.
    Pass,
}

/// Path loss model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathLoss {
    /// TR 38.901 UMa NLOS (`PL'`).
    UmaNlos,
    /// Friis free space.
    FreeSpace,
}

/// Fast fading model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fading {
    /// Rayleigh fading per receive antenna, sum of sinusoids.
    Rayleigh,
    /// No fast fading: each antenna has power gain 1.
    #[serde(rename = "none")]
    Off,
}

/// The mobility channel model. Defaults reproduce the LTE study's outward movement:
/// LTE band 7 (2.6 GHz), 20 MHz, a UE leaving the cell centre at 60 km/h.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MobilityConfig {
    /// `"lte"` (default) or `"nr"`.
    pub rat: Rat,
    /// UE speed, km/h, 0..=500. Default 60 (the study also uses 200).
    pub speed_kmh: f64,
    /// `"away"` (default), `"towards"` or `"pass"`.
    pub direction: Direction,
    /// Along-road distance from the serving site at t = 0, m. Default 50.
    pub start_distance_m: f64,
    /// Perpendicular distance from the road to every site, m. Default 20.
    pub road_offset_m: f64,
    /// Half the inter-site distance, m. Default 1000.
    pub cell_radius_m: f64,
    /// Carrier frequency, GHz, 0.5..=100. Default 2.6.
    pub carrier_ghz: f64,
    /// Channel bandwidth, MHz: LTE 1.4, 3, 5, 10, 15, 20; NR per TS 38.101-1 Table
    /// 5.3.2-1 for the subcarrier spacing. Default 20.
    pub bandwidth_mhz: f64,
    /// Subcarrier spacing, kHz: 15 (LTE, NR) or 30 (NR). Default 15.
    pub subcarrier_khz: u32,
    /// Spatial layers: 1 for LTE (single-layer TBS table), 1..=4 for NR. Default 1.
    pub layers: u32,
    /// Total transmit power per site, dBm. Default 46.
    pub tx_power_dbm: f64,
    /// Site antenna gain, dBi. Default 14.
    pub antenna_gain_dbi: f64,
    /// Site antenna height, m. Default 25.
    pub bs_height_m: f64,
    /// UE antenna height, m. Default 1.5.
    pub ue_height_m: f64,
    /// UE noise figure, dB. Default 9.
    pub noise_figure_db: f64,
    /// Fraction of full power the neighbour site transmits, 0..=1 (0: no interference).
    /// Default 1.
    pub neighbour_load: f64,
    /// `"uma_nlos"` (default) or `"free_space"`.
    pub path_loss: PathLoss,
    /// Shadowing standard deviation, dB, 0..=20. Default 6.
    pub shadowing_sigma_db: f64,
    /// Shadowing decorrelation distance, m. Default 50.
    pub shadowing_decorrelation_m: f64,
    /// `"rayleigh"` (default) or `"none"`.
    pub fading: Fading,
    /// Receive antennas combined by MRC, 1..=8. Default 2.
    pub rx_antennas: u32,
    /// Fraction of every TTI's transport block given to this UE, 0.000001..=1 (applied
    /// in parts per million). Default 1.
    pub scheduler_share: f64,
    /// Trace length, s, up to 3600. Default 60.
    pub duration_s: f64,
}

impl Default for MobilityConfig {
    fn default() -> Self {
        MobilityConfig {
            rat: Rat::Lte,
            speed_kmh: 60.0,
            direction: Direction::Away,
            start_distance_m: 50.0,
            road_offset_m: 20.0,
            cell_radius_m: 1000.0,
            carrier_ghz: 2.6,
            bandwidth_mhz: 20.0,
            subcarrier_khz: 15,
            layers: 1,
            tx_power_dbm: 46.0,
            antenna_gain_dbi: 14.0,
            bs_height_m: 25.0,
            ue_height_m: 1.5,
            noise_figure_db: 9.0,
            neighbour_load: 1.0,
            path_loss: PathLoss::UmaNlos,
            shadowing_sigma_db: 6.0,
            shadowing_decorrelation_m: 50.0,
            fading: Fading::Rayleigh,
            rx_antennas: 2,
            scheduler_share: 1.0,
            duration_s: 60.0,
        }
    }
}

fn check(
    ok: bool,
    field: &'static str,
    message: impl FnOnce() -> String,
) -> Result<(), SynthError> {
    if ok {
        Ok(())
    } else {
        Err(invalid(field, message()))
    }
}

fn check_range(
    value: f64,
    field: &'static str,
    lo: f64,
    hi: f64,
    unit: &str,
) -> Result<(), SynthError> {
    check(
        value.is_finite() && (lo..=hi).contains(&value),
        field,
        || format!("expected {lo}..={hi} {unit}, got {value}"),
    )
}

impl MobilityConfig {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), SynthError> {
        self.prepare().map(|_| ())
    }

    /// PRBs of the configured bandwidth, or an error naming `bandwidth_mhz`.
    fn prbs(&self) -> Result<u32, SynthError> {
        match self.rat {
            Rat::Lte => {
                check(self.subcarrier_khz == 15, "subcarrier_khz", || {
                    format!("LTE uses 15 kHz, got {}", self.subcarrier_khz)
                })?;
                lte_tables::prbs_for_bandwidth(self.bandwidth_mhz).ok_or_else(|| {
                    invalid(
                        "bandwidth_mhz",
                        format!(
                            "LTE channel bandwidths are 1.4, 3, 5, 10, 15 and 20 MHz, got {}",
                            self.bandwidth_mhz
                        ),
                    )
                })
            }
            Rat::Nr => {
                check(
                    matches!(self.subcarrier_khz, 15 | 30),
                    "subcarrier_khz",
                    || format!("expected 15 or 30 kHz for NR, got {}", self.subcarrier_khz),
                )?;
                nr_tables::prbs_for_bandwidth(self.bandwidth_mhz, self.subcarrier_khz).ok_or_else(
                    || {
                        invalid(
                            "bandwidth_mhz",
                            format!(
                                "no NR carrier of {} MHz at {} kHz in TS 38.101-1 Table 5.3.2-1 \
                                 (15 kHz: 5..50 MHz, 30 kHz: 5..100 MHz, in steps of 5 or 10)",
                                self.bandwidth_mhz, self.subcarrier_khz
                            ),
                        )
                    },
                )
            }
        }
    }

    /// Validates and derives everything the per-TTI loop needs.
    pub(crate) fn prepare(&self) -> Result<Prepared, SynthError> {
        check_range(self.speed_kmh, "speed_kmh", 0.0, MAX_SPEED_KMH, "km/h")?;
        check_range(self.start_distance_m, "start_distance_m", 0.0, 1e6, "m")?;
        check_range(self.road_offset_m, "road_offset_m", 0.0, 1e5, "m")?;
        check(
            self.cell_radius_m.is_finite() && self.cell_radius_m > 0.0,
            "cell_radius_m",
            || {
                format!(
                    "expected a positive distance in m, got {}",
                    self.cell_radius_m
                )
            },
        )?;
        check_range(self.carrier_ghz, "carrier_ghz", 0.5, 100.0, "GHz")?;
        let prbs = self.prbs()?;
        let max_layers = if self.rat == Rat::Lte { 1 } else { 4 };
        check((1..=max_layers).contains(&self.layers), "layers", || {
            format!(
                "expected 1..={max_layers} for {} (LTE uses the single-layer TBS table), got {}",
                if self.rat == Rat::Lte { "LTE" } else { "NR" },
                self.layers
            )
        })?;
        check_range(self.tx_power_dbm, "tx_power_dbm", -50.0, 80.0, "dBm")?;
        check_range(
            self.antenna_gain_dbi,
            "antenna_gain_dbi",
            -20.0,
            40.0,
            "dBi",
        )?;
        check_range(self.bs_height_m, "bs_height_m", 1.0, 500.0, "m")?;
        check_range(self.ue_height_m, "ue_height_m", 0.5, 100.0, "m")?;
        check_range(self.noise_figure_db, "noise_figure_db", 0.0, 30.0, "dB")?;
        check_range(self.neighbour_load, "neighbour_load", 0.0, 1.0, "")?;
        check_range(
            self.shadowing_sigma_db,
            "shadowing_sigma_db",
            0.0,
            20.0,
            "dB",
        )?;
        check(
            self.shadowing_decorrelation_m.is_finite() && self.shadowing_decorrelation_m > 0.0,
            "shadowing_decorrelation_m",
            || {
                format!(
                    "expected a positive distance in m, got {}",
                    self.shadowing_decorrelation_m
                )
            },
        )?;
        check((1..=8).contains(&self.rx_antennas), "rx_antennas", || {
            format!("expected 1..=8, got {}", self.rx_antennas)
        })?;
        check(
            self.scheduler_share.is_finite()
                && self.scheduler_share >= MIN_SCHEDULER_SHARE
                && self.scheduler_share <= 1.0,
            "scheduler_share",
            || {
                format!(
                    "expected a fraction in [{MIN_SCHEDULER_SHARE}, 1] (applied in parts per \
                     million), got {}",
                    self.scheduler_share
                )
            },
        )?;
        let duration_ms = super::duration_ms(self.duration_s)?;
        let speed_mps = self.speed_kmh / 3.6;
        if self.direction == Direction::Towards {
            let end = self.start_distance_m - speed_mps * f64::from(duration_ms) / 1e3;
            check(end >= 0.0, "direction", || {
                format!(
                    "\"towards\" reaches the site after {:.1} s, before the end of duration_s = {}; \
                     use \"pass\" to drive past it, or a shorter duration or larger start_distance_m",
                    self.start_distance_m / speed_mps,
                    self.duration_s
                )
            })?;
        }

        let (tti, tbs_by_cqi) = match self.rat {
            Rat::Lte => {
                let tbs = lte_tables::tbs_by_cqi(prbs).expect("prbs() returned a tabulated row");
                (Dur::from_ms(1), tbs.map(u64::from))
            }
            Rat::Nr => {
                let pdsch = nr_tables::Pdsch::full_slot(prbs, self.layers);
                // Slot duration 1 ms · 15 kHz / SCS (TS 38.211 §4.3.2).
                let tti = Dur::from_ns(NS_PER_MS * 15 / u64::from(self.subcarrier_khz));
                (tti, nr_tables::tbs_by_cqi(&pdsch))
            }
        };
        let occupied_hz = f64::from(prbs)
            * f64::from(lte_tables::SUBCARRIERS_PER_PRB)
            * f64::from(self.subcarrier_khz)
            * 1e3;
        let noise_dbm =
            THERMAL_NOISE_DBM_PER_HZ + 10.0 * occupied_hz.log10() + self.noise_figure_db;
        Ok(Prepared {
            config: self.clone(),
            prbs,
            tti,
            duration_ms,
            tbs_by_cqi,
            share_ppm: (self.scheduler_share * 1e6).round() as u64,
            speed_mps,
            eirp_dbm: self.tx_power_dbm + self.antenna_gain_dbi,
            noise_mw: db_to_linear(noise_dbm),
        })
    }
}

/// A validated configuration with its derived constants.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    pub config: MobilityConfig,
    pub prbs: u32,
    /// TTI (LTE subframe or NR slot).
    pub tti: Dur,
    pub duration_ms: u32,
    /// Bits per TTI for CQI 0..=15.
    pub tbs_by_cqi: [u64; 16],
    /// `scheduler_share` in parts per million.
    pub share_ppm: u64,
    pub speed_mps: f64,
    pub eirp_dbm: f64,
    pub noise_mw: f64,
}

impl Prepared {
    /// TTIs in the trace: every TTI that starts before the end.
    pub(crate) fn ttis(&self) -> u64 {
        (u64::from(self.duration_ms) * NS_PER_MS).div_ceil(self.tti.as_ns())
    }
}

fn db_to_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// What the channel gives one TTI.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TtiSample {
    /// Effective SINR after MRC, dB.
    pub sinr_db: f64,
    /// Reported CQI, 0..=15.
    pub cqi: u8,
    /// Transport block size for the whole carrier, bits (before the scheduler share).
    pub tb_bits: u64,
}

/// The per-TTI channel state: position, shadowing and fading processes.
#[derive(Clone, Debug)]
pub(crate) struct Channel {
    p: Prepared,
    shadow_rng: ChaCha8Rng,
    /// Shadowing of the serving link, dB (Gudmundson).
    shadow_db: f64,
    /// Per-TTI shadowing correlation ρ = exp(−v·TTI / d_corr).
    shadow_rho: f64,
    fading: Vec<RayleighProcess>,
    next_tti: u64,
}

impl Channel {
    pub(super) fn new(p: Prepared, seed: u64) -> Self {
        let mut shadow_rng = ChaCha8Rng::seed_from_u64(seed);
        shadow_rng.set_stream(STREAM_SHADOWING);
        let mut fading_rng = ChaCha8Rng::seed_from_u64(seed);
        fading_rng.set_stream(STREAM_FADING);
        let cfg = &p.config;
        // Doppler shift f_d = v·f_c / c (Jakes 1974).
        let doppler_hz = p.speed_mps * cfg.carrier_ghz * 1e9 / SPEED_OF_LIGHT;
        let fading = match cfg.fading {
            Fading::Rayleigh => (0..cfg.rx_antennas)
                .map(|_| RayleighProcess::new(doppler_hz, &mut fading_rng))
                .collect(),
            Fading::Off => Vec::new(),
        };
        let step_m = p.speed_mps * p.tti.as_secs_f64();
        // Gudmundson 1991: correlation exp(−Δx / d_corr) between positions Δx apart.
        let shadow_rho = (-step_m / cfg.shadowing_decorrelation_m).exp();
        let shadow_db = cfg.shadowing_sigma_db * normal(&mut shadow_rng);
        Channel {
            p,
            shadow_rng,
            shadow_db,
            shadow_rho,
            fading,
            next_tti: 0,
        }
    }

    /// Along-road position of the UE at `t_s`, m (see the geometry in the header).
    fn position_m(&self, t_s: f64) -> f64 {
        let travelled = self.p.speed_mps * t_s;
        match self.p.config.direction {
            Direction::Away => self.p.config.start_distance_m + travelled,
            Direction::Towards | Direction::Pass => self.p.config.start_distance_m - travelled,
        }
    }

    /// Along-road distance from position `s` to the nearest site other than the serving
    /// one (sites every 2R, the serving one at 0).
    fn neighbour_offset_m(&self, s: f64) -> f64 {
        let spacing = 2.0 * self.p.config.cell_radius_m;
        let mut k = (s / spacing).round();
        if k == 0.0 {
            k = if s < 0.0 { -1.0 } else { 1.0 };
        }
        (s - k * spacing).abs()
    }

    /// Path loss at plan distance `d2_m` from a site, dB.
    fn path_loss_db(&self, d2_m: f64) -> f64 {
        let cfg = &self.p.config;
        let dh = cfg.bs_height_m - cfg.ue_height_m;
        match cfg.path_loss {
            PathLoss::UmaNlos => {
                let d2 = d2_m.max(UMA_MIN_DISTANCE_M);
                let d3 = (d2 * d2 + dh * dh).sqrt();
                // TR 38.901 Table 7.4.1-1, UMa NLOS PL'.
                13.54 + 39.08 * d3.log10() + 20.0 * cfg.carrier_ghz.log10()
                    - 0.6 * (cfg.ue_height_m - 1.5)
            }
            PathLoss::FreeSpace => {
                let d3 = (d2_m * d2_m + dh * dh)
                    .sqrt()
                    .max(FREE_SPACE_MIN_DISTANCE_M);
                // Friis: 20·log10(4π·d·f / c).
                20.0 * (4.0 * PI * d3 * cfg.carrier_ghz * 1e9 / SPEED_OF_LIGHT).log10()
            }
        }
    }

    /// Advances one TTI and returns its sample.
    pub(super) fn next_sample(&mut self) -> TtiSample {
        let k = self.next_tti;
        self.next_tti += 1;
        if k > 0 {
            // Gudmundson 1991: X_k = ρ·X_{k−1} + σ·√(1 − ρ²)·z_k.
            let rho = self.shadow_rho;
            self.shadow_db = rho * self.shadow_db
                + self.p.config.shadowing_sigma_db
                    * (1.0 - rho * rho).sqrt()
                    * normal(&mut self.shadow_rng);
        }
        let t_s = (k * self.p.tti.as_ns()) as f64 / 1e9;
        let cfg = &self.p.config;
        let s = self.position_m(t_s);
        let serving_d2 = s.hypot(cfg.road_offset_m);
        let neighbour_d2 = self.neighbour_offset_m(s).hypot(cfg.road_offset_m);
        let signal_mw =
            db_to_linear(self.p.eirp_dbm - self.path_loss_db(serving_d2) + self.shadow_db);
        let interference_mw =
            cfg.neighbour_load * db_to_linear(self.p.eirp_dbm - self.path_loss_db(neighbour_d2));
        // MRC: the antennas' fading power gains add; without fading each contributes 1.
        let gain: f64 = if self.fading.is_empty() {
            f64::from(cfg.rx_antennas)
        } else {
            self.fading.iter().map(|f| f.power(t_s)).sum()
        };
        let sinr_db = 10.0 * (signal_mw * gain / (interference_mw + self.p.noise_mw)).log10();
        let cqi = lte_tables::cqi_from_sinr_db(sinr_db);
        TtiSample {
            sinr_db,
            cqi,
            tb_bits: self.p.tbs_by_cqi[usize::from(cqi)],
        }
    }
}

/// Per-TTI series of a mobility run, for analysis and plots.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelRun {
    /// TTI length (1 ms for LTE, the slot for NR).
    pub tti: Dur,
    /// Scheduled PRBs.
    pub prbs: u32,
    /// Effective SINR per TTI after MRC, dB.
    pub sinr_db: Vec<f64>,
    /// Reported CQI per TTI, 0..=15 (0: below the CQI 1 threshold).
    pub cqi: Vec<u8>,
    /// Transport block bits per TTI, before the scheduler share.
    pub tb_bits: Vec<u64>,
}

/// Runs the channel of `config` for its whole duration with `seed`.
pub fn simulate_channel(config: &MobilityConfig, seed: u64) -> Result<ChannelRun, SynthError> {
    let prepared = config.prepare()?;
    let n = prepared.ttis() as usize;
    let mut run = ChannelRun {
        tti: prepared.tti,
        prbs: prepared.prbs,
        sinr_db: Vec::with_capacity(n),
        cqi: Vec::with_capacity(n),
        tb_bits: Vec::with_capacity(n),
    };
    let mut channel = Channel::new(prepared, seed);
    for _ in 0..n {
        let sample = channel.next_sample();
        run.sinr_db.push(sample.sinr_db);
        run.cqi.push(sample.cqi);
        run.tb_bits.push(sample.tb_bits);
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interferer_is_the_nearest_other_site() {
        let channel = Channel::new(MobilityConfig::default().prepare().unwrap(), 1);
        // R = 1000 m: sites at 0, ±2000, ±4000, ...
        assert_eq!(channel.neighbour_offset_m(0.0), 2000.0);
        assert_eq!(channel.neighbour_offset_m(300.0), 1700.0);
        assert_eq!(channel.neighbour_offset_m(-300.0), 1700.0);
        assert_eq!(channel.neighbour_offset_m(2500.0), 500.0);
        assert_eq!(channel.neighbour_offset_m(3500.0), 500.0);
    }

    #[test]
    fn path_loss_worked_numbers() {
        let cfg = MobilityConfig::default();
        let channel = Channel::new(cfg.prepare().unwrap(), 1);
        // UMa NLOS at d2 = 500 m: d3 = √(500² + 23.5²) = 500.552; 13.54 + 39.08·2.69945 +
        // 20·log10 2.6 (8.29947) = 127.334 dB.
        assert!((channel.path_loss_db(500.0) - 127.334).abs() < 0.01);
        // Inside 10 m the distance is clamped: d3 = √(10² + 23.5²) = 25.539 → 13.54 +
        // 39.08·1.40721 + 8.29947 = 76.833 dB.
        assert!((channel.path_loss_db(0.0) - 76.833).abs() < 0.01);
        let fs = MobilityConfig {
            path_loss: PathLoss::FreeSpace,
            bs_height_m: 1.5,
            ..MobilityConfig::default()
        };
        let channel = Channel::new(fs.prepare().unwrap(), 1);
        // Friis at 1 km, 2.6 GHz: 20·log10(4π·1000·2.6e9/c) = 20·log10(108983.7) = 100.747.
        assert!((channel.path_loss_db(1000.0) - 100.747).abs() < 0.01);
    }

    #[test]
    fn noise_and_tti_for_lte_and_nr() {
        let lte = MobilityConfig::default().prepare().unwrap();
        assert_eq!(lte.prbs, 100);
        assert_eq!(lte.tti, Dur::from_ms(1));
        // −174 + 10·log10(100·12·15 kHz = 18 MHz) + 9 = −92.447 dBm.
        assert!((10.0 * lte.noise_mw.log10() + 92.447).abs() < 0.01);
        let nr = MobilityConfig {
            rat: Rat::Nr,
            subcarrier_khz: 30,
            bandwidth_mhz: 100.0,
            ..MobilityConfig::default()
        }
        .prepare()
        .unwrap();
        assert_eq!(nr.prbs, 273);
        assert_eq!(nr.tti, Dur::from_us(500));
        assert_eq!(nr.ttis(), 120_000);
    }

    #[test]
    fn without_fading_or_shadowing_sinr_falls_with_distance() {
        let cfg = MobilityConfig {
            fading: Fading::Off,
            shadowing_sigma_db: 0.0,
            speed_kmh: 100.0,
            duration_s: 40.0,
            ..MobilityConfig::default()
        };
        let run = simulate_channel(&cfg, 3).unwrap();
        assert!(run.sinr_db.windows(2).all(|w| w[1] <= w[0] + 1e-9));
        assert_eq!(run.cqi[0], 15);
        // At the cell edge (s = R) serving and neighbour are equally far: SINR = 10·log10
        // (2 antennas · S / (S + N)) ≈ 3 dB minus a little noise.
        let edge = ((1000.0 - 50.0) / (100.0 / 3.6) * 1000.0) as usize;
        assert!(
            (run.sinr_db[edge] - 3.0).abs() < 0.3,
            "{}",
            run.sinr_db[edge]
        );
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |cfg: MobilityConfig, field: &str| {
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.starts_with(&format!("{field}: ")), "{err}");
        };
        let d = MobilityConfig::default;
        bad(
            MobilityConfig {
                speed_kmh: -1.0,
                ..d()
            },
            "speed_kmh",
        );
        bad(
            MobilityConfig {
                bandwidth_mhz: 12.0,
                ..d()
            },
            "bandwidth_mhz",
        );
        bad(
            MobilityConfig {
                subcarrier_khz: 30,
                ..d()
            },
            "subcarrier_khz",
        );
        bad(MobilityConfig { layers: 2, ..d() }, "layers");
        bad(
            MobilityConfig {
                scheduler_share: 0.0,
                ..d()
            },
            "scheduler_share",
        );
        bad(
            MobilityConfig {
                duration_s: 0.0,
                ..d()
            },
            "duration_s",
        );
        bad(
            MobilityConfig {
                carrier_ghz: f64::NAN,
                ..d()
            },
            "carrier_ghz",
        );
        bad(
            MobilityConfig {
                direction: Direction::Towards,
                start_distance_m: 100.0,
                duration_s: 60.0,
                ..d()
            },
            "direction",
        );
        assert!(MobilityConfig {
            rat: Rat::Nr,
            layers: 4,
            ..d()
        }
        .validate()
        .is_ok());
    }
}
