"""Synthetic cellular-like Mahimahi traces, deterministic for a given seed.

Model (per direction), evaluated on a ``STEP_MS`` grid:

1. **Signal-quality state** ``s`` — a birth-death Markov chain over the preset's states
   (for example "poor / fair / good / excellent"). Each step the chain leaves ``s`` with
   probability ``STEP_MS / mean_dwell_ms`` and moves to a neighbouring state, as channel
   quality changes gradually when a phone moves.
2. **Capacity** ``c`` (Mbit/s) — a bounded random walk in the log domain, pulled towards
   the current state's mean: ``x += reversion * (log(mean_s) - x) + sigma * z`` with
   ``z ~ N(0, 1)``; ``c = exp(x)`` clipped to ``[min_mbps, max_mbps]``.
3. **Outages** — start as a Poisson process (``outages_per_min``) and last a uniform
   ``outage_ms`` range; capacity is 0 meanwhile (a handover or deep fade: the link
   stalls and packets wait in the queue, unlike ``mm-onoff`` which drops them).
4. **Opportunities** — every millisecond draws a Poisson number of delivery
   opportunities with mean ``c / (8 * LINE_BYTES)`` per ms, which reproduces the bursty
   per-ms delivery seen in measured LTE traces.

Randomness comes only from ``numpy.random.Generator(PCG64)`` uniforms (whose stream
NumPy keeps stable); the normal and Poisson draws are computed here from those uniforms
(Box-Muller, CDF inversion) so the output depends on the seed alone. The downlink and
uplink, and the capacity and opportunity draws, use separate streams derived from
``(seed, direction, substream, preset name)``.

The output file follows mm-link's rules: timestamps start at 1 ms and never decrease,
and the last line is the trace's last millisecond, so the loop period equals the
requested duration.
"""

from __future__ import annotations

import math
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cellcc.results import write_text_atomic

#: Longest preset trace, as the core's models allow (cellcc_link::synth): the
#: per-millisecond arrays of a longer one would not fit in memory.
MAX_DURATION_S = 3600.0

__all__ = [
    "LINE_BYTES",
    "PRESETS",
    "STEP_MS",
    "DirectionModel",
    "Preset",
    "capacity_mbps",
    "generate",
    "render",
    "write_preset",
]

#: Bytes of capacity per trace line when converting Mbit/s to lines (the trace
#: convention of Mahimahi's README and the Sprout traces; mm-link carries 1504).
LINE_BYTES = 1500
#: Capacity model resolution: the walk and the Markov chain advance every 10 ms.
STEP_MS = 10
#: Stream identifiers mixed into the seed so both directions are independent.
_STREAM_IDS = {"down": 0x646F776E, "up": 0x7570}


@dataclass(frozen=True)
class DirectionModel:
    """Capacity model of one direction (see the module docstring for the equations)."""

    state_means_mbps: tuple[float, ...]
    mean_dwell_s: float
    sigma: float
    reversion: float
    min_mbps: float
    max_mbps: float
    outages_per_min: float
    outage_ms: tuple[int, int]

    def __post_init__(self) -> None:
        if not self.state_means_mbps or min(self.state_means_mbps) <= 0:
            raise ValueError("state_means_mbps must be non-empty and positive")
        if not 0 < self.min_mbps <= self.max_mbps:
            raise ValueError("need 0 < min_mbps <= max_mbps")
        if not 0 <= self.reversion <= 1 or self.sigma < 0 or self.mean_dwell_s <= 0:
            raise ValueError("need reversion in [0, 1], sigma >= 0, mean_dwell_s > 0")
        low, high = self.outage_ms
        if self.outages_per_min < 0 or not 0 < low <= high:
            raise ValueError("need outages_per_min >= 0 and 0 < outage_ms[0] <= outage_ms[1]")


