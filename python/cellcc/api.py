"""The Python API: run scenarios, compare schemes, inspect traces.

A run is ``(scenario, seed) -> metrics``. Scenarios are TOML files or dicts with the same
structure (docs/scenarios.md); results come back as pandas DataFrames (column names in
docs/metrics.md) and can be saved with their provenance.

>>> import cellcc
>>> result = cellcc.simulate({
...     "duration_s": 10.0,
...     "downlink": {"rate_mbps": 12.0, "delay_ms": 10.0,
...                  "queue": {"kind": "droptail", "packets": 100}},
...     "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
...     "flows": [{"scheme": "cubic"}],
... })  # doctest: +SKIP
>>> result.summary[["flow", "scheme", "throughput_mbps", "owd_p95_ms"]]  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cellcc import _native, _toml
from cellcc._columns import LazyFrame, Table, records
from cellcc._columns import pandas as pd  # imported when first used: `cellcc run` does not
from cellcc._native import ScenarioError, UsageError
from cellcc.results import (
    PROVENANCE_FILE,
    provenance,
    write_csv_atomic,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)
from cellcc.specs import (
    AQM_SUFFIXES,
    apply_overrides,
    format_queue,
    parse_queue,
    parse_scheme,
    parse_value,
    queue_spec,
    split_scheme,
    unknown_scheme,
    with_aqm,
)

__all__ = [
    "AQM_SUFFIXES",
    "Comparison",
    "Result",
    "apply_overrides",
    "compare",
    "format_queue",
    "parse_queue",
    "parse_scheme",
    "parse_value",
    "queue_spec",
    "scenario_text",
    "scheme_info",
    "schemes",
    "simulate",
    "split_scheme",
    "trace_info",
    "unknown_scheme",
    "validate",
    "with_aqm",
]

ScenarioLike = str | os.PathLike[str] | Mapping[str, Any]
#: The key of a run in :func:`run_scenarios` (a scheme name, or a trace, seed and scheme).
K = TypeVar("K")

#: Default uplink when a compared trace has no `.up` sibling: constant 100 Mbit/s, so the
#: ACK path never limits the flow (as Pantheon's and C2TCP's wired uplinks).
COMPARE_UPLINK_MBPS = 100.0
#: Files written by `Result.save`.
RESULT_FILES = (
    "summary.json",
    "summary.csv",
    "summary.parquet",
    "timeseries.csv",
    "timeseries.parquet",
    PROVENANCE_FILE,
)


class Result:
    """Metrics of one run (see docs/metrics.md for every column).

    The tables (``summary``, ``timeseries``, ``short_flows``, ``cc_info``, ``acks``) are
    pandas DataFrames, built from the core's columns when first read; :meth:`save`
    writes the files from those columns without building them (nor importing pandas).
    """

    summary = LazyFrame(
        """One row per flow (``flow`` = 0, 1, ...) and an aggregate row (``flow`` = -1)."""
    )
    timeseries = LazyFrame(
        """One row per flow per bin, plus link rows (``flow`` = -1) with capacity and
        queue."""
    )
    short_flows = LazyFrame(
        """Background short TCP flows (``background``, ``start_s``, ``bytes``,
        ``completion_s`` or NaN), when the scenario has ``short_flows`` sources."""
    )
    cc_info = LazyFrame(
        """Per flow: the congestion control's phase and named estimates at the end."""
    )
    acks = LazyFrame(
        """Every ACK at its sender (``flow``, ``t_s``, ``rtt_ms`` or NaN) when
        ``metrics.ack_log = true``."""
    )

    def __init__(
        self,
        summary: pd.DataFrame | Table,
        timeseries: pd.DataFrame | Table,
        link: dict[str, Any],
        meta: dict[str, Any],
        packet_log: str | None,
        scenario_text: str,
        source: str = "<scenario>",
        short_flows: pd.DataFrame | Table | None = None,
        cc_info: pd.DataFrame | Table | None = None,
        acks: pd.DataFrame | Table | None = None,
    ) -> None:
        self.summary = summary
        self.timeseries = timeseries
        self.link = link
        """Capacity and utilisation of the downlink."""
        self.meta = meta
        """``name``, ``seed``, ``duration_s``, ``events``, ``wall_s``, ``version``."""
        self.packet_log = packet_log
        """The downlink log in mm-link format when ``metrics.packet_log = true``."""
        self.scenario_text = scenario_text
        """The scenario exactly as the simulator read it (TOML)."""
        self.source = source
        """Where the scenario came from (a file path, or ``<dict>``)."""
        self.short_flows = short_flows
        self.cc_info = cc_info
        self.acks = acks

    def __repr__(self) -> str:
        return f"Result(source={self.source!r}, seed={self.seed!r})"

    @property
    def seed(self) -> int | None:
        """The seed the run used (the scenario's, or the override)."""
        seed = self.meta.get("seed")
        return None if seed is None else int(seed)

    @property
    def flows(self) -> pd.DataFrame:
        """Summary rows of the individual flows (the aggregate row removed)."""
        return self.summary[self.summary["flow"] >= 0].reset_index(drop=True)

    def _table(self, name: str) -> pd.DataFrame | Table | None:
        """A table as held: the DataFrame once built, else the core's columns."""
        return LazyFrame.held(self, name)

    def provenance(self, *, command: str | None = None) -> dict[str, Any]:
        """What made this result: revision, versions, seed, scenario, command line."""
        return provenance(
            seed=self.seed,
            scenario_text=self.scenario_text,
            command=command,
            extra={"source": self.source, "meta": self.meta},
        )

    def save(self, out_dir: str | os.PathLike[str], *, command: str | None = None) -> Path:
        """Write summary (JSON, CSV, Parquet), time series (CSV, Parquet), the packet log
        if any (``downlink.log``), the ACK log if any (``acks.csv``/``.parquet``), the
        short flows if any (``short_flows.csv``) and ``provenance.json`` into ``out_dir``;
        return it.

        Every file is written atomically. ``command`` is recorded as the command line that
        produced the result (default: this process's command line).
        """
        out = Path(out_dir)
        record = self.provenance(command=command)
        summary = self._table("summary")
        write_json_atomic(
            out / "summary.json",
            {"summary": records(summary), "link": self.link, "meta": self.meta},
        )
        write_csv_atomic(out / "summary.csv", summary)
        write_parquet_atomic(out / "summary.parquet", summary, provenance=record)
        timeseries = self._table("timeseries")
        write_csv_atomic(out / "timeseries.csv", timeseries)
        write_parquet_atomic(out / "timeseries.parquet", timeseries, provenance=record)
        if self.packet_log is not None:
            write_text_atomic(out / "downlink.log", self.packet_log)
        short_flows = self._table("short_flows")
        if short_flows is not None:
            write_csv_atomic(out / "short_flows.csv", short_flows)
        acks = self._table("acks")
        if acks is not None:
            write_csv_atomic(out / "acks.csv", acks)
            write_parquet_atomic(out / "acks.parquet", acks, provenance=record)
        write_json_atomic(out / PROVENANCE_FILE, record)
        return out


