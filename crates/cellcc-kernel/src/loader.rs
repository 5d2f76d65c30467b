//! `load` and `unload`: register the algorithms with struct_ops links for as long as the
//! loader process lives, and undo every change when it stops.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use libbpf_rs::{Link, MapCore, MapFlags, Object, ObjectBuilder};

use crate::bail;
use crate::error::{Context, Result};
use crate::objects::{self, Algo};
use crate::signals;
use crate::system::{self, LoaderState, AVAILABLE};

/// How long `unload` waits for the loader to exit.
const UNLOAD_TIMEOUT: Duration = Duration::from_secs(10);
const UNLOAD_POLL: Duration = Duration::from_millis(20);
/// How long `unload` waits, after the names are gone, for the kernel to free the
/// struct_ops maps (freeing waits for an RCU grace period); maps still there after it are
/// held by connections.
const MAP_FREE_GRACE: Duration = Duration::from_secs(2);
/// `BPF_OBJ_NAME_LEN` − 1: the kernel keeps this many bytes of a map's name.
const MAP_NAME_BYTES: usize = 15;

/// Everything a running loader changed, undone in reverse order on drop (normal exit,
/// signal, or an error half-way through loading).
#[derive(Default)]
struct Session {
    /// Struct_ops links; dropping one unregisters its congestion control.
    links: Vec<Link>,
    objects: Vec<Object>,
    /// Algorithms whose maps were pinned.
    pinned: Vec<String>,
    /// The allowed list before this loader changed it.
    allowed_before: Option<Vec<String>>,
    wrote_pidfile: bool,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.links.clear();
        if let Some(before) = self.allowed_before.take() {
            if let Err(e) = system::write_allowed(&before) {
                eprintln!("warning: {e}");
            }
        }
        for algo in &self.pinned {
            system::remove_pins(algo);
        }
        if self.wrote_pidfile {
            LoaderState::remove_files();
        }
        self.objects.clear();
    }
}

/// Refuses if a loader is running; cleans up after one that died.
fn claim() -> Result<()> {
    if let Some(st) = LoaderState::read()? {
        if system::loader_alive(st.pid) {
            bail!(
                "another loader is running (pid {}, {}); stop it with `cellcc-kernel unload`",
                st.pid,
                system::PIDFILE
            );
        }
        eprintln!("{}", system::clean_stale(&st));
    }
    Ok(())
}

/// `load [ALGO...]`: returns after SIGINT/SIGTERM, with everything cleaned up.
pub(crate) fn load(wanted: &[String]) -> Result<()> {
    // Block the stop signals before anything exists to clean up; sigwait takes them.
    signals::block_stop_signals()?;
    let all = objects::discover()?;
    let algos = objects::select(&all, wanted)?;
    claim()?;
    let available = system::read_list(AVAILABLE)?;
    for a in &algos {
        if available.contains(&a.kernel_name) {
            bail!(
                "{} is already registered (by a loader without a pidfile, or by `bpftool struct_ops \
                 register`); unregister it first (bpftool struct_ops unregister name {})",
                a.kernel_name,
                a.algo
            );
        }
    }

    let mut session = Session::default();
    let mut stems: Vec<&'static str> = algos.iter().map(|a| a.object_name).collect();
    stems.dedup();
    for stem in stems {
        let in_object: Vec<&Algo> = algos.iter().filter(|a| a.object_name == stem).collect();
        load_object(&mut session, stem, &in_object)?;
    }

    let before = system::read_list(system::ALLOWED)?;
    let mut allowed = before.clone();
    for a in &algos {
        if !allowed.contains(&a.kernel_name) {
            allowed.push(a.kernel_name.clone());
        }
    }
    session.allowed_before = Some(before.clone());
    system::write_allowed(&allowed)?;

    let names: Vec<String> = algos.iter().map(|a| a.kernel_name.clone()).collect();
    let state = LoaderState {
        pid: std::process::id() as i32,
        allowed_before: Some(before.join(" ")),
        algos: algos.iter().map(|a| a.algo.clone()).collect(),
        names: names.clone(),
    };
    session.wrote_pidfile = true;
    state.write()?;

    let mut out = std::io::stdout().lock();
    writeln!(out, "ready: {}", names.join(" ")).context("writing to stdout")?;
    out.flush().context("writing to stdout")?;
    drop(out);

    let sig = signals::wait_stop_signal(None)?;
    eprintln!("signal {sig}: unregistering {}", names.join(" "));
    drop(session);
    Ok(())
}

