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
    ctx: typer.Context,
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
        str,
        option(
            "--traces",
            help="Comma-separated trace names (NAME.down and NAME.up in --traces-dir), or "
            "Ireland-5G-static (converted from the Irish 5G CSV into --out).",
        ),
    ] = "TMobile-LTE-short,Verizon-LTE-short",
    traces_dir: Annotated[
        Path | None,
        option(
            "--traces-dir",
            help="Where the traces are [default: $CELLCC_TRACES/mahimahi, else "
            "../shared/traces/mahimahi].",
        ),
    ] = None,
    irish_dir: Annotated[
        Path | None,
        option(
            "--irish-dir",
            help="The Irish 5G dataset (its Download/ directory inside) [default: "
            "ireland-5g-2020 beside --traces-dir].",
        ),
    ] = None,
    out: Annotated[Path, option("--out", help="Output directory.")] = Path("validation"),
    duration: Annotated[float, option("--duration", help="Seconds per flow.", min=1.0)] = 30.0,
    delay: Annotated[float, option("--delay", help="One-way delay (ms).", min=0.0)] = 20.0,
    queue: Annotated[
        int,
        option("--queue", help="Drop-tail queue (packets), when --buffers is not given.", min=1),
    ] = 1000,
    buffers: Annotated[
        str | None,
        option(
            "--buffers",
            help="Comma-separated drop-tail buffers, each way: 1000p (packets), 150KB "
            "(150 000 bytes), B, MB [default: --queue packets].",
        ),
    ] = None,
    runs: Annotated[
        int | None,
        option("--runs", help="Kernel runs per pair [default: 1; 3 with --preset broad].", min=1),
    ] = None,
    preset: Annotated[
        str | None,
        option(
            "--preset",
            help="broad: every scheme, every Boston pair and Ireland-5G-static, buffers "
            "150KB,1000p, 3 runs; options given explicitly win.",
        ),
    ] = None,
    docs: Annotated[
        Path | None,
        option(
            "--docs",
            help="Also replace the section between <!-- validate:begin --> and "
            "<!-- validate:end --> of this markdown file, figures beside it.",
        ),
    ] = None,
    force: Annotated[bool, option("--force", help="Redo runs already in --out.")] = False,
    offload: Annotated[
        bool,
        option(
            "--offload",
            help="Run the emulator with its TUN offloads (TSO, and GRO at the receiver, "
            "which the simulator does not model); by default every packet crosses on its "
            "own, as in Mahimahi.",
        ),
    ] = False,
    remeasure: Annotated[
        bool,
        option(
            "--remeasure",
            help="Recompute the finished runs' records from their logs with this simulator "
            "(kernel runs kept; after a change to the simulator or the measurement).",
        ),
    ] = False,
) -> None:
    """Run the same scenarios in the simulator and through the emulator with real Linux
    TCP, and report throughput and queueing-delay differences (needs root)."""
    from cellcc import validation, validation_runs
    from cellcc._native import UsageError

    def given(name: str) -> bool:
        # By name: typer may carry its own copy of click's ParameterSource enum.
        source = ctx.get_parameter_source(name)
        return getattr(source, "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")

    chosen: dict[str, Any] = {}
    if preset is not None:
        if preset not in validation_runs.PRESETS:
            choices = ", ".join(validation_runs.PRESETS)
            raise UsageError(f"--preset: unknown preset {preset!r}; choose from {choices}")
        chosen = dict(validation_runs.PRESETS[preset])
    if force and remeasure:
        raise UsageError("--force redoes the kernel runs, --remeasure keeps them; give one")
    if buffers is not None and given("queue"):
        raise UsageError("--buffers and --queue both set the buffer; give one of them")
    if traces_dir is None:
        traces_dir = Path(os.environ.get("CELLCC_TRACES", "../shared/traces")) / "mahimahi"
    names = (
        [s.strip() for s in schemes.split(",") if s.strip()]
        if given("schemes") or "schemes" not in chosen
        else list(chosen["schemes"])
    )
    trace_names = (
        [t.strip() for t in traces.split(",") if t.strip()]
        if given("traces") or "traces" not in chosen
        else list(chosen["traces"])
    )
    buffer_text = buffers if buffers is not None or given("queue") else chosen.get("buffers")
    buffer_list = (
        validation_runs.parse_buffers(buffer_text)
        if buffer_text is not None
        else [validation_runs.Buffer(packets=queue)]
    )
    run_count = runs if runs is not None else int(chosen.get("runs", 1))
    setup = validation.Setup(
        duration_s=duration, delay_ms=delay, queue_packets=queue, offload=offload
    )
    command = _command_line(ctx, given)
    total = len(buffer_list) * len(names) * len(trace_names) * (run_count + 1)
    started = time.monotonic()
    with progress(total, "validate") as advance:
        frame = validation_runs.validate(
            names,
            trace_names,
            traces_dir=traces_dir,
            irish_dir=irish_dir,
            out_dir=out,
            setup=setup,
            buffers=buffer_list,
            runs=run_count,
            force=force,
            remeasure=remeasure,
            progress=advance,
            docs=docs,
            command=command,
        )
    for label, rows in frame.groupby("buffer", sort=False):
        stdout().print(_comparison_table(rows, title=f"simulator vs kernel, {label}"))
    stdout().print(
        f"report: {out / 'index.html'}, table: {out / 'validation.md'}"
        + (f", docs: {docs}" if docs is not None else "")
        + f"  ({time.monotonic() - started:.0f} s)",
        markup=False,
    )


def _command_line(ctx: typer.Context, given: Any) -> str:
    """``cellcc validate`` with the options given on the command line, in a canonical
    order (the parsed values, whatever started the process)."""
    import shlex

    words = ["cellcc", "validate"]
    for name, value in ctx.params.items():
        if not given(name):
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            words += [flag] if value else []
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _comparison_table(frame: Any, *, title: str = "simulator vs kernel") -> Table:
    from cellcc.report import format_cell

    columns = {
        "scheme": "scheme",
        "trace": "trace",
        "runs": "runs",
        "sim_throughput_mbps": "sim Mbit/s",
        "real_throughput_mbps": "real Mbit/s",
        "throughput_diff": "Δ tput",
        "sim_qdelay_mean_ms": "sim qdelay ms",
        "real_qdelay_mean_ms": "real qdelay ms",
        "qdelay_mean_diff": "Δ qdelay",
    }
    shown = table(title)
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
