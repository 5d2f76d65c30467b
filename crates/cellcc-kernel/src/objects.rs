//! The embedded BPF objects and the algorithms they define, discovered by convention
//! (bpf/cellcc.h, docs/kernel.md): each `SEC(".struct_ops.link")` variable ALGO is one
//! algorithm, with maps `ALGO_defaults`, `ALGO_params`, `ALGO_stats`, structs
//! `ALGO_params`/`ALGO_stats` and the `.rodata` variable `ALGO_builtin_params`.

use libbpf_rs::btf::types::{DataSec, Struct};
use libbpf_rs::btf::BtfType;
use libbpf_rs::{Btf, MapType, ObjectBuilder};

use crate::bail;
use crate::error::{Context, Error, Result};
use crate::layout::Layout;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/objects.rs"));
}

/// Length of `tcp_congestion_ops.name` (`TCP_CA_NAME_MAX`).
const CA_NAME_MAX: usize = 16;

/// One algorithm found in an embedded object.
#[derive(Clone, Debug)]
pub(crate) struct Algo {
    /// The struct_ops variable's name, the prefix of its maps and structs (`c2tcp`).
    pub algo: String,
    /// The name it registers under (`cellcc_c2tcp`).
    pub kernel_name: String,
    /// The object's source file stem (`c2tcp` for bpf/c2tcp.bpf.c).
    pub object_name: &'static str,
    /// The object's ELF bytes.
    pub object: &'static [u8],
    /// `struct ALGO_params`.
    pub params: Layout,
    /// `struct ALGO_stats`.
    pub stats: Layout,
    /// `ALGO_builtin_params`, the compiled-in defaults, as bytes of `params`.
    pub builtin: Vec<u8>,
}

impl Algo {
    /// The name of this algorithm's map with `suffix` (`defaults`, `params`, `stats`).
    pub(crate) fn map_name(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.algo)
    }
}

/// The embedded objects, or why there are none.
pub(crate) fn embedded() -> Result<&'static [(&'static str, &'static [u8])]> {
    if let Some(reason) = embedded::MISSING {
        bail!(
            "this binary embeds no BPF objects: {reason}; install what is missing and rebuild \
             (cargo build -p cellcc-kernel)"
        );
    }
    if embedded::OBJECTS.is_empty() {
        bail!("this binary embeds no BPF objects (bpf/*.bpf.c was empty at build time)");
    }
    Ok(embedded::OBJECTS)
}

/// Every algorithm of every embedded object, in object order.
pub(crate) fn discover() -> Result<Vec<Algo>> {
    let mut algos = Vec::new();
    for &(stem, bytes) in embedded()? {
        algos.extend(
            discover_object(stem, bytes).map_err(|e| e.context(format!("bpf/{stem}.bpf.c")))?,
        );
    }
    Ok(algos)
}

/// The algorithms named in `wanted` (all if empty); unknown names are errors listing the
/// known ones. Accepts `c2tcp` and `cellcc_c2tcp`.
pub(crate) fn select(all: &[Algo], wanted: &[String]) -> Result<Vec<Algo>> {
    if wanted.is_empty() {
        return Ok(all.to_vec());
    }
    let mut out = Vec::new();
    for w in wanted {
        let Some(a) = all.iter().find(|a| &a.algo == w || &a.kernel_name == w) else {
            let known: Vec<&str> = all.iter().map(|a| a.algo.as_str()).collect();
            bail!("unknown algorithm {w:?}; embedded: {}", known.join(", "));
        };
        if !out.iter().any(|o: &Algo| o.algo == a.algo) {
            out.push(a.clone());
        }
    }
    Ok(out)
}

