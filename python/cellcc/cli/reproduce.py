"""``cellcc reproduce ID|--all``: run catalogue experiments, write their reports next to
the published numbers with the scorecard of their claims, and an index of them all."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from cellcc.cli._common import (
    AddressOption,
    CatalogueOption,
    ExecutorOption,
    JobsOption,
    QuickOption,
    ShipTracesOption,
    TracesOption,
    argument,
    check_executor,
    command_line,
    execute_sweep,
    fail,
    friendly_errors,
    option,
    out_path,
    stdout,
    table,
)

__all__ = ["register"]


def reproduce(
    experiment_id: Annotated[
        str | None, argument(metavar="ID", help="Experiment id (cellcc experiments list).")
    ] = None,
    run_all: Annotated[bool, option("--all", help="Every experiment of the catalogue.")] = False,
    out: Annotated[
        Path,
        option("--out", help="Output directory (one folder per experiment).", parser=out_path),
    ] = Path("out/reproduce"),
    jobs: JobsOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    ship_traces: ShipTracesOption = False,
    quick: QuickOption = False,
    traces: TracesOption = None,
    catalogue: CatalogueOption = None,
) -> None:
    """Reproduce catalogue experiments: run, report next to the published numbers, index."""
    from cellcc import catalogue as cat
    from cellcc import runner
    from cellcc.claims import check_claims, parse_claims
    from cellcc.results import output_lock
    from cellcc.sweep import load_sweep
    from cellcc.sweep_report import report_options

    if (experiment_id is None) == (not run_all):
        raise fail("give an experiment ID or --all (see 'cellcc experiments list')")
    check_executor(executor, address, ship_traces)
    chosen = cat.entries(catalogue) if run_all else [cat.find(experiment_id or "", catalogue)]
    loaded = [(e, load_sweep(e.path, quick=quick, traces_dir=traces)) for e in chosen]
    for _entry, sweep in loaded:  # every file is checked before the first run
        check_claims(parse_claims(sweep.experiment, sweep.source), sweep, report_options(sweep))
        runner.check(sweep)
    flags = ["--quick" if quick else None]
    if traces is not None:
        flags += ["--traces", str(traces)]
    with output_lock(out):  # the index covers every entry: one reproduce at a time
        _reproduce(
            loaded,
            out,
            flags,
            executor=executor,
            jobs=jobs,
            address=address,
            ship_traces=ship_traces,
        )


def _reproduce(
    loaded: list[tuple[Any, Any]],
    out: Path,
    flags: list[str | None],
    *,
    executor: str,
    jobs: int | None,
    address: str | None,
    ship_traces: bool,
) -> None:
    """Run the ``loaded`` entries into ``out`` (locked), then write and show the index."""
    import os

    from cellcc import scorecard
    from cellcc.reproduction import read_scorecard, write_index
    from cellcc.results import confined, file_name, provenance

    started = time.monotonic()
    summary = []
    cards = []
    for entry, sweep in loaded:
        command = command_line("reproduce", entry.id, "--out", out, *flags)
        entry_started = time.monotonic()
        # An id is a file stem of the catalogue directory (--catalogue): still user text.
        folder = confined(out, file_name(entry.id))
        result = execute_sweep(
            sweep,
            folder,
            command=command,
            executor=executor,
            jobs=jobs,
            address=address,
            title=f"{entry.paper}, {entry.figure}",
            ship_traces=ship_traces,
        )
        card = read_scorecard(folder).get("claims") or []
        tally = scorecard.counts(card)
        cards.append((entry, card))
        summary.append(
            {
                "id": entry.id,
                "paper": entry.paper,
                "figure": entry.figure,
                "claims hold": f"{tally['hold']} of {tally['claims']}",
                **result,
                "end_to_end_s": round(time.monotonic() - entry_started, 2),
                "jobs": jobs or os.cpu_count() or 1,
            }
        )
    total = time.monotonic() - started
    index_command = command_line("reproduce", "--all", "--out", out, *flags)
    index = write_index(
        out, summary, command=index_command, provenance_record=provenance(seed=None)
    )
    console = stdout()
    for entry, card in cards:  # the scorecards first, then the summary of the runs
        if card:
            console.print(_scorecard_table(entry.id, card))
    shown = table("reproduced")
    for column in ("id", "figure", "claims hold", "runs", "cached", "executed", "wall s"):
        shown.add_column(column, justify="left" if column in ("id", "figure") else "right")
    for row in summary:
        shown.add_row(
            row["id"], row["figure"], row["claims hold"], str(row["runs"]), str(row["cached"]),
            str(row["executed"]), f"{row['wall_s']:.1f}",
        )  # fmt: skip
    console.print(shown)
    console.print(f"{len(summary)} experiments in {total:.1f} s; index: {index}", markup=False)


def _scorecard_table(entry_id: str, rows: list[dict[str, Any]]) -> Any:
    """One entry's scorecard on the terminal: claim id, what is compared, metric, ours
    with its 95 % interval, the paper's number or ordering, and ✔/✘."""
    from cellcc import scorecard

    tally = scorecard.counts(rows)
    shown = table(f"{entry_id}: {tally['hold']} of {tally['claims']} claims hold")
    for column in ("claim", "compared", "metric", "ours [95 % CI]", "paper", "holds"):
        shown.add_column(column, overflow="fold", justify="center" if column == "holds" else "left")
    for row in rows:
        shown.add_row(
            row["id"], scorecard.compared_text(row), row["metric"], scorecard.ours_text(row),
            scorecard.paper_text(row), scorecard.mark(row.get("holds")),
        )  # fmt: skip
    return shown


def register(app: typer.Typer) -> None:
    """Add ``reproduce`` to the ``cellcc`` app."""
    app.command("reproduce")(friendly_errors(reproduce))
