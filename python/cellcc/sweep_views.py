"""Report views over time series and distributions, and derived per-run metrics.

Used by :mod:`cellcc.sweep_report` (docs/experiments.md, "Reports"):

* ``timeseries``: the ``y`` columns of every label's first run over time (one panel per
  column; the throughput panel also shows the link's capacity) — C2TCP IFIP Fig. 2,
  JSAC Fig. 7, the LTE study's Fig. 5;
* ``share``: the throughput of every flow of a label's first run over time, one panel
  per label — the fairness and friendliness figures (C2TCP IFIP Fig. 5–7, JSAC Fig.
  18–19, César Fig. 12);
* ``ecdf``: the empirical CDF of each ``y`` per label, over the time bins when ``y`` is
  a time-series column (LTE study Fig. 3), else over runs;
* ``box``: box plots of each ``y`` per label over runs (César Fig. 10);
* ``loss``: the ``sweep`` view with each metric divided by the label's value at the
  smallest ``x`` in the same context (C2TCP IFIP Fig. 8: throughput normalised to the
  loss-free run);
* ``ack_gap``: the histogram of flow 0's ACK inter-arrival gaps at its sender, one panel
  per group (the report's ``group`` columns), pooled over the group's runs (César Fig.
  3/6: gaps cluster at the cellular scheduling unit and its multiples). Each run keeps
  its histogram (:func:`cellcc.runner.ack_gap_counts`), not its ACKs.

Derived metrics (added to the flow-0 row of every run before grouping):

* ``jain_index``: Jain's index of the flows' throughputs, ``(Σx)² / (n Σx²)``;
* ``share``: flow 0's part of the flows' total throughput;
* ``late_to_early``: mean throughput of the flows that start later than the earliest
  one, divided by the earliest flow's (PropRate Fig. 12's second-to-first ratio);
* ``flow<i>_mbps``: flow ``i``'s throughput.

With ``window = [start_s, end_s]`` in ``[report]`` (either may be omitted: the latest
flow start, the end of the run), these use the mean of each flow's time-series
throughput inside the window, so a flow that ran alone before the others joined is
measured only while they compete; without it they use the summary throughput.

Metrics written ``<column>@p<N>`` (e.g. ``efficiency@p25``) are the N-th percentile of
the column over the runs of a group instead of its mean (César Table I).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cellcc import plots
from cellcc.runner import ACK_GAP_BIN_MS, ACK_GAP_MAX_MS

__all__ = [
    "DERIVED",
    "SERIES_VIEWS",
    "ack_gap_figure",
    "box_figure",
    "derive",
    "ecdf_figure",
    "normalise_to_first_x",
    "percentile_metric",
    "share_figure",
    "timeseries_figure",
]

SERIES_VIEWS = ("timeseries", "share")
DERIVED = ("jain_index", "share", "late_to_early")
_RUN = "run_index"


def percentile_metric(name: str) -> tuple[str, float] | None:
    """``("efficiency", 25.0)`` for ``"efficiency@p25"``, else None."""
    column, sep, suffix = name.rpartition("@p")
    if not sep or not column:
        return None
    try:
        return column, float(suffix)
    except ValueError:
        return None


def _window_throughput(
    series: pd.DataFrame, window: Sequence[float | None], starts: Mapping[int, float]
) -> dict[int, float]:
    """Mean time-series throughput of every flow of one run inside ``window``."""
    flows = series[series["flow"] >= 0]
    if flows.empty:
        return {}
    lo = window[0] if len(window) > 0 and window[0] is not None else max(starts.values())
    hi = window[1] if len(window) > 1 and window[1] is not None else np.inf
    # Every flow has rows only from its start; a flow absent from a bin delivered nothing.
    bins = flows[(flows["t_s"] >= lo) & (flows["t_s"] < hi)]
    times = np.unique(bins["t_s"])
    out = {}
    for flow in starts:
        part = bins[bins["flow"] == flow]
        total = pd.to_numeric(part["throughput_mbps"], errors="coerce").fillna(0.0).sum()
        out[int(flow)] = float(total / len(times)) if len(times) else float("nan")
    return out


def derive(
    results: pd.DataFrame,
    series: pd.DataFrame | None = None,
    window: Sequence[float | None] | None = None,
) -> pd.DataFrame:
    """``results`` with the derived metrics in the flow-0 row of every run."""
    if results.empty or "flow" not in results.columns or _RUN not in results.columns:
        return results
    out = results.copy()
    flows = out[out["flow"] >= 0]
    by_run = {}
    if series is not None and window is not None and not series.empty:
        by_run = {int(k): v for k, v in series.groupby(_RUN, sort=False)}
    columns: dict[str, dict[int, float]] = {}
    for run, part in flows.groupby(_RUN, sort=False):
        starts = dict(zip(part["flow"].astype(int), part["start_s"].astype(float), strict=True))
        if by_run:
            rates = _window_throughput(by_run.get(int(run), pd.DataFrame()), window, starts)
        else:
            rates = dict(zip(part["flow"].astype(int), part["throughput_mbps"], strict=True))
        values = np.array([rates.get(f, np.nan) for f in sorted(starts)], dtype=float)
        index = part.index[part["flow"] == 0]
        if len(index) == 0:
            continue
        row = int(index[0])
        total, squares = np.nansum(values), np.nansum(values**2)
        derived = {
            "jain_index": total**2 / (len(values) * squares) if squares > 0 else np.nan,
            "share": rates.get(0, np.nan) / total if total > 0 else np.nan,
        }
        earliest = min(starts.values())
        early = [rates[f] for f, s in starts.items() if s == earliest]
        late = [rates[f] for f, s in starts.items() if s > earliest]
        if late and early and np.mean(early) > 0:
            derived["late_to_early"] = float(np.mean(late) / np.mean(early))
        for flow, rate in rates.items():
            derived[f"flow{flow}_mbps"] = rate
        for name, value in derived.items():
            columns.setdefault(name, {})[row] = value
    for name, values in columns.items():
        out[name] = pd.Series(values, dtype=float)
    return out


def normalise_to_first_x(
    rows: pd.DataFrame, *, x: str, metrics: Sequence[str], context: Sequence[str]
) -> pd.DataFrame:
    """Divide each metric by the same label's value at the smallest ``x`` in the same
    context (trace, direction, seed and the other grid columns)."""
    out = rows.copy()
    xs = pd.to_numeric(out[x], errors="coerce")
    keys = ["label", *[c for c in context if c in out.columns and c != x]]
    metrics = [m for m in dict.fromkeys(metrics) if m in out.columns]
    first = out[xs == xs.min()].groupby(keys, dropna=False)[metrics].mean().reset_index()
    merged = out.merge(first, on=keys, how="left", suffixes=("", "__ref"))
    for metric in metrics:
        merged[metric] = pd.to_numeric(merged[metric], errors="coerce") / merged[f"{metric}__ref"]
    return merged.drop(columns=[f"{m}__ref" for m in metrics])


# -- figures --------------------------------------------------------------------------

_SERIES_LABELS = {
    "throughput_mbps": "Throughput (Mbit/s)",
    "egress_mbps": "Egress (Mbit/s)",
    "qdelay_ms": "Queueing delay (ms)",
    "owd_ms": "One-way delay (ms)",
    "cwnd": "cwnd (packets)",
    "inflight": "In flight (packets)",
    "srtt_ms": "Smoothed RTT (ms)",
    "queue_packets": "Queue (packets)",
}


def _first_runs(series: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Each label's first run (lowest run index), per value of the ``by`` columns."""
    keys = ["label", *[c for c in by if c in series.columns]]
    firsts = series.groupby(keys, sort=False)[_RUN].min()
    return series[series[_RUN].isin(set(firsts))]


