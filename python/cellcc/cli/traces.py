"""``cellcc traces ...``: inspect, synthesize, plot, convert, scale and download
Mahimahi traces."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from cellcc.cli._common import (
    SeedOption,
    argument,
    fail,
    friendly_errors,
    option,
    out_path,
    require_file,
    stdout,
    table,
)

__all__ = ["register"]


def traces_info(file: Annotated[Path, argument(help="Mahimahi trace file.")]) -> None:
    """Duration, capacity statistics and the longest outage of a trace."""
    from cellcc import api

    require_file(file, "trace file")
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
    shown = table(str(file))
    shown.add_column("statistic")
    shown.add_column("value", justify="right")
    shown.add_column("unit")
    ordered = [k for k in labels if k in info] + [k for k in info if k not in labels]
    for key in ordered:
        label, unit = labels.get(key, (key, ""))
        value = info[key]
        if isinstance(value, float):
            text = f"{value:,.3f}".rstrip("0").rstrip(".")
        else:
            text = f"{value:,}" if isinstance(value, int) else str(value)
        shown.add_row(label, text, unit)
    stdout().print(shown)


# -- traces synth -----------------------------------------------------------------------

#: The core's trace models (`traces synth --model`), in the order errors list them.
_MODELS = ("mobility", "steps", "constant")


#: Model keys that are a link rate: zero or less is no trace at all.
_POSITIVE_RATES = ("rate_mbps", "base_mbps")
#: Longest synthetic trace, as the core's models allow (cellcc_link::synth).
MAX_SYNTH_S = 3600.0


@dataclass(frozen=True)
class _ModelOption:
    """An option of `traces synth --model`: it sets the configuration key of its name
    (``--speed-kmh`` → ``speed_kmh``) for the models that take it."""

    flag: str
    kind: type
    models: tuple[str, ...]  # in the order of _MODELS
    help: str

    @property
    def key(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


#: Every model option, declared once: the command's parameters, their order in --help,
#: and which model accepts which option are all derived from this table.
_MODEL_OPTIONS = (
    _ModelOption("--speed-kmh", float, ("mobility",), "mobility: UE speed [60]."),
    _ModelOption(
        "--direction",
        str,
        ("mobility", "steps"),
        "mobility: away, towards, pass [away]; steps: up, down, alternate [up].",
    ),
    _ModelOption("--rat", str, ("mobility",), "mobility: lte or nr [lte]."),
    _ModelOption("--bandwidth-mhz", float, ("mobility",), "mobility: channel bandwidth [20]."),
    _ModelOption("--carrier-ghz", float, ("mobility",), "mobility: carrier frequency [2.6]."),
    _ModelOption(
        "--start-distance-m",
        float,
        ("mobility",),
        "mobility: distance from the site at t = 0 [50].",
    ),
    _ModelOption("--base-mbps", float, ("steps",), "steps: base rate (required)."),
    _ModelOption("--factor", float, ("steps",), "steps: step factor [2]."),
    _ModelOption("--warmup-s", float, ("steps",), "steps: warm-up at the base rate [10]."),
    _ModelOption("--period-s", float, ("steps",), "steps: length of each step [7]."),
    _ModelOption("--rate-mbps", float, ("constant",), "constant: rate (required)."),
)


def _with_model_options(command: Callable[..., None]) -> Callable[..., None]:
    """Declare one keyword parameter per row of :data:`_MODEL_OPTIONS` on ``command``
    (which takes them as ``**model_options``), listed after ``duration``."""
    signature = inspect.signature(command, eval_str=True)
    fixed = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in signature.parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    generated = [
        inspect.Parameter(
            o.key,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[o.kind | None, option(o.flag, help=o.help)],
        )
        for o in _MODEL_OPTIONS
    ]
    at = [p.name for p in fixed].index("duration") + 1
    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*fixed[:at], *generated, *fixed[at:]]
    )
    return command


def _param_value(text: str) -> Any:
    """A ``--param`` value: a TOML number, boolean or string; anything else is a string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _synth_config(
    model: str, config_file: Path | None, model_options: dict[str, Any], params: list[str]
) -> dict[str, Any]:
    """The configuration table of `traces synth --model` (file, then options, then
    --param), with errors naming the option."""
    import tomllib

    if model not in _MODELS:
        raise fail(f"--model: expected one of: {', '.join(_MODELS)}, got {model!r}")
    config: dict[str, Any] = {}
    if config_file is not None:
        try:
            config = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise fail(f"--config: {config_file}: {exc}") from None
        except UnicodeDecodeError:
            raise fail(f"--config: {config_file}: not a UTF-8 text file") from None
        except OSError as exc:
            raise fail(f"--config: {config_file}: cannot read: {exc.strerror or exc}") from None
        if config.setdefault("model", model) != model:
            raise fail(f"--config: {config_file} is for model {config['model']!r}, not {model!r}")
    config["model"] = model
    for spec in _MODEL_OPTIONS:
        value = model_options[spec.key]
        if value is None:
            continue
        if model not in spec.models:
            users = ", ".join(spec.models)
            raise fail(f"{spec.flag}: not an option of --model {model} (used by: {users})")
        config[spec.key] = value
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise fail(f"--param: expected KEY=VALUE, e.g. shadowing_sigma_db=8, got {item!r}")
        config[key.strip()] = _param_value(value.strip())
    for key in _POSITIVE_RATES:
        value = config.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and not value > 0:
            flag = "--" + key.replace("_", "-")
            raise fail(
                f"{flag}: expected a rate > 0 Mbit/s, got {value!r} (a trace of no capacity)"
            )
    return config


