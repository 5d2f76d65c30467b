"""The results of ``cellcc reproduce``: the index page and docs/reproduction.md.

``cellcc reproduce`` leaves one folder per experiment in its ``--out`` directory (the
report, ``table.csv``, ``scorecard.json`` and ``index-entry.json``: the row the index
shows, with the entry's measured wall time). :func:`write_index` links them all, under
one scorecard of every claim. :func:`render_docs` turns the same folders into
docs/reproduction.md (``cellcc experiments docs``): per entry its scorecard, its table
next to the paper's numbers, the known differences (each claim's ``why``) and its wall
time, inside the static text of ``data/reproduction.md``. No number in that file is
typed by hand.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from cellcc import scorecard
from cellcc._native import UsageError
from cellcc.report import REPORT_FILE, Section, write_report
from cellcc.results import PROVENANCE_FILE, write_json_atomic, write_text_atomic

__all__ = [
    "INDEX_ENTRY_FILE",
    "TEMPLATE",
    "index_entries",
    "read_scorecard",
    "render_docs",
    "write_index",
]

#: Written beside each experiment's report by :func:`write_index`: the row the index
#: shows for it, so a later ``reproduce`` into the same directory can list it again.
INDEX_ENTRY_FILE = "index-entry.json"
#: The static text of docs/reproduction.md, with the generated parts as placeholders.
TEMPLATE = "reproduction.md"
_PLACEHOLDERS = ("{{summary}}", "{{entries}}", "{{missing}}", "{{provenance}}")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def read_scorecard(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """An experiment folder's ``scorecard.json`` ({} if it has none)."""
    return _read_json(Path(folder) / scorecard.SCORECARD_FILE)


