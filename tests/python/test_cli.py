"""The command line over a fake core: output, files and one-line errors."""

import json
import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from cellcc import api, synthetic
from cellcc.cli import app
from helpers import assert_one_line_error

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def scenario_file(tmp_path):
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=2.0)
    scenario = {
        "name": "cli-test",
        "duration_s": 2.0,
        "downlink": {"trace": "traces/lte-stationary.down", "delay_ms": 10.0},
        "uplink": {"rate_mbps": 100.0},
        "flows": [{"scheme": "cubic"}],
    }
    path = tmp_path / "scenario.toml"
    path.write_text(api.scenario_text(scenario))
    return path


def test_schemes(fake_core):
    from fake_core import SCHEMES

    result = invoke("schemes", "--names")
    assert result.exit_code == 0
    assert result.stdout.split() == list(SCHEMES)
    listing = invoke("schemes")
    assert listing.exit_code == 0
    for name in SCHEMES:
        assert f"{name}: {name} (fake)" in listing.stdout
    assert "docs/algorithms/cubic.md" in listing.stdout
    as_json = invoke("schemes", "--json")
    assert [s["name"] for s in json.loads(as_json.stdout)] == list(SCHEMES)


def test_run_prints_a_summary_and_saves(fake_core, scenario_file, tmp_path):
    out = tmp_path / "res"
    result = invoke("run", scenario_file, "--seed", 3, "--out", out)
    assert result.exit_code == 0, result.output
    assert "cli-test (seed 3)" in result.stdout
    assert "Mbit/s" in result.stdout and "OWD p95" in result.stdout
    assert (out / "summary.parquet").is_file() and (out / "provenance.json").is_file()


def test_run_missing_file_is_one_line_naming_it(fake_core, tmp_path):
    result = invoke("run", tmp_path / "missing.toml")
    assert_one_line_error(result, "missing.toml")


def test_run_bad_scheme_names_the_key(fake_core, scenario_file):
    scenario_file.write_text(scenario_file.read_text().replace('"cubic"', '"cubc"'))
    result = invoke("run", scenario_file)
    assert_one_line_error(result, "flows[0].scheme", "cubc", "scenario.toml")


def test_compare_writes_results_plots_and_report(fake_core, tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path / "traces", duration_s=3.0)
    out = tmp_path / "cmp"
    result = invoke(
        "compare", "--trace", down, "--schemes", "cubic,bbr", "--duration", 3, "--out", out
    )
    assert result.exit_code == 0, result.output
    assert "report:" in result.stdout
    for name in (
        "index.html",
        "summary.csv",
        "throughput-vs-owd-p95.png",
        "throughput-vs-qdelay-mean.png",
        "timeseries-cubic.png",
        "timeseries-bbr.png",
    ):
        assert (out / name).is_file(), name  # fmt: skip


def test_compare_bad_scheme_names_the_option(fake_core, tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=1.0)
    result = invoke("compare", "--trace", down, "--schemes", "cubic,cubc")
    assert_one_line_error(result, "--schemes", "cubc", "newreno, cubic, bbr")


def test_compare_bad_queue_names_the_option(fake_core, tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=1.0)
    result = invoke("compare", "--trace", down, "--schemes", "cubic", "--queue", "red")
    assert_one_line_error(result, "--queue", "red")


def test_compare_missing_trace_names_it(fake_core, tmp_path):
    result = invoke("compare", "--trace", tmp_path / "gone.down", "--schemes", "cubic")
    assert_one_line_error(result, "--trace", "gone.down")


def test_traces_info_table(fake_core, tmp_path):
    down, _ = synthetic.write_preset("lte-driving", tmp_path, duration_s=1.0)
    result = invoke("traces", "info", down)
    assert result.exit_code == 0, result.output
    assert "longest outage" in result.stdout and "450" in result.stdout
    assert "mean capacity" in result.stdout


def test_traces_info_missing_file(fake_core, tmp_path):
    assert_one_line_error(invoke("traces", "info", tmp_path / "x.down"), "x.down")


def test_traces_synth_and_unknown_preset(tmp_path):
    result = invoke("traces", "synth", "lte-driving", "--out-dir", tmp_path, "--duration", 2)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lte-driving.down").is_file()
    assert_one_line_error(invoke("traces", "synth", "wifi", "--out-dir", tmp_path), "wifi")


def test_native_missing_is_a_clear_error(monkeypatch):
    from cellcc import _native

    monkeypatch.setattr(_native, "_core", None)
    assert_one_line_error(invoke("schemes"), "make build")


def test_python_dash_m_cellcc_help():
    done = subprocess.run(
        [sys.executable, "-m", "cellcc", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for command in ("run", "compare", "analyze", "traces", "demo", "schemes"):
        assert command in done.stdout


def test_usage_errors_are_one_line_from_the_real_entry_point(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "cellcc", "run", str(tmp_path / "s.toml"), "--seed", "abc"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "--seed" in lines[0]


def _commands(command, path=()):
    """Every command of the click tree below ``command``, with its path of names."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


#: Commands whose --help is their own (kernel and emu hand it to the Rust binaries).
_HELPED = [
    (path, command)
    for path, command in _commands(typer.main.get_command(app))
    if command.get_help_option(command.context_class(command)) is not None
]


@pytest.mark.parametrize(
    ("path", "command"), _HELPED, ids=[" ".join(p) or "cellcc" for p, _ in _HELPED]
)
def test_help_shows_every_help_text_and_default(path, command):
    # Wide enough that no help text wraps, so each must appear whole on its line.
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "500"})
    assert result.exit_code == 0, result.output
    for param in command.params:
        # A help text is plain text: "[default: out/<name>]" or "[away]" is shown as
        # written, not read as rich markup and dropped (it is stored escaped, "\\[").
        text = (getattr(param, "help", None) or "").replace("\\[", "[")
        assert text in result.output, f"{param.name}: help text {text!r} not shown"
        if param.default is not None and not isinstance(param.default, bool):  # flags: off
            default = f"[default: {param.default}]"
            assert default in result.output, f"{param.name}: {default} not shown"
