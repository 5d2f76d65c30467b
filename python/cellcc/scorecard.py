"""Reproduction scorecards: each catalogue entry's claims (:mod:`cellcc.claims`)
checked against our runs.

One row per claim, label, ``each`` value and compared label: our number (a value, or
the ratio of the two sides' numbers), its 95 % interval (:mod:`cellcc.intervals`), the
paper's number or the ordering it states, the tolerance, whether the paper's number
lies in our interval, and whether the claim holds. A claim holds when it holds on the
point estimate. The report shows the scorecard first; ``scorecard.json`` keeps it next
to the results, and docs/reproduction.md is rendered from those files
(:mod:`cellcc.reproduction`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cellcc import intervals
from cellcc.claims import DEFAULT_TOLERANCE, Claim, Side, cell_text, matches, published_rows

__all__ = [
    "METHOD",
    "SCORECARD_FILE",
    "UNIT_COLUMNS",
    "claim_text",
    "compared_text",
    "counts",
    "display_frame",
    "evaluate",
    "mark",
    "number_text",
    "ours_text",
    "paper_text",
]

SCORECARD_FILE = "scorecard.json"
#: Columns that tell apart the runs a report row averages (paired across a comparison).
UNIT_COLUMNS = ("trace", "direction", "seed")
#: How the scorecard is made, shown with every scorecard.
METHOD = (
    "A claim holds when it holds on our point estimate (the report's mean over the runs, "
    f"or its percentile). Value and ratio claims allow ±{DEFAULT_TOLERANCE * 100:g} % of the "
    "paper's number unless they state another tolerance. 95 % intervals: over the runs "
    "a number averages when there are two or more (t-interval of the mean; order "
    "statistics for a percentile over runs), else over ten equal phases of the one run's "
    "time series (batch means: the phases' t half-width around the run's value; a delay "
    "percentile per phase from the time-series bins' mean delays). Ratios: delta method "
    "on the log scale, paired when both sides have the same runs or phases; a percentile "
    "bootstrap when a side is a percentile over runs."
)


# -- evaluation -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Frame:
    """What every claim of one entry is evaluated on."""

    rows: pd.DataFrame
    """Flow 0 of every run, after the report's derived metrics."""
    group: tuple[str, ...]
    normalise_to: str | None
    context: tuple[str, ...]
    unit_columns: tuple[str, ...]
    phases: pd.DataFrame | None
    no_phases: frozenset[str]


