//! The registry of congestion controls a scenario can name.
//!
//! One [`SchemeInfo`] per scheme: its name, a one-line description, the paper, RFC or
//! kernel source it follows, its documentation page, its parameters with their defaults,
//! and how to build it. Building turns a scenario's `params` table into the algorithm's
//! `Config` (unknown keys and wrong types are errors naming the key, with the closest
//! valid key suggested) and makes a fresh controller. Unknown scheme names suggest the
//! closest valid name.

use cellcc_congestion::bbr::{Bbr, BbrConfig};
use cellcc_congestion::c2tcp::{C2tcp, C2tcpConfig, C2tcpIfipConfig};
use cellcc_congestion::cdg::{Cdg, CdgConfig};
use cellcc_congestion::cesar::{Cesar, CesarConfig};
use cellcc_congestion::copa::{Copa, CopaConfig};
use cellcc_congestion::cubic::{Cubic, CubicConfig};
use cellcc_congestion::fixed::{Fixed, FixedConfig};
use cellcc_congestion::illinois::{Illinois, IllinoisConfig};
use cellcc_congestion::ledbat::{Ledbat, LedbatConfig, Variant};
use cellcc_congestion::proprate::{self as pr, PropRate, PropRateConfig};
use cellcc_congestion::reno::{NewReno, NewRenoConfig};
use cellcc_congestion::sprout::{Sprout, SproutConfig};
use cellcc_congestion::vegas::{Vegas, VegasConfig};
use cellcc_congestion::verus::{Verus, VerusConfig};
use cellcc_congestion::vivace::{Vivace, VivaceConfig};
use cellcc_congestion::westwood::{Westwood, WestwoodConfig};
use cellcc_congestion::CongestionControl;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A scheme could not be built: the key (relative to the flow) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemeError {
    /// The key, relative to the flow (`params.beta`).
    pub key: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// What a parameter takes when the scenario does not set it.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamDefault {
    /// This value.
    Value(toml::Value),
    /// Unset: the feature it configures is off.
    Unset,
    /// The scenario must set it.
    Required,
    /// A seed derived from the run's seed and the flow's index.
    FlowSeed,
    /// Fixed by the scheme name (a preset); use the base scheme to choose it.
    Fixed(toml::Value),
}

/// One parameter of a scheme.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Key in the flow's `params` table.
    pub key: &'static str,
    /// What it takes when the scenario does not set it.
    pub default: ParamDefault,
}

type Builder = fn(&toml::Table, u64) -> Result<Box<dyn CongestionControl>, SchemeError>;

/// A registered scheme.
pub struct SchemeInfo {
    /// The name scenarios use (`cubic`, `c2tcp`).
    pub name: &'static str,
    /// One line, for listings.
    pub description: &'static str,
    /// The paper, RFC or kernel source the implementation follows.
    pub source: &'static str,
    /// Its page, relative to `docs/algorithms/`.
    pub doc: &'static str,
    params: fn() -> Vec<Param>,
    build: Builder,
}

impl SchemeInfo {
    /// Every parameter with its default, in declaration order.
    pub fn params(&self) -> Vec<Param> {
        (self.params)()
    }
}

