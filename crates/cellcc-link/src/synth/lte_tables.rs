//! LTE link adaptation tables: SINR → CQI → MCS → transport block size (TBS).
//!
//! Sources:
//! - 3GPP TS 36.213 (E-UTRA physical layer procedures), V15.x: Table 7.2.3-1 (4-bit CQI
//!   table), §7.2.3 (CQI definition and CSI reference resource), Table 7.1.7.1-1
//!   (modulation and TBS index table for PDSCH), Table 7.1.7.2.1-1 (transport block sizes
//!   for one spatial layer).
//! - 3GPP TS 36.101, Table 5.6-1 (channel bandwidth → transmission bandwidth in PRBs).
//! - SINR thresholds for 10 % BLER: M. T. Kawser, N. I. B. Hamid, M. N. Hasan, M. S. Alam,
//!   M. M. Rahman, "Downlink SNR to CQI Mapping for Different Multiple Antenna Techniques
//!   in LTE", International Journal of Information and Electronics Engineering 2(5), 2012
//!   (link-level simulation, AWGN, the SNR at which each CQI's modulation and code rate
//!   reaches 10 % BLER).
//!
//! Model. The UE reports the highest CQI whose 10 % BLER threshold its SINR reaches. The
//! eNodeB schedules the whole carrier (wideband CQI) with the MCS that TS 36.213 §7.2.3
//! associates with that CQI: the MCS with the CQI's modulation whose effective code rate
//! on the CSI reference resource is closest to the CQI's code rate. The transport block
//! then carries the TBS of Table 7.1.7.2.1-1 for that MCS's TBS index and the carrier's
//! PRBs, once per 1 ms TTI.
//!
//! Exact and approximated:
//! 1. Exact (3GPP numbers): the CQI table, the MCS table, the TBS rows for 6, 15, 25, 50,
//!    75 and 100 PRBs (the six LTE channel bandwidths; other PRB counts are refused).
//! 2. Exact rule, simplified resource: the CQI → MCS choice follows §7.2.3 with a
//!    reference resource of 120 PDSCH resource elements per PRB pair (14 OFDM symbols
//!    minus 3 for the control region = 132, minus 12 cell-specific reference signal REs
//!    of 2 antenna ports outside the control region); the effective code rate counts the
//!    24-bit transport block CRC but not code-block CRCs.
//! 3. Approximated: the SINR thresholds are link-level results for AWGN, not part of the
//!    standard; there is no HARQ, no BLER (every transport block is delivered) and one
//!    layer (no spatial multiplexing).

/// Modulation order and code rate × 1024 of one CQI index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqiEntry {
    /// Bits per modulation symbol: 2 (QPSK), 4 (16QAM), 6 (64QAM).
    pub modulation_order: u32,
    /// Code rate × 1024.
    pub code_rate_x1024: u32,
}

/// TS 36.213 Table 7.2.3-1, CQI 1..=15 (index 0 here is CQI 1; CQI 0 is "out of range").
/// TS 38.214 Table 5.2.2.1-2 (NR CQI table 1) has exactly the same entries.
pub const CQI_TABLE: [CqiEntry; 15] = [
    cqi(2, 78),
    cqi(2, 120),
    cqi(2, 193),
    cqi(2, 308),
    cqi(2, 449),
    cqi(2, 602),
    cqi(4, 378),
    cqi(4, 490),
    cqi(4, 616),
    cqi(6, 466),
    cqi(6, 567),
    cqi(6, 666),
    cqi(6, 772),
    cqi(6, 873),
    cqi(6, 948),
];

const fn cqi(modulation_order: u32, code_rate_x1024: u32) -> CqiEntry {
    CqiEntry {
        modulation_order,
        code_rate_x1024,
    }
}

/// Lowest SINR (dB) at which CQI 1..=15 meets 10 % BLER (Kawser et al. 2012, Table 3).
pub const CQI_SINR_THRESHOLDS_DB: [f64; 15] = [
    -6.7, -4.7, -2.3, 0.2, 2.4, 4.3, 5.9, 8.1, 10.3, 11.7, 14.1, 16.3, 18.7, 21.0, 22.7,
];

/// Highest CQI index the SINR supports: 0 (out of range) below the CQI 1 threshold.
pub fn cqi_from_sinr_db(sinr_db: f64) -> u8 {
    // The thresholds increase, so the count of those met is the CQI index.
    CQI_SINR_THRESHOLDS_DB
        .iter()
        .take_while(|&&threshold| sinr_db >= threshold)
        .count() as u8
}

