//! The registry of congestion controls a scenario can name.
//!
//! Each entry turns a scenario's `params` table into the algorithm's `Config` (unknown
//! keys and wrong types are errors naming the key) and builds a fresh controller.

use cellcc_congestion::bbr::{Bbr, BbrConfig};
use cellcc_congestion::c2tcp::{C2tcp, C2tcpConfig, C2tcpConfigError, C2tcpIfipConfig};
use cellcc_congestion::cubic::{Cubic, CubicConfig};
use cellcc_congestion::fixed::{Fixed, FixedConfig};
use cellcc_congestion::reno::NewReno;
use cellcc_congestion::CongestionControl;
use serde::de::DeserializeOwned;

/// A scheme could not be built: the key (relative to the flow) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemeError {
    pub key: String,
    pub message: String,
}

/// A registered scheme.
pub struct SchemeInfo {
    pub name: &'static str,
    pub description: &'static str,
}

/// Every scheme, in the order reports list them.
pub const SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "newreno",
        description: "NewReno (Linux tcp_cong.c Reno with SACK recovery)",
    },
    SchemeInfo {
        name: "cubic",
        description: "CUBIC with HyStart (Linux tcp_cubic.c)",
    },
    SchemeInfo {
        name: "bbr",
        description: "BBR v1 (Linux tcp_bbr.c)",
    },
    SchemeInfo {
        name: "c2tcp",
        description: "C2TCP (JSAC 2019: Setpoint = alpha x min RTT, Tuner to a Target) over CUBIC or NewReno",
    },
    SchemeInfo {
        name: "c2tcp-ifip",
        description: "C2TCP (IFIP Networking 2018: absolute Target and Interval) over CUBIC or NewReno",
    },
    SchemeInfo {
        name: "proprate",
        description: "PropRate (CoNEXT 2017): rate-based buffer regulation to a target buffer delay t_buff_ms",
    },
    SchemeInfo {
        name: "proprate-l",
        description: "PropRate PR(L): t_buff_ms = 20",
    },
    SchemeInfo {
        name: "proprate-m",
        description: "PropRate PR(M): t_buff_ms = 40",
    },
    SchemeInfo {
        name: "proprate-h",
        description: "PropRate PR(H): t_buff_ms = 80",
    },
    SchemeInfo {
        name: "cesar",
        description: "César: scheduling-unit estimation and step-wise cwnd, BBR fallback",
    },
    SchemeInfo {
        name: "copa",
        description: "Copa (NSDI 2018): target rate 1/(delta x d_q), velocity, competitive-mode switching",
    },
    SchemeInfo {
        name: "ledbat",
        description: "LEDBAT (RFC 6817): one-way delay to a 100 ms target; variant = \"plusplus\" for LEDBAT++",
    },
    SchemeInfo {
        name: "ledbat++",
        description: "LEDBAT++ (draft-irtf-iccrg-ledbat-plus-plus): RTT to a 60 ms target, periodic slowdowns",
    },
    SchemeInfo {
        name: "pcc-vivace",
        description: "PCC-Vivace (NSDI 2018): gradient ascent on x^0.9 - 900 x dRTT/dt - 11.35 x L over monitor intervals",
    },
    SchemeInfo {
        name: "fixed",
        description: "A fixed cwnd (and optional fixed pacing rate): the reference of César Fig. 1",
    },
];

/// Names of all schemes.
pub fn names() -> Vec<&'static str> {
    SCHEMES.iter().map(|s| s.name).collect()
}

fn config<C: DeserializeOwned>(params: &toml::Table) -> Result<C, SchemeError> {
    serde_path_to_error::deserialize(toml::Value::Table(params.clone())).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        SchemeError {
            key: if path == "." {
                "params".into()
            } else {
                format!("params.{path}")
            },
            message: inner.message().trim().to_string(),
        }
    })
}

fn no_params(params: &toml::Table, scheme: &str) -> Result<(), SchemeError> {
    match params.keys().next() {
        Some(k) => Err(SchemeError {
            key: format!("params.{k}"),
            message: format!("{scheme} takes no parameters"),
        }),
        None => Ok(()),
    }
}