def evaluate(
    claims: Sequence[Claim],
    results: pd.DataFrame,
    *,
    group: Sequence[str] = ("label",),
    normalise_to: str | None = None,
    context: Sequence[str] = (),
    published: Sequence[Mapping[str, Any]] = (),
    phases: pd.DataFrame | None = None,
    no_phases: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One scorecard row per claim, label, ``each`` value and compared label.

    ``results``: the sweep's rows as the report's table reads them (derived metrics
    added, normalised by a ``loss`` view); ``normalise_to`` and ``context`` as the
    table's; ``phases``: every run's phase table (:func:`cellcc.intervals.phase_table`
    with ``run_index``, derived metrics in flow 0's rows); ``no_phases``: metrics whose
    values were normalised across runs, which phases of one run cannot estimate.
    """
    rows = results
    if "flow" in rows.columns:
        rows = rows[rows["flow"] == 0]
    rows = rows.reset_index(drop=True)
    units = [c for c in dict.fromkeys([*UNIT_COLUMNS, *context]) if c in rows.columns]
    frame = _Frame(
        rows=rows,
        group=tuple(group),
        normalise_to=normalise_to,
        context=tuple(context),
        unit_columns=tuple(units),
        phases=phases,
        no_phases=frozenset(no_phases),
    )
    out = []
    for claim in claims:
        for label in claim.labels:
            for combo in _combos(frame.rows, claim, label):
                out += _rows(claim, label, combo, frame, published)
    return out


def _combos(rows: pd.DataFrame, claim: Claim, label: str) -> list[dict[str, Any]]:
    if not claim.each:
        return [{}]
    chosen = _select(rows, label, claim.where)
    columns = [c for c in claim.each if c in chosen.columns]
    if chosen.empty or len(columns) < len(claim.each):
        return [{}]
    combos = chosen[columns].astype(object).drop_duplicates()
    return [dict(zip(columns, values, strict=True)) for values in combos.itertuples(index=False)]


def _select(rows: pd.DataFrame, label: str, filters: Sequence[tuple[str, Any]]) -> pd.DataFrame:
    if "label" not in rows.columns:
        return rows.iloc[0:0]
    mask = rows["label"].astype(str) == label
    for column, wanted in filters:
        if column not in rows.columns:
            return rows.iloc[0:0]
        mask &= rows[column].map(lambda cell, w=wanted: matches(cell, w)).astype(bool)
    return rows[mask]


def _side(
    frame: _Frame, side: Side, combo: Mapping[str, Any], paired_on: Sequence[str]
) -> tuple[float, intervals.Units | None]:
    """The point estimate of one side and the units of its interval."""
    from cellcc.sweep_views import percentile_metric

    chosen = _select(frame.rows, side.label, [*side.where, *combo.items()])
    column, percentile = percentile_metric(side.metric) or (side.metric, None)
    if chosen.empty or column not in chosen.columns:
        return math.nan, None
    values = pd.to_numeric(chosen[column], errors="coerce")
    normalised = frame.normalise_to is not None
    if normalised:
        values = values / _reference(frame, column, chosen)
    keep = values.notna() & np.isfinite(values)
    chosen, values = chosen[keep], values[keep].to_numpy(dtype=float)
    if values.size == 0:
        return math.nan, None
    point = (
        float(np.quantile(values, percentile / 100.0))
        if percentile is not None
        else float(values.mean())
    )
    if values.size >= 2:
        keys = [tuple(cell_text(chosen.iloc[i][c]) for c in paired_on) for i in range(len(chosen))]
        order = sorted(range(len(keys)), key=lambda i: keys[i])
        return point, intervals.Units(
            values[order], tuple(keys[i] for i in order), "runs", percentile
        )
    phases = frame.phases
    if (
        normalised
        or side.metric in frame.no_phases
        or phases is None
        or phases.empty
        or column not in phases.columns
        or "run_index" not in chosen.columns
    ):
        return point, None
    run = chosen["run_index"].iloc[0]
    part = phases[(phases["run_index"] == run) & (phases["flow"] == 0)].sort_values("phase")
    series = pd.to_numeric(part[column], errors="coerce")
    part = part[series.notna() & np.isfinite(series)]
    if len(part) < 2:
        return point, None
    return point, intervals.Units(
        pd.to_numeric(part[column]).to_numpy(dtype=float),
        tuple(int(p) for p in part["phase"]),
        "phases",
    )


def _reference(frame: _Frame, column: str, chosen: pd.DataFrame) -> pd.Series:
    """The ``normalise_to`` label's value in each chosen row's context (as the table)."""
    rows = frame.rows
    reference = rows[rows["label"].astype(str) == frame.normalise_to]
    keys = [c for c in frame.context if c in rows.columns and c not in frame.group]
    values = pd.to_numeric(reference[column], errors="coerce")
    if not keys:
        return pd.Series(float(values.mean()), index=chosen.index)
    means = reference.assign(__v=values).groupby(keys, dropna=False)["__v"].mean()
    index = pd.MultiIndex.from_frame(chosen[keys]) if len(keys) > 1 else chosen[keys[0]]
    return pd.Series(means.reindex(index).to_numpy(dtype=float), index=chosen.index)


def _rows(
    claim: Claim,
    label: str,
    combo: Mapping[str, Any],
    frame: _Frame,
    published: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    subject = Side(label, claim.where, claim.metric)
    filtered = (
        {k for k, _ in claim.where} | set(combo) | {k for s in claim.than for k, _ in s.where}
    )
    paired_on = [c for c in frame.unit_columns if c not in filtered]
    point, units = _side(frame, subject, combo, paired_on)
    base = {
        "id": claim.id,
        "claim": claim.text,
        "kind": claim.kind,
        "metric": claim.metric,
        "subject": subject.describe(),
        "each": ", ".join(f"{k}={cell_text(v)}" for k, v in combo.items()),
        "tolerance": claim.tolerance_text(),
        "why": claim.why,
    }
    if claim.kind == "value":
        paper = claim.paper
        if paper is None:
            paper = _paper_number(published, subject, combo)
        interval = _interval(units, point)
        return [base | _verdict(claim, point, interval, paper)]
    out = []
    for other in (side.resolve(label) for side in claim.than):
        theirs, their_units = _side(frame, other, combo, paired_on)
        ratio = _ratio(point, theirs)
        interval = None
        if units is not None and their_units is not None and math.isfinite(ratio):
            interval = intervals.ratio_interval(units, their_units, ratio)
        row = base | {
            "reference": other.describe(),
            "reference_metric": other.metric,
            "ours_subject": _finite(point),
            "ours_reference": _finite(theirs),
        }
        paper = claim.paper
        if paper is None and claim.kind == "ratio":
            a, b = _paper_number(published, subject, combo), _paper_number(published, other, combo)
            paper = a / b if a is not None and b else None
        out.append(row | _verdict(claim, ratio, interval, paper))
    return out


def _paper_number(
    published: Sequence[Mapping[str, Any]], side: Side, combo: Mapping[str, Any]
) -> float | None:
    """The published value of ``side``'s metric, if exactly one row gives it."""
    rows = published_rows(published, side.label, dict(side.where) | dict(combo), side.metric)
    return float(rows[0][side.metric]) if len(rows) == 1 else None


def _interval(units: intervals.Units | None, point: float) -> intervals.Interval | None:
    if units is None:
        return None
    if units.percentile is not None:
        return intervals.quantile_interval(units, point)
    return intervals.mean_interval(units, point)


def _ratio(ours: float, theirs: float) -> float:
    if not (math.isfinite(ours) and math.isfinite(theirs)):
        return math.nan
    if theirs == 0:
        return math.inf if ours > 0 else math.nan
    return ours / theirs


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _verdict(
    claim: Claim, ours: float, interval: intervals.Interval | None, paper: float | None
) -> dict[str, Any]:
    """Whether the claim holds on ``ours``, and the interval's fields."""
    holds: bool | None = None
    if claim.kind == "order":
        if not math.isnan(ours):
            holds = ours < claim.factor if claim.relation == "below" else ours > claim.factor
    elif claim.threshold:
        if paper is not None and not math.isnan(ours):
            holds = ours < paper if claim.relation == "below" else ours > paper
    elif paper is not None and math.isfinite(ours):
        allowed = claim.tolerance_abs
        if allowed is None:
            allowed = (claim.tolerance or DEFAULT_TOLERANCE) * abs(paper)
        holds = abs(ours - paper) <= allowed
    in_ci = None
    if claim.kind != "order" and not claim.threshold and interval is not None and paper is not None:
        in_ci = interval.contains(paper)
    return {
        "ours": ours if not math.isnan(ours) else None,
        "ci_low": None if interval is None else interval.low,
        "ci_high": None if interval is None else interval.high,
        "ci_method": None if interval is None else interval.method,
        "ci_n": None if interval is None else interval.n,
        "paper": paper,
        "relation": claim.relation,
        "factor": claim.factor if claim.kind == "order" else None,
        "threshold": claim.threshold,
        "holds": holds,
        "paper_in_ci": in_ci,
    }


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many scorecard rows hold, fail, and could not be evaluated."""
    verdicts = [row.get("holds") for row in rows]
    return {
        "claims": len(verdicts),
        "hold": sum(v is True for v in verdicts),
        "fail": sum(v is False for v in verdicts),
        "not_evaluated": sum(v is None for v in verdicts),
    }


# -- presentation -----------------------------------------------------------------------


def number_text(value: float | None) -> str:
    """3 significant digits (whole numbers from 100 on, never an exponent above 1)."""
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2g}"
    return f"{value:.3g}"


def mark(holds: bool | None) -> str:
    """✔, ✘, or — for a claim we could not evaluate (no runs of a label, say)."""
    return "—" if holds is None else ("✔" if holds else "✘")


def ours_text(row: Mapping[str, Any]) -> str:
    """``3.80 [3.10, 4.50]`` for a value; ``0.45× [0.30, 0.60]`` for a ratio."""
    suffix = "" if row["kind"] == "value" else "×"
    shown = number_text(row.get("ours")) + (suffix if row.get("ours") is not None else "")
    if row.get("ci_low") is not None:
        shown += f" [{number_text(row['ci_low'])}, {number_text(row['ci_high'])}]"
    return shown


def paper_text(row: Mapping[str, Any]) -> str:
    """The paper's number (``4.24``, a ratio ``1.39×``), or what the claim requires of
    ours: ``< 1×`` (an order), ``> 0.5`` (a threshold)."""
    sign = {"below": "< ", "above": "> "}.get(str(row.get("relation")), "")
    if row["kind"] == "order":
        return f"{sign}{number_text(row.get('factor'))}×"
    if row.get("paper") is None:
        return "—"
    return sign + number_text(row["paper"]) + ("×" if row["kind"] == "ratio" else "")


def ci_text(row: Mapping[str, Any]) -> str:
    """What the interval is over: ``12 runs``, ``10 phases``; — without one."""
    method = row.get("ci_method")
    if method is None:
        return "—"
    what = {"runs": "runs", "phases": "phases", "bootstrap": "runs, bootstrap"}
    return f"{row['ci_n']} {what.get(method, method)}"


def compared_text(row: Mapping[str, Any]) -> str:
    """What a row measures: ``cesar vs bbr; scheduling.preset=lte-fdd-sr5``."""
    text = row["subject"] + (f" vs {row['reference']}" if row.get("reference") else "")
    return text + (f"; {row['each']}" if row.get("each") else "")


def claim_text(row: Mapping[str, Any]) -> str:
    """The claim in words, then what is measured: ``(cesar vs bbr; preset=...)``."""
    return f"{row['claim']} ({compared_text(row)})"


def display_frame(rows: Sequence[Mapping[str, Any]], *, why: bool = True) -> pd.DataFrame:
    """The scorecard as a table of text: claim, metric, ours [95 % CI], CI over, paper,
    tolerance, whether the paper's number is in the interval, holds (and why)."""
    records = []
    previous = None
    for row in rows:
        # A claim checked on several labels or values: its words once, then 〃.
        shown = claim_text(row)
        if row["id"] == previous:
            shown = "〃" + shown[len(row["claim"]) :]
        previous = row["id"]
        record = {
            "claim": shown,
            "metric": row["metric"]
            + (
                f" / {row['reference_metric']}"
                if row.get("reference_metric") not in (None, row["metric"])
                else ""
            ),
            "ours [95 % CI]": ours_text(row),
            "CI over": ci_text(row),
            "paper": paper_text(row),
            "tolerance": row["tolerance"],
            "paper in CI": "—" if row.get("paper_in_ci") is None else mark(row["paper_in_ci"]),
            "holds": mark(row.get("holds")),
        }
        if why:  # a known difference is explained where the claim does not hold
            record["why"] = row.get("why", "") if row.get("holds") is False else ""
        records.append(record)
    return pd.DataFrame.from_records(records)


# -- a sweep's scorecard ----------------------------------------------------------------


def phase_metrics(
    phases: pd.DataFrame | None,
    results: pd.DataFrame,
    series: pd.DataFrame | None = None,
    window: Sequence[float | None] | None = None,
) -> pd.DataFrame | None:
    """Every run's phase table with the derived metrics (Jain's index, shares, ``flow<i>
    _mbps``) in flow 0's rows: from the kept time series when there are (over the
    report's ``window``, as its derived metrics), else the runs' recorded phases."""
    from cellcc.sweep_views import derive

    if series is not None and not series.empty and "run_index" in series.columns:
        parts = []
        for run, part in series.groupby("run_index", sort=False):
            flows = results[(results["run_index"] == run) & (results["flow"] >= 0)]
            starts = dict(
                zip(flows["flow"].astype(int), flows["start_s"].astype(float), strict=True)
            )
            table = intervals.phase_table(part, window=window, starts=starts)
            parts += table.assign(run_index=run).to_dict(orient="records")
        phases = pd.DataFrame.from_records(parts)
    if phases is None or phases.empty or "start_s" not in results.columns:
        return phases
    starts = results.loc[results["flow"] >= 0, ["run_index", "flow", "start_s"]]
    frame = phases.drop(columns=["start_s", "end_s"], errors="ignore").merge(
        starts, on=["run_index", "flow"], how="left"
    )
    frame["__run"] = frame["run_index"]
    frame["run_index"] = frame["run_index"].astype(int) * intervals.PHASES + frame["phase"].astype(
        int
    )
    derived = derive(frame.reset_index(drop=True))
    derived["run_index"] = derived.pop("__run")
    return derived


def for_sweep(
    sweep: Any,
    results: pd.DataFrame,
    out: Any,
    *,
    options: Mapping[str, Any],
    context: Sequence[str],
    series: pd.DataFrame | None,
    window: Sequence[float | None] | None,
) -> list[dict[str, Any]] | None:
    """Evaluate the sweep's claims on ``results`` (as the report's table reads them) and
    write ``scorecard.json`` into ``out``; None when the sweep states no claims."""
    from pathlib import Path

    from cellcc.claims import check_claims, parse_claims
    from cellcc.results import write_json_atomic
    from cellcc.runner import PHASES_FILE

    claims = parse_claims(sweep.experiment, sweep.source)
    folder = Path(out)
    if not claims:
        (folder / SCORECARD_FILE).unlink(missing_ok=True)  # none left from an earlier run
        return None
    check_claims(claims, sweep, options)
    recorded = folder / PHASES_FILE
    phases = pd.read_parquet(recorded) if recorded.is_file() else None
    normalised = [*options["metrics"], *options.get("y", [])] if "loss" in options["views"] else []
    rows = evaluate(
        claims,
        results,
        group=options["group"],
        normalise_to=options.get("normalise_to"),
        context=context,
        published=sweep.experiment.get("published", []),
        phases=phase_metrics(phases, results, series, window if series is not None else None),
        no_phases=normalised,
    )
    write_json_atomic(
        folder / SCORECARD_FILE,
        {
            "name": sweep.name,
            "paper": sweep.experiment.get("paper"),
            "figure": sweep.experiment.get("figure"),
            "notes": sweep.experiment.get("notes", ""),
            "quick": sweep.quick,
            "confidence": intervals.CONFIDENCE,
            "phases": intervals.PHASES,
            "default_tolerance": DEFAULT_TOLERANCE,
            "method": METHOD,
            "counts": counts(rows),
            "claims": rows,
        },
    )
    return rows


def section(rows: Sequence[Mapping[str, Any]], *, quick: bool) -> Any:
    """The report's first section: the scorecard table and how it is made."""
    from cellcc.report import Section

    tally = counts(rows)
    title = f"Scorecard: {tally['hold']} of {tally['claims']} claims hold"
    if tally["not_evaluated"]:
        title += f" ({tally['not_evaluated']} not evaluated)"
    note = " These are --quick runs: shorter, fewer seeds or grid points." if quick else ""
    return Section(title=title, description=METHOD + note, table=display_frame(rows), columns=None)
