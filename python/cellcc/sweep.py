"""Sweep files: a base scenario and a grid, expanded deterministically into runs.

A sweep is data (docs/experiments.md): a TOML file naming a base scenario, the scenario
keys to vary, the schemes and their parameters, the traces (both directions if asked)
and the seeds. :func:`load_sweep` checks it and expands it into a list of :class:`Run`,
each a ``(scenario, seed)`` pair plus the parameter columns that identify it in the
results. The order is fixed by the file: traces × directions × schemes × scheme grid ×
grid × seeds, each in the order written.

Every error names the file and the key path (``sweep.toml: grid."downlink.queue.bytez":
...``) and is raised as :class:`cellcc.ScenarioError`.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cellcc import _toml
from cellcc._native import ScenarioError

__all__ = ["MAX_RUNS", "Run", "Sweep", "expand", "load_sweep", "set_path"]

#: Keys of a sweep file (docs/experiments.md).
SWEEP_KEYS = (
    "name",
    "description",
    "traces_dir",
    "base",
    "duration_s",
    "seeds",
    "repetitions",
    "grid",
    "schemes",
    "traces",
    "quick",
    "experiment",
    "report",
)
SCHEME_KEYS = ("scheme", "label", "params", "grid", "set")
TRACES_KEYS = ("dir", "files", "glob", "uplink", "directions")
UPLINK_MODES = ("sibling-or-base", "sibling", "base")
DIRECTIONS = ("downlink", "uplink")
#: Environment variable naming the traces directory that ``{traces}`` stands for.
TRACES_ENV = "CELLCC_TRACES"
TRACES_PLACEHOLDER = "{traces}"

_SEGMENT = re.compile(r"^([A-Za-z0-9_-]+)((?:\[\d+\])*)$")
#: Most runs a sweep may expand to unless the caller raises the cap (``--max-runs``):
#: beyond it a typo in a grid (a 99-million-run product) would fill the memory before
#: anything runs; the catalogue's largest entry has 1 200.
MAX_RUNS = 100_000


@dataclass(frozen=True)
class Run:
    """One simulation of a sweep."""

    index: int
    scenario: dict[str, Any]
    """The resolved scenario; trace paths are absolute."""
    seed: int
    params: dict[str, Any]
    """Parameter columns: ``label``, ``scheme``, ``trace``, ``direction``, grid key paths
    and ``params.<name>`` of scheme grids."""

    def describe(self) -> str:
        """A short label such as ``cubic, trace=ATT-LTE-driving, seed=1``."""
        parts = [str(self.params.get("label", self.params.get("scheme", "")))]
        parts += [f"{k}={_cell(v)}" for k, v in self.params.items() if k not in ("label",)]
        return ", ".join(p for p in parts if p) + f", seed={self.seed}"


@dataclass
class Sweep:
    """An expanded sweep file."""

    name: str
    source: str
    """The file the sweep came from (as given), or ``<dict>``."""
    spec: dict[str, Any]
    """The sweep table after ``{traces}`` substitution and ``--quick`` merging."""
    runs: list[Run]
    param_columns: list[str]
    description: str = ""
    quick: bool = False
    experiment: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)


def _same_key(value: Any) -> Any:
    """What makes two grid values the same: numbers by exact value (``1`` and ``1.0``
    alike, ``0.1`` and ``0.1000001`` not), booleans apart from numbers, tables and lists
    by their canonical JSON."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, Mapping | list):
        return ("json", json.dumps(value, sort_keys=True, separators=(",", ":")))
    return ("value", value)


def _cell(value: Any) -> str:
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _fail(source: str, where: str, message: str) -> ScenarioError:
    return ScenarioError(f"{source}: {where}: {message}")


def _no_unknown(table: Mapping[str, Any], known: Sequence[str], source: str, prefix: str) -> None:
    for key in table:
        if key not in known:
            raise _fail(
                source, f"{prefix}{key}", f"unknown key; expected one of: {', '.join(known)}"
            )


# -- key paths ------------------------------------------------------------------------


def _parse_path(path: str) -> list[str | int]:
    """``flows[0].params.target_ms`` → ``["flows", 0, "params", "target_ms"]``."""
    steps: list[str | int] = []
    for segment in path.split("."):
        match = _SEGMENT.match(segment)
        if match is None:
            raise ValueError(f"bad key path {path!r}: expected names joined by '.', e.g. a.b[0].c")
        steps.append(match.group(1))
        steps += [int(i) for i in re.findall(r"\[(\d+)\]", match.group(2))]
    return steps


