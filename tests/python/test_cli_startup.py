"""Start-up cost of the command line: heavy libraries load only in commands that use them.

Each check runs a fresh interpreter, since this test process has imported everything.
"""

import json
import subprocess
import sys

import pytest

from cellcc import api, synthetic

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
