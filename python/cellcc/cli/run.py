"""``cellcc run FILE``: one scenario, its summary on the terminal, its results on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    argument,
    check_writable,
    fail,
    fraction_progress,
    friendly_errors,
    option,
    out_path,
    require_file,
    stdout,
    summary_table,
)

__all__ = ["register"]


def run(
    file: Annotated[Path, argument(help="Scenario TOML file (docs/scenarios.md).")],
    seed: Annotated[int | None, option(help="Override the scenario's seed.", min=0)] = None,
    out: Annotated[
        Path | None,
        option(help="Directory for the results [default: out/<scenario name>].", parser=out_path),
    ] = None,
    duration: Annotated[
        float | None, option(help="Override the scenario's duration_s (seconds).", min=0.001)
    ] = None,
    set_: Annotated[
        list[str] | None,
        option(
            "--set",
            help="Override a scenario key, KEY=VALUE with KEY a path such as "
            "downlink.queue.packets or flows[0].params.target_ms (repeatable; VALUE read "
            "as TOML, else a string).",
        ),
    ] = None,
) -> None:
    """Run one scenario, print its summary and save the results."""
    from cellcc import api

    require_file(file, "scenario file")
    overrides: dict[str, object] = {}
    if duration is not None:
        overrides["duration_s"] = duration
    for item in set_ or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise fail(f"--set: expected KEY=VALUE, got {item!r}")
        overrides[key.strip()] = api.parse_value(value.strip())
    from cellcc.results import file_name

    out_dir = out if out is not None else Path("out") / file_name(file.stem)
    check_writable(out_dir)  # before the simulation, not after it
    with fraction_progress(f"simulating {file}") as update:
        result = api.simulate(file, seed=seed, progress=update, overrides=overrides)
    result.save(out_dir)
    # The results are written from the core's columns: pandas loads only for a plot.
    acks = result._table("acks")
    if acks is not None and not acks.empty:
        from cellcc import plots

        name = result.meta.get("name", file.stem)
        figure = plots.ack_pattern_figure(result.acks, title=f"{name}: ACK clock of flow 0")
        plots.save(figure, out_dir / "ack-pattern.png")
    console = stdout()
    title = f"{result.meta.get('name', file.stem)} (seed {result.seed})"
    console.print(summary_table(result._table("summary"), title))
    wall = result.meta.get("wall_s")
    events = result.meta.get("events")
    if isinstance(wall, int | float) and isinstance(events, int):
        console.print(f"{events:,} events in {wall:.2f} s of wall time", markup=False)
    console.print(f"results written to {out_dir}{os.sep}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``run`` to the ``cellcc`` app."""
    app.command("run")(friendly_errors(run))
