"""Plots of summaries and time series (matplotlib, Agg canvas, no pyplot state).

Conventions follow Pantheon and the C2TCP papers (see docs/metrics.md):

* throughput-delay scatter: x = delay, **inverted** and on a log2 scale (better is up and
  to the right), y = average throughput; one point per scheme. Two variants: the
  95th-percentile one-way delay (Pantheon) and the average queueing delay (C2TCP);
* time series per scheme: throughput over the shaded link capacity, queueing delay, cwnd.

Every function takes DataFrames with the columns of docs/metrics.md and returns a
:class:`matplotlib.figure.Figure`; :func:`save` writes it atomically. Colours come from
the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies) and
every scheme also gets its own marker, so plots survive greyscale printing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from cellcc.results import save_figure_atomic

__all__ = [
    "DELAY_LABELS",
    "PALETTE",
    "ack_pattern_figure",
    "save",
    "scheme_styles",
    "throughput_delay_figure",
    "timeseries_figure",
]

#: Okabe & Ito, "Color Universal Design" (2008): eight colours safe for colour-blind readers.
PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow (last: low contrast on white)
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
CAPACITY_COLOR = "#BBBBBB"

#: Axis labels of the summary delay columns (docs/metrics.md).
DELAY_LABELS = {
    "owd_p95_ms": "95th-percentile one-way delay (ms)",
    "owd_mean_ms": "Average one-way delay (ms)",
    "qdelay_mean_ms": "Average queueing delay (ms)",
    "qdelay_p95_ms": "95th-percentile queueing delay (ms)",
    "rtt_mean_ms": "Average RTT (ms)",
}

_STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.4,
}


@contextmanager
def _style() -> Any:
    with mpl.rc_context(_STYLE):
        yield


def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained", facecolor="white")
    FigureCanvasAgg(figure)
    return figure


def scheme_styles(schemes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """A stable ``scheme -> (colour, marker)`` map, in the order given."""
    return {
        scheme: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)])
        for i, scheme in enumerate(dict.fromkeys(schemes))
    }


def _fmt_number(value: float, _pos: Any = None) -> str:
    return f"{value:g}"


def _nice_log_ticks(
    low: float, high: float, *, min_ticks: int = 3, max_ticks: int = 7
) -> list[float]:
    """Round numbers (m × 10^k) spread over ``[low, high]``: the coarsest set of mantissas
    ``m`` that gives at least ``min_ticks`` ticks, thinned to at most ``max_ticks``."""
    lo_exp, hi_exp = math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1
    mantissa_sets = (
        (1.0, 2.0, 5.0),
        (1.0, 1.5, 2.0, 3.0, 5.0, 7.0),
        tuple(m / 2 for m in range(2, 20)),
        tuple(m / 10 for m in range(10, 100)),
    )
    inside: list[float] = []
    for mantissas in mantissa_sets:
        candidates = sorted(
            {round(m * 10.0**e, 12) for e in range(lo_exp, hi_exp + 1) for m in mantissas}
        )
        inside = [c for c in candidates if low <= c <= high]
        if len(inside) >= min_ticks:
            break
    if len(inside) <= max_ticks:
        return inside
    step = math.ceil(len(inside) / max_ticks)
    return inside[::step]


def _bound(summary: pd.DataFrame, column: str, end: str) -> np.ndarray | None:
    """``<column>_<end>`` as floats, or ``None`` when absent or not all finite."""
    name = f"{column}_{end}"
    if name not in summary.columns:
        return None
    values = pd.to_numeric(summary[name], errors="coerce").to_numpy(dtype=float)
    return values if np.isfinite(values).all() else None


def _spread(
    ax: Any,
    summary: pd.DataFrame,
    scheme: str,
    point: tuple[float, float],
    columns: tuple[str, str],
    color: str,
) -> None:
    """Error bars from ``<column>_lo``/``_hi`` of ``scheme``'s row, when present."""
    bounds = [f"{c}_{end}" for c in columns for end in ("lo", "hi")]
    if not all(b in summary.columns for b in bounds):
        return
    row = summary.loc[summary["scheme"] == scheme].iloc[0]
    x_lo, x_hi, y_lo, y_hi = (float(row[b]) for b in bounds)
    if not all(math.isfinite(v) for v in (x_lo, x_hi, y_lo, y_hi)):
        return
    x, y = point
    ax.errorbar(
        [x], [y],
        xerr=[[max(x - x_lo, 0.0)], [max(x_hi - x, 0.0)]],
        yerr=[[max(y - y_lo, 0.0)], [max(y_hi - y, 0.0)]],
        fmt="none", ecolor=color, alpha=0.55, elinewidth=1.2, capsize=3, zorder=2,
    )  # fmt: skip


