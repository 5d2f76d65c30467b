"""Confidence intervals of the reproduction scorecard (:mod:`cellcc.scorecard`).

A claim's number is a mean (or a percentile) over the runs a report row averages:
traces, directions, seeds and trace phases of a grid. Its 95 % interval comes from

* **runs**, when the number averages two runs or more: Student's t-interval of the
  mean over the runs' values; for a percentile over runs (``efficiency@p25``), the
  distribution-free interval between two order statistics (binomial coverage);
* **phases** (batch means), when it is one run: the run's time series (its bins) is
  cut into :data:`PHASES` equal phases, the metric is computed in each, and the
  t-interval's half-width over the phases, ``t · s / √K``, is put around the run's own
  value. A percentile of one run (``qdelay_p95_ms``) is taken per phase over the bins'
  mean delays weighted by the packets of each bin (per-packet delays are not kept), so
  its interval shows how much the tail moves from phase to phase, not the sampling
  error of a per-packet percentile.

A ratio of two numbers (``order`` and ``ratio`` claims) gets the delta-method interval
of a ratio of means (on the log scale, so it stays positive), paired when both sides
have the same units (the same traces, directions and seeds, or the same phases of one
trace), else independent; a ratio involving a percentile over runs gets a percentile
bootstrap (fixed seed) instead.

Nothing here reads a clock or an unseeded random source: the same results give the
same intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cellcc.stats import t_quantile

__all__ = [
    "CONFIDENCE",
    "PHASES",
    "Interval",
    "Units",
    "mean_interval",
    "phase_table",
    "quantile_interval",
    "ratio_interval",
    "t_quantile",
]

#: Two-sided confidence of every interval.
CONFIDENCE = 0.95
#: Phases (batches) a single run's time series is cut into.
PHASES = 10
#: Bootstrap resamples of a ratio involving a percentile, and their seed.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
#: Percentiles a phase table carries for each delay (the summary's columns).
_DELAY_PERCENTILES = (50, 95, 99)
#: Summary metrics a phase table can estimate, from the time-series columns.
PHASE_METRICS = (
    "throughput_mbps",
    "utilisation",
    "rtt_mean_ms",
    "efficiency",
    *(f"{d}_{s}_ms" for d in ("qdelay", "owd") for s in ("mean", *(f"p{p}" for p in (50, 95, 99)))),
)


@dataclass(frozen=True)
class Interval:
    """A 95 % interval and how it was made."""

    low: float
    high: float
    method: str
    """``runs``, ``phases`` or ``bootstrap``; see the module's documentation."""
    n: int
    """Runs or phases it is computed from."""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class Units:
    """The values one side of a claim is estimated from: one per run (``runs``) or per
    phase of a single run (``phases``); ``keys`` pair them with the other side's."""

    samples: np.ndarray
    keys: tuple[Any, ...]
    method: str
    percentile: float | None = None
    """The statistic over the units: their mean (None) or this percentile."""

    @property
    def n(self) -> int:
        return len(self.samples)


def mean_interval(units: Units, point: float) -> Interval | None:
    """t-interval of a mean: over the runs, centred on their mean (the point); over the
    phases, the batch-means half-width around the run's own value."""
    n = units.n
    if n < 2 or not math.isfinite(point):
        return None
    half = t_quantile(n - 1) * float(np.std(units.samples, ddof=1)) / math.sqrt(n)
    return Interval(point - half, point + half, units.method, n)


