//! NR link adaptation: CQI → MCS (TS 38.214 tables) and the transport block size
//! procedure of TS 38.214 §5.1.3.2.
//!
//! Sources: 3GPP TS 38.214 (NR physical layer procedures for data), V15.x:
//! Table 5.2.2.1-2 (CQI table 1, identical to LTE's Table 7.2.3-1, see
//! [`super::lte_tables::CQI_TABLE`]), Table 5.1.3.1-1 (MCS index table 1 for PDSCH, up to
//! 64QAM), §5.1.3.2 (TBS determination) with Table 5.1.3.2-1 (TBS for N_info ≤ 3824);
//! TS 38.101-1 Table 5.3.2-1 (maximum transmission bandwidth configuration N_RB).
//!
//! Model. The gNodeB schedules the whole carrier in every slot with the MCS of Table
//! 5.1.3.1-1 that has the CQI's modulation and the code rate closest to the CQI's
//! (the CQI definition of TS 38.214 §5.2.2.1 mirrors LTE's). The TBS follows §5.1.3.2
//! exactly, in integer arithmetic (N_info is a multiple of 1/1024, since R is given
//! × 1024), with these PDSCH parameters: 12 PDSCH symbols per slot (2 left for the
//! PDCCH), one DMRS symbol of type 1 with both CDM groups without data (12 REs per PRB),
//! xOverhead 0 and 1 to 4 layers.
//!
//! Exact and approximated:
//! 1. Exact (3GPP): the MCS table, Table 5.1.3.2-1 and the §5.1.3.2 procedure (formula
//!    branches for R ≤ 1/4, N'_info > 8424 and the single code block, ties of `round`
//!    broken upwards as the specification says).
//! 2. Fixed PDSCH allocation: the whole carrier every slot, 12 symbols, one DMRS symbol
//!    (12 REs per PRB), xOverhead 0; TBS scaling (paging/RAR) is not modelled.
//! 3. Approximated: the SINR → CQI thresholds (the LTE link-level values are reused, the
//!    CQI tables being identical), no HARQ and no BLER, and every slot a downlink slot
//!    (FDD; for TDD scale `scheduler_share` by the downlink fraction).

use super::lte_tables::CQI_TABLE;

/// MCS index table 1 for PDSCH (TS 38.214 Table 5.1.3.1-1), MCS 0..=28:
/// (modulation order, code rate × 1024). MCS 29–31 are retransmission only.
pub const MCS_TABLE_1: [(u32, u32); 29] = [
    (2, 120),
    (2, 157),
    (2, 193),
    (2, 251),
    (2, 308),
    (2, 379),
    (2, 449),
    (2, 526),
    (2, 602),
    (2, 679),
    (4, 340),
    (4, 378),
    (4, 434),
    (4, 490),
    (4, 553),
    (4, 616),
    (4, 658),
    (6, 438),
    (6, 466),
    (6, 517),
    (6, 567),
    (6, 616),
    (6, 666),
    (6, 719),
    (6, 772),
    (6, 822),
    (6, 873),
    (6, 910),
    (6, 948),
];

/// TS 38.214 Table 5.1.3.2-1: TBS for N_info ≤ 3824.
const SMALL_TBS: [u32; 93] = [
    24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184,
    192, 208, 224, 240, 256, 272, 288, 304, 320, 336, 352, 368, 384, 408, 432, 456, 480, 504, 528,
    552, 576, 608, 640, 672, 704, 736, 768, 808, 848, 888, 928, 984, 1032, 1064, 1128, 1160, 1192,
    1224, 1256, 1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672, 1736, 1800, 1864, 1928, 2024, 2088,
    2152, 2216, 2280, 2408, 2472, 2536, 2600, 2664, 2728, 2792, 2856, 2976, 3104, 3240, 3368, 3496,
    3624, 3752, 3824,
];

