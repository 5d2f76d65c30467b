//! `list`, `set` and `stats`: read and write a running loader's pinned maps, with field
//! names and types taken from the objects' BTF.

use std::collections::BTreeMap;
use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::bail;
use crate::error::{Context, Result};
use crate::flow::FlowKey;
use crate::layout::Layout;
use crate::objects::Algo;
use crate::signals;
use crate::system::{self, LoaderState, ALLOWED, AVAILABLE};

/// One of `algo`'s pinned maps (`defaults`, `params`, `stats`).
pub(crate) fn pinned(algo: &Algo, suffix: &str) -> Result<MapHandle> {
    let path = system::pin_path(&algo.algo, &algo.map_name(suffix));
    if !path.exists() {
        bail!(
            "{} is not loaded ({} does not exist); start `cellcc-kernel load` first",
            algo.kernel_name,
            path.display()
        );
    }
    MapHandle::from_pinned_path(&path).context(format!("opening {}", path.display()))
}

/// Where the effective default parameters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `ALGO_defaults[0]`, valid.
    DefaultsMap,
    /// `ALGO_builtin_params` (the defaults entry is not valid, or nothing is loaded).
    Builtin,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::DefaultsMap => "defaults map",
            Source::Builtin => "built-in",
        }
    }
}

/// Whether the first field (`valid`) of a params value is non-zero.
fn is_valid(params: &Layout, bytes: &[u8]) -> bool {
    params
        .get_by_name(bytes, "valid")
        .is_some_and(|v| v.as_u64() != 0)
}

/// The parameters connections without an override use, from the pinned defaults map if
/// the algorithm is loaded.
pub(crate) fn effective_defaults(algo: &Algo) -> Result<(Vec<u8>, Source)> {
    let path = system::pin_path(&algo.algo, &algo.map_name("defaults"));
    if !path.exists() {
        return Ok((algo.builtin.clone(), Source::Builtin));
    }
    let map = pinned(algo, "defaults")?;
    let value = map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context(format!("reading {}[0]", algo.map_name("defaults")))?;
    match value {
        Some(v) if v.len() == algo.params.size && is_valid(&algo.params, &v) => {
            Ok((v, Source::DefaultsMap))
        }
        _ => Ok((algo.builtin.clone(), Source::Builtin)),
    }
}

/// The parameters `flow` runs with: its override if valid, else the defaults.
pub(crate) fn flow_params(algo: &Algo, flow: FlowKey) -> Result<Vec<u8>> {
    let map = pinned(algo, "params")?;
    let v = map
        .lookup(&flow.to_bytes(), MapFlags::ANY)
        .context(format!("reading {}", algo.map_name("params")))?;
    match v {
        Some(v) if v.len() == algo.params.size && is_valid(&algo.params, &v) => Ok(v),
        _ => Ok(effective_defaults(algo)?.0),
    }
}

/// Writes `flow`'s override (or the defaults when `flow` is None) after applying
/// `settings` (`key=value`) to the parameters in effect; `valid` becomes 1 unless set.
pub(crate) fn write_params(
    algo: &Algo,
    flow: Option<FlowKey>,
    settings: &[String],
) -> Result<Vec<u8>> {
    let mut bytes = match flow {
        Some(f) => flow_params(algo, f)?,
        None => effective_defaults(algo)?.0,
    };
    algo.params.set_u64(&mut bytes, "valid", 1)?;
    for s in settings {
        let Some((k, v)) = s.split_once('=') else {
            bail!(
                "{s:?} is not key=value; keys of {}: {}",
                algo.algo,
                algo.params.names()
            );
        };
        algo.params.set(&mut bytes, k.trim(), v.trim())?;
    }
    match flow {
        Some(f) => pinned(algo, "params")?
            .update(&f.to_bytes(), &bytes, MapFlags::ANY)
            .context(format!("writing {}[{f}]", algo.map_name("params")))?,
        None => pinned(algo, "defaults")?
            .update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY)
            .context(format!("writing {}[0]", algo.map_name("defaults")))?,
    }
    Ok(bytes)
}

/// `set ALGO key=value... [--flow F]`.
pub(crate) fn set(algo: &Algo, settings: &[String], flow: Option<FlowKey>) -> Result<()> {
    if settings.is_empty() {
        bail!(
            "nothing to set; keys of {}: {}",
            algo.algo,
            algo.params.names()
        );
    }
    let bytes = write_params(algo, flow, settings)?;
    let target = flow.map_or("defaults".to_string(), |f| format!("flow {f}"));
    println!(
        "{} {target}: {}",
        algo.kernel_name,
        algo.params.format(&bytes)
    );
    Ok(())
}

