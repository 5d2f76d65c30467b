"""``cellcc validate``: the same scenario in the simulator and through the real-time
emulator with real Linux TCP, and the differences between the two.

For each (scheme, trace) pair the simulator runs a one-flow scenario with the downlink
packet log on, and ``cellcc-emu`` runs one ``cellcc-flow`` bulk transfer with the kernel
congestion control of the same name (the built-in CUBIC, BBR and Reno, or the BPF C2TCP,
PropRate, César, Vegas, Westwood+, Illinois and CDG loaded by ``cellcc-kernel``). Both
downlink logs are in ``mm-link`` format and go through the same reader
(:mod:`cellcc.mmlog`), so throughput and queueing delay are defined identically on both
sides. ``docs/validation.md`` shows the results.

This module holds the two sides of one kernel run (:func:`kernel_run`) and what they
share; :mod:`cellcc.validation_runs` repeats the runs over schemes, traces and buffers and
aggregates them, and :mod:`cellcc.validation_report` writes the tables and plots.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellcc import api, kernel_policy, mmlog, realpath
from cellcc.results import write_csv_atomic

THROUGHPUT_TOLERANCE = 0.10
"""Acceptable relative throughput difference of one kernel run against the simulator
(the first validation's bound, kept for every scheme outside :data:`ACCEPTANCE_SCHEMES`)."""
QDELAY_TOLERANCE = 0.25
"""Acceptable relative difference of the mean queueing delay of one kernel run."""

ACCEPTANCE_SCHEMES = ("cubic", "reno", "bbr")
"""The kernel's own congestion controls, held to the tighter acceptance bounds below (the
broad validation issue); the BPF ports keep the per-run tolerances above."""
ACCEPTANCE_THROUGHPUT = 0.05
"""Bound on the throughput difference of the kernel runs' median for
:data:`ACCEPTANCE_SCHEMES`."""
ACCEPTANCE_QDELAY = 0.10
"""Bound on the mean-queueing-delay difference of the kernel runs' median for
:data:`ACCEPTANCE_SCHEMES`."""


def bounds_for(scheme: str) -> tuple[float, float]:
    """(throughput, mean queueing delay) bounds the medians of ``scheme`` are held to."""
    if scheme in ACCEPTANCE_SCHEMES:
        return ACCEPTANCE_THROUGHPUT, ACCEPTANCE_QDELAY
    return THROUGHPUT_TOLERANCE, QDELAY_TOLERANCE


@dataclass(frozen=True)
class RealScheme:
    """How one scheme is named and configured on each side."""

    name: str
    kernel_cc: str
    """``TCP_CONGESTION`` name on the real side."""
    sim_scheme: str
    sim_params: Mapping[str, Any] = field(default_factory=dict)
    bpf: str | None = None
    """The BPF algorithm (``cellcc-kernel`` name) this scheme needs loaded, if any."""
    kernel_params: Mapping[str, int] = field(default_factory=dict)
    """Defaults set through ``cellcc-kernel set`` so both sides run the same constants."""


SCHEMES: dict[str, RealScheme] = {
    s.name: s
    for s in (
        RealScheme("cubic", "cubic", "cubic"),
        RealScheme("bbr", "bbr", "bbr"),
        RealScheme("reno", "reno", "newreno"),
        # The Tuner is a user-space loop on the real side; both sides run a fixed alpha.
        RealScheme(
            "c2tcp",
            "cellcc_c2tcp",
            "c2tcp",
            {"tuner": False, "alpha": 2.0},
            bpf="c2tcp",
            kernel_params={"alpha_x100": 200},
        ),
        RealScheme(
            "proprate",
            "cellcc_proprate",
            "proprate",
            {"t_buff_ms": 40.0},
            bpf="proprate",
            kernel_params={"t_buff_us": 40_000},
        ),
        RealScheme("cesar", "cellcc_cesar", "cesar", bpf="cesar"),
        # A per-interval Python policy: the same class on both sides; on the real side
        # cellcc_policy carries it (cellcc.kernel_policy, docs/python-cc.md).
        RealScheme(
            "aimd",
            kernel_policy.KERNEL_CC,
            "cellcc.pycc.reference:Aimd",
            bpf="policy",
            kernel_params={"interval_us": 20_000, "initial_cwnd": 10},
        ),
        # The LTE study's schemes that many kernels (this one included) do not ship, as
        # BPF ports of Linux's modules, with the module defaults on both sides.
        RealScheme("vegas", "cellcc_vegas", "vegas", bpf="vegas"),
        RealScheme("westwood", "cellcc_westwood", "westwood", bpf="westwood"),
        RealScheme("illinois", "cellcc_illinois", "illinois", bpf="illinois"),
        RealScheme("cdg", "cellcc_cdg", "cdg", bpf="cdg"),
    )
}

DEFAULT_SCHEMES = (
    "cubic",
    "bbr",
    "reno",
    "c2tcp",
    "proprate",
    "cesar",
    "vegas",
    "westwood",
    "illinois",
    "cdg",
)
DEFAULT_TRACES = ("TMobile-LTE-short", "Verizon-LTE-short")


@dataclass(frozen=True)
class Setup:
    """The common path of every pair (the simulator mirrors the emulator's)."""

    duration_s: float = 30.0
    delay_ms: float = 20.0
    queue_packets: int | None = 1000
    """Drop-tail limit in packets, each way (``None``: no packet limit)."""
    queue_bytes: int | None = None
    """Drop-tail limit in charged bytes (IP length + 4), each way (``None``: none)."""
    seed: int = 1
    sched: str | None = None
    """Cellular scheduling preset (``[scheduling]`` / ``--uplink-sched``), if any."""
    ack_every_segment: bool = False
    """Both receivers ACK every segment (see :class:`realpath.EmuLink`)."""
    offload: bool = False
    """Run the emulator with its TUN offloads (:attr:`realpath.EmuLink.offload`). Off by
    default: the simulated receiver, like Mahimahi's, takes every segment on its own (no
    GRO). With them on, the kernel's receiver ACKs each coalesced run once: on
    TMobile-LTE-short 1.7 segments per ACK in slow start and 3.7–4.3 after, against the
    simulator's 1 (quick ACKs) and 2, which moves CUBIC's HyStart exit from 28 to 36
    segments there (docs/validation.md)."""

    def __post_init__(self) -> None:
        if self.queue_packets is None and self.queue_bytes is None:
            raise realpath.RealPathError("a validation queue needs a packet or a byte limit")

    def queue(self) -> dict[str, Any]:
        """The scenario's ``queue`` table (the same limits go to ``cellcc-emu``)."""
        limits = {"packets": self.queue_packets, "bytes": self.queue_bytes}
        return {"kind": "droptail", **{k: v for k, v in limits.items() if v is not None}}

    def queue_text(self) -> str:
        """``1000 packets``, ``150000 bytes`` or both, for captions."""
        parts = [f"{self.queue_packets} packets"] if self.queue_packets is not None else []
        parts += [f"{self.queue_bytes} bytes"] if self.queue_bytes is not None else []
        return " and ".join(parts)


def trace_pair(traces_dir: Path, name: str) -> tuple[Path, Path]:
    """``<name>.down`` and ``<name>.up`` in ``traces_dir`` (errors name what is missing)."""
    down, up = traces_dir / f"{name}.down", traces_dir / f"{name}.up"
    for path in (down, up):
        if not path.is_file():
            raise realpath.RealPathError(
                f"{path}: trace not found (validation needs .down and .up)"
            )
    return down, up


def sim_scenario(
    scheme: RealScheme, down: Path, up: Path, setup: Setup, *, start_s: float = 0.0
) -> dict[str, Any]:
    """The simulator's version of one pair; the flow starts at ``start_s`` (trace time)."""
    queue = setup.queue()
    scheduling = {"scheduling": {"preset": setup.sched}} if setup.sched else {}
    flow: dict[str, Any] = {"scheme": scheme.sim_scheme, "params": dict(scheme.sim_params)}
    if start_s > 0:
        flow["start_s"] = start_s
    return {
        **scheduling,
        "name": f"validate-{scheme.name}-{down.stem}",
        "duration_s": setup.duration_s + start_s,
        "seed": setup.seed,
        "downlink": {"trace": str(down), "delay_ms": setup.delay_ms, "queue": queue},
        "uplink": {"trace": str(up), "delay_ms": setup.delay_ms, "queue": queue},
        "flows": [flow],
        "metrics": {"packet_log": True},
        # The kernel's flow opens with a handshake, whose packets share the links with
        # its first data and whose RTT seeds the estimator (docs/tcp-model.md).
        "tcp": {
            "handshake": True,
            **({"quickack_always": True} if setup.ack_every_segment else {}),
        },
    }


SPREAD_OFFSETS_S = tuple(round(0.05 * i, 2) for i in range(10))
"""Flow start times (s of trace time) of the simulated spread: how much a result depends
on where in the trace the flow starts, which on the real side varies by some 100 ms."""


HANDSHAKE_ALLOWANCE_S = 5.0
"""Simulated time allowed for the handshake: in the start-time spread, beyond the run
(the window starts at the first data packet, after the handshake; it took up to 1.1 s on
the shared traces); in an aligned simulation, the longest it is run for."""


def simulate_aligned(
    scheme: RealScheme, down: Path, up: Path, setup: Setup, real_log: mmlog.MmLog
) -> tuple[api.Result, dict[str, float], pd.DataFrame]:
    """The simulation whose SYN reaches the downlink at the same trace time as the
    emulated flow's (in ``real_log``); from there its handshake, like the kernel's, decides
    when the data starts."""
    probe = api.simulate(sim_scenario(scheme, down, up, replace(setup, duration_s=1.0)))
    assert probe.packet_log is not None  # sim_scenario turns the packet log on
    real_syn = syn_ms(real_log)
    start_s = max(0, real_syn - syn_ms(mmlog.parse(probe.packet_log))) / 1000.0
    real_first = first_data_ms(real_log)
    # The run ends where the kernel's window ends, so that the simulator's counts (RTOs,
    # most in flight) cover what the kernel's do; it is run once more, for longer (at most
    # the allowance), if its own handshake ended later than the kernel's.
    late_ms = 0
    for _ in range(2):
        extra_s = (real_first - real_syn + min(late_ms, 1000 * HANDSHAKE_ALLOWANCE_S)) / 1000.0
        run = replace(setup, duration_s=setup.duration_s + extra_s)
        result = api.simulate(sim_scenario(scheme, down, up, run, start_s=start_s))
        assert result.packet_log is not None
        log = mmlog.parse(result.packet_log, source="simulated")
        late_ms = first_data_ms(log) - real_first
        if late_ms <= 0:
            break
    sim, series = measure(log, setup.duration_s)
    return result, sim, series


def simulated_spread(scheme: RealScheme, down: Path, up: Path, setup: Setup) -> dict[str, float]:
    """Range of throughput and mean queueing delay over the start times
    :data:`SPREAD_OFFSETS_S`."""
    rows = []
    run = replace(setup, duration_s=setup.duration_s + HANDSHAKE_ALLOWANCE_S)
    for offset in SPREAD_OFFSETS_S:
        result = api.simulate(sim_scenario(scheme, down, up, run, start_s=offset))
        assert result.packet_log is not None
        rows.append(measure(mmlog.parse(result.packet_log), setup.duration_s)[0])
    frame = pd.DataFrame(rows)
    return {
        "sim_throughput_min_mbps": float(frame["throughput_mbps"].min()),
        "sim_throughput_max_mbps": float(frame["throughput_mbps"].max()),
        "sim_qdelay_mean_min_ms": float(frame["qdelay_mean_ms"].min()),
        "sim_qdelay_mean_max_ms": float(frame["qdelay_mean_ms"].max()),
    }


def emu_link(down: Path, up: Path, setup: Setup) -> realpath.EmuLink:
    """The emulator's version of the path."""
    return realpath.EmuLink(
        down,
        up,
        setup.delay_ms,
        setup.queue_packets,
        setup.sched,
        setup.ack_every_segment,
        queue_bytes=setup.queue_bytes,
        offload=setup.offload,
    )


FIRST_DATA_BYTES = 200
"""An arrival of at least this many bytes carries data. The window starts at the first
one: both logs open with the handshake's small packets (the 64-byte SYN, the 56-byte ACK;
the kernel's also with a 52-byte packet of the namespaces' set-up), and the handshake
waits for the uplink's first opportunity, 0.65–1.06 s into the TMobile-UMTS,
ATT-LTE-driving and Verizon-EVDO traces."""


SYN_LOG_BYTES = 64
"""A SYN in an mm-link log: a 60-byte datagram (its options take 20 bytes) and the 4-byte
header both logs count."""


def syn_ms(log: mmlog.MmLog) -> int:
    """Arrival time (ms) of the flow's first SYN at the downlink."""
    syn = np.flatnonzero(log.arrival_bytes == SYN_LOG_BYTES)
    if not len(syn):
        raise realpath.RealPathError(
            f"{log.source}: no SYN reached the link (no {SYN_LOG_BYTES}-byte arrival)"
        )
    return int(log.arrivals_ms[syn[0]])


def first_data_ms(log: mmlog.MmLog) -> int:
    """Arrival time (ms) of the flow's first data packet at the link."""
    data = np.flatnonzero(log.arrival_bytes >= FIRST_DATA_BYTES)
    if not len(data):
        raise realpath.RealPathError(f"{log.source}: no data packet reached the link")
    return int(log.arrivals_ms[data[0]])


def _window(log: mmlog.MmLog, duration_s: float) -> tuple[int, int]:
    """From the flow's first data packet (:func:`first_data_ms`) for its duration."""
    start = first_data_ms(log)
    return start, start + round(duration_s * 1000)


def measure(log: mmlog.MmLog, duration_s: float) -> tuple[dict[str, float], pd.DataFrame]:
    """Window metrics (``start_ms``: the window's first data packet) and a time series
    aligned to the flow's first packet."""
    start, end = _window(log, duration_s)
    series = mmlog.timeseries(log, bin_ms=500, end_ms=end)
    t_ms = series["t_s"] * 1000
    series = series[(t_ms >= start) & (t_ms + 500 <= end)].copy()
    series["t_s"] -= start / 1000.0
    summary = mmlog.summary(log, start_ms=start, end_ms=end)
    return summary | {"start_ms": start}, series.reset_index(drop=True)


EARLY_S = 5.0
"""Where a difference arises: the first seconds (slow start or start-up and its first
losses) or the rest of the window."""

STALL_SHARE = 0.1
"""A 0.5 s bin in which the link carried under this share of what it offered (and it
offered at least 0.1 Mbit/s) is a stall: the sender left the queue empty."""


def _packet_weighted_qdelay(series: pd.DataFrame) -> float:
    weight = series["throughput_mbps"].fillna(0.0)
    total = float(weight.sum())
    if total <= 0:
        return math.nan
    return float((series["qdelay_mean_ms"].fillna(0.0) * weight).sum() / total)


def _stall_s(series: pd.DataFrame) -> float:
    offered = series["capacity_mbps"].fillna(0.0)
    idle = (offered >= 0.1) & (series["throughput_mbps"].fillna(0.0) < STALL_SHARE * offered)
    return float(idle.sum()) * 0.5


IN_FLIGHT_COLUMNS = ("unacked", "sacked", "lost", "retrans_out")
"""``TCP_INFO`` fields of ``tcp_packets_in_flight``: ``packets_out - (sacked_out +
lost_out) + retrans_out``."""


def kernel_sender(tcp_info: Path) -> dict[str, float]:
    """From the sender's ``TCP_INFO`` samples (every 10 ms): ``real_rtos``, entries into
    the Loss state (``ca_state`` 4: a retransmission timeout); ``real_unacked_max``, the
    most segments sent and not yet acknowledged (where the send buffer binds, it holds
    this near 2100 with Linux's default ``tcp_wmem``); and ``real_inflight_max``, the
    most in flight as the simulator counts it (``tcp_packets_in_flight``: without the
    segments SACKed or marked lost, with their retransmissions); and, where the log has
    them, ``real_rwnd_limited_s`` and ``real_sndbuf_limited_s``, the seconds the peer's
    receive window or the send buffer held the sender back (``tcpi_rwnd_limited``,
    ``tcpi_sndbuf_limited`` at the last sample), the simulator's ``rwnd_limited_s`` and
    ``sndbuf_limited_s``."""
    samples = pd.read_csv(tcp_info)
    states = samples["ca_state"].to_numpy()
    row = {"real_rtos": 0.0, "real_unacked_max": math.nan, "real_inflight_max": math.nan}
    if not len(states):
        return row
    row["real_rtos"] = float((states[0] == 4) + ((states[1:] == 4) & (states[:-1] != 4)).sum())
    row["real_unacked_max"] = float(samples["unacked"].max())
    if all(c in samples for c in IN_FLIGHT_COLUMNS):
        flight = samples["unacked"] - samples["sacked"] - samples["lost"] + samples["retrans_out"]
        row["real_inflight_max"] = float(flight.max())
    for limit in LIMITED_COLUMNS:
        if f"{limit}_us" in samples:
            row[f"real_{limit}_s"] = float(samples[f"{limit}_us"].iloc[-1]) / 1e6
    return row


LIMITED_COLUMNS = ("rwnd_limited", "sndbuf_limited")
"""``TCP_INFO``'s chronographs of a limited sender, logged in microseconds, and the
simulator's flow columns of the same names in seconds."""


def diagnostics(real: pd.DataFrame, sim: pd.DataFrame) -> dict[str, float]:
    """Where the two sides part: the queueing-delay difference over the first
    :data:`EARLY_S` seconds and after (packet-weighted), and the seconds each side left
    the link idle (:data:`STALL_SHARE`)."""
    row: dict[str, float] = {}
    for name, early in (("first", True), ("after", False)):
        part = {
            side: _packet_weighted_qdelay(s[(s["t_s"] < EARLY_S) == early])
            for side, s in (("real", real), ("sim", sim))
        }
        row[f"qdelay_diff_{name}_{EARLY_S:g}s"] = _relative(part["real"], part["sim"])
    row["real_stall_s"], row["sim_stall_s"] = _stall_s(real), _stall_s(sim)
    return row


def _relative(real: float, sim: float) -> float:
    return (real - sim) / sim if sim and math.isfinite(sim) and math.isfinite(real) else math.nan


def compare_row(
    scheme: str, trace: str, sim: Mapping[str, float], real: Mapping[str, float]
) -> dict[str, Any]:
    """One table row: both sides, the relative differences and whether they are in
    tolerance."""
    row: dict[str, Any] = {"scheme": scheme, "trace": trace}
    for key in ("throughput_mbps", "qdelay_mean_ms", "qdelay_p95_ms", "utilisation"):
        row[f"sim_{key}"] = sim[key]
        row[f"real_{key}"] = real[key]
    row["throughput_diff"] = _relative(real["throughput_mbps"], sim["throughput_mbps"])
    row["qdelay_mean_diff"] = _relative(real["qdelay_mean_ms"], sim["qdelay_mean_ms"])
    row["qdelay_p95_diff"] = _relative(real["qdelay_p95_ms"], sim["qdelay_p95_ms"])
    row["throughput_ok"] = abs(row["throughput_diff"]) <= THROUGHPUT_TOLERANCE
    row["qdelay_ok"] = abs(row["qdelay_mean_diff"]) <= QDELAY_TOLERANCE
    return row


def run_emulated(
    scheme: RealScheme, link: realpath.EmuLink, duration_s: float, out_dir: Path
) -> realpath.EmuRun:
    """The real side of one pair; a per-interval policy runs in this process
    (:class:`kernel_policy.PolicyDriver`) for the flow's length."""
    if scheme.kernel_cc != kernel_policy.KERNEL_CC:
        return realpath.run_emulated(
            link, cc=scheme.kernel_cc, duration_s=duration_s, out_dir=out_dir
        )
    with kernel_policy.PolicyDriver(scheme.sim_scheme, scheme.sim_params):
        return realpath.run_emulated(
            link, cc=scheme.kernel_cc, duration_s=duration_s, out_dir=out_dir
        )


def kernel_run(
    scheme: RealScheme, trace: str, down: Path, up: Path, setup: Setup, run_dir: Path
) -> dict[str, Any]:
    """One kernel run of a pair and the simulation aligned on it: the run's record (both
    sides' metrics, the differences, the emulator's timing); the logs and the time series
    (``timeseries.csv``) land in ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    run_emulated(scheme, emu_link(down, up, setup), setup.duration_s, run_dir)
    return measure_run(scheme, trace, down, up, setup, run_dir)


def measure_run(
    scheme: RealScheme, trace: str, down: Path, up: Path, setup: Setup, run_dir: Path
) -> dict[str, Any]:
    """The record of a kernel run from the files it left in ``run_dir`` (the downlink
    log, the emulator's stats, the receiver's summary), with the simulation aligned on it
    run now: ``cellcc validate --remeasure`` calls this again on finished runs after a
    change to the simulator or to the measurement."""
    real_log = mmlog.read(run_dir / "downlink.log")
    stats, receiver = (json.loads((run_dir / f).read_text()) for f in ("emu.json", "recv.json"))
    real, real_series = measure(real_log, setup.duration_s)
    result, sim, sim_series = simulate_aligned(scheme, down, up, setup, real_log)
    series = pd.concat(
        [sim_series.assign(side="simulator"), real_series.assign(side="kernel")], ignore_index=True
    )
    write_csv_atomic(run_dir / "timeseries.csv", series)
    row = compare_row(scheme.name, trace, sim, real)
    row["start_ms"] = real["start_ms"]
    row["sim_start_ms"] = sim["start_ms"]
    row["sim_goodput_mbps"] = float(result.flows["throughput_mbps"].iloc[0])
    row["real_goodput_mbps"] = float(receiver.get("goodput_mbps", math.nan))
    row.update(diagnostics(real_series, sim_series))
    row["sim_rtos"] = float(result.flows["rtos"].iloc[0])
    inflight = pd.Series(result.timeseries["inflight"], dtype=float)
    row["sim_inflight_max"] = float(inflight.max())
    for limit in LIMITED_COLUMNS:
        row[f"sim_{limit}_s"] = float(result.flows[f"{limit}_s"].iloc[0])
    tcp_info = run_dir / "tcp_info.csv"
    if tcp_info.is_file():
        row.update(kernel_sender(tcp_info))
    row["emu_within_1ms"] = float(stats.get("lateness", {}).get("fraction_within_1ms", math.nan))
    return row


def validate(
    schemes: Sequence[str],
    traces: Sequence[str],
    *,
    traces_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    setup: Setup = Setup(),
    force: bool = False,
    progress: Callable[[str], object] | None = None,
) -> pd.DataFrame:
    """One kernel run of every (scheme, trace) pair on ``setup``'s queue; see
    :func:`cellcc.validation_runs.validate` for repeated runs, several buffers and
    converted traces."""
    from cellcc import validation_runs

    return validation_runs.validate(
        schemes,
        traces,
        traces_dir=traces_dir,
        out_dir=out_dir,
        setup=setup,
        force=force,
        progress=progress,
    )
