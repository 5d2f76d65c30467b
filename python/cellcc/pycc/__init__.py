"""Congestion controls written in Python (docs/python-cc.md).

A scheme name of the form ``"module.path:ClassName"`` anywhere a scheme name goes
(``cellcc.simulate`` scenarios, ``compare``, sweeps, ``cellcc run``) names a Python
class. The class is imported in the process that runs the simulation (so worker
processes and Ray workers import it too: the module must be importable there), and
instantiated once per flow with the flow's ``params`` as keyword arguments (plus
``seed=<the flow's seed>`` when ``__init__`` takes a ``seed`` and ``params`` does not set
it). Two levels:

**Per ACK** (:class:`CongestionControl`): the Linux hooks of ``tcp_congestion_ops``,
called in Linux's order with a ``sock`` (:class:`cellcc._core.Sock`) whose fields the
hook reads and writes. ``ssthresh`` and one of ``cong_avoid`` / ``cong_control`` are
required, as Linux's ``tcp_validate_congestion_control`` requires them.

**Per interval** (:class:`IntervalControl`): the simulator folds per-ACK measurements
of the flow over an interval (fixed, or one smoothed RTT) and calls ``on_interval(report)``
(:class:`cellcc._core.IntervalReport`) once per interval; it returns the new window
and/or pacing rate. This is CCP's model and the fast path for learned policies.

An exception in user code, or a returned value of the wrong type or range, ends the run
with :class:`cellcc.ControlError` naming the class, the hook and the simulated time,
with the original exception as ``__cause__``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import sys
from typing import Any, ClassVar

__all__ = ["CongestionControl", "IntervalControl", "import_path", "load"]


class CongestionControl:
    """Base class of per-ACK congestion controls (subclassing it is optional).

    Hooks (define the ones you need; all receive the connection as ``sock``):

    - ``init(sock)``: the connection is established;
    - ``ssthresh(sock) -> int``: a congestion event; the new slow-start threshold;
    - ``cong_avoid(sock, acked)``: per ACK, when the scheme does not define
      ``cong_control``, in Open/Disorder state and when cwnd may be raised;
    - ``cong_control(sock, rs)``: per ACK instead of ``cong_avoid`` and PRR, with
      Linux's rate sample ``rs`` (:class:`cellcc._core.RateSample`); defining it means
      the scheme owns cwnd and pacing (BBR's shape);
    - ``pkts_acked(sock, sample)``: ``sample`` is a dict with ``pkts_acked``,
      ``rtt_us`` (or ``None``) and ``in_flight``;
    - ``set_state(sock, new_state)``: ``"open"``, ``"disorder"``, ``"cwr"``,
      ``"recovery"`` or ``"loss"``;
    - ``cwnd_event(sock, event)``: ``"tx_start"``, ``"cwnd_restart"``,
      ``"complete_cwr"``, ``"loss"``, ``"ecn_no_ce"``, ``"ecn_is_ce"``;
    - ``in_ack_event(sock, slow_path)``;
    - ``undo_cwnd(sock) -> int`` (default: ``max(cwnd, prior_cwnd)``);
    - ``phase() -> str`` and ``info() -> dict[str, float]``: reported at the end of a
      run (``cc_info``).
    """


class IntervalControl:
    """Base class of per-interval controls (subclassing it is optional; an object with
    ``on_interval`` is one).

    Class attributes (or instance attributes set in ``__init__``) configure the flow:

    - ``interval_ms`` (default 20): the interval; with ``per_rtt = True`` the interval
      is one smoothed RTT and ``interval_ms`` applies until the first RTT sample;
    - ``base`` (default ``"held"``): the scheme that runs per ACK between decisions:
      ``"held"`` keeps the window and rate the decisions set; a built-in scheme
      (``"cubic"``, ``"c2tcp"``, ...) runs as usual and a decision overrides its window
      (Orca's and DeepCC's model); ``base_params`` are its parameters;
    - ``initial_cwnd`` (default 10, packets) and ``initial_pacing_rate`` (bytes/s,
      default ``None``: no pacing) for ``"held"``.

    ``on_interval(report)`` returns ``None`` (keep everything), a window in packets (a
    number, rounded down), or a dict/object with ``cwnd`` and/or ``pacing_rate``
    (bytes/s; needs ``base = "held"``).
    """

    interval_ms: ClassVar[float] = 20.0
    per_rtt: ClassVar[bool] = False
    base: ClassVar[str] = "held"
    base_params: ClassVar[dict[str, Any]] = {}
    initial_cwnd: ClassVar[int] = 10
    initial_pacing_rate: ClassVar[float | None] = None

    def on_interval(self, report: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


def import_path(obj: type) -> str:
    """``"module:QualName"`` of a class, checked to load back to the same class."""
    if not isinstance(obj, type):
        raise TypeError(f"expected a class, got {type(obj).__name__}")
    path = f"{obj.__module__}:{obj.__qualname__}"
    if "<locals>" in obj.__qualname__ or load(path) is not obj:
        raise ValueError(
            f"{obj.__qualname__} cannot be named by an import path (define it at the top "
            "level of an importable module)"
        )
    return path


def load(path: str) -> Any:
    """The object an import path ``"module.path:Attr.Path"`` names.

    Raises ``ValueError`` saying what could not be imported or found.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path: expected 'module.path:ClassName'")
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"cannot import {module_name!r} for {path!r}: {exc} (is it on sys.path "
                "in this process? worker processes need it too)"
            ) from None
        except Exception as exc:  # an error while executing the module
            raise ValueError(
                f"importing {module_name!r} for {path!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _takes_seed(cls: Any) -> bool:
    try:
        return "seed" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def _positive(value: Any, what: str, path: str, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{path}: {what} is {value!r}, expected a number")
    if not (math.isfinite(value) and value > 0) or (integer and value != int(value)):
        kind = "a positive integer" if integer else "a positive finite number"
        raise ValueError(f"{path}: {what} = {value!r}, expected {kind}")
    return float(value)


def _build(scheme: str, params_json: str, flow: int, seed: int) -> tuple[Any, ...]:
    """Resolve one flow's external scheme (called by the native core).

    Returns ``("per_ack", obj)`` or ``("interval", obj, base, base_params_toml,
    interval_s, per_rtt, initial_cwnd, initial_pacing_rate)``. Raises ``TypeError`` for
    parameters the class does not take and ``ValueError`` for everything else.
    """
    from cellcc import _toml

    cls = load(scheme)
    if not callable(cls):
        raise ValueError(f"{scheme!r} names a {type(cls).__name__}, not a class")
    params = json.loads(params_json)
    if "seed" not in params and _takes_seed(cls):
        params["seed"] = seed
    try:
        obj = cls(**params)
    except TypeError as exc:
        raise TypeError(f"{scheme}({', '.join(params)}): {exc}") from exc
    on_interval = getattr(obj, "on_interval", None)
    if on_interval is None:
        return ("per_ack", obj)
    if not callable(on_interval):
        raise ValueError(f"{scheme}.on_interval is not callable")
    base = getattr(obj, "base", "held")
    if not isinstance(base, str):
        raise ValueError(f"{scheme}: base is {base!r}, expected a scheme name")
    base_params = getattr(obj, "base_params", {}) or {}
    try:
        base_toml = _toml.dumps(dict(base_params))
    except (_toml.TomlTypeError, TypeError, ValueError) as exc:
        raise ValueError(f"{scheme}: base_params: {exc}") from None
    interval_ms = _positive(getattr(obj, "interval_ms", 20.0), "interval_ms", scheme)
    cwnd = _positive(getattr(obj, "initial_cwnd", 10), "initial_cwnd", scheme, integer=True)
    if cwnd >= 2**32:
        raise ValueError(f"{scheme}: initial_cwnd = {cwnd!r} is too large")
    rate = getattr(obj, "initial_pacing_rate", None)
    if rate is not None:
        rate = _positive(rate, "initial_pacing_rate", scheme)
    return (
        "interval",
        obj,
        base,
        base_toml,
        interval_ms / 1000.0,
        bool(getattr(obj, "per_rtt", False)),
        int(cwnd),
        rate,
    )
