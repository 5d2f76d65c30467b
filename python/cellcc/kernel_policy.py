"""Per-interval Python policies on real Linux TCP (docs/python-cc.md, docs/kernel.md).

The BPF congestion control ``cellcc_policy`` (``bpf/policy.bpf.c``) folds each
connection's ACKs over an interval and, at each boundary, pushes a report into a ring
buffer; ``cellcc-kernel policy-io`` prints the reports as JSON lines and writes the
decisions it reads back into the map the program applies them from. This module runs
that command, turns each report into a :class:`KernelReport` (the fields of the
simulator's ``IntervalReport``), calls the unchanged policy's ``on_interval(report)``
(one instance per connection, built as the simulator builds it) and sends the decision
back. With no decision yet for an interval, the kernel holds the last one.

Use::

    with realpath.kernel_loaded({"policy": kernel_policy.kernel_params(scheme)}):
        with kernel_policy.PolicyDriver(scheme) as driver:
            ...  # run flows with TCP_CONGESTION = "cellcc_policy"
        driver.reports  # how many reports, decisions and errors there were
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cellcc import realpath

KERNEL_CC = "cellcc_policy"
"""The ``TCP_CONGESTION`` name of the BPF datapath."""

CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")
"""``TCP_CA_*`` numbers to the names the simulator's report uses."""

FIELDS = (
    "t_s", "interval_s", "acks", "delivered_pkts", "acked_pkts", "lost_pkts", "sent_pkts",
    "retrans_pkts", "delivered_bytes", "sent_bytes", "delivery_rate_bps", "goodput_bps",
    "send_rate_bps", "rtt_samples", "rtt_min_ms", "rtt_mean_ms", "rtt_max_ms",
    "rtt_first_ms", "rtt_last_ms", "cwnd", "ssthresh", "in_flight", "pacing_rate",
    "srtt_ms", "min_rtt_ms",
)  # fmt: skip
"""The numeric fields, in the order of ``cellcc._core.IntervalReport.FIELDS``."""


@dataclass(frozen=True)
class KernelReport:
    """One interval of a kernel connection, with the simulator's report fields
    (docs/python-cc.md "The report"). ``t_s`` is the kernel's ``tcp_mstamp`` at the
    boundary, so only differences of it are meaningful; ``flow`` numbers the connections
    in the order their first report arrived; ``flow_key`` is the four-tuple."""

    FIELDS = FIELDS

    flow: int
    flow_key: str
    seq: int
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

    def _rate(self, nbytes: int) -> float:
        return nbytes * 8 / self.interval_s if self.interval_s > 0 else 0.0

    @property
    def delivery_rate_bps(self) -> float:
        return self._rate(self.delivered_bytes)

    @property
    def goodput_bps(self) -> float:
        return self._rate(self.acked_pkts * self.mss)

    @property
    def send_rate_bps(self) -> float:
        return self._rate(self.sent_bytes)

    def values(self) -> tuple[float, ...]:
        """The numeric fields in the order of :data:`FIELDS` (NaN when missing)."""
        return tuple(math.nan if (v := getattr(self, f)) is None else float(v) for f in FIELDS)


def report_from_record(rec: Mapping[str, Any], flow: int) -> KernelReport:
    """The report of one ``policy-io`` line (``struct policy_report``, microseconds)."""
    mss = int(rec["mss"]) or 1
    some = rec["rtt_samples"] > 0

    def ms(us: float) -> float | None:
        return us / 1000.0 if some else None

    ca = int(rec["ca_state"])
    return KernelReport(
        flow=flow,
        flow_key=str(rec["flow"]),
        seq=int(rec["seq"]),
        t_s=rec["t_us"] / 1e6,
        interval_s=rec["interval_us"] / 1e6,
        acks=int(rec["acks"]),
        delivered_pkts=int(rec["delivered_pkts"]),
        acked_pkts=int(rec["acked_bytes"]) // mss,
        lost_pkts=int(rec["lost_pkts"]),
        sent_pkts=int(rec["sent_pkts"]),
        retrans_pkts=int(rec["retrans_pkts"]),
        delivered_bytes=int(rec["delivered_pkts"]) * mss,
        sent_bytes=int(rec["sent_bytes"]),
        rtt_samples=int(rec["rtt_samples"]),
        rtt_min_ms=ms(rec["rtt_min_us"]),
        rtt_mean_ms=ms(rec["rtt_sum_us"] / rec["rtt_samples"]) if some else None,
        rtt_max_ms=ms(rec["rtt_max_us"]),
        rtt_first_ms=ms(rec["rtt_first_us"]),
        rtt_last_ms=ms(rec["rtt_last_us"]),
        cwnd=int(rec["cwnd"]),
        ssthresh=int(rec["ssthresh"]),
        in_flight=int(rec["in_flight"]),
        pacing_rate=int(rec["pacing_rate_Bps"]),
        srtt_ms=rec["srtt_us"] / 1000.0,
        min_rtt_ms=None if rec["min_rtt_us"] in (0, 0xFFFFFFFF) else rec["min_rtt_us"] / 1000.0,
        ca_state=CA_STATES[ca] if 0 <= ca < len(CA_STATES) else str(ca),
        mss=mss,
    )