@_with_model_options
def traces_synth(
    preset: Annotated[
        str | None,
        argument(
            help="Preset of the Python model: lte-driving, lte-stationary, nr-driving "
            "(writes <preset>.down and .up). Omit it when using --model."
        ),
    ] = None,
    model: Annotated[
        str | None,
        option(
            "--model",
            help="Documented model of the core instead of a preset: mobility (3GPP channel "
            "model), steps (ccBench step changes) or constant; writes one trace.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        option(
            "--out",
            "-o",
            help="Trace file for --model [default: <out-dir>/<model>.down].",
            parser=out_path,
        ),
    ] = None,
    out_dir: Annotated[
        Path, option("--out-dir", help="Directory for <preset>.down/.up.", parser=out_path)
    ] = Path("traces"),
    seed: SeedOption = 1,
    duration: Annotated[
        float | None,
        option(
            "--duration",
            help="Trace length (s, at most 3600) [default: 60; steps: 38].",
            min=0.001,
            max=MAX_SYNTH_S,
        ),
    ] = None,
    param: Annotated[
        list[str] | None,
        option("--param", help="Any other model key, KEY=VALUE (repeatable; docs/traces.md)."),
    ] = None,
    config_file: Annotated[
        Path | None,
        option("--config", help="TOML file with the model's keys (options override it)."),
    ] = None,
    **model_options: Any,  # one per row of _MODEL_OPTIONS, by key
) -> None:
    """Write a synthetic trace: a Python preset pair, or one trace of a core model
    (deterministic for a seed)."""
    from cellcc import synthetic, traces

    if model is None:
        if preset is None:
            raise fail(
                "give a PRESET (lte-driving, lte-stationary, nr-driving) or "
                "--model mobility|steps|constant"
            )
        extra = [o.flag for o in _MODEL_OPTIONS if model_options[o.key] is not None]
        extra += ["--param"] if param else []
        extra += ["--out"] if out is not None else []
        extra += ["--config"] if config_file is not None else []
        if extra:
            raise fail(f"{extra[0]}: only applies with --model (presets take --out-dir)")
        down, up = synthetic.write_preset(
            preset, out_dir, duration_s=60.0 if duration is None else duration, seed=seed
        )
        stdout().print(f"wrote {down} and {up}", markup=False, soft_wrap=True)
        return
    if preset is not None:
        raise fail(f"give either a PRESET ({preset!r}) or --model, not both")
    if config_file is not None and not config_file.is_file():
        raise fail(f"--config: {config_file}: no such file")
    config = _synth_config(model, config_file, model_options, param or [])
    if duration is not None:
        config["duration_s"] = duration
    stamps = traces.synthesize(config, seed=seed)
    path = out if out is not None else out_dir / f"{model}.down"
    traces.write_trace(path, stamps)
    seconds = int(stamps[-1]) / 1e3
    mean = len(stamps) * traces.LINE_BYTES * 8 / seconds / 1e6
    stdout().print(
        f"wrote {path}: {len(stamps):,} lines, {seconds:g} s, mean {mean:.2f} Mbit/s "
        f"(model {model}, seed {seed})",
        markup=False,
        soft_wrap=True,
    )


# -- plot, convert, scale, download -----------------------------------------------------


