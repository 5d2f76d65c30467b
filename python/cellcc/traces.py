"""Trace tools: read, plot, convert, scale, synthesise and download Mahimahi traces.

Traces are parsed and validated by the Rust core only (:func:`read_timestamps` gets the
timestamps from ``cellcc._core``); this module turns rates into timestamps and back.
docs/traces.md describes every rule; the essentials:

* A Mahimahi line is one 1500-byte packet (the README convention, :data:`LINE_BYTES`) at
  a millisecond timestamp. Converted traces spread each interval's bytes evenly over its
  milliseconds with an exact integer carry: millisecond ``m`` (covering ``[m, m+1)``)
  adds its rate to a running total and gets a line at timestamp ``m + 1`` for every
  whole 1500 bytes. Timestamps therefore start at ≥ 1, and the file holds
  ``⌊total bytes / 1500⌋`` lines.
* The last line is the loop period. When the last millisecond has no line (a zero-rate
  tail, or a scaled-down trace), one line is added there, the only deviation from the
  source's byte count (at most 1500 bytes per period).
* Irish 5G CSVs (G-NetTrack, one row about every second, ``DL_bitrate`` in kbit/s) are
  cut into whole seconds from the first ``Timestamp``: rows in the same second are
  averaged; a second with no row, or only ``-`` values, holds the previous second's
  rate (0 before the first value); a gap longer than ``max_gap_s`` is an error.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from cellcc import _native
from cellcc._native import TraceError, UsageError
from cellcc.results import save_figure_atomic, write_text_atomic

# Downloading lives in its own module; these names stay importable from here.
from cellcc.trace_download import DownloadError, DownloadResult, download

__all__ = [
    "LINE_BYTES",
    "ConversionReport",
    "DownloadError",
    "DownloadResult",
    "capacity_mbps",
    "convert",
    "download",
    "parse_factor",
    "plot_capacity",
    "rate_intervals_per_ms",
    "read_irish_csv",
    "read_timestamps",
    "render",
    "scale",
    "scale_timestamps",
    "synthesize",
    "timestamps_from_rates",
    "uplink_sibling",
    "write_trace",
]

#: Image formats `traces plot` writes.
PLOT_SUFFIXES = (".png", ".svg", ".pdf")
#: Bytes per trace line when converting rates (Mahimahi README convention).
LINE_BYTES = 1500
#: Rate × milliseconds units (bit/s · ms) per line: 1500 · 8 bits · 1000 ms/s.
_UNITS_PER_LINE = LINE_BYTES * 8 * 1000
#: Timestamp format of the Irish 5G dataset (G-NetTrack Pro), e.g. 2019.12.14_10.16.30.
IRISH_TIME_FORMAT = "%Y.%m.%d_%H.%M.%S"
_IRISH_TIME_COLUMN = "Timestamp"
#: Values of a G-NetTrack column that mean "no reading".
_NO_READING = ("-", "")
#: Largest cumulative total the int64 carry may reach (headroom below 2^63).
_CARRY_LIMIT = 2**62
#: Highest rate a converted trace may hold: 1 Tbit/s, far above any cellular link and
#: far below where the per-millisecond carry would overflow.
MAX_RATE_MBPS = 1e6
#: Longest converted trace: six hours (21.6 M per-millisecond rates, ~170 MB of
#: integers), beyond any published cellular trace; the memory stays bounded.
MAX_TRACE_S = 21_600.0
#: Most lines of a trace written here: the simulator reads no more
#: (``MAX_TRACE_OPPORTUNITIES``, docs/scenarios.md "Limits").
MAX_TRACE_LINES = 50_000_000


def uplink_sibling(downlink: str | os.PathLike[str]) -> Path | None:
    """The ``.up`` trace next to a ``.down`` trace, if it exists (Pantheon/C2TCP layout)."""
    path = Path(downlink)
    if path.suffix != ".down":
        return None
    sibling = path.with_suffix(".up")
    return sibling if sibling.is_file() else None


# -- reading, writing, measuring ---------------------------------------------------------


def read_timestamps(path: str | os.PathLike[str]) -> np.ndarray:
    """Timestamps (ms, int64) of a Mahimahi trace, validated by the core."""
    raw = _native.trace_timestamps(os.fspath(path))
    return np.frombuffer(raw, dtype="<u4").astype(np.int64)


def render(stamps: np.ndarray) -> str:
    """Trace text: one timestamp per line, with a trailing newline."""
    return "\n".join(map(str, np.asarray(stamps).tolist())) + "\n"


def write_trace(path: str | os.PathLike[str], stamps: np.ndarray) -> Path:
    """Write timestamps as a Mahimahi trace, atomically."""
    return write_text_atomic(path, render(stamps))


def capacity_mbps(stamps: np.ndarray, *, bin_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Capacity per ``bin_ms`` bin over one period: ``(bin start s, Mbit/s)``.

    Line ``m`` carries millisecond ``m − 1`` (``m = 0`` counts in millisecond 0), so the
    bins tile ``[0, period)``; rates use 1500-byte lines and the last bin's true length.
    """
    if bin_ms < 1:
        raise UsageError(f"bin_ms: expected at least 1 ms, got {bin_ms}")
    period = int(stamps[-1])
    n_bins = max(1, math.ceil(period / bin_ms))
    index = (np.maximum(stamps, 1) - 1) // bin_ms
    counts = np.bincount(index, minlength=n_bins)[:n_bins]
    starts = np.arange(n_bins) * bin_ms
    lengths_ms = np.minimum(starts + bin_ms, max(period, 1)) - starts
    mbps = counts * (LINE_BYTES * 8) / (lengths_ms / 1e3) / 1e6
    return starts / 1e3, mbps


