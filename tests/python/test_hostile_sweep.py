"""Sweeps under hostile input and faults: wrong types, unknown report keys and bad texts
refused before any run, a capped run count, exact grid values, corrupted cached runs,
stale temporaries, concurrent sweeps into one directory, kill -9 with a process pool and
a full disk."""

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cellcc import ScenarioError, results, runner
from cellcc.cli import app
from cellcc.sweep import expand, load_sweep
from helpers import assert_one_line_error

cli = CliRunner()
pytestmark = pytest.mark.usefixtures("native")

#: Two short runs on constant links.
TINY = """
name = "tiny"
seeds = [1, 2]
schemes = ["cubic"]

[base]
duration_s = 0.5
downlink = { rate_mbps = 12.0, delay_ms = 10.0, queue = { kind = "droptail", packets = 50 } }
uplink = { rate_mbps = 100.0, delay_ms = 10.0 }
"""
EXPERIMENT = '\n[experiment]\npaper = "p"\nfigure = "f"\ndescription = "d"\n'


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def sweep(path: Path, out: Path, *extra: str):
    return cli.invoke(app, ["sweep", str(path), "--out", str(out), "-j", "1", *extra])


# -- refused before any run ------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "needles"),
    [
        (lambda t: t + EXPERIMENT + "published = 5\n", ["experiment.published"]),
        (
            lambda t: t.replace('schemes = ["cubic"]', 'schemes = [{ scheme = ["cubic"] }]'),
            ["schemes[0].scheme"],
        ),
        (lambda t: t.replace("duration_s = 0.5", 'duration_s = 0.5\nseed = "abc"'), ["base.seed"]),
        (lambda t: t + '\n[report]\nwindow = ["a", "b"]\n', ["report.window"]),
        (lambda t: t.replace("duration_s = 0.5", "duration_s = 0.5\nflows = 5"), ["base.flows"]),
        (lambda t: t + '\n[report]\nmetrics = ["throughput_mbsp"]\n', ["report.metrics"]),
        (lambda t: t + '\n[report]\nnormalise_to = "cubbic"\n', ["report.normalise_to"]),
        (lambda t: t + "\n[report]\ngroup = 5\n", ["report.group"]),
        (lambda t: t.replace('name = "tiny"', 'name = "$x^$"'), ["name", "mathtext"]),
        (
            lambda t: t.replace('["cubic"]', '[{ scheme = "cubic", label = "$\\\\foo$" }]'),
            ["label", "mathtext"],
        ),
    ],
)
def test_bad_sweep_files_fail_before_any_run(tmp_path, edit, needles):
    path = write(tmp_path, edit(TINY))
    out = tmp_path / "out"
    result = sweep(path, out)
    assert_one_line_error(result, "sweep.toml", *needles)
    assert not list(out.glob("runs/*.json")), "a run was simulated before the error"