# -- scenarios ------------------------------------------------------------------------


def _prepare(
    scenario: ScenarioLike, base_dir: str | os.PathLike[str] | None
) -> tuple[str, str, str]:
    """Scenario → (TOML text, directory for relative paths, name used in error messages)."""
    if base_dir is not None and not isinstance(base_dir, str | os.PathLike):
        raise UsageError(f"base_dir: expected a directory path, got {type(base_dir).__name__}")
    if isinstance(scenario, Mapping):
        try:
            text = _toml.dumps(scenario)
        except _toml.TomlTypeError as exc:
            raise ScenarioError(f"<dict>: {exc}") from None
        directory = Path(base_dir) if base_dir is not None else Path.cwd()
        name = scenario.get("name")
        return text, os.fspath(directory), f"<{name}>" if isinstance(name, str) else "<dict>"
    if isinstance(scenario, str | os.PathLike):
        path = Path(scenario)
        text = _toml.read_text(path, "scenario")
        directory = Path(base_dir) if base_dir is not None else path.resolve().parent
        return text, os.fspath(directory), os.fspath(path)
    raise UsageError(f"scenario: expected a path or a dict, got {type(scenario).__name__}")


def scenario_text(scenario: ScenarioLike) -> str:
    """The TOML text of a scenario (a dict is serialised, a file is read)."""
    return _prepare(scenario, None)[0]


