"""Confidence intervals for results repeated over seeds, traces or trace phases.

One method throughout: the Student-t interval of a mean,
``mean ± t(1 - (1 - c)/2, n - 1) · s / √n`` with ``c`` the confidence and ``s`` the
sample standard deviation (``ddof = 1``). With one sample the bounds are NaN: one run
says nothing about the spread. The quantile comes from SciPy, imported only when an
interval is computed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Interval", "mean_ci", "t_quantile"]


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` samples and its two-sided ``confidence`` interval."""

    mean: float
    low: float
    high: float
    n: int
    std: float
    confidence: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (NaN with fewer than two samples)."""
        return (self.high - self.low) / 2.0

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval (never, when the bounds are NaN)."""
        return self.low <= value <= self.high


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> Interval:
    """The Student-t interval of the mean of ``values`` (NaN values are dropped)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: expected a number between 0 and 1, got {confidence!r}")
    samples = [float(v) for v in values if not math.isnan(float(v))]
    n = len(samples)
    if n == 0:
        nan = math.nan
        return Interval(nan, nan, nan, 0, nan, confidence)
    if n == 1:
        return Interval(samples[0], math.nan, math.nan, 1, math.nan, confidence)
    if min(samples) == max(samples):
        # Exactly, without the rounding of a sum: identical runs have no spread.
        return Interval(samples[0], samples[0], samples[0], n, 0.0, confidence)
    mean = math.fsum(samples) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in samples) / (n - 1))
    half = t_quantile(n - 1, confidence) * std / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, std, confidence)


def t_quantile(df: int, confidence: float = 0.95) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of
    freedom, ``t(1 - (1 - c)/2, df)`` (4.303 for ``df`` = 2 at 95 %)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2.0, df))
