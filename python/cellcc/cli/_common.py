"""What every command of the ``cellcc`` command line shares: the app class, consoles,
one-line errors, progress bars, terminal tables, the options several commands take, and
running a sweep (``sweep`` and ``reproduce``).

Command modules import this module and library modules, never each other. Nothing heavy
is imported at module level: rich's progress and table modules, pandas (through
:mod:`cellcc.report`) and the sweep machinery load inside the helpers that use them, so
``cellcc --help`` and ``cellcc --version`` stay fast.
"""

from __future__ import annotations

import copy
import functools
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from cellcc._native import CellccError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

F = TypeVar("F", bound=Callable[..., Any])


class OneLineUsageErrors(typer.Typer):
    """Typer app whose argument errors are one line (``error: ...``, exit code 2), like
    every other cellcc error, instead of a usage block and a boxed message."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args", args[0] if args else sys.argv[1:])
        app = self.only(argv[0]) if argv else self
        if kwargs.get("standalone_mode", True) is False or not argv:
            # No arguments: typer prints the help.
            return typer.Typer.__call__(app, *args, **kwargs)
        kwargs["standalone_mode"] = False
        try:
            code = typer.Typer.__call__(app, *args, **kwargs)
        except typer.Abort:
            stderr().print("error: aborted", markup=False, highlight=False)
            sys.exit(1)
        except typer.TyperException as exc:  # click's usage errors (missing/bad arguments)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            stderr().print(f"error: {message}{hint}", markup=False, highlight=False, soft_wrap=True)
            sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
        sys.exit(code if isinstance(code, int) else 0)

    def only(self, name: Any) -> typer.Typer:
        """This app with only its command or group ``name``, if it has one (else itself).

        Typer builds the click command of every registered command, with its parameters
        from the function's signature, on each call; building only the one that runs
        saves a command such as ``cellcc run`` ~15 ms of CPU time."""
        commands = [c for c in self.registered_commands if c.name == name]
        groups = [g for g in self.registered_groups if g.name == name]
        if self.registered_callback is None or len(commands) + len(groups) != 1:
            return self  # without the callback, one command would become the whole app
        narrowed = copy.copy(self)
        narrowed.registered_commands = commands
        narrowed.registered_groups = groups
        return narrowed


# -- Help texts -------------------------------------------------------------------------
#
# Typer renders help texts as rich markup, where `[default: out/<name>]` or `[away]` is
# a style tag and vanishes from `--help`. Help texts here are plain text: every option and
# argument is declared through these two functions, which escape the brackets.


def option(*names: str, help: str | None = None, **settings: Any) -> Any:
    """``typer.Option`` with a plain-text help text (brackets are shown, not parsed)."""
    return typer.Option(*names, help=_plain(help), **settings)


def argument(*, help: str | None = None, **settings: Any) -> Any:
    """``typer.Argument`` with a plain-text help text (brackets are shown, not parsed)."""
    return typer.Argument(help=_plain(help), **settings)


#: What rich reads as a tag: `[` then a letter, `#`, `/` or `@` (rich.markup.RE_TAGS).
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _plain(text: str | None) -> str | None:
    """``text`` with its tag-like brackets escaped, as ``rich.markup.escape`` does; a
    copy of that rule, because importing rich costs every start-up ~50 ms."""
    if text is None:
        return None
    return _TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)


# -- Options taken by more than one command (declared once) -----------------------------


def out_path(value: str | Path) -> Path:
    """An output path option's value: ``--out ""`` would write into the current
    directory (``Path("")`` is ``.``), so an empty value is refused."""
    if isinstance(value, Path):  # the default
        return value
    if not value.strip():
        raise typer.BadParameter("expected a path, got an empty string")
    return Path(value)


SeedOption = Annotated[int, option("--seed", min=0)]
DurationOption = Annotated[
    float, option("--duration", help="Simulated seconds per run.", min=0.001)
]
JobsOption = Annotated[
    int | None, option("--jobs", "-j", help="Parallel runs [default: all cores].", min=1)
]
ExecutorOption = Annotated[str, option("--executor", help="local (process pool) or ray.")]
AddressOption = Annotated[
    str | None,
    option("--address", help="Ray cluster address (ray executor) [default: a local Ray]."),
]
ShipTracesOption = Annotated[
    bool,
    option(
        "--ship-traces",
        help="Ray: send the trace files to the nodes through the object store (for nodes "
        "that do not see the driver's files).",
    ),
]
QuickOption = Annotated[
    bool, option("--quick", help="Apply the file's [quick] table (shorter runs, fewer seeds).")
]
TracesOption = Annotated[
    Path | None,
    option(
        "--traces",
        help="Directory that {traces} stands for [default: $CELLCC_TRACES, else the "
        "file's traces_dir].",
    ),
]
CatalogueOption = Annotated[
    Path | None, option("--catalogue", help="Catalogue directory [default: experiments/].")
]
MaxRunsOption = Annotated[
    int | None,
    option(
        "--max-runs",
        help="Refuse a sweep that expands to more runs than this (a typo in a grid can "
        "ask for millions) [default: 100000].",
        min=1,
    ),
]


# -- Output and errors ------------------------------------------------------------------


def stdout() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def fail(message: str) -> typer.Exit:
    """Print ``error: <message>`` on stderr; return the exit to raise (code 2)."""
    stderr().print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


def friendly_errors(command: F) -> F:
    """Report cellcc and I/O errors as one line and exit 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CellccError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise fail(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            stderr().print("error: interrupted", markup=False, highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def warn(message: str) -> None:
    """Print a warning line on stderr (the run goes on)."""
    stderr().print(message, markup=False, highlight=False, soft_wrap=True)


def check_writable(directory: Path, option: str = "--out") -> None:
    """Fail naming ``option`` unless files can be created in ``directory`` (created if
    missing): checked before simulating, not after. A probe file is created and removed."""
    import os
    import tempfile

    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".cellcc-probe.", suffix=".tmp", dir=directory)
        os.close(fd)
        Path(probe).unlink()
    except OSError as exc:
        raise fail(f"{option}: {directory}: cannot write there: {exc.strerror or exc}") from None


def require_file(path: Path, what: str) -> None:
    """Fail with ``<path>: no such <what>`` or ``<path>: not a file``."""
    if not path.is_file():
        raise fail(f"{path}: no such {what}" if not path.exists() else f"{path}: not a file")


# -- Progress ---------------------------------------------------------------------------


@contextmanager
def progress(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr; yields ``advance(label)``."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=stderr(), transient=False) as bar:
        task = bar.add_task(description, total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=f"{description} ({label})")

        yield advance
        bar.update(task, description=description)


@contextmanager
def fraction_progress(description: str) -> Iterator[Callable[[float], None] | None]:
    """A transient bar on stderr for one simulation; yields ``update(fraction_done)``.

    When stderr is no terminal to draw on, yields None and does not load rich's progress
    bars: a transient bar shows nothing there (rich's ``Live`` display draws only on a
    terminal), except the empty line ``Progress.stop`` prints, which is printed here."""
    console = stderr()
    if not console.is_jupyter and not (console.is_terminal and not console.is_dumb_terminal):
        try:
            yield None
        finally:
            if not console.is_interactive:
                console.print()
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}% of simulated time"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=1.0)
        yield lambda done: bar.update(task, completed=done)


@contextmanager
def run_progress(total: int, description: str) -> Iterator[Any]:
    """A bar with an ETA on stderr for a sweep; yields the runner's ``progress`` callback."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=stderr(), transient=False) as bar:
        task = bar.add_task(description, total=total)

        def advance(_run: Any, _cached: bool) -> None:
            bar.update(task, advance=1)

        yield advance


# -- Tables -----------------------------------------------------------------------------


def table(title: str | None = None) -> Table:
    """An empty terminal table in the house style (title on the left, simple header)."""
    from rich import box
    from rich.table import Table

    if title is None:
        return Table(box=box.SIMPLE_HEAD)
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)


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


def summary_table(frame: Any, title: str, *, skip: tuple[str, ...] = ()) -> Table:
    """The terminal table of a run's or comparison's summary: a DataFrame, or a result
    table of :mod:`cellcc._columns` (shown without importing pandas)."""
    from cellcc._columns import Table as Columns
    from cellcc._columns import format_cell

    if isinstance(frame, Columns) and frame.lean:
        names = list(frame.columns)
        rows = frame.records()
    else:
        if isinstance(frame, Columns):
            frame = frame.frame()
        names = list(frame.columns)
        rows = frame.astype(object).to_dict(orient="records")
    shown = [c for c in _TERMINAL_COLUMNS if c in names and c not in skip]
    shown = shown or names
    if "flow_direction" in names and any(row["flow_direction"] == "up" for row in rows):
        # Uplink flows (docs/scenarios.md): say which way each row's data goes.
        at = shown.index("scheme") + 1 if "scheme" in shown else len(shown)
        shown.insert(at, "flow_direction")
    result = table(title)
    for column in shown:
        text = column in ("scheme", "trace", "flow_direction")
        result.add_column(
            _TERMINAL_COLUMNS.get(column, "dir" if column == "flow_direction" else column),
            justify="left" if text else "right",
            no_wrap=text,
        )
    for row in rows:
        record = {c: row[c] for c in shown}
        if record.get("flow") in (-1, -3):
            # The downlink and uplink flows' aggregates (the dir column tells them apart).
            record["flow"] = "all"
        loss = record.get("pantheon_loss_rate")
        if isinstance(loss, float) and loss == loss:  # not NaN
            record["pantheon_loss_rate"] = round(100.0 * loss, 2)
        result.add_row(*(format_cell(record[c]) for c in shown))
    return result


def frame_table(frame: Any, title: str) -> Table:
    """Every column of ``frame`` as a terminal table (text left, numbers right)."""
    from cellcc._columns import format_cell

    columns = list(frame.columns)
    result = table(title)
    for column in columns:
        text = frame[column].dtype == object
        result.add_column(str(column), justify="left" if text else "right", no_wrap=text)
    for record in frame.astype(object).to_dict(orient="records"):
        result.add_row(*(format_cell(record[c]) for c in columns))
    return result


# -- Schemes ----------------------------------------------------------------------------


def split_schemes(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def check_schemes(names: list[str], option: str = "--schemes") -> None:
    """Fail naming ``option`` unless ``names`` is a non-empty list of known schemes."""
    from cellcc import api

    known = api.schemes()
    if not names:
        raise fail(f"{option}: expected a comma-separated list of schemes, e.g. cubic,bbr")
    for name in names:
        problem = api.unknown_scheme(name, known)
        if problem is not None:
            raise fail(f"{option}: {problem}")


# -- Sweeps (`sweep` and `reproduce`) ---------------------------------------------------

#: Result columns of the terminal sweep table after the first (the rest are in table.csv).
_SHOWN = 8


def announce_runs(name: str, count: int) -> None:
    """Say how many runs a sweep expands to, before expanding it."""
    stdout().print(f"{name}: {count:,} runs", markup=False, highlight=False, soft_wrap=True)


def check_executor(executor: str, address: str | None, ship_traces: bool = False) -> None:
    if address is not None and executor != "ray":
        raise fail("--address: only applies with --executor ray")
    if ship_traces and executor != "ray":
        raise fail("--ship-traces: only applies with --executor ray")


def command_line(*argv: Any) -> str:
    """The ``cellcc ...`` command that regenerates an artifact (``None`` items dropped)."""
    return shlex.join(["cellcc", *(str(a) for a in argv if a is not None)])


def execute_sweep(
    sweep: Any,
    out: Path,
    *,
    command: str,
    executor: str,
    jobs: int | None,
    address: str | None,
    title: str | None = None,
    ship_traces: bool = False,
) -> dict[str, Any]:
    """Run ``sweep`` into ``out``, write its report, print its table; return a summary.

    ``out`` stays locked from the first run to the report (:func:`output_lock`)."""
    import json

    from cellcc import runner, sweep_report
    from cellcc.results import output_lock

    sweep_report.report_options(sweep)
    runner.check(sweep)
    with output_lock(out):
        with run_progress(len(sweep.runs), sweep.name) as advance:
            outcome = runner.run_sweep(
                sweep,
                out,
                executor=executor,
                jobs=jobs,
                address=address,
                command=command,
                progress=advance,
                validate=False,
                ship_traces=ship_traces,
                warn=warn,
            )
        record = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
        page, frame = sweep_report.write_sweep_report(
            sweep, outcome.results, out, command=command, provenance_record=record, title=title
        )
    console = stdout()
    console.print(
        frame_table(frame.iloc[:, : _SHOWN + 1], f"{sweep.name} ({page.parent}/table.csv)")
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