def quantile_interval(units: Units, point: float) -> Interval | None:
    """The percentile's interval: over runs, between the order statistics whose binomial
    coverage is at least 95 % (None if there are too few runs); over phases, the
    batch-means half-width of the per-phase values around the run's value."""
    if units.method == "phases" or units.percentile is None:
        return mean_interval(units, point)
    values = np.sort(units.samples)
    n = len(values)
    p = units.percentile / 100.0
    if not 0.0 < p < 1.0:
        return None
    log_pmf = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        + k * math.log(p) + (n - k) * math.log1p(-p)
        for k in range(n + 1)
    ]  # fmt: skip
    cdf = np.cumsum(np.exp(log_pmf))  # cdf[k] = P(B <= k), B ~ Binomial(n, p)

    def coverage(lo: int, hi: int) -> float:
        # P(X_(lo) <= q <= X_(hi)) = P(lo <= B <= hi - 1), ranks counted from 1.
        return float(cdf[hi - 1] - (cdf[lo - 1] if lo >= 1 else 0.0))

    best: tuple[int, int] | None = None
    for width in range(1, n):
        for lo in range(1, n - width + 1):
            hi = lo + width
            if coverage(lo, hi) >= CONFIDENCE and (
                best is None or abs((lo + hi) / 2 - p * n) < abs(sum(best) / 2 - p * n)
            ):
                best = (lo, hi)
        if best is not None:
            break
    if best is None:
        return None
    return Interval(float(values[best[0] - 1]), float(values[best[1] - 1]), "runs", n)


def ratio_interval(a: Units, b: Units, ratio: float) -> Interval | None:
    """The interval of ``ratio`` = statistic(a) / statistic(b).

    Means: the delta method on the log scale, ``R · exp(± t · √(s_a²/(n ā²) + s_b²/(n b̄²)
    − 2 s_ab/(n ā b̄)))``, with the covariance term when the units pair up (same keys,
    same method), else without it and ``min(n_a, n_b) − 1`` degrees of freedom.
    Percentiles over runs: a percentile bootstrap of the ratio (paired resamples when the
    units pair up)."""
    if a.n < 2 or b.n < 2 or not math.isfinite(ratio):
        return None
    paired = a.method == b.method and a.keys == b.keys
    method = a.method if a.method == b.method else "runs+phases"
    if a.percentile is not None or b.percentile is not None:
        if a.method == "phases" or b.method == "phases":
            return None
        return _bootstrap_ratio(a, b, paired)
    ma, mb = float(np.mean(a.samples)), float(np.mean(b.samples))
    if ma == 0 or mb == 0:
        return None
    va, vb = float(np.var(a.samples, ddof=1)), float(np.var(b.samples, ddof=1))
    if paired:
        n = a.n
        cov = float(np.cov(a.samples, b.samples, ddof=1)[0, 1])
        rel2 = va / (n * ma**2) + vb / (n * mb**2) - 2 * cov / (n * ma * mb)
        df = n - 1
    else:
        rel2 = va / (a.n * ma**2) + vb / (b.n * mb**2)
        df = min(a.n, b.n) - 1
    # On the log scale: log R ± t·√rel2, so the interval of a ratio of positive numbers
    # stays positive (and is symmetric in R ↔ 1/R).
    half = t_quantile(df) * math.sqrt(max(rel2, 0.0))
    if ratio <= 0:
        return None
    return Interval(ratio * math.exp(-half), ratio * math.exp(half), method, min(a.n, b.n))


def _statistic(values: np.ndarray, percentile: float | None) -> float:
    if percentile is None:
        return float(np.mean(values))
    return float(np.quantile(values, percentile / 100.0))


def _bootstrap_ratio(a: Units, b: Units, paired: bool) -> Interval | None:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        ia = rng.integers(0, a.n, a.n)
        ib = ia if paired else rng.integers(0, b.n, b.n)
        denominator = _statistic(b.samples[ib], b.percentile)
        if denominator != 0:
            ratios.append(_statistic(a.samples[ia], a.percentile) / denominator)
    if len(ratios) < BOOTSTRAP_RESAMPLES // 2:
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Interval(float(low), float(high), "bootstrap", min(a.n, b.n))


# -- phases of one run ------------------------------------------------------------------


