"""Sweeps: expansion, one-line errors, the run cache, kill -9 safety, Ray = local."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cellcc import runner
from cellcc.cli import app
from cellcc.sweep import expand, load_sweep
from helpers import assert_one_line_error

cli = CliRunner()
pytestmark = pytest.mark.usefixtures("native")

#: A small sweep on constant links: 2 schemes × 2 buffers × 2 seeds = 8 runs.
SMALL = """
name = "small"
seeds = [1, 2]
schemes = ["cubic", "bbr"]

[base]
duration_s = 2.0
downlink = { rate_mbps = 12.0, delay_ms = 10.0, queue = { kind = "droptail", packets = 50 } }
uplink = { rate_mbps = 100.0, delay_ms = 10.0 }

[grid]
"downlink.queue.packets" = [20, 80]
"""


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- expansion ------------------------------------------------------------------------


def test_expansion_is_ordered_and_parameterised(tmp_path):
    sweep = load_sweep(write(tmp_path, SMALL))
    assert len(sweep.runs) == 8
    assert sweep.param_columns == ["label", "scheme", "downlink.queue.packets"]
    order = [(r.params["scheme"], r.params["downlink.queue.packets"], r.seed) for r in sweep.runs]
    assert order[:4] == [("cubic", 20, 1), ("cubic", 20, 2), ("cubic", 80, 1), ("cubic", 80, 2)]
    first = sweep.runs[0].scenario
    assert first["downlink"]["queue"] == {"kind": "droptail", "packets": 20}
    assert first["flows"] == [{"scheme": "cubic"}] and first["seed"] == 1
    assert load_sweep(write(tmp_path, SMALL)).runs == sweep.runs  # deterministic


def test_scheme_grids_sets_and_quick(tmp_path):
    spec = {
        "base": {"duration_s": 5.0, "downlink": {"rate_mbps": 10.0}},
        "schemes": [
            {"scheme": "c2tcp", "grid": {"target_ms": [25, 50]}, "params": {"alpha": 2.0}},
            {
                "scheme": "cubic",
                "label": "cubic+codel",
                "set": {"downlink.queue": {"kind": "codel", "target_ms": 5}},
            },
        ],
        "quick": {"duration_s": 1.0, "repetitions": 2},
    }
    sweep = expand(spec)
    assert [r.params["label"] for r in sweep.runs] == ["c2tcp", "c2tcp", "cubic+codel"]
    assert sweep.runs[1].scenario["flows"][0]["params"] == {"alpha": 2.0, "target_ms": 50}
    assert sweep.runs[2].scenario["downlink"]["queue"]["kind"] == "codel"
    quick = expand(spec, quick=True)
    assert len(quick.runs) == 6 and {r.scenario["duration_s"] for r in quick.runs} == {1.0}


def test_traces_both_directions_swap_the_pair(tmp_path, tiny_trace):
    text = f"""
        traces_dir = "{tiny_trace.parent.parent}"
        duration_s = "trace"
        schemes = ["cubic"]
        [base]
        duration_s = 1.0
        downlink = {{ delay_ms = 10.0 }}
        [traces]
        dir = "{{traces}}/traces"
        glob = "*.down"
        uplink = "sibling"
        directions = ["downlink", "uplink"]
    """
    sweep = load_sweep(write(tmp_path, text))
    down, up = sweep.runs
    assert (down.params["direction"], up.params["direction"]) == ("downlink", "uplink")
    assert down.params["trace"] == up.params["trace"] == "lte-stationary"
    assert down.scenario["downlink"]["trace"] == up.scenario["uplink"]["trace"]
    assert down.scenario["uplink"]["trace"].endswith(".up")
    assert down.scenario["duration_s"] == pytest.approx(2.0, abs=0.01)


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "needles"),
    [
        (lambda t: "bogus = 1\n" + t, ["sweep.toml", "bogus", "unknown key"]),
        (lambda t: t.replace('"bbr"', '"bbrr"'), ["sweep.toml", "schemes[1].scheme", "bbrr"]),
        (
            lambda t: t.replace("queue.packets", "queue.packetz"),
            ["sweep.toml", "downlink.queue", "packetz"],
        ),
        (lambda t: t.replace("[20, 80]", "[]"), ["sweep.toml", "downlink.queue.packets"]),
        (lambda t: t.replace("seeds = [1, 2]", "seeds = [1, 1]"), ["sweep.toml", "seeds"]),
        (lambda t: t.replace("[base]", "[base"), ["sweep.toml", "invalid TOML"]),
        (
            lambda t: t + '\n[traces]\nfiles = ["{traces}/x.down"]\n',
            ["sweep.toml", "traces.files", "{traces}"],
        ),
        (lambda t: t + '\n[traces]\nfiles = ["nope.down"]\n', ["sweep.toml", "traces.files[0]"]),
        (lambda t: t + '\n[report]\nview = "pie"\n', ["sweep.toml", "report.view"]),
    ],
)
def test_bad_sweep_files_are_one_line_errors(tmp_path, edit, needles):
    path = write(tmp_path, edit(SMALL))
    result = cli.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out"), "-j", "1"])
    assert_one_line_error(result, *needles)


def test_missing_sweep_file_is_one_line(tmp_path):
    result = cli.invoke(app, ["sweep", str(tmp_path / "missing.toml")])
    assert_one_line_error(result, "missing.toml")


def test_unknown_experiment_is_one_line():
    result = cli.invoke(app, ["reproduce", "no-such-experiment"])
    assert_one_line_error(result, "no-such-experiment", "c2tcp-jsac-table1")


# -- runs, cache, dataset -------------------------------------------------------------


def test_sweep_caches_runs_and_writes_a_dataset(tmp_path):
    path = write(tmp_path, SMALL)
    out = tmp_path / "out"
    first = runner.run_sweep(load_sweep(path), out, jobs=1)
    assert (first.total, first.cached, first.executed) == (8, 0, 8)
    frame = pd.read_parquet(out / "results.parquet")
    flows = frame[frame["flow"] == 0]
    assert len(flows) == 8
    assert list(frame.columns[:6]) == [
        "run", "run_index", "seed", "label", "scheme", "downlink.queue.packets"
    ]  # fmt: skip
    assert len(list((out / "runs").glob("*.json"))) == 8
    again = runner.run_sweep(load_sweep(path), out, jobs=1)
    assert (again.cached, again.executed) == (8, 0)
    pd.testing.assert_frame_equal(again.results, first.results)
    # The key covers the code version: another revision runs everything again.
    run = load_sweep(path).runs[0]
    assert runner.run_key(run) != runner.run_key(run, {**runner.code_version(), "core": "x"})


def test_cache_key_hashes_trace_contents_not_paths(tmp_path, tiny_trace):
    copy = tmp_path / "elsewhere.down"
    copy.write_bytes(tiny_trace.read_bytes())
    spec = {"base": {"duration_s": 1.0, "downlink": {"trace": str(tiny_trace)}}}
    moved = {"base": {"duration_s": 1.0, "downlink": {"trace": str(copy)}}}
    spec["schemes"] = moved["schemes"] = ["cubic"]
    key = runner.run_key(expand(spec).runs[0])
    assert runner.run_key(expand(moved).runs[0]) == key
    copy.write_text(tiny_trace.read_text() + "2001\n")
    assert runner.run_key(expand(moved).runs[0]) != key


def test_sweep_command_prints_counts_and_writes_a_report(tmp_path):
    path = write(tmp_path, SMALL + '\n[report]\nview = "sweep"\nx = "downlink.queue.packets"\n')
    out = tmp_path / "out"
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert "8 runs (0 cached, 8 executed)" in result.stdout
    page = (out / "index.html").read_text()
    assert "cellcc sweep" in page and (out / "sweep.png").is_file()


@pytest.mark.slow
def test_kill_9_loses_no_finished_run_and_leaves_no_partial_file(tmp_path):
    # 16 runs of a 60 s, 48 Mbit/s link: long enough to kill the sweep in the middle.
    text = SMALL.replace("duration_s = 2.0", "duration_s = 60.0").replace("12.0", "48.0")
    text = text.replace("seeds = [1, 2]", "seeds = [1, 2, 3, 4]")
    path = write(tmp_path, text)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "cellcc", "sweep", str(path), "--out", str(out), "-j", "1"]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    runs = out / "runs"
    deadline = time.monotonic() + 120
    while len(list(runs.glob("*.json"))) < 3:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    finished = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 3 <= len(finished) < 16
    for name in finished:  # every visible file is a complete record
        assert json.loads((runs / name).read_text())["summary"]
    assert not [p for p in runs.iterdir() if not p.name.startswith(".") and p.suffix != ".json"]
    assert not (out / "results.parquet").exists()

    restart = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300)
    match = re.search(r"16 runs \((\d+) cached, (\d+) executed\)", restart.stdout)
    assert match, restart.stdout
    cached, executed = int(match.group(1)), int(match.group(2))
    print(f"\nkilled after {len(finished)} finished runs; restart: {cached} cached, {executed} run")
    assert cached == len(finished) and executed == 16 - len(finished)
    assert {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.name in finished} == (
        finished
    )
    assert not list(runs.glob(".*.tmp"))
    assert len(pd.read_parquet(out / "results.parquet").query("flow == 0")) == 16


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ray_executor_matches_the_local_executor(tmp_path):
    pytest.importorskip("ray")
    sweep = load_sweep(write(tmp_path, SMALL))
    local = runner.run_sweep(sweep, tmp_path / "local", jobs=2)
    started = time.monotonic()
    distributed = runner.run_sweep(sweep, tmp_path / "ray", executor="ray", jobs=2)
    print(f"\nray: {distributed.executed} runs in {time.monotonic() - started:.1f} s")
    assert distributed.executed == 8
    pd.testing.assert_frame_equal(local.results, distributed.results)
    import ray

    assert not ray.is_initialized()  # shut down after the sweep
