"""Reference congestion controls written against the Python API, as executable
documentation and as the yardstick of the bindings: each mirrors a built-in Rust scheme
line for line, so the two give bit-identical results (tests/python/test_pycc.py).

- :class:`NewReno`: Linux ``tcp_reno_*`` (``net/ipv4/tcp_cong.c``) with the stack
  helpers ``tcp_slow_start`` and ``tcp_cong_avoid_ai`` written out in Python, as the
  built-in ``newreno`` (RFC 5681 Eqs. 2-4).
- :class:`Fixed`: a fixed window and optional pacing rate, as the built-in ``fixed``.
- :class:`FixedWindow`: the same fixed window as a per-interval control over ``held``.
- :class:`Aimd`: a per-interval AIMD (one packet per interval up, halve on loss), the
  smallest useful per-interval control.
"""

from __future__ import annotations

from typing import Any

from cellcc.pycc import CongestionControl, IntervalControl

#: ``tcp_reno_ssthresh``'s floor, packets.
MIN_SSTHRESH = 2


class NewReno(CongestionControl):
    """``tcp_reno_cong_avoid`` / ``tcp_reno_ssthresh`` (undo: the default)."""

    def __init__(self) -> None:
        self._phase = "slow_start"

    def ssthresh(self, sock: Any) -> int:
        # RFC 5681 Eq. 4, with cwnd in place of FlightSize (Linux).
        return max(sock.cwnd >> 1, MIN_SSTHRESH)

    def cong_avoid(self, sock: Any, acked: int) -> None:
        if not sock.is_cwnd_limited():
            return
        cwnd, cnt, clamp = sock.cwnd, sock.cwnd_cnt, sock.cwnd_clamp
        if cwnd < sock.ssthresh:
            self._phase = "slow_start"
            # tcp_slow_start, RFC 5681 Eq. 2: cwnd += acked, capped at ssthresh.
            grown = min(cwnd + acked, sock.ssthresh)
            acked -= grown - cwnd
            cwnd = min(grown, clamp)
            if acked == 0:
                sock.cwnd = cwnd
                return
        self._phase = "cong_avoid"
        # tcp_cong_avoid_ai(tp, cwnd, acked), RFC 5681 Eq. 3: +acked/cwnd per ACK.
        w = max(cwnd, 1)
        if cnt >= w:
            cnt = 0
            cwnd += 1
        cnt += acked
        if cnt >= w:
            delta = cnt // w
            cnt -= delta * w
            cwnd += delta
        sock.cwnd = min(cwnd, clamp)
        sock.cwnd_cnt = cnt

    def phase(self) -> str:
        return self._phase


class Fixed(CongestionControl):
    """A window that never moves (and an optional pacing rate in Mbit/s)."""

    def __init__(self, cwnd: int, pacing_mbps: float | None = None) -> None:
        if cwnd < 1:
            raise ValueError("cwnd must be >= 1 packet")
        self.cwnd = cwnd
        self.pacing_rate = None if pacing_mbps is None else int(pacing_mbps * 1e6 / 8.0)

    def _apply(self, sock: Any) -> None:
        sock.cwnd = min(self.cwnd, sock.cwnd_clamp)
        if self.pacing_rate is not None:
            sock.pacing_rate = self.pacing_rate

    def init(self, sock: Any) -> None:
        if self.pacing_rate is not None:
            sock.pacing_needed = True
        self._apply(sock)

    def ssthresh(self, sock: Any) -> int:
        return self.cwnd

    def cong_control(self, sock: Any, rs: Any) -> None:
        self._apply(sock)

    def undo_cwnd(self, sock: Any) -> int:
        return self.cwnd


class FixedWindow(IntervalControl):
    """A fixed window set once per interval (per-interval control over ``held``)."""

    def __init__(self, cwnd: int = 10, interval_ms: float = 20.0) -> None:
        self.cwnd = cwnd
        self.initial_cwnd = cwnd
        self.interval_ms = interval_ms

    def on_interval(self, report: Any) -> int:
        return self.cwnd


class Aimd(IntervalControl):
    """Per interval: +``increase`` packets without loss, × ``decrease`` with loss."""

    def __init__(
        self, increase: float = 1.0, decrease: float = 0.5, interval_ms: float = 20.0
    ) -> None:
        self.increase = increase
        self.decrease = decrease
        self.interval_ms = interval_ms
        self.window = float(self.initial_cwnd)

    def on_interval(self, report: Any) -> float:
        if report.lost_pkts:
            self.window = max(1.0, self.window * self.decrease)
        else:
            self.window += self.increase
        return self.window
