"""Fuzzing cellcc with hostile input: scenarios, trace files, sweep files and CLI
argument sets (tests/fuzz/strategies.py), each run in a worker process under an
address-space limit (tests/fuzz/worker.py).

A case passes when it is accepted and runs, or is refused with a one-line cellcc error.
It fails (a *finding*) when it raises anything else, prints a traceback, aborts or kills
the worker (panic, allocation failure, signal), or hangs: no CPU used for
``HANG_S`` seconds (the worker's CPU time, read from /proc). A case still using CPU after
``SLOW_S`` seconds is stopped and counted as *slow* (accepted work, too long for
fuzzing), not as a finding.

``make fuzz`` runs it for 30 minutes; ``tests/python/test_fuzz.py`` for a bounded time
in ``make test``. Findings are written as JSON files (``--findings DIR``) that
tests/python/test_fuzz.py replays when they are moved to tests/corpus/fuzz/.

Usage: python tests/fuzz/fuzz.py [--minutes M] [--kinds scenario,trace,sweep,cli]
       [--seed N] [--findings DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import select
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: Without CPU use for this long, a case is a hang.
HANG_S = 30.0
#: A case that still uses CPU after this long is stopped and counted as slow.
SLOW_S = 60.0


class Worker:
    """One worker process; restarted after a case that kills or stops it."""

    def __init__(self, as_bytes: int) -> None:
        self.as_bytes = as_bytes
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "worker.py"), "--as-bytes", str(self.as_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        ready = self._read(120.0)
        if ready != {"ready": True}:
            raise SystemExit(f"fuzz worker did not start: {ready}; {self._stderr()}")

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.process is not None and self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not readable:
            return {"timeout": True}
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def _stderr(self) -> str:
        assert self.process is not None and self.process.stderr is not None
        try:
            return self.process.stderr.read()[-1500:]
        except (OSError, ValueError):
            return ""

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, 9)
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self.process = None

    def run(self, kind: str, case: dict[str, Any], hang_s: float, slow_s: float) -> dict[str, Any]:
        if self.process is None:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps({"kind": kind, "case": case}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        started = time.monotonic()
        busy = time.monotonic()
        cpu = self._cpu_s()
        while True:
            message = self._read(1.0)
            if message is None:  # the worker died
                code = self.process.wait()
                detail = f"worker died (exit {code}, signal {-code if code < 0 else 0})"
                detail += f": {self._stderr()}"
                self.stop()
                return {"outcome": "crash", "detail": detail}
            if not message.get("timeout"):
                return message
            now, used = time.monotonic(), self._cpu_s()
            if used > cpu:
                busy, cpu = now, used
            if now - busy > hang_s:
                self.stop()
                return {"outcome": "crash", "detail": f"hang: no CPU used for {hang_s:.0f} s"}
            if now - started > slow_s:
                self.stop()
                return {"outcome": "slow", "detail": f"still running after {slow_s:.0f} s"}

    def _cpu_s(self) -> float:
        """CPU time the worker has used (user + system, from /proc)."""
        assert self.process is not None
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Report:
    counts: Counter[str] = field(default_factory=Counter)
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    slow: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, case: dict[str, Any], answer: dict[str, Any]) -> None:
        outcome = answer["outcome"]
        self.counts[outcome] += 1
        self.by_kind.setdefault(kind, Counter())[outcome] += 1
        if outcome == "crash":
            self.findings.append({"kind": kind, "case": case, "detail": answer["detail"]})
        elif outcome == "slow":
            self.slow.append({"kind": kind, "case": case})

    def summary(self) -> str:
        total = sum(self.counts.values())
        lines = [
            f"{total} inputs: {self.counts['ok']} accepted, {self.counts['error']} clean "
            f"errors, {self.counts['slow']} slow, {self.counts['crash']} findings"
        ]
        for kind, counts in sorted(self.by_kind.items()):
            lines.append(f"  {kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        for finding in self.findings[:20]:
            lines.append(f"  finding ({finding['kind']}): {finding['detail'][:300]}")
        return "\n".join(lines)


def fuzz(
    budget_s: float,
    kinds: list[str],
    *,
    seed: int | None = None,
    as_bytes: int = 2 * 2**30,
    hang_s: float = HANG_S,
    slow_s: float = SLOW_S,
    round_size: int = 25,
) -> Report:
    """Run cases of ``kinds`` for about ``budget_s`` seconds (rounds of ``round_size``
    Hypothesis examples per kind, in turn)."""
    import strategies
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    report = Report()
    worker = Worker(as_bytes)
    deadline = time.monotonic() + budget_s
    try:
        for round_index in range(10**9):
            for kind in kinds:
                if time.monotonic() > deadline:
                    return report
                one = _round(kind, report, worker, deadline, hang_s, slow_s)
                one = settings(
                    max_examples=round_size,
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                )(given(strategies.KINDS[kind])(one))
                if seed is not None:
                    one = hypothesis_seed(seed + round_index)(one)
                one()
    finally:
        worker.stop()
    return report


def _round(kind, report, worker, deadline, hang_s, slow_s):  # type: ignore[no-untyped-def]
    """The test function of one round: run a case of ``kind`` and record its outcome."""

    def one(case: dict[str, Any]) -> None:
        if time.monotonic() <= deadline:
            report.add(kind, case, worker.run(kind, case, hang_s, slow_s))

    return one


def replay(path: Path, *, as_bytes: int = 2 * 2**30) -> dict[str, Any]:
    """Run one saved case (a findings file) and return the worker's answer."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    worker = Worker(as_bytes)
    try:
        return worker.run(saved["kind"], saved["case"], HANG_S, SLOW_S)
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--kinds", default="scenario,trace,sweep,cli")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--findings", type=Path, default=Path("out/fuzz-findings"))
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    started = time.monotonic()
    report = fuzz(args.minutes * 60, kinds, seed=args.seed)
    print(report.summary())
    print(f"{time.monotonic() - started:.0f} s")
    if report.findings:
        args.findings.mkdir(parents=True, exist_ok=True)
        for finding in report.findings:
            text = json.dumps(finding, indent=1, sort_keys=True)
            name = hashlib.sha256(text.encode()).hexdigest()[:16]
            (args.findings / f"{finding['kind']}-{name}.json").write_text(text + "\n")
        print(f"findings written to {args.findings}/")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
