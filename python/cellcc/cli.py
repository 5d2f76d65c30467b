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
    if "flow_direction" in frame.columns and (frame["flow_direction"] == "up").any():
        # Uplink flows (docs/scenarios.md): say which way each row's data goes.
        at = shown.index("scheme") + 1 if "scheme" in shown else len(shown)
        shown.insert(at, "flow_direction")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in shown:
        text = column in ("scheme", "trace", "flow_direction")
        table.add_column(
            _TERMINAL_COLUMNS.get(column, "dir" if column == "flow_direction" else column),
            justify="left" if text else "right",
            no_wrap=text,
        )
    for record in frame[shown].astype(object).to_dict(orient="records"):
        if record.get("flow") in (-1, -3):
            # The downlink and uplink flows' aggregates (the dir column tells them apart).
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
        problem = api.unknown_scheme(name, known)
        if problem is not None:
            raise _fail(f"{option}: {problem}")


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


#: Options of `traces synth --model`, by model: CLI option → configuration key.
_SYNTH_OPTIONS: dict[str, dict[str, str]] = {
    "mobility": {
        "--speed-kmh": "speed_kmh",
        "--direction": "direction",
        "--rat": "rat",
        "--bandwidth-mhz": "bandwidth_mhz",
        "--carrier-ghz": "carrier_ghz",
        "--start-distance-m": "start_distance_m",
    },
    "steps": {
        "--base-mbps": "base_mbps",
        "--factor": "factor",
        "--direction": "direction",
        "--warmup-s": "warmup_s",
        "--period-s": "period_s",
    },
    "constant": {"--rate-mbps": "rate_mbps"},
}


