"""``cellcc reproduce ID|--all``: run catalogue experiments, write their reports next to
the published numbers, and an index of them all."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    AddressOption,
    CatalogueOption,
    ExecutorOption,
    JobsOption,
    QuickOption,
    TracesOption,
    argument,
    check_executor,
    command_line,
    execute_sweep,
    fail,
    friendly_errors,
    option,
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
        Path, option("--out", help="Output directory (one folder per experiment).")
    ] = Path("out/reproduce"),
    jobs: JobsOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    quick: QuickOption = False,
    traces: TracesOption = None,
    catalogue: CatalogueOption = None,
) -> None:
    """Reproduce catalogue experiments: run, report next to the published numbers, index."""
    from cellcc import catalogue as cat
    from cellcc import runner
    from cellcc.results import provenance
    from cellcc.sweep import load_sweep
    from cellcc.sweep_report import report_options, write_index

    if (experiment_id is None) == (not run_all):
        raise fail("give an experiment ID or --all (see 'cellcc experiments list')")
    check_executor(executor, address)
    chosen = cat.entries(catalogue) if run_all else [cat.find(experiment_id or "", catalogue)]
    loaded = [(e, load_sweep(e.path, quick=quick, traces_dir=traces)) for e in chosen]
    for _entry, sweep in loaded:  # every file is checked before the first run
        report_options(sweep)
        runner.check(sweep)
    flags = ["--quick" if quick else None]
    if traces is not None:
        flags += ["--traces", str(traces)]
    started = time.monotonic()
    summary = []
    for entry, sweep in loaded:
        command = command_line("reproduce", entry.id, "--out", out, *flags)
        result = execute_sweep(
            sweep,
            out / entry.id,
            command=command,
            executor=executor,
            jobs=jobs,
            address=address,
            title=f"{entry.paper}, {entry.figure}",
        )
        summary.append({"id": entry.id, "paper": entry.paper, "figure": entry.figure, **result})
    total = time.monotonic() - started
    index_command = command_line("reproduce", "--all", "--out", out, *flags)
    index = write_index(
        out, summary, command=index_command, provenance_record=provenance(seed=None)
    )
    shown = table("reproduced")
    for column in ("id", "figure", "runs", "cached", "executed", "wall s"):
        shown.add_column(column, justify="left" if column in ("id", "figure") else "right")
    for row in summary:
        shown.add_row(
            row["id"], row["figure"], str(row["runs"]), str(row["cached"]),
            str(row["executed"]), f"{row['wall_s']:.1f}",
        )  # fmt: skip
    console = stdout()
    console.print(shown)
    console.print(f"{len(summary)} experiments in {total:.1f} s; index: {index}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``reproduce`` to the ``cellcc`` app."""
    app.command("reproduce")(friendly_errors(reproduce))
