"""Benchmark of the real-time emulator at high rates: timing, goodput and CPU per packet.

Run by ``make bench-emu`` (root only: TUN devices and network namespaces). Each run is
one kernel CUBIC transfer (``cellcc-flow send``/``recv``, ``--duration`` seconds, 20 by
default: at 1 Gbit/s and 41 ms RTT, CUBIC's start-up, slow start and the recovery from
its overshoot, costs about 4 % of a 10 s transfer's goodput whatever the emulator) from
the server to the client through ``cellcc-emu`` on a constant-rate trace in both
directions: rate R gives round(R / (8 × 1504)) opportunities per second spread evenly
over each second, as the emulator's end-to-end tests build it. 20 ms delay each way; a
drop-tail downlink queue of one bandwidth-delay product (R × 40 ms in 1504-byte
packets), so that CUBIC's back-off after a loss does not leave the link idle. The socket
buffer limits (``net.ipv4.tcp_wmem``/``tcp_rmem`` maximum) are raised to 64 MiB inside
the two namespaces, which the emulator creates for the run; the host's are not touched.

Reported per run: goodput / ideal (ideal = 1448/1504 × trace rate: 1448 payload bytes
per opportunity), the share of packets written within 1 ms of schedule and the 99th
percentile of lateness (``--stats``), the emulator's CPU time (user + system) per packet
it wrote (both directions; every 1500-byte packet the link model carried counts once,
however it was read or written), the share of that CPU in the kernel, and the 1-minute
load average before the run.

``--baseline EMU`` measures a second emulator binary side by side: each repetition runs
both, alternating which goes first (A B, B A, ...), so a change in the machine's load
hits both alike. Reported: per rate and binary, the median over ``--runs`` repetitions
with the minimum and maximum, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Bytes per trace opportunity and TCP payload bytes per full-size packet.
OPPORTUNITY_BYTES = 1504
PAYLOAD_BYTES = 1448
#: One-way delay, ms.
DELAY_MS = 20
#: Socket buffer maximum set in the namespaces (min, default, max), bytes.
TCP_MEM = "4096 131072 67108864"
PORT = 5201


def constant_trace(path: Path, mbps: float) -> int:
    """Writes a constant-rate trace; returns its opportunities per second."""
    n = round(mbps * 1e6 / (8 * OPPORTUNITY_BYTES))
    path.write_text("".join(f"{-(-i * 1000 // n)}\n" for i in range(1, n + 1)))
    return n


def raise_buffers(command: str) -> str:
    """A shell command that raises the namespace's TCP buffer limits, then runs ``command``."""
    return (
        f"echo '{TCP_MEM}' > /proc/sys/net/ipv4/tcp_wmem && "
        f"echo '{TCP_MEM}' > /proc/sys/net/ipv4/tcp_rmem && exec {command}"
    )


def one_run(
    emu: str, flow: str, mbps: float, duration: float, queue: int | None, work: Path
) -> dict[str, Any]:
    """One transfer through ``emu`` (downlink queue of ``queue`` packets, default one
    bandwidth-delay product); its figures."""
    for f in work.iterdir():
        f.unlink()
    trace = work / "c.trace"
    per_s = constant_trace(trace, mbps)
    if queue is None:
        queue = round(per_s * 2 * DELAY_MS / 1000)
    send = raise_buffers(
        f"{shlex.quote(flow)} send --to $CELLCC_EMU_CLIENT_ADDR:{PORT} --cc cubic "
        f"--duration {duration} --summary {work / 'send.json'}"
    )
    recv = raise_buffers(f"{shlex.quote(flow)} recv --port {PORT} --summary {work / 'recv.json'}")
    argv = [
        emu,
        "--delay",
        str(DELAY_MS),
        "--uplink",
        str(trace),
        "--downlink",
        str(trace),
        "--downlink-queue",
        "droptail",
        "--downlink-queue-args",
        f"packets={queue}",
        "--stats",
        str(work / "stats.json"),
        "--server-cmd",
        send,
        "--",
        "sh",
        "-c",
        recv,
    ]
    load = os.getloadavg()[0]
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=duration + 60, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"error: {shlex.join(argv)} exited with {done.returncode}:\n"
            f"{done.stderr.decode(errors='replace')}"
        )
    stats = json.loads((work / "stats.json").read_text())
    goodput = json.loads((work / "recv.json").read_text())["goodput_mbps"]
    ideal = per_s * PAYLOAD_BYTES * 8 / 1e6
    packets = stats["downlink"]["packets_out"] + stats["uplink"]["packets_out"]
    cpu = stats["cpu_user_s"] + stats["cpu_system_s"]
    return {
        "goodput_ratio": goodput / ideal,
        "goodput_mbps": goodput,
        "within_1ms": stats["lateness"]["fraction_within_1ms"],
        "p99_us": stats["lateness"]["p99_us"],
        "cpu_us_per_packet": cpu * 1e6 / max(packets, 1),
        "system_share": stats["cpu_system_s"] / cpu if cpu > 0 else 0.0,
        "cpu_fraction": stats["cpu_fraction"],
        "packets": packets,
        "load1": load,
        "wakeups": stats["wakeups"],
        "io": {d: stats[d].get("io") for d in ("downlink", "uplink")},
    }