def _param_value(text: str) -> Any:
    """A ``--param`` value: a TOML number, boolean or string; anything else is a string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _synth_config(
    model: str, config_file: Path | None, options: dict[str, Any], params: list[str]
) -> dict[str, Any]:
    """The configuration table of `traces synth --model` (file, then options, then
    --param), with errors naming the option."""
    import tomllib

    if model not in _SYNTH_OPTIONS:
        raise _fail(f"--model: expected one of: {', '.join(_SYNTH_OPTIONS)}, got {model!r}")
    config: dict[str, Any] = {}
    if config_file is not None:
        try:
            config = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise _fail(f"--config: {config_file}: {exc}") from None
        if config.setdefault("model", model) != model:
            raise _fail(f"--config: {config_file} is for model {config['model']!r}, not {model!r}")
    config["model"] = model
    for option, value in options.items():
        if value is None:
            continue
        key = _SYNTH_OPTIONS[model].get(option)
        if key is None:
            users = [m for m, table in _SYNTH_OPTIONS.items() if option in table]
            raise _fail(f"{option}: not an option of --model {model} (used by: {', '.join(users)})")
        config[key] = value
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--param: expected KEY=VALUE, e.g. shadowing_sigma_db=8, got {item!r}")
        config[key.strip()] = _param_value(value.strip())
    return config


@traces_app.command("synth")
@_friendly_errors
def traces_synth(
    preset: Annotated[
        str | None,
        typer.Argument(
            help="Preset of the Python model: lte-driving, lte-stationary, nr-driving "
            "(writes <preset>.down and .up). Omit it when using --model."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Documented model of the core instead of a preset: mobility (3GPP channel "
            "model), steps (ccBench step changes) or constant; writes one trace.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Trace file for --model [default: <out-dir>/<model>.down]."
        ),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Directory for <preset>.down/.up.")
    ] = Path("traces"),
    seed: Annotated[int, typer.Option("--seed", min=0)] = 1,
    duration: Annotated[
        float | None,
        typer.Option("--duration", help="Trace length (s) [default: 60; steps: 38].", min=0.001),
    ] = None,
    speed_kmh: Annotated[
        float | None, typer.Option("--speed-kmh", help="mobility: UE speed [60].")
    ] = None,
    direction: Annotated[
        str | None,
        typer.Option(
            "--direction",
            help="mobility: away, towards, pass [away]; steps: up, down, alternate [up].",
        ),
    ] = None,
    rat: Annotated[str | None, typer.Option("--rat", help="mobility: lte or nr [lte].")] = None,
    bandwidth_mhz: Annotated[
        float | None, typer.Option("--bandwidth-mhz", help="mobility: channel bandwidth [20].")
    ] = None,
    carrier_ghz: Annotated[
        float | None, typer.Option("--carrier-ghz", help="mobility: carrier frequency [2.6].")
    ] = None,
    start_distance_m: Annotated[
        float | None,
        typer.Option("--start-distance-m", help="mobility: distance from the site at t = 0 [50]."),
    ] = None,
    base_mbps: Annotated[
        float | None, typer.Option("--base-mbps", help="steps: base rate (required).")
    ] = None,
    factor: Annotated[
        float | None, typer.Option("--factor", help="steps: step factor [2].")
    ] = None,
    warmup_s: Annotated[
        float | None, typer.Option("--warmup-s", help="steps: warm-up at the base rate [10].")
    ] = None,
    period_s: Annotated[
        float | None, typer.Option("--period-s", help="steps: length of each step [7].")
    ] = None,
    rate_mbps: Annotated[
        float | None, typer.Option("--rate-mbps", help="constant: rate (required).")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", help="Any other model key, KEY=VALUE (repeatable; docs/traces.md)."
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="TOML file with the model's keys (options override it)."),
    ] = None,
) -> None:
    """Write a synthetic trace: a Python preset pair, or one trace of a core model
    (deterministic for a seed)."""
    from cellcc import synthetic, traces

    options = {
        "--speed-kmh": speed_kmh,
        "--direction": direction,
        "--rat": rat,
        "--bandwidth-mhz": bandwidth_mhz,
        "--carrier-ghz": carrier_ghz,
        "--start-distance-m": start_distance_m,
        "--base-mbps": base_mbps,
        "--factor": factor,
        "--warmup-s": warmup_s,
        "--period-s": period_s,
        "--rate-mbps": rate_mbps,
    }
    if model is None:
        if preset is None:
            raise _fail(
                "give a PRESET (lte-driving, lte-stationary, nr-driving) or "
                "--model mobility|steps|constant"
            )
        extra = [o for o, v in options.items() if v is not None]
        extra += ["--param"] if param else []
        extra += ["--out"] if out is not None else []
        extra += ["--config"] if config_file is not None else []
        if extra:
            raise _fail(f"{extra[0]}: only applies with --model (presets take --out-dir)")
        down, up = synthetic.write_preset(
            preset, out_dir, duration_s=60.0 if duration is None else duration, seed=seed
        )
        _stdout().print(f"wrote {down} and {up}", markup=False, soft_wrap=True)
        return
    if preset is not None:
        raise _fail(f"give either a PRESET ({preset!r}) or --model, not both")
    if config_file is not None and not config_file.is_file():
        raise _fail(f"--config: {config_file}: no such file")
    config = _synth_config(model, config_file, options, param or [])
    if duration is not None:
        config["duration_s"] = duration
    stamps = traces.synthesize(config, seed=seed)
    path = out if out is not None else out_dir / f"{model}.down"
    traces.write_trace(path, stamps)
    seconds = int(stamps[-1]) / 1e3
    mean = len(stamps) * traces.LINE_BYTES * 8 / seconds / 1e6
    _stdout().print(
        f"wrote {path}: {len(stamps):,} lines, {seconds:g} s, mean {mean:.2f} Mbit/s "
        f"(model {model}, seed {seed})",
        markup=False,
        soft_wrap=True,
    )


@traces_app.command("plot")
@_friendly_errors
def traces_plot(
    files: Annotated[list[Path], typer.Argument(help="Mahimahi traces to overlay.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Image to write (.png, .svg or .pdf).")
    ] = Path("trace-capacity.png"),
    bin_ms: Annotated[int, typer.Option("--bin-ms", help="Capacity bin width (ms).", min=1)] = 1000,
    title: Annotated[str | None, typer.Option("--title", help="Plot title.")] = None,
) -> None:
    """Plot capacity over time of one or more traces, overlaid."""
    from cellcc import traces

    for file in files:
        if not file.is_file():
            raise _fail(
                f"{file}: no such trace file" if not file.exists() else f"{file}: not a file"
            )
    path = traces.plot_capacity(files, out, bin_ms=bin_ms, title=title)
    _stdout().print(f"wrote {path}", markup=False, soft_wrap=True)


@traces_app.command("convert")
@_friendly_errors
def traces_convert(
    source: Annotated[
        Path, typer.Argument(help="Irish 5G CSV (G-NetTrack) or a 't_s rate_mbps' text file.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Mahimahi trace to write.")],
    fmt: Annotated[
        str,
        typer.Option("--format", help="auto (.csv = irish-csv, else rates), irish-csv or rates."),
    ] = "auto",
    column: Annotated[
        str,
        typer.Option("--column", help="irish-csv: rate column in kbit/s, e.g. UL_bitrate."),
    ] = "DL_bitrate",
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration",
            help="rates: trace length from the first line (s) [default: the last interval "
            "as long as the one before].",
            min=0.001,
        ),
    ] = None,
    max_gap_s: Annotated[
        int,
        typer.Option("--max-gap-s", help="irish-csv: longest gap between rows (s).", min=1),
    ] = 10,
) -> None:
    """Convert per-second throughput or rate intervals into a Mahimahi trace."""
    from cellcc import traces

    report = traces.convert(
        source, out, kind=fmt, column=column, duration_s=duration, max_gap_s=max_gap_s
    )
    console = _stdout()
    console.print(
        f"wrote {report.output}: {report.lines:,} lines, {report.duration_s:g} s, "
        f"mean {report.mean_mbps:.3f} Mbit/s ({report.kind})",
        markup=False,
        soft_wrap=True,
    )
    for note in report.notes:
        console.print(f"  {note}", markup=False, soft_wrap=True)


@traces_app.command("scale")
@_friendly_errors
def traces_scale(
    file: Annotated[Path, typer.Argument(help="Mahimahi trace.")],
    factor: Annotated[
        str, typer.Option("--factor", help="Capacity multiplier, e.g. 3, 0.5 or 1/3.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Scaled trace to write.")],
) -> None:
    """Multiply a trace's capacity (exact carry; the loop period is kept)."""
    from cellcc import traces

    if not file.is_file():
        raise _fail(f"{file}: no such trace file" if not file.exists() else f"{file}: not a file")
    exact = traces.parse_factor(factor)
    before, after = traces.scale(file, out, exact)
    _stdout().print(
        f"wrote {out}: {before:,} → {after:,} lines (×{exact})", markup=False, soft_wrap=True
    )


