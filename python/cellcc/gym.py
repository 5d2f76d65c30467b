"""A Gymnasium environment over the simulator (docs/gym.md).

One episode is one simulation run. The agent controls one flow (``agent_flow``) every
interval (``interval_ms``, or one smoothed RTT with ``per_rtt=True``): ``reset`` runs to
the first boundary, each ``step(action)`` applies the action at the boundary and runs to
the next one. Other flows of the scenario run their own schemes in the same simulation
(classic baselines as competitors). In-process: the native core stops at each boundary
(``cellcc._core.Stepper``), with no sockets and no threads.

Action modes (``action=``), covering the published agents:

- ``"cwnd"``: the window itself: ``a ∈ [-1, 1]`` maps linearly onto
  ``[1, max_cwnd]`` packets (``base="held"``);
- ``"cwnd_mult"``: ``cwnd ← cwnd × 2^a``, ``a ∈ [-1, 1]`` (``base="held"``);
- ``"aurora"``: pacing-rate multiplier of Aurora (Jay et al., ICML 2019, §3):
  ``rate ← rate × (1 + δx)`` for ``x ≥ 0``, ``rate / (1 − δx)`` otherwise, δ = 0.025,
  with Aurora's action ``x = aurora_action_scale × a`` (default 10, so one step changes
  the rate by at most 25 %) (``base="held"``, window ``aurora_cwnd``);
- ``"orca"``: a learned factor on top of a classic scheme (Orca, Abbasloo et al.,
  SIGCOMM 2020, Eq. 1): ``cwnd ← 2^(2a) × cwnd_base``, ``a ∈ [-1, 1]``, with
  ``base="cubic"`` by default; ``base="c2tcp"`` gives DeepCC's setting.

Observations: the last ``history`` intervals of the features named in ``features``
(see :data:`FEATURES`), flattened oldest first. Reward: ``"aurora"``, ``"power"`` or a
callable ``reward(features: dict[str, float]) -> float``.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from cellcc import _native, _toml
from cellcc._native import UsageError

__all__ = [
    "AGENT_SCHEME",
    "FEATURES",
    "CellccEnv",
    "SyntheticScenarios",
    "features_of",
]

#: The scheme name the environment gives the agent's flow (an external name, so the
#: core hands that flow's boundaries to the environment).
AGENT_SCHEME = "cellcc.gym:agent"

#: Aurora's action scale (Jay et al., ICML 2019, §3, the rate-change factor 0.025).
AURORA_DELTA = 0.025

_MSS_BITS = 1448 * 8

#: Every observation feature: name → (unit, meaning). Computed per interval by
#: :func:`features_of` from the core's report and the episode's running state.
FEATURES: dict[str, tuple[str, str]] = {
    "delivery_rate_mbps": ("Mbit/s", "payload delivered (acked or sacked) per second"),
    "goodput_mbps": ("Mbit/s", "payload cumulatively acked (in order) per second"),
    "send_rate_mbps": ("Mbit/s", "payload sent per second, retransmissions included"),
    "loss_rate": ("1", "segments marked lost / segments sent in the interval"),
    "rtt_mean_ms": ("ms", "mean RTT sample (previous value when no sample)"),
    "rtt_min_ms": ("ms", "smallest RTT sample of the interval"),
    "rtt_max_ms": ("ms", "largest RTT sample of the interval"),
    "srtt_ms": ("ms", "smoothed RTT at the boundary"),
    "min_rtt_ms": ("ms", "the connection's windowed minimum RTT"),
    "queueing_delay_ms": ("ms", "rtt_mean_ms - min_rtt_ms"),
    "cwnd": ("packets", "congestion window at the boundary"),
    "in_flight": ("packets", "packets in flight at the boundary"),
    "pacing_rate_mbps": ("Mbit/s", "pacing rate at the boundary"),
    "latency_gradient": ("1", "Aurora's sent latency inflation: (last - first RTT) / interval"),
    "latency_ratio": ("1", "Aurora's latency ratio: rtt_mean_ms / min_rtt_ms"),
    "sending_ratio": ("1", "Aurora's send ratio: send rate / delivery rate (capped at 1000)"),
    "throughput_norm": ("1", "Orca: delivery rate / largest delivery rate of the episode"),
    "delay_norm": ("1", "Orca: min_rtt_ms / rtt_mean_ms"),
    "interval_ms": ("ms", "length of the interval"),
}

DEFAULT_FEATURES = ("latency_gradient", "latency_ratio", "sending_ratio")

ACTION_MODES = ("cwnd", "cwnd_mult", "aurora", "orca")


def features_of(report: Any, state: dict[str, float]) -> dict[str, float]:
    """Every feature of :data:`FEATURES` for one interval's report.

    ``state`` carries what the features need across intervals (previous RTT, largest
    delivery rate); it is updated in place.
    """
    interval = report.interval_s
    delivery = report.delivery_rate_bps
    send = report.send_rate_bps
    last = state.get("rtt_mean_ms", math.nan)
    rtt_mean = report.rtt_mean_ms if report.rtt_mean_ms is not None else last
    if math.isnan(rtt_mean):
        rtt_mean = report.srtt_ms
    state["rtt_mean_ms"] = rtt_mean
    min_rtt = report.min_rtt_ms if report.min_rtt_ms is not None else rtt_mean
    rtt_min = report.rtt_min_ms if report.rtt_min_ms is not None else rtt_mean
    rtt_max = report.rtt_max_ms if report.rtt_max_ms is not None else rtt_mean
    first, last_rtt = report.rtt_first_ms, report.rtt_last_ms
    gradient = (
        (last_rtt - first) / 1000.0 / interval
        if first is not None and last_rtt is not None and interval > 0
        else 0.0
    )
    peak = max(state.get("peak_bps", 0.0), delivery)
    state["peak_bps"] = peak
    return {
        "delivery_rate_mbps": delivery / 1e6,
        "goodput_mbps": report.goodput_bps / 1e6,
        "send_rate_mbps": send / 1e6,
        "loss_rate": report.lost_pkts / report.sent_pkts if report.sent_pkts else 0.0,
        "rtt_mean_ms": rtt_mean,
        "rtt_min_ms": rtt_min,
        "rtt_max_ms": rtt_max,
        "srtt_ms": report.srtt_ms,
        "min_rtt_ms": min_rtt,
        "queueing_delay_ms": max(0.0, rtt_mean - min_rtt) if min_rtt > 0 else 0.0,
        "cwnd": float(report.cwnd),
        "in_flight": float(report.in_flight),
        "pacing_rate_mbps": report.pacing_rate * 8 / 1e6,
        "latency_gradient": gradient,
        "latency_ratio": rtt_mean / min_rtt if min_rtt > 0 else 1.0,
        "sending_ratio": min(send / delivery, 1000.0)
        if delivery > 0
        else (1.0 if send == 0 else 1000.0),
        "throughput_norm": delivery / peak if peak > 0 else 0.0,
        "delay_norm": min_rtt / rtt_mean if rtt_mean > 0 else 1.0,
        "interval_ms": interval * 1000.0,
    }


def aurora_reward(f: Mapping[str, float]) -> float:
    """Aurora's reward (Jay et al., ICML 2019, §4): ``10 × throughput (packets/s) −
    1000 × latency (s) − 2000 × loss rate``, with throughput the goodput (in-order data
    acked), so that SACKed data stuck behind a hole earns nothing."""
    throughput_pps = f["goodput_mbps"] * 1e6 / _MSS_BITS
    return 10.0 * throughput_pps - 1000.0 * f["rtt_mean_ms"] / 1000.0 - 2000.0 * f["loss_rate"]


def power_reward(f: Mapping[str, float]) -> float:
    """A power form (Orca, SIGCOMM 2020, Eq. 2, with ζ = 5 and no delay threshold):
    ``(throughput_norm − 5 × loss_rate) × delay_norm``: normalised throughput per
    normalised delay, penalised by loss."""
    return (f["throughput_norm"] - 5.0 * f["loss_rate"]) * f["delay_norm"]


def log_power_reward(f: Mapping[str, float]) -> float:
    """The log-power objective of Remy and Copa (Winstein and Balakrishnan, SIGCOMM 2013,
    §3.1; Arun and Balakrishnan, NSDI 2018, §2): ``log(goodput) − δ log(delay)`` with
    δ = 0.5, goodput in Mbit/s and delay the mean RTT in ms (floors of 1 kbit/s and
    0.1 ms keep it finite). Differences do not depend on the path's capacity."""
    return math.log(max(f["goodput_mbps"], 1e-3)) - 0.5 * math.log(max(f["rtt_mean_ms"], 0.1))