@dataclass(frozen=True)
class Preset:
    """A named pair of downlink/uplink models."""

    name: str
    description: str
    down: DirectionModel
    up: DirectionModel


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            name="lte-driving",
            description="LTE in a moving car: about 1-20 Mbit/s, an outage every ~15 s",
            down=DirectionModel(
                state_means_mbps=(1.0, 4.0, 9.0, 18.0),
                mean_dwell_s=3.0,
                sigma=0.12,
                reversion=0.08,
                min_mbps=0.3,
                max_mbps=40.0,
                outages_per_min=4.0,
                outage_ms=(80, 600),
            ),
            up=DirectionModel(
                state_means_mbps=(1.0, 3.0, 6.0),
                mean_dwell_s=4.0,
                sigma=0.10,
                reversion=0.08,
                min_mbps=0.3,
                max_mbps=12.0,
                outages_per_min=2.0,
                outage_ms=(50, 300),
            ),
        ),
        Preset(
            name="lte-stationary",
            description="LTE, phone at rest: 8-20 Mbit/s with mild fading, rare short outages",
            down=DirectionModel(
                state_means_mbps=(9.0, 14.0, 19.0),
                mean_dwell_s=8.0,
                sigma=0.05,
                reversion=0.1,
                min_mbps=4.0,
                max_mbps=30.0,
                outages_per_min=1.0,
                outage_ms=(30, 150),
            ),
            up=DirectionModel(
                state_means_mbps=(4.0, 7.0),
                mean_dwell_s=10.0,
                sigma=0.05,
                reversion=0.1,
                min_mbps=2.0,
                max_mbps=12.0,
                outages_per_min=0.5,
                outage_ms=(20, 100),
            ),
        ),
        Preset(
            name="nr-driving",
            description="5G mid-band in a car: 5-150 Mbit/s, frequent fall-backs and outages",
            down=DirectionModel(
                state_means_mbps=(6.0, 30.0, 80.0, 150.0),
                mean_dwell_s=2.0,
                sigma=0.18,
                reversion=0.1,
                min_mbps=1.0,
                max_mbps=250.0,
                outages_per_min=6.0,
                outage_ms=(50, 400),
            ),
            up=DirectionModel(
                state_means_mbps=(2.0, 8.0, 20.0),
                mean_dwell_s=3.0,
                sigma=0.12,
                reversion=0.1,
                min_mbps=0.5,
                max_mbps=40.0,
                outages_per_min=3.0,
                outage_ms=(50, 300),
            ),
        ),
    )
}


#: Sub-streams of one direction: the capacity process and the per-ms opportunity draws.
_CAPACITY, _OPPORTUNITIES = 0, 1


def _generator(seed: int, direction: str, substream: int, label: str) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if direction not in _STREAM_IDS:
        raise ValueError(f"direction must be 'down' or 'up', got {direction!r}")
    # The label (a preset name) keeps presets independent under the same seed.
    entropy = [seed, _STREAM_IDS[direction], substream, zlib.crc32(label.encode())]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def _standard_normal(rng: np.random.Generator, n: int) -> np.ndarray:
    # Box-Muller on uniforms; 1 - u keeps the logarithm's argument in (0, 1].
    u1 = 1.0 - rng.random(n)
    u2 = rng.random(n)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def _poisson(rng: np.random.Generator, means: np.ndarray) -> np.ndarray:
    """Poisson draws by CDF inversion, one uniform per draw (vectorised over ``means``)."""
    u = rng.random(means.shape[0])
    counts = np.zeros(means.shape[0], dtype=np.int64)
    term = np.exp(-means)  # P(N = 0)
    cdf = term.copy()
    k = 0
    active = u > cdf
    # The tail beyond mean + 12 sd + 20 has negligible mass at the rates used here (< 30
    # per ms); the bound also stops the loop where float rounding keeps cdf just below u.
    k_max = int(means.max(initial=0.0) + 12 * math.sqrt(means.max(initial=0.0)) + 20)
    while active.any() and k < k_max:
        k += 1
        counts[active] = k
        term = term * means / k
        cdf = cdf + term
        active &= u > cdf
    return counts


