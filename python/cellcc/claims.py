"""The claims of a catalogue entry (``[[experiment.claims]]``): the schema and its checks.

A claim states one thing the paper says as a check on one metric of the entry's report
(docs/experiments.md, "Claims"):

* ``value``: a label's metric, as the report's table averages it, against the paper's
  number (``paper``, else the matching ``[[experiment.published]]`` row), within a
  tolerance: ±20 % of the paper's number unless the claim gives ``tolerance`` (relative)
  or ``tolerance_abs``;
* ``order``: a label's metric below or above another's (``than``), optionally by a
  ``factor``: ours/theirs < factor (``below``) or > factor (``above``);
* ``ratio``: a label's metric divided by another's against the paper's ratio, within
  the tolerance.

``label`` may list several labels and ``each`` name parameter columns: the claim is then
checked once per label and per value of those columns. ``why`` explains a known
difference in words (no result numbers: those are in the scorecard,
:mod:`cellcc.scorecard`).

:func:`parse_claims` checks a table without running anything (types, unknown keys, the
published rows a ``value`` claim takes its number from); :func:`check_claims` checks it
against the expanded sweep (labels, metrics and parameter columns that exist). Every
error names the file and the key (``experiment.claims[2].metric``) and is raised as
:class:`cellcc.ScenarioError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cellcc._native import ScenarioError

__all__ = [
    "CLAIM_KEYS",
    "DEFAULT_TOLERANCE",
    "KINDS",
    "RELATIONS",
    "Claim",
    "Side",
    "cell_text",
    "check_claims",
    "matches",
    "parse_claims",
    "published_rows",
]

KINDS = ("value", "order", "ratio")
RELATIONS = ("below", "above")
CLAIM_KEYS = (
    "id",
    "text",
    "kind",
    "metric",
    "label",
    "where",
    "each",
    "than",
    "relation",
    "factor",
    "paper",
    "tolerance",
    "tolerance_abs",
    "why",
)
THAN_KEYS = ("label", "where", "metric")
#: Relative tolerance of ``value`` and ``ratio`` claims that do not state their own.
DEFAULT_TOLERANCE = 0.2
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Side:
    """What one side of a claim measures: a label, filters and a metric."""

    label: str
    where: tuple[tuple[str, Any], ...]
    metric: str

    def resolve(self, subject: str) -> Side:
        """This side with the subject's label when it names none."""
        return self if self.label else Side(subject, self.where, self.metric)

    def describe(self, each: Mapping[str, Any] | None = None) -> str:
        filters = [*self.where, *(each or {}).items()]
        if not filters:
            return self.label
        return f"{self.label} [{', '.join(f'{k}={cell_text(v)}' for k, v in filters)}]"


@dataclass(frozen=True)
class Claim:
    """One ``[[experiment.claims]]`` table, checked."""

    index: int
    id: str
    text: str
    kind: str
    metric: str
    labels: tuple[str, ...]
    where: tuple[tuple[str, Any], ...]
    each: tuple[str, ...]
    than: tuple[Side, ...]
    relation: str | None
    factor: float
    paper: float | None
    tolerance: float | None
    tolerance_abs: float | None
    why: str

    @property
    def key(self) -> str:
        return f"experiment.claims[{self.index}]"

    @property
    def threshold(self) -> bool:
        """A value claim with a relation: ours below or above the paper's number."""
        return self.kind == "value" and self.relation is not None

    def tolerance_text(self) -> str:
        if self.kind == "order" or self.threshold:
            return "—"
        if self.tolerance_abs is not None:
            return f"±{self.tolerance_abs:g}"
        return f"±{(self.tolerance or DEFAULT_TOLERANCE) * 100:g} %"


# -- the schema -------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _where(value: Any, fail: Any, key: str) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise fail(key, 'expected a table of parameter columns, e.g. { trace = "..." }')
    for column, wanted in value.items():
        if not (isinstance(wanted, str | Mapping | list) or _number(wanted)):
            raise fail(f"{key}.{column}", "expected a string, a number, a table or a list")
    return tuple(value.items())


