//! `cellcc-flow`: one bulk TCP transfer (see the `cellcc_emu::flow` module docs for the
//! log formats).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use cellcc_emu::flow::{self, RecvOptions, SendOptions};

#[derive(Parser, Debug)]
#[command(
    name = "cellcc-flow",
    version,
    about = "Bulk TCP transfer for experiments through cellcc-emu"
)]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Listen, accept one connection, read until EOF.
    Recv {
        #[arg(long)]
        port: u16,
        #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
        bind: IpAddr,
        /// CSV of every read: t_ns,bytes and the receive window's autotuning state
        /// (rcv_rtt_us,rcv_space,rcv_ssthresh,rcv_wnd,rcvbuf).
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// JSON summary (bytes, duration, goodput); stdout if absent.
        #[arg(long, value_name = "FILE")]
        summary: Option<PathBuf>,
    },
    /// Connect, write for a while, sample TCP_INFO, close.
    Send {
        /// Receiver address, ADDR:PORT.
        #[arg(long, value_name = "ADDR:PORT")]
        to: SocketAddr,
        /// Congestion control (TCP_CONGESTION), e.g. cubic, bbr, reno.
        #[arg(long, value_name = "NAME")]
        cc: String,
        /// Seconds of writing; decimals allowed.
        #[arg(long, value_name = "S", value_parser = parse_seconds)]
        duration: Duration,
        /// CSV of TCP_INFO samples.
        #[arg(long, value_name = "FILE")]
        info_log: Option<PathBuf>,
        #[arg(long, value_name = "MS", default_value_t = 10)]
        info_interval_ms: u64,
        /// How long to keep retrying while the receiver is not listening, s.
        #[arg(long, value_name = "S", default_value = "5", value_parser = parse_seconds)]
        connect_timeout: Duration,
        /// JSON summary; stdout if absent.
        #[arg(long, value_name = "FILE")]
        summary: Option<PathBuf>,
        /// After writing, wait at most S s for the kernel to deliver what is queued, then
        /// reset the connection [default: close and let the kernel deliver it all].
        #[arg(long, value_name = "S", value_parser = parse_seconds)]
        drain: Option<Duration>,
    },
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 {
        return Err(format!("{s} s must be > 0 and at most one day"));
    }
    Ok(Duration::from_secs_f64(v))
}

fn main() {
    let args = Args::parse();
    let result = match args.command {
        Cmd::Recv {
            port,
            bind,
            log,
            summary,
        } => flow::recv(&RecvOptions {
            port,
            bind,
            log,
            summary,
        })
        .map(drop),
        Cmd::Send {
            to,
            cc,
            duration,
            info_log,
            info_interval_ms,
            connect_timeout,
            summary,
            drain,
        } => flow::send(&SendOptions {
            to,
            cc,
            duration,
            info_log,
            info_interval: Duration::from_millis(info_interval_ms),
            connect_timeout,
            summary,
            drain,
        })
        .map(drop),
    };
    if let Err(e) = result {
        eprintln!("cellcc-flow: error: {e}");
        std::process::exit(e.exit_code());
    }
}