/// Subcarriers per resource block (TS 38.211 §4.4.4.1, N_sc^RB = 12).
const SUBCARRIERS_PER_PRB: u64 = 12;
/// Cap on REs per PRB in the TBS procedure (TS 38.214 §5.1.3.2 step 1: min(156, N'_RE)).
const MAX_RES_PER_PRB: u64 = 156;
/// Code rates are given × 1024 in the MCS tables.
const RATE_SCALE: u64 = 1024;

/// PDSCH resource allocation of one slot, as §5.1.3.2 step 1 needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pdsch {
    /// Scheduled PRBs, n_PRB.
    pub prbs: u32,
    /// OFDM symbols of the PDSCH in the slot, N_symb^sh.
    pub symbols: u32,
    /// DMRS REs per PRB, N_DMRS^PRB.
    pub dmrs_res_per_prb: u32,
    /// Higher-layer overhead REs per PRB (xOverhead), N_oh^PRB.
    pub overhead_res_per_prb: u32,
    /// Spatial layers, υ.
    pub layers: u32,
}

impl Pdsch {
    /// The defaults of this model: 12 symbols, 12 DMRS REs, no overhead.
    pub fn full_slot(prbs: u32, layers: u32) -> Self {
        Pdsch {
            prbs,
            symbols: 12,
            dmrs_res_per_prb: 12,
            overhead_res_per_prb: 0,
            layers,
        }
    }
}

/// The TBS in bits (TS 38.214 §5.1.3.2) for modulation order `q_m`, code rate
/// `rate_x1024 / 1024` and allocation `pdsch`. Returns 0 when no RE is left for data.
pub fn tbs(pdsch: &Pdsch, q_m: u32, rate_x1024: u32) -> u64 {
    // §5.1.3.2 step 1: N'_RE = N_sc^RB · N_symb^sh − N_DMRS^PRB − N_oh^PRB.
    let per_prb = (SUBCARRIERS_PER_PRB * u64::from(pdsch.symbols))
        .saturating_sub(u64::from(pdsch.dmrs_res_per_prb))
        .saturating_sub(u64::from(pdsch.overhead_res_per_prb));
    // N_RE = min(156, N'_RE) · n_PRB.
    let n_re = per_prb.min(MAX_RES_PER_PRB) * u64::from(pdsch.prbs);
    // Step 2: N_info = N_RE · R · Q_m · υ, held as info_x1024 = N_info · 1024 (exact).
    let info_x1024 = n_re * u64::from(rate_x1024) * u64::from(q_m) * u64::from(pdsch.layers);
    if info_x1024 == 0 {
        return 0;
    }
    const SMALL_LIMIT: u64 = 3824;
    if info_x1024 <= SMALL_LIMIT * RATE_SCALE {
        // Step 3: n = max(3, ⌊log2 N_info⌋ − 6); log2(N_info) = log2(info_x1024) − 10.
        let log2_info = i64::from(info_x1024.ilog2()) - 10;
        let n = (log2_info - 6).max(3) as u32;
        // N'_info = max(24, 2^n · ⌊N_info / 2^n⌋).
        let quantised = (info_x1024 / (RATE_SCALE << n)) << n;
        let quantised = quantised.max(24);
        // The smallest TBS in Table 5.1.3.2-1 not below N'_info (3824 ≥ N'_info always).
        let index = SMALL_TBS.partition_point(|&t| u64::from(t) < quantised);
        return u64::from(SMALL_TBS[index.min(SMALL_TBS.len() - 1)]);
    }
    // Step 4: n = ⌊log2(N_info − 24)⌋ − 5.
    let excess_x1024 = info_x1024 - 24 * RATE_SCALE;
    let n = excess_x1024.ilog2() - 10 - 5;
    // N'_info = max(3840, 2^n · round((N_info − 24) / 2^n)), ties rounded up:
    // round(x) = ⌊(2·x·1024·2^n + 1024·2^n) / (2·1024·2^n)⌋ with x scaled by 1024.
    let unit = RATE_SCALE << n;
    let rounded = (2 * excess_x1024 + unit) / (2 * unit);
    let quantised = (rounded << n).max(3840);
    let with_crc = quantised + 24;
    let code_blocks = if u64::from(rate_x1024) * 4 <= RATE_SCALE {
        // R ≤ 1/4: C = ⌈(N'_info + 24) / 3816⌉.
        with_crc.div_ceil(3816)
    } else if quantised > 8424 {
        // C = ⌈(N'_info + 24) / 8424⌉.
        with_crc.div_ceil(8424)
    } else {
        1
    };
    // TBS = 8·C·⌈(N'_info + 24) / (8·C)⌉ − 24.
    8 * code_blocks * with_crc.div_ceil(8 * code_blocks) - 24
}

