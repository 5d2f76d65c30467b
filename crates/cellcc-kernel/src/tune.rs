//! `tune`: the C2TCP Tuner (JSAC Algorithm 3) in user space, as in the paper's design,
//! for every live `cellcc_c2tcp` connection.
//!
//! Every period it reads each flow's cumulative RTT sum and sample count from
//! `c2tcp_stats`, feeds the period's mean RTT to the simulator's sans-I/O [`Tuner`] (one
//! per flow, so the α update is the same code the simulator runs), and writes the α it
//! returns into the flow's `c2tcp_params` override. The BPF side deletes the override
//! when the connection ends.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cellcc_congestion::c2tcp::tuner::{Tuner, ALPHA_ONE};
use cellcc_congestion::c2tcp::Fidelity;
use cellcc_congestion::{Dur, Time};

use crate::bail;
use crate::control;
use crate::error::Result;
use crate::flow::FlowKey;
use crate::objects::Algo;
use crate::signals;

/// The algorithm the Tuner drives.
pub(crate) const ALGO: &str = "c2tcp";
/// `alpha_x100` per Tuner α unit: the Tuner keeps thousandths.
const MILLI_PER_X100: u32 = ALPHA_ONE / 100;
/// Stats fields the Tuner reads.
const FIELDS: &[&str] = &[
    "rtt_sum_us",
    "rtt_samples",
    "min_rtt_us",
    "alpha_x100",
    "target_us",
    "released",
];

/// Tuner options from the command line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Target for every flow; `None`: each flow's `target_us` parameter.
    pub target: Option<Dur>,
    /// Tuning cycle.
    pub period: Dur,
    /// `Paper` (Algorithm 3) or `Linux` (the reference Tuner's update).
    pub fidelity: Fidelity,
}

struct FlowTuner {
    tuner: Tuner,
    /// Cumulative counters at the last read.
    rtt_sum_us: u64,
    rtt_samples: u64,
}

/// Runs until SIGINT/SIGTERM.
pub(crate) fn run(algo: &Algo, opts: Options) -> Result<()> {
    for f in FIELDS {
        if algo.stats.field(f).is_none() {
            bail!(
                "struct {}_stats has no field {f}, which the Tuner reads",
                algo.algo
            );
        }
    }
    if algo.params.field("alpha_x100").is_none() {
        bail!(
            "struct {}_params has no field alpha_x100, which the Tuner writes",
            algo.algo
        );
    }
    signals::block_stop_signals()?;
    let start = Instant::now();
    let mut flows: HashMap<FlowKey, FlowTuner> = HashMap::new();
    let period = Duration::from_nanos(opts.period.as_ns());
    eprintln!(
        "tuning {} every {} ms, target {}",
        algo.kernel_name,
        opts.period.as_ms(),
        opts.target
            .map_or("from each flow's target_us".into(), |t| format!(
                "{} ms",
                t.as_ms()
            ))
    );
    loop {
        let now = Time::from_ns(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        let stats = control::read_stats(algo)?;
        flows.retain(|k, _| stats.contains_key(k));
        for (flow, bytes) in stats {
            let get = |name: &str| {
                algo.stats
                    .get_by_name(&bytes, name)
                    .map_or(0, |v| v.as_u64())
            };
            if get("released") != 0 {
                if let Some(ft) = flows.remove(&flow) {
                    let alpha = f64::from(ft.tuner.alpha_milli()) / f64::from(ALPHA_ONE);
                    println!("{flow}: ended at alpha {alpha:.2}");
                }
                continue;
            }
            let (sum, count) = (get("rtt_sum_us"), get("rtt_samples"));
            let Some(ft) = flows.get_mut(&flow) else {
                let alpha_milli = u32::try_from(get("alpha_x100")).unwrap_or(0) * MILLI_PER_X100;
                flows.insert(
                    flow,
                    FlowTuner {
                        tuner: Tuner::new(opts.period, opts.fidelity, now, alpha_milli),
                        rtt_sum_us: sum,
                        rtt_samples: count,
                    },
                );
                println!(
                    "{flow}: tuning from alpha {:.2}",
                    f64::from(alpha_milli) / f64::from(ALPHA_ONE)
                );
                continue;
            };
            let d_count = count.saturating_sub(ft.rtt_samples);
            let d_sum = sum.saturating_sub(ft.rtt_sum_us);
            ft.rtt_sum_us = sum;
            ft.rtt_samples = count;
            if let Some(mean_us) = d_sum.checked_div(d_count) {
                // The period's mean stands for its samples: the Tuner only uses the mean.
                ft.tuner.record(Dur::from_us(mean_us));
            }
            if !ft.tuner.due(now) {
                continue;
            }
            let target = opts.target.unwrap_or(Dur::from_us(get("target_us")));
            let min_rtt = (get("min_rtt_us") > 0).then(|| Dur::from_us(get("min_rtt_us")));
            let before = ft.tuner.alpha_milli();
            if let Some(alpha) = ft.tuner.tune(now, target, min_rtt) {
                let x100 = alpha / MILLI_PER_X100;
                control::write_params(algo, Some(flow), &[format!("alpha_x100={x100}")])?;
                let avg_ms = if d_count > 0 {
                    d_sum as f64 / d_count as f64 / 1000.0
                } else {
                    0.0
                };
                println!(
                    "{flow}: avg rtt {avg_ms:.1} ms, target {} ms: alpha {:.2} -> {:.2}",
                    target.as_ms(),
                    f64::from(before) / f64::from(ALPHA_ONE),
                    f64::from(alpha) / f64::from(ALPHA_ONE)
                );
            }
        }
        if signals::wait_stop_signal(Some(period))? != 0 {
            return Ok(());
        }
    }
}
