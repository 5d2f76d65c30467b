"""The real-path commands: ``kernel``, ``emu`` and ``validate``.

``cellcc kernel ...`` and ``cellcc emu ...`` hand their arguments to the Rust binaries
``cellcc-kernel`` and ``cellcc-emu`` unchanged (their ``--help`` is the reference);
``cellcc validate`` runs the simulator and the emulator side by side
(:mod:`cellcc.validation`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cellcc.cli._common import friendly_errors, option, progress, stdout, table

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["register"]

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _exec(binary: str, ctx: typer.Context) -> None:
    from cellcc import realpath

    path = realpath.find_binary(binary)
    # click drops a `--` separator from ctx.args, and `cellcc emu ... -- COMMAND` needs
    # it, so the arguments are taken verbatim from the command line when it is there.
    command = ctx.info_name or ""
    args = list(ctx.args)
    if command in sys.argv[1:]:
        args = sys.argv[sys.argv.index(command, 1) + 1 :]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [binary, *args])


def kernel(ctx: typer.Context) -> None:
    """Load, list, tune and unload the BPF congestion controls (C2TCP, PropRate, César,
    Vegas, Westwood+, Illinois, CDG):
    `cellcc kernel check|load|unload|list|set|stats|tune` (see `cellcc kernel --help`)."""
    _exec("cellcc-kernel", ctx)


def emu(ctx: typer.Context) -> None:
    """The real-time link emulator, Mahimahi style: `cellcc emu --delay 20 --uplink UP
    --downlink DOWN [...] -- COMMAND` (see `cellcc emu --help`)."""
    _exec("cellcc-emu", ctx)


def validate(
    schemes: Annotated[
        str,
        option(
            "--schemes",
            help="Comma-separated: cubic, bbr, reno, c2tcp, proprate, cesar, vegas, "
            "westwood, illinois, cdg; also aimd (a per-interval Python policy on "
            "cellcc_policy).",
        ),
    ] = "cubic,bbr,reno,c2tcp,proprate,cesar,vegas,westwood,illinois,cdg",
    traces: Annotated[
        str, option("--traces", help="Comma-separated trace names (NAME.down and NAME.up).")
    ] = "TMobile-LTE-short,Verizon-LTE-short",
    traces_dir: Annotated[
        Path | None,
        option(
            "--traces-dir",
            help="Where the traces are [default: $CELLCC_TRACES/mahimahi, else "
            "../shared/traces/mahimahi].",
        ),
    ] = None,
    out: Annotated[Path, option("--out", help="Output directory.")] = Path("validation"),
    duration: Annotated[float, option("--duration", help="Seconds per flow.", min=1.0)] = 30.0,
    delay: Annotated[float, option("--delay", help="One-way delay (ms).", min=0.0)] = 20.0,
    queue: Annotated[int, option("--queue", help="Drop-tail queue (packets).", min=1)] = 1000,
    force: Annotated[bool, option("--force", help="Redo pairs already in --out.")] = False,
) -> None:
    """Run the same scenarios in the simulator and through the emulator with real Linux
    TCP, and report throughput and queueing-delay differences (needs root)."""
    from cellcc import validation

    if traces_dir is None:
        traces_dir = Path(os.environ.get("CELLCC_TRACES", "../shared/traces")) / "mahimahi"
    names = [s.strip() for s in schemes.split(",") if s.strip()]
    trace_names = [t.strip() for t in traces.split(",") if t.strip()]
    setup = validation.Setup(duration_s=duration, delay_ms=delay, queue_packets=queue)
    started = time.monotonic()
    with progress(len(names) * len(trace_names), "validate") as advance:
        frame = validation.validate(
            names,
            trace_names,
            traces_dir=traces_dir,
            out_dir=out,
            setup=setup,
            force=force,
            progress=advance,
        )
    stdout().print(_comparison_table(frame))
    stdout().print(
        f"report: {out / 'index.html'}  ({time.monotonic() - started:.0f} s)", markup=False
    )


def _comparison_table(frame: Any) -> Table:
    from cellcc.report import format_cell

    columns = {
        "scheme": "scheme",
        "trace": "trace",
        "sim_throughput_mbps": "sim Mbit/s",
        "real_throughput_mbps": "real Mbit/s",
        "throughput_diff": "Δ tput",
        "sim_qdelay_mean_ms": "sim qdelay ms",
        "real_qdelay_mean_ms": "real qdelay ms",
        "qdelay_mean_diff": "Δ qdelay",
    }
    shown = table("simulator vs kernel")
    for key, label in columns.items():
        shown.add_column(label, justify="left" if key in ("scheme", "trace") else "right")
    for record in frame.to_dict(orient="records"):
        cells = []
        for key in columns:
            value = record[key]
            if key.endswith("_diff"):
                ok = record["throughput_ok" if key.startswith("throughput") else "qdelay_ok"]
                cells.append(f"{value:+.1%}" + ("" if ok else " ✗"))
            else:
                cells.append(format_cell(value))
        shown.add_row(*cells)
    return shown


def register(app: typer.Typer) -> None:
    """Add ``kernel``, ``emu`` and ``validate`` to the ``cellcc`` app."""
    app.command("kernel", context_settings=_PASS_THROUGH, add_help_option=False)(
        friendly_errors(kernel)
    )
    app.command("emu", context_settings=_PASS_THROUGH, add_help_option=False)(friendly_errors(emu))
    app.command("validate")(friendly_errors(validate))
