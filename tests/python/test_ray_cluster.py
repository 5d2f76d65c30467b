"""Sweeps on a Ray cluster of several nodes, with the trace files shipped to the nodes
through the object store (cellcc.trace_shipping) rather than read at the driver's paths."""

import hashlib
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cellcc import runner, synthetic, trace_shipping
from cellcc.sweep import load_sweep

#: Eight runs on trace files (two presets, so two traces are shipped per run).
TRACED = """
name = "traced"
seeds = [1, 2]
schemes = ["cubic", "bbr"]

[base]
duration_s = 2.0
downlink = { trace = "traces/lte-stationary.down", delay_ms = 10.0 }
uplink = { trace = "traces/lte-stationary.up", delay_ms = 10.0 }

[grid]
"downlink.queue" = [{ kind = "droptail", packets = 20 }, { kind = "droptail", packets = 80 }]
"""


def traced_sweep(tmp_path):
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=3.0)
    path = tmp_path / "sweep.toml"
    path.write_text(TRACED, encoding="utf-8")
    return load_sweep(path)


def task_of(run, directory):
    return {
        "key": "k",
        "scenario": run.scenario,
        "seed": run.seed,
        "base_dir": os.fspath(directory),
        "code": {},
    }


def without_times(record):
    return {k: v for k, v in record.items() if k not in ("wall_s", "meta")} | {
        "meta": {k: v for k, v in record["meta"].items() if k != "wall_s"}
    }


@pytest.mark.usefixtures("native")
def test_a_run_with_shipped_traces_needs_no_original_file(tmp_path, monkeypatch):
    sweep = traced_sweep(tmp_path / "driver")
    monkeypatch.chdir(tmp_path / "driver")
    task = task_of(sweep.runs[0], tmp_path / "driver")
    expected = runner.execute(task)

    shipped = runner._ship([task])
    traces = tmp_path / "driver" / "traces"
    assert sorted(task["shipped"]) == [
        os.fspath(traces / "lte-stationary.down"),
        os.fspath(traces / "lte-stationary.up"),
    ]
    blobs = {digest: path.read_bytes() for digest, path in shipped.items()}
    for digest, data in blobs.items():
        assert hashlib.sha256(data).hexdigest() == digest
    shutil.rmtree(traces)  # the node sees none of the driver's files
    cache = tmp_path / "node-cache"
    cache.mkdir()
    monkeypatch.setattr(trace_shipping, "node_cache", lambda: cache)
    fetched = []

    def fetch(digest):
        fetched.append(digest)
        return blobs[digest]

    record = runner.execute(task, fetch)
    assert without_times(record) == without_times(expected)  # scenario text included
    copies = sorted(p.relative_to(cache).parts for p in cache.glob("*/*"))
    assert copies == sorted((d, Path(v).name) for v, d in task["shipped"].items())
    runner.execute(task, fetch)  # a second run on the node uses its copies
    assert sorted(fetched) == sorted(blobs)


def test_a_shipped_trace_whose_bytes_do_not_match_is_refused(tmp_path):
    scenario = {"downlink": {"trace": "a.down"}}
    digest = hashlib.sha256(b"1\n").hexdigest()
    with pytest.raises(ValueError, match=r"a\.down: its bytes do not match"):
        trace_shipping.localise(scenario, {"a.down": digest}, lambda d: b"2\n", tmp_path)
    assert list(tmp_path.rglob("*")) == []  # nothing half-written is left
    localised = trace_shipping.localise(scenario, {"a.down": digest}, lambda d: b"1\n", tmp_path)
    assert localised == {"downlink": {"trace": os.fspath(tmp_path / digest / "a.down")}}


def test_shipping_traces_is_refused_without_ray(tmp_path):
    sweep = traced_sweep(tmp_path)
    with pytest.raises(runner.UsageError, match="--ship-traces"):
        runner.run_sweep(sweep, tmp_path / "out", ship_traces=True)


@pytest.mark.slow
@pytest.mark.usefixtures("native")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_sweep_on_a_three_node_cluster_equals_the_local_one(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    import ray
    from ray.cluster_utils import Cluster

    sweep = traced_sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    local = runner.run_sweep(sweep, tmp_path / "local", jobs=2)
    # Three nodes of one CPU each (a head and two workers, all on this machine), small
    # object stores.
    node = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
    cluster = Cluster(initialize_head=True, head_node_args=node)
    try:
        for _ in range(2):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        distributed = runner.run_sweep(
            sweep, tmp_path / "ray", executor="ray", address=cluster.address, ship_traces=True
        )
        assert not ray.is_initialized()  # the driver's connection is closed after the sweep
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert distributed.executed == 8
    assert distributed.nodes >= 2, "the runs did not spread over the cluster's nodes"
    pd.testing.assert_frame_equal(local.results, distributed.results)
    for name in ("results.parquet", "phases.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "local" / name), pd.read_parquet(tmp_path / "ray" / name)
        )


@pytest.mark.parametrize("command", ["sweep", "reproduce"])
def test_the_cli_refuses_ship_traces_without_ray(command, tmp_path):
    from typer.testing import CliRunner

    from cellcc.cli import app
    from helpers import assert_one_line_error

    target = [os.fspath(tmp_path / "sweep.toml")] if command == "sweep" else ["--all"]
    result = CliRunner().invoke(app, [command, *target, "--ship-traces"])
    assert_one_line_error(result, "--ship-traces", "--executor ray")
