//! `policy-io`: the user-space end of `cellcc_policy` (bpf/policy.bpf.c). Reads the
//! per-interval reports from the pinned ring buffer `policy_reports` and prints each as
//! one JSON line on stdout; reads decisions from stdin, one a line
//! (`FLOW SEQ CWND PACING_BYTES_PER_S`, 0 keeps the value), and writes them into the
//! pinned `policy_decide` map, where the program applies them on the connection's next
//! ACK. Reports already in the ring buffer when it starts are discarded. The policy
//! itself runs elsewhere (Python: `cellcc.kernel_policy`), so this
//! command stays small and knows nothing of it. It stops when stdin closes.

use std::io::{BufRead as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use libbpf_rs::{MapCore as _, MapFlags, MapHandle, RingBufferBuilder};
use serde_json::json;

use crate::bail;
use crate::error::{Context, Result};
use crate::flow::{FlowKey, KEY_SIZE};
use crate::system;

/// The algorithm whose maps this command uses.
pub(crate) const ALGO: &str = "policy";
/// Size of `struct policy_report`: the flow key, 13 `__u64`, 12 `__u32`.
const REPORT_SIZE: usize = KEY_SIZE + 13 * 8 + 12 * 4;
/// Size of `struct policy_decision`: seq, cwnd, pad, pacing.
const DECISION_SIZE: usize = 24;
/// How long one ring-buffer poll waits before checking whether stdin closed.
const POLL: Duration = Duration::from_millis(100);

/// The `__u64` fields of `struct policy_report`, in order, after the key.
const U64_FIELDS: [&str; 13] = [
    "seq",
    "t_us",
    "interval_us",
    "acks",
    "delivered_pkts",
    "acked_bytes",
    "lost_pkts",
    "sent_pkts",
    "retrans_pkts",
    "sent_bytes",
    "rtt_samples",
    "rtt_sum_us",
    "pacing_rate_Bps",
];
/// The `__u32` fields after them (the trailing `pad` is not printed).
const U32_FIELDS: [&str; 11] = [
    "rtt_min_us",
    "rtt_max_us",
    "rtt_first_us",
    "rtt_last_us",
    "cwnd",
    "ssthresh",
    "in_flight",
    "srtt_us",
    "min_rtt_us",
    "ca_state",
    "mss",
];

/// One report as a JSON object (`flow` plus every field), or `None` for a record of the
/// wrong size (an object built from a different `struct policy_report`).
fn report_json(rec: &[u8]) -> Option<serde_json::Value> {
    if rec.len() != REPORT_SIZE {
        return None;
    }
    let flow = FlowKey::from_bytes(&rec[..KEY_SIZE])?;
    let mut obj = serde_json::Map::new();
    obj.insert("flow".into(), json!(flow.to_string()));
    let mut off = KEY_SIZE;
    for name in U64_FIELDS {
        let v = u64::from_ne_bytes(rec[off..off + 8].try_into().ok()?);
        obj.insert(name.into(), json!(v));
        off += 8;
    }
    for name in U32_FIELDS {
        let v = u32::from_ne_bytes(rec[off..off + 4].try_into().ok()?);
        obj.insert(name.into(), json!(v));
        off += 4;
    }
    Some(serde_json::Value::Object(obj))
}

/// A decision line, `FLOW SEQ CWND PACING`, as the map key and value.
fn parse_decision(line: &str) -> Result<([u8; KEY_SIZE], [u8; DECISION_SIZE])> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let [flow, seq, cwnd, pacing] = parts[..] else {
        bail!("decision {line:?}: expected `FLOW SEQ CWND PACING_BYTES_PER_S`");
    };
    let flow = FlowKey::parse(flow)?;
    let seq: u64 = seq
        .parse()
        .context(format!("decision {line:?}: SEQ {seq:?}"))?;
    if seq == 0 {
        bail!("decision {line:?}: SEQ must be the report's seq (>= 1)");
    }
    let cwnd: u32 = cwnd.parse().context(format!(
        "decision {line:?}: CWND {cwnd:?} (packets, 0 keeps)"
    ))?;
    let pacing: u64 = pacing.parse().context(format!(
        "decision {line:?}: PACING {pacing:?} (bytes/s, 0 keeps)"
    ))?;
    let mut value = [0u8; DECISION_SIZE];
    value[..8].copy_from_slice(&seq.to_ne_bytes());
    value[8..12].copy_from_slice(&cwnd.to_ne_bytes());
    value[16..].copy_from_slice(&pacing.to_ne_bytes());
    Ok((flow.to_bytes(), value))
}

