"""``cellcc validate``: the same scenario in the simulator and through the real-time
emulator with real Linux TCP, and the differences between the two.

For each (scheme, trace) pair the simulator runs a one-flow scenario with the downlink
packet log on, and ``cellcc-emu`` runs one ``cellcc-flow`` bulk transfer with the kernel
congestion control of the same name (the built-in CUBIC, BBR and Reno, or the BPF C2TCP,
PropRate, César, Vegas, Westwood+, Illinois and CDG loaded by ``cellcc-kernel``). Both
downlink logs are in ``mm-link`` format and go through the same reader
(:mod:`cellcc.mmlog`), so throughput and queueing delay are defined identically on both
sides. ``docs/validation.md`` shows the results.

Each pair's result is written atomically to ``<out>/runs/<scheme>--<trace>.json`` before
the next starts, so an interrupted validation resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cellcc import api, kernel_policy, mmlog, plots, realpath, report
from cellcc.results import json_ready, provenance, write_csv_atomic, write_json_atomic

THROUGHPUT_TOLERANCE = 0.10
"""Acceptable relative throughput difference, real against simulated."""
QDELAY_TOLERANCE = 0.25
"""Acceptable relative difference of the mean queueing delay."""


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
    queue_packets: int = 1000
    seed: int = 1
    sched: str | None = None
    """Cellular scheduling preset (``[scheduling]`` / ``--uplink-sched``), if any."""
    ack_every_segment: bool = False
    """Both receivers ACK every segment (see :class:`realpath.EmuLink`)."""


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
    queue = {"kind": "droptail", "packets": setup.queue_packets}
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
        **({"tcp": {"quickack": QUICKACK_ALWAYS}} if setup.ack_every_segment else {}),
    }


QUICKACK_ALWAYS = 100_000_000
"""``tcp.quickack`` large enough that the simulated receiver never delays an ACK."""

SPREAD_OFFSETS_S = tuple(round(0.05 * i, 2) for i in range(10))
"""Flow start times (s of trace time) of the simulated spread: how much a result depends
on where in the trace the flow starts, which on the real side varies by some 100 ms."""


def simulate_aligned(
    scheme: RealScheme, down: Path, up: Path, setup: Setup, first_arrival_ms: int
) -> tuple[api.Result, dict[str, float], pd.DataFrame]:
    """The simulation whose first packet reaches the downlink link at the same trace time
    as the emulated flow's (``first_arrival_ms``), so both see the same capacity."""
    probe = api.simulate(sim_scenario(scheme, down, up, replace(setup, duration_s=1.0)))
    assert probe.packet_log is not None  # sim_scenario turns the packet log on
    lead_ms = int(mmlog.parse(probe.packet_log).arrivals_ms[0])
    start_s = max(0, first_arrival_ms - lead_ms) / 1000.0
    result = api.simulate(sim_scenario(scheme, down, up, setup, start_s=start_s))
    assert result.packet_log is not None
    sim, series = measure(mmlog.parse(result.packet_log, source="simulated"), setup.duration_s)
    return result, sim, series


def simulated_spread(scheme: RealScheme, down: Path, up: Path, setup: Setup) -> dict[str, float]:
    """Range of throughput and mean queueing delay over the start times
    :data:`SPREAD_OFFSETS_S`."""
    rows = []
    for offset in SPREAD_OFFSETS_S:
        result = api.simulate(sim_scenario(scheme, down, up, setup, start_s=offset))
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
        down, up, setup.delay_ms, setup.queue_packets, setup.sched, setup.ack_every_segment
    )


def _window(log: mmlog.MmLog, duration_s: float) -> tuple[int, int]:
    """From the first arrival (the flow's first packet) for the flow's duration."""
    if not len(log.arrivals_ms):
        raise realpath.RealPathError(f"{log.source}: no packet reached the link")
    start = int(log.arrivals_ms[0])
    return start, start + round(duration_s * 1000)


def measure(log: mmlog.MmLog, duration_s: float) -> tuple[dict[str, float], pd.DataFrame]:
    """Window metrics and a time series aligned to the flow's first packet."""
    start, end = _window(log, duration_s)
    series = mmlog.timeseries(log, bin_ms=500, end_ms=end)
    t_ms = series["t_s"] * 1000
    series = series[(t_ms >= start) & (t_ms + 500 <= end)].copy()
    series["t_s"] -= start / 1000.0
    return mmlog.summary(log, start_ms=start, end_ms=end), series.reset_index(drop=True)


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