#: Figures summarised, with their format.
COLUMNS = {
    "within_1ms": ("within 1 ms", lambda v: f"{v * 100:.2f} %"),
    "goodput_ratio": ("goodput/ideal", lambda v: f"{v:.3f}"),
    "cpu_us_per_packet": ("CPU µs/packet", lambda v: f"{v:.2f}"),
    "system_share": ("system share", lambda v: f"{v * 100:.0f} %"),
    "p99_us": ("lateness p99 µs", lambda v: f"{v:.0f}"),
    "load1": ("load (1 min)", lambda v: f"{v:.2f}"),
}


def spread(values: list[float], fmt) -> str:
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}–{fmt(max(values))}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emu", required=True, help="the cellcc-emu binary measured (B)")
    parser.add_argument("--baseline", help="another cellcc-emu binary, run alternately (A)")
    parser.add_argument("--flow", required=True, help="the cellcc-flow binary")
    parser.add_argument("--rates", default="1000,4000", help="trace rates, Mbit/s, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="transfer seconds")
    parser.add_argument("--runs", type=int, default=3, help="repetitions of each binary")
    parser.add_argument(
        "--queue", type=int, help="downlink drop-tail queue, packets [default: one BDP]"
    )
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print(
            "error: the emulator benchmark needs root (TUN devices, network namespaces, "
            "and the namespaces' TCP buffer limits); run it as root",
            file=sys.stderr,
        )
        return 2
    binaries = {"B": args.emu}
    if args.baseline:
        binaries = {"A": args.baseline, "B": args.emu}
    rates = [float(r) for r in args.rates.split(",")]
    runs: dict[float, dict[str, list[dict[str, Any]]]] = {
        r: {name: [] for name in binaries} for r in rates
    }
    print("run  rate Mbit/s  binary  " + "  ".join(label for label, _ in COLUMNS.values()))
    with tempfile.TemporaryDirectory(prefix="cellcc-bench-emu-") as tmp:
        work = Path(tmp)
        for repetition in range(args.runs):
            for mbps in rates:
                names = list(binaries)
                shift = repetition % len(names)
                for name in names[shift:] + names[:shift]:
                    run = one_run(binaries[name], args.flow, mbps, args.duration, args.queue, work)
                    runs[mbps][name].append(run)
                    cells = "  ".join(fmt(run[k]) for k, (_, fmt) in COLUMNS.items())
                    print(f"{repetition + 1:>3}  {mbps:>11g}  {name:>6}  {cells}", flush=True)
    print()
    print(f"median [min–max] over {args.runs} runs of each binary, alternated")
    for mbps in rates:
        for key, (label, fmt) in COLUMNS.items():
            cells = [
                f"{name}: {spread([r[key] for r in runs[mbps][name]], fmt)}" for name in binaries
            ]
            line = f"{mbps:>6g} Mbit/s  {label:<16} " + "   ".join(cells)
            if len(binaries) == 2 and key == "cpu_us_per_packet":
                a, b = (statistics.median(r[key] for r in runs[mbps][n]) for n in ("A", "B"))
                line += f"   B/A {b / a:.2f}"
            print(line)
    for name, path in binaries.items():
        print(f"{name}: {path}")
    if args.json:
        figures = {
            "binaries": binaries,
            "duration_s": args.duration,
            "runs": {f"{r:g}": v for r, v in runs.items()},
        }
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
