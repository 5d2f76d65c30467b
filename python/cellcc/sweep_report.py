"""Reports of sweeps and experiments: our numbers next to the published ones.

A sweep's ``[report]`` table picks a view (docs/experiments.md):

* ``table``: one row per group (default: the scheme label), metric means over traces,
  directions, seeds and grid points, optionally normalised per context to a reference
  label first (C2TCP JSAC Table I); plus the throughput-delay scatter of the means
  (inverted log delay axis) and, with ``facets``, one scatter per trace/direction;
* ``sweep``: metrics against a parameter (``x``), one line per label, optionally with
  the ``y = x`` diagonal (PropRate Fig. 9) or a log x axis (buffer sizes);
* ``frontier``: throughput against delay, one line per label through its ``x`` values
  (PropRate Fig. 10), other labels as single points;
* ``timeseries``, ``share``, ``ecdf``, ``box``, ``loss`` and ``ack_gap``: see
  :mod:`cellcc.sweep_views`, which also derives Jain's index, bandwidth shares and
  windowed throughputs, and the ``<metric>@p<N>`` percentile columns.

``view`` may also be a list of views (``["table", "ack_gap"]``): the report then draws
the figures of each, in order, under the one table.

Every view also shows the grouped table with the ``published`` values beside ours,
the command that regenerates the report, and the provenance of the dataset. When the
experiment states claims (:mod:`cellcc.claims`), the report opens with their scorecard
(:mod:`cellcc.scorecard`, also written as ``scorecard.json``). The index of reproduced
experiments is :mod:`cellcc.reproduction`'s (re-exported here).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from cellcc import plots, scorecard, sweep_views
from cellcc.report import Plot, Section, write_report
from cellcc.reproduction import INDEX_ENTRY_FILE, index_entries, write_index
from cellcc.results import confined, file_name, write_csv_atomic
from cellcc.runner import ACK_GAPS_FILE, report_views
from cellcc.sweep import Sweep

__all__ = [
    "INDEX_ENTRY_FILE",
    "VIEWS",
    "grouped_table",
    "index_entries",
    "report_options",
    "write_index",
    "write_sweep_report",
]

VIEWS = ("table", "sweep", "frontier", "timeseries", "share", "ecdf", "box", "loss", "ack_gap")
DEFAULT_METRICS = ("throughput_mbps", "qdelay_mean_ms", "qdelay_p95_ms", "owd_p95_ms")
#: The final congestion-control phase of each flow (``cc_info``, see runner.execute).
PHASE_COLUMN = "cc.phase"
#: Columns that identify one measurement context for normalisation.
CONTEXT_COLUMNS = ("trace", "direction", "seed")
_AXIS_LABELS = {"throughput_mbps": "Average throughput (Mbit/s)"}
REPORT_KEYS = (
    "view",
    "group",
    "metrics",
    "normalise_to",
    "x",
    "y",
    "delay",
    "diagonal",
    "log_x",
    "facets",
    "window",
    "series",
)


def _flows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the flow under test (flow 0) of every run."""
    if "flow" not in results.columns:
        return results
    return results[results["flow"] == 0].reset_index(drop=True)


def report_options(sweep: Sweep) -> dict[str, Any]:
    """The sweep's ``[report]`` table with defaults, checked (errors name the key)."""
    from cellcc._native import ScenarioError

    report = dict(sweep.report)
    for key in report:
        if key not in REPORT_KEYS:
            raise ScenarioError(
                f"{sweep.source}: report.{key}: unknown key; expected one of: "
                f"{', '.join(REPORT_KEYS)}"
            )
    raw = report.get("view", "table")
    if isinstance(raw, list) and not raw:
        raise ScenarioError(f"{sweep.source}: report.view: expected a view or a non-empty list")
    views = report_views(report)
    for i, view in enumerate(views):
        if view not in VIEWS:
            where = f"report.view[{i}]" if isinstance(raw, list) else "report.view"
            raise ScenarioError(f"{sweep.source}: {where}: expected one of: {', '.join(VIEWS)}")
        if view in ("sweep", "frontier", "loss") and report.get("x") not in sweep.param_columns:
            raise ScenarioError(
                f"{sweep.source}: report.x: the {view} view needs x = one of the parameter "
                f"columns: {', '.join(sweep.param_columns)}"
            )
    if len(set(views)) != len(views):
        raise ScenarioError(f"{sweep.source}: report.view: a view is listed twice")
    _check_types(report, sweep)
    _check_metrics(report, sweep)
    _check_texts(sweep)
    report.setdefault("group", ["label"])
    report.setdefault("metrics", list(DEFAULT_METRICS))
    report.setdefault("delay", "qdelay_mean_ms")
    report["view"] = views[0]
    report["views"] = views
    return report