def capacity_mbps(
    model: DirectionModel,
    *,
    duration_s: float,
    seed: int,
    direction: str = "down",
    label: str = "",
) -> np.ndarray:
    """Capacity in Mbit/s for each millisecond ``1..N`` of the trace (``N = duration``)."""
    if duration_s <= 0:
        raise ValueError(f"duration_s must be > 0, got {duration_s}")
    rng = _generator(seed, direction, _CAPACITY, label)
    n_ms = round(duration_s * 1000)
    n_steps = -(-n_ms // STEP_MS)
    n_states = len(model.state_means_mbps)
    log_means = np.log(np.asarray(model.state_means_mbps))
    log_min, log_max = math.log(model.min_mbps), math.log(model.max_mbps)

    leave_p = min(1.0, STEP_MS / (model.mean_dwell_s * 1000.0))
    outage_p = model.outages_per_min / 60_000.0 * STEP_MS
    # Draw all uniforms for the step loop up front, in a fixed order.
    u_leave = rng.random(n_steps)
    u_dir = rng.random(n_steps)
    z = _standard_normal(rng, n_steps)
    u_outage = rng.random(n_steps)
    u_outage_len = rng.random(n_steps)

    state = (n_states - 1) // 2  # start in the middle (the lower of two middles)
    x = float(log_means[state])
    outage_left = 0
    per_step = np.empty(n_steps)
    for i in range(n_steps):
        if u_leave[i] < leave_p and n_states > 1:
            step = 1 if u_dir[i] < 0.5 else -1
            if not 0 <= state + step < n_states:
                step = -step  # reflect at the best/worst state
            state += step
        x += model.reversion * (log_means[state] - x) + model.sigma * z[i]
        x = min(max(x, log_min), log_max)  # the walk is bounded
        if outage_left == 0 and u_outage[i] < outage_p:
            low, high = model.outage_ms
            outage_left = -(-(low + int(u_outage_len[i] * (high - low + 1))) // STEP_MS)
        if outage_left > 0:
            per_step[i] = 0.0
            outage_left -= 1
        else:
            per_step[i] = math.exp(x)
    return np.repeat(per_step, STEP_MS)[:n_ms]


def generate(
    model: DirectionModel,
    *,
    duration_s: float,
    seed: int,
    direction: str = "down",
    label: str = "",
) -> np.ndarray:
    """Mahimahi timestamps (ms, non-decreasing, last = duration) for one direction."""
    rates = capacity_mbps(model, duration_s=duration_s, seed=seed, direction=direction, label=label)
    rng = _generator(seed, direction, _OPPORTUNITIES, label)
    means = rates * 1e6 / 8.0 / 1000.0 / LINE_BYTES  # opportunities per ms
    counts = _poisson(rng, means)
    n_ms = len(rates)
    if counts[-1] == 0:
        counts[-1] = 1  # the last line sets the loop period (mm-link): keep it = duration
    from cellcc.traces import check_line_count

    check_line_count(int(counts.sum()), f"the model{f' {label}' if label else ''}")
    return np.repeat(np.arange(1, n_ms + 1, dtype=np.int64), counts)


def render(stamps: np.ndarray) -> str:
    """Trace text: one timestamp per line, with a trailing newline."""
    return "\n".join(map(str, stamps.tolist())) + "\n"


def write_preset(
    name: str, out_dir: str | os.PathLike[str], *, duration_s: float = 60.0, seed: int = 1
) -> tuple[Path, Path]:
    """Write ``<out_dir>/<name>.down`` and ``.up`` atomically; return both paths."""
    try:
        preset = PRESETS[name]
    except KeyError:
        from cellcc._native import UsageError

        raise UsageError(
            f"unknown trace preset {name!r}; expected one of: {', '.join(PRESETS)}"
        ) from None
    if not 0 < duration_s <= MAX_DURATION_S:
        from cellcc._native import UsageError

        raise UsageError(
            f"--duration: expected a trace length in (0, {MAX_DURATION_S:g}] s, got {duration_s:g}"
        )
    out = Path(out_dir)
    paths = []
    for direction, model in (("down", preset.down), ("up", preset.up)):
        path = out / f"{name}.{direction}"
        stamps = generate(model, duration_s=duration_s, seed=seed, direction=direction, label=name)
        write_text_atomic(path, render(stamps))
        paths.append(path)
    return paths[0], paths[1]