def plot_capacity(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    bin_ms: int = 1000,
    title: str | None = None,
) -> Path:
    """Capacity over time of one or more traces, overlaid, saved atomically (PNG/SVG/PDF)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from cellcc.plots import PALETTE, check_text, literal

    target = Path(out)
    if target.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(
            f"--out: {target}: cannot write a {target.suffix or 'suffix-less'} image; "
            f"name it {', '.join('*' + s for s in PLOT_SUFFIXES)}"
        )
    if title is not None:
        check_text(title, "--title")
    figure = Figure(figsize=(8.0, 3.6), layout="constrained", facecolor="white")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for i, path in enumerate(paths):
        t, mbps = capacity_mbps(read_timestamps(path), bin_ms=bin_ms)
        mean = float(np.average(mbps, weights=np.diff(np.append(t, t[-1] + bin_ms / 1e3))))
        ax.step(
            t, mbps, where="post", color=PALETTE[i % len(PALETTE)], linewidth=1.1,
            label=literal(f"{Path(path).name} (mean {mean:.2f} Mbit/s)"),
        )  # fmt: skip
    ax.set_xlabel("Time (s)")
    ax.set_ylabel(f"Capacity (Mbit/s, {bin_ms} ms bins)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.35, linewidth=0.6)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_title(title or "Trace capacity (1500-byte lines)")
    return save_figure_atomic(figure, target)


def synthesize(config: Mapping[str, Any], *, seed: int) -> np.ndarray:
    """Timestamps of a synthetic trace from the Rust channel/step models
    (``cellcc_link::synth``; keys in docs/traces.md)."""
    raw = _native.synth_trace(config, seed)
    return np.frombuffer(raw, dtype="<u4").astype(np.int64)


def check_line_count(total: int, what: str) -> None:
    """Refuse, before allocating it, a trace of more lines than a trace may hold."""
    if total > MAX_TRACE_LINES:
        raise UsageError(
            f"{what} would give {total:,} lines, more than a trace may hold ({MAX_TRACE_LINES:,})"
        )


# -- rates → timestamps ----------------------------------------------------------------


def timestamps_from_rates(rate_bps_per_ms: np.ndarray) -> np.ndarray:
    """Mahimahi timestamps for a rate (bit/s, integers) held over each millisecond.

    Millisecond ``m`` adds its rate to an exact carry; every whole 1500-byte line is
    offered at timestamp ``m + 1``. A line is added at the end if the last millisecond
    has none, so the period equals the length.
    """
    rates = np.asarray(rate_bps_per_ms, dtype=np.int64)
    n = len(rates)
    if n == 0:
        raise UsageError("a trace needs at least 1 ms of rates")
    if int(rates.max(initial=0)) * n >= _CARRY_LIMIT:
        raise UsageError("rates too high for the trace length (carry would overflow 64 bits)")
    lines = np.cumsum(rates) // _UNITS_PER_LINE
    check_line_count(int(lines[-1]), "the rates")
    counts = np.diff(lines, prepend=0)
    stamps = np.repeat(np.arange(1, n + 1, dtype=np.int64), counts)
    if counts[-1] == 0:
        stamps = np.append(stamps, n)  # the last line is the loop period
    return stamps


@dataclass
class IrishSeries:
    """Per-second rates read from an Irish 5G CSV, with what was done to get them."""

    rates_bps: np.ndarray
    rows: int
    moved_rows: int
    """Rows whose second was taken by the previous row, placed one second later."""
    merged_rows: int
    """Rows more than one second late, averaged into the previous row's second."""
    held_seconds: int
    """Seconds without a row, holding the previous rate."""
    no_reading_rows: int
    """Rows whose value was ``-`` or empty (ignored)."""
    largest_gap_s: int
    """Largest step between consecutive row timestamps."""


