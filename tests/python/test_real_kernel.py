"""The BPF congestion controls on real Linux TCP, checked against the simulator's
implementation of the same algorithm on the same path.

Each test runs one scenario twice: in the simulator, and through ``cellcc-emu`` with a
kernel flow using the BPF algorithm loaded by ``cellcc-kernel``. It then compares the
algorithm's own mechanism (C2TCP's back-offs, PropRate's rate around rho and its buffer
delay, César's scheduling unit) as reported by the simulator's ``cc_info`` and by the
kernel's statistics map. They need root, TUN, BTF and the real-path binaries
(``make real``); elsewhere they skip and say which requirement is missing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cellcc import api, mmlog, realpath, validation, validation_runs
from helpers import constant_trace

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("native")]

DURATION_S = 12.0


@pytest.fixture(scope="module")
def kernel() -> Iterator[None]:
    reasons = realpath.missing_requirements(bpf=True)
    if reasons:
        pytest.skip("real path unavailable: " + "; ".join(reasons))
    # The kernel runs the same constants as the simulator (validation.SCHEMES).
    settings = {s.bpf: dict(s.kernel_params) for s in validation.SCHEMES.values() if s.bpf}
    with realpath.kernel_loaded(settings):
        yield


def run_both(
    scheme: str,
    tmp: Path,
    *,
    mbps: float,
    sched: str | None = None,
    ack_every_segment: bool = False,
) -> tuple[api.Result, dict[str, float], dict[str, float], list[dict[str, Any]]]:
    """Simulate and emulate one flow; returns the simulator's result, both sides'
    bottleneck metrics and the kernel's statistics entries for the algorithm."""
    spec = validation.SCHEMES[scheme]
    trace = constant_trace(tmp, mbps)
    setup = validation.Setup(
        duration_s=DURATION_S,
        delay_ms=20.0,
        queue_packets=1000,
        sched=sched,
        ack_every_segment=ack_every_segment,
    )
    link = validation.emu_link(trace, trace, setup)
    emu = realpath.run_emulated(link, cc=spec.kernel_cc, duration_s=DURATION_S, out_dir=tmp / "emu")
    real_log = mmlog.read(emu.downlink_log)
    real, _ = validation.measure(real_log, DURATION_S)
    result, sim, _ = validation.simulate_aligned(spec, trace, trace, setup, real_log)
    assert spec.bpf is not None
    stats = [e["stats"] for e in realpath.kernel_stats(spec.bpf)]
    return result, sim, real, stats


