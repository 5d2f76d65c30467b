"""HTML reports: summary tables, plots, the command behind every plot, provenance.

A report is one self-contained ``index.html`` (inline CSS, no scripts, no network) next to
the PNGs and result files it links with relative paths, so the directory can be moved or
archived as a whole. Each plot is captioned with the command that regenerates it.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cellcc._columns import format_cell
from cellcc.api import Comparison, format_queue
from cellcc.results import (
    PROVENANCE_FILE,
    confined,
    file_name,
    provenance,
    write_csv_atomic,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)

if TYPE_CHECKING:
    from cellcc.comparisons import ComparisonSet

__all__ = [
    "Plot",
    "Section",
    "comparison_summary",
    "table_html",
    "write_comparison",
    "write_comparison_set",
    "write_report",
]

REPORT_FILE = "index.html"

#: Summary columns shown in report tables, with their headers (docs/metrics.md).
TABLE_COLUMNS = {
    "scheme": "scheme",
    "cc_phase": "final CC phase",
    "throughput_mbps": "throughput (Mbit/s)",
    "utilisation": "utilisation",
    "owd_mean_ms": "mean OWD (ms)",
    "owd_p95_ms": "p95 OWD (ms)",
    "qdelay_mean_ms": "mean queueing delay (ms)",
    "qdelay_p95_ms": "p95 queueing delay (ms)",
    "rtt_mean_ms": "mean RTT (ms)",
    "pantheon_loss_rate": "loss rate",
    "retransmits": "retransmits",
}


@dataclass
class Plot:
    """One image in a report; ``path`` is where the PNG is on disk."""

    path: Path
    caption: str
    command: str


@dataclass
class Section:
    """A block of a report: text, the commands behind it, a table and plots."""

    title: str
    description: str = ""
    commands: list[tuple[str, str]] = field(default_factory=list)
    table: pd.DataFrame | None = None
    plots: list[Plot] = field(default_factory=list)
    files: list[tuple[str, Path]] = field(default_factory=list)
    #: The table's columns to show and their headers (see :func:`table_html`); ``None``
    #: shows every column, as sweep tables need (their group, metrics and paper columns).
    columns: Mapping[str, str] | None = field(default_factory=lambda: dict(TABLE_COLUMNS))


def table_html(frame: pd.DataFrame, columns: Mapping[str, str] | None = TABLE_COLUMNS) -> str:
    """An HTML table of ``frame``.

    With ``columns``, only those that ``frame`` has, in that order (all of them if it has
    none); with ``None``, every column of ``frame`` in its order. Headers are the names
    in ``columns`` or :data:`TABLE_COLUMNS`, else the column itself; a published
    ``<metric> (paper)`` column is headed like its metric.
    """
    if columns is None:
        shown = list(frame.columns)
    else:
        shown = [c for c in columns if c in frame.columns] or list(frame.columns)
    names = {**TABLE_COLUMNS, **(columns or {})}
    head = "".join(f"<th>{html.escape(_header(c, names))}</th>" for c in shown)
    rows = []
    for record in frame[shown].astype(object).to_dict(orient="records"):
        cells = "".join(
            f'<td class="{"num" if isinstance(record[c], int | float) else "txt"}">'
            f"{html.escape(format_cell(record[c]))}</td>"
            for c in shown
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _header(column: Any, names: Mapping[str, str]) -> str:
    text = str(column)
    if text in names:
        return names[text]
    base, paper, _ = text.rpartition(" (paper)")
    if paper and base in names:
        return f"{names[base]} (paper)"
    return text


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.4rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .3rem .6rem; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.2rem 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .9rem; color: #333; }
pre { background: #f6f6f6; padding: .5rem .7rem; overflow-x: auto; font-size: .82rem;
      white-space: pre-wrap; word-break: break-all; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(30rem, 1fr)); gap: 1rem; }
footer { margin-top: 3rem; border-top: 1px solid #ddd; font-size: .8rem; color: #444; }
footer td, footer th { font-size: .8rem; }
"""


