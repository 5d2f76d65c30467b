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

Mahimahi's own logs count milliseconds from its ``# init timestamp`` and start the link
at ``# base timestamp: N``; :attr:`MmLog.base_ms` keeps ``N`` and :func:`rebased` moves
every event so the link starts at 0, as in the simulator's and the emulator's logs.
:func:`run_summary` and :func:`run_timeseries` give a log the columns of a simulated
run's summary and link time series (``cellcc analyze``, docs/metrics.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
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
    base_ms: int = 0
    """The ``# base timestamp:`` of the header: when the link started (0 if absent)."""

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
    base_ms = 0
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            if line.startswith("# base timestamp:"):
                value = line.partition(":")[2].strip()
                if not value.isdigit():
                    raise MmLogError(
                        f"{source}:{number}: expected `# base timestamp: MS` with a whole "
                        f"number of ms, found {line.strip()!r}"
                    )
                base_ms = int(value)
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
        base_ms=base_ms,
    )


def read(path: str | os.PathLike[str]) -> MmLog:
    """Parse the ``mm-link`` log file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise MmLogError(
            f"{path}: not a text file ({exc.reason}); expected an mm-link log"
        ) from None
    return parse(text, source=str(path))


def rebased(log: MmLog) -> MmLog:
    """``log`` with every time moved by ``-base_ms`` so the link starts at 0 (Mahimahi's
    logs; the simulator's and the emulator's have base 0). Events before the base, which
    a well-formed log does not have, are refused naming the log."""
    if log.base_ms == 0:
        return log
    times = (log.opportunities_ms, log.arrivals_ms, log.departures_ms, log.drops_ms)
    if any(len(t) and int(t.min()) < log.base_ms for t in times):
        raise MmLogError(f"{log.source}: an event comes before the base timestamp {log.base_ms}")
    return replace(
        log,
        opportunities_ms=log.opportunities_ms - log.base_ms,
        arrivals_ms=log.arrivals_ms - log.base_ms,
        departures_ms=log.departures_ms - log.base_ms,
        drops_ms=log.drops_ms - log.base_ms,
        base_ms=0,
    )


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


# -- the columns of a simulated run ----------------------------------------------------

MAHIMAHI_FRAMING_BYTES = 4
"""Bytes a trace link charges on top of the IP length (the TUN header Mahimahi reads)."""


def framing_bytes(log: MmLog) -> int:
    """Bytes added to each IP length in the log's sizes: 4 on a trace link (the log lists
    delivery opportunities), 0 on a constant-rate link (it lists none)."""
    return MAHIMAHI_FRAMING_BYTES if len(log.opportunities_ms) else 0


def _nearest(values: np.ndarray, q: float) -> float:
    """The nearest-rank percentile (Pantheon's ``nearest``, the simulator's rule)."""
    return float(np.percentile(values, q, method="nearest")) if len(values) else float("nan")


def run_summary(log: MmLog) -> dict[str, float | int | str]:
    """The summary columns of a simulated run that an ``mm-link`` log determines, over the
    whole log: from the link's start (time 0 after :func:`rebased`) to the end of its last
    millisecond. Definitions as docs/metrics.md; what the log cannot know (goodput, one-way
    delay, RTT, retransmissions) is absent rather than guessed.

    * ``pantheon_throughput_mbps``: IP bits that left the link ÷ (last − first departure);
    * ``utilisation``: charged bytes that left the link ÷ bytes the opportunities offered
      (NaN on a constant-rate log, which lists no opportunities);
    * ``qdelay_*``: the per-packet delays of the log (queueing and service at the link);
    * ``drops_queue``: packets the log shows dropped.
    """
    log = rebased(log)
    end = log.end_ms + 1
    seconds = end / 1000.0
    framing = framing_bytes(log)
    dep = log.departures_ms
    ip_bytes = log.departure_bytes - framing
    delays = log.delays_ms.astype(float)
    span_s = (int(dep[-1]) - int(dep[0])) / 1000.0 if len(dep) else 0.0
    capacity_bytes = len(log.opportunities_ms) * OPPORTUNITY_BYTES
    mean = float(delays.mean()) if len(delays) else float("nan")
    return {
        "log": log.source,
        "link": "trace" if framing else "constant rate",
        "duration_s": seconds,
        "packets": len(dep),
        "pantheon_throughput_mbps": (
            float(ip_bytes.sum()) * 8 / span_s / 1e6 if span_s > 0 else float("nan")
        ),
        "egress_mbps": float(ip_bytes.sum()) * 8 / seconds / 1e6,
        "capacity_mbps": capacity_bytes * 8 / seconds / 1e6 if framing else float("nan"),
        "utilisation": (
            float(log.departure_bytes.sum()) / capacity_bytes if capacity_bytes else float("nan")
        ),
        "qdelay_mean_ms": mean,
        "qdelay_p50_ms": _nearest(delays, 50),
        "qdelay_p95_ms": _nearest(delays, 95),
        "qdelay_p99_ms": _nearest(delays, 99),
        "qdelay_mdev_ms": float(np.abs(delays - mean).mean()) if len(delays) else float("nan"),
        "drops_queue": int(log.drop_packets.sum()),
    }


def run_timeseries(log: MmLog, *, bin_ms: int = 500) -> pd.DataFrame:
    """The link rows of a simulated run's time series (docs/metrics.md), from the log:
    ``t_s`` (bin start), ``ingress_mbps`` and ``egress_mbps`` (IP bits arriving at and
    leaving the link in the bin ÷ bin width), ``capacity_mbps`` (opportunities × 1504
    bytes; NaN on a constant-rate log), ``qdelay_ms`` (mean delay of the packets leaving
    in the bin, NaN if none), ``queue_packets`` and ``queue_bytes`` (packets and charged
    bytes in the link at the end of the bin: arrived, not yet departed or dropped)."""
    if bin_ms <= 0:
        raise ValueError(f"bin_ms must be positive, got {bin_ms}")
    log = rebased(log)
    framing = framing_bytes(log)
    end = log.end_ms + 1
    bins = max(1, -(-end // bin_ms))
    edges = np.arange(bins + 1) * bin_ms
    scale = 8 / (bin_ms / 1000.0) / 1e6

    def per_bin(times: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        counts, _ = np.histogram(times, bins=edges, weights=weights)
        return counts.astype(float)

    arrived = per_bin(log.arrivals_ms, log.arrival_bytes - framing)
    sent = per_bin(log.departures_ms, log.departure_bytes - framing)
    offered = per_bin(log.opportunities_ms)
    delay_sum = per_bin(log.departures_ms, log.delays_ms)
    count = per_bin(log.departures_ms)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_delay = np.where(count > 0, delay_sum / np.maximum(count, 1), np.nan)
    # In the link at the end of a bin: arrivals minus departures and drops so far.
    queue_packets = np.cumsum(
        per_bin(log.arrivals_ms) - count - per_bin(log.drops_ms, log.drop_packets)
    )
    queue_bytes = np.cumsum(
        per_bin(log.arrivals_ms, log.arrival_bytes)
        - per_bin(log.departures_ms, log.departure_bytes)
        - per_bin(log.drops_ms, log.drop_bytes)
    )
    return pd.DataFrame(
        {
            "t_s": edges[:-1] / 1000.0,
            "ingress_mbps": arrived * scale,
            "egress_mbps": sent * scale,
            "capacity_mbps": offered * OPPORTUNITY_BYTES * scale if framing else np.nan,
            "qdelay_ms": mean_delay,
            "queue_packets": queue_packets.astype(np.int64),
            "queue_bytes": queue_bytes.astype(np.int64),
        }
    )
