"""Running real Linux TCP through the real-time emulator, from Python.

Three Rust binaries make up the real path (``make real`` builds them into the venv):

* ``cellcc-kernel``: loads the BPF congestion controls (``bpf/``) and manages their
  parameter and statistics maps (``docs/kernel.md``);
* ``cellcc-emu``: the Mahimahi-compatible emulator between two network namespaces
  (``docs/emulator.md``);
* ``cellcc-flow``: a bulk TCP sender and receiver with per-socket timing capture.

This module finds them, checks the requirements up front with reasons a user can act
on, and runs one emulated flow (:func:`run_emulated`). The CLI's ``kernel`` and ``emu``
commands hand their arguments to the binaries unchanged.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellcc._native import CellccError

BINARIES = ("cellcc-kernel", "cellcc-emu", "cellcc-flow")
"""The real-path executables, built from crates/cellcc-kernel and crates/cellcc-emu."""

#: The crate that builds each binary, for the ``cargo install`` hint.
CRATES = {"cellcc-kernel": "cellcc-kernel", "cellcc-emu": "cellcc-emu", "cellcc-flow": "cellcc-emu"}

_REPO = Path(__file__).resolve().parents[2]
FLOW_PORT = 5201
"""TCP port of ``cellcc-flow recv`` inside the client namespace."""
CLIENT_TUN = "emu-client"
"""The emulator's device in the client namespace (docs/emulator.md)."""


class RealPathError(CellccError):
    """The real path cannot run here, or a real run failed; the message says why."""


def _cargo_bin() -> Path:
    """Where ``cargo install`` puts binaries: ``$CARGO_HOME/bin``, else ``~/.cargo/bin``."""
    home = os.environ.get("CARGO_HOME")
    return Path(home) / "bin" if home else Path.home() / ".cargo" / "bin"