REWARDS: dict[str, Callable[[Mapping[str, float]], float]] = {
    "aurora": aurora_reward,
    "power": power_reward,
    "log_power": log_power_reward,
}


@dataclass(frozen=True)
class SyntheticScenarios:
    """A distribution of single-flow scenarios (Genet's curriculum dimensions).

    Each ``(low, high)`` range is sampled uniformly at every reset from the
    environment's seeded generator; ``scheduling`` and ``trace_model`` choose uniformly
    from their lists. ``trace_model`` ``"constant"`` uses ``bandwidth_mbps`` as a
    constant-rate link; ``"steps"`` is the ccBench step model around it; ``"mobility"``
    is the 3GPP mobility channel (its own capacity; ``bandwidth_mbps`` is unused).
    """

    bandwidth_mbps: tuple[float, float] = (2.0, 48.0)
    delay_ms: tuple[float, float] = (5.0, 50.0)
    queue_packets: tuple[int, int] = (20, 500)
    loss: tuple[float, float] = (0.0, 0.0)
    trace_model: Sequence[str] = ("constant",)
    scheduling: Sequence[str | None] = (None,)
    duration_s: float = 30.0
    uplink_mbps: float = 100.0

    def __post_init__(self) -> None:
        for name in ("bandwidth_mbps", "delay_ms", "queue_packets", "loss"):
            low, high = getattr(self, name)
            if not (math.isfinite(low) and math.isfinite(high) and 0 <= low <= high):
                raise UsageError(
                    f"SyntheticScenarios.{name}: expected 0 <= low <= high, got {(low, high)}"
                )
        if self.bandwidth_mbps[0] <= 0:
            raise UsageError("SyntheticScenarios.bandwidth_mbps: the low end must be > 0")
        if self.queue_packets[0] < 1:
            raise UsageError("SyntheticScenarios.queue_packets: the low end must be >= 1")
        if self.loss[1] >= 1:
            raise UsageError("SyntheticScenarios.loss: must stay below 1")
        bad = [m for m in self.trace_model if m not in ("constant", "steps", "mobility")]
        if bad or not self.trace_model:
            raise UsageError(
                f"SyntheticScenarios.trace_model: {bad or 'empty'}; "
                "expected constant, steps or mobility"
            )
        if not self.scheduling:
            raise UsageError("SyntheticScenarios.scheduling: give at least one entry (None: none)")
        if not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise UsageError("SyntheticScenarios.duration_s: expected a positive duration")

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """One scenario dict drawn with ``rng``."""
        bw = float(rng.uniform(*self.bandwidth_mbps))
        delay = float(rng.uniform(*self.delay_ms))
        queue = int(rng.integers(self.queue_packets[0], self.queue_packets[1] + 1))
        loss = float(rng.uniform(*self.loss))
        model = self.trace_model[int(rng.integers(len(self.trace_model)))]
        sched = self.scheduling[int(rng.integers(len(self.scheduling)))]
        down: dict[str, Any] = {"delay_ms": delay, "queue": {"kind": "droptail", "packets": queue}}
        if model == "constant":
            down["rate_mbps"] = bw
        elif model == "steps":
            down["synth"] = {"model": "steps", "base_mbps": bw, "duration_s": self.duration_s}
        else:
            down["synth"] = {"model": "mobility", "duration_s": self.duration_s}
        if loss > 0:
            down["loss"] = loss
        scenario: dict[str, Any] = {
            "name": f"synthetic-{model}",
            "duration_s": self.duration_s,
            "seed": int(rng.integers(2**31)),
            "downlink": down,
            "uplink": {
                "rate_mbps": self.uplink_mbps,
                "delay_ms": delay,
                "queue": {"kind": "droptail", "packets": queue},
            },
            "flows": [{"scheme": AGENT_SCHEME}],
        }
        if sched is not None:
            scenario["scheduling"] = {"preset": sched}
        return scenario


