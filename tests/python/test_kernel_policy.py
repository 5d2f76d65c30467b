"""Per-interval Python policies on kernel TCP (``cellcc_policy``, cellcc.kernel_policy).

The unit tests check the report and decision conversions everywhere. The real-path test
runs the per-interval ``Aimd`` of ``cellcc.pycc.reference`` unchanged through the kernel
and ``cellcc-emu``, and in the simulator, on one shared trace, and compares throughput
and mean queueing delay (issue 15 item 6's bounds, the ones ``cellcc validate`` uses).
It needs root, TUN, BTF and the real-path binaries; elsewhere it skips with the reason.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from cellcc import kernel_policy, mmlog, realpath, validation
from cellcc.pycc import IntervalControl
from cellcc.pycc.reference import Aimd
from helpers import constant_trace

RECORD: dict[str, Any] = {
    "flow": "10.0.0.1:40000-10.0.0.2:5201", "seq": 4, "t_us": 2_000_000,
    "interval_us": 20_000, "acks": 30, "delivered_pkts": 50, "acked_bytes": 48 * 1448,
    "lost_pkts": 0, "sent_pkts": 55, "retrans_pkts": 1, "sent_bytes": 55 * 1448,
    "rtt_samples": 4, "rtt_sum_us": 4 * 45_000 + 2, "pacing_rate_Bps": 0,
    "rtt_min_us": 41_000, "rtt_max_us": 50_000, "rtt_first_us": 41_000,
    "rtt_last_us": 50_000, "cwnd": 14, "ssthresh": 0x7FFFFFFF, "in_flight": 12,
    "srtt_us": 44_000, "min_rtt_us": 40_500, "ca_state": 3, "mss": 1448,
}  # fmt: skip


def test_kernel_reports_have_the_simulator_report_fields() -> None:
    r = kernel_policy.report_from_record(RECORD, flow=0)
    assert r.interval_s == pytest.approx(0.02)
    assert r.acked_pkts == 48 and r.delivered_bytes == 50 * 1448
    assert r.rtt_mean_ms == pytest.approx(45.0005) and r.rtt_max_ms == 50.0
    assert r.delivery_rate_bps == pytest.approx(50 * 1448 * 8 / 0.02)
    assert r.goodput_bps == pytest.approx(48 * 1448 * 8 / 0.02)
    assert r.ca_state == "recovery" and r.min_rtt_ms == 40.5
    values = r.values()
    assert len(values) == len(kernel_policy.FIELDS)
    assert values[kernel_policy.FIELDS.index("cwnd")] == 14.0
    empty = kernel_policy.report_from_record({**RECORD, "rtt_samples": 0}, flow=0)
    assert empty.rtt_min_ms is None and empty.rtt_mean_ms is None
    assert math.isnan(empty.values()[kernel_policy.FIELDS.index("rtt_first_ms")])


def test_kernel_report_fields_match_the_native_report() -> None:
    core = pytest.importorskip("cellcc._core")
    assert tuple(core.IntervalReport.FIELDS) == kernel_policy.FIELDS


def test_decisions_are_read_as_the_simulator_reads_them() -> None:
    assert kernel_policy.decision_of(None) == (0, 0)
    assert kernel_policy.decision_of(12.9) == (12, 0)
    assert kernel_policy.decision_of(0.2) == (1, 0)
    assert kernel_policy.decision_of({"pacing_rate": 1.25e6}) == (0, 1_250_000)
    with pytest.raises(ValueError, match="unknown key"):
        kernel_policy.decision_of({"cwnd_typo": 3})
    with pytest.raises(ValueError, match="cwnd"):
        kernel_policy.decision_of(float("nan"))
    with pytest.raises(ValueError, match="expected None"):
        kernel_policy.decision_of("ten")


def test_the_same_aimd_class_drives_a_kernel_report() -> None:
    policy = Aimd()
    assert policy.on_interval(kernel_policy.report_from_record(RECORD, flow=0)) == 11.0
    lossy = kernel_policy.report_from_record({**RECORD, "lost_pkts": 2}, flow=0)
    assert policy.on_interval(lossy) == 5.5
    params = kernel_policy.kernel_params("cellcc.pycc.reference:Aimd")
    assert params == {"interval_us": 20_000, "initial_cwnd": 10, "initial_pacing_Bps": 0}
    assert params.items() >= validation.SCHEMES["aimd"].kernel_params.items()


def test_only_held_interval_policies_run_on_the_kernel() -> None:
    with pytest.raises(realpath.RealPathError, match="not a per-interval control"):
        kernel_policy.kernel_params("cellcc.pycc.reference:NewReno")


DURATION_S = 20.0
TRACE = "TMobile-LTE-short"


def real_path_or_skip() -> None:
    reasons = realpath.missing_requirements(bpf=True)
    if reasons:
        pytest.skip("real path unavailable: " + "; ".join(reasons))


class Paced(IntervalControl):
    """A large window paced at 4 Mbit/s from the first decision on."""

    seen: list[Any] = []  # noqa: RUF012 - the reports of the last run, for the test

    def on_interval(self, report: Any) -> dict[str, float]:
        Paced.seen.append(report)
        return {"cwnd": 400, "pacing_rate": 4e6 / 8}


@pytest.mark.slow
@pytest.mark.usefixtures("native")
def test_a_pacing_decision_paces_the_kernel_connection(tmp_path: Path) -> None:
    real_path_or_skip()
    trace = constant_trace(tmp_path, 12.0)
    link = realpath.EmuLink(trace, trace, 20.0, 1000)
    scheme = "test_kernel_policy:Paced"
    Paced.seen.clear()
    settings = {"policy": kernel_policy.kernel_params(scheme)}
    with realpath.kernel_loaded(settings), kernel_policy.PolicyDriver(scheme):
        emu = realpath.run_emulated(
            link, cc=kernel_policy.KERNEL_CC, duration_s=6.0, out_dir=tmp_path
        )
    real, _ = validation.measure(mmlog.read(emu.downlink_log), 6.0)
    print(f"paced at 4 Mbit/s on a 12 Mbit/s link: {real['throughput_mbps']:.3f} Mbit/s")
    # Before the first decision the report says "no pacing", after it the rate set.
    assert Paced.seen[0].pacing_rate == 0 and Paced.seen[-1].pacing_rate == 500_000
    assert Paced.seen[-1].cwnd == 400
    assert abs(real["throughput_mbps"] / 4.0 - 1) <= 0.05
    assert real["qdelay_mean_ms"] < 5.0


@pytest.mark.slow
@pytest.mark.usefixtures("native")
def test_python_aimd_on_kernel_tcp_matches_the_simulator(
    shared_traces: Path, tmp_path: Path
) -> None:
    real_path_or_skip()
    spec = validation.SCHEMES["aimd"]
    down, up = validation.trace_pair(shared_traces / "mahimahi", TRACE)
    setup = validation.Setup(duration_s=DURATION_S)
    link = validation.emu_link(down, up, setup)
    settings = {"policy": kernel_policy.kernel_params(spec.sim_scheme)}
    with realpath.kernel_loaded(settings):
        with kernel_policy.PolicyDriver(spec.sim_scheme) as driver:
            emu = realpath.run_emulated(
                link, cc=spec.kernel_cc, duration_s=DURATION_S, out_dir=tmp_path
            )
        stats = [e["stats"] for e in realpath.kernel_stats("policy")]
    real_log = mmlog.read(emu.downlink_log)
    real, _ = validation.measure(real_log, DURATION_S)
    _, sim, _ = validation.simulate_aligned(spec, down, up, setup, real_log)
    mine = max(stats, key=lambda s: s["updated_us"])
    lat = sorted(driver.stats.latency_ms)
    print(
        f"aimd on {TRACE}, {DURATION_S:g} s: throughput kernel {real['throughput_mbps']:.3f} "
        f"sim {sim['throughput_mbps']:.3f} Mbit/s; mean qdelay kernel "
        f"{real['qdelay_mean_ms']:.1f} sim {sim['qdelay_mean_ms']:.1f} ms; reports "
        f"{driver.stats.reports}, decisions {driver.stats.decisions}, kernel {mine}; "
        f"policy latency median {lat[len(lat) // 2]:.3f} ms, max {lat[-1]:.3f} ms"
    )
    # Every report reached the policy and its decision the kernel (20 ms intervals).
    assert driver.stats.reports >= 0.9 * DURATION_S / 0.02
    assert mine["dropped"] == 0 and mine["decisions"] >= 0.9 * driver.stats.reports
    assert abs(real["throughput_mbps"] / sim["throughput_mbps"] - 1) <= 0.10
    assert abs(real["qdelay_mean_ms"] / sim["qdelay_mean_ms"] - 1) <= 0.25
