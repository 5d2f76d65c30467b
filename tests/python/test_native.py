"""End-to-end through the compiled core (skipped when it is not built, except in CI)."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cellcc
from cellcc import api, synthetic

pytestmark = pytest.mark.usefixtures("native")

SUMMARY_COLUMNS = {
    "flow", "scheme", "throughput_mbps", "owd_mean_ms", "owd_p95_ms", "qdelay_mean_ms",
    "qdelay_p95_ms", "rtt_mean_ms", "pantheon_loss_rate", "utilisation", "retransmits",
}  # fmt: skip


def constant_link(scheme="cubic", duration_s=3.0, **extra):
    return {
        "name": f"{scheme}-constant",
        "duration_s": duration_s,
        "seed": 1,
        "downlink": {
            "rate_mbps": 12.0,
            "delay_ms": 10.0,
            "queue": {"kind": "droptail", "packets": 100},
        },
        "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
        "flows": [{"scheme": scheme}],
        **extra,
    }


def test_schemes_include_the_classics():
    assert {"newreno", "cubic", "bbr"} <= set(cellcc.schemes())


@pytest.mark.parametrize("scheme", ["newreno", "cubic", "bbr"])
def test_simulate_constant_link(scheme):
    result = cellcc.simulate(constant_link(scheme))
    assert set(result.summary.columns) >= SUMMARY_COLUMNS
    flow = result.flows.iloc[0]
    assert flow["scheme"] == scheme
    assert 0 < flow["throughput_mbps"] <= 12.0 * 1.01
    assert flow["owd_p95_ms"] >= 10.0  # at least the propagation delay
    assert {"flow", "t_s", "throughput_mbps", "qdelay_ms", "cwnd"} <= set(result.timeseries.columns)
    link = result.timeseries[result.timeseries["flow"] == -1]
    assert link["capacity_mbps"].dropna().between(11.9, 12.1).all()
    assert result.meta["seed"] == 1 and result.meta["duration_s"] == 3.0


def test_same_seed_same_numbers():
    a = cellcc.simulate(constant_link(duration_s=2.0) | {"seed": 5})
    b = cellcc.simulate(constant_link(duration_s=2.0) | {"seed": 5})
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)


def test_seed_override_and_packet_log():
    result = cellcc.simulate(
        constant_link(duration_s=1.0, metrics={"packet_log": True, "bin_ms": 100.0}), seed=9
    )
    assert result.seed == 9
    assert result.packet_log is not None and result.packet_log.startswith("#")


def test_file_scenario_resolves_trace_against_its_directory(tmp_path, monkeypatch):
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=3.0)
    scenario = constant_link(duration_s=2.0)
    scenario["downlink"] = {"trace": "traces/lte-stationary.down", "delay_ms": 10.0}
    path = tmp_path / "exp" / "s.toml"
    path.parent.mkdir()
    scenario["downlink"]["trace"] = "../traces/lte-stationary.down"
    path.write_text(api.scenario_text(scenario))
    monkeypatch.chdir(tmp_path.parent)
    result = cellcc.simulate(path)
    assert result.flows.iloc[0]["throughput_mbps"] > 0
    out = result.save(tmp_path / "out")
    record = json.loads((out / "provenance.json").read_text())
    assert record["scenario"] == path.read_text()
    assert record["core_version"]


def test_unknown_scheme_names_file_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(api.scenario_text(constant_link("cubc")))
    with pytest.raises(cellcc.ScenarioError) as info:
        cellcc.validate(path)
    message = str(info.value)
    assert "bad.toml" in message and "flows[0].scheme" in message and "cubc" in message


def test_unknown_key_is_an_error():
    with pytest.raises(cellcc.ScenarioError, match="colour"):
        cellcc.simulate(constant_link(duration_s=1.0) | {"colour": "blue"})


def test_missing_trace_is_an_error(tmp_path):
    scenario = constant_link(duration_s=1.0)
    scenario["downlink"] = {"trace": "nope.down"}
    with pytest.raises(cellcc.CellccError, match=r"nope\.down"):
        cellcc.simulate(scenario, base_dir=tmp_path)


def test_trace_info_of_a_synthetic_trace(tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=5.0)
    info = cellcc.trace_info(down)
    stamps = np.loadtxt(down, dtype=np.int64)
    assert info["duration_s"] == pytest.approx(5.0)
    assert info["opportunities"] == len(stamps)
    assert info["mean_mbps"] == pytest.approx(len(stamps) * 1500 * 8 / 5.0 / 1e6, rel=1e-6)
    assert info["longest_outage_ms"] >= 0


def test_trace_info_matches_the_shared_readme(shared_traces):
    info = cellcc.trace_info(shared_traces / "mahimahi" / "ATT-LTE-driving-2016.down")
    assert info["duration_s"] == pytest.approx(120.0, abs=0.01)  # README rounds 120.002
    assert info["mean_mbps"] == pytest.approx(4.560, abs=0.001)
    assert info["max_gap_ms"] == pytest.approx(1123)


@pytest.mark.slow
def test_compare_on_a_real_trace(shared_traces, tmp_path):
    trace = shared_traces / "mahimahi" / "TMobile-LTE-short.down"
    comparison = cellcc.compare(trace, schemes=["cubic", "bbr"], duration_s=10.0)
    assert comparison.uplink_trace == trace.with_suffix(".up")
    summary = comparison.summary.set_index("scheme")
    assert (summary["throughput_mbps"] > 1.0).all()
    assert (summary["utilisation"] <= 1.0 + 1e-9).all()
    plot_dir = os.environ.get("CELLCC_PLOT_DIR")
    if plot_dir:  # one command away from a picture of this run
        from cellcc.report import write_comparison

        write_comparison(comparison, Path(plot_dir) / "compare-on-a-real-trace")


def test_progress_reports_rising_fractions_ending_at_one():
    seen: list[float] = []
    cellcc.simulate(constant_link("bbr", duration_s=20.0), progress=seen.append)
    assert len(seen) >= 2, seen  # paced BBR: ~3,000 events per simulated second
    assert seen == sorted(seen)
    assert 0.0 < seen[0] < 1.0
    assert seen[-1] == 1.0


def test_an_exception_in_the_progress_callback_stops_the_run():
    class Stop(Exception):
        pass

    def stop(_fraction: float) -> None:
        raise Stop

    with pytest.raises(Stop):
        cellcc.simulate(constant_link("cubic", duration_s=20.0), progress=stop)