/// Opens and loads one object, fills each algorithm's defaults, pins its maps and
/// attaches its struct_ops.
fn load_object(session: &mut Session, stem: &str, algos: &[&Algo]) -> Result<()> {
    let Some(first) = algos.first() else {
        return Ok(());
    };
    let what = format!("loading bpf/{stem}.bpf.c");
    let mut builder = ObjectBuilder::default();
    builder.name(stem).context(&what)?;
    let open = builder.open_memory(first.object).context(&what)?;
    let mut obj = open.load().context(format!(
        "{what} (the verifier log above says why; the kernel must export the kfuncs it calls)"
    ))?;

    for a in algos {
        let dir = system::pin_root().join(&a.algo);
        // Pins left by a loader that died without a pidfile: nothing else can own them,
        // since no loader runs and the name is not registered.
        system::remove_pins(&a.algo);
        std::fs::create_dir_all(&dir).context(format!("creating {}", dir.display()))?;
        session.pinned.push(a.algo.clone());
        for mut map in obj.maps_mut() {
            let name = map.name().to_string_lossy().into_owned();
            if name == a.map_name("defaults") {
                map.update(&0u32.to_ne_bytes(), &a.builtin, MapFlags::ANY)
                    .context(format!("writing {name}[0]"))?;
            }
            // `reports` and `decide`: the ring buffer and decision map of per-interval
            // policies (bpf/policy.bpf.c, `cellcc-kernel policy-io`).
            if ["defaults", "params", "stats", "reports", "decide"]
                .iter()
                .any(|s| name == a.map_name(s))
            {
                let path: PathBuf = dir.join(&name);
                map.pin(&path)
                    .context(format!("pinning {name} at {}", path.display()))?;
            }
        }
    }
    for a in algos {
        let mut found = None;
        for mut map in obj.maps_mut() {
            if map.name().to_string_lossy() == a.algo.as_str() {
                found = Some(
                    map.attach_struct_ops()
                        .context(format!("registering {} (struct_ops link)", a.kernel_name))?,
                );
            }
        }
        let Some(link) = found else {
            bail!("{what}: struct_ops map {} disappeared after load", a.algo);
        };
        session.links.push(link);
    }
    session.objects.push(obj);
    Ok(())
}

/// `unload`: stops the running loader and waits until its names are unregistered.
pub(crate) fn unload() -> Result<()> {
    let Some(st) = LoaderState::read()? else {
        eprintln!("no loader is running ({} does not exist)", system::PIDFILE);
        return Ok(());
    };
    if !system::loader_alive(st.pid) {
        eprintln!("{}", system::clean_stale(&st));
        return Ok(());
    }
    // SAFETY: sending a signal has no memory-safety preconditions.
    if unsafe { libc::kill(st.pid, libc::SIGTERM) } != 0 {
        bail!(
            "cannot signal loader {}: {}",
            st.pid,
            std::io::Error::last_os_error()
        );
    }
    let start = Instant::now();
    loop {
        let available = system::read_list(AVAILABLE)?;
        let still: Vec<&String> = st.names.iter().filter(|n| available.contains(n)).collect();
        let alive = system::loader_alive(st.pid);
        if still.is_empty() && !alive {
            report_held_maps(&st);
            return Ok(());
        }
        if start.elapsed() > UNLOAD_TIMEOUT {
            bail!(
                "loader {} did not finish within {} s (still registered: {:?}, alive: {alive})",
                st.pid,
                UNLOAD_TIMEOUT.as_secs(),
                still
            );
        }
        std::thread::sleep(UNLOAD_POLL);
    }
}

/// The struct_ops maps of `algos` that still exist, as (algorithm, map id).
fn struct_ops_maps(algos: &[String]) -> Vec<(String, u32)> {
    libbpf_rs::query::MapInfoIter::default()
        .filter(|m| m.ty == libbpf_rs::MapType::StructOps)
        .filter_map(|m| {
            let name = m.name.to_string_lossy();
            algos
                .iter()
                .find(|a| a.get(..MAP_NAME_BYTES).unwrap_or(a) == name)
                .map(|a| (a.clone(), m.id))
        })
        .collect()
}

/// Says whether the kernel has freed the algorithms of the loader that just exited. A
/// connection that selected an algorithm keeps its struct_ops map (and the algorithm's
/// code) until it closes, although the name is unregistered at once: `unload` then says
/// which maps are held rather than reporting a plain success.
fn report_held_maps(st: &LoaderState) {
    let start = Instant::now();
    let held = loop {
        let held = struct_ops_maps(&st.algos);
        if held.is_empty() || start.elapsed() > MAP_FREE_GRACE {
            break held;
        }
        std::thread::sleep(UNLOAD_POLL);
    };
    if held.is_empty() {
        eprintln!("unloaded {} (loader {} exited)", st.names.join(" "), st.pid);
        return;
    }
    let maps: Vec<String> = held
        .iter()
        .map(|(algo, id)| format!("{algo} (struct_ops map id {id})"))
        .collect();
    eprintln!(
        "unregistered {} (loader {} exited), but open connections still hold {}: they keep \
         running that code until they close (`ss -tin` lists them); new connections cannot \
         select it",
        st.names.join(" "),
        st.pid,
        maps.join(", ")
    );
}
