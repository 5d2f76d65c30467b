"""The command line end to end through the compiled core."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from cellcc import api, synthetic
from cellcc.cli import app
from helpers import Images

pytestmark = pytest.mark.usefixtures("native")
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_run_scenario_file(tmp_path):
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=3.0)
    path = tmp_path / "s.toml"
    path.write_text(
        api.scenario_text(
            {
                "name": "cli-native",
                "duration_s": 2.0,
                "downlink": {"trace": "traces/lte-stationary.down", "delay_ms": 10.0},
                "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
                "flows": [{"scheme": "bbr"}],
            }
        )
    )
    result = invoke("run", path, "--out", tmp_path / "out", "--seed", 2)
    assert result.exit_code == 0, result.output
    assert "cli-native (seed 2)" in result.stdout
    assert (tmp_path / "out" / "timeseries.parquet").is_file()


def test_compare_two_schemes_on_a_tiny_trace(tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path / "traces", duration_s=3.0)
    out = tmp_path / "cmp"
    result = invoke(
        "compare", "--trace", down, "--schemes", "cubic,newreno", "--duration", 3,
        "--bin-ms", 250, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    parser = Images()
    parser.feed((out / "index.html").read_text())
    assert len(parser.src) == 4
    for src in parser.src:
        assert (out / src).is_file()


def test_schemes_lists_every_registered_scheme_with_source_and_parameters():
    info = api.scheme_info()
    assert [s["name"] for s in info] == api.schemes()
    cubic = next(s for s in info if s["name"] == "cubic")
    assert "tcp_cubic.c" in cubic["source"]
    assert {"key": "beta", "kind": "value", "default": "717"} in cubic["params"]
    bbr = next(s for s in info if s["name"] == "bbr")
    assert {"key": "cycle_seed", "kind": "flow_seed", "default": None} in bbr["params"]
    for s in info:
        assert s["doc"].startswith("docs/algorithms/")
    result = invoke("schemes")
    assert result.exit_code == 0
    assert "beta = 717" in result.stdout and "RFC 6817" in result.stdout


def test_compare_puts_an_aqm_under_a_scheme_and_suggests_names(tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path / "traces", duration_s=3.0)
    cmp = api.compare(
        down, schemes=["cubic", "cubic+codel"], duration_s=3.0, queue="droptail:packets=500"
    )
    assert cmp.scenario("cubic+codel")["downlink"]["queue"] == {"kind": "codel", "packets": 500}
    assert cmp.scenario("cubic+codel")["uplink"]["queue"] == {"kind": "codel", "packets": 500}
    assert cmp.scenario("cubic+codel")["flows"] == [{"scheme": "cubic"}]
    assert list(cmp.summary["scheme"]) == ["cubic", "cubic+codel"]
    result = invoke("compare", "--trace", down, "--schemes", "cubc")
    assert result.exit_code == 2
    assert "did you mean 'cubic'?" in result.stderr


def test_traces_info(tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=2.0)
    result = invoke("traces", "info", down)
    assert result.exit_code == 0, result.output
    assert "duration" in result.stdout and "longest outage" in result.stdout


def test_bad_file_and_bad_scheme_are_one_line_errors(tmp_path):
    result = invoke("run", tmp_path / "absent.toml")
    assert result.exit_code == 2 and "absent.toml" in result.stderr
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=1.0)
    result = invoke("compare", "--trace", down, "--schemes", "cubic,vegass")
    assert result.exit_code == 2
    assert "--schemes" in result.stderr and "vegass" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_demo_writes_a_report(tmp_path):
    out = tmp_path / "demo"
    result = invoke("demo", "--out", out, "--duration", 5)
    assert result.exit_code == 0, result.output
    index = out / "index.html"
    assert str(index) in result.stdout.replace("\n", "")
    parser = Images()
    parser.feed(index.read_text())
    assert len(parser.src) >= 2 * (2 + 3)
    for src in parser.src:
        assert (out / src).is_file()


@pytest.mark.slow
def test_demo_is_byte_for_byte_reproducible(tmp_path):
    for name in ("a", "b"):
        result = invoke("demo", "--out", tmp_path / name, "--duration", 3, "--schemes", "cubic,bbr")
        assert result.exit_code == 0, result.output
    produced = sorted(
        p.relative_to(tmp_path / "a")
        for p in (tmp_path / "a").rglob("*")
        if p.suffix in {".png", ".csv", ".down", ".up"}
    )
    assert len(produced) > 10
    for relative in produced:
        assert (tmp_path / "a" / relative).read_bytes() == (
            tmp_path / "b" / relative
        ).read_bytes(), relative


def test_run_with_an_uplink_flow_shows_each_row_direction(tmp_path):
    path = tmp_path / "up.toml"
    path.write_text(
        api.scenario_text(
            {
                "name": "uplink-flow",
                "duration_s": 5.0,
                "downlink": {"rate_mbps": 20.0, "delay_ms": 20.0},
                "uplink": {
                    "rate_mbps": 2.0,
                    "delay_ms": 20.0,
                    "queue": {"kind": "droptail", "packets": 100},
                },
                "flows": [{"scheme": "cubic"}, {"scheme": "cubic", "direction": "up"}],
            }
        )
    )
    result = invoke("run", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "dir" in result.stdout
    rows = pd.read_csv(tmp_path / "out" / "summary.csv")
    by_flow = dict(zip(rows["flow"], rows["flow_direction"], strict=True))
    assert by_flow == {0: "down", 1: "up", -1: "down", -3: "up"}
    # The uplink flow is limited by the 2 Mbit/s uplink, the downlink one is not.
    tput = dict(zip(rows["flow"], rows["throughput_mbps"], strict=True))
    assert 1.5 < tput[1] < 2.0
