import math
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
