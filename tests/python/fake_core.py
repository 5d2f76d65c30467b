"""A stand-in for ``cellcc._core`` that returns data of the documented shape quickly.

It lets the Python layer (API wrapping, saving, CLI, plots, reports) be tested without
running the simulator; tests that need real numbers use the compiled core instead (see
``conftest.py``). Numbers are made up but deterministic for a given seed and scheme.
"""

from __future__ import annotations

import json
import math
import struct
import tomllib
import zlib
from pathlib import Path
from typing import Any

from cellcc import _native

SCHEMES = [
    "newreno",
    "cubic",
    "bbr",
    "c2tcp",
    "c2tcp-ifip",
    "proprate",
    "proprate-l",
    "proprate-m",
    "proprate-h",
    "cesar",
    "vegas",
    "westwood",
    "illinois",
    "cdg",
    "sprout",
    "verus",
    "copa",
    "ledbat",
    "ledbat++",
    "pcc-vivace",
    "fixed",
]


class FakeCore:
    __version__ = "0.0.0-fake"
    CellccError = _native.CellccError
    ScenarioError = _native.ScenarioError
    TraceError = _native.TraceError

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def schemes(self) -> list[str]:
        return list(SCHEMES)

    def scheme_info(self) -> str:
        return json.dumps(
            [
                {
                    "name": name,
                    "description": f"{name} (fake)",
                    "source": "fake",
                    "doc": f"docs/algorithms/{name}.md",
                    "params": [],
                }
                for name in SCHEMES
            ]
        )

    def _check(self, text: str, base_dir: str | None, source_name: str) -> dict[str, Any]:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise _native.ScenarioError(f"{source_name}: {exc}") from None
        if "duration_s" not in doc:
            raise _native.ScenarioError(f"{source_name}: duration_s: missing required key")
        for i, flow in enumerate(doc.get("flows", [])):
            if flow.get("scheme") not in SCHEMES:
                raise _native.ScenarioError(
                    f"{source_name}: flows[{i}].scheme: unknown scheme "
                    f'"{flow.get("scheme")}"; expected one of: {", ".join(SCHEMES)}'
                )
        for direction in ("downlink", "uplink"):
            trace = doc.get(direction, {}).get("trace")
            if trace is not None:
                path = Path(base_dir or ".") / trace
                if not path.is_file():
                    raise _native.ScenarioError(
                        f"{source_name}: {direction}.trace: cannot open {path}"
                    )
        return doc

    def validate_scenario(self, scenario: str, *, base_dir=None, source_name="<scenario>"):
        self._check(scenario, base_dir, source_name)

    def simulate(
        self, scenario: str, *, base_dir=None, source_name="<scenario>", seed=None, progress=None
    ):
        doc = self._check(scenario, base_dir, source_name)
        if progress is not None:
            progress(1.0)
        self.calls.append({"base_dir": base_dir, "source_name": source_name, "seed": seed})
        seed = doc.get("seed", 1) if seed is None else seed
        duration = float(doc["duration_s"])
        bin_s = float(doc.get("metrics", {}).get("bin_ms", 500.0)) / 1000.0
        summary, columns = (
            [],
            {
                k: []
                for k in ("flow", "t_s", "throughput_mbps", "qdelay_ms", "cwnd", "capacity_mbps")
            },
        )
        n_bins = math.ceil(duration / bin_s)
        for flow, spec in enumerate(doc.get("flows", [])):
            h = zlib.crc32(f"{spec['scheme']}:{seed}".encode()) / 2**32
            tput = 4.0 + 6.0 * h
            summary.append(
                {
                    "flow": flow,
                    "scheme": spec["scheme"],
                    "throughput_mbps": tput,
                    "owd_mean_ms": 40.0 + 100 * h,
                    "owd_p95_ms": 60.0 + 200 * h,
                    "qdelay_mean_ms": 20.0 + 100 * h,
                    "qdelay_p95_ms": 40.0 + 200 * h,
                    "rtt_mean_ms": 60.0 + 100 * h,
                    "pantheon_loss_rate": 0.01 * h,
                    "utilisation": 0.9,
                    "retransmits": int(100 * h),
                    "completion_s": None,
                }
            )
            for k in range(n_bins):
                columns["flow"].append(flow)
                columns["t_s"].append(k * bin_s)
                columns["throughput_mbps"].append(tput * (1 + 0.3 * math.sin(k / 3)))
                columns["qdelay_ms"].append(30 + 20 * math.cos(k / 4))
                columns["cwnd"].append(10.0 + k % 40)
                columns["capacity_mbps"].append(None)
        for k in range(n_bins):
            columns["flow"].append(-1)
            columns["t_s"].append(k * bin_s)
            columns["throughput_mbps"].append(None)
            columns["qdelay_ms"].append(None)
            columns["cwnd"].append(None)
            columns["capacity_mbps"].append(12.0 + 4 * math.sin(k / 5))
        aggregate = dict(summary[0]) if summary else {"scheme": "all"}
        aggregate["flow"] = -1
        summary.append(aggregate)
        return {
            "summary": summary,
            "timeseries": columns,
            "link": {"capacity_mbps": 12.0, "utilisation": 0.9},
            "meta": {
                "name": doc.get("name", "fake"),
                "seed": seed,
                "duration_s": duration,
                "events": 1234,
                "wall_s": 0.01,
                "version": self.__version__,
            },
            "packet_log": "# fake log\n" if doc.get("metrics", {}).get("packet_log") else None,
        }

    def trace_info(self, path: str) -> dict[str, Any]:
        if not Path(path).is_file():
            raise FileNotFoundError(2, "No such file or directory", path)
        return {
            "duration": 60_000_000_000,
            "opportunities": 1000,
            "first_ts": 1_000_000,
            "mean_mbps": 12.5,
            "capacity_p5_mbps": 3.0,
            "capacity_p50_mbps": 12.0,
            "capacity_p95_mbps": 20.0,
            "max_gap": 450_000_000,
            "longest_outage": 450_000_000,
        }

    def trace_timestamps(self, path: str) -> bytes:
        if not Path(path).is_file():
            raise FileNotFoundError(2, "No such file or directory", path)
        stamps = [int(line) for line in Path(path).read_text().split()]
        if not stamps or stamps[-1] == 0 or stamps != sorted(stamps):
            raise _native.TraceError(f"{path}: not a valid trace (fake core)")
        return struct.pack(f"<{len(stamps)}I", *stamps)

    def synth_trace(self, config_json: str, seed: int) -> bytes:
        """One line per millisecond for the configuration's duration (default 60 s)."""
        config = json.loads(config_json)
        self.calls.append({"synth": config, "seed": seed})
        if config.get("model") not in ("mobility", "steps", "constant"):
            raise ValueError(f"unknown variant `{config.get('model')}`")
        duration_ms = round(float(config.get("duration_s", 60.0)) * 1000)
        if duration_ms < 1:
            raise ValueError(f"duration_s: expected 0.001..=3600 s, got {config['duration_s']}")
        return struct.pack(f"<{duration_ms}I", *range(1, duration_ms + 1))