def index_entries(
    out_dir: str | os.PathLike[str], entries: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Every experiment in ``out_dir``, sorted by id: ``entries`` (this invocation's,
    each recorded in its folder's ``index-entry.json``) and every other folder with a
    report, from its recorded entry or, if it has none, by its id alone."""
    root = Path(out_dir)
    current: dict[str, dict[str, Any]] = {}
    for entry in entries:
        given = dict(entry)
        page = Path(given["report"])
        record = {k: v for k, v in given.items() if k != "report"} | {"report": page.name}
        write_json_atomic(page.parent / INDEX_ENTRY_FILE, record)
        current[str(given["id"])] = given
    found: dict[str, dict[str, Any]] = {}
    for page in sorted(root.glob(f"*/{REPORT_FILE}")):
        folder = page.parent
        if folder.name in current or not (folder / PROVENANCE_FILE).is_file():
            continue
        row: dict[str, Any] = {"id": folder.name}
        recorded = _read_json(folder / INDEX_ENTRY_FILE)
        row |= {k: v for k, v in recorded.items() if k not in ("id", "report")}
        row["report"] = page
        found[folder.name] = row
    merged = found | current
    return [merged[key] for key in sorted(merged)]


def _all_claims(root: Path, entries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Every experiment's scorecard rows, the experiment first."""
    frames = []
    for entry in entries:
        rows = read_scorecard(Path(entry["report"]).parent).get("claims") or []
        if rows:
            frame = scorecard.display_frame(rows, why=False)
            frame.insert(0, "experiment", entry["id"])
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_index(
    out_dir: str | os.PathLike[str],
    entries: Sequence[Mapping[str, Any]],
    *,
    command: str,
    provenance_record: Mapping[str, Any],
) -> Path:
    """An index page linking the report of every experiment in ``out_dir``: ``entries``
    (this invocation's) and those earlier invocations left there (:func:`index_entries`),
    under the scorecard of every claim of them all."""
    import html

    root = Path(out_dir)
    entries = index_entries(root, entries)
    frame = pd.DataFrame.from_records(
        [{k: v for k, v in e.items() if k != "report"} for e in entries]
    )
    links = " · ".join(
        f'<a href="{html.escape(os.path.relpath(e["report"], root))}">{html.escape(e["id"])}</a>'
        for e in entries
    )
    sections = []
    claims = _all_claims(root, entries)
    if not claims.empty:
        held = int((claims["holds"] == "✔").sum())
        sections.append(
            Section(
                title=f"Scorecard: {held} of {len(claims)} claims hold",
                description=scorecard.METHOD,
                table=claims,
                columns=None,
            )
        )
    sections.append(
        Section(
            title="Experiments",
            description="Each experiment's report shows our numbers next to the published ones.",
            commands=[("Regenerate everything:", command)],
            table=frame,
            columns=None,
        )
    )
    page = write_report(
        root,
        title="cellcc: reproduced experiments",
        sections=sections,
        provenance_record=provenance_record,
        intro="",
    )
    text = page.read_text(encoding="utf-8").replace("</h1>", f"</h1>\n<p>Reports: {links}</p>", 1)
    return write_text_atomic(page, text)


# -- docs/reproduction.md ---------------------------------------------------------------


def _cell(value: Any) -> str:
    """A Markdown table cell: numbers to 3 significant digits, pipes escaped."""
    if isinstance(value, float):
        text = scorecard.number_text(None if pd.isna(value) else value)
    elif value is None or value is pd.NA:
        text = "—"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(_cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(_cell(v) for v in record) + " |"
        for record in frame.astype(object).itertuples(index=False)
    ]
    return "\n".join([head, rule, *body])


def _results_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table.csv`` with each metric that has a published value as ``ours (paper)``."""
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        name = str(column)
        if name.endswith(" (paper)"):
            continue
        paper = f"{name} (paper)"
        if paper not in table.columns:
            out[name] = table[column]
            continue
        out[f"{name}, ours (paper)"] = [
            f"{_cell(ours)} ({_cell(theirs)})" if not pd.isna(theirs) else _cell(ours)
            for ours, theirs in zip(table[column], table[paper], strict=True)
        ]
    return out


def _seconds(value: Any) -> str:
    return "—" if not isinstance(value, int | float) else f"{value:.1f} s"


def _wall_time(timing: Mapping[str, Any]) -> str:
    """``34.3 s for 36 runs (2 jobs); 38.0 s with the report``."""
    runs, cached = timing.get("runs"), timing.get("cached") or 0
    text = f"{_seconds(timing.get('wall_s'))} for {runs} runs"
    details = []
    if timing.get("jobs"):
        details.append(f"{timing['jobs']} jobs")
    if cached:
        details.append(f"{cached} of them cached, not run")
    if details:
        text += f" ({', '.join(details)})"
    if isinstance(timing.get("end_to_end_s"), int | float):
        text += f"; {_seconds(timing['end_to_end_s'])} with the report"
    return text


def _entry_section(entry: Any, folder: Path) -> str:
    card = read_scorecard(folder)
    timing = _read_json(folder / INDEX_ENTRY_FILE)
    rows = card.get("claims") or []
    tally = scorecard.counts(rows)
    parts = [f"## {entry.paper}: {entry.figure} (`{entry.id}`)", "", entry.description + "."]
    notes = str(card.get("notes") or "")
    if notes:
        parts += ["", f"*Setup:* {notes}"]
    verdict = f"**Scorecard: {tally['hold']} of {tally['claims']} claims hold**"
    if tally["not_evaluated"]:
        verdict += f" ({tally['not_evaluated']} not evaluated)"
    if card.get("quick"):
        verdict += " (`--quick` runs)"
    parts += ["", verdict + ".", ""]
    if rows:
        parts.append(_markdown_table(scorecard.display_frame(rows, why=False)))
    # The known differences of the claims that do not hold.
    whys = list(
        dict.fromkeys((r["id"], r["why"]) for r in rows if r.get("why") and r.get("holds") is False)
    )
    if whys:
        parts += ["", "Known differences:", ""]
        parts += [f"* `{claim_id}`: {why}" for claim_id, why in whys]
    table_path = folder / "table.csv"
    if table_path.is_file():
        table = pd.read_csv(table_path)
        parts += ["", "Ours, with the paper's numbers in parentheses where it gives them:", ""]
        parts.append(_markdown_table(_results_table(table)))
    parts += ["", f"Wall time: {_wall_time(timing)}."]
    return "\n".join(parts)


def render_docs(
    results_dir: str | os.PathLike[str],
    *,
    catalogue: str | os.PathLike[str] | None = None,
    template: str | None = None,
) -> str:
    """docs/reproduction.md from the folders ``cellcc reproduce`` wrote into
    ``results_dir``: every catalogue entry found there, in catalogue order."""
    from cellcc import catalogue as cat

    root = Path(results_dir)
    if not root.is_dir():
        raise UsageError(f"{root}: no such results directory (run cellcc reproduce --all first)")
    entries = cat.entries(catalogue)
    found = [e for e in entries if (root / e.id / scorecard.SCORECARD_FILE).is_file()]
    if not found:
        raise UsageError(
            f"{root}: no experiment folder with a {scorecard.SCORECARD_FILE} "
            "(run cellcc reproduce --all --out DIR first)"
        )
    summary = []
    for entry in found:
        card = read_scorecard(root / entry.id)
        timing = _read_json(root / entry.id / INDEX_ENTRY_FILE)
        tally = scorecard.counts(card.get("claims") or [])
        summary.append(
            {
                "wall_s": timing.get("wall_s"),
                "end_to_end_s": timing.get("end_to_end_s"),
                "experiment": f"[`{entry.id}`](#{_anchor(entry)})",
                "paper, figure": f"{entry.paper}, {entry.figure}",
                "claims hold": f"{tally['hold']} of {tally['claims']}",
                "runs": timing.get("runs"),
                "wall time": _seconds(timing.get("wall_s")),
            }
        )
    rows = [r for e in found for r in read_scorecard(root / e.id).get("claims") or []]
    total = scorecard.counts(rows)
    totals = (
        f"In all, **{total['hold']} of {total['claims']} claims hold** "
        f"({total['fail']} do not"
        + (f", {total['not_evaluated']} could not be evaluated" if total["not_evaluated"] else "")
        + f"). The runs of the {len(found)} entries took {_total(summary, 'wall_s')} of wall "
        f"time, {_total(summary, 'end_to_end_s')} with their reports."
    )
    missing = [e.id for e in entries if e not in found]
    text = template if template is not None else _template()
    values = {
        "{{summary}}": totals
        + "\n\n"
        + _markdown_table(
            pd.DataFrame.from_records(summary).drop(columns=["wall_s", "end_to_end_s"])
        ),
        "{{entries}}": "\n\n".join(_entry_section(e, root / e.id) for e in found),
        "{{missing}}": (
            "Catalogue entries not in these results: " + ", ".join(f"`{m}`" for m in missing) + "."
            if missing
            else ""
        ),
        "{{provenance}}": _provenance(root, found),
    }
    for placeholder in _PLACEHOLDERS:
        if placeholder not in text:
            raise UsageError(f"{TEMPLATE}: the template lacks the {placeholder} placeholder")
        text = text.replace(placeholder, values[placeholder])
    # A placeholder left empty (no missing entries) leaves no run of blank lines.
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def _total(rows: Sequence[Mapping[str, Any]], key: str) -> str:
    """The sum of a timing over the entries (— if any entry lacks it)."""
    values = [r.get(key) for r in rows]
    if not values or not all(isinstance(v, int | float) for v in values):
        return "—"
    return _seconds(float(sum(values)))


def _anchor(entry: Any) -> str:
    """GitHub's anchor of the entry's heading."""
    heading = f"{entry.paper}: {entry.figure} ({entry.id})".lower()
    kept = "".join(c for c in heading if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _provenance(root: Path, found: Sequence[Any]) -> str:
    """Which code and options made the results."""
    records = [_read_json(root / e.id / PROVENANCE_FILE) for e in found]
    revisions = sorted({str(r.get("git_revision")) for r in records if r.get("git_revision")})
    versions = sorted({str(r.get("cellcc_version")) for r in records if r.get("cellcc_version")})
    quick = [e.id for e in found if read_scorecard(root / e.id).get("quick")]
    platforms = sorted({str(r.get("platform")) for r in records if r.get("platform")})
    text = (
        f"These results: cellcc {', '.join(versions) or 'unknown'}, git revision "
        f"{', '.join(f'`{r}`' for r in revisions) or 'unknown'}, on {', '.join(platforms)}"
    )
    text += "; every entry at full length." if not quick else "; `--quick` runs."
    return text


def _template() -> str:
    path = resources.files("cellcc") / "data" / TEMPLATE
    return path.read_text(encoding="utf-8")