def find_binary(name: str) -> Path:
    """Where ``name`` is: ``$CELLCC_BIN_DIR``, the venv's ``bin``, ``PATH``, cargo's
    install directory, then the repository's ``target/release``. Raises
    :class:`RealPathError` naming the install command."""
    candidates: list[Path] = []
    if env := os.environ.get("CELLCC_BIN_DIR"):
        candidates.append(Path(env) / name)
    candidates.append(Path(sys.prefix) / "bin" / name)
    if found := shutil.which(name):
        candidates.append(Path(found))
    candidates.append(_cargo_bin() / name)
    candidates.append(_REPO / "target" / "release" / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    crate = CRATES.get(name, name)
    raise RealPathError(
        f"{name} not found (looked in $CELLCC_BIN_DIR, {sys.prefix}/bin, PATH, "
        f"{_cargo_bin()} and target/release); install it from a cellcc checkout with "
        f"`cargo install --locked --path crates/{crate}` (docs/install.md), or run "
        "`make real` there"
    )


def missing_requirements(*, bpf: bool) -> list[str]:
    """Reasons the emulator (and, with ``bpf``, the BPF algorithms) cannot run here;
    empty when everything is in place."""
    reasons: list[str] = []
    if sys.platform != "linux":
        return [f"the real path needs Linux (this is {sys.platform})"]
    if os.geteuid() != 0:
        if bpf:
            reasons.append("loading BPF congestion controls needs root")
        elif not _user_namespaces():
            reasons.append(
                "the emulator needs root, or unprivileged user namespaces for its rootless "
                "mode (user.max_user_namespaces is 0 or kernel.unprivileged_userns_clone is "
                "off; docs/emulator.md)"
            )
    if not Path("/dev/net/tun").exists():
        reasons.append("/dev/net/tun is missing (no TUN support)")
    names = BINARIES if bpf else ("cellcc-emu", "cellcc-flow")
    for name in names:
        try:
            find_binary(name)
        except RealPathError as exc:
            reasons.append(str(exc))
    if bpf and not Path("/sys/kernel/btf/vmlinux").exists():
        reasons.append("the kernel has no BTF (/sys/kernel/btf/vmlinux), needed for BPF struct_ops")
    if bpf and not reasons:
        check = subprocess.run(
            [str(find_binary("cellcc-kernel")), "check"], capture_output=True, text=True
        )
        if check.returncode != 0:
            reasons.append((check.stderr or check.stdout).strip() or "cellcc-kernel check failed")
    return reasons


def _user_namespaces() -> bool:
    """Whether this kernel lets an ordinary user create user namespaces (the emulator's
    rootless mode, docs/emulator.md)."""
    for knob in ("user/max_user_namespaces", "kernel/unprivileged_userns_clone"):
        try:
            if int(Path("/proc/sys", knob).read_text().strip() or "0") == 0:
                return False
        except (OSError, ValueError):
            continue  # a kernel without the knob does not restrict them this way
    return True


def available_congestion_controls() -> list[str]:
    """The kernel's ``tcp_available_congestion_control`` list (empty off Linux)."""
    path = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    return path.read_text().split() if path.exists() else []


@contextmanager
def kernel_loaded(
    settings: Mapping[str, Mapping[str, int]] | None = None, *, timeout_s: float = 60.0
) -> Iterator[list[str]]:
    """Load every BPF congestion control for the duration of the block.

    ``settings`` maps an algorithm (``c2tcp``) to default parameters to set after
    loading (``{"alpha_x100": 200}``). Yields the registered names; the loader is stopped
    (and the algorithms unregistered) on exit, whatever happens in the block. A loader
    that is already running is shared instead: its algorithms are used, the defaults set,
    and it is left running.
    """
    binary = str(find_binary("cellcc-kernel"))
    running = _running_loader(binary)
    if running is not None:
        # Another process's loader (a concurrent validation, or one started by hand):
        # share it and leave it running. Only one loader can hold the algorithms.
        _set_defaults(binary, settings)
        yield running
        return
    loader = subprocess.Popen(
        [binary, "load"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        names = _wait_ready(loader, timeout_s)
        _set_defaults(binary, settings)
        yield names
    finally:
        if loader.poll() is None:
            loader.send_signal(signal.SIGTERM)
            try:
                loader.wait(timeout=15)
            except subprocess.TimeoutExpired:
                loader.kill()
                loader.wait()
        for pipe in (loader.stdout, loader.stderr):
            if pipe is not None:
                pipe.close()


def _running_loader(binary: str) -> list[str] | None:
    """The registered names of a loader that is already running, or None when there is
    none (``cellcc-kernel list`` fails, or reports no loader)."""
    listed = subprocess.run([binary, "list", "--json"], capture_output=True, text=True)
    if listed.returncode != 0:
        return None
    try:
        state = json.loads(listed.stdout)
    except json.JSONDecodeError:
        return None
    if not isinstance(state, dict) or state.get("loader_pid") is None:
        return None
    return [a["name"] for a in state.get("algorithms", []) if a.get("registered")]


def _set_defaults(binary: str, settings: Mapping[str, Mapping[str, int]] | None) -> None:
    for algo, params in (settings or {}).items():
        args = [f"{k}={v}" for k, v in params.items()]
        if args:
            _run_checked([binary, "set", algo, *args], what=f"cellcc-kernel set {algo}")


def _wait_ready(loader: subprocess.Popen[str], timeout_s: float) -> list[str]:
    assert loader.stdout is not None  # Popen above pipes stdout
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = loader.stdout.readline()
        if line.startswith("ready:"):
            return line.split(":", 1)[1].split()
        if not line and loader.poll() is not None:
            err = loader.stderr.read().strip() if loader.stderr else ""
            raise RealPathError(f"cellcc-kernel load failed: {err or f'exit {loader.returncode}'}")
    raise RealPathError(f"cellcc-kernel load did not become ready within {timeout_s:.0f} s")


def kernel_stats(algo: str) -> list[dict[str, Any]]:
    """Every flow's entry in ``ALGO_stats`` (``flow`` and the ``stats`` fields), read
    through the running loader's pinned maps."""
    out = _run_checked(
        [str(find_binary("cellcc-kernel")), "stats", algo, "--json"], what="cellcc-kernel stats"
    )
    return list(json.loads(out))


def _run_checked(argv: Sequence[str], *, what: str, timeout: float | None = None) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RealPathError(f"{what} did not finish within {timeout:.0f} s; stopped") from None
    if done.returncode != 0:
        raise RealPathError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.stdout


@dataclass(frozen=True)
class EmuLink:
    """One emulated path: traces, one-way delay and drop-tail queue sizes."""

    downlink: Path
    uplink: Path
    delay_ms: float = 20.0
    queue_packets: int | None = 1000
    """Drop-tail limit in packets, each way (``None``: no packet limit)."""
    sched: str | None = None
    """Cellular scheduling preset on both directions (the simulator's ``[scheduling]``)."""
    ack_every_segment: bool = False
    """The receiver ACKs every segment (Linux's per-route ``quickack 1``; the simulator's
    ``tcp.quickack_always``), instead of Linux's mix of delayed and immediate ACKs."""
    queue_bytes: int | None = None
    """Drop-tail limit in charged bytes (IP length + 4, as the simulator counts), each way."""
    offload: bool = True
    """The emulator's TUN offloads (its default): the sending kernel hands over TSO
    super-packets and the receiving kernel gets runs of segments due together coalesced
    into one, as from a NIC with GRO, and ACKs each run once. Off (``--no-offload``), every
    packet crosses the TUN devices on its own, as in Mahimahi."""

    def args(self) -> list[str]:
        limits = {"packets": self.queue_packets, "bytes": self.queue_bytes}
        given = [f"{name}={value}" for name, value in limits.items() if value is not None]
        if not given:
            raise RealPathError("an emulated drop-tail queue needs a packet or a byte limit")
        queue = ["droptail", ", ".join(given)]
        sched = ["--uplink-sched", self.sched, "--downlink-sched", self.sched] if self.sched else []
        return [*sched,
            "--delay", f"{self.delay_ms:g}",
            "--downlink", str(self.downlink),
            "--uplink", str(self.uplink),
            "--downlink-queue", queue[0], "--downlink-queue-args", queue[1],
            "--uplink-queue", queue[0], "--uplink-queue-args", queue[1],
            *([] if self.offload else ["--no-offload"]),
        ]  # fmt: skip


def _receiver(link: EmuLink, flow: Path, summary: Path, reads: Path) -> list[str]:
    recv = [
        str(flow), "recv", "--port", str(FLOW_PORT), "--summary", str(summary),
        "--log", str(reads),
    ]  # fmt: skip
    if not link.ack_every_segment:
        return recv
    route = (
        f'ip route replace "$CELLCC_EMU_SERVER_ADDR" dev {CLIENT_TUN} proto kernel scope link '
        f'src "$CELLCC_EMU_CLIENT_ADDR" quickack 1'
    )
    return ["sh", "-c", f"{route} && exec {shlex.join(recv)}"]


@dataclass(frozen=True)
class EmuRun:
    """Files one emulated flow wrote (see :func:`run_emulated`)."""

    out_dir: Path
    downlink_log: Path
    uplink_log: Path
    stats: dict[str, Any]
    sender: dict[str, Any]
    receiver: dict[str, Any]
    tcp_info: Path
    reads: Path
    """The receiver's read log with its autotuning state (``cellcc-flow recv --log``)."""


DRAIN_S = 2.0
"""How long the sender lets the kernel deliver its queued tail after ``duration_s``
before resetting the connection (``cellcc-flow send --drain``). Measurements use the
``duration_s`` window, which the tail follows; without the limit a send buffer of a few
MB takes minutes to drain on a 0.1–1 Mbit/s trace and holds the run."""


def run_emulated(
    link: EmuLink, *, cc: str, duration_s: float, out_dir: str | os.PathLike[str]
) -> EmuRun:
    """One bulk TCP flow with congestion control ``cc`` from the server namespace to the
    client, through ``cellcc-emu``, for ``duration_s``; logs land in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    flow = find_binary("cellcc-flow")
    files = {
        name: out / name
        for name in (
            "downlink.log", "uplink.log", "emu.json", "send.json", "recv.json", "tcp_info.csv",
            "reads.csv",
        )
    }  # fmt: skip
    for path in files.values():
        path.unlink(missing_ok=True)
    sender = " ".join(
        [
            shlex.quote(str(flow)), "send",
            "--to", f'"$CELLCC_EMU_CLIENT_ADDR:{FLOW_PORT}"',
            "--cc", shlex.quote(cc),
            "--duration", f"{duration_s:g}",
            "--info-log", shlex.quote(str(files["tcp_info.csv"])),
            "--summary", shlex.quote(str(files["send.json"])),
            "--drain", f"{DRAIN_S:g}",
        ]
    )  # fmt: skip
    argv = [
        str(find_binary("cellcc-emu")), *link.args(),
        "--downlink-log", str(files["downlink.log"]),
        "--uplink-log", str(files["uplink.log"]),
        "--stats", str(files["emu.json"]),
        "--server-cmd", sender,
        "--", *_receiver(link, flow, files["recv.json"], files["reads.csv"]),
    ]  # fmt: skip
    _run_checked(argv, what=f"cellcc-emu ({cc})", timeout=duration_s + DRAIN_S + 60)

    def load(name: str) -> dict[str, Any]:
        path = files[name]
        if not path.exists():
            raise RealPathError(f"cellcc-emu ({cc}) finished without writing {path}")
        return dict(json.loads(path.read_text()))

    return EmuRun(
        out_dir=out,
        downlink_log=files["downlink.log"],
        uplink_log=files["uplink.log"],
        stats=load("emu.json"),
        sender=load("send.json"),
        receiver=load("recv.json"),
        tcp_info=files["tcp_info.csv"],
        reads=files["reads.csv"],
    )