#: ``[report]`` keys by the type of their value (docs/experiments.md).
_TEXT_KEYS = ("normalise_to", "delay", "x")
_LIST_KEYS = ("group", "metrics", "y", "facets")
_BOOL_KEYS = ("diagonal", "log_x", "series")


def _check_types(report: Mapping[str, Any], sweep: Sweep) -> None:
    """Every ``[report]`` value of the type its key takes (errors name key and file)."""
    from cellcc._native import ScenarioError

    def fail(key: str, message: str) -> ScenarioError:
        return ScenarioError(f"{sweep.source}: report.{key}: {message}")

    for key in _TEXT_KEYS:
        if key in report and not isinstance(report[key], str):
            raise fail(key, f"expected a string, got {report[key]!r}")
    for key in _LIST_KEYS:
        value = report.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise fail(key, f"expected a list of column names (strings), got {value!r}")
    for key in _BOOL_KEYS:
        if key in report and not isinstance(report[key], bool):
            raise fail(key, f"expected true or false, got {report[key]!r}")
    window = report.get("window")
    if window is not None:
        ok = isinstance(window, list) and len(window) <= 2
        for bound in window if ok else ():
            if not isinstance(bound, int | float) or isinstance(bound, bool) or bound < 0:
                ok = False
        if not ok:
            raise fail(
                "window",
                f"expected [], [start_s] or [start_s, end_s] (seconds >= 0), got {window!r}",
            )
    if report.get("normalise_to") is not None:
        labels = list(dict.fromkeys(str(r.params.get("label")) for r in sweep.runs))
        if report["normalise_to"] not in labels:
            raise fail(
                "normalise_to",
                f"unknown label {report['normalise_to']!r}; expected one of: {', '.join(labels)}",
            )


def _core_columns() -> tuple[frozenset[str], frozenset[str]]:
    """The summary and time-series columns the core writes for every run: read off a
    run of a few simulated milliseconds, so the list never drifts from the core."""
    from cellcc import _native

    return _columns_of(_native._core)


@cache
def _columns_of(_core: Any) -> tuple[frozenset[str], frozenset[str]]:
    from cellcc import api

    result = api.simulate(
        {
            "duration_s": 0.05,
            "downlink": {"rate_mbps": 10.0, "delay_ms": 1.0},
            "uplink": {"rate_mbps": 10.0, "delay_ms": 1.0},
            "flows": [{"scheme": "cubic"}],
        }
    )
    return frozenset(result.summary.columns), frozenset(result.timeseries.columns)


def _known_metric(name: str, columns: frozenset[str]) -> bool:
    if name in columns or name in sweep_views.DERIVED or name.startswith("cc."):
        return True
    if re.fullmatch(r"flow\d+_mbps", name):
        return True
    percentile = sweep_views.percentile_metric(name)
    return percentile is not None and _known_metric(percentile[0], columns)


def _check_metrics(report: Mapping[str, Any], sweep: Sweep) -> None:
    """``metrics``, ``y`` and ``delay`` name columns a run has: the core's summary (or,
    for ``y``, time-series) columns, ``cc.*``, the derived metrics or a parameter."""
    from cellcc._native import ScenarioError

    summary, series = _core_columns()
    columns = summary | set(sweep.param_columns)
    wanted = [("metrics", m) for m in report.get("metrics", [])]
    wanted += [("y", m) for m in report.get("y", [])]
    if "delay" in report:
        wanted.append(("delay", report["delay"]))
    for key, metric in wanted:
        plots.check_text(metric, f"{sweep.source}: report.{key}")  # axis labels
        known = columns | series if key == "y" else columns
        if not _known_metric(metric, frozenset(known)):
            raise ScenarioError(
                f"{sweep.source}: report.{key}: unknown metric {metric!r}; expected a "
                "summary column (docs/metrics.md), cc.<name>, one of "
                f"{', '.join(sweep_views.DERIVED)}, flow<i>_mbps or <column>@p<N>"
            )


