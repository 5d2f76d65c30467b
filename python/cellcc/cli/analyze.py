"""``cellcc analyze LOG...``: mm-link logs (simulator, emulator, Mahimahi) as a run's
summary, time series, plots and HTML report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    argument,
    check_writable,
    command_line,
    frame_table,
    friendly_errors,
    option,
    out_path,
    stdout,
)

__all__ = ["register"]

#: Columns of the terminal table, with their headers.
_TERMINAL_COLUMNS = {
    "scheme": "run",
    "pantheon_throughput_mbps": "tput Mbit/s",
    "utilisation": "util",
    "qdelay_mean_ms": "qdelay avg ms",
    "qdelay_p95_ms": "qdelay p95 ms",
    "drops_queue": "drops",
}


def analyze(
    logs: Annotated[
        list[str],
        argument(
            help="mm-link logs: the simulator's downlink.log (metrics.packet_log = true), "
            "cellcc emu --downlink-log/--uplink-log, or mm-link's own; LABEL=PATH names "
            "a log in the tables and plots [default label: DIR/STEM]."
        ),
    ],
    out: Annotated[
        Path,
        option(help="Directory for the summary, time series, plots and report.", parser=out_path),
    ] = Path("out/analyze"),
    bin_ms: Annotated[
        int, option(help="Time-series bin width, ms (as metrics.bin_ms).", min=1)
    ] = 500,
    title: Annotated[str, option(help="Title of the report.")] = "mm-link logs",
) -> None:
    """Summarise mm-link logs like a simulated run, with mm-throughput-graph and
    mm-delay-graph plots, in one report."""
    from cellcc import analyze as analysis

    runs = []
    for text in logs:
        label, path = analysis.parse_log_argument(text)
        runs.append(analysis.load(path, label))
    result = analysis.analyse(runs, bin_ms=bin_ms)
    check_writable(out)
    page = analysis.write(result, out, command=command_line("analyze", *logs), title=title)
    console = stdout()
    shown = [c for c in _TERMINAL_COLUMNS if c in result.summary.columns]
    console.print(frame_table(result.summary[shown].rename(columns=_TERMINAL_COLUMNS), title))
    console.print(f"report written to {page}", markup=False)
    console.print(f"results written to {out}{os.sep}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``analyze`` to the ``cellcc`` app."""
    app.command("analyze")(friendly_errors(analyze))