def run_pair(
    scheme: RealScheme, trace: str, traces_dir: Path, setup: Setup, out_dir: Path
) -> dict[str, Any]:
    """Simulate and emulate one pair; returns its row and writes its files."""
    down, up = trace_pair(traces_dir, trace)
    pair_dir = out_dir / "runs" / f"{scheme.name}--{trace}"
    pair_dir.mkdir(parents=True, exist_ok=True)

    link = emu_link(down, up, setup)
    emu = run_emulated(scheme, link, setup.duration_s, pair_dir)
    real_log = mmlog.read(emu.downlink_log)
    real, real_series = measure(real_log, setup.duration_s)
    first_ms = int(real_log.arrivals_ms[0])
    result, sim, sim_series = simulate_aligned(scheme, down, up, setup, first_ms)

    series = pd.concat(
        [sim_series.assign(side="simulator"), real_series.assign(side="kernel")], ignore_index=True
    )
    write_csv_atomic(pair_dir / "timeseries.csv", series)
    row = compare_row(scheme.name, trace, sim, real)
    row["start_ms"] = first_ms
    row.update(simulated_spread(scheme, down, up, setup))
    row["real_in_sim_spread"] = (
        row["sim_throughput_min_mbps"] <= real["throughput_mbps"] <= row["sim_throughput_max_mbps"]
    )
    row["sim_goodput_mbps"] = float(result.flows["throughput_mbps"].iloc[0])
    row["real_goodput_mbps"] = float(emu.receiver.get("goodput_mbps", math.nan))
    row["emu_within_1ms"] = float(
        emu.stats.get("lateness", {}).get("fraction_within_1ms", math.nan)
    )
    write_json_atomic(out_dir / "runs" / f"{scheme.name}--{trace}.json", row)
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
    """Run every (scheme, trace) pair not already done and return the table."""
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise realpath.RealPathError(
            f"unknown validation scheme {unknown[0]!r}; choose from {', '.join(SCHEMES)}"
        )
    chosen = [SCHEMES[s] for s in schemes]
    needs_bpf = any(s.bpf for s in chosen)
    reasons = realpath.missing_requirements(bpf=needs_bpf)
    if reasons:
        raise realpath.RealPathError("cannot validate here: " + "; ".join(reasons))
    out, tdir = Path(out_dir), Path(traces_dir)
    for trace in traces:
        trace_pair(tdir, trace)
    rows: list[dict[str, Any]] = []
    settings = {s.bpf: dict(s.kernel_params) for s in chosen if s.bpf}
    with realpath.kernel_loaded(settings) if needs_bpf else contextlib.nullcontext():
        for scheme in chosen:
            for trace in traces:
                done = out / "runs" / f"{scheme.name}--{trace}.json"
                if done.exists() and not force:
                    rows.append(json.loads(done.read_text()))
                else:
                    rows.append(run_pair(scheme, trace, tdir, setup, out))
                if progress:
                    progress(f"{scheme.name} on {trace}")
    table = pd.DataFrame(rows)
    write_csv_atomic(out / "validation.csv", table)
    write_json_atomic(out / "validation.json", json_ready(table.to_dict(orient="records")))
    write_validation_report(table, out, setup)
    return table