def _check_texts(sweep: Sweep) -> None:
    """The texts the figures draw (the sweep's name, labels and parameter values) are
    valid matplotlib text, checked before any run rather than when a figure is saved."""
    plots.check_text(sweep.name, f"{sweep.source}: name")
    seen: set[tuple[str, str]] = set()
    for run in sweep.runs:
        for column, value in run.params.items():
            if isinstance(value, str) and (column, value) not in seen:
                seen.add((column, value))
                where = "schemes[].label" if column == "label" else column
                plots.check_text(value, f"{sweep.source}: {where}")


def grouped_table(
    results: pd.DataFrame,
    *,
    group: Sequence[str],
    metrics: Sequence[str],
    normalise_to: str | None = None,
    context: Sequence[str] = (),
) -> pd.DataFrame:
    """Mean of ``metrics`` per ``group`` over the flow-0 rows of ``results``.

    With ``normalise_to`` (a label), each value is first divided by the reference
    label's value in the same context (the ``context`` columns, e.g. trace, direction
    and seed), as C2TCP JSAC Table I does; the table then holds mean ratios.
    """
    rows = _flows(results)
    wanted = list(metrics)
    percentiles = {m: p for m in wanted if (p := sweep_views.percentile_metric(m)) is not None}
    rows = rows.copy()
    for metric, (column, _) in percentiles.items():
        if column in rows.columns:
            rows[metric] = pd.to_numeric(rows[column], errors="coerce")
    metrics = [m for m in wanted if m in rows.columns]
    if rows.empty or not metrics:
        return pd.DataFrame(columns=[*group, "runs", *metrics])
    values = rows
    for metric in metrics:
        values[metric] = pd.to_numeric(values[metric], errors="coerce")
    if normalise_to is not None:
        keys = [c for c in context if c in values.columns and c not in group]
        reference = values[values["label"] == normalise_to][[*keys, *metrics]]
        if keys:
            reference = reference.groupby(keys, dropna=False)[metrics].mean().reset_index()
            values = values.merge(reference, on=keys, how="left", suffixes=("", "__ref"))
            for metric in metrics:
                values[metric] = values[metric] / values[f"{metric}__ref"]
        else:
            means = reference[metrics].mean()
            for metric in metrics:
                values[metric] = values[metric] / means[metric]
    grouped = values.groupby(list(group), sort=False, dropna=False)
    table = grouped[metrics].mean().reset_index()
    for metric in metrics:
        if metric in percentiles:
            q = percentiles[metric][1] / 100.0
            table[metric] = grouped[metric].quantile(q).to_numpy()
    counts = values.groupby(list(group), sort=False, dropna=False).size().to_numpy()
    table.insert(len(group), "runs", counts)
    if PHASE_COLUMN in values.columns and PHASE_COLUMN not in group:
        # Which final phases the group's runs ended in: César's "bbr" says it found no
        # scheduling pattern and ran as its BBR fallback.
        phases = grouped[PHASE_COLUMN].agg(
            lambda s: ", ".join(sorted({str(p) for p in s.dropna() if str(p)}))
        )
        table.insert(len(group) + 1, PHASE_COLUMN, phases.to_numpy())
    return table


def with_published(
    table: pd.DataFrame, published: Sequence[Mapping[str, Any]], group: Sequence[str]
) -> pd.DataFrame:
    """``table`` with a ``<metric> (paper)`` column after each metric the paper gives;
    published groups we did not run are appended with empty values for ours."""
    if not published:
        return table
    paper = pd.DataFrame.from_records([dict(p) for p in published])
    keys = [g for g in group if g in paper.columns]
    if not keys:
        return table
    metrics = [c for c in paper.columns if c not in keys and c != "note"]
    paper = paper.rename(columns={m: f"{m} (paper)" for m in metrics})
    for key in keys:  # join on text so that 5 and 5.0 or "a" and "a" match
        paper[key] = paper[key].map(_key_text)
    ours = table.copy()
    ours["__order"] = range(len(ours))
    for key in keys:
        ours[f"__{key}"] = ours[key].map(_key_text)
    merged = ours.merge(
        paper.rename(columns={k: f"__{k}" for k in keys}),
        on=[f"__{k}" for k in keys],
        how="outer",
        sort=False,
    )
    for key in keys:
        merged[key] = merged[key].where(merged[key].notna(), merged[f"__{key}"])
        merged = merged.drop(columns=f"__{key}")
    # An outer merge sorts the keys: put our rows back in order, published-only rows last.
    merged = merged.sort_values("__order", na_position="last", kind="stable")
    merged = merged.drop(columns="__order").reset_index(drop=True)
    merged["runs"] = merged["runs"].astype("Int64")
    fixed = ("runs", PHASE_COLUMN)
    order = [c for c in table.columns if c not in fixed]
    columns = [*[c for c in order if c in group], *[c for c in fixed if c in table.columns]]
    for column in order:
        if column in group:
            continue
        columns.append(column)
        if f"{column} (paper)" in merged.columns:
            columns.append(f"{column} (paper)")
    columns += [c for c in merged.columns if c not in columns]
    return merged[columns]