/// Every scheme, in the order reports list them.
pub const SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "newreno",
        description: "NewReno (Linux tcp_cong.c Reno with SACK recovery); alias \"reno\"",
        source: "RFC 5681, RFC 6582; Linux net/ipv4/tcp_cong.c",
        doc: "newreno.md",
        params: || params_of(Some(NewRenoConfig::default()), &[]),
        build: |p, _| Ok(Box::new(NewReno::with_config(checked(p)?))),
    },
    SchemeInfo {
        name: "cubic",
        description: "CUBIC with HyStart (Linux tcp_cubic.c)",
        source: "RFC 9438; Ha, Rhee, Xu, ACM SIGOPS OSR 2008; Linux net/ipv4/tcp_cubic.c",
        doc: "cubic.md",
        params: || params_of(Some(CubicConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Cubic::new(checked(p)?))),
    },
    SchemeInfo {
        name: "bbr",
        description: "BBR v1 (Linux tcp_bbr.c)",
        source: "Cardwell et al., ACM Queue 2016; Linux net/ipv4/tcp_bbr.c",
        doc: "bbr.md",
        params: || params_of(Some(BbrConfig::default()), &["cycle_seed"]),
        build: |p, seed| {
            let mut cfg: BbrConfig = checked(p)?;
            if !p.contains_key("cycle_seed") {
                cfg.cycle_seed = seed;
            }
            Ok(Box::new(Bbr::new(cfg)))
        },
    },
    SchemeInfo {
        name: "c2tcp",
        description: "C2TCP (JSAC 2019: Setpoint = alpha x min RTT, Tuner to a Target) over CUBIC or NewReno",
        source: "Abbasloo, Xu, Chao, IEEE JSAC 37(8), 2019",
        doc: "c2tcp.md",
        params: || params_of(Some(C2tcpConfig::default()), &[]),
        build: |p, _| Ok(Box::new(C2tcp::new(checked(p)?))),
    },
    SchemeInfo {
        name: "c2tcp-ifip",
        description: "C2TCP (IFIP Networking 2018: absolute Target and Interval) over CUBIC or NewReno",
        source: "Abbasloo, Li, Xu, Chao, IFIP Networking 2018",
        doc: "c2tcp.md",
        params: || params_of(Some(C2tcpIfipConfig::default()), &[]),
        build: |p, _| Ok(Box::new(C2tcp::ifip(checked(p)?))),
    },
    SchemeInfo {
        name: "proprate",
        description: "PropRate: rate-based buffer regulation to a target buffer delay t_buff_ms",
        source: "Leong, Wang, Leong, ACM CoNEXT 2017",
        doc: "proprate.md",
        params: || params_of(Some(PropRateConfig::default()), &[]),
        build: |p, _| Ok(Box::new(PropRate::new(checked(p)?))),
    },
    SchemeInfo {
        name: "proprate-l",
        description: "PropRate PR(L): t_buff_ms = 20",
        source: "Leong, Wang, Leong, ACM CoNEXT 2017 (§5)",
        doc: "proprate.md",
        params: || proprate_preset_params(pr::PRESET_L_MS),
        build: |p, _| proprate_preset("proprate-l", p, pr::PRESET_L_MS),
    },
    SchemeInfo {
        name: "proprate-m",
        description: "PropRate PR(M): t_buff_ms = 40",
        source: "Leong, Wang, Leong, ACM CoNEXT 2017 (§5)",
        doc: "proprate.md",
        params: || proprate_preset_params(pr::PRESET_M_MS),
        build: |p, _| proprate_preset("proprate-m", p, pr::PRESET_M_MS),
    },
    SchemeInfo {
        name: "proprate-h",
        description: "PropRate PR(H): t_buff_ms = 80",
        source: "Leong, Wang, Leong, ACM CoNEXT 2017 (§5)",
        doc: "proprate.md",
        params: || proprate_preset_params(pr::PRESET_H_MS),
        build: |p, _| proprate_preset("proprate-h", p, pr::PRESET_H_MS),
    },
    SchemeInfo {
        name: "cesar",
        description: "César: scheduling-unit estimation and step-wise cwnd, BBR fallback",
        source: "Shin, Lee, Paek, Bahk, César: Cellular Resource Scheduling-Aware Congestion Control",
        doc: "cesar.md",
        params: || params_of(Some(CesarConfig::default()), &[]),
        build: |p, seed| {
            let mut cfg: CesarConfig = checked(p)?;
            let seeded = p
                .get("bbr")
                .and_then(|b| b.as_table())
                .is_some_and(|b| b.contains_key("cycle_seed"));
            if !seeded {
                cfg.bbr.cycle_seed = seed;
            }
            Ok(Box::new(Cesar::new(cfg)))
        },
    },
    SchemeInfo {
        name: "vegas",
        description: "Vegas: keep alpha..beta packets queued, once-per-RTT (Linux tcp_vegas.c)",
        source: "Brakmo, Peterson, IEEE JSAC 13(8), 1995; Linux net/ipv4/tcp_vegas.c",
        doc: "vegas.md",
        params: || params_of(Some(VegasConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Vegas::new(checked(p)?))),
    },
    SchemeInfo {
        name: "westwood",
        description: "Westwood+: Reno growth, cwnd = BWE x RTTmin after a congestion episode (Linux tcp_westwood.c)",
        source: "Grieco, Mascolo, ACM SIGCOMM CCR 34(2), 2004; Linux net/ipv4/tcp_westwood.c",
        doc: "westwood.md",
        params: || params_of(Some(WestwoodConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Westwood::new(checked(p)?))),
    },
    SchemeInfo {
        name: "illinois",
        description: "Illinois: loss-based AIMD with delay-set alpha in [0.3, 10], beta in [1/8, 1/2] (Linux tcp_illinois.c)",
        source: "Liu, Başar, Srikant, Performance Evaluation 65(6), 2008; Linux net/ipv4/tcp_illinois.c",
        doc: "illinois.md",
        params: || params_of(Some(IllinoisConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Illinois::new(checked(p)?))),
    },
    SchemeInfo {
        name: "cdg",
        description: "CDG: probabilistic backoff on RTT gradients, shadow window (Linux tcp_cdg.c)",
        source: "Hayes, Armitage, IFIP Networking 2011; Linux net/ipv4/tcp_cdg.c",
        doc: "cdg.md",
        params: || params_of(Some(CdgConfig::default()), &["backoff_seed"]),
        build: |p, seed| {
            let mut cfg: CdgConfig = checked(p)?;
            if !p.contains_key("backoff_seed") {
                cfg.backoff_seed = seed;
            }
            Ok(Box::new(Cdg::new(cfg)))
        },
    },
    SchemeInfo {
        name: "sprout",
        description: "Sprout: receiver-side stochastic forecast of link deliveries, window = 5th-percentile deliveries within 100 ms",
        source: "Winstein, Sivaraman, Balakrishnan, USENIX NSDI 2013",
        doc: "sprout.md",
        params: || params_of(Some(SproutConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Sprout::new(checked(p)?))),
    },
    SchemeInfo {
        name: "verus",
        description: "Verus: delay-profile window, D_est adjusted every 5 ms epoch",
        source: "Zaki, Pötsch, Chen, Subramanian, Görg, ACM SIGCOMM 2015",
        doc: "verus.md",
        params: || params_of(Some(VerusConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Verus::new(checked(p)?))),
    },
    SchemeInfo {
        name: "copa",
        description: "Copa: target rate 1/(delta x d_q), velocity, competitive-mode switching",
        source: "Arun, Balakrishnan, USENIX NSDI 2018",
        doc: "copa.md",
        params: || params_of(Some(CopaConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Copa::new(checked(p)?))),
    },
    SchemeInfo {
        name: "ledbat",
        description: "LEDBAT: one-way delay to a 100 ms target; variant = \"plusplus\" for LEDBAT++",
        source: "RFC 6817 (LEDBAT); draft-irtf-iccrg-ledbat-plus-plus (LEDBAT++)",
        doc: "ledbat.md",
        params: || params_of(Some(LedbatConfig::default()), &[]),
        build: |p, _| Ok(Box::new(Ledbat::new(checked(p)?))),
    },
    SchemeInfo {
        name: "ledbat++",
        description: "LEDBAT++: RTT to a 60 ms target, periodic slowdowns",
        source: "draft-irtf-iccrg-ledbat-plus-plus",
        doc: "ledbat.md",
        params: || {
            let mut params = params_of(Some(LedbatConfig::default()), &[]);
            for p in &mut params {
                if p.key == "variant" {
                    p.default = ParamDefault::Fixed(toml::Value::String("plusplus".into()));
                }
            }
            params
        },
        build: |p, _| {
            if p.contains_key("variant") {
                return Err(SchemeError {
                    key: "params.variant".into(),
                    message: "ledbat++ fixes variant = \"plusplus\"; use scheme \"ledbat\" to choose it"
                        .into(),
                });
            }
            let mut cfg: LedbatConfig = checked(p)?;
            cfg.variant = Variant::Plusplus;
            cfg.check()?;
            Ok(Box::new(Ledbat::new(cfg)))
        },
    },
    SchemeInfo {
        name: "pcc-vivace",
        description: "PCC-Vivace: gradient ascent on x^0.9 - 900 x dRTT/dt - 11.35 x L over monitor intervals",
        source: "Dong et al., USENIX NSDI 2018",
        doc: "pcc-vivace.md",
        params: || params_of(Some(VivaceConfig::default()), &["seed"]),
        build: |p, seed| {
            let mut cfg: VivaceConfig = checked(p)?;
            if !p.contains_key("seed") {
                cfg.seed = seed;
            }
            Ok(Box::new(Vivace::new(cfg)))
        },
    },
    SchemeInfo {
        name: "fixed",
        description: "A fixed cwnd (and optional fixed pacing rate): the reference of César Fig. 1",
        source: "César Fig. 1 (a window fixed at the BDP)",
        doc: "fixed.md",
        params: || {
            vec![
                Param {
                    key: "cwnd",
                    default: ParamDefault::Required,
                },
                Param {
                    key: "pacing_mbps",
                    default: ParamDefault::Unset,
                },
            ]
        },
        build: |p, _| Ok(Box::new(Fixed::new(checked(p)?))),
    },
];

