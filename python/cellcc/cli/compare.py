"""``cellcc compare``: one flow per scheme on the same trace (or several traces, repeated
over seeds), with plots and a report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cellcc.cli._common import (
    DurationOption,
    check_schemes,
    check_writable,
    fail,
    frame_table,
    friendly_errors,
    option,
    out_path,
    progress,
    split_schemes,
    stdout,
    summary_table,
)

__all__ = ["register"]

#: The metrics of the terminal table of several runs (all of them are in the report).
TERMINAL_METRICS = ("throughput_mbps", "owd_p95_ms", "qdelay_mean_ms")
TERMINAL_HEADERS = {
    "throughput_mbps": "tput Mbit/s",
    "owd_p95_ms": "OWD p95 ms",
    "qdelay_mean_ms": "qdelay avg ms",
}


def compare(
    trace: Annotated[
        list[Path],
        option(
            "--trace",
            help="Downlink (data direction) Mahimahi trace; repeat the option to compare on "
            "several traces.",
        ),
    ],
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
            help="Uplink (ACK direction) trace, with a single --trace only [default: the "
            ".up sibling of a .down trace if it exists, else a constant 100 Mbit/s link].",
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
    runs: Annotated[
        int,
        option(
            "--runs",
            help="Runs per trace and scheme, with seeds --seed, --seed+1, ...; the report "
            "gives each metric's mean over the runs with its 95 % confidence interval.",
            min=1,
        ),
    ] = 1,
    bin_ms: Annotated[
        float, option("--bin-ms", help="Time-series bin width (ms).", min=0.001)
    ] = 500.0,
    out: Annotated[
        Path | None,
        option(
            "--out",
            help="Output directory [default: out/compare-<trace>, out/compare-<n>-traces "
            "with several].",
            parser=out_path,
        ),
    ] = None,
    jobs: Annotated[
        int, option("--jobs", "-j", help="Runs in parallel worker processes.", min=1)
    ] = 1,
) -> None:
    """Run one flow per scheme on the same trace; write results, plots and a report.

    With several --trace options or --runs above 1, every trace runs every scheme
    --runs times (seeds --seed, --seed+1, ...); the report and aggregate.csv give the
    mean of each metric over the runs with its 95 % confidence interval.
    """
    from cellcc import api, report

    for path in trace:
        if not path.is_file():
            raise fail(f"--trace: {path}: no such trace file")
    if uplink_trace is not None and not uplink_trace.is_file():
        raise fail(f"--uplink-trace: {uplink_trace}: no such trace file")
    if uplink_trace is not None and len(trace) > 1:
        raise fail("--uplink-trace: only with a single --trace (each trace takes its .up sibling)")
    names = split_schemes(schemes)
    check_schemes(names)
    queue_table = api.parse_queue(queue, option="--queue")
    settings: dict[str, Any] = {
        "schemes": names,
        "uplink_trace": uplink_trace,
        "delay_ms": delay_ms,
        "queue": queue_table,
        "duration_s": duration,
        "bin_ms": bin_ms,
        "jobs": jobs,
    }
    from cellcc.results import file_name

    console = stdout()
    default = trace[0].name if len(trace) == 1 else f"{len(trace)}-traces"
    out_dir = out if out is not None else Path("out") / file_name(f"compare-{default}")
    check_writable(out_dir)  # before the simulations, not after them
    if len(trace) == 1 and runs == 1:
        with progress(len(names), f"comparing on {trace[0].name}") as advance:
            comparison = api.compare(
                trace[0],
                seed=seed,
                progress=lambda scheme, finished: advance(scheme) if finished else None,
                **settings,
            )
        report.write_comparison(comparison, out_dir)
        summary = comparison.summary
        console.print(summary_table(summary, comparison.path_label, skip=("trace", "flow")))
        console.print(f"report: {out_dir / report.REPORT_FILE}", markup=False)
        return
    from cellcc.comparisons import compare_set

    total = len(trace) * runs * len(names)
    with progress(total, f"comparing on {', '.join(p.name for p in trace)}") as advance:
        comparison_set = compare_set(
            trace,
            runs=runs,
            seed=seed,
            progress=lambda key, finished: advance(" ".join(map(str, key))) if finished else None,
            **settings,
        )
    path = report.write_comparison_set(comparison_set, out_dir)
    shown = comparison_set.intervals(TERMINAL_METRICS, plus_minus=True)
    shown = shown.rename(columns=TERMINAL_HEADERS)
    console.print(frame_table(shown, f"mean ± 95 % interval over {runs} run{'s' * (runs > 1)}"))
    console.print(f"report: {path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the ``cellcc`` app."""
    app.command("compare")(friendly_errors(compare))