def _rel(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def _section_html(section: Section, root: Path) -> str:
    parts = [f"<section><h2>{html.escape(section.title)}</h2>"]
    if section.description:
        parts.append(f"<p>{html.escape(section.description)}</p>")
    for label, command in section.commands:
        parts.append(f"<p>{html.escape(label)}</p><pre>{html.escape(command)}</pre>")
    if section.table is not None and not section.table.empty:
        parts.append(table_html(section.table, section.columns))
    if section.plots:
        parts.append('<div class="grid">')
        for plot in section.plots:
            src = html.escape(_rel(plot.path, root), quote=True)
            parts.append(
                f'<figure><img src="{src}" alt="{html.escape(plot.caption, quote=True)}">'
                f"<figcaption>{html.escape(plot.caption)}. Regenerate with:"
                f"<pre>{html.escape(plot.command)}</pre></figcaption></figure>"
            )
        parts.append("</div>")
    if section.files:
        links = ", ".join(
            f'<a href="{html.escape(_rel(path, root), quote=True)}">{html.escape(label)}</a>'
            for label, path in section.files
        )
        parts.append(f"<p>Data: {links}</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _provenance_html(record: Mapping[str, Any]) -> str:
    rows = [
        ("cellcc", record.get("cellcc_version")),
        ("git revision", record.get("git_revision")),
        ("seed", record.get("seed")),
        ("created (UTC)", record.get("created_utc")),
        ("python", record.get("python")),
        ("platform", record.get("platform")),
    ]
    rows += [(name, version) for name, version in (record.get("versions") or {}).items()]
    rows.append(("command", record.get("command")))
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows
    )
    return f"<footer><p>Provenance</p><table>{body}</table></footer>"


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    title: str,
    sections: Sequence[Section],
    provenance_record: Mapping[str, Any],
    intro: str = "",
) -> Path:
    """Write ``<out_dir>/index.html`` atomically and return its path."""
    root = Path(out_dir)
    body = [f"<h1>{html.escape(title)}</h1>"]
    if intro:
        body.append(f"<p>{html.escape(intro)}</p>")
    body += [_section_html(section, root) for section in sections]
    body.append(_provenance_html(provenance_record))
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    return write_text_atomic(root / REPORT_FILE, page)


# -- comparisons ----------------------------------------------------------------------


def comparison_summary(comparison: Comparison) -> pd.DataFrame:
    """``comparison.summary`` with each flow's final congestion-control phase
    (``cc_phase``, from the result's ``cc_info``) after the scheme: it tells, for
    example, that César ran as its BBR fallback because it found no scheduling pattern."""
    summary = comparison.summary
    phases = []
    for result in comparison.results.values():  # the order of the summary's rows
        info = result.cc_info
        by_flow: dict[int, str] = {}
        if info is not None and not info.empty and "phase" in info.columns:
            by_flow = {int(f): str(p) for f, p in zip(info["flow"], info["phase"], strict=True)}
        phases += [by_flow.get(int(flow), "") for flow in result.flows["flow"]]
    if not summary.empty:
        summary.insert(int(summary.columns.get_loc("scheme")) + 1, "cc_phase", phases)
    return summary


def write_comparison(
    comparison: Comparison,
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    commands_before: Sequence[tuple[str, str]] = (),
    write_index: bool = True,
    timeseries: bool = True,
) -> Section:
    """Save a :class:`cellcc.api.Comparison`: per-scheme results (``<out>/<scheme>/``),
    the combined summary (JSON/CSV/Parquet), provenance, the throughput-delay scatters,
    one time-series plot per scheme and (``write_index``) an ``index.html``.

    ``command`` is the command that regenerates everything (default: the equivalent
    ``cellcc compare`` command line); ``commands_before`` are steps to run first (such
    as generating the trace). ``timeseries=False`` leaves out the per-scheme time-series
    plots. Returns the report section describing the comparison.
    """
    from cellcc import plots

    out = Path(out_dir)
    command = command or comparison.command(out)
    # Scheme names are user text (parameters, import paths): one confined name each.
    folders = {scheme: confined(out, file_name(scheme)) for scheme in comparison.results}
    for scheme, result in comparison.results.items():
        result.save(folders[scheme], command=command)
        if result.cc_info is not None and not result.cc_info.empty:
            write_csv_atomic(folders[scheme] / "cc_info.csv", result.cc_info)

    summary = comparison_summary(comparison)
    record = provenance(
        seed=comparison.seed,
        command=command,
        extra={
            "comparison": {
                "trace": os.fspath(comparison.trace),
                "uplink_trace": None
                if comparison.uplink_trace is None
                else os.fspath(comparison.uplink_trace),
                "uplink_mbps": comparison.uplink_mbps,
                "schemes": comparison.schemes,
                "delay_ms": comparison.delay_ms,
                "queue": comparison.queue,
                "duration_s": comparison.duration_s,
                "bin_ms": comparison.bin_ms,
            },
            "scenarios": {s: r.scenario_text for s, r in comparison.results.items()},
        },
    )
    write_json_atomic(out / "summary.json", {"summary": summary.to_dict(orient="records")})
    write_csv_atomic(out / "summary.csv", summary)
    write_parquet_atomic(out / "summary.parquet", summary, provenance=record)
    write_json_atomic(out / PROVENANCE_FILE, record)

    styles = plots.scheme_styles(comparison.schemes)
    subtitle = f"{comparison.path_label}, {comparison.duration_s:g} s, seed {comparison.seed}"
    section = Section(
        title=f"{comparison.trace_label}: {', '.join(comparison.schemes)}",
        description=(
            f"One flow per run, {comparison.duration_s:g} s of simulated time, seed "
            f"{comparison.seed}. Downlink trace {comparison.trace_label}; uplink "
            + (
                comparison.uplink_trace.name
                if comparison.uplink_trace is not None
                else f"constant {comparison.uplink_mbps:g} Mbit/s"
            )
            + f"; {comparison.delay_ms:g} ms one-way propagation delay each way; "
            f"{format_queue(comparison.queue)} in both directions."
        ),
        commands=[*commands_before, ("Regenerate this section:", command)],
        table=summary,
    )
    scatter_captions = {
        "owd_p95_ms": "Throughput vs 95th-percentile one-way delay (Pantheon convention)",
        "qdelay_mean_ms": "Throughput vs average queueing delay (C2TCP convention)",
    }
    for delay, path in plots.summary_plots(summary, out, title_suffix=subtitle, styles=styles):
        section.plots.append(Plot(path, scatter_captions.get(delay, delay), command))

    for scheme, result in comparison.results.items() if timeseries else ():
        figure = plots.timeseries_figure(
            result.timeseries,
            title=f"{scheme} on {comparison.trace_label}",
            subtitle=subtitle,
            styles=styles,
            flow_labels={0: scheme},
        )
        path = plots.save(figure, confined(out, file_name(f"timeseries-{scheme}") + ".png"))
        section.plots.append(
            Plot(path, f"{scheme}: throughput, queueing delay and cwnd over time", command)
        )
        section.files.append((f"{scheme} results", folders[scheme] / "summary.csv"))
    section.files.insert(0, ("summary.csv", out / "summary.csv"))

    if write_index:
        write_report(
            out,
            title=f"cellcc comparison on {comparison.trace_label}",
            sections=[section],
            provenance_record=record,
        )
    return section


