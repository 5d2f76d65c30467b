import math
import os
import tomllib
from pathlib import Path

import numpy as np
import pytest

from cellcc import _toml


def test_scenario_round_trips_through_tomllib():
    scenario = {
        "name": 'cubic vs "bbr" on\tlte',
        "duration_s": 30.0,
        "seed": 7,
        "downlink": {
            "trace": Path("traces/lte.down"),
            "delay_ms": 10,
            "queue": {"kind": "droptail", "packets": 100},
            "loss": 1e-05,
        },
        "uplink": {"rate_mbps": 100.0},
        "flows": [
            {"scheme": "cubic", "params": {"hystart": True}, "app": "bulk"},
            {"scheme": "bbr", "start_s": 5.0, "app": {"bytes": 10_000_000}},
        ],
        "metrics": {"bin_ms": 500.0, "packet_log": False},
    }
    text = _toml.dumps(scenario)
    parsed = tomllib.loads(text)
    assert parsed["name"] == scenario["name"]
    assert parsed["downlink"]["trace"] == "traces/lte.down"
    assert parsed["downlink"]["queue"] == {"kind": "droptail", "packets": 100}
    assert parsed["downlink"]["loss"] == 1e-05
    assert parsed["flows"][1]["app"] == {"bytes": 10_000_000}
    assert parsed["flows"][0]["params"] == {"hystart": True}
    assert isinstance(parsed["duration_s"], float)
    assert isinstance(parsed["seed"], int)
    assert "[[flows]]" in text and "[downlink]" in text


def test_numpy_scalars_and_odd_keys():
    text = _toml.dumps({"a b": np.float64(2.0), "n": np.int64(3), "t": np.bool_(True), "l": [1, 2]})
    assert tomllib.loads(text) == {"a b": 2.0, "n": 3, "t": True, "l": [1, 2]}


def test_infinity_is_written_and_nan_is_rejected_with_its_key():
    assert math.isinf(tomllib.loads(_toml.dumps({"x": float("inf")}))["x"])
    with pytest.raises(_toml.TomlTypeError, match=r"downlink\.loss"):
        _toml.dumps({"downlink": {"loss": float("nan")}})


def test_unsupported_value_names_its_key_path():
    with pytest.raises(_toml.TomlTypeError, match=r"flows\[0\]\.params\.x"):
        _toml.dumps({"flows": [{"params": {"x": object()}}]})


def test_none_values_are_left_out():
    text = _toml.dumps({"seed": None, "downlink": {"rate_mbps": 1.0, "loss": None}})
    assert tomllib.loads(text) == {"downlink": {"rate_mbps": 1.0}}


def test_scenario_and_sweep_files_fail_to_read_with_one_error_naming_them(tmp_path):
    from cellcc import ScenarioError
    from cellcc.sweep import load_sweep

    (tmp_path / "latin1.toml").write_bytes("name = 'caf\xe9'".encode("latin-1"))
    too_long = tmp_path / ("x" * 300 + ".toml")  # ENAMETOOLONG: an OSError of its own
    cases = [
        (tmp_path / "missing.toml", "no such sweep file"),
        (tmp_path, "is a directory, expected a sweep TOML file"),
        (tmp_path / "latin1.toml", "not a UTF-8 text file"),
        (too_long, "cannot read: File name too long"),
    ]
    for path, message in cases:
        with pytest.raises(ScenarioError, match=message) as error:
            load_sweep(path)
        assert str(error.value).startswith(str(path))
    with pytest.raises(ScenarioError, match="cannot read: File name too long"):
        _toml.read_text(too_long, "scenario")


def test_only_a_regular_file_of_at_most_4_mib_is_read(tmp_path):
    """A FIFO or /dev/zero named as a scenario would block or never end; a huge file
    would be read whole into memory. Each is refused before reading, naming the file."""
    import cellcc
    from cellcc import ScenarioError

    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_text("#" * (_toml.MAX_TEXT_BYTES + 1))
    cases = [
        (fifo, "not a regular file, expected a scenario TOML file"),
        (Path("/dev/zero"), "not a regular file"),
        (big, f"the scenario file is {_toml.MAX_TEXT_BYTES + 1} bytes, above the limit"),
    ]
    for path, message in cases:
        with pytest.raises(ScenarioError, match=message) as error:
            cellcc.simulate(path)
        assert str(error.value).startswith(str(path))
    big.write_text('duration_s = 1\n[downlink]\nrate_mbps = 12\n[[flows]]\nscheme = "cubic"\n')
    with big.open("a") as file:
        file.write("#" * (_toml.MAX_TEXT_BYTES - big.stat().st_size))
    assert not cellcc.simulate(big).summary.empty  # exactly at the limit: read and run


def test_the_native_core_bounds_scenario_text_at_the_same_size():
    import cellcc
    from cellcc import ScenarioError

    scenario = {"duration_s": 1, "downlink": {"trace": ""}, "flows": [{"scheme": "cubic"}]}
    scenario["downlink"]["trace"] = "x" * (_toml.MAX_TEXT_BYTES + 1 - len(_toml.dumps(scenario)))
    assert len(_toml.dumps(scenario)) == _toml.MAX_TEXT_BYTES + 1
    with pytest.raises(ScenarioError, match=r"^<dict>: file: the scenario text is 4194305 bytes"):
        cellcc.simulate(scenario)


def test_an_error_quoting_control_characters_is_one_line():
    import cellcc
    from cellcc import ScenarioError

    scenario = {
        "duration_s": 1,
        "downlink": {"trace": "t.down", "mode": "x\ny\x05"},
        "flows": [{"scheme": "cubic"}],
    }
    with pytest.raises(ScenarioError) as error:
        cellcc.simulate(scenario)
    assert str(error.value) == (
        "<dict>: downlink.mode: unknown variant `x\\ny\\u{5}`, expected `loop` or `once` (line 5)"
    )
