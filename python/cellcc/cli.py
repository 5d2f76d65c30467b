"""The ``cellcc`` command line (typer + rich).

Every command turns cellcc errors and bad arguments into one line on stderr,
``error: <file or option>: <what is wrong>``, and exit code 2 — never a traceback.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from cellcc._native import CellccError

__all__ = ["app", "main"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _OneLineUsageErrors(typer.Typer):
    """Typer app whose argument errors are one line (``error: ...``, exit code 2), like
    every other cellcc error, instead of a usage block and a boxed message."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args", args[0] if args else sys.argv[1:])
        if kwargs.get("standalone_mode", True) is False or not argv:
            return super().__call__(*args, **kwargs)  # no arguments: typer prints the help
        kwargs["standalone_mode"] = False
        try:
            code = super().__call__(*args, **kwargs)
        except typer.Abort:
            _stderr().print("error: aborted", markup=False, highlight=False)
            sys.exit(1)
        except typer.TyperException as exc:  # click's usage errors (missing/bad arguments)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            _stderr().print(
                f"error: {message}{hint}", markup=False, highlight=False, soft_wrap=True
            )
            sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
        sys.exit(code if isinstance(code, int) else 0)


app = _OneLineUsageErrors(
    name="cellcc",
    help="Congestion control on cellular links: a deterministic, trace-driven simulator.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
traces_app = typer.Typer(help="Inspect and generate Mahimahi traces.", no_args_is_help=True)
app.add_typer(traces_app, name="traces")

F = TypeVar("F", bound=Callable[..., Any])


def _stdout() -> Console:
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _fail(message: str) -> typer.Exit:
    _stderr().print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


def _friendly_errors(command: F) -> F:
    """Report cellcc and I/O errors as one line and exit 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CellccError as exc:
            raise _fail(str(exc)) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise _fail(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            _stderr().print("error: interrupted", markup=False, highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def _progress(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr; yields ``advance(label)``."""
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_stderr(), transient=False) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str) -> None:
            progress.update(task, advance=1, description=f"{description} ({label})")

        yield advance
        progress.update(task, description=description)


#: Summary columns shown in terminal tables, with compact two-line headers.
_TERMINAL_COLUMNS = {
    "trace": "trace",
    "flow": "flow",
    "scheme": "scheme",
    "throughput_mbps": "tput\nMbit/s",
    "utilisation": "util",
    "owd_p95_ms": "OWD p95\nms",
    "qdelay_mean_ms": "qdelay\navg ms",
    "rtt_mean_ms": "RTT avg\nms",
    "pantheon_loss_rate": "loss\n%",
    "retransmits": "rtx",
}


def _summary_table(frame: Any, title: str, *, skip: tuple[str, ...] = ()) -> Table:
    from cellcc.report import format_cell

    shown = [c for c in _TERMINAL_COLUMNS if c in frame.columns and c not in skip]
    shown = shown or list(frame.columns)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in shown:
        text = column in ("scheme", "trace")
        table.add_column(
            _TERMINAL_COLUMNS.get(column, column),
            justify="left" if text else "right",
            no_wrap=text,
        )
    for record in frame[shown].astype(object).to_dict(orient="records"):
        if record.get("flow") == -1:
            record["flow"] = "all"
        loss = record.get("pantheon_loss_rate")
        if isinstance(loss, float) and loss == loss:  # not NaN
            record["pantheon_loss_rate"] = round(100.0 * loss, 2)
        table.add_row(*(format_cell(record[c]) for c in shown))
    return table


