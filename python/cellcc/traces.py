"""Reading Mahimahi traces and turning them into capacity time series.

A Mahimahi trace has one integer millisecond timestamp per line; each line is one
delivery opportunity (a timestamp repeated k times is k opportunities in that ms). The
link loops the trace with period = the last timestamp (``mm-link``; ``--once`` disables
it). This module only reads traces, for plots and reports; the simulator has its own
parser in Rust, and ``cellcc.trace_info`` gives its statistics.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from cellcc._native import TraceError

__all__ = [
    "OPPORTUNITY_BYTES",
    "capacity_series",
    "read_trace",
    "uplink_sibling",
]

#: Bytes one opportunity can carry: ``PACKET_SIZE`` in mm-link's code and in the simulator
#: (the trace README and man page say 1500; Pantheon subtracts 4 for its capacity plots).
OPPORTUNITY_BYTES = 1504


def read_trace(path: str | os.PathLike[str]) -> np.ndarray:
    """Read and validate a Mahimahi trace; return its timestamps (ms, ``int64``).

    Raises :class:`cellcc.TraceError` naming the file and line when a line is not a
    non-negative integer, the timestamps decrease, the file is empty, or the last
    timestamp is 0 (the same rules as ``mm-link``).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="ascii")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read trace: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not a Mahimahi trace (non-ASCII bytes)") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline
    if not lines:
        raise TraceError(f"{path}: empty trace; expected one millisecond timestamp per line")
    try:
        stamps = np.array([int(line) if line.isdigit() else -1 for line in lines], dtype=np.int64)
    except OverflowError as exc:
        raise TraceError(f"{path}: timestamp does not fit in 64 bits") from exc
    bad = np.flatnonzero(stamps < 0)
    if bad.size:
        line_no = int(bad[0]) + 1
        raise TraceError(
            f"{path}:{line_no}: expected a non-negative integer millisecond timestamp, "
            f"got {lines[line_no - 1]!r}"
        )
    decreasing = np.flatnonzero(np.diff(stamps) < 0)
    if decreasing.size:
        line_no = int(decreasing[0]) + 2
        raise TraceError(
            f"{path}:{line_no}: timestamps must not decrease "
            f"({stamps[line_no - 2]} then {stamps[line_no - 1]})"
        )
    if stamps[-1] == 0:
        raise TraceError(f"{path}:{len(lines)}: the last timestamp must be > 0")
    return stamps


def capacity_series(
    stamps: np.ndarray,
    *,
    duration_s: float,
    bin_ms: float,
    loop: bool = True,
    opportunity_bytes: int = OPPORTUNITY_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """Link capacity per bin, as ``(bin start times in s, Mbit/s)``.

    Follows mm-link: opportunity ``i`` of repetition ``k`` fires at
    ``stamps[i] + k * stamps[-1]`` ms; without ``loop`` the link is silent after the last
    line. Bins are ``[k * bin_ms, (k + 1) * bin_ms)`` over ``[0, duration_s)``; a last
    partial bin is scaled by its true width.
    """
    if bin_ms <= 0 or duration_s <= 0:
        raise ValueError("duration_s and bin_ms must be > 0")
    duration_ms = duration_s * 1000.0
    period = int(stamps[-1])
    repeats = int(np.ceil(duration_ms / period)) + 1 if loop else 1
    times = (stamps[None, :] + period * np.arange(repeats, dtype=np.int64)[:, None]).ravel()
    times = times[times < duration_ms]
    n_bins = int(np.ceil(duration_ms / bin_ms))
    edges = np.minimum(np.arange(n_bins + 1) * bin_ms, duration_ms)
    counts, _ = np.histogram(times, bins=edges)
    widths_ms = np.diff(edges)
    mbps = counts * opportunity_bytes * 8 / (widths_ms * 1000.0)
    return edges[:-1] / 1000.0, mbps


def uplink_sibling(downlink: str | os.PathLike[str]) -> Path | None:
    """The ``.up`` trace next to a ``.down`` trace, if it exists (Pantheon/C2TCP layout)."""
    path = Path(downlink)
    if path.suffix != ".down":
        return None
    sibling = path.with_suffix(".up")
    return sibling if sibling.is_file() else None