def write_comparison_set(comparison_set: ComparisonSet, out_dir: str | os.PathLike[str]) -> Path:
    """Save a :class:`cellcc.comparisons.ComparisonSet`: every run's comparison in
    ``<out>/<trace>/seed-<seed>/`` (time-series plots for the first seed only), the
    combined ``summary`` and the ``aggregate`` over the runs (CSV and Parquet), and an
    ``index.html`` that opens with the means and their intervals. Returns the report."""
    out = Path(out_dir)
    command = comparison_set.command(out)
    sections = []
    first_seed = comparison_set.seeds[0]
    for comparison in comparison_set.comparisons:
        section = write_comparison(
            comparison,
            confined(out, file_name(comparison.trace_label), f"seed-{comparison.seed}"),
            command=command,
            write_index=False,
            timeseries=comparison.seed == first_seed,
        )
        section.title = f"{comparison.trace_label}, seed {comparison.seed}"
        sections.append(section)
    summary = comparison_set.summary
    aggregate = comparison_set.aggregate()
    record = provenance(
        seed=first_seed,
        command=command,
        extra={
            "traces": [os.fspath(t) for t in comparison_set.traces],
            "seeds": comparison_set.seeds,
            "schemes": comparison_set.schemes,
        },
    )
    write_csv_atomic(out / "summary.csv", summary)
    write_parquet_atomic(out / "summary.parquet", summary, provenance=record)
    write_csv_atomic(out / "aggregate.csv", aggregate)
    write_parquet_atomic(out / "aggregate.parquet", aggregate, provenance=record)
    write_json_atomic(out / PROVENANCE_FILE, record)
    runs = len(comparison_set.seeds)
    overview = Section(
        title="Means over the runs",
        description=(
            f"Each scheme's mean over {runs} run{'s' if runs != 1 else ''} (seeds "
            f"{comparison_set.seeds[0]} to {comparison_set.seeds[-1]}) on each trace"
            + (
                ", then over every run of every trace (trace all)"
                if len(comparison_set.traces) > 1
                else ""
            )
            + ", with the 95 % Student-t confidence interval in brackets (none with one "
            "run). The seed drives the random parts of a run (loss, jitter, HARQ, the "
            "schemes' own randomness); on a lossless trace-driven path the runs agree."
        ),
        commands=[("Regenerate this report:", command)],
        table=comparison_set.intervals(),
        columns={"trace": "trace", "runs": "runs", **TABLE_COLUMNS},
        files=[("summary.csv", out / "summary.csv"), ("aggregate.csv", out / "aggregate.csv")],
    )
    return write_report(
        out,
        title=f"cellcc comparison on {', '.join(t.name for t in comparison_set.traces)}",
        sections=[overview, *sections],
        provenance_record=record,
    )
