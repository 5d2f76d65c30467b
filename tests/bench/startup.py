"""Benchmark of the command line's start-up: whole-process CPU time of ``cellcc``.

Run by ``make bench-startup``. Two commands are measured, each in a fresh process, as
the CPU time (user + system) the process uses from start to exit, including the
processes it waits for (git):

1. ``cellcc --version``;
2. ``cellcc run`` of a 10 s scenario (``--duration``) on the path of
   examples/tmobile-lte-c2tcp-setup.toml: TMobile-LTE-short in both directions, 10 ms
   each way, 100-packet drop-tail queues, one CUBIC flow, with the traces from
   ``--traces`` (default: the shared traces beside the checkout). Its results go to a
   temporary directory.

``--baseline CMD`` (repeatable) measures other ``cellcc`` commands side by side, e.g.
one installed from an older revision in its own virtual environment
(``--baseline ../old/.venv/bin/cellcc``). Each repetition runs every command, in an
order rotated by one each time (A B, B A, ...), after one warm-up run each. A command
is a command line, split as a shell would, so it may set the environment:
``--cellcc "env PYTHONPATH=python .venv/bin/python -m cellcc"``. Reported: the median
over ``--runs`` repetitions with the minimum and maximum, and each baseline's median
relative to ``--cellcc``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
DEFAULT_TRACES = HERE.parents[3] / "shared" / "traces" / "mahimahi"

#: The scenario of the run measured (that of examples/tmobile-lte-c2tcp-setup.toml).
#: The duration is written into the file rather than given as ``--duration``, which
#: older versions of ``cellcc run`` do not have.
SCENARIO = """\
name = "bench-startup"
duration_s = {duration}
seed = 1

[downlink]
trace = {down}
delay_ms = 10.0
queue = {{ kind = "droptail", packets = 100 }}

[uplink]
trace = {up}
delay_ms = 10.0
queue = {{ kind = "droptail", packets = 100 }}

[[flows]]
scheme = "cubic"
params = {{ hystart = true }}
"""


def default_cellcc() -> list[str]:
    """The ``cellcc`` of this interpreter's environment."""
    script = Path(sys.executable).with_name("cellcc")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cellcc"]


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU time of running ``argv`` to completion (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"error: {shlex.join(argv)} exited with {done.returncode}:\n"
            f"{done.stderr.decode(errors='replace')}"
        )
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": [round(v, 4) for v in values],
    }


def measure(commands: dict[str, list[str]], scenario: Path, work: Path, runs: int) -> dict:
    """CPU seconds of each test of each command: ``{test: {command: [seconds, ...]}}``.

    Repetition i runs every command, in an order rotated by i, after one warm-up."""
    tests = {
        "version": lambda cmd, out: [*cmd, "--version"],
        "run": lambda cmd, out: [*cmd, "run", str(scenario), "--out", str(out)],
    }
    times: dict[str, dict[str, list[float]]] = {t: {n: [] for n in commands} for t in tests}
    names = list(commands)
    for repetition in range(-1, runs):  # -1: the warm-up, not counted
        shift = max(repetition, 0) % len(names)
        for name in names[shift:] + names[:shift]:
            out = work / "out"
            for test, argv in tests.items():
                seconds = cpu_seconds(argv(commands[name], out))
                if repetition >= 0:
                    times[test][name].append(seconds)
            shutil.rmtree(out, ignore_errors=True)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cellcc", help="the cellcc command to measure [default: this environment's]"
    )
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        help="another cellcc command, measured alternately (repeatable)",
    )
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--duration", type=float, default=10.0, help="simulated seconds")
    parser.add_argument("--runs", type=int, default=10, help="repetitions of each measurement")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    down, up = args.traces / "TMobile-LTE-short.down", args.traces / "TMobile-LTE-short.up"
    if not (down.is_file() and up.is_file()):
        print(
            f"error: TMobile-LTE-short.down/.up not found in {args.traces} (--traces)",
            file=sys.stderr,
        )
        return 2
    commands = {"cellcc": shlex.split(args.cellcc) if args.cellcc else default_cellcc()}
    for i, baseline in enumerate(args.baseline):
        commands[f"baseline{i + 1}" if len(args.baseline) > 1 else "baseline"] = shlex.split(
            baseline
        )
    work = Path(tempfile.mkdtemp(prefix="cellcc-bench-startup-"))
    try:
        scenario = work / "scenario.toml"
        text = SCENARIO.format(
            duration=float(args.duration),
            down=json.dumps(os.fspath(down.resolve())),
            up=json.dumps(os.fspath(up.resolve())),
        )
        scenario.write_text(text, encoding="utf-8")
        times = measure(commands, scenario, work, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures: dict[str, Any] = {
        "runs": args.runs,
        "duration_s": args.duration,
        "commands": {name: shlex.join(cmd) for name, cmd in commands.items()},
        "cpu_s": {
            test: {name: summary(values) for name, values in by_name.items()}
            for test, by_name in times.items()
        },
    }
    labels = {"version": "cellcc --version", "run": f"cellcc run ({args.duration:g} s)"}
    for test, by_name in figures["cpu_s"].items():
        for name, s in by_name.items():
            line = (
                f"{labels[test]:<20} {name:<10} CPU s: median {s['median']:.3f} "
                f"(min {s['min']:.3f}, max {s['max']:.3f}; {args.runs} runs)"
            )
            if name != "cellcc":
                line += f", {s['median'] / by_name['cellcc']['median']:.2f}x cellcc's"
            print(line)
    for name, cmd in figures["commands"].items():
        print(f"{name}: {cmd}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