@traces_app.command("download")
@_friendly_errors
def traces_download(
    trace_set: Annotated[
        str, typer.Option("--set", help="mahimahi, ireland-5g-2020 or all.")
    ] = "all",
    dest: Annotated[
        Path, typer.Option("--dest", help="Directory that receives <set>/... files.")
    ] = Path("traces"),
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror",
            envvar="CELLCC_TRACE_MIRROR",
            help="Base URL replacing https://raw.githubusercontent.com (same layout; "
            "http://, https:// or file://).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Fetch only this file name (repeatable)."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Network timeout per request (s).", min=0.1)
    ] = 60.0,
) -> None:
    """Fetch the public trace sets at pinned commits and verify every sha256."""
    from cellcc import traces
    from cellcc.trace_sources import SETS

    names = list(SETS) if trace_set == "all" else [trace_set]
    console = _stdout()
    counts = {"downloaded": 0, "replaced": 0, "present": 0}

    def show(result: Any) -> None:
        counts[result.status] += 1
        label = {"present": "ok (present)", "replaced": "replaced"}.get(result.status, "fetched")
        console.print(f"{label:<13} {result.path}", markup=False, soft_wrap=True)

    traces.download(names, dest, mirror=mirror, only=only or (), timeout=timeout, progress=show)
    console.print(
        f"{counts['downloaded'] + counts['replaced']} downloaded, {counts['present']} already "
        f"present, all sha256 verified; GPL-3.0 data: keep it out of non-GPL packages",
        markup=False,
        soft_wrap=True,
    )


@app.command()
@_friendly_errors
def demo(
    out: Annotated[Path, typer.Option("--out", help="Output directory.")] = Path("demo-report"),
    duration: Annotated[
        float, typer.Option("--duration", help="Simulated seconds per run.", min=0.001)
    ] = 30.0,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 1,
    schemes: Annotated[
        str | None,
        typer.Option(
            "--schemes",
            help="Comma-separated schemes [default: the papers' algorithms and baselines].",
        ),
    ] = None,
) -> None:
    """Offline tour: synthetic traces, the papers' schemes, plots and an HTML report."""
    from cellcc.demo import DEFAULT_PRESETS, DEFAULT_SCHEMES, demo_steps, run_demo

    names = _split_schemes(schemes) if schemes is not None else list(DEFAULT_SCHEMES)
    _check_schemes(names)
    started = time.monotonic()
    with _progress(demo_steps(DEFAULT_PRESETS, names), "demo") as advance:
        index = run_demo(out, duration_s=duration, seed=seed, schemes=names, progress=advance)
    _stdout().print(f"demo report: {index}  ({time.monotonic() - started:.0f} s)", markup=False)


@app.command("schemes")
@_friendly_errors
def list_schemes(
    names_only: bool = typer.Option(False, "--names", help="Print only the names."),
    as_json: bool = typer.Option(False, "--json", help="Print the registry as JSON."),
) -> None:
    """List every congestion-control scheme: what it is, its source paper, RFC or kernel
    file, its documentation page, and its parameters with their defaults."""
    import json

    from cellcc import api

    info = api.scheme_info()
    if as_json:
        typer.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    for s in info:
        if names_only:
            typer.echo(s["name"])
            continue
        typer.echo(f"{s['name']}: {s['description']}")
        typer.echo(f"    source: {s['source']}")
        typer.echo(f"    docs:   {s['doc']}")
        params = [_param_text(p) for p in s["params"]]
        typer.echo(f"    params: {', '.join(params) if params else '(none)'}")
    if not names_only:
        typer.echo(
            "In comparisons, <scheme>+codel and <scheme>+pie put that AQM "
            "on both directions' queues."
        )


def _param_text(param: dict[str, Any]) -> str:
    kind = param["kind"]
    if kind == "value":
        return f"{param['key']} = {param['default']}"
    if kind == "fixed":
        return f"{param['key']} = {param['default']} (fixed by the preset)"
    labels = {"unset": "unset", "required": "required", "flow_seed": "seed from the run"}
    return f"{param['key']} ({labels.get(kind, kind)})"


# Sweeps, the experiment catalogue and `reproduce` live in their own module, which uses
# the helpers above.
from cellcc import cli_sweep as _cli_sweep  # noqa: E402

_cli_sweep.register(app)

from cellcc import cli_real as _cli_real  # noqa: E402

_cli_real.register(app)


def main() -> None:
    """Entry point of ``python -m cellcc``."""
    app(prog_name="cellcc")
