"""The catalogue of reproduced experiments: ``experiments/*.toml``, shipped as package data.

The files live in ``cellcc/data/experiments`` (``experiments/`` at the top of a checkout
links there), so an installed wheel carries the same catalogue as the repository.

Each file is a sweep (docs/experiments.md) with an ``[experiment]`` table naming the
``paper``, the ``figure`` or table, a ``description`` and optionally the ``published``
numbers to show next to ours, the paper's ``claims`` as checks (:mod:`cellcc.claims`),
and a ``[report]`` table choosing the view. The file stem is the experiment's id
(``cellcc reproduce c2tcp-jsac-table1``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cellcc import _toml
from cellcc._native import ScenarioError, UsageError
from cellcc.claims import parse_claims

__all__ = ["CATALOGUE_ENV", "Entry", "catalogue_dir", "entries", "examples_dir", "find"]

#: Environment variable naming another catalogue directory.
CATALOGUE_ENV = "CELLCC_EXPERIMENTS"
EXPERIMENT_KEYS = ("paper", "figure", "description", "published", "notes", "claims")
REQUIRED_KEYS = ("paper", "figure", "description")


@dataclass(frozen=True)
class Entry:
    """One catalogue file."""

    id: str
    path: Path
    paper: str
    figure: str
    description: str
    view: str
    claims: int = 0
    """How many claims the entry states (``[[experiment.claims]]``)."""


def catalogue_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The catalogue: ``directory``, else ``$CELLCC_EXPERIMENTS``, else the package's own
    ``data/experiments`` (in a checkout or an installed wheel alike)."""
    if directory is not None:
        return Path(directory)
    if os.environ.get(CATALOGUE_ENV):
        return Path(os.environ[CATALOGUE_ENV])
    return _package_data("experiments")


def examples_dir() -> Path:
    """The example scenarios shipped with the package (``examples/`` in a checkout)."""
    return _package_data("examples")


def _package_data(name: str) -> Path:
    # Wheels install the package as plain files, so the traversable is a real directory
    # (zip imports are not supported: the runner hands these paths to the Rust core).
    return Path(os.fspath(resources.files("cellcc") / "data" / name))


def _entry(path: Path) -> Entry:
    try:
        spec = tomllib.loads(_toml.read_text(path, "experiment"))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: invalid TOML: {exc}") from None
    experiment = spec.get("experiment")
    if not isinstance(experiment, dict):
        raise ScenarioError(f"{path}: experiment: missing the [experiment] table")
    for key in experiment:
        if key not in EXPERIMENT_KEYS:
            raise ScenarioError(
                f"{path}: experiment.{key}: unknown key; expected one of: "
                f"{', '.join(EXPERIMENT_KEYS)}"
            )
    for key in REQUIRED_KEYS:
        if not isinstance(experiment.get(key), str) or not experiment[key]:
            raise ScenarioError(f"{path}: experiment.{key}: missing (a non-empty string)")
    published = experiment.get("published", [])
    if not isinstance(published, list) or not all(isinstance(p, dict) for p in published):
        raise ScenarioError(f"{path}: experiment.published: expected an array of tables")
    claims = parse_claims(experiment, str(path))
    report: Any = spec.get("report", {})
    view = report.get("view", "table") if isinstance(report, dict) else "table"
    if isinstance(view, list):  # several views, drawn in order
        view = "+".join(str(v) for v in view)
    return Entry(
        id=path.stem,
        path=path,
        paper=experiment["paper"],
        figure=experiment["figure"],
        description=experiment["description"],
        view=str(view),
        claims=len(claims),
    )


def entries(directory: str | os.PathLike[str] | None = None) -> list[Entry]:
    """Every experiment of the catalogue, sorted by id."""
    root = catalogue_dir(directory)
    if not root.is_dir():
        raise UsageError(
            f"{root}: no experiment catalogue here; pass --catalogue DIR or set {CATALOGUE_ENV}"
        )
    return [_entry(path) for path in sorted(root.glob("*.toml"))]


def find(experiment_id: str, directory: str | os.PathLike[str] | None = None) -> Entry:
    """The experiment called ``experiment_id``; the error lists the known ids."""
    known = entries(directory)
    for entry in known:
        if entry.id == experiment_id:
            return entry
    raise UsageError(
        f"ID: unknown experiment {experiment_id!r}; expected one of: "
        f"{', '.join(e.id for e in known)}"
    )