def test_the_run_count_is_printed_and_capped_before_expanding(tmp_path):
    values = ", ".join(str(v) for v in range(1, 10_001))
    grid = f'\n[grid]\n"downlink.delay_ms" = [{values}]\n"downlink.rate_mbps" = [{values}]\n'
    path = write(tmp_path, TINY + grid)
    started = time.monotonic()
    result = sweep(path, tmp_path / "out")
    assert_one_line_error(result, "sweep.toml", "200,000,000 runs", "100,000", "--max-runs")
    assert time.monotonic() - started < 20  # counted, not expanded
    assert "tiny: 200,000,000 runs" in result.stdout
    small = write(tmp_path, TINY, "small.toml")
    assert_one_line_error(sweep(small, tmp_path / "out", "--max-runs", "1"), "2 runs")
    done = sweep(small, tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("tiny: 2 runs")


def test_grid_floats_are_compared_exactly(tmp_path):
    spec = {
        "base": {"duration_s": 0.5, "downlink": {"rate_mbps": 12.0}},
        "schemes": ["cubic"],
        "grid": {"downlink.delay_ms": [0.1, 0.1000001]},
    }
    delays = [run.params["downlink.delay_ms"] for run in expand(spec).runs]
    assert delays == [0.1, 0.1000001]
    spec["grid"] = {"downlink.delay_ms": [1, 1.0]}  # the same value, written twice
    with pytest.raises(ScenarioError, match="duplicate value"):
        expand(spec)


# -- the output directory ------------------------------------------------------------


def test_a_corrupted_cached_run_is_quarantined_and_run_again(tmp_path):
    path = write(tmp_path, TINY)
    out = tmp_path / "out"
    assert sweep(path, out).exit_code == 0
    broken = sorted((out / "runs").glob("*.json"))[0]
    broken.write_text('{"summary": [', encoding="utf-8")
    again = sweep(path, out)
    assert again.exit_code == 0, again.output
    assert "2 runs (1 cached, 1 executed)" in again.stdout
    warnings = [line for line in again.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and broken.name in warnings[0], again.stderr
    assert json.loads(broken.read_text())["summary"]
    assert (broken.parent / f"{broken.name}.corrupt").read_text() == '{"summary": ['
    third = sweep(path, out)
    assert "2 runs (2 cached, 0 executed)" in third.stdout and "warning" not in third.stderr


def test_stale_temporaries_are_removed_at_the_start(tmp_path):
    path = write(tmp_path, TINY)
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    stale = [out / ".results.parquet.k2j4h5g6.tmp", out / "runs" / ".abc.json.x1y2z3w4.tmp"]
    for leftover in stale:
        leftover.write_text("partial")
    mine = out / ".notes.tmp"  # not a name the writers use: kept
    mine.write_text("user file")
    assert sweep(path, out).exit_code == 0
    assert not [p for p in stale if p.exists()]
    assert mine.exists()


def test_a_second_sweep_into_the_same_directory_refuses(tmp_path):
    long = TINY.replace("duration_s = 0.5", "duration_s = 60.0").replace("12.0", "48.0")
    long = long.replace("seeds = [1, 2]", "seeds = [1, 2, 3, 4, 5, 6]")
    first = write(tmp_path, long, "first.toml")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "cellcc", "sweep", str(first), "--out", str(out), "-j", "1"]
    holder = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / "sweep.json").is_file():  # the first sweep has started its runs
            assert holder.poll() is None, "the first sweep ended early"
            assert time.monotonic() < deadline, "the first sweep did not start"
            time.sleep(0.05)
        second = sweep(write(tmp_path, TINY, "second.toml"), out)
        assert_one_line_error(second, str(out), f"PID {holder.pid}", "another cellcc process")
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    # The kernel dropped the killed holder's lock: the directory is free again.
    assert sweep(write(tmp_path, TINY, "second.toml"), out).exit_code == 0


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_a_parallel_sweep_leaves_no_process_behind(tmp_path):
    long = TINY.replace("duration_s = 0.5", "duration_s = 60.0").replace("12.0", "48.0")
    path = write(tmp_path, long.replace("seeds = [1, 2]", "seeds = [1, 2, 3, 4]"))
    argv = [sys.executable, "-m", "cellcc", "sweep", str(path), "--out", str(tmp_path / "o")]
    process = subprocess.Popen(
        [*argv, "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own session: every process it starts is in it
    )
    try:
        deadline = time.monotonic() + 60
        while len(_session(process.pid)) < 3:  # the driver and its two workers
            assert process.poll() is None, "the sweep ended before its workers started"
            assert time.monotonic() < deadline, "no workers appeared"
            time.sleep(0.05)
        time.sleep(0.5)  # the workers are simulating
        process.send_signal(signal.SIGKILL)  # the driver alone, as the OOM killer would
        process.wait()
        deadline = time.monotonic() + 5
        while _session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session(process.pid) == [], "processes of the sweep outlived it"
    finally:
        for pid in _session(process.pid):
            os.kill(pid, signal.SIGKILL)


def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "out" / "summary.json"
    with pytest.raises(OSError) as caught:
        results.write_json_atomic(target, {"a": 1})
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(target)
    assert not list(target.parent.iterdir())  # no temporary left behind


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, TINY)
    out = tmp_path / "out"

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = sweep(path, out)
    assert result.exit_code == 2 and "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]  # under the progress bar
    assert last.startswith(f"error: {out / 'sweep.json'}: ") and "No space left" in last, last


def test_the_api_locks_the_output_directory_too(tmp_path):
    sweep_ = load_sweep(write(tmp_path, TINY))
    out = tmp_path / "out"
    with results.output_lock(out):  # this process may nest ...
        assert runner.run_sweep(sweep_, out, jobs=1).executed == 2
    code = f"from cellcc import results\nwith results.output_lock({str(out)!r}): print('held')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "held\n", done.stderr  # ... and release
