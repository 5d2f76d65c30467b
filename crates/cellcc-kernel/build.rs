//! Compiles every `bpf/*.bpf.c` of the repository into a BPF object and embeds it.
//!
//! Steps: `bpftool btf dump file /sys/kernel/btf/vmlinux format c` writes `vmlinux.h` into
//! `OUT_DIR` (never into the source tree); `clang -g -O2 -target bpf -D__TARGET_ARCH_x86`
//! (the architecture being built for) compiles each source (with the headers it includes,
//! `bpf/cellcc.h` and `bpf/ALGO/*.h`) with `bpf/`, `OUT_DIR` and libbpf's headers (from
//! `libbpf-sys`) on the include path, warnings as errors; `OUT_DIR/objects.rs` lists the
//! objects for `include!`.
//!
//! When clang, bpftool or the kernel BTF is missing, the build still succeeds with a
//! cargo warning: `objects.rs` then embeds no object and records why, and the binary says
//! so at run time. A BPF source that does not compile fails the build (a code error).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The running kernel's BTF, the source of `vmlinux.h`.
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Where `bpftool` and `clang` are looked for besides `PATH` (Debian puts bpftool in sbin).
const EXTRA_TOOL_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/local/sbin"];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets it"));
    let bpf_dir = manifest.join("../../bpf");
    // Cargo scans a watched directory recursively, so a new or edited file anywhere under
    // bpf/ (the per-algorithm headers in bpf/cesar/ and bpf/proprate/ included) rebuilds
    // the objects; every C source and header is also named, file by file.
    println!("cargo:rerun-if-changed={}", bpf_dir.display());
    for file in c_files(&bpf_dir) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-env-changed=CELLCC_CLANG");
    println!("cargo:rerun-if-env-changed=CELLCC_BPFTOOL");

    let sources = bpf_sources(&bpf_dir);

    let objects = match build_objects(&bpf_dir, &out, &sources) {
        Ok(objects) => Ok(objects),
        Err(Missing(reason)) => {
            println!("cargo:warning=BPF objects not built: {reason}");
            Err(reason)
        }
    };
    write_manifest(&out, &objects);
}

/// A build requirement that is absent on this machine.
struct Missing(String);

fn bpf_sources(bpf_dir: &Path) -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = fs::read_dir(bpf_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(".bpf.c"))
                })
                .collect()
        })
        .unwrap_or_default();
    sources.sort();
    sources
}

/// Every `.c` and `.h` file under `dir`, at any depth, sorted.
fn c_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "c" || ext == "h") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Finds `name` (or the path in `env_var`) on `PATH` or in [`EXTRA_TOOL_DIRS`].
fn find_tool(name: &str, env_var: &str) -> Option<PathBuf> {
    if let Ok(p) = env::var(env_var) {
        return Some(PathBuf::from(p));
    }
    let path = env::var("PATH").unwrap_or_default();
    path.split(':')
        .map(PathBuf::from)
        .chain(EXTRA_TOOL_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn build_objects(
    bpf_dir: &Path,
    out: &Path,
    sources: &[PathBuf],
) -> Result<Vec<(String, PathBuf)>, Missing> {
    if sources.is_empty() {
        return Err(Missing(format!(
            "no *.bpf.c sources in {}",
            bpf_dir.display()
        )));
    }
    if !Path::new(VMLINUX_BTF).exists() {
        return Err(Missing(format!(
            "{VMLINUX_BTF} is missing (kernel built without CONFIG_DEBUG_INFO_BTF)"
        )));
    }
    let bpftool = find_tool("bpftool", "CELLCC_BPFTOOL")
        .ok_or_else(|| Missing("bpftool not found (install bpftool)".into()))?;
    let clang = find_tool("clang", "CELLCC_CLANG")
        .ok_or_else(|| Missing("clang not found (install clang)".into()))?;
    let libbpf_include = env::var("DEP_BPF_INCLUDE")
        .map_err(|_| Missing("libbpf-sys did not export its headers (DEP_BPF_INCLUDE)".into()))?;

    let dump = Command::new(&bpftool)
        .args(["btf", "dump", "file", VMLINUX_BTF, "format", "c"])
        .output()
        .map_err(|e| Missing(format!("cannot run {}: {e}", bpftool.display())))?;
    if !dump.status.success() {
        return Err(Missing(format!(
            "bpftool btf dump failed: {}",
            String::from_utf8_lossy(&dump.stderr).trim()
        )));
    }
    fs::write(out.join("vmlinux.h"), &dump.stdout).expect("OUT_DIR is writable");

    let mut objects = Vec::new();
    for src in sources {
        let file = src
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        let algo = file.trim_end_matches(".bpf.c").to_string();
        let obj = out.join(format!("{algo}.bpf.o"));
        let result = Command::new(&clang)
            .args(["-g", "-O2", "-target", "bpf", &target_arch_define()])
            .args(["-Wall", "-Werror"])
            .arg(format!("-I{}", bpf_dir.display()))
            .arg(format!("-I{}", out.display()))
            .arg(format!("-I{libbpf_include}"))
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg(&obj)
            .output()
            .map_err(|e| Missing(format!("cannot run {}: {e}", clang.display())))?;
        if !result.status.success() {
            panic!(
                "clang failed on {}:\n{}",
                src.display(),
                String::from_utf8_lossy(&result.stderr)
            );
        }
        objects.push((algo, obj));
    }
    Ok(objects)
}

/// `-D__TARGET_ARCH_<arch>` for bpf_tracing.h, from the architecture being built for.
fn target_arch_define() -> String {
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("aarch64") => "arm64",
        Ok("riscv64") => "riscv",
        Ok("s390x") => "s390",
        Ok("powerpc64") => "powerpc",
        _ => "x86",
    };
    format!("-D__TARGET_ARCH_{arch}")
}

/// Writes `objects.rs`: `OBJECTS` (file stem, bytes) and `MISSING` (why none were built),
/// visible to the `objects` module that includes them (`pub(super)`).
fn write_manifest(out: &Path, objects: &Result<Vec<(String, PathBuf)>, String>) {
    let mut code = String::new();
    code.push_str("/// Embedded BPF objects: (source file stem, ELF bytes).\n");
    code.push_str("pub(super) const OBJECTS: &[(&str, &[u8])] = &[\n");
    if let Ok(objects) = objects {
        for (algo, path) in objects {
            writeln!(
                code,
                "    ({algo:?}, include_bytes!({:?})),",
                path.display()
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    code.push_str("/// Why no object was embedded, if none was.\n");
    match objects {
        Ok(_) => code.push_str("pub(super) const MISSING: Option<&str> = None;\n"),
        Err(reason) => writeln!(
            code,
            "pub(super) const MISSING: Option<&str> = Some({reason:?});"
        )
        .unwrap(),
    }
    fs::write(out.join("objects.rs"), code).expect("OUT_DIR is writable");
}