def simulate(
    scenario: ScenarioLike,
    *,
    seed: int | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[float], object] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Result:
    """Run one scenario and return its metrics.

    ``scenario`` is a path to a TOML file (relative trace paths resolve against the file's
    directory) or a dict with the same structure (relative paths resolve against
    ``base_dir``, default the current directory). ``seed`` overrides the scenario's seed.
    Raises :class:`cellcc.ScenarioError` or :class:`cellcc.TraceError` naming the file,
    key and expected value when the input is invalid. ``progress``, if given, is called
    with the fraction of simulated time done (0..1) as the run goes. ``overrides`` sets
    scenario keys by path before the run: ``{"duration_s": 10,
    "downlink.queue.packets": 50, "flows[0].params.target_ms": 80}``.
    """
    text, directory, source = _prepare(scenario, base_dir)
    if overrides:
        import tomllib

        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
        text = _toml.dumps(apply_overrides(document, overrides, source=source))
    raw = _native.simulate(
        text, base_dir=directory, source_name=source, seed=seed, progress=progress
    )
    return _result(raw, text, source)


def _frame_or_none(columns: Mapping[str, Any] | None) -> Table | None:
    """The table of ``columns``, or None when there are none or no rows."""
    if not columns:
        return None
    table = Table.from_columns(columns)
    return None if table.empty else table


def _result(raw: Mapping[str, Any], text: str, source: str) -> Result:
    acks = raw.get("acks")
    return Result(
        summary=Table.from_records(raw.get("summary") or [], leading=True),
        timeseries=Table.from_columns(raw.get("timeseries") or {}, leading=True),
        link=dict(raw.get("link") or {}),
        meta=dict(raw.get("meta") or {}),
        packet_log=raw.get("packet_log"),
        scenario_text=text,
        source=source,
        acks=None if acks is None else Table.from_columns(acks),
        short_flows=_frame_or_none(raw.get("short_flows")),
        cc_info=Table.from_records(raw.get("cc_info") or []),
    )


def validate(scenario: ScenarioLike, *, base_dir: str | os.PathLike[str] | None = None) -> None:
    """Check a scenario, including its traces, without running it."""
    text, directory, source = _prepare(scenario, base_dir)
    _native.validate_scenario(text, base_dir=directory, source_name=source)


#: Duration fields the core reports in integer nanoseconds, and the unit to show them in.
_TRACE_DURATIONS = {"duration": "s", "first_ts": "ms", "max_gap": "ms", "longest_outage": "ms"}


