"""Congestion controls written in Python: per-ACK hooks and per-interval control."""

from __future__ import annotations

import math
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

import cellcc
from cellcc import runner
from cellcc.pycc import IntervalControl, import_path
from cellcc.sweep import load_sweep

pytestmark = pytest.mark.usefixtures("native")


def scenario(down: dict[str, Any], up: dict[str, Any], scheme: str, **flow: Any) -> dict:
    return {
        "name": "pycc",
        "duration_s": flow.pop("duration_s", 30.0),
        "seed": 7,
        "downlink": {**down, "delay_ms": 10.0, "queue": {"kind": "droptail", "packets": 100}},
        "uplink": {**up, "delay_ms": 10.0, "queue": {"kind": "droptail", "packets": 100}},
        "flows": [{"scheme": scheme, **flow}],
        "metrics": {"bin_ms": 100.0},
    }


def trace_pair(shared: Path, name: str) -> tuple[dict, dict]:
    down = shared / "mahimahi" / f"{name}.down"
    up = shared / "mahimahi" / f"{name}.up"
    return {"trace": str(down)}, ({"trace": str(up)} if up.exists() else {"rate_mbps": 100.0})


def without_scheme(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=["scheme"], errors="ignore").reset_index(drop=True)


def assert_same_run(a: cellcc.Result, b: cellcc.Result) -> None:
    pd.testing.assert_frame_equal(without_scheme(a.summary), without_scheme(b.summary))
    pd.testing.assert_frame_equal(without_scheme(a.timeseries), without_scheme(b.timeseries))
    pd.testing.assert_frame_equal(a.cc_info, b.cc_info)


TRACES = ("TMobile-LTE-short", "Verizon-LTE-short", "ATT-LTE-driving")


@pytest.mark.slow
@pytest.mark.parametrize("trace", TRACES)
def test_python_newreno_is_bit_identical_to_the_builtin(shared_traces, trace):
    down, up = trace_pair(shared_traces, trace)
    rust = cellcc.simulate(scenario(down, up, "newreno"))
    python = cellcc.simulate(scenario(down, up, "cellcc.pycc.reference:NewReno"))
    assert rust.summary.loc[0, "retransmits"] > 0, "the trace must exercise loss recovery"
    assert python.summary.loc[0, "scheme"] == "cellcc.pycc.reference:NewReno"
    assert_same_run(rust, python)


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("params", [{"cwnd": 40}, {"cwnd": 25, "pacing_mbps": 6.0}])
def test_python_fixed_window_is_bit_identical_to_the_builtin(shared_traces, trace, params):
    down, up = trace_pair(shared_traces, trace)
    rust = cellcc.simulate(scenario(down, up, "fixed", params=params, duration_s=10.0))
    python = cellcc.simulate(
        scenario(down, up, "cellcc.pycc.reference:Fixed", params=params, duration_s=10.0)
    )
    assert_same_run(rust, python)


# -- per-interval control -------------------------------------------------------------


class Recorder(IntervalControl):
    """Keeps every report it is given (in this process) and answers ``windows``."""

    reports: ClassVar[list[Any]] = []
    interval_ms = 20.0

    def __init__(self, cwnd: int = 30, per_rtt: bool = False) -> None:
        self.cwnd = cwnd
        self.per_rtt = per_rtt

    def on_interval(self, report: Any) -> int:
        Recorder.reports.append(report)
        return self.cwnd


CONSTANT = {"rate_mbps": 24.0}
FAST_UP = {"rate_mbps": 100.0}


def test_intervals_are_fixed_and_reports_add_up():
    Recorder.reports = []
    result = cellcc.simulate(scenario(CONSTANT, FAST_UP, "test_pycc:Recorder", duration_s=5.0))
    reports = Recorder.reports
    # Boundaries at 20, 40, ... ms, before the run's end at 5 s.
    assert [round(r.t_s * 1000) for r in reports] == list(range(20, 5000, 20))
    assert all(r.interval_s == pytest.approx(0.02) for r in reports)
    assert all(r.flow == 0 for r in reports)
    row = result.summary.iloc[0]
    sent = sum(r.sent_pkts for r in reports)
    assert sent > 0 and row["retransmits"] == sum(r.retrans_pkts for r in reports)
    # A fixed window of 30 under a 24 Mbit/s, 20 ms RTT path (41 packets BDP): no queue.
    assert reports[-1].cwnd == 30 and reports[-1].ssthresh > 0
    assert reports[-1].rtt_min_ms == pytest.approx(20.0, abs=1.5)
    assert reports[-1].min_rtt_ms == pytest.approx(20.0, abs=1.5)
    delivered = sum(r.delivered_bytes for r in reports)
    assert delivered <= row["app_bytes"] + 1448 * 30
    assert delivered >= row["app_bytes"] - 1448 * 60
    rates = [r.delivery_rate_bps for r in reports[50:]]
    # cwnd / RTT: 30 × 1448 × 8 / 20 ms, within the link's 24 Mbit/s.
    assert sum(rates) / len(rates) == pytest.approx(30 * 1448 * 8 / 0.020, rel=0.05)
    values = reports[-1].values()
    assert len(values) == len(type(reports[-1]).FIELDS)
    assert values[type(reports[-1]).FIELDS.index("cwnd")] == 30.0