def traces_plot(
    files: Annotated[list[Path], argument(help="Mahimahi traces to overlay.")],
    out: Annotated[
        Path, option("--out", "-o", help="Image to write (.png, .svg or .pdf).", parser=out_path)
    ] = Path("trace-capacity.png"),
    bin_ms: Annotated[int, option("--bin-ms", help="Capacity bin width (ms).", min=1)] = 1000,
    title: Annotated[str | None, option("--title", help="Plot title.")] = None,
) -> None:
    """Plot capacity over time of one or more traces, overlaid."""
    from cellcc import traces

    for file in files:
        require_file(file, "trace file")
    path = traces.plot_capacity(files, out, bin_ms=bin_ms, title=title)
    stdout().print(f"wrote {path}", markup=False, soft_wrap=True)


def traces_convert(
    source: Annotated[
        Path, argument(help="Irish 5G CSV (G-NetTrack) or a 't_s rate_mbps' text file.")
    ],
    out: Annotated[Path, option("--out", "-o", help="Mahimahi trace to write.", parser=out_path)],
    fmt: Annotated[
        str, option("--format", help="auto (.csv = irish-csv, else rates), irish-csv or rates.")
    ] = "auto",
    column: Annotated[
        str, option("--column", help="irish-csv: rate column in kbit/s, e.g. UL_bitrate.")
    ] = "DL_bitrate",
    duration: Annotated[
        float | None,
        option(
            "--duration",
            help="rates: trace length from the first line (s) [default: the last interval "
            "as long as the one before].",
            min=0.001,
        ),
    ] = None,
    max_gap_s: Annotated[
        int, option("--max-gap-s", help="irish-csv: longest gap between rows (s).", min=1)
    ] = 10,
) -> None:
    """Convert per-second throughput or rate intervals into a Mahimahi trace."""
    from cellcc import traces

    report = traces.convert(
        source, out, kind=fmt, column=column, duration_s=duration, max_gap_s=max_gap_s
    )
    console = stdout()
    console.print(
        f"wrote {report.output}: {report.lines:,} lines, {report.duration_s:g} s, "
        f"mean {report.mean_mbps:.3f} Mbit/s ({report.kind})",
        markup=False,
        soft_wrap=True,
    )
    for note in report.notes:
        console.print(f"  {note}", markup=False, soft_wrap=True)


def traces_scale(
    file: Annotated[Path, argument(help="Mahimahi trace.")],
    factor: Annotated[str, option("--factor", help="Capacity multiplier, e.g. 3, 0.5 or 1/3.")],
    out: Annotated[Path, option("--out", "-o", help="Scaled trace to write.", parser=out_path)],
) -> None:
    """Multiply a trace's capacity (exact carry; the loop period is kept)."""
    from cellcc import traces

    require_file(file, "trace file")
    exact = traces.parse_factor(factor)
    before, after = traces.scale(file, out, exact)
    stdout().print(
        f"wrote {out}: {before:,} → {after:,} lines (×{exact})", markup=False, soft_wrap=True
    )


def traces_download(
    trace_set: Annotated[str, option("--set", help="mahimahi, ireland-5g-2020 or all.")] = "all",
    dest: Annotated[
        Path,
        option("--dest", help="Directory that receives <set>/... files.", parser=out_path),
    ] = Path("traces"),
    mirror: Annotated[
        str | None,
        option(
            "--mirror",
            envvar="CELLCC_TRACE_MIRROR",
            help="Base URL replacing https://raw.githubusercontent.com (same layout; "
            "http://, https:// or file://).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, option("--only", help="Fetch only this file name (repeatable).")
    ] = None,
    timeout: Annotated[
        float, option("--timeout", help="Network timeout per request (s).", min=0.1)
    ] = 60.0,
) -> None:
    """Fetch the public trace sets at pinned commits and verify every sha256."""
    from cellcc import traces
    from cellcc.trace_sources import SETS

    names = list(SETS) if trace_set == "all" else [trace_set]
    console = stdout()
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


def register(app: typer.Typer) -> None:
    """Add the ``traces`` command group to the ``cellcc`` app."""
    group = typer.Typer(help="Inspect and generate Mahimahi traces.", no_args_is_help=True)
    for name, command in (
        ("info", traces_info),
        ("synth", traces_synth),
        ("plot", traces_plot),
        ("convert", traces_convert),
        ("scale", traces_scale),
        ("download", traces_download),
    ):
        group.command(name)(friendly_errors(command))
    app.add_typer(group, name="traces")
