"""Read ``mm-link`` packet logs and compute the bottleneck metrics from them.

The simulator (``metrics.packet_log = true``) and the real-time emulator
(``cellcc-emu --downlink-log``) both write the ``mm-link`` log format (see
``docs/metrics.md``): ``# ...`` header lines, then one event per line with a whole
millisecond timestamp:

* ``t # 1504``: a delivery opportunity of 1504 bytes;
* ``t + size``: a packet of ``size`` charged bytes arrived at the queue;
* ``t - size delay``: a packet left the link after ``delay`` ms in queue and service;
* ``t d npkts nbytes``: packets dropped.

Computing the metrics of both sides with this one module is what makes a comparison
between the simulator and the emulator like for like: the same bytes, the same window,
the same percentile rule as Mahimahi's ``mm-delay-graph`` (per packet, departure time).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

OPPORTUNITY_BYTES = 1504
"""Bytes one trace line carries (Mahimahi's MTU-sized delivery opportunity)."""


class MmLogError(ValueError):
    """A log line that is not in the ``mm-link`` format; names the source and line."""


@dataclass(frozen=True)
class MmLog:
    """The events of one ``mm-link`` log, as arrays of whole milliseconds and bytes."""

    opportunities_ms: np.ndarray
    arrivals_ms: np.ndarray
    arrival_bytes: np.ndarray
    departures_ms: np.ndarray
    departure_bytes: np.ndarray
    delays_ms: np.ndarray
    drops_ms: np.ndarray
    drop_packets: np.ndarray
    drop_bytes: np.ndarray
    source: str = "<log>"

    @property
    def end_ms(self) -> int:
        """Timestamp of the last event (0 for an empty log)."""
        last = [
            int(a[-1])
            for a in (self.opportunities_ms, self.arrivals_ms, self.departures_ms)
            if len(a)
        ]
        return max(last, default=0)


def parse(text: str, *, source: str = "<log>") -> MmLog:
    """Parse the text of an ``mm-link`` log; raises :class:`MmLogError` naming the line."""
    columns: dict[str, list[list[int]]] = {"#": [], "+": [], "-": [], "d": []}
    widths = {"#": 1, "+": 1, "-": 2, "d": 2}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        kind = fields[1] if len(fields) > 1 else ""
        if kind not in widths or len(fields) != 2 + widths[kind]:
            raise MmLogError(
                f"{source}:{number}: expected `t # bytes`, `t + bytes`, `t - bytes delay` "
                f"or `t d packets bytes`, found {line.strip()!r}"
            )
        try:
            values = [int(fields[0])] + [int(v) for v in fields[2:]]
        except ValueError:
            raise MmLogError(
                f"{source}:{number}: fields must be integers, found {line.strip()!r}"
            ) from None
        columns[kind].append(values)

    def array(kind: str, width: int) -> np.ndarray:
        rows = columns[kind]
        return np.asarray(rows, dtype=np.int64).reshape(len(rows), width)

    opp = array("#", 2)
    arr = array("+", 2)
    dep = array("-", 3)
    drop = array("d", 3)
    return MmLog(
        opportunities_ms=opp[:, 0],
        arrivals_ms=arr[:, 0],
        arrival_bytes=arr[:, 1],
        departures_ms=dep[:, 0],
        departure_bytes=dep[:, 1],
        delays_ms=dep[:, 2],
        drops_ms=drop[:, 0],
        drop_packets=drop[:, 1],
        drop_bytes=drop[:, 2],
        source=source,
    )


def read(path: str | os.PathLike[str]) -> MmLog:
    """Parse the ``mm-link`` log file at ``path``."""
    path = Path(path)
    return parse(path.read_text(), source=str(path))


def summary(log: MmLog, *, start_ms: int = 0, end_ms: int | None = None) -> dict[str, float]:
    """Bottleneck metrics over the window ``[start_ms, end_ms)`` (departure times).

    ``throughput_mbps`` counts the charged bytes that left the link; ``capacity_mbps``
    the opportunities offered; ``qdelay_*`` are per-packet queueing delays at the link
    (the ``mm-link`` convention, C2TCP's "queuing delay"). Empty windows give NaN.
    """
    end = log.end_ms + 1 if end_ms is None else end_ms
    if end <= start_ms:
        raise ValueError(f"{log.source}: empty window [{start_ms}, {end}) ms")
    seconds = (end - start_ms) / 1000.0
    dep = (log.departures_ms >= start_ms) & (log.departures_ms < end)
    opp = (log.opportunities_ms >= start_ms) & (log.opportunities_ms < end)
    drops = (log.drops_ms >= start_ms) & (log.drops_ms < end)
    delays = log.delays_ms[dep].astype(float)
    throughput = log.departure_bytes[dep].sum() * 8 / seconds / 1e6
    capacity = opp.sum() * OPPORTUNITY_BYTES * 8 / seconds / 1e6

    def pct(q: float) -> float:
        return float(np.percentile(delays, q)) if len(delays) else float("nan")

    return {
        "throughput_mbps": float(throughput),
        "capacity_mbps": float(capacity),
        "utilisation": float(throughput / capacity) if capacity > 0 else float("nan"),
        "qdelay_mean_ms": float(delays.mean()) if len(delays) else float("nan"),
        "qdelay_p50_ms": pct(50),
        "qdelay_p95_ms": pct(95),
        "packets": int(dep.sum()),
        "drops": int(log.drop_packets[drops].sum()),
        "window_s": seconds,
    }


def timeseries(log: MmLog, *, bin_ms: int = 500, end_ms: int | None = None) -> pd.DataFrame:
    """Per-bin throughput, capacity and mean queueing delay (``t_s`` is the bin start)."""
    if bin_ms <= 0:
        raise ValueError(f"bin_ms must be positive, got {bin_ms}")
    end = log.end_ms + 1 if end_ms is None else end_ms
    bins = max(1, -(-end // bin_ms))
    edges = np.arange(bins + 1) * bin_ms
    scale = 8 / (bin_ms / 1000.0) / 1e6
    sent, _ = np.histogram(log.departures_ms, bins=edges, weights=log.departure_bytes)
    offered, _ = np.histogram(log.opportunities_ms, bins=edges)
    delay_sum, _ = np.histogram(log.departures_ms, bins=edges, weights=log.delays_ms)
    count, _ = np.histogram(log.departures_ms, bins=edges)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_delay = np.where(count > 0, delay_sum / np.maximum(count, 1), np.nan)
    return pd.DataFrame(
        {
            "t_s": edges[:-1] / 1000.0,
            "throughput_mbps": sent * scale,
            "capacity_mbps": offered * OPPORTUNITY_BYTES * scale,
            "qdelay_mean_ms": mean_delay,
        }
    )
