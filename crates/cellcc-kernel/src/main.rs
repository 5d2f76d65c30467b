//! `cellcc-kernel`: loads cellcc's BPF struct_ops congestion controls into the running
//! kernel and controls them (parameters, statistics, the C2TCP Tuner). See docs/kernel.md.

mod check;
mod control;
mod error;
mod flow;
mod layout;
mod loader;
mod objects;
#[cfg(test)]
mod parity;
mod policy_io;
mod signals;
mod system;
mod tune;

use std::process::ExitCode;

use cellcc_congestion::c2tcp::Fidelity;
use cellcc_congestion::Dur;
use clap::{Parser, Subcommand, ValueEnum};

use crate::error::Result;
use crate::flow::FlowKey;

/// Load and control cellcc's eBPF congestion controls (needs root, Linux >= 6.10, BTF).
#[derive(Parser, Debug)]
#[command(name = "cellcc-kernel", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check the requirements (kernel, BTF, privileges, bpffs, embedded objects).
    Check,
    /// Register the algorithms (default: all) and stay in the foreground until
    /// SIGINT/SIGTERM; prints `ready: NAME...` once they can be used.
    Load {
        /// Algorithms to load (`c2tcp` or `cellcc_c2tcp`); all if none.
        algos: Vec<String>,
    },
    /// Stop the running loader and wait until its algorithms are unregistered.
    Unload,
    /// Registered algorithms, the loader's pid and the default parameters.
    List {
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change the default parameters, or one connection's.
    Set {
        /// Algorithm (`c2tcp`).
        algo: String,
        /// `key=value` settings; keys are the fields of `struct ALGO_params`.
        settings: Vec<String>,
        /// Only this connection, the sender's view: LADDR:LPORT-RADDR:RPORT, an IPv6
        /// address in brackets (`[fd00::1]:40000-[fd00::2]:5201`).
        #[arg(long)]
        flow: Option<String>,
    },
    /// Per-connection statistics.
    Stats {
        /// Only this algorithm.
        algo: Option<String>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Print again every MS milliseconds until interrupted.
        #[arg(long, value_name = "MS")]
        watch: Option<u64>,
    },
    /// The user-space end of `cellcc_policy`: print its per-interval reports as JSON
    /// lines on stdout, and write the decisions read from stdin (`FLOW SEQ CWND
    /// PACING_BYTES_PER_S`) into its decision map, until stdin closes.
    PolicyIo,
    /// Run the C2TCP Tuner (JSAC Algorithm 3) for every live cellcc_c2tcp connection.
    Tune {
        /// Target average RTT in ms for every flow (default: each flow's target_us).
        #[arg(long, value_name = "T")]
        target_ms: Option<u64>,
        /// Tuning cycle in ms.
        #[arg(long, default_value_t = 500)]
        period_ms: u64,
        /// `paper`: Algorithm 3's update; `linux`: the authors' Tuner's update.
        #[arg(long, value_enum, default_value_t = TunerFidelity::Paper)]
        fidelity: TunerFidelity,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TunerFidelity {
    Paper,
    Linux,
}

fn one_algo(name: &str) -> Result<objects::Algo> {
    let all = objects::discover()?;
    Ok(objects::select(&all, &[name.to_string()])?.remove(0))
}

fn run(cli: Cli) -> Result<()> {
    if let Command::Check = cli.command {
        let mut ok = true;
        for c in check::run_all(check::Purpose::Inspect) {
            match c.result {
                Ok(detail) => println!("ok    {}: {detail}", c.what),
                Err(reason) => {
                    ok = false;
                    println!("FAIL  {}: {reason}", c.what);
                }
            }
        }
        if !ok {
            bail!("some requirements are not met (see above)");
        }
        return Ok(());
    }
    check::require(match cli.command {
        Command::Load { .. } => check::Purpose::Load,
        _ => check::Purpose::Control,
    })?;
    match cli.command {
        Command::Check => Ok(()),
        Command::Load { algos } => loader::load(&algos),
        Command::Unload => loader::unload(),
        Command::List { json } => control::list(&objects::discover()?, json),
        Command::Set {
            algo,
            settings,
            flow,
        } => {
            let flow = flow.as_deref().map(FlowKey::parse).transpose()?;
            control::set(&one_algo(&algo)?, &settings, flow)
        }
        Command::Stats { algo, json, watch } => {
            let all = objects::discover()?;
            let algos = objects::select(&all, &algo.into_iter().collect::<Vec<_>>())?;
            control::stats(&algos, json, watch)
        }
        Command::PolicyIo => policy_io::run(),
        Command::Tune {
            target_ms,
            period_ms,
            fidelity,
        } => {
            if period_ms == 0 {
                bail!("--period-ms must be positive");
            }
            let opts = tune::Options {
                target: target_ms.map(Dur::from_ms),
                period: Dur::from_ms(period_ms),
                fidelity: match fidelity {
                    TunerFidelity::Paper => Fidelity::Paper,
                    TunerFidelity::Linux => Fidelity::Linux,
                },
            };
            tune::run(&one_algo(tune::ALGO)?, opts)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cellcc-kernel: {e}");
            ExitCode::FAILURE
        }
    }
}
