"""``cellcc analyze``: ``mm-link`` logs from the simulator, the emulator or Mahimahi itself
turned into a run's summary, link time series, plots and HTML report.

Every log goes through the one reader, :mod:`cellcc.mmlog`, so a simulated run (its
``downlink.log``, ``metrics.packet_log = true``), an emulated one (``cellcc emu
--downlink-log``) and a Mahimahi one (``mm-link --downlink-log``) of the same scenario
are measured alike and can share one table and one report. The plots are those of
Mahimahi's ``mm-throughput-graph`` (capacity, arrivals and departures over time) and
``mm-delay-graph`` (the delay of every packet over time); the definitions of the
columns are in docs/metrics.md ("Analysing mm-link logs").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cellcc import mmlog
from cellcc._native import UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Analysis", "LoggedRun", "analyse", "load", "parse_log_argument", "write"]

DEFAULT_BIN_MS = 500
"""Width of a time-series bin, ms: the simulator's ``metrics.bin_ms`` default and
``mm-throughput-graph``'s ``ms-per-bin``."""

#: Report table columns of an analysis, with their headers.
TABLE_COLUMNS = {
    "scheme": "run",
    "link": "link",
    "duration_s": "duration (s)",
    "pantheon_throughput_mbps": "throughput (Mbit/s)",
    "capacity_mbps": "capacity (Mbit/s)",
    "utilisation": "utilisation",
    "qdelay_mean_ms": "mean queueing delay (ms)",
    "qdelay_p95_ms": "p95 queueing delay (ms)",
    "drops_queue": "drops",
}


@dataclass(frozen=True)
class LoggedRun:
    """One log and the name it is shown under."""

    label: str
    path: Path
    log: mmlog.MmLog


@dataclass
class Analysis:
    """Summary rows (one per log, ``scheme`` = its label) and link time series (one row
    per log per bin)."""

    runs: list[LoggedRun]
    summary: pd.DataFrame
    timeseries: pd.DataFrame
    bin_ms: int


def parse_log_argument(text: str) -> tuple[str | None, Path]:
    """``LABEL=PATH`` or ``PATH`` (a path holding ``=`` is read as a path when it exists)."""
    label, sep, path = text.partition("=")
    if sep and label.strip() and path and not Path(text).exists():
        return label.strip(), Path(path)
    return None, Path(text)


def load(path: str | os.PathLike[str], label: str | None = None) -> LoggedRun:
    """Read one log; a missing file or a malformed line is a :class:`UsageError` naming
    the file (and the line)."""
    path = Path(path)
    if not path.is_file():
        what = "no such log file" if not path.exists() else "not a file"
        raise UsageError(f"{path}: {what}")
    try:
        log = mmlog.rebased(mmlog.read(path))
    except mmlog.MmLogError as exc:
        raise UsageError(str(exc)) from None
    if not (len(log.arrivals_ms) or len(log.departures_ms) or len(log.opportunities_ms)):
        raise UsageError(f"{path}: no events; expected an mm-link log (`t + bytes`, ...)")
    return LoggedRun(label or _default_label(path), path, log)


def _default_label(path: Path) -> str:
    """``dir/stem``: the run directory tells ``out/sim/downlink.log`` from
    ``out/emu/downlink.log``."""
    parent = path.resolve().parent.name
    return f"{parent}/{path.stem}" if parent else path.stem


def analyse(runs: Sequence[LoggedRun], *, bin_ms: int = DEFAULT_BIN_MS) -> Analysis:
    """The summary and time series of ``runs``; labels must be distinct."""
    if bin_ms <= 0:
        raise UsageError(f"--bin-ms: must be positive, got {bin_ms}")
    seen: dict[str, Path] = {}
    for run in runs:
        if run.label in seen:
            raise UsageError(
                f"{run.path}: label {run.label!r} is also {seen[run.label]}'s; "
                "name them with LABEL=PATH"
            )
        seen[run.label] = run.path
    rows, series = [], []
    for run in runs:
        rows.append({"scheme": run.label, **mmlog.run_summary(run.log)})
        frame = mmlog.run_timeseries(run.log, bin_ms=bin_ms)
        frame.insert(0, "scheme", run.label)
        series.append(frame)
    return Analysis(
        runs=list(runs),
        summary=pd.DataFrame(rows),
        timeseries=pd.concat(series, ignore_index=True),
        bin_ms=bin_ms,
    )


# -- plots ----------------------------------------------------------------------------


