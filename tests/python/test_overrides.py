"""Overrides at every entry point: scheme parameters in a scheme name, scenario keys by
path in ``simulate`` and ``cellcc run``."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import cellcc
from cellcc import api
from cellcc.cli import app

pytestmark = pytest.mark.usefixtures("native")

SCENARIO = {
    "name": "overrides",
    "duration_s": 3.0,
    "seed": 2,
    "downlink": {"rate_mbps": 12.0, "delay_ms": 10.0, "queue": {"kind": "droptail", "packets": 60}},
    "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
    "flows": [{"scheme": "c2tcp"}],
}


@pytest.mark.parametrize(
    ("spec", "name", "params"),
    [
        ("cubic", "cubic", {}),
        ("c2tcp:target_ms=80", "c2tcp", {"target_ms": 80}),
        ("c2tcp:target_ms=80:alpha=1.5", "c2tcp", {"target_ms": 80, "alpha": 1.5}),
        ("cubic+codel", "cubic+codel", {}),
        ("mypkg.cc:MyReno", "mypkg.cc:MyReno", {}),
        ("mypkg.cc:MyReno:beta=0.7:name=x", "mypkg.cc:MyReno", {"beta": 0.7, "name": "x"}),
    ],
)
def test_scheme_names_carry_parameters(spec, name, params):
    assert api.parse_scheme(spec) == (name, params)


def test_simulate_overrides_set_keys_by_path():
    overrides = {"duration_s": 2.0, "downlink.queue.packets": 20, "flows[0].params.alpha": 1.5}
    got = cellcc.simulate(SCENARIO, overrides=overrides)
    expected = copy.deepcopy(SCENARIO)
    expected["duration_s"] = 2.0
    expected["downlink"]["queue"]["packets"] = 20
    expected["flows"][0]["params"] = {"alpha": 1.5}
    pd.testing.assert_frame_equal(got.summary, cellcc.simulate(expected).summary)
    assert not got.summary.equals(cellcc.simulate(SCENARIO).summary)
    with pytest.raises(cellcc.ScenarioError, match=r"override flows\[2\]"):
        cellcc.simulate(SCENARIO, overrides={"flows[2].scheme": "cubic"})
    with pytest.raises(cellcc.ScenarioError, match="alfa"):
        cellcc.simulate(SCENARIO, overrides={"flows[0].params.alfa": 1.5})


def test_compare_runs_schemes_with_their_parameters(shared_traces):
    trace = shared_traces / "mahimahi" / "TMobile-LTE-short.down"
    comparison = cellcc.compare(
        trace, schemes="c2tcp:target_ms=40,c2tcp:target_ms=300", duration_s=10.0
    )
    summary = comparison.summary.set_index("scheme")
    tight, loose = summary.loc["c2tcp:target_ms=40"], summary.loc["c2tcp:target_ms=300"]
    assert tight["rtt_mean_ms"] < loose["rtt_mean_ms"]
    assert comparison.scenario("c2tcp:target_ms=40")["flows"] == [
        {"scheme": "c2tcp", "params": {"target_ms": 40}}
    ]
    with pytest.raises(cellcc.ScenarioError, match="target_mz"):
        cellcc.compare(trace, schemes="c2tcp:target_mz=40", duration_s=1.0)


def test_cli_run_takes_duration_and_set(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        "duration_s = 5.0\n[downlink]\nrate_mbps = 12.0\ndelay_ms = 10.0\n"
        'queue = { kind = "droptail", packets = 60 }\n'
        '[uplink]\nrate_mbps = 100.0\n[[flows]]\nscheme = "cubic"\n',
        encoding="utf-8",
    )
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "run",
            str(scenario),
            "--duration",
            "1.5",
            "--set",
            "downlink.queue.packets=7",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    provenance = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    text = provenance["scenario"]  # the scenario that ran, overrides applied
    assert "duration_s = 1.5" in text and "packets = 7" in text
    bad = runner.invoke(app, ["run", str(scenario), "--set", "packets"])
    assert bad.exit_code == 2 and "--set: expected KEY=VALUE" in bad.output


def test_compare_in_parallel_gives_the_same_results_and_a_combined_time_series(tmp_path):
    kwargs = {"schemes": "cubic,bbr,c2tcp:target_ms=60", "duration_s": 2.0}
    trace = tmp_path / "c.down"
    trace.write_text("".join(f"{t}\n" for t in range(1, 1001)), encoding="utf-8")
    serial = cellcc.compare(trace, **kwargs)
    parallel = cellcc.compare(trace, jobs=2, **kwargs)
    pd.testing.assert_frame_equal(serial.summary, parallel.summary)
    pd.testing.assert_frame_equal(serial.timeseries, parallel.timeseries)
    series = parallel.timeseries
    assert list(series["scheme"].unique()) == ["cubic", "bbr", "c2tcp:target_ms=60"]
    assert len(series) == sum(len(r.timeseries) for r in parallel.results.values())
    with pytest.raises(cellcc.UsageError, match="jobs"):
        cellcc.compare(trace, jobs=0, **kwargs)