/// The MCS (index into [`MCS_TABLE_1`]) for CQI 1..=15: same modulation, closest code
/// rate, the lower MCS on a tie.
pub fn mcs_for_cqi(cqi: u8) -> Option<usize> {
    let entry = CQI_TABLE.get(usize::from(cqi).checked_sub(1)?)?;
    MCS_TABLE_1
        .iter()
        .enumerate()
        .filter(|(_, &(q_m, _))| q_m == entry.modulation_order)
        .min_by_key(|(_, &(_, rate))| rate.abs_diff(entry.code_rate_x1024))
        .map(|(mcs, _)| mcs)
}

/// Bits per slot for CQI 0..=15 (0 for CQI 0) on allocation `pdsch`.
pub fn tbs_by_cqi(pdsch: &Pdsch) -> [u64; 16] {
    let mut out = [0u64; 16];
    for cqi in 1..=15u8 {
        let mcs = mcs_for_cqi(cqi).expect("every CQI 1..=15 has an MCS of its modulation");
        let (q_m, rate) = MCS_TABLE_1[mcs];
        out[usize::from(cqi)] = tbs(pdsch, q_m, rate);
    }
    out
}

/// N_RB for an FR1 channel bandwidth (MHz) and subcarrier spacing (kHz), TS 38.101-1
/// Table 5.3.2-1; `None` where the table has no entry.
pub fn prbs_for_bandwidth(bandwidth_mhz: f64, subcarrier_khz: u32) -> Option<u32> {
    const MHZ: [u32; 13] = [5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100];
    const SCS_15: [u32; 13] = [25, 52, 79, 106, 133, 160, 216, 270, 0, 0, 0, 0, 0];
    const SCS_30: [u32; 13] = [11, 24, 38, 51, 65, 78, 106, 133, 162, 189, 217, 245, 273];
    let row = match subcarrier_khz {
        15 => &SCS_15,
        30 => &SCS_30,
        _ => return None,
    };
    if bandwidth_mhz.fract() != 0.0 {
        return None;
    }
    MHZ.iter()
        .position(|&m| f64::from(m) == bandwidth_mhz)
        .map(|i| row[i])
        .filter(|&prbs| prbs > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdsch(prbs: u32) -> Pdsch {
        Pdsch::full_slot(prbs, 1)
    }

    /// Worked by hand; N'_RE = 12·12 − 12 = 132 REs per PRB throughout.
    #[test]
    fn tbs_small_table_branch() {
        // 1 PRB, MCS 0 (QPSK, 120): N_info = 132·120·2/1024 = 30.94; n = 3;
        // N'_info = max(24, 8·⌊30.94/8⌋ = 24) = 24 → TBS 24.
        assert_eq!(tbs(&pdsch(1), 2, 120), 24);
        // 10 PRBs, MCS 5 (QPSK, 379): N_info = 1320·379·2/1024 = 977.11; n = 9 − 6 = 3;
        // N'_info = 8·122 = 976 → smallest table entry ≥ 976 is 984.
        assert_eq!(tbs(&pdsch(10), 2, 379), 984);
        // 20 PRBs, MCS 10 (16QAM, 340): N_info = 2640·340·4/1024 = 3506.25; n = 11 − 6
        // = 5; N'_info = 32·109 = 3488 → 3496.
        assert_eq!(tbs(&pdsch(20), 4, 340), 3496);
    }

    #[test]
    fn tbs_formula_branches() {
        // 100 PRBs, MCS 2 (QPSK, 193 ≤ 256 so R ≤ 1/4): N_info = 13200·193·2/1024 =
        // 4975.78; n = ⌊log2 4951.78⌋ − 5 = 7; N'_info = 128·round(38.69) = 4992;
        // C = ⌈5016/3816⌉ = 2; TBS = 16·⌈5016/16⌉ − 24 = 16·314 − 24 = 5000.
        assert_eq!(tbs(&pdsch(100), 2, 193), 5000);
        // 30 PRBs, MCS 10 (16QAM, 340): N_info = 3960·340·4/1024 = 5259.375; n = 12 − 5
        // = 7; N'_info = 128·round(40.90) = 5248 ≤ 8424; TBS = 8·⌈5272/8⌉ − 24 = 5248.
        assert_eq!(tbs(&pdsch(30), 4, 340), 5248);
        // 273 PRBs, MCS 27 (64QAM, 910): N_info = 36036·910·6/1024 = 192145.08;
        // n = 17 − 5 = 12; N'_info = 4096·round(46.90) = 192512; C = ⌈192536/8424⌉ = 23;
        // TBS = 184·⌈192536/184⌉ − 24 = 184·1047 − 24 = 192624.
        assert_eq!(tbs(&pdsch(273), 6, 910), 192624);
        // Two layers double N_info.
        assert!(tbs(&Pdsch::full_slot(273, 2), 6, 910) > 2 * 192624 - 2000);
    }

    #[test]
    fn tbs_rounds_ties_up() {
        // N_info − 24 exactly halfway between multiples of 2^n rounds up: choose
        // N_info = 24 + 2^7·40.5 = 5208 (n = ⌊log2 5184⌋ − 5 = 7): N'_info = 128·41 =
        // 5248. N_info·1024 = n_re·rate·q_m; with q_m = 2, layers 1: n_re·rate = 2_666_496
        // = 5208·512, e.g. n_re = 5208, rate = 512 (overhead chosen to get 5208 REs).
        let pdsch = Pdsch {
            prbs: 42,
            symbols: 12,
            dmrs_res_per_prb: 12,
            overhead_res_per_prb: 8, // 132 − 8 = 124 REs per PRB; 124·42 = 5208
            layers: 1,
        };
        // R = 512/1024 > 1/4, N'_info = 5248 ≤ 8424: TBS = 8·⌈5272/8⌉ − 24 = 5248.
        assert_eq!(tbs(&pdsch, 2, 512), 5248);
    }

    #[test]
    fn cqi_maps_to_the_mcs_with_the_same_modulation_and_rate() {
        let mcs: Vec<usize> = (1..=15).map(|c| mcs_for_cqi(c).unwrap()).collect();
        assert_eq!(mcs, [0, 0, 2, 4, 6, 8, 11, 13, 15, 18, 20, 22, 24, 26, 28]);
        let by_cqi = tbs_by_cqi(&pdsch(273));
        assert_eq!(by_cqi[0], 0);
        assert!(by_cqi.windows(2).all(|w| w[0] <= w[1]), "{by_cqi:?}");
    }

    #[test]
    fn bandwidth_table() {
        assert_eq!(prbs_for_bandwidth(100.0, 30), Some(273));
        assert_eq!(prbs_for_bandwidth(20.0, 15), Some(106));
        assert_eq!(prbs_for_bandwidth(40.0, 30), Some(106));
        assert_eq!(prbs_for_bandwidth(100.0, 15), None);
        assert_eq!(prbs_for_bandwidth(20.0, 60), None);
        assert_eq!(prbs_for_bandwidth(12.5, 15), None);
    }
}
