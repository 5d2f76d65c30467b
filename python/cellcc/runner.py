"""Running a sweep: cached runs, local or Ray executors, one Parquet dataset.

Each run is ``(scenario, seed)``. Its cache key is the sha256 of the canonical JSON of
the resolved scenario (every trace path replaced by the sha256 of the file's contents),
the seed and the code version (package version, core version and git revision, as
provenance records them). A finished run is one JSON file, ``runs/<key>.json``, written
atomically (temporary file + ``os.replace``) by the driver process as soon as the run
comes back, so killing a sweep loses at most the runs in flight and never leaves a
partial file under its real name. Re-running a sweep skips every run whose file exists.
At the end the run files are consolidated into ``results.parquet`` (and ``.csv``): one
row per flow per run, the sweep's parameter columns first.

Executors: ``local`` (a process pool, all cores by default) and ``ray`` (a local Ray
instance, or a cluster at ``address``). Both run the same function on the same inputs,
and the simulator is deterministic, so they give identical datasets.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cellcc._native import UsageError
from cellcc.intervals import phase_table
from cellcc.results import (
    clean_temporaries,
    json_ready,
    output_lock,
    provenance,
    write_csv_atomic,
    write_json_atomic,
    write_parquet_atomic,
)
from cellcc.sweep import Run, Sweep

__all__ = [
    "ACK_GAP_BIN_MS",
    "ACK_GAP_MAX_MS",
    "EXECUTORS",
    "SweepOutcome",
    "ack_gap_counts",
    "code_version",
    "consolidate",
    "consolidate_series",
    "needs_ack_gaps",
    "needs_series",
    "run_key",
    "run_sweep",
]

EXECUTORS = ("local", "ray")
RUNS_DIR = "runs"
RESULTS_FILE = "results.parquet"
#: Every run's metrics in equal phases of the run (cellcc.intervals.phase_table).
PHASES_FILE = "phases.parquet"
#: Columns every row of the dataset starts with, before the sweep's parameter columns.
LEADING = ("run", "run_index", "seed")


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did."""

    out_dir: Path
    total: int
    """Runs in the sweep."""
    unique: int
    """Distinct cache keys (runs with the same scenario and seed share one)."""
    cached: int
    """Keys found on disk before starting."""
    executed: int
    """Keys simulated by this call."""
    wall_s: float
    results: pd.DataFrame
    dataset: Path
    nodes: int = 0
    """Machines that simulated the executed runs (Ray: distinct nodes; local: 1)."""

    @property
    def runs_per_s(self) -> float:
        return self.executed / self.wall_s if self.wall_s > 0 else float("nan")


# -- cache keys -----------------------------------------------------------------------


@cache
def code_version() -> dict[str, str]:
    """The code that produces results: package version, core version, git revision."""
    from cellcc._native import core_version
    from cellcc.results import git_revision, package_version

    return {
        "cellcc": package_version(),
        "core": str(core_version()),
        "git_revision": git_revision(),
    }


_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str) -> str:
    """sha256 of a file's contents (memoised by path, size and modification time)."""
    stat = Path(path).stat()
    memo = (path, stat.st_size, stat.st_mtime_ns)
    if memo not in _FILE_HASHES:
        digest = hashlib.sha256()
        with Path(path).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _FILE_HASHES[memo] = digest.hexdigest()
    return _FILE_HASHES[memo]