ScenarioSource = str | os.PathLike[str] | Mapping[str, Any]


class CellccEnv(gymnasium.Env):
    """One flow of a simulation under the agent's control, one step per interval.

    ``scenario``: a scenario file or dict (the agent's flow, ``flows[agent_flow]``, gets
    the scheme :data:`AGENT_SCHEME`); or ``scenarios``: a list of them, or a
    :class:`SyntheticScenarios`, sampled at every reset. ``episode_s`` shortens every
    scenario's duration.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        scenario: ScenarioSource | None = None,
        *,
        scenarios: Sequence[ScenarioSource] | SyntheticScenarios | None = None,
        agent_flow: int = 0,
        action: str = "cwnd_mult",
        base: str | None = None,
        base_params: Mapping[str, Any] | None = None,
        interval_ms: float = 20.0,
        per_rtt: bool = False,
        features: Sequence[str] = DEFAULT_FEATURES,
        history: int = 10,
        reward: str | Callable[[Mapping[str, float]], float] = "aurora",
        max_cwnd: int = 4096,
        initial_cwnd: int = 10,
        initial_rate_mbps: float = 2.0,
        aurora_cwnd: int = 100_000,
        aurora_action_scale: float = 10.0,
        episode_s: float | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        info_features: bool = False,
    ) -> None:
        super().__init__()
        if (scenario is None) == (scenarios is None):
            raise UsageError("CellccEnv: give exactly one of scenario= and scenarios=")
        if action not in ACTION_MODES:
            raise UsageError(
                f"CellccEnv: action={action!r}; expected one of {', '.join(ACTION_MODES)}"
            )
        unknown = [f for f in features if f not in FEATURES]
        if unknown or not features:
            raise UsageError(
                f"CellccEnv: features {unknown or '(none)'} unknown; expected names from: "
                + ", ".join(FEATURES)
            )
        if isinstance(history, bool) or not isinstance(history, int) or history < 1:
            raise UsageError(f"CellccEnv: history={history!r}; expected an int >= 1")
        if isinstance(reward, str):
            if reward not in REWARDS:
                raise UsageError(
                    f"CellccEnv: reward={reward!r}; expected {', '.join(REWARDS)} or a callable"
                )
            self._reward = REWARDS[reward]
        elif callable(reward):
            self._reward = reward
        else:
            raise UsageError(f"CellccEnv: reward={reward!r}; expected a name or a callable")
        if not (math.isfinite(interval_ms) and interval_ms > 0):
            raise UsageError(f"CellccEnv: interval_ms={interval_ms!r}; expected a positive number")
        if not 1 <= initial_cwnd <= max_cwnd:
            raise UsageError(
                f"CellccEnv: expected 1 <= initial_cwnd ({initial_cwnd}) <= max_cwnd ({max_cwnd})"
            )
        if not (math.isfinite(initial_rate_mbps) and initial_rate_mbps > 0):
            raise UsageError(f"CellccEnv: initial_rate_mbps={initial_rate_mbps!r}; expected > 0")
        if episode_s is not None and not (math.isfinite(episode_s) and episode_s > 0):
            raise UsageError(f"CellccEnv: episode_s={episode_s!r}; expected a positive duration")
        self.action_mode = action
        if base is None:
            base = "cubic" if action == "orca" else "held"
        if action != "orca" and base != "held":
            raise UsageError(
                f"CellccEnv: action={action!r} controls the flow alone; base must be 'held'"
            )
        if action == "orca" and base == "held":
            raise UsageError(
                "CellccEnv: action='orca' scales a classic scheme's window; base='held' has none"
            )
        self.base = base
        self.base_params = dict(base_params or {})
        self.interval_ms = float(interval_ms)
        self.per_rtt = per_rtt
        self.features = tuple(features)
        self.history = history
        self.max_cwnd = int(max_cwnd)
        self.initial_cwnd = int(initial_cwnd)
        self.initial_rate = initial_rate_mbps * 1e6 / 8.0
        self.aurora_cwnd = int(aurora_cwnd)
        if not (math.isfinite(aurora_action_scale) and aurora_action_scale > 0):
            raise UsageError(
                f"CellccEnv: aurora_action_scale={aurora_action_scale!r}; expected > 0"
            )
        self.aurora_action_scale = float(aurora_action_scale)
        self.episode_s = episode_s
        self.info_features = info_features
        self.agent_flow = agent_flow
        self._base_dir = os.fspath(base_dir) if base_dir is not None else None
        self._sources: list[tuple[str, str, str]] | None = None
        self._synthetic: SyntheticScenarios | None = None
        if isinstance(scenarios, SyntheticScenarios):
            self._synthetic = scenarios
        else:
            listed = [scenario] if scenario is not None else list(scenarios or [])
            if not listed:
                raise UsageError("CellccEnv: scenarios= is empty")
            self._sources = [self._prepare(s) for s in listed]
        # Every mode acts in [-1, 1] (what policy-gradient libraries expect).
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        size = len(self.features) * history
        bound = float(np.finfo(np.float32).max)
        self.observation_space = spaces.Box(-bound, bound, shape=(size,), dtype=np.float32)
        self._stepper: Any = None
        self._report: Any = None
        self._rate = self.initial_rate
        self._state: dict[str, float] = {}
        self._window = np.zeros((history, len(self.features)), dtype=np.float32)
        self._result_raw: Mapping[str, Any] | None = None
        self._text = ""
        self._source_name = ""

    # -- scenarios ------------------------------------------------------------------

    def _prepare(self, source: ScenarioSource) -> tuple[str, str, str]:
        """(TOML text, base dir, source name) of one scenario with the agent's scheme."""
        if isinstance(source, Mapping):
            doc = dict(source)
            name = f"<{doc.get('name', 'dict')}>"
            directory = self._base_dir or os.fspath(Path.cwd())
        else:
            path = Path(source)
            try:
                doc = tomllib.loads(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise UsageError(
                    f"{path}: cannot read the scenario: {exc.strerror or exc}"
                ) from None
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path}: {exc}") from None
            name = os.fspath(path)
            directory = self._base_dir or os.fspath(path.resolve().parent)
        flows = doc.get("flows")
        if not isinstance(flows, list) or not 0 <= self.agent_flow < len(flows):
            count = len(flows) if isinstance(flows, list) else 0
            raise UsageError(
                f"{name}: agent_flow={self.agent_flow}, but the scenario has {count} flows"
            )
        flows = [dict(f) for f in flows]
        flows[self.agent_flow]["scheme"] = AGENT_SCHEME
        flows[self.agent_flow].pop("params", None)
        doc["flows"] = flows
        if self.episode_s is not None:
            doc["duration_s"] = self.episode_s
        try:
            text = _toml.dumps(doc)
        except _toml.TomlTypeError as exc:
            raise UsageError(f"{name}: {exc}") from None
        return text, directory, name

    # -- gymnasium API ---------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if self._synthetic is not None:
            text, directory, name = self._prepare(self._synthetic.sample(self.np_random))
            run_seed = None
        else:
            assert self._sources is not None
            text, directory, name = self._sources[int(self.np_random.integers(len(self._sources)))]
            run_seed = int(self.np_random.integers(2**63))
        self._text, self._source_name = text, name
        self._stepper = _native.stepper(
            text,
            base_dir=directory,
            source_name=name,
            seed=run_seed,
            agent_flow=self.agent_flow,
            base=self.base,
            base_params=_toml.dumps(self.base_params),
            interval_s=self.interval_ms / 1000.0,
            per_rtt=self.per_rtt,
            # Aurora is rate-based: a window that never limits, and the initial rate.
            initial_cwnd=self.aurora_cwnd if self.action_mode == "aurora" else self.initial_cwnd,
            initial_pacing_rate=self.initial_rate if self.action_mode == "aurora" else None,
        )
        self._rate = self.initial_rate
        self._state = {}
        self._window[:] = 0.0
        self._result_raw = None
        self._report = self._stepper.step()
        if self._report is None:
            raise UsageError(f"{name}: the run ends before the agent flow's first interval")
        values = self._observe(self._report)
        return self._window.reshape(-1).copy(), self._info(values)

    def step(self, action: Any):
        if self._stepper is None or self._report is None:
            raise UsageError(
                "CellccEnv.step: call reset() first (or again after the episode ended)"
            )
        a = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(a):
            raise UsageError(f"CellccEnv.step: action {action!r} is not finite")
        low, high = float(self.action_space.low[0]), float(self.action_space.high[0])
        a = min(max(a, low), high)
        report = self._report
        mode = self.action_mode
        if mode == "cwnd":
            cwnd = 1 + math.floor((a + 1.0) / 2.0 * (self.max_cwnd - 1))
            self._stepper.decide(cwnd=float(cwnd))
        elif mode == "cwnd_mult":
            self._stepper.decide(
                cwnd=float(min(max(math.floor(report.cwnd * 2.0**a), 1), self.max_cwnd))
            )
        elif mode == "orca":
            self._stepper.decide(
                cwnd=float(min(max(math.floor(report.cwnd * 4.0**a), 1), self.max_cwnd))
            )
        else:
            delta = AURORA_DELTA * self.aurora_action_scale * a
            self._rate = self._rate * (1.0 + delta) if delta >= 0 else self._rate / (1.0 - delta)
            self._rate = min(max(self._rate, 1500.0), 1.25e10)
            self._stepper.decide(pacing_rate=self._rate)
        nxt = self._stepper.step()
        if nxt is None:
            self._report = None
            self._result_raw = self._stepper.finish()
            self._stepper = None
            obs = self._window.reshape(-1).copy()
            return obs, 0.0, True, False, {}
        self._report = nxt
        values = self._observe(nxt)
        reward = float(self._reward(values))
        if not math.isfinite(reward):
            raise UsageError(
                f"CellccEnv: the reward function returned {reward!r} at t = {nxt.t_s:.6f} s"
            )
        return self._window.reshape(-1).copy(), reward, False, False, self._info(values)

    def _info(self, values: dict[str, float]) -> dict[str, Any]:
        """``t_s`` (the boundary), and every feature when ``info_features`` is set (off by
        default: vector environments merge info dicts key by key at every step)."""
        if self.info_features:
            return {"t_s": self._report.t_s, "features": values}
        return {"t_s": self._report.t_s}

    def _observe(self, report: Any) -> dict[str, float]:
        values = features_of(report, self._state)
        self._window[:-1] = self._window[1:]
        self._window[-1] = [values[name] for name in self.features]
        return values

    def result(self):
        """The finished episode as a :class:`cellcc.Result` (summary, time series), as
        ``cellcc.simulate`` returns; ``None`` before the episode ended."""
        if self._result_raw is None:
            return None
        from cellcc.api import _result

        return _result(self._result_raw, self._text, self._source_name)


def _register() -> None:
    if "cellcc/Cellcc-v0" not in gymnasium.registry:
        gymnasium.register(id="cellcc/Cellcc-v0", entry_point="cellcc.gym:CellccEnv")


_register()