def throughput_delay_figure(
    summary: pd.DataFrame,
    *,
    delay: str = "owd_p95_ms",
    throughput: str = "throughput_mbps",
    title: str,
    subtitle: str | None = None,
    styles: Mapping[str, tuple[str, str]] | None = None,
) -> Figure:
    """Pantheon-style scatter: ``throughput`` against ``delay`` (inverted log2 axis).

    ``summary`` holds one row per scheme (flow rows, with a ``scheme`` column). Rows with
    no delay or throughput sample are listed under the plot instead of being drawn. When
    it also has ``<column>_lo`` and ``<column>_hi`` for the delay and the throughput (the
    spread of the runs behind a mean, e.g. their 25th and 75th percentiles), each point
    gets error bars spanning them.
    """
    for column in ("scheme", delay, throughput):
        if column not in summary.columns:
            raise KeyError(f"summary has no column {column!r} (columns: {list(summary.columns)})")
    styles = dict(styles or scheme_styles(summary["scheme"]))
    x = pd.to_numeric(summary[delay], errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(summary[throughput], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    with _style():
        figure = _figure(6.4, 4.6)
        ax = figure.add_subplot()
        for scheme, xi, yi, good in zip(summary["scheme"], x, y, ok, strict=True):
            if not good:
                continue
            color, marker = styles.get(scheme, (PALETTE[-2], "o"))
            _spread(ax, summary, scheme, (xi, yi), (delay, throughput), color)
            ax.scatter([xi], [yi], s=64, color=color, marker=marker, zorder=3, label=scheme)
            ax.annotate(
                scheme,
                (xi, yi),
                xytext=(7, 5),
                textcoords="offset points",
                color=color,
                fontsize=10,
                fontweight="bold",
            )
        if ok.any():
            lo, hi = float(x[ok].min()), float(x[ok].max())
            top = float(y[ok].max())
            # Keep the error bars (when drawn) inside the axes too.
            x_lo, x_hi = _bound(summary, delay, "lo"), _bound(summary, delay, "hi")
            if x_lo is not None and x_hi is not None:
                lo, hi = min(lo, float(x_lo[ok].min())), max(hi, float(x_hi[ok].max()))
            y_hi = _bound(summary, throughput, "hi")
            if y_hi is not None:
                top = max(top, float(y_hi[ok].max()))
            if lo > 0:
                # log2 as Pantheon; pad by a factor so points and labels stay inside.
                ax.set_xscale("log", base=2)
                lo, hi = lo / 1.3, hi * 1.3
                ax.set_xlim(hi, lo)  # inverted: lower delay is better, to the right
                ax.xaxis.set_major_locator(FixedLocator(_nice_log_ticks(lo, hi)))
                ax.xaxis.set_minor_locator(NullLocator())
            else:
                # A zero delay cannot sit on a log axis: symlog, linear below 1 ms.
                ax.set_xscale("symlog", linthresh=1.0, base=2)
                ax.set_xlim(max(hi * 1.3, 2.0), min(lo, 0.0) - 0.6)
            ax.xaxis.set_major_formatter(FuncFormatter(_fmt_number))
            ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
        else:
            ax.text(0.5, 0.5, "no delivered packets", ha="center", transform=ax.transAxes)
        ax.set_xlabel(DELAY_LABELS.get(delay, delay) + "  (better →)")
        ax.set_ylabel("Average throughput (Mbit/s)")
        ax.set_title(title if subtitle is None else f"{title}\n{subtitle}")
        missing = [str(s) for s, good in zip(summary["scheme"], ok, strict=True) if not good]
        if missing:
            ax.text(
                0.01, 0.01, "no samples: " + ", ".join(missing),
                transform=ax.transAxes, fontsize=8, color="#555555",
            )  # fmt: skip
    return figure


def _column(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    if name not in frame.columns:
        return None
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def _through_last_bin(t: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Repeat the last value at the end of the last bin so a post-step shows every bin."""
    if len(t) < 2:
        return t, values
    width = float(np.median(np.diff(t)))
    return np.append(t, t[-1] + width), np.append(values, values[-1])


def timeseries_figure(
    timeseries: pd.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    styles: Mapping[str, tuple[str, str]] | None = None,
    flow_labels: Mapping[int, str] | None = None,
) -> Figure:
    """Three panels over time: throughput with the shaded capacity, queueing delay, cwnd.

    ``timeseries`` has the columns of docs/metrics.md (flow rows with ``flow >= 0``; link
    rows with ``flow == -1`` carry ``capacity_mbps``, shaded when present).
    ``flow_labels`` maps flow ids to legend labels (default ``flow N``).
    """
    if "flow" not in timeseries.columns or "t_s" not in timeseries.columns:
        raise KeyError("timeseries needs the columns 'flow' and 't_s'")
    flows = timeseries[timeseries["flow"] >= 0]
    link = timeseries[timeseries["flow"] < 0]
    if "capacity_mbps" in link.columns and link["capacity_mbps"].notna().any():
        cap_t, cap = _column(link, "t_s"), _column(link, "capacity_mbps")
    else:
        cap_t = cap = None
    labels = dict(flow_labels or {})
    ids = sorted(int(f) for f in flows["flow"].unique())
    palette = list((styles or {}).values())

    def flow_style(index: int, flow: int) -> tuple[str, str]:
        label = labels.get(flow, f"flow {flow}")
        if styles and label in styles:
            return styles[label][0], label
        color = palette[index % len(palette)][0] if palette else PALETTE[index % len(PALETTE)]
        return color, label

    panels = [
        ("throughput_mbps", "Throughput (Mbit/s)"),
        ("qdelay_ms", "Queueing delay (ms)"),
        ("cwnd", "cwnd (packets)"),
    ]
    with _style():
        figure = _figure(7.2, 7.0)
        axes = figure.subplots(3, 1, sharex=True)
        for ax, (column, label) in zip(axes, panels, strict=True):
            if column == "throughput_mbps" and cap is not None and cap_t is not None:
                t, y = _through_last_bin(cap_t, cap)
                ax.fill_between(
                    t, 0, y, step="post", color=CAPACITY_COLOR, alpha=0.6,
                    linewidth=0, label="link capacity",
                )  # fmt: skip
            drawn = False
            for index, flow in enumerate(ids):
                rows = flows[flows["flow"] == flow]
                values = _column(rows, column)
                if values is None:
                    continue
                color, name = flow_style(index, flow)
                t, y = _through_last_bin(_column(rows, "t_s"), values)
                ax.step(t, y, where="post", color=color, label=name)
                drawn = True
            if not drawn:
                ax.text(0.5, 0.5, f"no '{column}' column", ha="center", transform=ax.transAxes)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
        axes[0].legend(loc="upper right", frameon=False, ncols=2)
        axes[-1].set_xlabel("Time (s)")
        axes[-1].set_xlim(left=0)
        figure.suptitle(title if subtitle is None else f"{title}\n{subtitle}")
    return figure


def ack_pattern_figure(acks: pd.DataFrame, *, title: str, flow: int = 0) -> Figure:
    """César Fig. 3/6 view of one flow's ACK clock: RTT samples over time (left) and the
    histogram of ACK inter-arrival gaps at the sender (right).

    Cellular scheduling shows as RTT samples on discrete lines and gap peaks at the
    scheduling unit and its multiples, with many gaps near 0 (ACKs of one grant).
    ``acks`` has the columns ``flow``, ``t_s`` and ``rtt_ms`` of :attr:`Result.acks`.
    """
    for column in ("flow", "t_s", "rtt_ms"):
        if column not in acks.columns:
            raise KeyError(f"acks needs the column {column!r}")
    rows = acks[acks["flow"] == flow]
    if rows.empty:
        raise ValueError(f"no ACKs of flow {flow} in the log")
    t = rows["t_s"].to_numpy(dtype=float)
    rtt = rows["rtt_ms"].to_numpy(dtype=float)
    gaps_ms = np.diff(t) * 1e3
    with _style():
        figure = _figure(9.6, 3.6)
        left, right = figure.subplots(1, 2, width_ratios=(3, 2))
        keep = ~np.isnan(rtt)
        left.plot(t[keep], rtt[keep], ".", markersize=2, color=PALETTE[0])
        left.set_xlabel("Time (s)")
        left.set_ylabel("RTT sample (ms)")
        upper = max(1.0, float(np.quantile(gaps_ms, 0.99))) if gaps_ms.size else 1.0
        bins = np.arange(0.0, upper + 0.25, 0.25)
        right.hist(np.clip(gaps_ms, 0.0, upper), bins=bins, color=PALETTE[1])
        right.set_xlabel("ACK inter-arrival gap (ms, 0.25 ms bins)")
        right.set_ylabel("ACKs")
        figure.suptitle(title)
    return figure


def check_text(text: str, where: str) -> None:
    """Refuse (:class:`cellcc.UsageError` naming ``where``) a text matplotlib would fail
    to draw: one with ``$...$`` that is not valid mathtext. Checked before anything
    runs, not when the figure is saved."""
    from matplotlib import cbook
    from matplotlib.mathtext import MathTextParser

    from cellcc._native import UsageError

    if "$" not in text or not cbook.is_math_text(text):
        return
    try:
        MathTextParser("path").parse(text)
    except ValueError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = lines[-1][:160] if lines else "cannot be parsed"
        raise UsageError(
            f"{where}: {text!r} is not valid matplotlib mathtext ({reason}); write a "
            "literal dollar sign as \\$"
        ) from None


def literal(text: str) -> str:
    """``text`` drawn as written (a file name, a trace name): dollar signs escaped, so
    matplotlib never reads it as mathtext."""
    return text.replace("$", r"\$")


def save(figure: Figure, path: str | os.PathLike[str], *, dpi: int = 120) -> Path:
    """Write ``figure`` to ``path`` atomically (PNG or SVG/PDF by suffix)."""
    return save_figure_atomic(figure, path, dpi=dpi)


def summary_plots(
    summary: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    title_suffix: str,
    styles: Mapping[str, tuple[str, str]] | None = None,
    variants: Sequence[tuple[str, str]] = (
        ("owd_p95_ms", "throughput-vs-owd-p95.png"),
        ("qdelay_mean_ms", "throughput-vs-qdelay-mean.png"),
    ),
) -> list[tuple[str, Path]]:
    """Write the scatter variants for ``summary``; return ``(delay column, path)`` pairs."""
    written = []
    for delay, filename in variants:
        if delay not in summary.columns:
            continue
        figure = throughput_delay_figure(
            summary,
            delay=delay,
            title=f"Throughput vs {DELAY_LABELS.get(delay, delay).split(' (')[0].lower()}",
            subtitle=title_suffix,
            styles=styles,
        )
        written.append((delay, save(figure, Path(out_dir) / filename)))
    return written