def set_path(document: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` (``a.b[0].c``) in ``document``, creating missing tables."""
    steps = _parse_path(path)
    node: Any = document
    for step, after in itertools.pairwise(steps):
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                raise ValueError(f"{path}: index [{step}] does not exist")
            node = node[step]
            continue
        if not isinstance(node, dict):
            raise ValueError(f"{path}: {step!r} is inside a value that is not a table")
        if step not in node:
            node[step] = [] if isinstance(after, int) else {}
        node = node[step]
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise ValueError(f"{path}: index [{last}] does not exist")
        node[last] = copy.deepcopy(value)
    elif isinstance(node, dict):
        node[last] = copy.deepcopy(value)
    else:
        raise ValueError(f"{path}: {last!r} is inside a value that is not a table")


# -- loading --------------------------------------------------------------------------


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: tables merge key by key, anything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _substitute(value: Any, traces: str | None, source: str, where: str) -> Any:
    """Replace ``{traces}`` in every string of ``value``."""
    if isinstance(value, str):
        if TRACES_PLACEHOLDER not in value:
            return value
        if traces is None:
            raise _fail(
                source,
                where,
                f"uses {TRACES_PLACEHOLDER} but no traces directory is set; add "
                f'traces_dir = "..." to the file, pass --traces DIR or set {TRACES_ENV}',
            )
        return value.replace(TRACES_PLACEHOLDER, traces)
    if isinstance(value, Mapping):
        return {
            k: _substitute(v, traces, source, f"{where}.{k}" if where else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_substitute(v, traces, source, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    text = _toml.read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: invalid TOML: {exc}") from None


def load_sweep(
    path: str | os.PathLike[str],
    *,
    quick: bool = False,
    traces_dir: str | os.PathLike[str] | None = None,
    max_runs: int = MAX_RUNS,
    announce: Callable[[str, int], None] | None = None,
) -> Sweep:
    """Read, check and expand a sweep file (see :func:`expand`)."""
    file = Path(path)
    spec = _read_toml(file, "sweep")
    return expand(
        spec,
        source=os.fspath(file),
        base_dir=file.resolve().parent,
        quick=quick,
        traces_dir=traces_dir,
        default_name=file.stem,
        max_runs=max_runs,
        announce=announce,
    )


def _traces_root(
    spec: Mapping[str, Any], explicit: str | os.PathLike[str] | None, base_dir: Path, source: str
) -> str | None:
    if explicit is not None:
        return os.fspath(Path(explicit).resolve())
    if os.environ.get(TRACES_ENV):
        return os.fspath(Path(os.environ[TRACES_ENV]).resolve())
    configured = spec.get("traces_dir")
    if configured is None:
        return None
    if not isinstance(configured, str):
        raise _fail(source, "traces_dir", "expected a path string")
    return os.fspath((base_dir / configured).resolve())


def expand(
    spec: Mapping[str, Any],
    *,
    source: str = "<dict>",
    base_dir: str | os.PathLike[str] | None = None,
    quick: bool = False,
    traces_dir: str | os.PathLike[str] | None = None,
    default_name: str = "sweep",
    max_runs: int = MAX_RUNS,
    announce: Callable[[str, int], None] | None = None,
) -> Sweep:
    """Check a sweep table and expand it into runs.

    The number of runs is computed before they are built: ``announce(name, count)``
    hears it, and a sweep of more than ``max_runs`` runs is refused.

    Relative paths (``base`` as a file, trace files, ``traces_dir``) resolve against
    ``base_dir`` (default: the current directory). ``{traces}`` in any string stands for
    ``traces_dir`` (argument), else ``$CELLCC_TRACES``, else the file's ``traces_dir``.
    With ``quick``, the file's ``[quick]`` table is merged over it first.
    """
    from cellcc import api

    root = Path(base_dir) if base_dir is not None else Path.cwd()
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{source}: expected a table of sweep keys")
    unknown = [k for k in spec if k not in SWEEP_KEYS]
    if unknown:
        raise _fail(
            source, str(unknown[0]), f"unknown key; expected one of: {', '.join(SWEEP_KEYS)}"
        )
    table = dict(spec)
    quick_table = table.get("quick", {})
    if not isinstance(quick_table, Mapping):
        raise _fail(source, "quick", "expected a table of keys to override with --quick")
    bad = [k for k in quick_table if k not in SWEEP_KEYS or k in ("quick", "experiment")]
    if bad:
        raise _fail(source, f"quick.{bad[0]}", "not a sweep key that --quick can override")
    if quick:
        table = _merge(table, quick_table)
    traces = _traces_root(table, traces_dir, root, source)
    table = {
        k: (v if k in ("experiment", "quick") else _substitute(v, traces, source, k))
        for k, v in table.items()
    }

    name = table.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise _fail(source, "name", "expected a non-empty string")
    base = _base(table, root, source)
    seeds = _seeds(table, base, source, max_runs)
    grid = _grid(table.get("grid", {}), source, "grid")
    schemes = _schemes(table.get("schemes"), base, source, set(api.schemes()))
    trace_runs = _traces(table.get("traces"), root, source)
    duration = table.get("duration_s")
    if duration is not None and duration != "trace" and not _positive_number(duration):
        raise _fail(source, "duration_s", f'expected a number > 0 or "trace", got {duration!r}')
    flows = base.get("flows")
    if flows is not None and (
        not isinstance(flows, list) or not all(isinstance(f, Mapping) for f in flows)
    ):
        raise _fail(source, "base.flows", f"expected an array of flow tables, got {flows!r}")
    count = len(trace_runs) * len(seeds) * math.prod(len(v) for v in grid.values())
    count *= sum(math.prod(len(v) for v in entry["grid"].values()) for entry in schemes)
    if announce is not None:
        announce(name, count)
    if count > max_runs:
        raise _fail(
            source,
            "grid",
            f"expands to {count:,} runs, more than the limit of {max_runs:,}; shrink the "
            "grid, schemes, traces or seeds (or raise the limit with --max-runs)",
        )

    runs: list[Run] = []
    lengths: dict[str, float] = {}
    for trace in trace_runs:
        for entry in schemes:
            for scheme_point in _product(entry["grid"]):
                for point in _product(grid):
                    scenario = copy.deepcopy(base)
                    params: dict[str, Any] = {"label": entry["label"], "scheme": entry["scheme"]}
                    if trace is not None:
                        params.update(trace["columns"])
                        _apply_trace(scenario, trace)
                    flow = _first_flow(scenario)
                    flow["scheme"] = entry["scheme"]
                    flow_params = copy.deepcopy(entry["params"])
                    flow_params.update(scheme_point)
                    if flow_params:
                        flow["params"] = flow_params
                    else:
                        flow.pop("params", None)
                    params.update({f"params.{k}": v for k, v in scheme_point.items()})
                    for key, value in [*entry["set"].items(), *point.items()]:
                        where = f"grid.{json.dumps(key)}" if key in point else "schemes.set"
                        try:
                            set_path(scenario, key, value)
                        except ValueError as exc:
                            raise _fail(source, where, str(exc)) from None
                    params.update(point)
                    if duration == "trace":
                        if trace is None:
                            raise _fail(source, "duration_s", '"trace" needs a [traces] table')
                        data = trace["data"]
                        if data not in lengths:
                            lengths[data] = float(api.trace_info(data)["duration_s"])
                        scenario["duration_s"] = lengths[data]
                    elif duration is not None:
                        scenario["duration_s"] = float(duration)
                    for seed in seeds:
                        run_scenario = copy.deepcopy(scenario)
                        run_scenario["seed"] = seed
                        run_scenario.setdefault("name", name)
                        runs.append(Run(len(runs), run_scenario, seed, dict(params)))
    columns = list(dict.fromkeys(k for run in runs for k in run.params))
    report = table.get("report", {})
    experiment = table.get("experiment", {})
    for key, value in (("report", report), ("experiment", experiment)):
        if not isinstance(value, Mapping):
            raise _fail(source, key, "expected a table")
    published = experiment.get("published", [])
    if not isinstance(published, list) or not all(isinstance(p, Mapping) for p in published):
        raise _fail(source, "experiment.published", "expected an array of tables")
    texts = [("description", table.get("description"))]
    texts += [(f"experiment.{k}", experiment.get(k)) for k in ("paper", "figure", "notes")]
    texts += [("experiment.description", experiment.get("description"))]
    for key, value in texts:
        if value is not None and not isinstance(value, str):
            raise _fail(source, key, f"expected a string, got {value!r}")
    description = table.get("description", experiment.get("description", ""))
    return Sweep(
        name=name,
        source=source,
        spec=table,
        runs=runs,
        param_columns=columns,
        description=str(description),
        quick=quick,
        experiment=dict(experiment),
        report=dict(report),
    )


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _base(table: Mapping[str, Any], root: Path, source: str) -> dict[str, Any]:
    base = table.get("base")
    if base is None:
        raise _fail(source, "base", "missing: give a scenario table or the path of a scenario file")
    if isinstance(base, str):
        path = (root / base).resolve()
        scenario = _read_toml(path, "scenario")
        _absolutise(scenario, path.parent)
        return scenario
    if not isinstance(base, Mapping):
        raise _fail(source, "base", "expected a scenario table or a path string")
    scenario = copy.deepcopy(dict(base))
    _absolutise(scenario, root)
    return scenario


def _absolutise(node: Any, root: Path) -> None:
    """Make every ``trace`` path absolute (relative to ``root``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "trace" and isinstance(value, str):
                node[key] = os.fspath((root / value).resolve())
            else:
                _absolutise(value, root)
    elif isinstance(node, list):
        for item in node:
            _absolutise(item, root)


def _seeds(
    table: Mapping[str, Any], base: Mapping[str, Any], source: str, max_runs: int
) -> list[int]:
    seeds = table.get("seeds")
    repetitions = table.get("repetitions")
    first = base.get("seed", 1)
    if not isinstance(first, int) or isinstance(first, bool) or not 0 <= first < 2**64:
        raise _fail(source, "base.seed", f"expected an integer in [0, 2^64), got {first!r}")
    if seeds is not None and repetitions is not None:
        raise _fail(source, "repetitions", "give either seeds or repetitions, not both")
    if repetitions is not None:
        if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
            raise _fail(source, "repetitions", f"expected an integer >= 1, got {repetitions!r}")
        if repetitions > max_runs:  # refused before the list of seeds is built
            raise _fail(
                source,
                "repetitions",
                f"{repetitions:,} runs per point, more than the limit of {max_runs:,} runs",
            )
        return list(range(first, first + repetitions))
    if seeds is None:
        return [first]
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    ):
        raise _fail(source, "seeds", f"expected a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise _fail(source, "seeds", "duplicate seed")
    return list(seeds)


def _grid(grid: Any, source: str, where: str) -> dict[str, list[Any]]:
    if not isinstance(grid, Mapping):
        raise _fail(source, where, 'expected a table of key paths to lists, e.g. "a.b" = [1, 2]')
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        # A dotted bare key (a.b = [..]) arrives as nested tables: flatten it.
        if isinstance(values, Mapping):
            for sub, sub_values in _grid(values, source, f"{where}.{key}").items():
                out[f"{key}.{sub}"] = sub_values
            continue
        label = f"{where}.{json.dumps(key)}" if "." in key else f"{where}.{key}"
        if not isinstance(values, list) or not values:
            raise _fail(source, label, f"expected a non-empty list of values, got {values!r}")
        try:
            _parse_path(key)
        except ValueError as exc:
            raise _fail(source, label, str(exc)) from None
        if len({_same_key(v) for v in values}) != len(values):
            raise _fail(source, label, "duplicate value")
        out[key] = list(values)
    return out


def _product(grid: Mapping[str, Sequence[Any]]) -> Iterator[dict[str, Any]]:
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


def _schemes(
    schemes: Any, base: Mapping[str, Any], source: str, known: set[str]
) -> list[dict[str, Any]]:
    if schemes is None:
        flows = base.get("flows")
        if (
            not isinstance(flows, list)
            or not flows
            or not isinstance(flows[0], Mapping)
            or "scheme" not in flows[0]
        ):
            raise _fail(source, "schemes", "missing: list the schemes, or give base.flows")
        schemes = [flows[0]["scheme"]]
    if not isinstance(schemes, list) or not schemes:
        raise _fail(source, "schemes", "expected a non-empty list of scheme names or tables")
    out = []
    for i, entry in enumerate(schemes):
        where = f"schemes[{i}]"
        if isinstance(entry, str):
            entry = {"scheme": entry}
        if not isinstance(entry, Mapping):
            raise _fail(source, where, "expected a scheme name or a table with a scheme key")
        _no_unknown(entry, SCHEME_KEYS, source, f"{where}.")
        name = entry.get("scheme")
        if not isinstance(name, str) or not name:
            raise _fail(
                source, f"{where}.scheme", f"expected a scheme name (a string), got {name!r}"
            )
        # A Python class by import path (docs/python-cc.md) is checked when the runs
        # are validated, in the process that imports it.
        external = ":" in name
        if name not in known and not external:
            raise _fail(
                source,
                f"{where}.scheme",
                f"unknown scheme {name!r}; expected one of: {', '.join(sorted(known))}"
                " or a Python class as 'module.path:ClassName'",
            )
        params = entry.get("params", {})
        sets = entry.get("set", {})
        for key, value in (("params", params), ("set", sets)):
            if not isinstance(value, Mapping):
                raise _fail(source, f"{where}.{key}", "expected a table")
        label = entry.get("label", name)
        if not isinstance(label, str) or not label:
            raise _fail(source, f"{where}.label", "expected a non-empty string")
        out.append(
            {
                "scheme": name,
                "label": label,
                "params": dict(params),
                "grid": _grid(entry.get("grid", {}), source, f"{where}.grid"),
                "set": dict(sets),
            }
        )
    labels = [(e["label"], json.dumps(e["params"], sort_keys=True)) for e in out]
    if len(set(labels)) != len(labels):
        raise _fail(source, "schemes", "two entries with the same label and params")
    return out


def _traces(traces: Any, root: Path, source: str) -> list[dict[str, Any] | None]:
    """One entry per (trace, direction): data and ACK trace paths and the columns."""
    if traces is None:
        return [None]
    if not isinstance(traces, Mapping):
        raise _fail(source, "traces", "expected a table (dir, files or glob, uplink, directions)")
    _no_unknown(traces, TRACES_KEYS, source, "traces.")
    directory = root / str(traces.get("dir", "."))
    files, pattern = traces.get("files"), traces.get("glob")
    if (files is None) == (pattern is None):
        raise _fail(source, "traces", 'give exactly one of files = [...] or glob = "*.down"')
    if pattern is not None:
        if not isinstance(pattern, str):
            raise _fail(source, "traces.glob", "expected a glob pattern string")
        paths = sorted(directory.glob(pattern))
        if not paths:
            raise _fail(source, "traces.glob", f"{pattern!r} matches no file in {directory}")
    else:
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            raise _fail(source, "traces.files", "expected a non-empty list of paths")
        paths = [directory / f for f in files]
        for i, path in enumerate(paths):
            if not path.is_file():
                raise _fail(source, f"traces.files[{i}]", f"no such trace file: {path}")
    mode = traces.get("uplink", "sibling-or-base")
    if mode not in UPLINK_MODES:
        raise _fail(source, "traces.uplink", f"expected one of: {', '.join(UPLINK_MODES)}")
    directions = traces.get("directions", ["downlink"])
    if (
        not isinstance(directions, list)
        or not directions
        or any(d not in DIRECTIONS for d in directions)
        or len(set(directions)) != len(directions)
    ):
        raise _fail(source, "traces.directions", 'expected a list of "downlink" and/or "uplink"')
    out: list[dict[str, Any] | None] = []
    for path in paths:
        path = path.resolve()
        sibling = path.with_suffix(".up") if path.suffix == ".down" else None
        has_sibling = sibling is not None and sibling.is_file()
        if mode == "sibling" and not has_sibling:
            raise _fail(source, "traces.uplink", f'"sibling" but {path.name} has no .up file')
        up = sibling if has_sibling and mode != "base" else None
        name = path.stem if path.suffix == ".down" else path.name
        for direction in directions:
            if direction == "uplink" and up is None:
                raise _fail(
                    source,
                    "traces.directions",
                    f'"uplink" swaps {path.name} with its .up sibling, which is missing',
                )
            data, ack = (path, up) if direction == "downlink" else (up, path)
            out.append(
                {
                    "data": os.fspath(data),
                    "ack": None if ack is None else os.fspath(ack),
                    "columns": {"trace": name, "direction": direction},
                }
            )
    return out


def _apply_trace(scenario: dict[str, Any], trace: Mapping[str, Any]) -> None:
    down = scenario.setdefault("downlink", {})
    for key in ("rate_mbps", "synth", "synth_seed"):
        down.pop(key, None)
    down["trace"] = trace["data"]
    if trace["ack"] is not None:
        up = scenario.setdefault("uplink", {})
        for key in ("rate_mbps", "synth", "synth_seed"):
            up.pop(key, None)
        up["trace"] = trace["ack"]


def _first_flow(scenario: dict[str, Any]) -> dict[str, Any]:
    """The first flow of ``scenario`` (one empty flow if it has none; :func:`expand` has
    refused ``flows`` that are not an array of tables)."""
    flows = scenario.setdefault("flows", [])
    if not flows:
        flows.append({})
    return flows[0]
