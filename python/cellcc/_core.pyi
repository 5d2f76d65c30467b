"""Type stubs for the compiled extension ``cellcc._core`` (Rust, PyO3).

Only ``cellcc._native`` imports this module; everything else goes through the public API.
"""

from collections.abc import Callable
from typing import Any

__version__: str

class CellccError(Exception):
    """Base class of every error raised by the native core.

    Raised as itself for an internal error (a panic of the core, caught at the binding),
    with a message naming the scenario or file at hand.
    """

class ScenarioError(CellccError):
    """A scenario is invalid; the message names the file, key path and expected value."""

class TraceError(CellccError):
    """A trace file is invalid; the message names the file and line."""

class ControlError(CellccError):
    """Congestion-control code written in Python failed or returned an invalid value."""

class Sock:
    """The connection state a per-ACK Python hook sees (docs/python-cc.md)."""

    mss: int
    cwnd_clamp: int
    prior_cwnd: int
    prior_ssthresh: int
    packets_out: int
    sacked_out: int
    lost_out: int
    retrans_out: int
    delivered: int
    lost: int
    snd_una: int
    snd_nxt: int
    max_packets_out: int
    app_limited: int
    max_pacing_rate: int
    hz: int
    now_us: int
    now_ns: int
    jiffies: int
    srtt_us: int
    min_rtt_us: int | None
    delivered_mstamp_us: int
    lsndtime_us: int
    ca_state: str
    in_flight: int
    cwnd: int
    ssthresh: int
    cwnd_cnt: int
    pacing_rate: int
    pacing_needed: bool
    cwr_request: bool
    def in_slow_start(self) -> bool: ...
    def is_cwnd_limited(self) -> bool: ...
    def current_ssthresh(self) -> int: ...
    def slow_start(self, acked: int) -> int: ...
    def cong_avoid_ai(self, w: int, acked: int) -> None: ...

class RateSample:
    """Linux's per-ACK rate sample, as ``cong_control`` receives it."""

    delivered: int
    interval_us: int | None
    rtt_us: int | None
    losses: int
    acked_sacked: int
    prior_in_flight: int
    is_app_limited: bool

class IntervalReport:
    """One interval of a flow under per-interval control (docs/python-cc.md)."""

    FIELDS: list[str]
    flow: int
    t_s: float
    interval_s: float
    acks: int
    delivered_pkts: int
    acked_pkts: int
    lost_pkts: int
    sent_pkts: int
    retrans_pkts: int
    delivered_bytes: int
    sent_bytes: int
    delivery_rate_bps: float
    goodput_bps: float
    send_rate_bps: float
    rtt_samples: int
    rtt_min_ms: float | None
    rtt_mean_ms: float | None
    rtt_max_ms: float | None
    rtt_first_ms: float | None
    rtt_last_ms: float | None
    cwnd: int
    ssthresh: int
    in_flight: int
    pacing_rate: int
    srtt_ms: float
    min_rtt_ms: float | None
    ca_state: str
    mss: int
    def values(self) -> list[float]:
        """The numeric fields in the order of ``FIELDS`` (NaN when missing)."""

class Stepper:
    """A run that stops at each interval boundary of one flow (docs/gym.md)."""

    def __init__(
        self,
        scenario: str,
        *,
        base_dir: str | None = None,
        source_name: str = "<scenario>",
        seed: int | None = None,
        agent_flow: int = 0,
        base: str = "held",
        base_params: str = "",
        interval_s: float = 0.02,
        per_rtt: bool = False,
        initial_cwnd: int = 10,
        initial_pacing_rate: float | None = None,
    ) -> None: ...
    def step(self) -> IntervalReport | None:
        """Run to the next boundary; its report, or ``None`` at the end of the run."""
    def decide(self, cwnd: float | None = None, pacing_rate: float | None = None) -> None:
        """The window (packets) and/or pacing rate (bytes/s) until the next boundary."""
    def finish(self) -> dict[str, Any]:
        """The finished run's result (as ``simulate``)."""
    @property
    def done(self) -> bool: ...

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
    error messages; ``seed`` overrides the scenario's seed; flows whose scheme is an import
    path (``module:Class``) run Python code (docs/python-cc.md); ``progress`` is called with
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

def encode_parquet(
    columns: list[tuple[str, str, list[Any]]], metadata: list[tuple[str, str]]
) -> bytes:
    """A result table as the bytes of a Parquet file.

    ``columns`` are ``(name, kind, values)``, all of one length, with kind ``"int64"``,
    ``"float64"`` (None and NaN stored as null), ``"bool"``, ``"str"`` (None as null) or
    ``"null"``; ``metadata`` is the file's key-value metadata. Raises ``ValueError``
    naming the column when a value does not fit its kind or the lengths differ.
    """