def test_per_rtt_intervals_follow_the_smoothed_rtt():
    Recorder.reports = []
    flow = {"params": {"per_rtt": True}, "duration_s": 3.0}
    cellcc.simulate(scenario(CONSTANT, FAST_UP, "test_pycc:Recorder", **flow))
    reports = Recorder.reports
    assert reports[0].interval_s == pytest.approx(0.02)  # before the first RTT sample
    later = [r.interval_s for r in reports[10:]]
    assert all(0.019 <= s <= 0.030 for s in later), later[:10]


def test_a_policy_over_cubic_sets_its_window():
    class_path = "test_pycc:HalfCubic"
    result = cellcc.simulate(scenario(CONSTANT, FAST_UP, class_path, duration_s=10.0))
    cubic = cellcc.simulate(scenario(CONSTANT, FAST_UP, "cubic", duration_s=10.0))
    assert HalfCubic.seen, "the policy ran"
    # Halving CUBIC's window every interval keeps the queue emptier than CUBIC alone.
    assert result.summary.loc[0, "qdelay_mean_ms"] < 0.8 * cubic.summary.loc[0, "qdelay_mean_ms"]


class HalfCubic(IntervalControl):
    base = "cubic"
    interval_ms = 50.0
    seen: ClassVar[list[int]] = []

    def on_interval(self, report: Any) -> dict[str, float]:
        HalfCubic.seen.append(report.cwnd)
        return {"cwnd": max(2, report.cwnd / 2)}


def test_aimd_interval_control_runs_fast_and_reacts_to_loss(shared_traces):
    down, up = trace_pair(shared_traces, "TMobile-LTE-short")
    result = cellcc.simulate(scenario(down, up, "cellcc.pycc.reference:Aimd"))
    row = result.summary.iloc[0]
    assert row["throughput_mbps"] > 5.0 and row["drops"] > 0


# -- errors ---------------------------------------------------------------------------


class Raises:
    raised_at_us: int | None = None

    def ssthresh(self, sock: Any) -> int:
        return 2

    def cong_avoid(self, sock: Any, acked: int) -> None:
        if sock.now_us > 500_000:
            # Linux calls cong_avoid only while the flow is cwnd-limited (the receive
            # window may hold it for a while), so record when the first call after
            # 0.5 s came.
            Raises.raised_at_us = sock.now_us
            raise RuntimeError("boom")
        sock.cwnd += 1


class NegativeWindow:
    def ssthresh(self, sock: Any) -> int:
        return 2

    def cong_avoid(self, sock: Any, acked: int) -> None:
        sock.cwnd = -5


class BadSsthresh:
    def ssthresh(self, sock: Any) -> str:
        return "half"

    def cong_avoid(self, sock: Any, acked: int) -> None:
        sock.cwnd += acked


class NoSsthresh:
    def cong_avoid(self, sock: Any, acked: int) -> None:
        pass


class NanPolicy(IntervalControl):
    def on_interval(self, report: Any) -> float:
        return math.nan if report.t_s > 0.1 else 10


class WrongType(IntervalControl):
    def on_interval(self, report: Any) -> str:
        return "more"


class PacingOverCubic(IntervalControl):
    base = "cubic"

    def on_interval(self, report: Any) -> dict[str, float]:
        return {"pacing_rate": 1e6}


LOSSY = {"rate_mbps": 6.0}


def run_lossy(scheme: str, **flow: Any) -> cellcc.Result:
    return cellcc.simulate(scenario(LOSSY, FAST_UP, scheme, duration_s=5.0, **flow))