def throughput_figure(analysis: Analysis, label: str) -> Figure:
    """``mm-throughput-graph``: capacity (shaded), traffic arriving at and leaving the
    link over time, with the averages in the title."""
    from cellcc import plots

    rows = analysis.timeseries[analysis.timeseries["scheme"] == label]
    summary = analysis.summary.set_index("scheme").loc[label]
    t = rows["t_s"].to_numpy(dtype=float)
    width = analysis.bin_ms / 1000.0
    edges = np.append(t, t[-1] + width) if len(t) else t

    def post(values: np.ndarray) -> np.ndarray:
        return np.append(values, values[-1]) if len(values) else values

    with plots._style():
        figure = plots._figure(7.2, 3.8)
        ax = figure.add_subplot()
        capacity = rows["capacity_mbps"].to_numpy(dtype=float)
        if np.isfinite(capacity).any():
            ax.fill_between(
                edges, 0, post(capacity), step="post", color=plots.CAPACITY_COLOR,
                alpha=0.6, linewidth=0, label="capacity",
            )  # fmt: skip
        ax.step(edges, post(rows["ingress_mbps"].to_numpy(dtype=float)), where="post",
                color=plots.PALETTE[1], linewidth=1.0, label="traffic in")  # fmt: skip
        ax.step(edges, post(rows["egress_mbps"].to_numpy(dtype=float)), where="post",
                color=plots.PALETTE[0], label="traffic out")  # fmt: skip
        ax.set_xlabel("Time (s)")
        ax.set_ylabel(f"Throughput (Mbit/s, {analysis.bin_ms} ms bins)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", frameon=False, ncols=3)
        capacity_text = (
            f"capacity {summary['capacity_mbps']:.2f} Mbit/s, "
            if np.isfinite(summary["capacity_mbps"])
            else ""
        )
        ax.set_title(
            f"{plots.literal(label)}: {capacity_text}throughput "
            f"{summary['egress_mbps']:.2f} Mbit/s, utilisation "
            f"{_percent(summary['utilisation'])}"
        )
    return figure


def delay_figure(analysis: Analysis, label: str) -> Figure:
    """``mm-delay-graph``: the delay of every packet at the link against its departure
    time, with the mean and 95th percentile in the title."""
    from cellcc import plots

    run = next(r for r in analysis.runs if r.label == label)
    summary = analysis.summary.set_index("scheme").loc[label]
    with plots._style():
        figure = plots._figure(7.2, 3.8)
        ax = figure.add_subplot()
        t = run.log.departures_ms / 1000.0
        ax.scatter(t, run.log.delays_ms, s=2, color=plots.PALETTE[0], linewidths=0,
                   rasterized=True)  # fmt: skip
        ax.set_xlabel("Time (s)")
        ax.set_ylabel("Per-packet queueing delay (ms)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        if not len(t):
            ax.text(0.5, 0.5, "no departures", ha="center", transform=ax.transAxes)
        ax.set_title(
            f"{plots.literal(label)}: mean {summary['qdelay_mean_ms']:.1f} ms, "
            f"p95 {summary['qdelay_p95_ms']:.1f} ms"
        )
    return figure


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %" if np.isfinite(value) else "n/a"


# -- output ---------------------------------------------------------------------------


def write(
    analysis: Analysis,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    title: str = "mm-link logs",
) -> Path:
    """Write ``summary.{csv,json}``, ``timeseries.csv``, the plots, ``provenance.json``
    and the report ``index.html`` into ``out_dir``; return the report's path."""
    from cellcc import plots, report
    from cellcc._columns import records
    from cellcc.results import (
        PROVENANCE_FILE,
        file_name,
        provenance,
        write_csv_atomic,
        write_json_atomic,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = provenance(
        seed=None,
        command=command,
        extra={"logs": {r.label: os.fspath(r.path) for r in analysis.runs}},
    )
    summary_csv = write_csv_atomic(out / "summary.csv", analysis.summary)
    write_json_atomic(out / "summary.json", {"summary": records(analysis.summary)})
    series_csv = write_csv_atomic(out / "timeseries.csv", analysis.timeseries)
    write_json_atomic(out / PROVENANCE_FILE, record)
    how = command or "cellcc analyze LOG..."
    sections = []
    overview = report.Section(
        title="Summary",
        description=(
            "One row per log, measured at the logged link: throughput is the IP bits that "
            "left it over the time from the first departure to the last (Pantheon's); "
            "queueing delay is the per-packet delay of the log (docs/metrics.md)."
        ),
        commands=[("Made with:", how)],
        table=analysis.summary,
        columns=TABLE_COLUMNS,
        files=[("summary.csv", summary_csv), ("timeseries.csv", series_csv)],
    )
    if analysis.summary["qdelay_p95_ms"].notna().any():
        # Labels and the title are the user's text: drawn as written, never as mathtext.
        drawn = analysis.summary.assign(scheme=analysis.summary["scheme"].map(plots.literal))
        for delay in ("qdelay_p95_ms", "qdelay_mean_ms"):
            figure = plots.throughput_delay_figure(
                drawn,
                delay=delay,
                throughput="pantheon_throughput_mbps",
                title="Throughput vs " + plots.DELAY_LABELS[delay].split(" (")[0].lower(),
                subtitle=plots.literal(title),
            )
            path = plots.save(figure, out / f"throughput-vs-{delay.replace('_', '-')}.png")
            overview.plots.append(report.Plot(path, "Every log on one scatter", how))
    sections.append(overview)
    for run in analysis.runs:
        stem = file_name(run.label)
        throughput = plots.save(
            throughput_figure(analysis, run.label), out / f"{stem}-throughput.png"
        )
        delay = plots.save(delay_figure(analysis, run.label), out / f"{stem}-delay.png")
        sections.append(
            report.Section(
                title=run.label,
                description=f"Log {run.path}.",
                plots=[
                    report.Plot(throughput, "Throughput over time (mm-throughput-graph)", how),
                    report.Plot(delay, "Per-packet delay over time (mm-delay-graph)", how),
                ],
            )
        )
    return report.write_report(
        out, title=title, sections=sections, provenance_record=record, intro=""
    )