def trace_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Statistics of a Mahimahi trace: duration, opportunities, mean and percentile
    capacity (Mbit/s, 1500-byte lines as the trace READMEs), longest outage.

    Durations are returned with their unit in the key (``duration_s``, ``max_gap_ms``,
    ``longest_outage_ms``, ``first_ts_ms``).
    """
    if not isinstance(path, str | os.PathLike):
        raise UsageError(f"path: expected the path of a trace file, got {type(path).__name__}")
    info = _native.trace_info(os.fspath(path))
    out: dict[str, Any] = {}
    for key, value in info.items():
        unit = _TRACE_DURATIONS.get(key)
        if unit is not None and isinstance(value, int) and not isinstance(value, bool):
            out[f"{key}_{unit}"] = value / (1e9 if unit == "s" else 1e6)
        else:
            out[key] = value
    return out


def schemes() -> list[str]:
    """Names of the congestion-control schemes the simulator implements."""
    return _native.schemes()


def scheme_info() -> list[dict[str, Any]]:
    """Every scheme with its description, source (paper, RFC or kernel file), page under
    ``docs/`` and parameters: ``[{"key", "kind", "default"}]`` where ``kind`` is
    ``value`` (``default`` is the TOML text of the value), ``unset``, ``required``,
    ``flow_seed`` (a seed derived from the run's) or ``fixed`` (set by a preset)."""
    return _native.scheme_info()


# -- comparisons ----------------------------------------------------------------------


@dataclass
class Comparison:
    """One scenario per scheme on the same path; see :func:`compare`."""

    trace: Path
    uplink_trace: Path | None
    uplink_mbps: float | None
    schemes: list[str]
    delay_ms: float
    queue: dict[str, Any]
    duration_s: float
    seed: int
    bin_ms: float
    results: dict[str, Result] = field(default_factory=dict)

    @classmethod
    def on_path(
        cls,
        trace: str | os.PathLike[str],
        *,
        schemes: list[str],
        uplink_trace: str | os.PathLike[str] | None,
        delay_ms: float,
        queue: str | Mapping[str, Any],
        duration_s: float,
        seed: int,
        bin_ms: float,
    ) -> Comparison:
        """A comparison with no results yet, on the path :func:`compare` describes."""
        from cellcc.traces import uplink_sibling

        trace_path = Path(trace)
        up = Path(uplink_trace) if uplink_trace is not None else uplink_sibling(trace_path)
        return cls(
            trace=trace_path,
            uplink_trace=up,
            uplink_mbps=None if up is not None else COMPARE_UPLINK_MBPS,
            schemes=list(schemes),
            delay_ms=float(delay_ms),
            queue=parse_queue(queue) if isinstance(queue, str) else dict(queue),
            duration_s=float(duration_s),
            seed=int(seed),
            bin_ms=float(bin_ms),
        )

    @property
    def trace_label(self) -> str:
        return self.trace.name

    @property
    def path_label(self) -> str:
        """E.g. ``lte-driving.down, 10 ms one-way, droptail 100 pkts``."""
        return f"{self.trace_label}, {self.delay_ms:g} ms one-way, {format_queue(self.queue)}"

    @property
    def timeseries(self) -> pd.DataFrame:
        """Every scheme's time series in one table, with a leading ``scheme`` column (the
        comparison's name for the run)."""
        frames = []
        for scheme, result in self.results.items():
            rows = result.timeseries.copy()
            rows.insert(0, "scheme", rows.pop("scheme") if "scheme" in rows else scheme)
            rows["scheme"] = scheme
            frames.append(rows)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def summary(self) -> pd.DataFrame:
        """Flow rows of every scheme in one table, with ``trace`` and ``queue`` columns."""
        frames = []
        for scheme, result in self.results.items():
            rows = result.flows.copy()
            # The comparison's name for the run (e.g. "cubic+codel"), not the bare scheme.
            rows["scheme"] = scheme
            rows.insert(0, "trace", self.trace_label)
            rows.insert(1, "queue", format_queue(self.queue))
            rows.insert(2, "scheme", rows.pop("scheme"))
            frames.append(rows)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def command(self, out_dir: str | os.PathLike[str] | None = None) -> str:
        """The ``cellcc compare`` command line that reproduces this comparison."""
        import shlex

        argv = ["cellcc", "compare", "--trace", os.fspath(self.trace)]
        if self.uplink_trace is not None:
            argv += ["--uplink-trace", os.fspath(self.uplink_trace)]
        argv += [
            "--schemes", ",".join(self.schemes),
            "--delay-ms", f"{self.delay_ms:g}",
            "--queue", queue_spec(self.queue),
            "--duration", f"{self.duration_s:g}",
            "--seed", str(self.seed),
            "--bin-ms", f"{self.bin_ms:g}",
        ]  # fmt: skip
        if out_dir is not None:
            argv += ["--out", os.fspath(out_dir)]
        return shlex.join(argv)

    def scenario(self, scheme: str) -> dict[str, Any]:
        """The scenario (as a dict) that runs ``scheme`` on this path."""
        uplink: dict[str, Any]
        if self.uplink_trace is not None:
            uplink = {"trace": os.fspath(self.uplink_trace)}
        else:
            uplink = {"rate_mbps": float(self.uplink_mbps or COMPARE_UPLINK_MBPS)}
        name, params = parse_scheme(scheme)
        base, aqm = split_scheme(name)
        queue = with_aqm(self.queue, aqm)
        uplink.update({"delay_ms": float(self.delay_ms), "queue": dict(queue)})
        return {
            "name": f"{scheme}-on-{self.trace.stem}",
            "duration_s": float(self.duration_s),
            "seed": int(self.seed),
            "downlink": {
                "trace": os.fspath(self.trace),
                "mode": "loop",
                "delay_ms": float(self.delay_ms),
                "queue": dict(queue),
            },
            "uplink": uplink,
            "flows": [{"scheme": base, **({"params": params} if params else {})}],
            "metrics": {"bin_ms": float(self.bin_ms)},
        }


def compare(
    trace: str | os.PathLike[str],
    *,
    schemes: str | Sequence[str],
    uplink_trace: str | os.PathLike[str] | None = None,
    delay_ms: float = 10.0,
    queue: str | Mapping[str, Any] = "droptail:packets=100",
    duration_s: float = 30.0,
    seed: int = 1,
    bin_ms: float = 500.0,
    base_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str, bool], None] | None = None,
    jobs: int = 1,
) -> Comparison:
    """Run one single-flow scenario per scheme on the same path.

    The path follows Pantheon and the C2TCP harnesses: ``trace`` is the downlink
    (data direction); the uplink is ``uplink_trace``, else the ``.up`` sibling of a
    ``.down`` trace if it exists, else a constant 100 Mbit/s link. ``delay_ms`` is the
    one-way propagation delay of each direction (``mm-delay``) and ``queue`` applies to
    both directions. Every scheme runs with the same seed. All scenarios are validated
    before the first one runs. ``progress(scheme, finished)`` is called before and after
    each run. ``schemes`` is a list of names or one comma-separated string
    (``"cubic,bbr"``); a name may carry parameters, ``"c2tcp:target_ms=80"``.
    ``jobs`` > 1 runs the schemes in that many worker processes (the results are the
    same; ``progress`` then reports each scheme when it finishes).
    """
    names = scheme_names(schemes)
    comparison = Comparison.on_path(
        trace,
        schemes=names,
        uplink_trace=uplink_trace,
        delay_ms=delay_ms,
        queue=queue,
        duration_s=duration_s,
        seed=seed,
        bin_ms=bin_ms,
    )
    scenarios = {name: comparison.scenario(name) for name in names}
    for scenario in scenarios.values():
        validate(scenario, base_dir=base_dir)
    comparison.results.update(run_scenarios(scenarios, base_dir, progress, jobs))
    return comparison