def test_an_exception_in_a_hook_names_class_hook_and_time():
    with pytest.raises(cellcc.ControlError) as info:
        run_lossy("test_pycc:Raises")
    message = str(info.value)
    assert "test_pycc:Raises.cong_avoid" in message and "flow 0" in message
    t = float(message.split("t = ")[1].split(" s")[0])
    assert Raises.raised_at_us is not None and Raises.raised_at_us > 500_000
    # now_us truncates the time to whole µs, the message rounds it to 6 decimals.
    assert t == pytest.approx(Raises.raised_at_us / 1e6, abs=1.5e-6)
    assert "RuntimeError: boom" in message
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("scheme", "needles"),
    [
        ("test_pycc:NegativeWindow", ["NegativeWindow.cong_avoid", "OverflowError"]),
        ("test_pycc:BadSsthresh", ["BadSsthresh.ssthresh", "'half'", "window in packets"]),
        ("test_pycc:NanPolicy", ["NanPolicy.on_interval", "cwnd = NaN"]),
        ("test_pycc:WrongType", ["WrongType.on_interval", "returned str"]),
        ("test_pycc:PacingOverCubic", ["pacing rate needs a base scheme that owns cwnd"]),
    ],
)
def test_bad_values_from_user_code_end_the_run_with_a_clear_error(scheme, needles):
    with pytest.raises(cellcc.ControlError) as info:
        run_lossy(scheme)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("scheme", "params", "needles"),
    [
        ("nosuchmodule_xyz:Cc", {}, ["flows[0].scheme", "cannot import 'nosuchmodule_xyz'"]),
        ("test_pycc:Missing", {}, ["flows[0].scheme", "has no attribute 'Missing'"]),
        ("test_pycc:NoSsthresh", {}, ["flows[0].scheme", "needs an ssthresh(sock) method"]),
        ("test_pycc:Recorder", {"cwnd_typo": 3}, ["flows[0].params", "cwnd_typo"]),
        ("cellcc.pycc.reference:Fixed", {"cwnd": 0}, ["flows[0].scheme", "cwnd must be >= 1"]),
        ("bad name:X", {}, ["flows[0].scheme", "not an import path"]),
    ],
)
def test_bad_schemes_are_scenario_errors_before_the_run(scheme, params, needles):
    document = scenario(LOSSY, FAST_UP, scheme, params=params, duration_s=5.0)
    for call in (cellcc.validate, cellcc.simulate):
        with pytest.raises(cellcc.ScenarioError) as info:
            call(document)
        for needle in needles:
            assert needle in str(info.value), str(info.value)


def test_native_errors_pickle_with_their_message():
    for error in (cellcc.ControlError("x at t"), cellcc.ScenarioError("flows[0]: bad")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)


def _simulate_in_worker(scheme: str) -> str:
    try:
        run_lossy(scheme)
    except cellcc.CellccError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_errors_cross_process_pools_with_their_message():
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert (
            pool.submit(_simulate_in_worker, "test_pycc:Raises")
            .result()
            .startswith("ControlError: test_pycc:Raises.cong_avoid")
        )
        with pytest.raises(cellcc.ScenarioError, match="cannot import"):
            pool.submit(run_lossy, "nosuchmodule_xyz:Cc").result()


def test_import_path_of_a_class():
    assert import_path(Recorder) == "test_pycc:Recorder"

    class Local:
        pass

    with pytest.raises(ValueError, match="cannot be named by an import path"):
        import_path(Local)


# -- sweeps ---------------------------------------------------------------------------

SWEEP = """
name = "pycc"
seeds = [1, 2]
schemes = ["cellcc.pycc.reference:NewReno", "newreno"]

[base]
duration_s = 3.0
downlink = { rate_mbps = 12.0, delay_ms = 10.0, queue = { kind = "droptail", packets = 30 } }
uplink = { rate_mbps = 100.0, delay_ms = 10.0 }
"""


def sweep_results(tmp_path: Path, **options: Any) -> pd.DataFrame:
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP, encoding="utf-8")
    outcome = runner.run_sweep(load_sweep(path), tmp_path / options.get("executor", "x"), **options)
    assert outcome.executed == 4
    return outcome.results


def test_an_import_path_runs_in_a_sweep_on_the_local_pool(tmp_path):
    results = sweep_results(tmp_path, jobs=2).query("flow == 0")
    python = results[results.scheme == "cellcc.pycc.reference:NewReno"]
    rust = results[results.scheme == "newreno"]
    assert len(python) == 2
    columns = ["seed", "throughput_mbps", "rtt_mean_ms", "drops", "retransmits"]
    pd.testing.assert_frame_equal(
        python[columns].reset_index(drop=True), rust[columns].reset_index(drop=True)
    )


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_import_path_runs_in_a_sweep_on_ray_with_the_same_results(tmp_path):
    pytest.importorskip("ray")
    local = sweep_results(tmp_path, executor="local", jobs=2)
    distributed = sweep_results(tmp_path, executor="ray", jobs=2)
    pd.testing.assert_frame_equal(local, distributed)


def test_editing_a_python_scheme_invalidates_cached_sweep_runs(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "editable_cc.py"
    module.write_text("from cellcc.pycc.reference import Aimd as Cc\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(package))
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(SWEEP.replace("cellcc.pycc.reference:NewReno", "editable_cc:Cc"))
    sweep = load_sweep(sweep_file)
    first = [runner.run_key(r) for r in sweep.runs]
    assert first == [runner.run_key(r) for r in sweep.runs]  # stable
    module.write_text("from cellcc.pycc.reference import Aimd as Cc  # edited\n")
    second = [runner.run_key(r) for r in sweep.runs]
    external = [i for i, r in enumerate(sweep.runs) if r.params["scheme"] == "editable_cc:Cc"]
    assert external and all(first[i] != second[i] for i in external)
    assert all(first[i] == second[i] for i in range(len(first)) if i not in external)


class Interrupted:
    def ssthresh(self, sock: Any) -> int:
        return 2

    def cong_avoid(self, sock: Any, acked: int) -> None:
        raise KeyboardInterrupt


def test_ctrl_c_in_a_hook_stops_the_run_as_ctrl_c():
    with pytest.raises(KeyboardInterrupt):
        run_lossy("test_pycc:Interrupted")