def timeseries_figure(
    series: pd.DataFrame, *, y: Sequence[str], title: str, facets: Sequence[str] = ()
) -> Any:
    """One row of panels per ``y`` column over time, one column per value of the
    ``facets`` columns; a line per label (its first run there, flow 0); throughput
    panels also draw the capacity of the column's first run."""
    facets = [c for c in facets if c in series.columns]
    shown = _first_runs(series, facets)
    labels = list(dict.fromkeys(shown["label"]))
    styles = plots.scheme_styles(labels)
    parts = [((), shown)]
    if facets:
        parts = [
            (k if isinstance(k, tuple) else (k,), p) for k, p in shown.groupby(facets, sort=False)
        ]
    with plots._style():
        figure = plots._figure(max(9.0, 5.0 * len(parts)), 2.6 * len(y) + 0.6)
        axes = figure.subplots(len(y), len(parts), squeeze=False, sharex=True)
        for col, (keys, part_all) in enumerate(parts):
            for ax, column in zip(axes[:, col], y, strict=True):
                if column in ("throughput_mbps", "egress_mbps") and "capacity_mbps" in part_all:
                    first = part_all[_RUN].min()
                    link = part_all[(part_all["flow"] == -1) & (part_all[_RUN] == first)]
                    ax.fill_between(
                        link["t_s"], link["capacity_mbps"], step="post", color="#dddddd",
                        label="capacity",
                    )  # fmt: skip
                for label in labels:
                    part = part_all[(part_all["label"] == label) & (part_all["flow"] == 0)]
                    if column not in part or part[column].isna().all():
                        continue
                    color, _ = styles[label]
                    ax.plot(part["t_s"], part[column], color=color, linewidth=1.1, label=label)
                ax.set_ylabel(_SERIES_LABELS.get(column, column))
                ax.legend(loc="upper right", fontsize=7)
            if keys:
                axes[0, col].set_title(", ".join(str(k) for k in keys), fontsize=9)
            axes[-1, col].set_xlabel("Time (s)")
        figure.suptitle(title)
    return figure