def scheme_names(schemes: str | Sequence[str]) -> list[str]:
    """``schemes`` (a list, or one comma-separated string) as checked names: known
    schemes (with parameters) or import paths, none empty, no duplicates."""
    known = _native.schemes()
    # A string is a comma-separated list, not a sequence of one-letter names.
    given = schemes.split(",") if isinstance(schemes, str) else list(schemes)
    names = [str(name).strip() for name in given]
    if not any(names):
        raise UsageError('schemes: expected at least one scheme, e.g. "cubic,bbr"')
    if not all(names):
        raise UsageError(
            f"schemes: empty scheme name in {schemes!r}; expected names separated by commas"
        )
    for name in names:
        problem = unknown_scheme(name, known)
        if problem is not None:
            raise UsageError(f"schemes: {problem}")
    if len(set(names)) != len(names):
        raise UsageError(f"schemes: duplicate scheme in {', '.join(names)}")
    return names


def run_scenarios(
    scenarios: Mapping[K, Mapping[str, Any]],
    base_dir: str | os.PathLike[str] | None,
    progress: Callable[[K, bool], None] | None,
    jobs: int,
) -> dict[K, Result]:
    """Run validated ``scenarios``, in this process or (``jobs`` > 1) in that many
    spawned worker processes, with the same results; the returned dict keeps their
    order. ``progress(key, finished)`` is called before and after each run in this
    process, and when each run finishes in workers."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs: expected an integer >= 1, got {jobs!r}")
    if jobs == 1 or len(scenarios) < 2:
        results: dict[K, Result] = {}
        for key, scenario in scenarios.items():
            if progress is not None:
                progress(key, False)
            results[key] = simulate(scenario, base_dir=base_dir)
            if progress is not None:
                progress(key, True)
        return results
    from concurrent.futures import as_completed

    from cellcc._workers import pool as worker_pool

    directory = os.fspath(base_dir) if base_dir is not None else os.fspath(Path.cwd())
    done: dict[K, Result] = {}
    with worker_pool(min(jobs, len(scenarios))) as pool:
        futures = {
            pool.submit(_simulate_in_worker, dict(sc), directory): key
            for key, sc in scenarios.items()
        }
        for future in as_completed(futures):
            key = futures[future]
            done[key] = future.result()
            if progress is not None:
                progress(key, True)
    return {key: done[key] for key in scenarios}


def _simulate_in_worker(
    scenario: Mapping[str, Any], base_dir: str | os.PathLike[str] | None
) -> Result:
    return simulate(scenario, base_dir=base_dir)