def decision_of(value: Any) -> tuple[int, int]:
    """``(cwnd, pacing_rate)`` for the kernel from what ``on_interval`` returned, as the
    simulator reads it (``None`` keeps, a number is the window rounded down and at least
    1, a dict or object has ``cwnd`` and/or ``pacing_rate``); 0 means keep."""
    if value is None:
        return 0, 0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        cwnd, rate = value, None
    elif isinstance(value, Mapping):
        unknown = set(value) - {"cwnd", "pacing_rate"}
        if unknown:
            raise ValueError(f"unknown key {sorted(unknown)[0]!r} in the decision")
        cwnd, rate = value.get("cwnd"), value.get("pacing_rate")
    else:
        cwnd, rate = getattr(value, "cwnd", None), getattr(value, "pacing_rate", None)
        if cwnd is None and rate is None:
            raise ValueError(
                f"returned {type(value).__qualname__}; expected None, a window "
                "(number), or a dict/object with cwnd and/or pacing_rate"
            )
    out = []
    for x, what, top in ((cwnd, "cwnd", 2**32 - 1), (rate, "pacing_rate", 2**63)):
        if x is None:
            out.append(0)
            continue
        f = float(x)
        if not math.isfinite(f) or f < 0:
            raise ValueError(f"{what} = {x!r}")
        out.append(int(min(max(f, 1.0), top)))
    return out[0], out[1]


def _build(scheme: str, params: Mapping[str, Any] | None, flow: int, seed: int) -> tuple:
    from cellcc import pycc

    built = pycc._build(scheme, json.dumps(dict(params or {})), flow, seed)
    if built[0] != "interval":
        raise realpath.RealPathError(f"{scheme}: not a per-interval control (no on_interval)")
    _, obj, base, _, interval_s, per_rtt, cwnd, rate = built
    if base != "held":
        raise realpath.RealPathError(
            f'{scheme}: base = {base!r}; on kernel TCP only "held" is supported'
        )
    if per_rtt:
        raise realpath.RealPathError(f"{scheme}: per_rtt is not supported on kernel TCP")
    return obj, interval_s, cwnd, rate


def kernel_params(
    scheme: str, params: Mapping[str, Any] | None = None, *, seed: int = 1
) -> dict[str, int]:
    """``cellcc-kernel set policy`` defaults that give every connection the policy's
    interval, initial window and initial pacing rate."""
    _, interval_s, cwnd, rate = _build(scheme, params, 0, seed)
    return {
        "interval_us": max(1000, round(interval_s * 1e6)),
        "initial_cwnd": int(cwnd),
        "initial_pacing_Bps": int(rate or 0),
    }


@dataclass
class DriverStats:
    """What one :class:`PolicyDriver` saw."""

    reports: int = 0
    decisions: int = 0
    flows: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    """Per report: from its line's arrival to the decision written (policy time)."""


class PolicyDriver:
    """Runs ``cellcc-kernel policy-io`` and answers every report with the policy's
    decision. A context manager; on exit the command stops (stdin closed). An exception
    of the policy stops the driver and is raised again on exit, with the flow and the
    report's time in the message, as the simulator's ``ControlError``."""

    def __init__(
        self, scheme: str, params: Mapping[str, Any] | None = None, *, seed: int = 1
    ) -> None:
        self.scheme, self.params, self.seed = scheme, dict(params or {}), seed
        self.stats = DriverStats()
        self._policies: dict[str, Any] = {}
        self._error: BaseException | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        _build(scheme, params, 0, seed)  # bad schemes fail here, before any traffic

    def __enter__(self) -> PolicyDriver:
        binary = str(realpath.find_binary("cellcc-kernel"))
        self._proc = subprocess.Popen(
            [binary, "policy-io"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()
        if first.strip() != "ready":
            self._proc.wait(timeout=10)
            err = self._proc.stderr.read().strip() if self._proc.stderr else ""
            raise realpath.RealPathError(f"cellcc-kernel policy-io failed: {err or first}")
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _policy(self, key: str) -> Any:
        if key not in self._policies:
            flow = len(self._policies)
            self._policies[key] = _build(self.scheme, self.params, flow, self.seed)[0]
            self.stats.flows.append(key)
        return self._policies[key]

    def _loop(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stdin is not None
        try:
            for line in proc.stdout:
                arrived = time.perf_counter()
                rec = json.loads(line)
                policy = self._policy(rec["flow"])
                report = report_from_record(rec, list(self._policies).index(rec["flow"]))
                self.stats.reports += 1
                try:
                    cwnd, rate = decision_of(policy.on_interval(report))
                except Exception as exc:
                    raise realpath.RealPathError(
                        f"{self.scheme}.on_interval (flow {report.flow_key}, report "
                        f"{report.seq}): {type(exc).__name__}: {exc}"
                    ) from exc
                if cwnd or rate:
                    proc.stdin.write(f"{rec['flow']} {rec['seq']} {cwnd} {rate}\n")
                    proc.stdin.flush()
                    self.stats.decisions += 1
                self.stats.latency_ms.append((time.perf_counter() - arrived) * 1000)
        except BaseException as exc:  # handed to __exit__
            self._error = exc

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if self._thread is not None:
                self._thread.join(timeout=10)
            err = proc.stderr.read().strip() if proc.stderr else ""
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            if proc.returncode not in (0, None) and self._error is None and exc[0] is None:
                raise realpath.RealPathError(
                    f"cellcc-kernel policy-io failed (exit {proc.returncode}): {err}"
                )
        if self._error is not None and exc[0] is None:
            raise self._error