def _split_schemes(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _check_schemes(names: list[str], option: str = "--schemes") -> None:
    from cellcc import api

    known = api.schemes()
    if not names:
        raise _fail(f"{option}: expected a comma-separated list of schemes, e.g. cubic,bbr")
    for name in names:
        if name not in known:
            raise _fail(f"{option}: unknown scheme {name!r}; expected one of: {', '.join(known)}")


def _version_callback(value: bool) -> None:
    if value:
        from cellcc.results import git_revision, package_version

        typer.echo(f"cellcc {package_version()} ({git_revision()})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Congestion control on cellular links: a deterministic, trace-driven simulator."""


@app.command()
@_friendly_errors
def run(
    file: Annotated[Path, typer.Argument(help="Scenario TOML file (docs/scenarios.md).")],
    seed: Annotated[int | None, typer.Option(help="Override the scenario's seed.", min=0)] = None,
    out: Annotated[
        Path | None, typer.Option(help="Directory for the results [default: out/<scenario name>].")
    ] = None,
) -> None:
    """Run one scenario, print its summary and save the results."""
    from cellcc import api

    if not file.is_file():
        raise _fail(
            f"{file}: no such scenario file" if not file.exists() else f"{file}: not a file"
        )
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}% of simulated time"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_stderr(), transient=True) as bar:
        task = bar.add_task(f"simulating {file}", total=1.0)
        result = api.simulate(
            file, seed=seed, progress=lambda done: bar.update(task, completed=done)
        )
    out_dir = out if out is not None else Path("out") / file.stem
    result.save(out_dir)
    if result.acks is not None and not result.acks.empty:
        from cellcc import plots

        name = result.meta.get("name", file.stem)
        figure = plots.ack_pattern_figure(result.acks, title=f"{name}: ACK clock of flow 0")
        plots.save(figure, out_dir / "ack-pattern.png")
    console = _stdout()
    title = f"{result.meta.get('name', file.stem)} (seed {result.seed})"
    console.print(_summary_table(result.summary, title))
    wall = result.meta.get("wall_s")
    events = result.meta.get("events")
    if isinstance(wall, int | float) and isinstance(events, int):
        console.print(f"{events:,} events in {wall:.2f} s of wall time", markup=False)
    console.print(f"results written to {out_dir}{os.sep}", markup=False)


@app.command()
@_friendly_errors
def compare(
    trace: Annotated[
        Path, typer.Option("--trace", help="Downlink (data direction) Mahimahi trace.")
    ],
    schemes: Annotated[
        str, typer.Option("--schemes", help="Comma-separated schemes, e.g. newreno,cubic,bbr.")
    ],
    uplink_trace: Annotated[
        Path | None,
        typer.Option(
            "--uplink-trace",
            help="Uplink (ACK direction) trace [default: the .up sibling of a .down trace "
            "if it exists, else a constant 100 Mbit/s link].",
        ),
    ] = None,
    delay_ms: Annotated[
        float,
        typer.Option("--delay-ms", help="One-way propagation delay of each direction.", min=0),
    ] = 10.0,
    queue: Annotated[
        str,
        typer.Option(
            "--queue",
            help="Queue of both directions: infinite, droptail:packets=N[,bytes=B], drophead:...",
        ),
    ] = "droptail:packets=100",
    duration: Annotated[
        float, typer.Option("--duration", help="Simulated seconds per run.", min=0.001)
    ] = 30.0,
    seed: Annotated[
        int, typer.Option("--seed", help="Master seed (the same for every scheme).", min=0)
    ] = 1,
    bin_ms: Annotated[
        float, typer.Option("--bin-ms", help="Time-series bin width (ms).", min=0.001)
    ] = 500.0,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory [default: out/compare-<trace>].")
    ] = None,
) -> None:
    """Run one flow per scheme on the same trace; write results, plots and a report."""
    from cellcc import api, report

    for option, path in (("--trace", trace), ("--uplink-trace", uplink_trace)):
        if path is not None and not path.is_file():
            raise _fail(f"{option}: {path}: no such trace file")
    names = _split_schemes(schemes)
    _check_schemes(names)
    queue_table = api.parse_queue(queue, option="--queue")
    out_dir = out if out is not None else Path("out") / f"compare-{trace.name}"
    with _progress(len(names), f"comparing on {trace.name}") as advance:
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
        )
    report.write_comparison(comparison, out_dir)
    console = _stdout()
    console.print(_summary_table(comparison.summary, comparison.path_label, skip=("trace", "flow")))
    console.print(f"report: {out_dir / report.REPORT_FILE}", markup=False)