/// Build the controller `name` with `params`. `flow_seed` feeds algorithms that need a
/// random choice (BBR's initial gain-cycle phase), keeping runs deterministic.
pub fn build(
    name: &str,
    params: &toml::Table,
    flow_seed: u64,
) -> Result<Box<dyn CongestionControl>, SchemeError> {
    match name {
        "newreno" | "reno" => {
            no_params(params, name)?;
            Ok(Box::new(NewReno::new()))
        }
        "cubic" => Ok(Box::new(Cubic::new(config::<CubicConfig>(params)?))),
        "fixed" => {
            let cfg = config::<FixedConfig>(params)?;
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            Ok(Box::new(Fixed::new(cfg)))
        }
        "bbr" => {
            let mut cfg = config::<BbrConfig>(params)?;
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            if !params.contains_key("cycle_seed") {
                cfg.cycle_seed = flow_seed;
            }
            Ok(Box::new(Bbr::new(cfg)))
        }
        "c2tcp" | "c2tcp-ifip" => {
            let named = |e: C2tcpConfigError| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            };
            if name == "c2tcp" {
                let cfg = config::<C2tcpConfig>(params)?;
                cfg.validate().map_err(named)?;
                Ok(Box::new(C2tcp::new(cfg)))
            } else {
                let cfg = config::<C2tcpIfipConfig>(params)?;
                cfg.validate().map_err(named)?;
                Ok(Box::new(C2tcp::ifip(cfg)))
            }
        }
        "proprate" | "proprate-l" | "proprate-m" | "proprate-h" => {
            use cellcc_congestion::proprate::{self as pr, PropRate, PropRateConfig};
            let mut cfg = config::<PropRateConfig>(params)?;
            let preset = match name {
                "proprate-l" => Some(pr::PRESET_L_MS),
                "proprate-m" => Some(pr::PRESET_M_MS),
                "proprate-h" => Some(pr::PRESET_H_MS),
                _ => None,
            };
            if let Some(t_buff_ms) = preset {
                if params.contains_key("t_buff_ms") {
                    return Err(SchemeError {
                        key: "params.t_buff_ms".into(),
                        message: format!(
                            "{name} fixes t_buff_ms = {t_buff_ms}; use scheme \"proprate\" to choose it"
                        ),
                    });
                }
                cfg.t_buff_ms = t_buff_ms;
            }
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            Ok(Box::new(PropRate::new(cfg)))
        }
        "cesar" => {
            use cellcc_congestion::cesar::{Cesar, CesarConfig};
            let mut cfg = config::<CesarConfig>(params)?;
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            let seeded = params
                .get("bbr")
                .and_then(|b| b.as_table())
                .is_some_and(|b| b.contains_key("cycle_seed"));
            if !seeded {
                cfg.bbr.cycle_seed = flow_seed;
            }
            Ok(Box::new(Cesar::new(cfg)))
        }
        "copa" => {
            use cellcc_congestion::copa::{Copa, CopaConfig};
            let cfg = config::<CopaConfig>(params)?;
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            Ok(Box::new(Copa::new(cfg)))
        }
        "ledbat" | "ledbat++" => {
            use cellcc_congestion::ledbat::{Ledbat, LedbatConfig, Variant};
            let mut cfg = config::<LedbatConfig>(params)?;
            if name == "ledbat++" {
                if params.contains_key("variant") {
                    return Err(SchemeError {
                        key: "params.variant".into(),
                        message: "ledbat++ fixes variant = \"plusplus\"; use scheme \"ledbat\" to choose it".into(),
                    });
                }
                cfg.variant = Variant::Plusplus;
            }
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            Ok(Box::new(Ledbat::new(cfg)))
        }
        "pcc-vivace" => {
            use cellcc_congestion::vivace::{Vivace, VivaceConfig};
            let mut cfg = config::<VivaceConfig>(params)?;
            cfg.validate().map_err(|e| SchemeError {
                key: format!("params.{}", e.field),
                message: e.reason,
            })?;
            if !params.contains_key("seed") {
                cfg.seed = flow_seed;
            }
            Ok(Box::new(Vivace::new(cfg)))
        }
        _ => Err(SchemeError {
            key: "scheme".into(),
            message: format!(
                "unknown scheme \"{name}\"; expected one of: {}",
                names().join(", ")
            ),
        }),
    }
}