def latest(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """The entry of the flow just run: the one with the most ACKs is not enough when
    earlier tests left entries, so take the last updated (largest ``acks`` is a fallback)."""
    assert stats, "the algorithm wrote no statistics: it never saw an ACK"
    key = "updated_us" if "updated_us" in stats[0] else "acks"
    return max(stats, key=lambda s: s[key])


def cc_info(result: api.Result) -> dict[str, Any]:
    assert result.cc_info is not None
    return dict(result.cc_info.iloc[0])


def test_c2tcp_backs_off_when_rtt_stays_above_setpoint(kernel: None, tmp_path: Path) -> None:
    result, sim, real, stats = run_both("c2tcp", tmp_path, mbps=12.0)
    mine = latest(stats)
    sim_backoffs = cc_info(result)["backoffs"]
    print(f"c2tcp: resets kernel {mine['resets']} sim {sim_backoffs:.0f}; qdelay {real} / {sim}")
    # Both sides see a base RTT of 2 x 20 ms and keep the queue short of Setpoint's
    # worth of delay by resetting cwnd; the number of resets agrees within a factor 2.
    assert 40_000 <= mine["min_rtt_us"] <= 45_000
    assert mine["resets"] > 0 and sim_backoffs > 0
    assert 0.67 <= mine["resets"] / sim_backoffs <= 1.5, (mine["resets"], sim_backoffs)
    assert mine["setpoint_us"] == pytest.approx(2.0 * mine["min_rtt_us"], abs=2)
    assert real["qdelay_p95_ms"] < mine["setpoint_us"] / 1000 - 20.0
    assert abs(real["qdelay_mean_ms"] / sim["qdelay_mean_ms"] - 1) <= 0.25
    assert abs(real["throughput_mbps"] / sim["throughput_mbps"] - 1) <= 0.10


def test_proprate_paces_around_rho_to_its_buffer_target(kernel: None, tmp_path: Path) -> None:
    before = {e["flow"] for e in realpath.kernel_stats("proprate")}
    samples: list[dict[str, Any]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            samples.extend(
                e["stats"] for e in realpath.kernel_stats("proprate") if e["flow"] not in before
            )

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result, sim, real, stats = run_both("proprate", tmp_path, mbps=12.0)
    finally:
        stop.set()
        sampler.join()
    mine = latest(stats)
    info = cc_info(result)
    print(f"proprate: kernel {mine}; sim {info}; qdelay real {real} sim {sim}")
    # The same waveform: Eq. 6 picks the same regime and Eq. 7/8 the same gains.
    assert mine["regime"] == 0 and info["buffer_full"] == 1.0
    assert mine["k_f_x1000"] / 1000 == pytest.approx(info["k_f"], rel=0.05)
    assert mine["k_d_x1000"] / 1000 == pytest.approx(info["k_d"], rel=0.05)
    # Fill paces at k_f·rho and Drain at k_d·rho (§3), sample by sample.
    fill = [s for s in samples if s["state"] == 1 and s["rho_bps"] > 0]
    drain = [s for s in samples if s["state"] == 2 and s["rho_bps"] > 0]
    assert len(fill) >= 5 and len(drain) >= 5, (len(fill), len(drain))
    for s in fill:
        assert s["pacing_rate_bps"] / s["rho_bps"] == pytest.approx(s["k_f_x1000"] / 1000, rel=0.01)
    for s in drain:
        assert s["pacing_rate_bps"] / s["rho_bps"] == pytest.approx(s["k_d_x1000"] / 1000, rel=0.01)
    # And the same outcome as the simulator: buffer delay near t̄_buff = 40 ms.
    assert abs(real["qdelay_mean_ms"] / sim["qdelay_mean_ms"] - 1) <= 0.25
    assert abs(real["qdelay_mean_ms"] / 40.0 - 1) <= 0.25
    assert abs(real["throughput_mbps"] / sim["throughput_mbps"] - 1) <= 0.10


def test_cesar_finds_the_uplink_grant_period(kernel: None, tmp_path: Path) -> None:
    # With an ACK for every segment (one per ms at 12 Mbit/s) every SR occasion of
    # lte-fdd-sr5 carries a batch, so the scheduling unit is the 5 ms SR period on both
    # sides. (With Linux's default ACK spacing the two receivers differ: see
    # docs/cellular-models.md, "When the SR period does not show".)
    result, sim, real, stats = run_both(
        "cesar", tmp_path, mbps=12.0, sched="lte-fdd-sr5", ack_every_segment=True
    )
    mine = latest(stats)
    info = cc_info(result)
    print(f"cesar: kernel {mine}; sim {info}; qdelay real {real} sim {sim}")
    assert info["su_ms"] == pytest.approx(5.0, abs=0.25)
    assert mine["su_us"] / 1000 == pytest.approx(info["su_ms"], abs=0.25)
    assert mine["pattern_decisions"] >= 0.9 * mine["decisions"] > 0
    assert mine["phase"] == 1 and info["phase"] == "steady"  # STEADY on both sides
    assert mine["sets"] > 0
    assert abs(real["throughput_mbps"] / sim["throughput_mbps"] - 1) <= 0.10


def test_validate_broad_end_to_end(tmp_path: Path) -> None:
    # The broad command's real path: kernel CUBIC (no BPF needed), a byte buffer, two
    # runs, on a constant 12 Mbit/s trace where the two sides agree (docs/validation.md).
    reasons = realpath.missing_requirements(bpf=False)
    if reasons:
        pytest.skip("real path unavailable: " + "; ".join(reasons))
    traces_dir = tmp_path / "traces"
    traces_dir.mkdir()
    trace = constant_trace(tmp_path, 12.0).read_text()
    for suffix in (".down", ".up"):
        (traces_dir / f"const12{suffix}").write_text(trace)
    out = tmp_path / "out"
    table = validation_runs.validate(
        ["cubic"],
        ["const12"],
        traces_dir=traces_dir,
        out_dir=out,
        setup=validation.Setup(duration_s=4.0),
        buffers=validation_runs.parse_buffers("150KB"),
        runs=2,
    )
    row = table.iloc[0]
    print(table.T)
    assert row["buffer"] == "150KB" and row["runs"] == 2
    assert (out / "runs/150KB/cubic--const12/run-2/downlink.log").is_file()
    assert abs(row["throughput_diff"]) <= validation.ACCEPTANCE_THROUGHPUT
    # The byte limit holds on both sides: 150 000 charged bytes drain in 100 ms here.
    runs = pd.read_csv(out / "runs.csv")
    assert (runs["real_qdelay_p95_ms"] <= 105).all() and (runs["sim_qdelay_p95_ms"] <= 105).all()
