"""What ``cellcc validate`` writes from its table: the markdown section, the plots, the
HTML report, and the generated section of ``docs/validation.md``.

The section of the docs between :data:`BEGIN` and :data:`END` is replaced as a whole by
``cellcc validate --docs FILE``; everything outside the markers is left byte for byte.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cellcc import plots, report, validation
from cellcc._native import UsageError
from cellcc.results import git_revision, provenance, write_text_atomic

BEGIN = "<!-- validate:begin -->"
END = "<!-- validate:end -->"
"""The markers around the generated section of a markdown file."""


# -- markdown -----------------------------------------------------------------------------


def _pct(value: float) -> str:
    """``+1.2 %``, ``−3.4 %`` (a minus sign, as the docs write it)."""
    return "n/a" if not math.isfinite(value) else f"{value * 100:+.1f} %".replace("-", "−")


def _whole_pct(value: float) -> str:
    return f"{value * 100:.0f} %"


def _range(low: float, high: float, digits: int) -> str:
    return f"{low:.{digits}f}–{high:.{digits}f}"


def markdown_table(rows: pd.DataFrame) -> str:
    """One buffer's pairs: kernel median (min–max), the simulator aligned on the runs
    (its start-time spread), and the difference of the medians; ✗ marks a difference
    beyond the scheme's bound."""
    lines = [
        "| scheme | trace | runs | throughput kernel (Mbit/s) | throughput sim (Mbit/s) | Δ "
        "| mean qdelay kernel (ms) | mean qdelay sim (ms) | Δ | bounds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows.to_dict(orient="records"):
        mark_t = "" if r["throughput_ok"] else " ✗"
        mark_d = "" if r["qdelay_ok"] else " ✗"
        lines.append(
            f"| {r['scheme']} | {r['trace']} | {r['runs']} "
            f"| {r['real_throughput_mbps']:.2f} "
            f"({_range(r['real_throughput_min_mbps'], r['real_throughput_max_mbps'], 2)}) "
            f"| {r['sim_throughput_mbps']:.2f} "
            f"({_range(r['sim_throughput_min_mbps'], r['sim_throughput_max_mbps'], 2)}) "
            f"| {_pct(r['throughput_diff'])}{mark_t} "
            f"| {r['real_qdelay_mean_ms']:.1f} "
            f"({_range(r['real_qdelay_mean_min_ms'], r['real_qdelay_mean_max_ms'], 1)}) "
            f"| {r['sim_qdelay_mean_ms']:.1f} "
            f"({_range(r['sim_qdelay_mean_min_ms'], r['sim_qdelay_mean_max_ms'], 1)}) "
            f"| {_pct(r['qdelay_mean_diff'])}{mark_d} "
            f"| {_whole_pct(r['throughput_bound'])} / {_whole_pct(r['qdelay_bound'])} |"
        )
    return "\n".join(lines) + "\n"


def misses_table(rows: pd.DataFrame) -> str:
    """The pairs beyond a bound, with where they part: the queueing-delay Δ over the first
    5 s and after, the retransmission timeouts, the seconds the link idled while it
    offered capacity, the most segments in flight and the seconds the receive window held
    the sender back, each side (medians over the runs); empty without a miss."""
    missed = rows[~(rows["throughput_ok"] & rows["qdelay_ok"])]
    if missed.empty or "real_rtos" not in missed:
        return ""
    lines = [
        "| scheme | trace | Δ throughput | Δ mean qdelay | Δ qdelay first 5 s | Δ qdelay after 5 s "
        "| RTOs kernel / sim | stall s kernel / sim | most in flight kernel / sim "
        "| rwnd-limited s kernel / sim |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in missed.to_dict(orient="records"):
        lines.append(
            f"| {r['scheme']} | {r['trace']} | {_pct(r['throughput_diff'])} "
            f"| {_pct(r['qdelay_mean_diff'])} | {_pct(r['qdelay_diff_first_5s'])} "
            f"| {_pct(r['qdelay_diff_after_5s'])} | {r['real_rtos']:g} / {r['sim_rtos']:g} "
            f"| {r['real_stall_s']:g} / {r['sim_stall_s']:g} "
            f"| {r.get('real_inflight_max', math.nan):.0f} "
            f"/ {r.get('sim_inflight_max', math.nan):.0f} "
            f"| {r.get('real_rwnd_limited_s', math.nan):.2f} "
            f"/ {r.get('sim_rwnd_limited_s', math.nan):.2f} |"
        )
    return "\n".join(lines) + "\n"


def _buffer_title(label: str) -> str:
    """``Drop-tail 150000 bytes each way (150KB)``."""
    from cellcc.validation_runs import parse_buffers

    (buffer,) = parse_buffers(label)
    limit = f"{buffer.packets} packets" if buffer.packets is not None else f"{buffer.bytes} bytes"
    return f"Drop-tail {limit} each way ({label})"


def markdown_section(
    table: pd.DataFrame,
    setup: validation.Setup,
    *,
    runs: int,
    command: str | None,
    figure_dir: str,
) -> str:
    """The generated markdown: how it was made, then per buffer the table, a count of the
    pairs within bounds and the Δ figure (``<figure_dir>/delta-<buffer>.png``)."""
    made_by = f"`{command}`" if command else "`cellcc validate`"
    parts = [
        f"Generated by {made_by} at revision `{git_revision()}`; do not edit by hand.",
        "",
        f"{setup.duration_s:g} s bulk flow, {setup.delay_ms:g} ms one-way delay each way, "
        f"up to {runs} kernel run(s) per pair. Kernel: median (min–max) over the runs. "
        "Sim: median of the simulations aligned on each run (start-time spread). Δ: "
        "kernel median against sim median. Bounds (throughput / mean queueing delay): "
        f"{_whole_pct(validation.ACCEPTANCE_THROUGHPUT)} / "
        f"{_whole_pct(validation.ACCEPTANCE_QDELAY)} for "
        f"{', '.join(validation.ACCEPTANCE_SCHEMES)}, "
        f"{_whole_pct(validation.THROUGHPUT_TOLERANCE)} / "
        f"{_whole_pct(validation.QDELAY_TOLERANCE)} for "
        "the BPF schemes.",
    ]
    for label, rows in table.groupby("buffer", sort=False):
        both = int((rows["throughput_ok"] & rows["qdelay_ok"]).sum())
        parts += [
            "",
            f"#### {_buffer_title(str(label))}",
            "",
            markdown_table(rows).rstrip("\n"),
            "",
            f"{both} of {len(rows)} pairs within both bounds.",
            "",
        ]
        misses = misses_table(rows)
        if misses:
            parts += [
                "Where the misses arise (medians over the runs; Δ as above; a stall is "
                "0.5 s in which the link carried under a tenth of what it offered):",
                "",
                misses.rstrip("\n"),
                "",
            ]
        parts += [
            f"![Δ per pair, {label}: kernel median with its range, simulator start-time "
            f"spread beside it]({figure_dir}/delta-{label}.png)",
        ]
    return "\n".join(parts) + "\n"


def replace_section(text: str, section: str, *, where: str) -> str:
    """``text`` with everything between :data:`BEGIN` and :data:`END` replaced by
    ``section``; ``where`` (a file name) is named in the errors."""
    begins, ends = text.count(BEGIN), text.count(END)
    if begins != 1 or ends != 1:
        raise UsageError(
            f"{where}: expected one {BEGIN} line and one {END} line around the generated "
            f"section, found {begins} and {ends}; add them where the validation table goes"
        )
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    if stop < start:
        raise UsageError(f"{where}: {END} comes before {BEGIN}; swap them")
    return text[:start] + "\n" + section + text[stop:]


def check_docs(doc: str | os.PathLike[str]) -> None:
    """Fail now, not after the runs, if ``doc`` cannot take the generated section."""
    path = Path(doc)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--docs: {path}: {exc.strerror or exc}") from None
    replace_section(text, "", where=str(path))


def update_docs(doc: str | os.PathLike[str], section: str, figures: Sequence[Path]) -> Path:
    """Replace the generated section of ``doc`` and copy ``figures`` into
    ``<doc dir>/<doc stem>/`` (where the section's links point). Checked before
    anything is written."""
    path = Path(doc)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--docs: {path}: {exc.strerror or exc}") from None
    updated = replace_section(text, section, where=str(path))
    target = path.parent / path.stem
    target.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        shutil.copyfile(figure, target / figure.name)
    return write_text_atomic(path, updated)


# -- plots --------------------------------------------------------------------------------


def delta_figure(rows: pd.DataFrame, *, title: str) -> Any:
    """Per pair, the difference of the medians (dot) with the kernel runs' range as error
    bars, and beside it (grey) the simulator's start-time spread relative to its aligned
    value; the scheme's bound is shaded."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    records = rows.to_dict(orient="records")
    figure = Figure(figsize=(max(6.0, 0.32 * len(records) + 2), 6.5))
    axes = figure.subplots(2, 1, sharex=True)
    x = list(range(len(records)))
    for ax, metric, bound_key, label in (
        (axes[0], "throughput", "throughput_bound", "throughput Δ"),
        (axes[1], "qdelay_mean", "qdelay_bound", "mean queueing delay Δ"),
    ):
        for i, r in enumerate(records):
            bound = r[bound_key]
            ax.fill_between(
                [i - 0.45, i + 0.45],
                -bound,
                bound,
                color="#e8f0e8",
                linewidth=0,
                label="the scheme's bound" if i == 0 else None,
            )

            def finite(v: Any) -> float:
                return float(v) if v is not None and math.isfinite(float(v)) else math.nan

            mid = finite(r[f"{metric}_diff"])
            low, high = finite(r[f"{metric}_diff_min"]), finite(r[f"{metric}_diff_max"])
            ok = r["throughput_ok" if metric == "throughput" else "qdelay_ok"]
            ax.errorbar(
                [i - 0.12],
                [mid],
                yerr=[[max(mid - low, 0.0)], [max(high - mid, 0.0)]],
                fmt="o",
                color="C0" if ok else "C3",
                markersize=4,
                capsize=2,
                label="kernel median (runs' range)" if i == 0 else None,
            )
            s_low = finite(r[f"sim_{metric}_spread_min"])
            s_high = finite(r[f"sim_{metric}_spread_max"])
            ax.plot(
                [i + 0.12, i + 0.12],
                [s_low, s_high],
                color="grey",
                linewidth=3,
                solid_capstyle="butt",
                label="simulator start-time spread" if i == 0 else None,
            )
        ax.axhline(0.0, color="black", linewidth=0.6)
        ax.set_ylabel(label)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:+.0%}"))
    axes[0].legend(fontsize="small", loc="upper left")
    axes[0].set_title(title)
    axes[1].set_xticks(x)
    axes[1].set_xticklabels(
        [plots.literal(f"{r['scheme']} / {r['trace']}") for r in records],
        rotation=70,
        ha="right",
        fontsize="x-small",
    )
    figure.tight_layout()
    return figure


def _series_path(out: Path, r: dict[str, Any]) -> Path:
    from cellcc.validation_runs import pair_dir

    run = f"run-{r['median_run']}"
    return pair_dir(out, r["buffer"], r["scheme"], r["trace"]) / run / "timeseries.csv"


def overview_figure(rows: pd.DataFrame, out: Path, *, column: str, label: str) -> Any:
    """Every pair of one buffer in one grid (schemes down, traces across): ``column``
    over time in the median run, simulator solid and kernel dashed."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    schemes = list(dict.fromkeys(rows["scheme"]))
    trace_names = list(dict.fromkeys(rows["trace"]))
    figure = Figure(figsize=(4.2 * len(trace_names), 1.9 * len(schemes)))
    axes = figure.subplots(len(schemes), len(trace_names), sharex=True, squeeze=False)
    by_pair = {(r["scheme"], r["trace"]): r for r in rows.to_dict(orient="records")}
    for i, scheme in enumerate(schemes):
        for j, trace in enumerate(trace_names):
            ax = axes[i][j]
            r = by_pair.get((scheme, trace))
            if r is not None and (path := _series_path(out, r)).exists():
                series = pd.read_csv(path)
                for side, style in (("simulator", "-"), ("kernel", "--")):
                    side_rows = series[series["side"] == side]
                    ax.plot(side_rows["t_s"], side_rows[column], style, linewidth=1, label=side)
            ax.set_title(plots.literal(f"{scheme} on {trace}"), fontsize="small")
            if j == 0:
                ax.set_ylabel(label, fontsize="small")
            ax.tick_params(labelsize="x-small")
    axes[0][0].legend(fontsize="x-small")
    for ax in axes[-1]:
        ax.set_xlabel("time since the first packet (s)", fontsize="small")
    figure.tight_layout()
    return figure


def pair_figure(series: pd.DataFrame, *, title: str) -> Any:
    """Throughput and mean queueing delay per 500 ms of one run, both sides."""
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
    top.set_title(plots.literal(title))
    figure.tight_layout()
    return figure


# -- everything ---------------------------------------------------------------------------


def write_all(
    table: pd.DataFrame,
    out: Path,
    setup: validation.Setup,
    *,
    runs: int,
    command: str | None = None,
    docs: str | os.PathLike[str] | None = None,
) -> Path:
    """``<out>/validation.md``, ``<out>/plots/`` and ``<out>/index.html``; with ``docs``,
    also that file's generated section and its figures. Returns the HTML report."""
    again = command or "cellcc validate"
    deltas: list[Path] = []
    sections = []
    for label, rows in table.groupby("buffer", sort=False):
        delta = plots.save(
            delta_figure(rows, title=f"Kernel against simulator, {_buffer_title(str(label))}"),
            out / "plots" / f"delta-{label}.png",
            dpi=90,
        )
        deltas.append(delta)
        figures = [report.Plot(delta, "Δ of the medians per pair", again)]
        for column, unit in (
            ("throughput_mbps", "Mbit/s"),
            ("qdelay_mean_ms", "queueing delay (ms)"),
        ):
            png = plots.save(
                overview_figure(rows, out, column=column, label=unit),
                out / "plots" / f"overview-{label}-{column}.png",
                dpi=80,
            )
            figures.append(
                report.Plot(
                    png,
                    f"{unit} per 500 ms, median run: simulator solid, kernel dashed",
                    again,
                )
            )
        for r in rows.to_dict(orient="records"):
            path = _series_path(out, r)
            if path.exists():
                title = f"{r['scheme']} on {r['trace']}, {label}, run {r['median_run']}"
                png = plots.save(
                    pair_figure(pd.read_csv(path), title=title),
                    out / "plots" / str(label) / f"{r['scheme']}--{r['trace']}.png",
                    dpi=80,
                )
                figures.append(report.Plot(png, title, again))
        sections.append(
            report.Section(
                title=_buffer_title(str(label)),
                description=(
                    f"{setup.duration_s:g} s bulk flow, {setup.delay_ms:g} ms one-way delay. "
                    "real_* is the kernel runs' median, sim_* the median of the simulations "
                    "aligned on them; *_min/*_max their range and the simulator's "
                    "start-time spread."
                ),
                table=rows,
                plots=figures,
            )
        )
    section = markdown_section(table, setup, runs=runs, command=command, figure_dir="plots")
    write_text_atomic(out / "validation.md", f"# cellcc validation\n\n{section}")
    if docs is not None:
        stem = Path(docs).stem
        docs_section = markdown_section(table, setup, runs=runs, command=command, figure_dir=stem)
        update_docs(docs, docs_section, deltas)
    record = provenance(seed=setup.seed, scenario_text=json.dumps(setup.__dict__), command=command)
    return report.write_report(
        out, title="cellcc validation", sections=sections, provenance_record=record
    )
