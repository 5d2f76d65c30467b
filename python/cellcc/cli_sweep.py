"""The ``sweep``, ``experiments`` and ``reproduce`` commands (registered by ``cli.py``).

``cellcc sweep FILE`` runs a sweep file; ``cellcc experiments list`` shows the catalogue
(``experiments/*.toml``); ``cellcc reproduce ID|--all`` runs catalogue entries and
writes their reports and an index. Errors are one line with exit code 2, as for every
other command.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from cellcc.cli import _fail, _friendly_errors, _stderr, _stdout

__all__ = ["register"]

experiments_app = typer.Typer(help="The catalogue of reproduced experiments.", no_args_is_help=True)

#: Columns of the terminal summary tables, in order of preference.
_SHOWN = 8

JobsOption = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Parallel runs [default: all cores].", min=1),
]
ExecutorOption = Annotated[str, typer.Option("--executor", help="local (process pool) or ray.")]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="Ray cluster address (ray executor) [default: a local Ray]."),
]
QuickOption = Annotated[
    bool,
    typer.Option("--quick", help="Apply the file's [quick] table (shorter runs, fewer seeds)."),
]
TracesOption = Annotated[
    Path | None,
    typer.Option(
        "--traces",
        help="Directory that {traces} stands for [default: $CELLCC_TRACES, else the "
        "file's traces_dir].",
    ),
]


@contextmanager
def _run_progress(total: int, description: str) -> Iterator[Any]:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=_stderr(), transient=False) as progress:
        task = progress.add_task(description, total=total)

        def advance(_run: Any, _cached: bool) -> None:
            progress.update(task, advance=1)

        yield advance


def _frame_table(frame: Any, title: str) -> Table:
    from cellcc.report import format_cell

    columns = list(frame.columns)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in columns:
        text = frame[column].dtype == object
        table.add_column(str(column), justify="left" if text else "right", no_wrap=text)
    for record in frame.astype(object).to_dict(orient="records"):
        table.add_row(*(format_cell(record[c]) for c in columns))
    return table


def _execute(
    sweep: Any,
    out: Path,
    *,
    command: str,
    executor: str,
    jobs: int | None,
    address: str | None,
    title: str | None = None,
) -> dict[str, Any]:
    """Run ``sweep`` into ``out``, write its report, print its table; return a summary."""
    from cellcc import runner, sweep_report

    sweep_report.report_options(sweep)
    runner.check(sweep)
    with _run_progress(len(sweep.runs), sweep.name) as advance:
        outcome = runner.run_sweep(
            sweep,
            out,
            executor=executor,
            jobs=jobs,
            address=address,
            command=command,
            progress=advance,
            validate=False,
        )
    record = __import__("json").loads((out / "provenance.json").read_text(encoding="utf-8"))
    page, table = sweep_report.write_sweep_report(
        sweep, outcome.results, out, command=command, provenance_record=record, title=title
    )
    console = _stdout()
    console.print(
        _frame_table(table.iloc[:, : _SHOWN + 1], f"{sweep.name} ({page.parent}/table.csv)")
    )
    console.print(
        f"{sweep.name}: {outcome.total} runs ({outcome.cached} cached, {outcome.executed} "
        f"executed) in {outcome.wall_s:.1f} s; report: {page}",
        markup=False,
        soft_wrap=True,
    )
    return {
        "runs": outcome.total,
        "cached": outcome.cached,
        "executed": outcome.executed,
        "wall_s": round(outcome.wall_s, 2),
        "report": page,
    }


def _command(*argv: Any) -> str:
    return shlex.join(["cellcc", *(str(a) for a in argv if a is not None)])


def sweep(
    file: Annotated[Path, typer.Argument(help="Sweep TOML file (docs/experiments.md).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory [default: out/sweeps/<name>].")
    ] = None,
    jobs: JobsOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    quick: QuickOption = False,
    traces: TracesOption = None,
) -> None:
    """Run a sweep: every run cached, results in one Parquet dataset, an HTML report."""
    from cellcc.sweep import load_sweep

    if address is not None and executor != "ray":
        raise _fail("--address: only applies with --executor ray")
    loaded = load_sweep(file, quick=quick, traces_dir=traces)
    target = out if out is not None else Path("out") / "sweeps" / loaded.name
    command = _command(
        "sweep", file, "--out", target, "--quick" if quick else None,
        *(("--traces", traces) if traces is not None else ()),
    )  # fmt: skip
    _execute(loaded, target, command=command, executor=executor, jobs=jobs, address=address)


def list_experiments(
    catalogue: Annotated[
        Path | None,
        typer.Option("--catalogue", help="Catalogue directory [default: experiments/]."),
    ] = None,
) -> None:
    """List the catalogue: id, paper, figure and what it shows."""
    from cellcc import catalogue as cat

    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    for column in ("paper", "figure", "view", "description"):
        table.add_column(column, overflow="fold")
    for entry in cat.entries(catalogue):
        table.add_row(entry.id, entry.paper, entry.figure, entry.view, entry.description)
    _stdout().print(table)


def reproduce(
    experiment_id: Annotated[
        str | None, typer.Argument(metavar="ID", help="Experiment id (cellcc experiments list).")
    ] = None,
    run_all: Annotated[
        bool, typer.Option("--all", help="Every experiment of the catalogue.")
    ] = False,
    out: Annotated[
        Path, typer.Option("--out", help="Output directory (one folder per experiment).")
    ] = Path("out/reproduce"),
    jobs: JobsOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    quick: QuickOption = False,
    traces: TracesOption = None,
    catalogue: Annotated[
        Path | None,
        typer.Option("--catalogue", help="Catalogue directory [default: experiments/]."),
    ] = None,
) -> None:
    """Reproduce catalogue experiments: run, report next to the published numbers, index."""
    from cellcc import catalogue as cat
    from cellcc import runner
    from cellcc.results import provenance
    from cellcc.sweep import load_sweep
    from cellcc.sweep_report import report_options, write_index

    if (experiment_id is None) == (not run_all):
        raise _fail("give an experiment ID or --all (see 'cellcc experiments list')")
    if address is not None and executor != "ray":
        raise _fail("--address: only applies with --executor ray")
    chosen = cat.entries(catalogue) if run_all else [cat.find(experiment_id or "", catalogue)]
    loaded = [(e, load_sweep(e.path, quick=quick, traces_dir=traces)) for e in chosen]
    for _entry, sweep_ in loaded:  # every file is checked before the first run
        report_options(sweep_)
        runner.check(sweep_)
    flags = ["--quick" if quick else None]
    if traces is not None:
        flags += ["--traces", str(traces)]
    started = time.monotonic()
    summary = []
    for entry, sweep_ in loaded:
        command = _command("reproduce", entry.id, "--out", out, *flags)
        result = _execute(
            sweep_,
            out / entry.id,
            command=command,
            executor=executor,
            jobs=jobs,
            address=address,
            title=f"{entry.paper}, {entry.figure}",
        )
        summary.append({"id": entry.id, "paper": entry.paper, "figure": entry.figure, **result})
    total = time.monotonic() - started
    index_command = _command("reproduce", "--all", "--out", out, *flags)
    index = write_index(
        out, summary, command=index_command, provenance_record=provenance(seed=None)
    )
    table = Table(title="reproduced", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("id", "figure", "runs", "cached", "executed", "wall s"):
        table.add_column(column, justify="left" if column in ("id", "figure") else "right")
    for row in summary:
        table.add_row(
            row["id"], row["figure"], str(row["runs"]), str(row["cached"]),
            str(row["executed"]), f"{row['wall_s']:.1f}",
        )  # fmt: skip
    console = _stdout()
    console.print(table)
    console.print(f"{len(summary)} experiments in {total:.1f} s; index: {index}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the commands to the ``cellcc`` app."""
    app.command("sweep")(_friendly_errors(sweep))
    app.command("reproduce")(_friendly_errors(reproduce))
    experiments_app.command("list")(_friendly_errors(list_experiments))
    app.add_typer(experiments_app, name="experiments")
