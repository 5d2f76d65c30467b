"""Shipping a sweep's trace files to the machines that run it.

A sweep on a Ray cluster runs on nodes that may not see the driver's files. With
``--ship-traces`` the driver reads every trace file the sweep's runs name once, puts its
bytes into Ray's object store, and gives each run the ``sha256`` of each of its traces.
A worker keeps a node-local copy of each trace in a folder named by its hash
(:func:`node_cache`),
fetched from the object store the first time a run on that node needs it, and runs the
scenario with its ``trace`` paths pointing there. The record a run returns is the one
the driver would have made: the scenario text recorded is the original one, so a shipped
sweep's dataset equals an unshipped one (tests/python/test_sweep.py).

Without shipping, every node must see the traces at the paths the sweep resolves them to
(shared storage, docs/experiments.md).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["localise", "node_cache", "scenario_traces"]

#: Subdirectory of the system's temporary directory that holds the shipped traces of a
#: node, one file per content hash.
CACHE_NAME = "cellcc-traces"


def _trace_values(node: Any) -> Iterable[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "trace" and isinstance(value, str):
                yield value
            else:
                yield from _trace_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _trace_values(value)


def scenario_traces(scenario: Mapping[str, Any], base_dir: str) -> dict[str, Path]:
    """Every ``trace`` value of ``scenario`` and the file it names (relative values are
    resolved against ``base_dir``, as the core resolves them)."""
    return {value: Path(base_dir, value) for value in _trace_values(scenario)}


def _with_traces(node: Any, paths: Mapping[str, str]) -> Any:
    if isinstance(node, Mapping):
        return {
            key: (
                paths[value]
                if key == "trace" and isinstance(value, str)
                else _with_traces(value, paths)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_with_traces(value, paths) for value in node]
    return node


def node_cache() -> Path:
    """This node's directory of shipped traces (created if missing)."""
    directory = Path(tempfile.gettempdir()) / CACHE_NAME
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def localise(
    scenario: Mapping[str, Any],
    hashes: Mapping[str, str],
    fetch: Callable[[str], bytes],
    cache: Path,
) -> dict[str, Any]:
    """``scenario`` with each ``trace`` value (a key of ``hashes``, value its sha256)
    replaced by the path of the node-local copy, ``cache/<sha256>/<file name>``;
    ``fetch(sha256)`` gives the bytes of a trace not yet there. A fetched file whose hash
    differs is refused."""
    paths = {}
    for value, digest in hashes.items():
        # Under its hash, with its own name: the results name a link's trace file.
        folder = cache / digest
        local = folder / Path(value).name
        if not local.is_file():
            data = fetch(digest)
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError(f"shipped trace {value}: its bytes do not match sha256 {digest}")
            folder.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{local.name}.", suffix=".tmp", dir=folder)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                Path(tmp).replace(local)  # atomic: a concurrent run sees all of it or none
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        paths[value] = os.fspath(local)
    return _with_traces(scenario, paths)