def read_irish_csv(
    path: str | os.PathLike[str], *, column: str = "DL_bitrate", max_gap_s: int = 10
) -> IrishSeries:
    """Per-second rates (bit/s) of ``column`` (kbit/s) in an Irish 5G CSV."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{source}: not a UTF-8 text file") from None
    reader = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(reader, [])]
    if not header:
        raise TraceError(f"{source}:1: the file is empty; expected a CSV header line")
    for needed in (_IRISH_TIME_COLUMN, column):
        if needed not in header:
            raise TraceError(
                f"{source}:1: no column {needed!r}; the header has: {', '.join(header)}"
            )
    time_index, value_index = header.index(_IRISH_TIME_COLUMN), header.index(column)
    first: _dt.datetime | None = None
    seconds: list[int] = []
    values: list[float | None] = []
    previous_text = ""
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(
                f"{source}:{line}: expected {len(header)} comma-separated fields, found {len(row)}"
            )
        stamp_text = row[time_index].strip()
        try:
            stamp = _dt.datetime.strptime(stamp_text, IRISH_TIME_FORMAT)
        except ValueError:
            raise TraceError(
                f"{source}:{line}: column {_IRISH_TIME_COLUMN}: expected a time such as "
                f"2019.12.14_10.16.30, found {stamp_text!r}"
            ) from None
        first = stamp if first is None else first
        second = int((stamp - first).total_seconds())
        if seconds and second < seconds[-1]:
            raise TraceError(
                f"{source}:{line}: column {_IRISH_TIME_COLUMN}: {stamp_text} is earlier than "
                f"the previous row's {previous_text}; rows must be in time order"
            )
        if seconds and second - seconds[-1] > max_gap_s:
            raise TraceError(
                f"{source}:{line}: column {_IRISH_TIME_COLUMN}: {second - seconds[-1]} s "
                f"without a row before {stamp_text} (more than {max_gap_s} s); split the "
                "file there or allow longer gaps with --max-gap-s"
            )
        previous_text = stamp_text
        value_text = row[value_index].strip()
        value: float | None = None
        if value_text not in _NO_READING:
            try:
                value = float(value_text)
            except ValueError:
                value = -1.0
            if not math.isfinite(value) or not 0 <= value <= MAX_RATE_MBPS * 1e3:
                raise TraceError(
                    f"{source}:{line}: column {column}: expected a rate in kbit/s (a "
                    f"number from 0 to {MAX_RATE_MBPS * 1e3:g}) or '-', found {value_text!r}"
                )
        seconds.append(second)
        values.append(value)
    if not seconds:
        raise TraceError(f"{source}: no data rows after the header")
    # Each row is a ~1 s rate reading whose timestamp is truncated to the second, so a
    # logger period slightly above or below 1 s puts two rows in one second next to an
    # empty one. Rows keep their order and take one second each: their own, or the next
    # one when the previous row took it; a row later than that is averaged into the
    # previous row's second (a sum and count per second keep the average exact).
    slots: dict[int, list[float]] = {}
    last = -1
    moved = merged = 0
    for second, value in zip(seconds, values, strict=True):
        if value is None:
            continue
        slot = max(second, last + 1)
        if slot > second + 1:
            slots[last][0] += value
            slots[last][1] += 1
            merged += 1
            continue
        moved += slot > second
        slots[slot] = [value, 1]
        last = slot
    n = max(seconds[-1], last) + 1
    if n > MAX_TRACE_S:
        raise TraceError(
            f"{source}: the rows span {n:,} s, more than the longest trace, {MAX_TRACE_S:g} s; "
            "split the file"
        )
    rates = np.zeros(n, dtype=np.int64)
    held_rate = 0
    held = 0
    for second in range(n):
        if second in slots:
            total, count = slots[second]
            held_rate = round(total / count * 1000.0)  # kbit/s → bit/s
        else:
            held += 1  # no reading for this second: the previous rate holds
        rates[second] = held_rate
    gaps = np.diff(np.asarray(seconds))
    return IrishSeries(
        rates_bps=rates,
        rows=len(seconds),
        moved_rows=int(moved),
        merged_rows=merged,
        held_seconds=held,
        no_reading_rows=sum(1 for v in values if v is None),
        largest_gap_s=int(gaps.max(initial=0)),
    )


def rate_intervals_per_ms(
    path: str | os.PathLike[str], *, duration_s: float | None = None
) -> np.ndarray:
    """Per-millisecond rates (bit/s) of a two-column text ``t_s rate_mbps``.

    Each line starts an interval that lasts until the next line's time; times are
    relative to the first line. The last interval ends at ``duration_s`` (from the first
    line) if given, else it is as long as the one before it (1 s for a single line).
    Blank lines and ``#`` comments are ignored; columns are separated by spaces, tabs
    or commas.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{source}: not a UTF-8 text file") from None
    starts: list[float] = []
    rates: list[int] = []
    line_numbers: list[int] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        content = raw.split("#", 1)[0].strip()
        if not content:
            continue
        fields = [f for f in re.split(r"[,\s]+", content) if f]
        if len(fields) != 2:
            raise TraceError(
                f"{source}:{line}: expected two columns 't_s rate_mbps', found {len(fields)}"
            )
        numbers = []
        for col, (name, text_value) in enumerate(zip(("t_s", "rate_mbps"), fields, strict=True)):
            try:
                number = float(text_value)
            except ValueError:
                number = math.nan
            if not math.isfinite(number) or number < 0:
                raise TraceError(
                    f"{source}:{line}: column {col + 1} ({name}): expected a non-negative "
                    f"number, found {text_value!r}"
                )
            numbers.append(number)
        t, mbps = numbers
        if mbps > MAX_RATE_MBPS:
            raise TraceError(
                f"{source}:{line}: column 2 (rate_mbps): {fields[1]} Mbit/s is above the "
                f"highest rate a trace may hold, {MAX_RATE_MBPS:g} Mbit/s"
            )
        if t > MAX_TRACE_S:
            raise TraceError(
                f"{source}:{line}: column 1 (t_s): {fields[0]} s is beyond the longest "
                f"trace, {MAX_TRACE_S:g} s"
            )
        if starts and t <= starts[-1]:
            raise TraceError(
                f"{source}:{line}: column 1 (t_s): {t:g} is not after the previous line's "
                f"{starts[-1]:g}; times must increase"
            )
        starts.append(t)
        rates.append(round(mbps * 1e6))
        line_numbers.append(line)
    if not starts:
        raise TraceError(f"{source}: no 't_s rate_mbps' lines")
    if duration_s is not None:
        if not 0 < duration_s <= MAX_TRACE_S:
            raise UsageError(f"--duration: expected 0 < s <= {MAX_TRACE_S:g}, got {duration_s:g}")
        end = starts[0] + duration_s
        if not end > starts[-1]:
            raise UsageError(
                f"--duration: {duration_s:g} s ends before the last interval of {source} "
                f"starts ({starts[-1] - starts[0]:g} s after the first line)"
            )
    else:
        end = starts[-1] + (starts[-1] - starts[-2] if len(starts) > 1 else 1.0)
    edges_ms = [round((t - starts[0]) * 1000) for t in [*starts, end]]
    lengths = np.diff(np.asarray(edges_ms, dtype=np.int64))
    short = np.flatnonzero(lengths < 1)
    if len(short):
        line = line_numbers[int(short[0])]
        raise TraceError(
            f"{source}:{line}: the interval starting here is shorter than 1 ms once times "
            "are rounded to whole milliseconds"
        )
    return np.repeat(np.asarray(rates, dtype=np.int64), lengths)


