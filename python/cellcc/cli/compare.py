"""``cellcc compare``: one flow per scheme on the same trace, with plots and a report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    DurationOption,
    check_schemes,
    fail,
    friendly_errors,
    option,
    progress,
    split_schemes,
    stdout,
    summary_table,
)

__all__ = ["register"]


def compare(
    trace: Annotated[Path, option("--trace", help="Downlink (data direction) Mahimahi trace.")],
    schemes: Annotated[
        str,
        option(
            "--schemes",
            help="Comma-separated schemes, e.g. newreno,cubic,bbr; parameters follow a name "
            "as :key=value (c2tcp:target_ms=80); a Python class by import path "
            "(mypkg.cc:MyReno).",
        ),
    ],
    uplink_trace: Annotated[
        Path | None,
        option(
            "--uplink-trace",
            help="Uplink (ACK direction) trace [default: the .up sibling of a .down trace "
            "if it exists, else a constant 100 Mbit/s link].",
        ),
    ] = None,
    delay_ms: Annotated[
        float, option("--delay-ms", help="One-way propagation delay of each direction.", min=0)
    ] = 10.0,
    queue: Annotated[
        str,
        option(
            "--queue",
            help="Queue of both directions: infinite, droptail:packets=N[,bytes=B], drophead:...",
        ),
    ] = "droptail:packets=100",
    duration: DurationOption = 30.0,
    seed: Annotated[
        int, option("--seed", help="Master seed (the same for every scheme).", min=0)
    ] = 1,
    bin_ms: Annotated[
        float, option("--bin-ms", help="Time-series bin width (ms).", min=0.001)
    ] = 500.0,
    out: Annotated[
        Path | None, option("--out", help="Output directory [default: out/compare-<trace>].")
    ] = None,
    jobs: Annotated[
        int, option("--jobs", "-j", help="Schemes run in parallel worker processes.", min=1)
    ] = 1,
) -> None:
    """Run one flow per scheme on the same trace; write results, plots and a report."""
    from cellcc import api, report

    for name, path in (("--trace", trace), ("--uplink-trace", uplink_trace)):
        if path is not None and not path.is_file():
            raise fail(f"{name}: {path}: no such trace file")
    names = split_schemes(schemes)
    check_schemes(names)
    queue_table = api.parse_queue(queue, option="--queue")
    out_dir = out if out is not None else Path("out") / f"compare-{trace.name}"
    with progress(len(names), f"comparing on {trace.name}") as advance:
        comparison = api.compare(
            trace,
            schemes=names,
            uplink_trace=uplink_trace,
            delay_ms=delay_ms,
            queue=queue_table,
            duration_s=duration,
            seed=seed,
            bin_ms=bin_ms,
            progress=lambda scheme, finished: advance(scheme) if finished else None,
            jobs=jobs,
        )
    report.write_comparison(comparison, out_dir)
    console = stdout()
    console.print(summary_table(comparison.summary, comparison.path_label, skip=("trace", "flow")))
    console.print(f"report: {out_dir / report.REPORT_FILE}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the ``cellcc`` app."""
    app.command("compare")(friendly_errors(compare))