/// Subcarriers per resource block (TS 36.211 §6.2.3, N_sc^RB = 12).
pub const SUBCARRIERS_PER_PRB: u32 = 12;
/// PDSCH resource elements per PRB pair in the CSI reference resource (see item 2 of
/// the module header): 12 × (14 − 3) − 12.
pub const REFERENCE_RES_PER_PRB: u32 = 120;
/// Transport block CRC length (TS 36.212 §5.3.2.1), counted in the effective code rate.
const TB_CRC_BITS: u32 = 24;
/// Number of MCS indices that carry data in Table 7.1.7.1-1 (29–31 are retransmission
/// only).
const DATA_MCS_COUNT: usize = 29;

/// Modulation order and TBS index of MCS 0..=28 (TS 36.213 Table 7.1.7.1-1).
pub const fn mcs_entry(mcs: usize) -> (u32, usize) {
    match mcs {
        0..=9 => (2, mcs),
        10..=16 => (4, mcs - 1),
        _ => (6, mcs - 2),
    }
}

/// The rows of TS 36.213 Table 7.1.7.2.1-1 for the six LTE bandwidths: TBS (bits) for
/// TBS index I_TBS = 0..=26, one row per PRB count.
const TBS_ROWS: [(u32, [u32; 27]); 6] = [
    (
        6,
        [
            152, 208, 256, 328, 408, 504, 600, 712, 808, 936, 1032, 1192, 1352, 1544, 1736, 1800,
            1928, 2152, 2344, 2600, 2792, 2984, 3240, 3496, 3624, 3752, 4392,
        ],
    ),
    (
        15,
        [
            392, 520, 648, 872, 1064, 1320, 1544, 1800, 2088, 2344, 2664, 2984, 3368, 3880, 4264,
            4584, 4968, 5352, 5992, 6456, 6968, 7480, 7992, 8504, 9144, 9528, 11064,
        ],
    ),
    (
        25,
        [
            680, 904, 1096, 1416, 1800, 2216, 2600, 3112, 3496, 4008, 4392, 4968, 5736, 6456, 7224,
            7736, 7992, 9144, 9912, 10680, 11448, 12576, 13536, 14112, 15264, 15840, 18336,
        ],
    ),
    (
        50,
        [
            1384, 1800, 2216, 2856, 3624, 4392, 5160, 6200, 6968, 7992, 8760, 9912, 11448, 12960,
            14112, 15264, 16416, 18336, 19848, 21384, 22920, 25456, 27376, 28336, 30576, 31704,
            36696,
        ],
    ),
    (
        75,
        [
            2088, 2728, 3368, 4392, 5352, 6712, 7736, 9144, 10680, 11832, 12960, 15264, 16992,
            19080, 21384, 22920, 24496, 27376, 29296, 32856, 35160, 37888, 40576, 43816, 45352,
            46888, 55056,
        ],
    ),
    (
        100,
        [
            2792, 3624, 4584, 5736, 7224, 8760, 10296, 12216, 14112, 15840, 17568, 19848, 22920,
            25456, 28336, 30576, 32856, 36696, 39232, 43816, 46888, 51024, 55056, 57336, 61664,
            63776, 75376,
        ],
    ),
];

/// LTE channel bandwidths (MHz × 10) and their PRBs (TS 36.101 Table 5.6-1).
const BANDWIDTHS: [(u32, u32); 6] = [
    (14, 6),
    (30, 15),
    (50, 25),
    (100, 50),
    (150, 75),
    (200, 100),
];

/// PRBs of an LTE channel bandwidth in MHz (1.4, 3, 5, 10, 15 or 20), or `None`.
pub fn prbs_for_bandwidth(bandwidth_mhz: f64) -> Option<u32> {
    let tenths = (bandwidth_mhz * 10.0).round();
    if (bandwidth_mhz * 10.0 - tenths).abs() > 1e-6 {
        return None;
    }
    BANDWIDTHS
        .iter()
        .find(|&&(t, _)| f64::from(t) == tenths)
        .map(|&(_, prbs)| prbs)
}

/// The TBS row for `prbs`, if it is one of the tabulated bandwidths.
pub fn tbs_row(prbs: u32) -> Option<&'static [u32; 27]> {
    TBS_ROWS
        .iter()
        .find(|(p, _)| *p == prbs)
        .map(|(_, row)| row)
}

