"""The API layer over a fake core: conversion, path resolution, saving, provenance."""

import json
import tomllib

import pandas as pd
import pytest

import cellcc
from cellcc import api

SCENARIO = {
    "name": "api-test",
    "duration_s": 2.0,
    "seed": 4,
    "downlink": {"trace": "traces/t.down", "delay_ms": 10.0},
    "uplink": {"rate_mbps": 100.0},
    "flows": [{"scheme": "cubic"}],
    "metrics": {"bin_ms": 500.0},
}


@pytest.fixture
def trace_dir(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.down").write_text("1\n")
    return tmp_path


def test_simulate_from_dict_resolves_paths_against_base_dir(fake_core, trace_dir):
    result = cellcc.simulate(SCENARIO, base_dir=trace_dir)
    assert isinstance(result.summary, pd.DataFrame)
    assert list(result.summary["flow"]) == [0, -1]
    assert result.flows["scheme"].tolist() == ["cubic"]
    assert {"flow", "t_s", "throughput_mbps"} <= set(result.timeseries.columns)
    assert result.seed == 4
    assert fake_core.calls[-1]["base_dir"] == str(trace_dir)
    assert tomllib.loads(result.scenario_text)["downlink"]["trace"] == "traces/t.down"


def test_simulate_from_file_resolves_paths_against_the_file(fake_core, trace_dir, monkeypatch):
    path = trace_dir / "scenario.toml"
    path.write_text(api.scenario_text(SCENARIO))
    monkeypatch.chdir(trace_dir.parent)  # the current directory must not matter
    result = cellcc.simulate(path, seed=11)
    assert result.seed == 11
    assert fake_core.calls[-1]["base_dir"] == str(trace_dir.resolve())
    assert fake_core.calls[-1]["source_name"] == str(path)
    assert result.scenario_text == path.read_text()


def test_missing_scenario_file_names_it(fake_core, tmp_path):
    with pytest.raises(cellcc.ScenarioError, match=r"nope\.toml: no such scenario file"):
        cellcc.simulate(tmp_path / "nope.toml")


def test_bad_seed_is_rejected_before_the_core(fake_core, trace_dir):
    with pytest.raises(cellcc.UsageError, match="seed"):
        cellcc.simulate(SCENARIO, base_dir=trace_dir, seed=-1)
    assert fake_core.calls == []


def test_save_writes_every_file_with_provenance(fake_core, trace_dir):
    result = cellcc.simulate({**SCENARIO, "metrics": {"packet_log": True}}, base_dir=trace_dir)
    out = result.save(trace_dir / "out", command="cellcc run scenario.toml")
    for name in api.RESULT_FILES:
        assert (out / name).is_file(), name
    assert (out / "downlink.log").read_text() == "# fake log\n"
    record = json.loads((out / "provenance.json").read_text())
    assert record["seed"] == 4
    assert record["command"] == "cellcc run scenario.toml"
    assert record["scenario"] == result.scenario_text
    assert record["git_revision"]
    assert set(record["versions"]) >= {"numpy", "pandas", "pyarrow"}
    assert record["python"].startswith("3.")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"][0]["scheme"] == "cubic"
    assert summary["summary"][0]["completion_s"] is None
    pd.testing.assert_frame_equal(pd.read_parquet(out / "summary.parquet"), result.summary)
    assert len(pd.read_csv(out / "timeseries.csv")) == len(result.timeseries)


def test_trace_info_reports_units_in_keys(fake_core, trace_dir):
    info = cellcc.trace_info(trace_dir / "traces" / "t.down")
    assert info["duration_s"] == 60.0
    assert info["longest_outage_ms"] == 450.0
    assert info["mean_mbps"] == 12.5


def test_trace_info_missing_file_is_a_trace_error(fake_core, tmp_path):
    with pytest.raises(cellcc.TraceError, match="nope"):
        cellcc.trace_info(tmp_path / "nope")


@pytest.mark.parametrize(
    ("spec", "table"),
    [
        ("infinite", {"kind": "infinite"}),
        ("droptail:packets=100", {"kind": "droptail", "packets": 100}),
        ("drophead:packets=50,bytes=75000", {"kind": "drophead", "packets": 50, "bytes": 75000}),
    ],
)
def test_parse_queue(spec, table):
    assert api.parse_queue(spec) == table
    assert api.parse_queue(api.queue_spec(table)) == table


@pytest.mark.parametrize(
    "spec", ["fifo", "droptail", "droptail:packets=0", "droptail:pkts=5", "infinite:packets=5"]
)
def test_bad_queue_specs_name_the_option(spec):
    with pytest.raises(cellcc.UsageError, match=r"^--queue: "):
        api.parse_queue(spec, option="--queue")


def test_compare_runs_each_scheme_with_the_same_path(fake_core, tmp_path):
    down = tmp_path / "x.down"
    down.write_text("1\n")
    (tmp_path / "x.up").write_text("1\n")
    seen = []
    comparison = cellcc.compare(
        down,
        schemes=["cubic", "bbr"],
        duration_s=2.0,
        progress=lambda s, done: seen.append((s, done)),
    )
    assert seen == [("cubic", False), ("cubic", True), ("bbr", False), ("bbr", True)]
    assert comparison.uplink_trace == tmp_path / "x.up"  # the .up sibling is used
    assert comparison.summary["scheme"].tolist() == ["cubic", "bbr"]
    scenario = comparison.scenario("bbr")
    assert scenario["uplink"]["trace"] == str(tmp_path / "x.up")
    assert scenario["downlink"]["queue"] == {"kind": "droptail", "packets": 100}
    assert "--schemes cubic,bbr" in comparison.command("out")


def test_compare_without_sibling_uses_a_constant_uplink(fake_core, tmp_path):
    down = tmp_path / "y.down"
    down.write_text("1\n")
    comparison = cellcc.compare(down, schemes=["newreno"], duration_s=1.0)
    assert comparison.scenario("newreno")["uplink"]["rate_mbps"] == 100.0


def test_compare_rejects_unknown_schemes_before_running(fake_core, tmp_path):
    down = tmp_path / "y.down"
    down.write_text("1\n")
    with pytest.raises(cellcc.UsageError, match=r"schemes: unknown scheme 'cubc'"):
        cellcc.compare(down, schemes=["cubic", "cubc"], duration_s=1.0)
    assert fake_core.calls == []