@dataclass
class ConversionReport:
    """What :func:`convert` read and wrote."""

    source: Path
    output: Path
    kind: str
    """``irish-csv`` or ``rates``."""
    duration_s: float
    lines: int
    mean_mbps: float
    """Mean capacity of the written trace (1500-byte lines)."""
    notes: list[str] = field(default_factory=list)


def convert(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    kind: str = "auto",
    column: str = "DL_bitrate",
    duration_s: float | None = None,
    max_gap_s: int = 10,
) -> ConversionReport:
    """Convert an Irish 5G CSV (``kind='irish-csv'``, default for ``.csv``) or a
    ``t_s rate_mbps`` text (``kind='rates'``) into a Mahimahi trace at ``output``."""
    path = Path(source)
    if not path.is_file():
        raise TraceError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    if kind == "auto":
        kind = "irish-csv" if path.suffix.lower() == ".csv" else "rates"
    notes: list[str] = []
    if kind == "irish-csv":
        series = read_irish_csv(path, column=column, max_gap_s=max_gap_s)
        per_ms = np.repeat(series.rates_bps, 1000)
        notes.append(
            f"{series.rows} rows over {len(series.rates_bps)} s of {column}: "
            f"{series.moved_rows} rows moved 1 s later (their second was taken), "
            f"{series.merged_rows} averaged into the previous second, "
            f"{series.held_seconds} s without a row held the previous rate, "
            f"{series.no_reading_rows} '-' values ignored, largest gap {series.largest_gap_s} s"
        )
    elif kind == "rates":
        per_ms = rate_intervals_per_ms(path, duration_s=duration_s)
    else:
        raise UsageError(f"--format: expected auto, irish-csv or rates, got {kind!r}")
    check_line_count(int(per_ms.sum()) // _UNITS_PER_LINE, f"{path}: its rates")
    stamps = timestamps_from_rates(per_ms)
    if len(stamps) > int(per_ms.sum()) // _UNITS_PER_LINE:
        notes.append(
            "the last millisecond had no line (a zero or low-rate tail): one line was added "
            "there so that the loop period is the trace length"
        )
    out = write_trace(output, stamps)
    duration = len(per_ms) / 1e3
    return ConversionReport(
        source=path,
        output=out,
        kind=kind,
        duration_s=duration,
        lines=len(stamps),
        mean_mbps=len(stamps) * LINE_BYTES * 8 / duration / 1e6,
        notes=notes,
    )


# -- scaling --------------------------------------------------------------------------


def parse_factor(text: str | float, *, option: str = "--factor") -> Fraction:
    """An exact positive factor from ``3``, ``0.5`` or ``1/3``."""
    try:
        factor = Fraction(str(text).strip())
    except (ValueError, ZeroDivisionError):
        raise UsageError(
            f"{option}: expected a positive number such as 3, 0.5 or 1/3, got {text!r}"
        ) from None
    if factor <= 0:
        raise UsageError(f"{option}: the factor must be positive, got {text!r}")
    return factor


def scale_timestamps(stamps: np.ndarray, factor: Fraction) -> np.ndarray:
    """Multiply a trace's capacity by ``factor`` with an exact carry.

    The cumulative line count up to each millisecond, ``C(m)``, becomes
    ``⌊factor · C(m)⌋``: every millisecond gets its share, the total is
    ``⌊factor · lines⌋``, and the period is unchanged (a line is added at the period if
    the scaled trace has none there).
    """
    period = int(stamps[-1])
    if period > MAX_TRACE_S * 1e3:
        raise UsageError(
            f"a period of {period / 1e3:g} s is longer than the longest trace this can "
            f"scale, {MAX_TRACE_S:g} s"
        )
    if factor.denominator >= _CARRY_LIMIT:
        raise UsageError("--factor: too many digits (carry would overflow)")
    cumulative = np.cumsum(np.bincount(stamps, minlength=period + 1)).astype(np.int64)
    if int(cumulative[-1]) * factor.numerator >= _CARRY_LIMIT:
        raise UsageError("--factor: too many digits for this trace (carry would overflow)")
    check_line_count(
        int(cumulative[-1]) * factor.numerator // factor.denominator, f"--factor: {factor}"
    )
    scaled = cumulative * factor.numerator // factor.denominator
    counts = np.diff(scaled, prepend=0)
    out = np.repeat(np.arange(period + 1, dtype=np.int64), counts)
    if len(out) == 0 or out[-1] != period:
        out = np.append(out, period)
    return out


def scale(
    source: str | os.PathLike[str], output: str | os.PathLike[str], factor: Fraction
) -> tuple[int, int]:
    """Write ``source`` with its capacity multiplied by ``factor``; return the line
    counts before and after."""
    stamps = read_timestamps(source)
    if int(stamps[-1]) > MAX_TRACE_S * 1e3:
        raise TraceError(
            f"{source}: its period, {int(stamps[-1]) / 1e3:g} s, is longer than the longest "
            f"trace this can scale, {MAX_TRACE_S:g} s"
        )
    scaled = scale_timestamps(stamps, factor)
    write_trace(output, scaled)
    return len(stamps), len(scaled)
