"""Start-up cost of the command line: heavy libraries load only in commands that use them.

Each check runs a fresh interpreter, since this test process has imported everything.
"""

import json
import subprocess
import sys

import pytest

from cellcc import api, synthetic
from helpers import assert_same_arrow_values

#: Libraries that only commands working on data may load.
HEAVY = ("pandas", "pyarrow", "matplotlib", "numpy")

#: Prints, as JSON, the top-level packages that running the CLI with argv[1:] loads
#: after `import cellcc` (the package itself is not the CLI's to slim down).
PROBE = """
import json, sys
import cellcc
before = set(sys.modules)
from cellcc.cli import app
try:
    app(sys.argv[1:], prog_name="cellcc")
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in set(sys.modules) - before})))
"""


def heavy_imports(*args, cwd=None):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    last = done.stdout.strip().splitlines()[-1]
    return json.loads(last)


def test_version_loads_no_data_library_and_no_rich():
    loaded = heavy_imports("--version")
    assert not set(loaded) & {*HEAVY, "rich"}, loaded


@pytest.mark.parametrize("args", [["--help"], ["traces", "synth", "--help"]])
def test_help_loads_no_data_library(args):
    loaded = heavy_imports(*args)  # typer draws help with rich: that one is expected
    assert not set(loaded) & set(HEAVY), loaded


@pytest.mark.usefixtures("native")
def test_run_loads_matplotlib_only_for_an_ack_plot(tmp_path):
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=2.0)
    scenario = {
        "name": "startup",
        "duration_s": 1.0,
        "downlink": {"trace": "traces/lte-stationary.down", "delay_ms": 10.0},
        "uplink": {"rate_mbps": 100.0},
        "flows": [{"scheme": "cubic"}],
    }
    (tmp_path / "s.toml").write_text(api.scenario_text(scenario))
    loaded = heavy_imports("run", "s.toml", "--out", "res", cwd=tmp_path)
    assert (tmp_path / "res" / "summary.parquet").is_file()
    assert "matplotlib" not in loaded, loaded


#: Runs the CLI with argv[1:] in this process, then prints its exit code and every
#: top-level package loaded.
RUN_PROBE = """
import json, sys
from cellcc.cli import app
code = 0
try:
    app(sys.argv[1:], prog_name="cellcc")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""

VOLATILE = ("created_utc", "command", "git_revision")


def _stable(record):
    """A provenance record without what differs between two runs of the same scenario."""
    record = {k: v for k, v in record.items() if k not in VOLATILE}
    record["meta"] = {k: v for k, v in record.get("meta", {}).items() if k != "wall_s"}
    return record


def assert_same_results(cli, api_dir):
    """The files of `cellcc run` and of the API agree: CSV and downlink.log byte for
    byte, JSON apart from run times and command lines, Parquet in values and provenance
    (and read back by pandas alike)."""
    import pandas as pd
    import pyarrow.parquet as pq

    names = sorted(p.name for p in cli.iterdir())
    assert names == sorted(p.name for p in api_dir.iterdir())
    for name in names:
        a, b = cli / name, api_dir / name
        if name == "provenance.json":
            assert _stable(json.loads(a.read_text())) == _stable(json.loads(b.read_text()))
        elif name == "summary.json":
            strip = [line for line in a.read_text().splitlines() if '"wall_s"' not in line]
            assert strip == [line for line in b.read_text().splitlines() if '"wall_s"' not in line]
        elif name.endswith(".parquet"):
            ta, tb = pq.read_table(a), pq.read_table(b)
            assert_same_arrow_values(ta, tb)
            ma, mb = ta.schema.metadata, tb.schema.metadata
            assert list(ma) == [b"cellcc.provenance"], name  # encoded by the core
            assert list(mb) == [b"pandas", b"cellcc.provenance"], name  # by pyarrow
            provenance = [json.loads(m[b"cellcc.provenance"]) for m in (ma, mb)]
            assert _stable(provenance[0]) == _stable(provenance[1]), name
            pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
        else:
            assert a.read_bytes() == b.read_bytes(), name


@pytest.mark.usefixtures("native")
def test_run_loads_no_pandas_and_writes_what_the_api_writes(tmp_path, monkeypatch):
    """`cellcc run` writes its results without pandas, pyarrow or NumPy (nor matplotlib,
    without an ACK plot), and they are those the API writes from its DataFrames."""
    synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=4.0)
    scenario = {
        "name": 'no pandas, "quoted"',
        "duration_s": 3.0,
        "downlink": {
            "trace": "traces/lte-stationary.down",
            "delay_ms": 10.0,
            "queue": {"kind": "droptail", "packets": 60},
        },
        "uplink": {"trace": "traces/lte-stationary.up", "delay_ms": 10.0},
        "flows": [
            {"scheme": "cubic"},
            {"scheme": "bbr", "app": {"bytes": 300_000}, "start_s": 0.5},
            {"scheme": "vegas", "direction": "up"},
        ],
        "background": [
            {
                "source": {
                    "kind": "short_flows",
                    "rate_per_s": 4.0,
                    "size": {"kind": "exponential", "mean": 20_000},
                    "stop_s": 2.0,
                }
            }
        ],
        "metrics": {"bin_ms": 100.0, "packet_log": True},
    }
    path = tmp_path / "s.toml"
    path.write_text(api.scenario_text(scenario))
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROBE, "run", "s.toml", "--out", "cli"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["code"] == 0, done.stderr
    assert not set(HEAVY) & set(probe["loaded"]), probe["loaded"]
    assert "all" in done.stdout  # the summary table

    monkeypatch.chdir(tmp_path)
    result = api.simulate("s.toml")
    for table in ("summary", "timeseries", "short_flows", "cc_info", "acks"):
        getattr(result, table)  # read as DataFrames: saved through pandas
    assert result.short_flows is not None
    assert result.summary["completion_s"].notna().any()
    assert set(result.summary["flow_direction"]) == {"down", "up"}
    result.save(tmp_path / "api")
    assert_same_results(tmp_path / "cli", tmp_path / "api")


#: Runs the CLI with argv[2:]; with argv[1] == "whole", typer builds every command.
ONLY_PROBE = """
import sys
from cellcc.cli import _common, app
if sys.argv[1] == "whole":
    _common.OneLineUsageErrors.only = lambda self, name: self
app(sys.argv[2:], prog_name="cellcc")
"""


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--help"],
        ["run"],
        ["run", "--bogus"],
        ["traces", "--help"],
        ["traces", "synth", "--help"],
        ["traces", "nope"],
        ["rn", "x"],
        ["--help"],
    ],
)
def test_building_only_the_invoked_command_changes_no_output(args):
    """The app builds only the command or group named first (typer would build all of
    them on every call); help, usage errors and exit codes are the whole app's."""
    outputs = [
        subprocess.run(
            [sys.executable, "-c", ONLY_PROBE, which, *args],
            capture_output=True,
            text=True,
            check=False,
        )
        for which in ("whole", "only")
    ]
    whole, only = ((o.returncode, o.stdout, o.stderr) for o in outputs)
    assert only == whole
    assert whole[1] or whole[2]


def test_only_keeps_the_named_command_or_group():
    from cellcc.cli import app

    assert [c.name for c in app.only("run").registered_commands] == ["run"]
    assert app.only("run").registered_groups == []
    assert [g.name for g in app.only("traces").registered_groups] == ["traces"]
    assert app.only("nope") is app
    assert len(app.registered_commands) > 1  # the app itself is unchanged