def _key_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- figures --------------------------------------------------------------------------


def _series_styles(labels: Sequence[str]) -> dict[str, tuple[str, str]]:
    return plots.scheme_styles(labels)


def _log_axis(ax: Any, values: np.ndarray, *, invert: bool) -> None:
    ok = values[np.isfinite(values) & (values > 0)]
    if ok.size == 0:
        return
    lo, hi = float(ok.min()) / 1.3, float(ok.max()) * 1.3
    ax.set_xscale("log", base=2)
    ax.set_xlim((hi, lo) if invert else (lo, hi))
    ax.xaxis.set_major_locator(FixedLocator(plots._nice_log_ticks(lo, hi)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(plots._fmt_number))


def sweep_figure(
    rows: pd.DataFrame,
    *,
    x: str,
    metrics: Sequence[str],
    title: str,
    diagonal: bool = False,
    log_x: bool = False,
    published: Sequence[Mapping[str, Any]] = (),
) -> Any:
    """One panel per metric: its mean against ``x``, one line per label."""
    labels = list(dict.fromkeys(rows["label"]))
    styles = _series_styles(labels)
    with plots._style():
        figure = plots._figure(5.2 * len(metrics), 4.2)
        axes = figure.subplots(1, len(metrics), squeeze=False)[0]
        for ax, metric in zip(axes, metrics, strict=True):
            for label in labels:
                part = rows[rows["label"] == label]
                xs = pd.to_numeric(part[x], errors="coerce")
                if xs.isna().all():
                    continue
                means = part.assign(__x=xs).groupby("__x")[metric].mean().sort_index()
                color, marker = styles[label]
                ax.plot(means.index, means.to_numpy(), marker=marker, color=color, label=label)
            points = [p for p in published if metric in p and x in p]
            if points:
                ax.scatter(
                    [p[x] for p in points],
                    [p[metric] for p in points],
                    marker="x",
                    color="#555555",
                    zorder=4,
                    label="published",
                )
            if diagonal:
                lo, hi = ax.get_xlim()
                ax.plot([lo, hi], [lo, hi], linestyle=":", color="#888888", label="target")
            if log_x:
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(FuncFormatter(plots._fmt_number))
            ax.set_xlabel(x)
            ax.set_ylabel(_AXIS_LABELS.get(metric, plots.DELAY_LABELS.get(metric, metric)))
            ax.legend(loc="best")
        figure.suptitle(title)
    return figure


def frontier_figure(rows: pd.DataFrame, *, x: str, delay: str, title: str) -> Any:
    """Throughput against ``delay`` (inverted log axis): a line per label through its
    ``x`` values, a single point for labels without them."""
    labels = list(dict.fromkeys(rows["label"]))
    styles = _series_styles(labels)
    all_delays = []
    with plots._style():
        figure = plots._figure(6.6, 4.8)
        ax = figure.add_subplot()
        for label in labels:
            part = rows[rows["label"] == label]
            xs = pd.to_numeric(part[x], errors="coerce")
            color, marker = styles[label]
            if xs.notna().any():
                means = (
                    part.assign(__x=xs)
                    .groupby("__x")[[delay, "throughput_mbps"]]
                    .mean()
                    .sort_index()
                )
                ax.plot(
                    means[delay], means["throughput_mbps"], marker=marker, markersize=4,
                    color=color, label=label,
                )  # fmt: skip
                all_delays += list(means[delay])
            else:
                d, t = part[delay].mean(), part["throughput_mbps"].mean()
                ax.scatter([d], [t], s=64, marker=marker, color=color, zorder=3, label=label)
                all_delays.append(d)
        _log_axis(ax, np.asarray(all_delays, dtype=float), invert=True)
        ax.set_xlabel(plots.DELAY_LABELS.get(delay, delay) + "  (better →)")
        ax.set_ylabel("Average throughput (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.legend(loc="best")
    return figure


# -- the report -----------------------------------------------------------------------


def write_sweep_report(
    sweep: Sweep,
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    command: str,
    provenance_record: Mapping[str, Any],
    title: str | None = None,
) -> tuple[Path, pd.DataFrame]:
    """Write ``<out_dir>/index.html`` and ``table.csv``; return the page and the table."""
    options = report_options(sweep)
    out = Path(out_dir)
    experiment = sweep.experiment
    group = list(options["group"])
    metrics = list(options["metrics"])
    context = [*CONTEXT_COLUMNS, *(k for k in sweep.spec.get("grid", {}) if k not in group)]
    series_path = out / "timeseries.parquet"
    series = pd.read_parquet(series_path) if series_path.is_file() else None
    gaps_path = out / ACK_GAPS_FILE
    gaps = pd.read_parquet(gaps_path) if gaps_path.is_file() else None
    views = list(options["views"])
    window = options.get("window")
    if window is None and "share" in views:
        window = []
    results = sweep_views.derive(results, series, window)
    if "loss" in views:
        results = sweep_views.normalise_to_first_x(
            results, x=options["x"], metrics=[*metrics, *options.get("y", [])], context=context
        )
    table = grouped_table(
        results,
        group=group,
        metrics=metrics,
        normalise_to=options.get("normalise_to"),
        context=context,
    )
    published = list(experiment.get("published", []))
    shown = with_published(table, published, group)
    write_csv_atomic(out / "table.csv", shown)

    rows = _flows(results)
    heading = experiment.get("figure")
    paper = experiment.get("paper")
    what = "normalised to " + options["normalise_to"] if options.get("normalise_to") else "means"
    section = Section(
        title=f"{paper}, {heading}" if paper and heading else sweep.name,
        description=sweep.description,
        commands=[("Regenerate this report:", command)],
        table=shown,
        files=[("results.parquet", out / "results.parquet"), ("table.csv", out / "table.csv")],
        columns=None,  # the group, every metric asked for, and the paper's numbers
    )
    plots_out: list[Plot] = []
    subtitle = f"{len(sweep.runs)} runs" + (" (quick)" if sweep.quick else "")
    figures = _Figures(options, rows, series, gaps, out, sweep, subtitle, command, published)
    for view in views:
        plots_out += _view_plots(view, figures)
    section.plots = plots_out
    card = scorecard.for_sweep(
        sweep, results, out, options=options, context=context, series=series, window=window
    )
    sections = [section] if card is None else [scorecard.section(card, quick=sweep.quick), section]
    intro = (
        f"Table: {what} per {', '.join(group)}; columns marked (paper) are the published "
        "numbers. " + str(experiment.get("notes", ""))
    ).strip()
    page = write_report(
        out,
        title=title or f"cellcc: {sweep.name}",
        sections=sections,
        provenance_record=provenance_record,
        intro=intro,
    )
    return page, shown


@dataclass(frozen=True)
class _Figures:
    """What every view's figures are drawn from."""

    options: Mapping[str, Any]
    rows: pd.DataFrame
    series: pd.DataFrame | None
    gaps: pd.DataFrame | None
    out: Path
    sweep: Sweep
    subtitle: str
    command: str
    published: Sequence[Mapping[str, Any]]


def _view_plots(view: str, figures: _Figures) -> list[Plot]:
    """The figures of one view."""
    options, rows, out, sweep = figures.options, figures.rows, figures.out, figures.sweep
    subtitle, command, published = figures.subtitle, figures.command, figures.published
    plots_out: list[Plot] = []
    delay = options["delay"]
    if view == "table" and delay in rows.columns and not rows.empty:
        frame = _label_means(rows, delay)
        figure = plots.throughput_delay_figure(
            frame, delay=delay, title=f"{sweep.name}: means", subtitle=subtitle
        )
        plots_out.append(
            Plot(
                plots.save(figure, out / "throughput-delay.png"),
                "Mean throughput vs delay; bars span the 25th-75th percentile of the runs",
                command,
            )
        )
        for keys, part in _facets(rows, options.get("facets", [])):
            name = "-".join(str(k) for k in keys)
            frame = _label_means(part, delay)
            figure = plots.throughput_delay_figure(
                frame, delay=delay, title=plots.literal(name), subtitle=subtitle
            )
            # Facet values are user text (labels, trace names): one confined file name.
            target = confined(out, file_name(f"throughput-delay-{name}") + ".png")
            path = plots.save(figure, target)
            plots_out.append(Plot(path, f"Throughput vs delay, {name}", command))
    elif view in ("sweep", "loss") and not rows.empty:
        ys = list(options.get("y", ["throughput_mbps", delay]))
        figure = sweep_figure(
            rows,
            x=options["x"],
            metrics=[y for y in ys if y in rows.columns],
            title=f"{sweep.name} ({subtitle})",
            diagonal=bool(options.get("diagonal", False)),
            log_x=bool(options.get("log_x", False)),
            published=published,
        )
        path = plots.save(figure, out / "sweep.png")
        plots_out.append(Plot(path, f"Metrics against {options['x']}", command))
    elif view == "frontier" and not rows.empty:
        figure = frontier_figure(
            rows, x=options["x"], delay=delay, title=f"{sweep.name} ({subtitle})"
        )
        path = plots.save(figure, out / "frontier.png")
        plots_out.append(Plot(path, f"Throughput vs delay as {options['x']} varies", command))
    else:
        plots_out += _other_views(view, figures)
    return plots_out


def _other_views(view: str, figures: _Figures) -> list[Plot]:
    """The figures of the views of :mod:`cellcc.sweep_views`."""
    options, rows, series, gaps = figures.options, figures.rows, figures.series, figures.gaps
    out, sweep, subtitle, command = figures.out, figures.sweep, figures.subtitle, figures.command
    title = f"{sweep.name} ({subtitle})"
    figure, name, caption = None, view, ""
    if view == "timeseries" and series is not None and not series.empty:
        ys = [y for y in options.get("y", ["throughput_mbps", "qdelay_ms"]) if y in series]
        figure = sweep_views.timeseries_figure(
            series, y=ys, title=title, facets=options.get("facets", [])
        )
        caption = "Time series of each label's first run (flow 0)"
    elif view == "share" and series is not None and not series.empty:
        figure = sweep_views.share_figure(series, title=title)
        caption = "Throughput of every flow over time (each label's first run)"
    elif view == "ecdf" and not rows.empty:
        ys = list(options.get("y", ["throughput_mbps"]))
        figure = sweep_views.ecdf_figure(rows, series, y=ys, title=title)
        caption = "Empirical CDF per label"
    elif view == "box" and not rows.empty:
        ys = [y for y in options.get("y", ["throughput_mbps", "rtt_mean_ms"]) if y in rows]
        figure = sweep_views.box_figure(rows, y=ys, group="label", title=title)
        caption = "Distribution over runs per label (whiskers 5th-95th percentile)"
    elif view == "ack_gap" and gaps is not None and not gaps.empty:
        group = list(options["group"])
        figure = sweep_views.ack_gap_figure(gaps, group=group, title=title)
        caption = (
            f"ACK inter-arrival gaps at the sender of flow 0, per {', '.join(group)}, "
            "pooled over its runs (share of ACKs per bin)"
        )
    if figure is None:
        return []
    return [Plot(plots.save(figure, out / f"{name}.png"), caption, command)]


def _label_means(rows: pd.DataFrame, delay: str) -> pd.DataFrame:
    """Mean delay and throughput per label, as the ``scheme`` column the scatter wants,
    with the 25th and 75th percentiles over the label's runs (``<column>_lo``/``_hi``)
    that the scatter draws as error bars."""
    columns = [delay, "throughput_mbps"]
    grouped = rows.groupby("label", sort=False)
    frame = grouped[columns].mean()
    for column in columns:
        frame[f"{column}_lo"] = grouped[column].quantile(0.25)
        frame[f"{column}_hi"] = grouped[column].quantile(0.75)
    return frame.reset_index().rename(columns={"label": "scheme"})


def _facets(rows: pd.DataFrame, facets: Sequence[str]) -> list[tuple[tuple[Any, ...], Any]]:
    keys = [f for f in facets if f in rows.columns]
    if not keys:
        return []
    return [
        (k if isinstance(k, tuple) else (k,), part) for k, part in rows.groupby(keys, sort=False)
    ]