/// Names of all schemes.
pub fn names() -> Vec<&'static str> {
    SCHEMES.iter().map(|s| s.name).collect()
}

/// The scheme called `name` (or an alias of it).
pub fn find(name: &str) -> Option<&'static SchemeInfo> {
    let name = if name == "reno" { "newreno" } else { name };
    SCHEMES.iter().find(|s| s.name == name)
}

/// Build the controller `name` with `params`. `flow_seed` feeds algorithms that need a
/// random choice (BBR's initial gain-cycle phase, CDG's backoff), keeping runs
/// deterministic.
pub fn build(
    name: &str,
    params: &toml::Table,
    flow_seed: u64,
) -> Result<Box<dyn CongestionControl>, SchemeError> {
    match find(name) {
        Some(info) => (info.build)(params, flow_seed),
        None => Err(SchemeError {
            key: "scheme".into(),
            message: format!(
                "unknown scheme \"{name}\";{} expected one of: {}",
                closest(name, SCHEMES.iter().map(|s| s.name))
                    .map(|c| format!(" did you mean \"{c}\"?"))
                    .unwrap_or_default(),
                names().join(", ")
            ),
        }),
    }
}

/// A configuration the registry can read from `params` and check.
trait SchemeConfig: DeserializeOwned {
    fn check(&self) -> Result<(), SchemeError>;
}