def _content_addressed(node: Any) -> Any:
    """The scenario with every ``trace`` path replaced by ``sha256:<contents hash>``."""
    if isinstance(node, Mapping):
        return {
            k: (
                f"sha256:{file_sha256(v)}"
                if k == "trace" and isinstance(v, str)
                else _content_addressed(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_content_addressed(v) for v in node]
    return node


def _external_sources(scenario: Mapping[str, Any]) -> dict[str, str]:
    """``{import path: sha256 of its module's source}`` for the Python schemes the
    scenario names (docs/python-cc.md), so that editing the class invalidates cached
    runs. A module without a source file (or that cannot be found) hashes as its name."""
    import importlib.util

    names = [f.get("scheme") for f in scenario.get("flows", []) if isinstance(f, Mapping)]
    names += [b.get("scheme") for b in scenario.get("background", []) if isinstance(b, Mapping)]
    sources = {}
    for name in names:
        if not isinstance(name, str) or ":" not in name or name in sources:
            continue
        module = name.partition(":")[0]
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        sources[name] = (
            f"sha256:{file_sha256(origin)}" if origin and Path(origin).is_file() else module
        )
    return sources


def canonical_json(value: Any) -> str:
    return json.dumps(json_ready(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_key(
    run: Run,
    code: Mapping[str, str] | None = None,
    *,
    series: bool = False,
    ack_gaps: bool = False,
) -> str:
    """The cache key of ``run`` (hex sha256). ``series``: the record also keeps the time
    series; ``ack_gaps``: the ACK-gap histograms (each a different record, so a different
    key; keys without them are unchanged)."""
    document: dict[str, Any] = {
        "scenario": _content_addressed(run.scenario),
        "seed": run.seed,
        "code": dict(code or code_version()),
    }
    if series:
        document["series"] = True
    if ack_gaps:
        document["ack_gaps"] = True
    external = _external_sources(run.scenario)
    if external:
        document["python_schemes"] = external  # keys of built-in runs are unchanged
    return hashlib.sha256(canonical_json(document).encode()).hexdigest()


# -- executing one run ----------------------------------------------------------------


def execute(task: Mapping[str, Any], fetch: Callable[[str], bytes] | None = None) -> dict[str, Any]:
    """Simulate one run and return its record (plain JSON values). Runs in a worker.

    A task with ``shipped`` traces (``{trace value: sha256}``, :mod:`cellcc.trace_shipping`)
    runs on this node's copies of them, ``fetch(sha256)`` giving the bytes of one not
    yet copied; its record is the one the run makes from the original files."""
    from cellcc import api

    started = time.monotonic()
    scenario = task["scenario"]
    if task.get("ack_gaps"):
        # The histograms come from the ACK log, which the record does not keep.
        scenario = copy.deepcopy(scenario)
        scenario.setdefault("metrics", {})["ack_log"] = True
    ran = scenario
    if task.get("shipped"):
        from cellcc import trace_shipping

        if fetch is None:
            raise ValueError("a task with shipped traces needs a fetch function")
        ran = trace_shipping.localise(scenario, task["shipped"], fetch, trace_shipping.node_cache())
    result = api.simulate(ran, seed=task["seed"], base_dir=task["base_dir"])
    summary = result.summary.to_dict(orient="records")
    cc = {}
    if result.cc_info is not None and not result.cc_info.empty:
        cc = {int(r["flow"]): r for r in result.cc_info.to_dict(orient="records")}
    for row in summary:
        for name, value in cc.get(int(row["flow"]), {}).items():
            if name != "flow":
                row[f"cc.{name}"] = value
    # The scorecard's batch means (cellcc.intervals): the run's metrics in equal phases.
    extra: dict[str, Any] = {"phases": phase_table(result.timeseries).to_dict(orient="list")}
    if task.get("series"):
        extra["timeseries"] = result.timeseries.to_dict(orient="list")
    if task.get("ack_gaps"):
        acks = result.acks if result.acks is not None else pd.DataFrame(columns=["flow", "t_s"])
        extra["ack_gaps"] = {
            "bin_ms": ACK_GAP_BIN_MS,
            "max_ms": ACK_GAP_MAX_MS,
            "flows": ack_gap_counts(acks, len(scenario.get("flows", []))),
        }
    return json_ready(
        {
            **extra,
            "key": task["key"],
            "seed": task["seed"],
            "code": task["code"],
            "summary": summary,
            "link": result.link,
            "meta": result.meta,
            "wall_s": time.monotonic() - started,
            "scenario": result.scenario_text if ran is scenario else api.scenario_text(scenario),
        }
    )


def _local(tasks: list[dict[str, Any]], jobs: int) -> Iterator[dict[str, Any]]:
    from cellcc._workers import pool as worker_pool

    if jobs == 1:
        for task in tasks:
            yield execute(task)
        return
    # Spawned workers that die with the driver, even on kill -9 (cellcc._workers).
    with worker_pool(jobs) as pool:
        pending = set()
        queue = iter(tasks)
        # Keep a bounded number of tasks in flight so that results stream back in order
        # of completion and an interrupt cancels little work.
        for task in itertools.islice(queue, 2 * jobs):
            pending.add(pool.submit(execute, task))
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                for task in itertools.islice(queue, 1):
                    pending.add(pool.submit(execute, task))


def _execute_on_node(
    task: Mapping[str, Any], blobs: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """:func:`execute` as a Ray task: ``blobs`` maps each shipped trace's sha256 to its
    object reference (in a dict, so Ray passes the references rather than the bytes and
    a node fetches only the traces it has not copied yet). Returns the node's ID too."""
    import ray

    def fetch(digest: str) -> bytes:
        return bytes(ray.get(blobs[digest]))

    return ray.get_runtime_context().get_node_id(), execute(task, fetch)


def _ray(
    tasks: list[dict[str, Any]],
    jobs: int,
    address: str | None,
    shipped: Mapping[str, Path],
    nodes: set[str],
) -> Iterator[dict[str, Any]]:
    """Run ``tasks`` on Ray; ``shipped`` maps the sha256 of each trace to ship to its
    file; the ID of each node that runs a task is added to ``nodes``."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray: the ray package is not installed") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address is None:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        refs = {digest: ray.put(path.read_bytes()) for digest, path in shipped.items()}
        remote = ray.remote(num_cpus=1)(_execute_on_node)
        pending = [
            remote.remote(task, {d: refs[d] for d in task.get("shipped", {}).values()})
            for task in tasks
        ]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            node, record = ray.get(done[0])
            nodes.add(node)
            yield record
    finally:
        if started_here:
            ray.shutdown()


def _ship(tasks: list[dict[str, Any]]) -> dict[str, Path]:
    """Give each task the sha256 of each trace it names (``shipped``); return the file of
    each distinct hash."""
    from cellcc import trace_shipping

    files: dict[str, Path] = {}
    for task in tasks:
        named = trace_shipping.scenario_traces(task["scenario"], task["base_dir"])
        hashes = {value: file_sha256(os.fspath(path)) for value, path in named.items()}
        files.update({digest: named[value] for value, digest in hashes.items()})
        task["shipped"] = hashes
    return files


# -- the sweep ------------------------------------------------------------------------


#: A run file that cannot be read is moved aside under its name plus this suffix.
QUARANTINE_SUFFIX = ".corrupt"


def _quarantine(path: Path) -> Path:
    """Move ``path`` aside to ``<name>.corrupt`` (``.corrupt-1``, ... if taken)."""
    target = path.with_name(path.name + QUARANTINE_SUFFIX)
    n = 0
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{QUARANTINE_SUFFIX}-{n}")
    path.replace(target)
    return target


def _is_cached(path: Path, key: str, warn: Callable[[str], None]) -> bool:
    """Whether ``path`` holds the finished run ``key``. A file there that is not a
    readable record of it (a disk error, an edit, another tool) is quarantined with a
    warning naming it, and the run runs again."""
    if not path.is_file():
        return False
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        ok = (
            isinstance(record, dict)
            and record.get("key") == key
            and isinstance(record.get("summary"), list)
        )
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        ok = False
    if ok:
        return True
    moved = _quarantine(path)
    warn(f"warning: {path}: not a readable run record; moved to {moved.name}, running it again")
    return False


def _warn_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def check(sweep: Sweep, runs: list[Run] | None = None) -> None:
    """Validate the scenarios of ``runs`` (default: all, one per distinct scenario) with
    the core's loader, before anything runs. Errors name the sweep file and the run."""
    from cellcc import _native, api

    seen: set[str] = set()
    for run in sweep.runs if runs is None else runs:
        text = api.scenario_text(run.scenario)
        if text in seen:
            continue
        seen.add(text)
        try:
            _native.validate_scenario(
                text,
                base_dir=os.fspath(Path.cwd()),
                source_name=f"{sweep.source} ({run.describe()})",
            )
        except _native.ScenarioError as exc:
            # The line number refers to the generated scenario text, not to the sweep file.
            message = re.sub(r" \(line \d+\)$", "", str(exc))
            raise _native.ScenarioError(message) from None


def run_sweep(
    sweep: Sweep,
    out_dir: str | os.PathLike[str],
    *,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    command: str | None = None,
    progress: Callable[[Run, bool], None] | None = None,
    validate: bool = True,
    ship_traces: bool = False,
    warn: Callable[[str], None] | None = None,
) -> SweepOutcome:
    """Run every uncached run of ``sweep`` into ``out_dir`` and consolidate the dataset.

    ``progress(run, cached)`` is called once per run as it is found on disk or finishes.
    ``ship_traces`` (Ray only): send the trace files to the nodes through Ray's object
    store rather than have every node read them at the driver's paths
    (:mod:`cellcc.trace_shipping`).
    The sweep holds ``out_dir`` locked (:func:`cellcc.results.output_lock`): another
    sweep into it fails at once. A run file that cannot be read is quarantined with a
    warning (``warn``, default: a line on stderr) and the run runs again.
    """
    if executor not in EXECUTORS:
        raise UsageError(f"--executor: expected one of: {', '.join(EXECUTORS)}, got {executor!r}")
    if ship_traces and executor != "ray":
        raise UsageError("--ship-traces: only applies with --executor ray")
    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise UsageError(f"--jobs: expected an integer >= 1, got {jobs}")
    with output_lock(out_dir):
        return _run_locked(
            sweep,
            Path(out_dir),
            executor=executor,
            jobs=jobs,
            address=address,
            command=command,
            progress=progress,
            validate=validate,
            ship_traces=ship_traces,
            warn=warn or _warn_stderr,
        )


def _run_locked(
    sweep: Sweep,
    out: Path,
    *,
    executor: str,
    jobs: int,
    address: str | None,
    command: str | None,
    progress: Callable[[Run, bool], None] | None,
    validate: bool,
    ship_traces: bool,
    warn: Callable[[str], None],
) -> SweepOutcome:
    """:func:`run_sweep` once ``out`` is locked."""
    started = time.monotonic()
    runs_dir = out / RUNS_DIR
    clean_temporaries(out)  # under the lock: no live writer's temporary is there
    clean_temporaries(runs_dir)
    code = code_version()
    series = needs_series(sweep)
    gaps = needs_ack_gaps(sweep)
    keys = [run_key(run, code, series=series, ack_gaps=gaps) for run in sweep.runs]
    first: dict[str, Run] = {}
    for run, key in zip(sweep.runs, keys, strict=True):
        first.setdefault(key, run)
    found = {key for key in first if _is_cached(runs_dir / f"{key}.json", key, warn)}
    if validate:
        check(sweep, [run for key, run in first.items() if key not in found])
    by_key: dict[str, list[Run]] = {}
    for run, key in zip(sweep.runs, keys, strict=True):
        by_key.setdefault(key, []).append(run)
    todo = []
    cached = 0
    for key, run in first.items():
        if key in found:
            cached += 1
            for same in by_key[key]:
                if progress is not None:
                    progress(same, True)
        else:
            todo.append(
                {
                    "key": key,
                    "scenario": run.scenario,
                    "seed": run.seed,
                    "base_dir": os.fspath(Path.cwd()),
                    "code": code,
                    "series": series,
                    "ack_gaps": gaps,
                }
            )
    write_json_atomic(
        out / "sweep.json",
        {
            "name": sweep.name,
            "source": sweep.source,
            "quick": sweep.quick,
            "code": code,
            "runs": [
                {"index": r.index, "key": k, "seed": r.seed, "params": r.params}
                for r, k in zip(sweep.runs, keys, strict=True)
            ],
        },
    )
    nodes: set[str] = set()
    if not todo:
        stream: Iterator[dict[str, Any]] = iter(())
    elif executor == "local":
        stream = _local(todo, min(jobs, len(todo)))
        nodes.add("local")
    else:
        shipped = _ship(todo) if ship_traces else {}
        stream = _ray(todo, jobs, address, shipped, nodes)
    executed = 0
    for record in stream:
        write_json_atomic(runs_dir / f"{record['key']}.json", record)
        executed += 1
        if progress is not None:
            for same in by_key[record["key"]]:
                progress(same, False)
    results = consolidate(sweep, keys, out, command=command, code=code)
    if series:
        consolidate_series(sweep, keys, out)
    if gaps:
        consolidate_ack_gaps(sweep, keys, out)
    return SweepOutcome(
        out_dir=out,
        total=len(sweep.runs),
        unique=len(first),
        cached=cached,
        executed=executed,
        wall_s=time.monotonic() - started,
        results=results,
        dataset=out / RESULTS_FILE,
        nodes=len(nodes),
    )


#: Report views that need every run's time series (docs/experiments.md).
SERIES_VIEWS = ("timeseries", "share")
SERIES_FILE = "timeseries.parquet"
#: Report views that need every run's ACK-gap histograms (its ACKs are logged).
ACK_GAP_VIEWS = ("ack_gap",)
ACK_GAPS_FILE = "ack_gaps.parquet"
#: Histogram bin of ACK gaps: a quarter of an LTE TTI, as `cellcc run`'s ACK-pattern plot.
ACK_GAP_BIN_MS = 0.25
#: Gaps from here on share the last bin: four 20 ms SR periods, past every scheduling
#: unit of the presets (docs/cellular-models.md).
ACK_GAP_MAX_MS = 80.0


def ack_gap_counts(
    acks: pd.DataFrame,
    flows: int,
    *,
    bin_ms: float = ACK_GAP_BIN_MS,
    max_ms: float = ACK_GAP_MAX_MS,
) -> list[dict[str, Any]]:
    """Histograms of the ACK inter-arrival gaps at the sender of flows ``0 .. flows-1``:
    ``[{"flow": i, "counts": [...]}]``, bin ``k`` counting gaps in ``[k, k + 1) * bin_ms``
    and the last bin every gap from ``max_ms`` on. ``acks`` has the columns ``flow``
    and ``t_s`` of :attr:`cellcc.api.Result.acks` (arrival order per flow)."""
    bins = round(max_ms / bin_ms) + 1
    out = []
    for flow in range(flows):
        times = acks.loc[acks["flow"] == flow, "t_s"].to_numpy(dtype=float)
        gaps_ms = np.diff(times) * 1e3
        index = np.minimum((gaps_ms / bin_ms).astype(np.int64), bins - 1)
        counts = np.bincount(index, minlength=bins)
        out.append({"flow": flow, "counts": [int(c) for c in counts]})
    return out


def report_views(report: Mapping[str, Any]) -> list[str]:
    """The views a ``[report]`` table asks for: ``view`` is one name or a list of names."""
    view = report.get("view", "table")
    return [str(v) for v in view] if isinstance(view, list) else [str(view)]


def needs_series(sweep: Sweep) -> bool:
    """Whether the sweep's report needs the time series of every run."""
    report = sweep.report
    return (
        any(view in SERIES_VIEWS for view in report_views(report))
        or bool(report.get("window"))
        or bool(report.get("series"))
    )


def needs_ack_gaps(sweep: Sweep) -> bool:
    """Whether the sweep's report needs the ACK-gap histograms of every run."""
    return any(view in ACK_GAP_VIEWS for view in report_views(sweep.report))


def consolidate_ack_gaps(sweep: Sweep, keys: list[str], out_dir: str | os.PathLike[str]) -> Path:
    """Join the runs' ACK-gap histograms into ``ack_gaps.parquet``: the parameter
    columns, then ``flow``, ``gap_ms`` (the bin's lower edge; the last bin holds every
    gap from ``max_ms`` on) and ``count``, one row per non-empty bin."""
    out = Path(out_dir)
    rows: list[dict[str, Any]] = []
    for run, key in zip(sweep.runs, keys, strict=True):
        record = json.loads((out / RUNS_DIR / f"{key}.json").read_text(encoding="utf-8"))
        gaps = record.get("ack_gaps") or {}
        bin_ms = float(gaps.get("bin_ms", 0.0))
        params = {name: _column_value(value) for name, value in run.params.items()}
        for flow in gaps.get("flows", []):
            for index, count in enumerate(flow["counts"]):
                if count:
                    rows.append(
                        {
                            "run_index": run.index,
                            "seed": run.seed,
                            **params,
                            "flow": flow["flow"],
                            "gap_ms": index * bin_ms,
                            "count": count,
                        }
                    )
    columns = ["run_index", "seed", *sweep.param_columns, "flow", "gap_ms", "count"]
    frame = pd.DataFrame.from_records(rows, columns=columns)
    return write_parquet_atomic(out / ACK_GAPS_FILE, frame)


def consolidate_series(sweep: Sweep, keys: list[str], out_dir: str | os.PathLike[str]) -> Path:
    """Join the runs' time series into ``timeseries.parquet`` (the parameter columns
    first, then the simulator's ``timeseries`` columns, docs/metrics.md)."""
    out = Path(out_dir)
    frames = []
    for run, key in zip(sweep.runs, keys, strict=True):
        record = json.loads((out / RUNS_DIR / f"{key}.json").read_text(encoding="utf-8"))
        frame = pd.DataFrame(record.get("timeseries", {}))
        frame.insert(0, "run_index", run.index)
        frame.insert(1, "seed", run.seed)
        for i, (name, value) in enumerate(run.params.items()):
            frame.insert(2 + i, name, _column_value(value))
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return write_parquet_atomic(out / SERIES_FILE, frame)


def _column_value(value: Any) -> Any:
    """Parameter values as Parquet-friendly scalars (tables and lists as JSON text)."""
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def consolidate(
    sweep: Sweep,
    keys: list[str],
    out_dir: str | os.PathLike[str],
    *,
    command: str | None = None,
    code: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Join the run files of ``sweep`` into ``results.parquet``/``.csv``; return the rows."""
    out = Path(out_dir)
    rows: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    for run, key in zip(sweep.runs, keys, strict=True):
        record = json.loads((out / RUNS_DIR / f"{key}.json").read_text(encoding="utf-8"))
        table = record.get("phases") or {}
        for i in range(len(next(iter(table.values()), []))):
            phases.append({"run_index": run.index, **{k: v[i] for k, v in table.items()}})
        for summary in record["summary"]:
            row: dict[str, Any] = {"run": key, "run_index": run.index, "seed": run.seed}
            row.update({k: _column_value(v) for k, v in run.params.items()})
            row.update({k: v for k, v in summary.items() if k not in row})
            rows.append(row)
    frame = pd.DataFrame.from_records(rows)
    if not frame.empty:
        params = [c for c in sweep.param_columns if c in frame.columns]
        first = [*LEADING, *params]
        frame = frame[first + [c for c in frame.columns if c not in first]]
    record = provenance(
        seed=None,
        command=command,
        extra={
            "sweep": {
                "name": sweep.name,
                "source": sweep.source,
                "quick": sweep.quick,
                "runs": len(sweep.runs),
                "spec": sweep.spec,
            },
            "code": dict(code or code_version()),
        },
    )
    write_parquet_atomic(out / RESULTS_FILE, frame, provenance=record)
    write_csv_atomic(out / "results.csv", frame)
    if phases:
        write_parquet_atomic(out / PHASES_FILE, pd.DataFrame.from_records(phases))
    else:  # runs recorded before phases were kept: no stale file from another sweep
        (out / PHASES_FILE).unlink(missing_ok=True)
    write_json_atomic(out / "provenance.json", record)
    return frame