/// The MCS TS 36.213 §7.2.3 associates with CQI `cqi` (1..=15) on `prbs` PRBs: among the
/// MCSs with the CQI's modulation, the one whose effective code rate
/// `(TBS + 24) / (120 · prbs · Q_m)` is closest to the CQI's code rate (the lower MCS on
/// a tie).
pub fn mcs_for_cqi(cqi: u8, prbs: u32) -> Option<usize> {
    let entry = CQI_TABLE.get(usize::from(cqi).checked_sub(1)?)?;
    let row = tbs_row(prbs)?;
    let target = f64::from(entry.code_rate_x1024) / 1024.0;
    let mut best: Option<(usize, f64)> = None;
    for mcs in 0..DATA_MCS_COUNT {
        let (q_m, i_tbs) = mcs_entry(mcs);
        if q_m != entry.modulation_order {
            continue;
        }
        let physical_bits = f64::from(REFERENCE_RES_PER_PRB * prbs * q_m);
        // TS 36.213 §7.2.3: effective channel code rate = information bits incl. CRC /
        // physical channel bits on PDSCH.
        let rate = f64::from(row[i_tbs] + TB_CRC_BITS) / physical_bits;
        let distance = (rate - target).abs();
        if best.is_none_or(|(_, d)| distance < d) {
            best = Some((mcs, distance));
        }
    }
    best.map(|(mcs, _)| mcs)
}

/// Bits per 1 ms TTI for each CQI 0..=15 on `prbs` PRBs (0 for CQI 0), or `None` when
/// `prbs` is not one of the tabulated bandwidths.
pub fn tbs_by_cqi(prbs: u32) -> Option<[u32; 16]> {
    let row = tbs_row(prbs)?;
    let mut out = [0u32; 16];
    for cqi in 1..=15u8 {
        let (_, i_tbs) = mcs_entry(mcs_for_cqi(cqi, prbs)?);
        out[usize::from(cqi)] = row[i_tbs];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinr_thresholds_give_the_cqi_index() {
        assert_eq!(cqi_from_sinr_db(-10.0), 0);
        assert_eq!(cqi_from_sinr_db(-6.71), 0);
        assert_eq!(cqi_from_sinr_db(-6.7), 1);
        assert_eq!(cqi_from_sinr_db(0.2), 4);
        assert_eq!(cqi_from_sinr_db(11.69), 9);
        assert_eq!(cqi_from_sinr_db(22.7), 15);
        assert_eq!(cqi_from_sinr_db(40.0), 15);
    }

    #[test]
    fn mcs_table_maps_indices_as_table_7_1_7_1_1() {
        assert_eq!(mcs_entry(0), (2, 0));
        assert_eq!(mcs_entry(9), (2, 9));
        assert_eq!(mcs_entry(10), (4, 9));
        assert_eq!(mcs_entry(16), (4, 15));
        assert_eq!(mcs_entry(17), (6, 15));
        assert_eq!(mcs_entry(28), (6, 26));
    }

    #[test]
    fn bandwidths_map_to_prbs() {
        assert_eq!(prbs_for_bandwidth(1.4), Some(6));
        assert_eq!(prbs_for_bandwidth(20.0), Some(100));
        assert_eq!(prbs_for_bandwidth(12.0), None);
        assert_eq!(prbs_for_bandwidth(20.05), None);
    }

    /// Worked by hand for 100 PRBs (12 000 reference REs): e.g. CQI 15 (64QAM, 948/1024
    /// = 0.926): I_TBS 25 gives (63776 + 24)/72000 = 0.886, I_TBS 26 gives
    /// (75376 + 24)/72000 = 1.047, so MCS 27 (I_TBS 25); CQI 9 (16QAM, 616/1024 = 0.602):
    /// I_TBS 14 gives 28360/48000 = 0.591, I_TBS 15 gives 30600/48000 = 0.638, so MCS 15.
    #[test]
    fn cqi_to_mcs_for_100_prbs_worked_by_hand() {
        let mcs: Vec<usize> = (1..=15).map(|c| mcs_for_cqi(c, 100).unwrap()).collect();
        assert_eq!(mcs, [0, 0, 2, 4, 6, 8, 11, 13, 15, 18, 20, 22, 24, 26, 27]);
        assert_eq!(
            tbs_by_cqi(100).unwrap(),
            [
                0, 2792, 2792, 4584, 7224, 10296, 14112, 17568, 22920, 28336, 32856, 39232, 46888,
                55056, 61664, 63776
            ]
        );
    }

    #[test]
    fn tbs_never_decreases_with_cqi() {
        for &(prbs, _) in &TBS_ROWS {
            let tbs = tbs_by_cqi(prbs).unwrap();
            assert!(tbs.windows(2).all(|w| w[0] <= w[1]), "{prbs} PRBs: {tbs:?}");
        }
        assert!(tbs_by_cqi(7).is_none());
    }
}