/// Configurations with a `validate()` that names the offending field.
macro_rules! validated {
    ($($config:ty),* $(,)?) => {$(
        impl SchemeConfig for $config {
            fn check(&self) -> Result<(), SchemeError> {
                self.validate().map_err(|e| SchemeError {
                    key: format!("params.{}", e.field),
                    message: e.reason,
                })
            }
        }
    )*};
}
validated!(
    BbrConfig,
    C2tcpConfig,
    C2tcpIfipConfig,
    PropRateConfig,
    CesarConfig,
    VegasConfig,
    IllinoisConfig,
    CdgConfig,
    SproutConfig,
    VerusConfig,
    CopaConfig,
    LedbatConfig,
    VivaceConfig,
    FixedConfig,
);

/// Configurations whose deserialisation already checks every value.
macro_rules! unchecked {
    ($($config:ty),* $(,)?) => {$(
        impl SchemeConfig for $config {
            fn check(&self) -> Result<(), SchemeError> {
                Ok(())
            }
        }
    )*};
}
unchecked!(NewRenoConfig, CubicConfig, WestwoodConfig);

/// Read `params` into `C` and check it. Unknown keys suggest the closest valid one.
fn checked<C: SchemeConfig>(params: &toml::Table) -> Result<C, SchemeError> {
    let cfg: C =
        serde_path_to_error::deserialize(toml::Value::Table(params.clone())).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().message().trim().to_string();
            let hint = unknown_field(&message)
                .and_then(|bad| closest(bad, field_names::<C>().iter().copied()))
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default();
            SchemeError {
                key: if path == "." {
                    "params".into()
                } else {
                    format!("params.{path}")
                },
                message: format!("{message}{hint}"),
            }
        })?;
    cfg.check()?;
    Ok(cfg)
}

/// The key named by serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// The candidate closest to `word` by edit distance (a swap of two neighbours counts as
/// one edit), if close enough to be a likely typo
/// (at most a third of the longer word, and at least 1 edit allowed).
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::osa_distance(word, c), c))
        .filter(|&(d, c)| d > 0 && d <= (word.len().max(c.len()) / 3).max(1))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// The field names of a `#[derive(Deserialize)]` struct, as serde declares them.
fn field_names<C: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = C::deserialize(introspect::FieldNames(&mut fields));
    fields
}

/// Every field of `C` with its default from `defaults` (fields that serialise to
/// nothing are unset options); the keys in `seeded` default to the flow's seed.
fn params_of<C: DeserializeOwned + Serialize>(defaults: Option<C>, seeded: &[&str]) -> Vec<Param> {
    let table = defaults
        .and_then(|d| toml::Table::try_from(d).ok())
        .unwrap_or_default();
    field_names::<C>()
        .iter()
        .map(|&key| Param {
            key,
            default: if seeded.contains(&key) {
                ParamDefault::FlowSeed
            } else {
                table
                    .get(key)
                    .cloned()
                    .map_or(ParamDefault::Unset, ParamDefault::Value)
            },
        })
        .collect()
}

fn proprate_preset_params(t_buff_ms: f64) -> Vec<Param> {
    let mut params = params_of(Some(PropRateConfig::default()), &[]);
    for p in &mut params {
        if p.key == "t_buff_ms" {
            p.default = ParamDefault::Fixed(toml::Value::Float(t_buff_ms));
        }
    }
    params
}

