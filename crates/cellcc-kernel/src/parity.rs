//! The BPF programs' built-in parameters against the Rust reference's defaults.
//!
//! Each `bpf/ALGO.bpf.c` carries its defaults as `const volatile struct ALGO_params
//! ALGO_builtin_params` (`.rodata`), copied by hand from the matching Rust `Config::default()`
//! in `cellcc-congestion`; the loader writes them into `ALGO_defaults[0]`. These tests
//! compare the two field by field, converting units (`_x1000`, `_x100`, `_us`, `_ms`), so a
//! change on either side alone fails:
//!
//! * every member of `struct ALGO_params` (except `valid`, which must be 1) must be mapped
//!   to a Rust field here, so a new C parameter fails until it is compared;
//! * each Rust config is destructured without `..`, so a new Rust field does not compile
//!   until it is compared or its absence from the BPF side is stated here.
//!
//! The values come from the embedded objects (their `.rodata`, located through their BTF;
//! opening an object loads nothing into the kernel, so no root is needed). When the objects
//! were not built (no clang, bpftool or kernel BTF), they come from the initialisers in the
//! C sources instead, and [`object_and_source_agree`] keeps that parser honest whenever both
//! are available.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cellcc_congestion::bbr::BbrConfig;
use cellcc_congestion::c2tcp::{Base, C2tcpConfig, Fidelity as C2tcpFidelity};
use cellcc_congestion::cdg::CdgConfig;
use cellcc_congestion::cesar::{CesarConfig, Fidelity as CesarFidelity};
use cellcc_congestion::illinois::IllinoisConfig;
use cellcc_congestion::proprate::PropRateConfig;
use cellcc_congestion::vegas::VegasConfig;
use cellcc_congestion::westwood::WestwoodConfig;
use clap::Parser;

use crate::objects;
use crate::{Cli, Command, TunerFidelity};

/// Field name to value, for every non-padding member of `struct ALGO_params`.
type Params = BTreeMap<String, u64>;

/// `ALGO_builtin_params` of the embedded object, if objects were built.
fn from_object(algo: &str) -> Option<Params> {
    objects::embedded().ok()?;
    let all = objects::discover().expect("the embedded objects follow the convention");
    let a = all
        .iter()
        .find(|a| a.algo == algo)
        .unwrap_or_else(|| panic!("no algorithm {algo} among the embedded objects"));
    Some(
        a.params
            .fields
            .iter()
            .map(|f| (f.name.clone(), a.params.get(&a.builtin, f).as_u64()))
            .collect(),
    )
}

/// `bpf/ALGO.bpf.c`.
fn source_path(algo: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../bpf/{algo}.bpf.c"))
}

/// `ALGO_builtin_params` read from the C source: the designated initialisers
/// `.field = VALUE` of the variable, VALUE an integer literal or a macro of the same file
/// that is one.
fn from_source(algo: &str) -> Params {
    let path = source_path(algo);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let text = strip_comments(&text);
    let macros: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|l| {
            let mut words = l.trim().strip_prefix("#define")?.split_whitespace();
            Some((words.next()?, words.next()?))
        })
        .collect();
    let var = format!("{algo}_builtin_params");
    let start = text
        .find(&format!("{var} ="))
        .unwrap_or_else(|| panic!("{}: no initialiser of {var}", path.display()));
    let body = &text[start..];
    let body = &body[body.find('{').expect("initialiser opens") + 1..];
    let body = &body[..body.find('}').expect("initialiser closes")];
    body.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, value) = item
                .strip_prefix('.')
                .and_then(|i| i.split_once('='))
                .unwrap_or_else(|| panic!("{var}: {item:?} is not `.field = value`"));
            let value = value.trim();
            let literal = macros.get(value).copied().unwrap_or(value);
            let number = parse_c_int(literal)
                .unwrap_or_else(|| panic!("{var}.{}: {value:?} is not an integer", name.trim()));
            (name.trim().to_string(), number)
        })
        .collect()
}

