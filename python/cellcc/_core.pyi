"""Type stubs for the compiled extension ``cellcc._core`` (Rust, PyO3).

Only ``cellcc._native`` imports this module; everything else goes through the public API.
"""

from collections.abc import Callable
from typing import Any

__version__: str

class CellccError(Exception):
    """Base class of every error raised by the native core."""

class ScenarioError(CellccError):
    """A scenario is invalid; the message names the file, key path and expected value."""

class TraceError(CellccError):
    """A trace file is invalid; the message names the file and line."""

def simulate(
    scenario: str,
    *,
    base_dir: str | None = None,
    source_name: str = "<scenario>",
    seed: int | None = None,
    progress: Callable[[float], object] | None = None,
) -> dict[str, Any]:
    """Run one scenario given as TOML text.

    ``base_dir`` resolves relative trace paths; ``source_name`` names the scenario in
    error messages; ``seed`` overrides the scenario's seed; ``progress`` is called with
    the fraction of simulated time done (0..1) every 16,384 events and at the end (an
    exception it raises stops the run and propagates). Returns a dict with:

    - ``"summary"``: list of row dicts, one per flow then one with ``flow == -1`` for the
      aggregate of the downlink flows (``-3``: of the uplink flows, ``-2``: background;
      column names in docs/metrics.md);
    - ``"timeseries"``: dict of equal-length column lists (``flow``, ``t_s``, ...);
    - ``"link"``: dict with capacity and utilisation of the downlink;
    - ``"meta"``: dict with ``seed``, ``duration_s``, ``events``, ``wall_s``, ``version``;
    - ``"packet_log"``: the downlink log in mm-link format (str) if requested, else None.
    """

def validate_scenario(
    scenario: str, *, base_dir: str | None = None, source_name: str = "<scenario>"
) -> None:
    """Parse and check a scenario (including its traces) without running it."""

def trace_info(path: str) -> dict[str, Any]:
    """Statistics of a Mahimahi trace: duration, mean and percentile capacity, outages."""

def trace_timestamps(path: str) -> bytes:
    """Timestamps (ms) of a Mahimahi trace, one little-endian ``u32`` per line.

    Raises ``TraceError`` naming the file and line when the trace is invalid.
    """

def synth_trace(config_json: str, seed: int) -> bytes:
    """A synthetic trace (``cellcc_link::synth``): timestamps (ms) as little-endian ``u32``.

    ``config_json`` is a JSON object with ``model`` = ``"mobility"``, ``"steps"`` or
    ``"constant"`` and that model's keys (docs/traces.md). Raises ``ValueError`` naming
    the key when the configuration is invalid.
    """

def schemes() -> list[str]:
    """Names of the congestion controls the simulator knows."""

def scheme_info() -> str:
    """Every scheme with its source, documentation page and parameters (JSON)."""
