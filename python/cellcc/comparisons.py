"""Comparisons over several traces and repeated runs: :func:`compare_set`.

A :class:`ComparisonSet` is one :class:`~cellcc.api.Comparison` per trace and seed, all
with the same schemes and path settings. Run ``i`` of ``runs`` uses seed ``seed + i``, so
the set is as reproducible as a single comparison; the seed drives every random element
of a run (random and bursty loss, jitter, HARQ, scheme-internal randomness), so on a
lossless trace-driven path the runs are identical and their intervals have zero width.

:meth:`ComparisonSet.aggregate` gives, per trace and scheme and over all traces, the mean
of each metric over the runs with its Student-t interval (:mod:`cellcc.stats`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cellcc._native import UsageError
from cellcc.api import Comparison, run_scenarios, scheme_names, validate

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AGGREGATE_METRICS", "MAX_RUNS", "ComparisonSet", "compare_set"]

#: Metrics :meth:`ComparisonSet.aggregate` summarises by default.
AGGREGATE_METRICS = (
    "throughput_mbps",
    "utilisation",
    "owd_p95_ms",
    "qdelay_mean_ms",
    "qdelay_p95_ms",
    "rtt_mean_ms",
    "pantheon_loss_rate",
)
#: The most runs (traces × seeds × schemes) one call may ask for: a typo such as
#: ``--runs 10000`` is refused up front instead of running for hours.
MAX_RUNS = 10_000
#: The ``trace`` label of :meth:`ComparisonSet.aggregate`'s rows over every trace.
ALL_TRACES = "all"


@dataclass
class ComparisonSet:
    """One :class:`~cellcc.api.Comparison` per trace and seed (trace-major)."""

    comparisons: list[Comparison]

    @property
    def schemes(self) -> list[str]:
        """The compared schemes, in the order given."""
        return list(self.comparisons[0].schemes) if self.comparisons else []

    @property
    def traces(self) -> list[Path]:
        """The downlink traces, in the order given."""
        return list(dict.fromkeys(c.trace for c in self.comparisons))

    @property
    def seeds(self) -> list[int]:
        """The seeds of the runs (the same for every trace)."""
        return list(dict.fromkeys(c.seed for c in self.comparisons))

    def comparison(self, trace: str | os.PathLike[str], seed: int) -> Comparison:
        """The comparison on ``trace`` (a path or a trace's file name) with ``seed``."""
        for c in self.comparisons:
            if c.seed == seed and (Path(trace) == c.trace or os.fspath(trace) == c.trace_label):
                return c
        raise KeyError(f"no comparison on {os.fspath(trace)} with seed {seed}")

    @property
    def summary(self) -> pd.DataFrame:
        """Every run's flow rows: ``trace``, ``seed``, ``queue``, ``scheme``, then the
        metrics of docs/metrics.md."""
        import pandas as pd

        frames = []
        for c in self.comparisons:
            rows = c.summary
            rows.insert(1, "seed", c.seed)
            frames.append(rows)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def timeseries(self) -> pd.DataFrame:
        """Every run's time series with leading ``trace``, ``seed`` and ``scheme``."""
        import pandas as pd

        frames = []
        for c in self.comparisons:
            rows = c.timeseries
            rows.insert(0, "trace", c.trace_label)
            rows.insert(1, "seed", c.seed)
            frames.append(rows)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def command(self, out_dir: str | os.PathLike[str] | None = None) -> str:
        """The ``cellcc compare`` command line that reproduces this set."""
        import shlex

        argv = shlex.split(self.comparisons[0].command(out_dir))
        at = argv.index("--trace")
        del argv[at : at + 2]
        if len(self.traces) > 1 and "--uplink-trace" in argv:
            # Several traces each take their .up sibling (or the constant uplink).
            up = argv.index("--uplink-trace")
            del argv[up : up + 2]
        for trace in reversed(self.traces):
            argv[at:at] = ["--trace", os.fspath(trace)]
        seed = argv.index("--seed")
        argv[seed + 1] = str(self.seeds[0])
        argv[seed + 2 : seed + 2] = ["--runs", str(len(self.seeds))]
        return shlex.join(argv)

    def intervals(
        self,
        metrics: Sequence[str] | None = None,
        *,
        confidence: float = 0.95,
        plus_minus: bool = False,
    ) -> pd.DataFrame:
        """:meth:`aggregate` for reading: each metric as ``mean [low, high]`` text, or
        ``mean ± half-width`` with ``plus_minus`` (the mean alone with a single run)."""
        from cellcc._columns import format_cell

        frame = self.aggregate(metrics, confidence=confidence)
        chosen = [c for c in frame.columns if f"{c}_ci_low" in frame.columns]
        for metric in chosen:
            low, high = frame.pop(f"{metric}_ci_low"), frame.pop(f"{metric}_ci_high")
            cells = []
            for mean, lo, hi in zip(frame[metric], low, high, strict=True):
                if lo != lo:  # NaN: a single run
                    cells.append(format_cell(mean))
                elif plus_minus:
                    cells.append(f"{format_cell(mean)} ± {format_cell((hi - lo) / 2)}")
                else:
                    cells.append(f"{format_cell(mean)} [{format_cell(lo)}, {format_cell(hi)}]")
            frame[metric] = cells
        return frame

    def aggregate(
        self, metrics: Sequence[str] | None = None, *, confidence: float = 0.95
    ) -> pd.DataFrame:
        """Per trace and scheme, then per scheme over every trace (``trace`` =
        ``"all"``): the number of runs and, for each metric, the mean with the bounds
        ``<metric>_ci_low`` / ``<metric>_ci_high`` of its Student-t ``confidence``
        interval over the runs (NaN with a single run)."""
        import pandas as pd

        from cellcc.stats import mean_ci

        summary = self.summary
        chosen = list(metrics) if metrics is not None else list(AGGREGATE_METRICS)
        missing = [m for m in chosen if m not in summary.columns]
        if missing:
            raise UsageError(f"metrics: no column {', '.join(missing)} in the summary")
        groups: list[tuple[str, str, pd.DataFrame]] = []
        for trace in dict.fromkeys(summary["trace"]):
            for scheme in self.schemes:
                rows = summary[(summary["trace"] == trace) & (summary["scheme"] == scheme)]
                groups.append((str(trace), scheme, rows))
        if len(self.traces) > 1:
            for scheme in self.schemes:
                groups.append((ALL_TRACES, scheme, summary[summary["scheme"] == scheme]))
        records = []
        for trace, scheme, rows in groups:
            record: dict[str, Any] = {"trace": trace, "scheme": scheme, "runs": len(rows)}
            for metric in chosen:
                interval = mean_ci(rows[metric], confidence)
                record[metric] = interval.mean
                record[f"{metric}_ci_low"] = interval.low
                record[f"{metric}_ci_high"] = interval.high
            records.append(record)
        return pd.DataFrame.from_records(records)


def compare_set(
    traces: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    schemes: str | Sequence[str],
    runs: int = 1,
    seed: int = 1,
    uplink_trace: str | os.PathLike[str] | None = None,
    delay_ms: float = 10.0,
    queue: str | Mapping[str, Any] = "droptail:packets=100",
    duration_s: float = 30.0,
    bin_ms: float = 500.0,
    base_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[tuple[str, int, str], bool], None] | None = None,
    jobs: int = 1,
) -> ComparisonSet:
    """:func:`~cellcc.api.compare` on every trace of ``traces``, ``runs`` times each with
    seeds ``seed``, ``seed + 1``, ...

    The path settings are those of :func:`~cellcc.api.compare`; ``uplink_trace`` is
    allowed with one trace only (with several, each takes its ``.up`` sibling or the
    constant uplink). Every scenario is validated before the first runs, and the total
    number of runs is bounded by :data:`MAX_RUNS`. ``progress((trace, seed, scheme),
    finished)`` reports each run; ``jobs`` > 1 runs them in worker processes.
    """
    paths = [traces] if isinstance(traces, str | os.PathLike) else list(traces)
    if not paths:
        raise UsageError("traces: expected at least one trace")
    if len(paths) > 1 and uplink_trace is not None:
        raise UsageError(
            "uplink_trace: only with a single trace; with several, each trace takes its "
            ".up sibling (or the constant uplink)"
        )
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UsageError(f"runs: expected an integer >= 1, got {runs!r}")
    names = scheme_names(schemes)
    total = len(paths) * runs * len(names)
    if total > MAX_RUNS:
        raise UsageError(
            f"runs: {len(paths)} traces × {runs} runs × {len(names)} schemes = {total} "
            f"simulations, more than the {MAX_RUNS} one comparison may ask for"
        )
    if len({Path(p).name for p in paths}) != len(paths):
        raise UsageError("traces: two traces have the same file name; rename one")
    comparisons = [
        Comparison.on_path(
            path,
            schemes=names,
            uplink_trace=uplink_trace,
            delay_ms=delay_ms,
            queue=queue,
            duration_s=duration_s,
            seed=int(seed) + i,
            bin_ms=bin_ms,
        )
        for path in paths
        for i in range(runs)
    ]
    scenarios = {
        (c.trace_label, c.seed, name): c.scenario(name) for c in comparisons for name in names
    }
    for scenario in scenarios.values():
        validate(scenario, base_dir=base_dir)
    results = run_scenarios(scenarios, base_dir, progress, jobs)
    for c in comparisons:
        for name in names:
            c.results[name] = results[(c.trace_label, c.seed, name)]
    return ComparisonSet(comparisons)