def _than(value: Any, claim: Mapping[str, Any], fail: Any, key: str) -> tuple[Side, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise fail(key, "expected a label, a list of labels or a table")
    sides = []
    for i, item in enumerate(items):
        where = f"{key}[{i}]" if isinstance(value, list) else key
        if isinstance(item, str) and item:
            item = {"label": item}
        if not isinstance(item, Mapping):
            raise fail(where, "expected a label or a table with label, where and metric")
        for name in item:
            if name not in THAN_KEYS:
                raise fail(
                    f"{where}.{name}", f"unknown key; expected one of: {', '.join(THAN_KEYS)}"
                )
        # Without a label, the other side is the subject's own label (another metric of
        # the same runs, or the same label elsewhere); without a where, the claim's.
        label, metric = item.get("label", ""), item.get("metric", claim.get("metric"))
        if not isinstance(label, str):
            raise fail(f"{where}.label", "expected a label (a string)")
        if not isinstance(metric, str) or not metric:
            raise fail(f"{where}.metric", "expected a non-empty string")
        filters = item["where"] if "where" in item else claim.get("where")
        side = Side(label, _where(filters, fail, f"{where}.where"), metric)
        if (
            not label
            and side.where == _where(claim.get("where"), fail, "where")
            and (metric == claim.get("metric"))
        ):
            raise fail(where, "compares a label with itself: give another label, where or metric")
        sides.append(side)
    return tuple(sides)


def parse_claims(experiment: Mapping[str, Any], source: str) -> list[Claim]:
    """The ``claims`` of an ``[experiment]`` table, checked (without running anything)."""
    raw = experiment.get("claims", [])
    if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
        raise ScenarioError(f"{source}: experiment.claims: expected an array of tables")
    published = experiment.get("published", [])
    claims: list[Claim] = []
    for i, table in enumerate(raw):
        claims.append(_claim(i, table, source, published if isinstance(published, list) else []))
    seen: set[str] = set()
    for claim in claims:
        if claim.id in seen:
            raise ScenarioError(f"{source}: {claim.key}.id: duplicate id {claim.id!r}")
        seen.add(claim.id)
    return claims


def _claim(index: int, table: Mapping[str, Any], source: str, published: Sequence[Any]) -> Claim:
    prefix = f"experiment.claims[{index}]"

    def fail(key: str, message: str) -> ScenarioError:
        return ScenarioError(
            f"{source}: {key if key.startswith(prefix) else f'{prefix}.{key}'}: {message}"
        )

    for key in table:
        if key not in CLAIM_KEYS:
            raise fail(key, f"unknown key; expected one of: {', '.join(CLAIM_KEYS)}")
    for key in ("id", "text", "kind", "metric"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise fail(key, "missing (a non-empty string)")
    if not _ID.match(table["id"]):
        raise fail("id", "expected lower-case letters, digits and '-', e.g. delay-below-cubic")
    kind = table["kind"]
    if kind not in KINDS:
        raise fail("kind", f"expected one of: {', '.join(KINDS)}")
    labels = table.get("label")
    labels = [labels] if isinstance(labels, str) else labels
    if (
        not isinstance(labels, list)
        or not labels
        or not all(isinstance(x, str) and x for x in labels)
    ):
        raise fail("label", "missing (a label of the entry's schemes, or a list of them)")
    each = table.get("each", [])
    if not isinstance(each, list) or not all(isinstance(x, str) and x for x in each):
        raise fail("each", 'expected a list of parameter columns, e.g. ["scheduling.preset"]')
    where = _where(table.get("where"), fail, f"{prefix}.where")
    if set(each) & {k for k, _ in where}:
        raise fail("each", "a column is both in where and in each")
    # A value claim with a relation is a threshold: ours below or above the paper's number.
    threshold = kind == "value" and "relation" in table
    wanted = {"than": kind != "value", "relation": kind != "ratio", "factor": kind == "order"}
    wanted |= {"paper": kind != "order", "tolerance": kind != "order" and not threshold}
    wanted["tolerance_abs"] = wanted["tolerance"]
    for key, allowed in wanted.items():
        if key in table and not allowed:
            what = f"{'an' if kind == 'order' else 'a'} {kind} claim"
            if threshold:
                what = "a threshold (a value claim with a relation)"
            raise fail(key, f"does not apply to {what}")
    than = _than(table["than"], table, fail, f"{prefix}.than") if "than" in table else ()
    if kind != "value" and not than:
        raise fail("than", f"missing: a {kind} claim compares with another label")
    relation = table.get("relation")
    if (kind == "order" or threshold) and relation not in RELATIONS:
        raise fail("relation", f"expected one of: {', '.join(RELATIONS)}")
    factor = table.get("factor", 1.0)
    if not _number(factor) or factor <= 0:
        raise fail("factor", f"expected a number > 0, got {factor!r}")
    paper = table.get("paper")
    if paper is not None and not _number(paper):
        raise fail("paper", f"expected a number, got {paper!r}")
    tolerance, tolerance_abs = table.get("tolerance"), table.get("tolerance_abs")
    if tolerance is not None and tolerance_abs is not None:
        raise fail("tolerance_abs", "give either tolerance (relative) or tolerance_abs")
    for key, value in (("tolerance", tolerance), ("tolerance_abs", tolerance_abs)):
        if value is not None and (not _number(value) or value <= 0):
            raise fail(key, f"expected a number > 0, got {value!r}")
    why = table.get("why", "")
    if not isinstance(why, str):
        raise fail("why", "expected a string")
    if kind != "order" and paper is None:
        # The paper's number comes from the published rows: of the label for a value,
        # of both sides for a ratio.
        sides = [(label, where, table["metric"]) for label in labels]
        if kind == "ratio":
            resolved = [side.resolve(label) for label in labels for side in than]
            sides += [(side.label, side.where, side.metric) for side in resolved]
        for label, filters, metric in sides:
            rows = published_rows(published, label, dict(filters), metric)
            what = f"{metric} for {label!r}" + (f" with {_filters(filters)}" if filters else "")
            if not rows:
                raise fail(
                    "paper",
                    f"no [[experiment.published]] row gives {what}; "
                    f"add paper = <the paper's {'ratio' if kind == 'ratio' else 'number'}>",
                )
            if len(rows) > 1 and not each:
                raise fail(
                    "paper", f"{len(rows)} published rows give {what}: narrow it with where or each"
                )
    return Claim(
        index=index,
        id=table["id"],
        text=table["text"],
        kind=kind,
        metric=table["metric"],
        labels=tuple(labels),
        where=where,
        each=tuple(each),
        than=than,
        relation=relation,
        factor=float(factor),
        paper=None if paper is None else float(paper),
        tolerance=None if tolerance is None else float(tolerance),
        tolerance_abs=None if tolerance_abs is None else float(tolerance_abs),
        why=why.strip(),
    )


def _filters(where: Sequence[tuple[str, Any]]) -> str:
    return ", ".join(f"{k}={cell_text(v)}" for k, v in where)


def cell_text(value: Any) -> str:
    """A parameter value as text: 5.0 as ``5``, tables and lists as compact JSON (as the
    results store them)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def matches(cell: Any, wanted: Any) -> bool:
    """A parameter cell against a ``where`` value: equal as text (5 and 5.0 alike, a list
    as its JSON); a table matches a table-valued cell (JSON text in results) that holds
    its keys with those values (``{ speed_kmh = 200 }``)."""
    if isinstance(wanted, Mapping):
        try:
            value = json.loads(cell) if isinstance(cell, str) else cell
        except ValueError:
            return False
        return isinstance(value, Mapping) and all(
            k in value and cell_text(value[k]) == cell_text(v) for k, v in wanted.items()
        )
    return cell_text(cell) == cell_text(wanted)


def published_rows(
    published: Sequence[Any], label: str, where: Mapping[str, Any], metric: str
) -> list[Mapping[str, Any]]:
    """The published rows of ``label`` that give ``metric`` and match ``where``."""
    return [
        row
        for row in published
        if isinstance(row, Mapping)
        and row.get("label", label) == label
        and _number(row.get(metric))
        and all(k in row and matches(row[k], v) for k, v in where.items())
    ]


def check_claims(claims: Sequence[Claim], sweep: Any, options: Mapping[str, Any]) -> None:
    """Check the claims against the expanded sweep: labels, metrics and parameter
    columns that exist; ``where`` values some run has (unless the sweep is ``--quick``,
    which may leave grid values out)."""
    labels = list(dict.fromkeys(str(r.params.get("label")) for r in sweep.runs))
    metrics = list(options["metrics"])
    columns = list(sweep.param_columns)

    def fail(claim: Claim, key: str, message: str) -> ScenarioError:
        return ScenarioError(f"{sweep.source}: {claim.key}.{key}: {message}")

    for claim in claims:
        sides = [("label", Side(label, claim.where, claim.metric)) for label in claim.labels]
        for label in claim.labels:
            sides += [("than", other.resolve(label)) for other in claim.than]
        for which, side in sides:
            if side.label not in labels:
                raise fail(
                    claim,
                    which,
                    f"unknown label {side.label!r}; expected one of: {', '.join(labels)}",
                )
            if side.metric not in metrics:
                raise fail(
                    claim,
                    "metric" if which == "label" else "than.metric",
                    f"{side.metric!r} is not a metric of the report; "
                    f"expected one of: {', '.join(metrics)}",
                )
            for column, wanted in side.where:
                if column not in columns:
                    raise fail(
                        claim,
                        f"where.{column}",
                        f"not a parameter column; expected one of: {', '.join(columns)}",
                    )
                runs = [r for r in sweep.runs if r.params.get("label") == side.label]
                if not sweep.quick and not any(
                    matches(_cell(r.params.get(column)), wanted) for r in runs
                ):
                    raise fail(
                        claim,
                        f"where.{column}",
                        f"no run of {side.label!r} has {column} = {cell_text(wanted)}",
                    )
        for column in claim.each:
            if column not in columns or column == "label":
                raise fail(
                    claim,
                    "each",
                    f"{column!r} is not a parameter column; expected one of: {', '.join(columns)}",
                )


def _cell(value: Any) -> Any:
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value
