"""``cellcc sweep FILE``: every run of a sweep file, cached, with an HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    AddressOption,
    ExecutorOption,
    JobsOption,
    MaxRunsOption,
    QuickOption,
    ShipTracesOption,
    TracesOption,
    announce_runs,
    argument,
    check_executor,
    command_line,
    execute_sweep,
    friendly_errors,
    option,
    out_path,
)

__all__ = ["register"]


def sweep(
    file: Annotated[Path, argument(help="Sweep TOML file (docs/experiments.md).")],
    out: Annotated[
        Path | None,
        option("--out", help="Output directory [default: out/sweeps/<name>].", parser=out_path),
    ] = None,
    jobs: JobsOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    ship_traces: ShipTracesOption = False,
    quick: QuickOption = False,
    traces: TracesOption = None,
    max_runs: MaxRunsOption = None,
) -> None:
    """Run a sweep: every run cached, results in one Parquet dataset, an HTML report."""
    from cellcc.claims import check_claims, parse_claims
    from cellcc.results import file_name
    from cellcc.sweep import MAX_RUNS, load_sweep
    from cellcc.sweep_report import report_options

    check_executor(executor, address, ship_traces)
    loaded = load_sweep(
        file,
        quick=quick,
        traces_dir=traces,
        max_runs=max_runs or MAX_RUNS,
        announce=announce_runs,
    )
    # Claims (an [experiment] table's) are checked before the first run, not after.
    check_claims(parse_claims(loaded.experiment, loaded.source), loaded, report_options(loaded))
    # The sweep's name is user text: one file-name component, whatever it holds.
    target = out if out is not None else Path("out") / "sweeps" / file_name(loaded.name)
    command = command_line(
        "sweep", file, "--out", target, "--quick" if quick else None,
        *(("--traces", traces) if traces is not None else ()),
    )  # fmt: skip
    execute_sweep(
        loaded,
        target,
        command=command,
        executor=executor,
        jobs=jobs,
        address=address,
        ship_traces=ship_traces,
    )


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``cellcc`` app."""
    app.command("sweep")(friendly_errors(sweep))