fn proprate_preset(
    name: &str,
    params: &toml::Table,
    t_buff_ms: f64,
) -> Result<Box<dyn CongestionControl>, SchemeError> {
    if params.contains_key("t_buff_ms") {
        return Err(SchemeError {
            key: "params.t_buff_ms".into(),
            message: format!(
                "{name} fixes t_buff_ms = {t_buff_ms}; use scheme \"proprate\" to choose it"
            ),
        });
    }
    let mut table = params.clone();
    table.insert("t_buff_ms".into(), toml::Value::Float(t_buff_ms));
    let cfg: PropRateConfig = checked(&table)?;
    Ok(Box::new(PropRate::new(cfg)))
}

/// A deserializer that only records the field list serde hands to `deserialize_struct`.
mod introspect {
    use serde::de::{self, Visitor};

    pub(super) struct FieldNames<'a>(pub &'a mut &'static [&'static str]);

    impl<'de> de::Deserializer<'de> for FieldNames<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs are introspected"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn every_scheme_builds_with_its_defaults_and_lists_its_parameters() {
        for s in SCHEMES {
            let params = if s.name == "fixed" {
                table("cwnd = 10")
            } else {
                toml::Table::new()
            };
            let cc = build(s.name, &params, 7).unwrap_or_else(|e| panic!("{}: {e:?}", s.name));
            assert!(!cc.name().is_empty());
            assert!(!s.source.is_empty());
            let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/algorithms")
                .join(s.doc);
            assert!(page.is_file(), "{}: no page {}", s.name, page.display());
            // Every listed default is accepted back as an explicit parameter.
            let mut explicit = params.clone();
            for p in s.params() {
                if let ParamDefault::Value(v) = p.default {
                    explicit.insert(p.key.into(), v);
                }
            }
            build(s.name, &explicit, 7).unwrap_or_else(|e| panic!("{}: {e:?}", s.name));
        }
    }

    /// Linux's `tcp_validate_congestion_control` rule, which Rust cannot check at
    /// compile time (a default `cong_avoid` exists): every scheme either owns cwnd or
    /// raises it through `cong_avoid`.
    #[test]
    fn every_scheme_provides_cong_avoid_or_cong_control() {
        for s in SCHEMES {
            let params = if s.name == "fixed" {
                table("cwnd = 10")
            } else {
                toml::Table::new()
            };
            let cc = build(s.name, &params, 7).unwrap();
            cellcc_congestion::testing::check_cong_avoid_or_cong_control(cc)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn parameters_come_from_the_config_with_defaults_and_seeds() {
        let bbr = find("bbr").unwrap().params();
        let keys: Vec<_> = bbr.iter().map(|p| p.key).collect();
        assert!(keys.contains(&"cycle_seed"), "{keys:?}");
        let seed = bbr.iter().find(|p| p.key == "cycle_seed").unwrap();
        assert_eq!(seed.default, ParamDefault::FlowSeed);
        let cubic = find("cubic").unwrap().params();
        let beta = cubic.iter().find(|p| p.key == "beta").unwrap();
        assert_eq!(beta.default, ParamDefault::Value(toml::Value::Integer(717)));
        let l = find("proprate-l").unwrap().params();
        let t = l.iter().find(|p| p.key == "t_buff_ms").unwrap();
        assert_eq!(t.default, ParamDefault::Fixed(toml::Value::Float(20.0)));
        assert!(find("newreno").unwrap().params().is_empty());
    }

    #[test]
    fn unknown_names_and_keys_suggest_the_closest_valid_one() {
        let e = build("cubc", &toml::Table::new(), 1).unwrap_err();
        assert_eq!(e.key, "scheme");
        assert!(
            e.message.contains("did you mean \"cubic\"?"),
            "{}",
            e.message
        );
        let e = build("copacabana", &toml::Table::new(), 1).unwrap_err();
        assert!(!e.message.contains("did you mean"), "{}", e.message);
        let e = build("cubic", &table("btea = 700"), 1).unwrap_err();
        assert_eq!(e.key, "params.btea");
        assert!(e.message.contains("did you mean `beta`?"), "{}", e.message);
        let e = build("newreno", &table("x = 1"), 1).unwrap_err();
        assert_eq!(e.key, "params.x");
    }

    #[test]
    fn presets_fix_their_parameter() {
        let e = build("proprate-m", &table("t_buff_ms = 30.0"), 1).unwrap_err();
        assert_eq!(e.key, "params.t_buff_ms");
        assert!(find("reno").is_some());
    }
}