fn open(map: &str) -> Result<MapHandle> {
    let path = system::pin_path(ALGO, map);
    if !path.exists() {
        bail!(
            "{} is not pinned: is `cellcc-kernel load` running with {ALGO}?",
            path.display()
        );
    }
    MapHandle::from_pinned_path(&path).context(format!("opening {}", path.display()))
}

/// Runs until stdin closes; prints `ready` once both maps are open.
pub(crate) fn run() -> Result<()> {
    let reports = open("policy_reports")?;
    let decide = open("policy_decide")?;
    let closed = Arc::new(AtomicBool::new(false));
    let failed: Arc<std::sync::Mutex<Option<String>>> = Arc::default();

    let writer = {
        let (closed, failed) = (closed.clone(), failed.clone());
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                let res = parse_decision(&line).and_then(|(k, v)| {
                    decide
                        .update(&k, &v, MapFlags::ANY)
                        .context("writing policy_decide")
                });
                if let Err(e) = res {
                    *failed.lock().expect("not poisoned") = Some(e.to_string());
                    break;
                }
            }
            closed.store(true, Ordering::SeqCst);
        })
    };

    let mut bad = 0u64;
    // Reports left from before this reader (connections that ran without one, most of
    // them gone) are discarded: the policy sees only intervals that end from now on.
    let stale = std::cell::Cell::new(true);
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&reports, |rec: &[u8]| {
            if stale.get() {
                return 0;
            }
            let mut out = std::io::stdout().lock();
            match report_json(rec) {
                Some(v) if writeln!(out, "{v}").and_then(|()| out.flush()).is_ok() => 0,
                Some(_) => -1, // stdout closed: stop
                None => {
                    bad += 1;
                    0
                }
            }
        })
        .context("opening the ring buffer")?;
    let ring = builder.build().context("opening the ring buffer")?;
    ring.consume().context("discarding stale reports")?;
    stale.set(false);
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready").context("writing to stdout")?;
        out.flush().context("writing to stdout")?;
    }
    while !closed.load(Ordering::SeqCst) {
        if ring.poll_raw(POLL) < 0 {
            break;
        }
    }
    drop(ring);
    let _ = writer.join();
    if let Some(e) = failed.lock().expect("not poisoned").take() {
        bail!("{e}");
    }
    if bad > 0 {
        bail!("{bad} ring-buffer records had the wrong size (expected {REPORT_SIZE} bytes)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_parse_into_the_map_layout() {
        let (k, v) = parse_decision("10.0.0.1:40000-10.0.0.2:5201 7 42 125000").unwrap();
        assert_eq!(
            FlowKey::from_bytes(&k).unwrap().to_string(),
            "10.0.0.1:40000-10.0.0.2:5201"
        );
        assert_eq!(u64::from_ne_bytes(v[..8].try_into().unwrap()), 7);
        assert_eq!(u32::from_ne_bytes(v[8..12].try_into().unwrap()), 42);
        assert_eq!(u64::from_ne_bytes(v[16..].try_into().unwrap()), 125_000);
        for bad in [
            "",
            "x 1 2 3",
            "10.0.0.1:1-10.0.0.2:2 0 1 0",
            "10.0.0.1:1-10.0.0.2:2 1 -1 0",
        ] {
            assert!(parse_decision(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reports_of_the_wrong_size_are_refused() {
        assert!(report_json(&[0u8; REPORT_SIZE - 4]).is_none());
        let mut rec = vec![0u8; REPORT_SIZE];
        rec[..KEY_SIZE]
            .copy_from_slice(&FlowKey::parse("10.0.0.1:1-10.0.0.2:2").unwrap().to_bytes());
        rec[KEY_SIZE..KEY_SIZE + 8].copy_from_slice(&3u64.to_ne_bytes());
        let v = report_json(&rec).unwrap();
        assert_eq!(v["seq"], 3);
        assert_eq!(v["mss"], 0);
    }
}