/// `text` without `/* */` and `//` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b..].find("*/").map_or(rest.len(), |e| b + e + 2);
                rest = &rest[end..];
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = &rest[rest[l..].find('\n').map_or(rest.len(), |e| l + e)..];
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// A C integer literal: decimal or `0x` hex, with optional `U`/`L` suffixes.
fn parse_c_int(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The built-in parameters of `algo`: the object's, or the source's without objects.
fn builtin(algo: &str) -> Params {
    from_object(algo).unwrap_or_else(|| {
        eprintln!("note: no embedded BPF objects; {algo}'s defaults read from its C source");
        from_source(algo)
    })
}

/// `v` (a Rust default in the unit of its name) times `scale`, the unit of the BPF field;
/// the product must be a whole number, or the BPF side cannot hold the Rust value.
fn scaled(field: &str, v: f64, scale: f64) -> u64 {
    let x = v * scale;
    assert!(
        x.is_finite() && x >= 0.0 && (x - x.round()).abs() < 1e-6,
        "{field}: the Rust default {v} × {scale} = {x} is not a whole number in the BPF unit"
    );
    x.round() as u64
}

/// Asserts that `bpf` (the object's parameters) equals `rust` (the Rust defaults in BPF
/// units), member by member, and that every member is compared.
fn assert_same(algo: &str, bpf: &Params, rust: &[(&str, u64)]) {
    assert_eq!(
        bpf.get("valid"),
        Some(&1),
        "{algo}_builtin_params.valid must be 1"
    );
    let mut mismatches = Vec::new();
    for (field, want) in rust {
        match bpf.get(*field) {
            Some(got) if got == want => {}
            Some(got) => mismatches.push(format!(
                "{field}: BPF {algo}_builtin_params has {got}, the Rust default gives {want}"
            )),
            None => mismatches.push(format!(
                "{field}: compared here but not a member of struct {algo}_params"
            )),
        }
    }
    for field in bpf.keys() {
        if field != "valid" && !rust.iter().any(|(f, _)| f == field) {
            mismatches.push(format!(
                "{field}: member of struct {algo}_params with no Rust default compared here"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "bpf/{algo}.bpf.c and the Rust defaults disagree:\n  {}",
        mismatches.join("\n  ")
    );
}

#[test]
fn c2tcp_builtin_params_are_c2tcp_config_default() {
    let C2tcpConfig {
        target_ms,
        target_schedule,
        alpha,
        tuner,
        tuning_cycle_ms,
        fidelity,
        base,
        cubic,
    } = C2tcpConfig::default();
    assert_same(
        "c2tcp",
        &builtin("c2tcp"),
        &[
            ("alpha_x100", scaled("alpha", alpha, 100.0)),
            ("target_us", scaled("target_ms", target_ms, 1000.0)),
        ],
    );
    // Not in struct c2tcp_params (bpf/c2tcp.bpf.c differences 1, 4): the BPF program is
    // the paper's C2TCP on the kernel's own CUBIC with its own defaults, and has no
    // target schedule.
    assert_eq!(fidelity, C2tcpFidelity::Paper);
    assert_eq!(base, Base::Cubic);
    assert_eq!(cubic, None);
    assert!(target_schedule.is_empty());
    // The Tuner runs in user space: `cellcc-kernel tune`, whose defaults must be the
    // reference's (it is a separate command, where `tuner = true` is a default on).
    assert!(tuner);
    let cli = Cli::try_parse_from(["cellcc-kernel", "tune"]).expect("`tune` needs no argument");
    let Command::Tune {
        target_ms: tune_target,
        period_ms,
        fidelity: tune_fidelity,
    } = cli.command
    else {
        panic!("`cellcc-kernel tune` parsed as another command");
    };
    assert_eq!(
        tune_target, None,
        "tune: the flows' own target_us by default"
    );
    assert_eq!(
        period_ms,
        scaled("tuning_cycle_ms", tuning_cycle_ms, 1.0),
        "tune --period-ms default vs C2tcpConfig::tuning_cycle_ms"
    );
    assert!(
        matches!(tune_fidelity, TunerFidelity::Paper),
        "tune --fidelity default vs C2tcpConfig::fidelity"
    );
}

#[test]
fn proprate_builtin_params_are_proprate_config_default() {
    let PropRateConfig {
        t_buff_ms,
        l_max_ms,
        nfl,
        rho_timestamps,
        rho_window_ms,
        rho_gain,
        rd_min_window_s,
        burst_packets,
        cwnd_gain,
        k_d_min,
    } = PropRateConfig::default();
    assert_same(
        "proprate",
        &builtin("proprate"),
        &[
            ("t_buff_us", scaled("t_buff_ms", t_buff_ms, 1000.0)),
            ("l_max_us", scaled("l_max_ms", l_max_ms, 1000.0)),
            ("nfl", u64::from(nfl)),
            ("rho_timestamps", u64::from(rho_timestamps)),
            (
                "rho_window_us",
                scaled("rho_window_ms", rho_window_ms, 1000.0),
            ),
            ("rho_gain_x1000", scaled("rho_gain", rho_gain, 1000.0)),
            (
                "rd_min_window_ms",
                scaled("rd_min_window_s", rd_min_window_s, 1000.0),
            ),
            ("burst_packets", u64::from(burst_packets)),
            ("cwnd_gain_x1000", scaled("cwnd_gain", cwnd_gain, 1000.0)),
            ("k_d_min_x1000", scaled("k_d_min", k_d_min, 1000.0)),
        ],
    );
}

#[test]
fn cesar_builtin_params_are_cesar_config_default() {
    let CesarConfig {
        alpha,
        beta,
        gamma,
        fixed_su_ms,
        fidelity,
        decision_gaps,
        cwnd_min_target,
        bbr,
    } = CesarConfig::default();
    assert_same(
        "cesar",
        &builtin("cesar"),
        &[
            ("alpha_x1000", scaled("alpha", alpha, 1000.0)),
            ("beta_x1000", scaled("beta", beta, 1000.0)),
            ("gamma_x1000", scaled("gamma", gamma, 1000.0)),
            // 0 = estimate the SU, as None.
            (
                "fixed_su_us",
                fixed_su_ms.map_or(0, |ms| scaled("fixed_su_ms", ms, 1000.0)),
            ),
            (
                "fidelity",
                match fidelity {
                    CesarFidelity::Paper => 0,
                    CesarFidelity::Module => 1,
                },
            ),
            ("decision_gaps", u64::from(decision_gaps)),
            ("cwnd_min_target", u64::from(cwnd_min_target)),
        ],
    );
    // Not in struct cesar_params (bpf/cesar.bpf.c difference 2): the inner BBR is the
    // kernel's Linux BBR v1, which is what the default BbrConfig models.
    assert_eq!(bbr, BbrConfig::default());
}

#[test]
fn vegas_builtin_params_are_vegas_config_default() {
    let VegasConfig { alpha, beta, gamma } = VegasConfig::default();
    assert_same(
        "vegas",
        &builtin("vegas"),
        &[
            ("alpha", u64::from(alpha)),
            ("beta", u64::from(beta)),
            ("gamma", u64::from(gamma)),
        ],
    );
}

#[test]
fn westwood_builtin_params_are_westwood_config_default() {
    // Westwood+ has no parameters on either side: struct westwood_params is `valid`
    // alone, and a field added to WestwoodConfig fails to compile here.
    let WestwoodConfig {} = WestwoodConfig::default();
    assert_same("westwood", &builtin("westwood"), &[]);
}

#[test]
fn illinois_builtin_params_are_illinois_config_default() {
    let IllinoisConfig { win_thresh, theta } = IllinoisConfig::default();
    assert_same(
        "illinois",
        &builtin("illinois"),
        &[
            ("win_thresh", u64::from(win_thresh)),
            ("theta", u64::from(theta)),
        ],
    );
}

#[test]
fn cdg_builtin_params_are_cdg_config_default() {
    let CdgConfig {
        window,
        backoff_beta,
        backoff_factor,
        hystart_detect,
        use_ineff,
        use_shadow,
        use_tolerance,
        backoff_seed,
    } = CdgConfig::default();
    assert_same(
        "cdg",
        &builtin("cdg"),
        &[
            ("window", u64::from(window)),
            ("backoff_beta", u64::from(backoff_beta)),
            ("backoff_factor", u64::from(backoff_factor)),
            ("hystart_detect", u64::from(hystart_detect)),
            ("use_ineff", u64::from(use_ineff)),
            ("use_shadow", u64::from(use_shadow)),
            ("use_tolerance", u64::from(use_tolerance)),
        ],
    );
    // Not in struct cdg_params (bpf/cdg.bpf.c difference 2): the BPF program draws from
    // the kernel's RNG, as Linux does; the seed of the simulator's stream has no
    // counterpart.
    let _ = backoff_seed;
}

/// The source parser reads what the compiler put in `.rodata`.
#[test]
fn object_and_source_agree() {
    for algo in [
        "c2tcp", "proprate", "cesar", "vegas", "westwood", "illinois", "cdg", "policy",
    ] {
        let Some(object) = from_object(algo) else {
            println!("skipped: no embedded BPF objects");
            return;
        };
        let mut source = from_source(algo);
        // Members left out of the initialiser are zero.
        for field in object.keys() {
            source.entry(field.clone()).or_insert(0);
        }
        assert_eq!(object, source, "bpf/{algo}.bpf.c");
    }
}

#[test]
fn source_parser_reads_literals_macros_and_skips_comments() {
    assert_eq!(parse_c_int("0x10"), Some(16));
    assert_eq!(parse_c_int("300000ULL"), Some(300_000));
    assert_eq!(parse_c_int("C2TCP_ALPHA_MIN"), None);
    assert_eq!(
        strip_comments("a /* b */ c // d\ne /* f\n g */ h"),
        "a  c \ne  h"
    );
}
