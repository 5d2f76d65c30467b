"""Benchmark of congestion controls written in Python and of the Gymnasium environment.

Run by ``make bench-python``. Every figure is CPU time (``time.process_time``, plus the
children's for the vector environment), measured side by side in one run: the
alternatives alternate within each repetition (A, B, A, B, ...) and the median over
repetitions is reported with the spread. Path: TMobile-LTE-short (both directions, 10 ms
each way, 100-packet drop-tail queues), from ``--traces`` (default: the shared traces
beside the checkout).

1. CPU per ACK: built-in ``newreno`` against ``cellcc.pycc.reference:NewReno``.
2. Per-interval Python control: simulated seconds per CPU second of
   ``cellcc.pycc.reference:Aimd`` (20 ms interval), against the built-in ``cubic``.
3. Environment: steps per CPU second of one ``CellccEnv`` (20 ms interval, constant
   action in Orca's mode, i.e. CUBIC's window), CPU per simulated packet (data packets
   delivered or retransmitted) including the step overhead; and an ``AsyncVectorEnv`` of 2.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import cellcc
from cellcc.gym import CellccEnv

HERE = Path(__file__).resolve()
DEFAULT_TRACES = HERE.parents[3] / "shared" / "traces" / "mahimahi"


def scenario(traces: Path, scheme: str, duration_s: float, ack_log: bool = False) -> dict:
    queue = {"kind": "droptail", "packets": 100}
    return {
        "name": "bench-python",
        "duration_s": duration_s,
        "seed": 1,
        "downlink": {
            "trace": str(traces / "TMobile-LTE-short.down"),
            "delay_ms": 10.0,
            "queue": queue,
        },
        "uplink": {"trace": str(traces / "TMobile-LTE-short.up"), "delay_ms": 10.0, "queue": queue},
        "flows": [{"scheme": scheme}],
        "metrics": {"ack_log": ack_log},
    }


def cpu(fn) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.4g} (min {min(values):.4g}, max {max(values):.4g})"


def per_ack(traces: Path, duration_s: float, runs: int) -> dict:
    acks = len(cellcc.simulate(scenario(traces, "newreno", duration_s, ack_log=True)).acks)
    python_acks = len(
        cellcc.simulate(
            scenario(traces, "cellcc.pycc.reference:NewReno", duration_s, ack_log=True)
        ).acks
    )
    assert acks == python_acks, "bit-identical runs process the same ACKs"
    rust, python = [], []
    for _ in range(runs):
        rust.append(cpu(lambda: cellcc.simulate(scenario(traces, "newreno", duration_s))))
        python.append(
            cpu(
                lambda: cellcc.simulate(
                    scenario(traces, "cellcc.pycc.reference:NewReno", duration_s)
                )
            )
        )
    r = [c / acks * 1e6 for c in rust]
    p = [c / acks * 1e6 for c in python]
    return {
        "acks": acks,
        "rust_us_per_ack": statistics.median(r),
        "python_us_per_ack": statistics.median(p),
        "python_extra_us_per_ack": statistics.median(p) - statistics.median(r),
        "ratio": statistics.median(p) / statistics.median(r),
        "text": f"rust {spread(r)} µs/ACK; python {spread(p)} µs/ACK",
    }


def per_interval(traces: Path, duration_s: float, runs: int) -> dict:
    builtin, python = [], []
    for _ in range(runs):
        builtin.append(cpu(lambda: cellcc.simulate(scenario(traces, "cubic", duration_s))))
        python.append(
            cpu(lambda: cellcc.simulate(scenario(traces, "cellcc.pycc.reference:Aimd", duration_s)))
        )
    b = [duration_s / c for c in builtin]
    p = [duration_s / c for c in python]
    return {
        "cubic_x_real_time": statistics.median(b),
        "python_interval_x_real_time": statistics.median(p),
        "text": f"cubic {spread(b)}× real time; python per-interval {spread(p)}× real time",
    }


def episode(env: CellccEnv, seed: int) -> tuple[int, int]:
    env.reset(seed=seed)
    steps = 0
    action = np.zeros(1, dtype=np.float32)
    while True:
        _, _, terminated, truncated, _ = env.step(action)
        steps += 1
        if terminated or truncated:
            break
    flows = env.result().summary.query("flow >= 0")
    packets = int(flows["app_bytes"].sum() // 1448 + flows["retransmits"].sum())
    return steps, packets


def environment(traces: Path, duration_s: float, runs: int) -> dict:
    import gymnasium

    sc = scenario(traces, "cubic", duration_s)
    # Orca's mode with a = 0: CUBIC's own window, so the flow fills the link as a
    # trained agent would (a window held at 10 packets would send 3 packets per step).
    env = CellccEnv(sc, action="orca")
    steps_per_cpu, us_per_packet = [], []
    steps = packets = 0
    for seed in range(runs):
        started = time.process_time()
        steps, packets = episode(env, seed)
        used = time.process_time() - started
        steps_per_cpu.append(steps / used)
        us_per_packet.append(used / packets * 1e6)
    fns = [lambda: CellccEnv(sc, action="orca") for _ in range(2)]
    vector = gymnasium.vector.AsyncVectorEnv(fns, context="spawn")
    vector.reset(seed=0)  # workers started and imported outside the measurement
    before_self = time.process_time()
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic()
    actions = np.zeros((2, 1), dtype=np.float32)
    vector_steps = 0
    for _ in range(steps * runs):
        vector.step(actions)
        vector_steps += 2
    wall = time.monotonic() - wall
    own = time.process_time() - before_self
    vector.close()
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (after_children.ru_utime + after_children.ru_stime) - (
        before_children.ru_utime + before_children.ru_stime
    )
    return {
        "steps_per_episode": steps,
        "packets_per_episode": packets,
        "steps_per_cpu_s": statistics.median(steps_per_cpu),
        "cpu_us_per_packet": statistics.median(us_per_packet),
        "async2_steps": vector_steps,
        "async2_steps_per_wall_s": vector_steps / wall,
        "async2_steps_per_cpu_s": vector_steps / (own + children),
        "text": (
            f"one env: {spread(steps_per_cpu)} steps/CPU-s, {spread(us_per_packet)} µs "
            f"CPU per packet; AsyncVectorEnv(2): {vector_steps / wall:.0f} steps/wall-s, "
            f"{vector_steps / (own + children):.0f} steps/CPU-s (driver + workers)"
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds per run")
    parser.add_argument("--runs", type=int, default=5, help="repetitions of each measurement")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not (args.traces / "TMobile-LTE-short.down").is_file():
        print(
            f"error: TMobile-LTE-short.down not found in {args.traces} (--traces)", file=sys.stderr
        )
        return 2
    figures = {
        "per_ack": per_ack(args.traces, args.duration, args.runs),
        "per_interval": per_interval(args.traces, args.duration, args.runs),
        "environment": environment(args.traces, args.duration, args.runs),
        "runs": args.runs,
        "duration_s": args.duration,
    }
    for name in ("per_ack", "per_interval", "environment"):
        print(f"{name}: {figures[name]['text']}")
    print(
        json.dumps(
            {
                k: {kk: vv for kk, vv in v.items() if kk != "text"} if isinstance(v, dict) else v
                for k, v in figures.items()
            },
            indent=1,
        )
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