def _weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` % of the total (the
    nearest-rank rule the summary's percentiles follow)."""
    ok = np.isfinite(values) & np.isfinite(weights) & (weights > 0)
    if not ok.any():
        return float("nan")
    order = np.argsort(values[ok], kind="stable")
    sorted_values, cumulative = values[ok][order], np.cumsum(weights[ok][order])
    index = int(np.searchsorted(cumulative, q / 100.0 * cumulative[-1], side="left"))
    return float(sorted_values[min(index, len(sorted_values) - 1)])


def phase_table(
    series: pd.DataFrame,
    *,
    phases: int = PHASES,
    window: Sequence[float | None] | None = None,
    starts: Mapping[int, float] | None = None,
) -> pd.DataFrame:
    """The :data:`PHASE_METRICS` of every flow of one run in each of ``phases`` equal
    parts of the run (``series``: that run's time series, docs/metrics.md).

    The phases span the run (from 0 to the end of the last bin), or ``window`` as the
    report reads it (``[start_s, end_s]``, either may be None: the latest of the flows'
    ``starts``, the end of the run). Per phase: throughput = mean of the bins' goodput
    (a flow has bins from its start on); mean delays = the bins' mean delays weighted by
    the packets that arrived in them (``egress_mbps``); delay percentiles = the same
    weighted bins' percentile; ``rtt_mean_ms`` = the mean of the bins' smoothed RTT;
    utilisation = the flow's IP bits ÷ the link's offered bits. One row per flow and
    phase: ``flow``, ``phase``, ``start_s``, ``end_s`` and the metrics.
    """
    columns = ["flow", "phase", "start_s", "end_s", *PHASE_METRICS]
    if series is None or series.empty or "t_s" not in series.columns:
        return pd.DataFrame(columns=columns)
    times = np.unique(series["t_s"].to_numpy(dtype=float))
    width = float(np.min(np.diff(times))) if len(times) > 1 else 1.0
    lo, hi = 0.0, float(times.max()) + width
    if window is not None:
        if len(window) > 0 and window[0] is not None:
            lo = float(window[0])
        elif starts:
            lo = max(starts.values())
        if len(window) > 1 and window[1] is not None:
            hi = min(hi, float(window[1]))
    if hi <= lo:
        return pd.DataFrame(columns=columns)
    step = (hi - lo) / phases
    t = series["t_s"].to_numpy(dtype=float)
    inside = series[(t >= lo) & (t < hi)].copy()
    inside["phase"] = np.minimum(((inside["t_s"] - lo) / step).astype(int), phases - 1)
    link = inside[inside["flow"] == -1]
    offered = (
        link.groupby("phase")["capacity_mbps"].sum()
        if "capacity_mbps" in link.columns
        else pd.Series(dtype=float)
    )
    rows = []
    for (flow, phase), part in inside[inside["flow"] >= 0].groupby(["flow", "phase"]):
        weights = _numbers(part, "egress_mbps")
        row: dict[str, Any] = {
            "flow": int(flow),
            "phase": int(phase),
            "start_s": lo + phase * step,
            "end_s": lo + (phase + 1) * step,
            "throughput_mbps": _mean(_numbers(part, "throughput_mbps")),
        }
        for delay in ("qdelay", "owd"):
            values = _numbers(part, f"{delay}_ms")
            ok = np.isfinite(values) & (weights > 0)
            total = float(weights[ok].sum())
            row[f"{delay}_mean_ms"] = (
                float((values[ok] * weights[ok]).sum() / total) if total > 0 else np.nan
            )
            for p in _DELAY_PERCENTILES:
                row[f"{delay}_p{p}_ms"] = _weighted_percentile(values, weights, p)
        row["rtt_mean_ms"] = _mean(_numbers(part, "srtt_ms"))
        capacity = float(offered.get(phase, np.nan))
        row["utilisation"] = float(np.nansum(weights) / capacity) if capacity > 0 else np.nan
        rtt = row["rtt_mean_ms"]
        row["efficiency"] = row["throughput_mbps"] / rtt if rtt and rtt > 0 else np.nan
        rows.append(row)
    return pd.DataFrame.from_records(rows, columns=columns)


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