def share_figure(series: pd.DataFrame, *, title: str) -> Any:
    """One panel per label: the throughput of every flow of its first run over time."""
    shown = _first_runs(series)
    labels = list(dict.fromkeys(shown["label"]))
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    with plots._style():
        figure = plots._figure(6.0 * min(len(labels), 3), 3.2 * ((len(labels) + 2) // 3))
        rows, cols = (len(labels) + 2) // 3, min(len(labels), 3)
        axes = figure.subplots(rows, cols, squeeze=False).ravel()
        for ax, label in zip(axes, labels, strict=False):
            part = shown[shown["label"] == label]
            for i, flow in enumerate(sorted(f for f in part["flow"].unique() if f >= 0)):
                rows_f = part[part["flow"] == flow]
                ax.plot(
                    rows_f["t_s"], rows_f["throughput_mbps"], color=colors[i % len(colors)],
                    linewidth=1.1, label=f"flow {flow}",
                )  # fmt: skip
            ax.set_title(label, fontsize=10)
            ax.set_xlabel("Time (s)")
            ax.set_ylabel("Throughput (Mbit/s)")
            ax.set_ylim(bottom=0)
            ax.legend(loc="upper right", fontsize=8)
        for ax in axes[len(labels) :]:
            ax.set_visible(False)
        figure.suptitle(title)
    return figure


def _values(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return values[np.isfinite(values)]


def ecdf_figure(
    rows: pd.DataFrame, series: pd.DataFrame | None, *, y: Sequence[str], title: str
) -> Any:
    """The ECDF of each ``y`` per label: over time bins (flow 0) when ``y`` is a
    time-series column, else over the runs."""
    labels = list(dict.fromkeys(rows["label"]))
    styles = plots.scheme_styles(labels)
    with plots._style():
        figure = plots._figure(5.2 * len(y), 4.2)
        axes = figure.subplots(1, len(y), squeeze=False)[0]
        for ax, column in zip(axes, y, strict=True):
            if series is not None and column in series.columns:
                source = series[series["flow"] == (-1 if column.startswith("queue") else 0)]
                what = "time bins"
            else:
                source, what = rows, "runs"
            for label in labels:
                values = np.sort(_values(source[source["label"] == label], column))
                if values.size == 0:
                    continue
                color, _ = styles[label]
                steps = np.arange(1, values.size + 1) / values.size
                ax.step(values, steps, where="post", color=color, label=label)
            ax.set_xlabel(_SERIES_LABELS.get(column, plots.DELAY_LABELS.get(column, column)))
            ax.set_ylabel(f"ECDF (over {what})")
            ax.set_ylim(0, 1.02)
            ax.legend(loc="lower right", fontsize=8)
        figure.suptitle(title)
    return figure


def box_figure(rows: pd.DataFrame, *, y: Sequence[str], group: str, title: str) -> Any:
    """Box plots (5th/25th/75th/95th percentiles, mean marked) of each ``y`` per
    ``group`` value over the runs."""
    keys = list(dict.fromkeys(rows[group].astype(str)))
    with plots._style():
        figure = plots._figure(max(5.2, 0.9 * len(keys) + 2) * len(y), 4.4)
        axes = figure.subplots(1, len(y), squeeze=False)[0]
        for ax, column in zip(axes, y, strict=True):
            data = [_values(rows[rows[group].astype(str) == k], column) for k in keys]
            ax.boxplot(data, whis=(5, 95), showmeans=True, showfliers=False)
            ax.set_xticks(range(1, len(keys) + 1), keys, rotation=30, ha="right", fontsize=8)
            ax.set_ylabel(plots.DELAY_LABELS.get(column, column))
        figure.suptitle(title)
    return figure


def ack_gap_figure(
    gaps: pd.DataFrame,
    *,
    group: Sequence[str],
    title: str,
    bin_ms: float = ACK_GAP_BIN_MS,
    max_ms: float = ACK_GAP_MAX_MS,
) -> Any:
    """One panel per value of the ``group`` columns: the share of flow 0's ACK gaps in
    each bin, pooled over the group's runs (``gaps``: the ``ack_gaps.parquet`` rows,
    ``flow``, ``gap_ms`` = the bin's lower edge, ``count``). The last bin (every gap of
    ``max_ms`` or more) is left out of the bars and reported in the panel's title; the
    x axis ends a quarter past the bin that covers 99.5 % of the gaps."""
    rows = gaps[gaps["flow"] == 0]
    keys = [c for c in group if c in rows.columns]
    parts = [(("all",), rows)]
    if keys:
        parts = [
            (k if isinstance(k, tuple) else (k,), p) for k, p in rows.groupby(keys, sort=False)
        ]
    cols = min(len(parts), 3)
    with plots._style():
        figure = plots._figure(4.6 * cols + 0.6, 3.2 * ((len(parts) + 2) // 3) + 0.6)
        axes = figure.subplots((len(parts) + 2) // 3, cols, squeeze=False).ravel()
        for ax, (name, part) in zip(axes, parts, strict=False):
            counts = part.groupby("gap_ms")["count"].sum().sort_index()
            total = float(counts.sum())
            if total <= 0:
                ax.set_visible(False)
                continue
            shown = counts[counts.index < max_ms]
            edges = shown.index.to_numpy(dtype=float)
            share = shown.to_numpy(dtype=float) / total
            ax.bar(edges, share, width=bin_ms, align="edge", color=plots.PALETTE[1])
            beyond = 1.0 - float(share.sum())
            label = ", ".join(str(k) for k in name)
            if beyond > 0:
                label += f" ({beyond:.1%} of gaps >= {max_ms:g} ms)"
            ax.set_title(label, fontsize=9)
            covered = np.cumsum(share) >= 0.995 - beyond
            upper = float(edges[np.argmax(covered)]) + bin_ms if covered.any() else max_ms
            ax.set_xlim(0, min(max_ms, max(1.25 * upper, 1.0)))
            ax.set_xlabel(f"ACK inter-arrival gap (ms, {bin_ms:g} ms bins)")
            ax.set_ylabel("Share of ACKs")
        for ax in axes[len(parts) :]:
            ax.set_visible(False)
        figure.suptitle(title)
    return figure