/// `list [--json]`.
pub(crate) fn list(algos: &[Algo], json: bool) -> Result<()> {
    let loader = LoaderState::read()?.filter(|s| system::loader_alive(s.pid));
    let available = system::read_list(AVAILABLE)?;
    let allowed = system::read_list(ALLOWED)?;
    let mut rows = Vec::new();
    for a in algos {
        let (defaults, source) = effective_defaults(a)?;
        rows.push((
            a,
            available.contains(&a.kernel_name),
            allowed.contains(&a.kernel_name),
            defaults,
            source,
        ));
    }
    if json {
        let algos: Vec<serde_json::Value> = rows
            .iter()
            .map(|(a, reg, allow, d, src)| {
                serde_json::json!({
                    "algo": a.algo,
                    "name": a.kernel_name,
                    "registered": reg,
                    "allowed": allow,
                    "defaults_source": src.as_str(),
                    "defaults": a.params.to_json(d),
                })
            })
            .collect();
        let out = serde_json::json!({
            "loader_pid": loader.as_ref().map(|s| s.pid),
            "algorithms": algos,
        });
        println!("{out}");
        return Ok(());
    }
    match &loader {
        Some(s) => println!("loader: pid {} ({})", s.pid, system::PIDFILE),
        None => println!("loader: not running"),
    }
    for (a, reg, allow, d, src) in &rows {
        let yn = |b: &bool| if *b { "yes" } else { "no" };
        println!(
            "{:<18} registered={:<3} allowed={:<3} defaults ({}): {}",
            a.kernel_name,
            yn(reg),
            yn(allow),
            src.as_str(),
            a.params.format(d)
        );
    }
    Ok(())
}

/// Every entry of `algo`'s stats map, ordered by flow.
pub(crate) fn read_stats(algo: &Algo) -> Result<BTreeMap<FlowKey, Vec<u8>>> {
    let map = pinned(algo, "stats")?;
    let mut out = BTreeMap::new();
    for key in map.keys() {
        let Some(flow) = FlowKey::from_bytes(&key) else {
            continue;
        };
        // An entry may vanish (LRU) between keys() and lookup().
        if let Some(v) = map
            .lookup(&key, MapFlags::ANY)
            .context(format!("reading {}", algo.map_name("stats")))?
        {
            if v.len() == algo.stats.size {
                out.insert(flow, v);
            }
        }
    }
    Ok(out)
}

fn print_stats(algos: &[Algo], json: bool) -> Result<()> {
    if json {
        let mut all = Vec::new();
        for a in algos {
            for (flow, v) in read_stats(a)? {
                all.push(serde_json::json!({
                    "algo": a.algo,
                    "flow": flow.to_string(),
                    "stats": a.stats.to_json(&v),
                }));
            }
        }
        println!("{}", serde_json::Value::Array(all));
        return Ok(());
    }
    for a in algos {
        let stats = read_stats(a)?;
        println!("{} ({} flows)", a.kernel_name, stats.len());
        if stats.is_empty() {
            continue;
        }
        let mut header = vec!["flow".to_string()];
        header.extend(a.stats.fields.iter().map(|f| f.name.clone()));
        let mut table = vec![header];
        for (flow, v) in &stats {
            let mut row = vec![flow.to_string()];
            row.extend(a.stats.fields.iter().map(|f| a.stats.get(v, f).to_string()));
            table.push(row);
        }
        let widths: Vec<usize> = (0..table[0].len())
            .map(|c| table.iter().map(|r| r[c].len()).max().unwrap_or(0))
            .collect();
        for row in &table {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, w))| {
                    if i == 0 {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            println!("{}", cells.join("  ").trim_end());
        }
    }
    Ok(())
}

/// `stats [ALGO] [--json] [--watch MS]`.
pub(crate) fn stats(algos: &[Algo], json: bool, watch: Option<u64>) -> Result<()> {
    let Some(ms) = watch else {
        return print_stats(algos, json);
    };
    signals::block_stop_signals()?;
    loop {
        print_stats(algos, json)?;
        if signals::wait_stop_signal(Some(Duration::from_millis(ms.max(1))))? != 0 {
            return Ok(());
        }
    }
}