def markdown_table(table: pd.DataFrame) -> str:
    """The table as ``docs/validation.md`` shows it."""
    lines = [
        "| scheme | trace | throughput sim / real (Mbit/s) | Δ "
        "| mean qdelay sim / real (ms) | Δ | p95 qdelay sim / real (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.to_dict(orient="records"):
        mark_t = "" if r["throughput_ok"] else " ✗"
        mark_d = "" if r["qdelay_ok"] else " ✗"
        lines.append(
            f"| {r['scheme']} | {r['trace']} "
            f"| {r['sim_throughput_mbps']:.2f} / {r['real_throughput_mbps']:.2f} "
            f"| {r['throughput_diff']:+.1%}{mark_t} "
            f"| {r['sim_qdelay_mean_ms']:.1f} / {r['real_qdelay_mean_ms']:.1f} "
            f"| {r['qdelay_mean_diff']:+.1%}{mark_d} "
            f"| {r['sim_qdelay_p95_ms']:.1f} / {r['real_qdelay_p95_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_validation_report(table: pd.DataFrame, out: Path, setup: Setup) -> Path:
    """``<out>/index.html``: the table, then throughput and delay over time per pair."""
    sections = [
        report.Section(
            title="Simulator against real Linux TCP",
            description=(
                f"{setup.duration_s:g} s bulk flow, {setup.delay_ms:g} ms one-way delay, "
                f"drop-tail {setup.queue_packets} packets. Throughput within "
                f"{THROUGHPUT_TOLERANCE:.0%} and mean queueing delay within "
                f"{QDELAY_TOLERANCE:.0%} count as agreement."
            ),
            table=table,
        )
    ]
    overview = []
    for column, label in (("throughput_mbps", "Mbit/s"), ("qdelay_mean_ms", "queueing delay (ms)")):
        figure = overview_figure(table, out, column=column, label=label)
        png = plots.save(figure, out / "plots" / f"overview-{column}.png", dpi=80)
        overview.append(
            report.Plot(
                png, f"{label} per 500 ms: simulator solid, kernel dashed", "cellcc validate"
            )
        )
    sections.append(report.Section(title="Every pair over time", plots=overview))
    for r in table.to_dict(orient="records"):
        series_path = out / "runs" / f"{r['scheme']}--{r['trace']}" / "timeseries.csv"
        if not series_path.exists():
            continue
        series = pd.read_csv(series_path)
        figure = _pair_figure(series, title=f"{r['scheme']} on {r['trace']}")
        png = plots.save(figure, out / "plots" / f"{r['scheme']}--{r['trace']}.png")
        sections.append(
            report.Section(
                title=f"{r['scheme']} on {r['trace']}",
                plots=[
                    report.Plot(
                        png,
                        "Throughput and mean queueing delay per 500 ms, simulator and kernel",
                        f"cellcc validate --schemes {r['scheme']} --traces {r['trace']}",
                    )
                ],
            )
        )
    record = provenance(seed=setup.seed, scenario_text=json.dumps(setup.__dict__), command=None)
    return report.write_report(
        out, title="cellcc validation", sections=sections, provenance_record=record
    )


def overview_figure(table: pd.DataFrame, out: Path, *, column: str, label: str) -> Any:
    """Every pair in one grid (schemes down, traces across): ``column`` over time,
    simulator solid and kernel dashed."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    schemes = list(dict.fromkeys(table["scheme"]))
    traces = list(dict.fromkeys(table["trace"]))
    figure = Figure(figsize=(4.2 * len(traces), 1.9 * len(schemes)))
    axes = figure.subplots(len(schemes), len(traces), sharex=True, squeeze=False)
    for i, scheme in enumerate(schemes):
        for j, trace in enumerate(traces):
            ax = axes[i][j]
            path = out / "runs" / f"{scheme}--{trace}" / "timeseries.csv"
            if path.exists():
                series = pd.read_csv(path)
                for side, style in (("simulator", "-"), ("kernel", "--")):
                    rows = series[series["side"] == side]
                    ax.plot(rows["t_s"], rows[column], style, linewidth=1, label=side)
            ax.set_title(f"{scheme} on {trace}", fontsize="small")
            if j == 0:
                ax.set_ylabel(label, fontsize="small")
            ax.tick_params(labelsize="x-small")
    axes[0][0].legend(fontsize="x-small")
    for ax in axes[-1]:
        ax.set_xlabel("time since the first packet (s)", fontsize="small")
    figure.tight_layout()
    return figure


def _pair_figure(series: pd.DataFrame, *, title: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5))
    top, bottom = figure.subplots(2, 1, sharex=True)
    for side, style in (("simulator", "-"), ("kernel", "--")):
        rows = series[series["side"] == side]
        top.plot(rows["t_s"], rows["throughput_mbps"], style, label=f"{side} throughput")
        bottom.plot(rows["t_s"], rows["qdelay_mean_ms"], style, label=side)
    rows = series[series["side"] == "simulator"]
    top.plot(rows["t_s"], rows["capacity_mbps"], ":", color="grey", label="capacity")
    top.set_ylabel("Mbit/s")
    bottom.set_ylabel("queueing delay (ms)")
    bottom.set_xlabel("time since the first packet (s)")
    top.legend(fontsize="small")
    top.set_title(title)
    figure.tight_layout()
    return figure