@traces_app.command("info")
@_friendly_errors
def traces_info(file: Annotated[Path, typer.Argument(help="Mahimahi trace file.")]) -> None:
    """Duration, capacity statistics and the longest outage of a trace."""
    from cellcc import api

    if not file.is_file():
        raise _fail(f"{file}: no such trace file" if not file.exists() else f"{file}: not a file")
    info = api.trace_info(file)
    labels = {
        "duration_s": ("duration (loop period)", "s"),
        "first_ts_ms": ("first timestamp", "ms"),
        "opportunities": ("delivery opportunities (lines)", ""),
        "mean_mbps": ("mean capacity", "Mbit/s"),
        "capacity_p5_mbps": ("capacity p5 (1 s bins)", "Mbit/s"),
        "capacity_p25_mbps": ("capacity p25 (1 s bins)", "Mbit/s"),
        "capacity_p50_mbps": ("capacity median (1 s bins)", "Mbit/s"),
        "capacity_p75_mbps": ("capacity p75 (1 s bins)", "Mbit/s"),
        "capacity_p95_mbps": ("capacity p95 (1 s bins)", "Mbit/s"),
        "max_mbps_1s": ("capacity max (1 s bins)", "Mbit/s"),
        "max_gap_ms": ("largest gap between lines", "ms"),
        "longest_outage_ms": ("longest outage", "ms"),
    }
    table = Table(title=str(file), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_column("unit")
    ordered = [k for k in labels if k in info] + [k for k in info if k not in labels]
    for key in ordered:
        label, unit = labels.get(key, (key, ""))
        value = info[key]
        if isinstance(value, float):
            text = f"{value:,.3f}".rstrip("0").rstrip(".")
        else:
            text = f"{value:,}" if isinstance(value, int) else str(value)
        table.add_row(label, text, unit)
    _stdout().print(table)


@traces_app.command("synth")
@_friendly_errors
def traces_synth(
    preset: Annotated[str, typer.Argument(help="Preset: lte-driving, lte-stationary, nr-driving.")],
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Directory for <preset>.down/.up.")
    ] = Path("traces"),
    seed: Annotated[int, typer.Option("--seed", min=0)] = 1,
    duration: Annotated[
        float, typer.Option("--duration", help="Trace length (s).", min=0.001)
    ] = 60.0,
) -> None:
    """Write a synthetic cellular-like trace pair (deterministic for a seed)."""
    from cellcc import synthetic

    down, up = synthetic.write_preset(preset, out_dir, duration_s=duration, seed=seed)
    _stdout().print(f"wrote {down} and {up}", markup=False)


@app.command()
@_friendly_errors
def demo(
    out: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("demo-report"),
    duration: Annotated[
        float, typer.Option("--duration", help="Simulated seconds per run.", min=0.001)
    ] = 30.0,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 1,
    schemes: Annotated[
        str | None, typer.Option("--schemes", help="Comma-separated schemes [default: all].")
    ] = None,
) -> None:
    """Offline tour: synthetic traces, every scheme, plots and an HTML report."""
    from cellcc import api
    from cellcc.demo import DEFAULT_PRESETS, demo_steps, run_demo

    names = _split_schemes(schemes) if schemes is not None else api.schemes()
    _check_schemes(names)
    started = time.monotonic()
    with _progress(demo_steps(DEFAULT_PRESETS, names), "demo") as advance:
        index = run_demo(out, duration_s=duration, seed=seed, schemes=names, progress=advance)
    _stdout().print(f"demo report: {index}  ({time.monotonic() - started:.0f} s)", markup=False)


@app.command("schemes")
@_friendly_errors
def list_schemes() -> None:
    """List the congestion-control schemes the simulator implements."""
    from cellcc import api

    for name in api.schemes():
        typer.echo(name)


def main() -> None:
    """Entry point of ``python -m cellcc``."""
    app(prog_name="cellcc")