fn discover_object(stem: &'static str, bytes: &'static [u8]) -> Result<Vec<Algo>> {
    let mut builder = ObjectBuilder::default();
    builder.name(stem).context("naming the object")?;
    let open = builder.open_memory(bytes).context("opening the object")?;
    let btf = Btf::from_raw(stem, bytes)
        .context("reading BTF")?
        .ok_or_else(|| Error::new("the object has no BTF (compile with -g)"))?;

    let mut rodata: Option<Vec<u8>> = None;
    let mut struct_ops: Vec<(String, Vec<u8>)> = Vec::new();
    let mut map_names: Vec<String> = Vec::new();
    for map in open.maps() {
        let name = map.name().to_string_lossy().into_owned();
        if name.ends_with(".rodata") {
            rodata = map.initial_value().map(<[u8]>::to_vec);
        }
        if map.map_type() == MapType::StructOps {
            let init = map.initial_value().map(<[u8]>::to_vec).unwrap_or_default();
            struct_ops.push((name.clone(), init));
        }
        map_names.push(name);
    }
    if struct_ops.is_empty() {
        bail!("no SEC(\".struct_ops.link\") struct tcp_congestion_ops variable");
    }

    let mut algos = Vec::new();
    for (algo, ops) in struct_ops {
        for suffix in ["defaults", "params", "stats"] {
            let want = format!("{algo}_{suffix}");
            if !map_names.contains(&want) {
                bail!("map {want} is missing (the convention requires {algo}_defaults, {algo}_params, {algo}_stats)");
            }
        }
        let params = Layout::from_btf(&btf, &format!("{algo}_params"))?;
        if params.fields.first().map(|f| (f.name.as_str(), f.size)) != Some(("valid", 4)) {
            bail!("the first member of struct {algo}_params must be `__u32 valid;`");
        }
        let stats = Layout::from_btf(&btf, &format!("{algo}_stats"))?;
        let builtin = builtin_params(&btf, rodata.as_deref(), &algo, params.size)?;
        let kernel_name = ca_name(&btf, &ops).unwrap_or_else(|| format!("cellcc_{algo}"));
        algos.push(Algo {
            algo,
            kernel_name,
            object_name: stem,
            object: bytes,
            params,
            stats,
            builtin,
        });
    }
    Ok(algos)
}

/// The bytes of `ALGO_builtin_params` in `.rodata`, located through the `.rodata`
/// datasec of the object's BTF.
fn builtin_params(
    btf: &Btf<'_>,
    rodata: Option<&[u8]>,
    algo: &str,
    size: usize,
) -> Result<Vec<u8>> {
    let var = format!("{algo}_builtin_params");
    let missing = || {
        Error::new(format!(
            "const volatile struct {algo}_params {var} is missing from .rodata"
        ))
    };
    let sec = btf
        .type_by_name::<DataSec<'_>>(".rodata")
        .ok_or_else(missing)?;
    let rodata = rodata.ok_or_else(missing)?;
    for v in sec.iter() {
        let name = btf
            .type_by_id::<BtfType<'_>>(v.ty)
            .and_then(|t| t.name().map(|n| n.to_string_lossy().into_owned()));
        if name.as_deref() != Some(var.as_str()) {
            continue;
        }
        let start = v.offset as usize;
        if v.size != size || start + size > rodata.len() {
            bail!("{var} has {} bytes, struct {algo}_params {size}", v.size);
        }
        return Ok(rodata[start..start + size].to_vec());
    }
    Err(missing())
}

/// `tcp_congestion_ops.name` in the struct_ops variable's initial value.
fn ca_name(btf: &Btf<'_>, ops: &[u8]) -> Option<String> {
    let st = btf.type_by_name::<Struct<'_>>("tcp_congestion_ops")?;
    let member = st.iter().find(|m| m.name.is_some_and(|n| n == "name"))?;
    let libbpf_rs::btf::types::MemberAttr::Normal { offset } = member.attr else {
        return None;
    };
    let start = (offset / 8) as usize;
    let raw = ops.get(start..start + CA_NAME_MAX)?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(CA_NAME_MAX);
    let name = std::str::from_utf8(&raw[..end]).ok()?;
    (!name.is_empty()).then(|| name.to_string())
}
