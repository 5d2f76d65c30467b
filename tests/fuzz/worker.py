"""The process that runs fuzz cases (tests/fuzz/fuzz.py starts it).

It reads one case per line on stdin (JSON: ``kind`` and ``case``), runs it in a fresh
temporary directory, and answers one JSON line: ``outcome`` is ``ok`` (accepted and
run), ``error`` (refused with a cellcc error or a CLI usage error, ``detail`` the
message) or ``crash`` (any other exception, a traceback in the CLI's output, an error
message of several lines; ``detail`` says which). The parent watches this process's
CPU time to tell a slow case from a hung one. A case that kills the process (a panic
that aborts, an allocation failure under the address-space limit, a signal) is seen by
the parent as the end of the stream.

The address space is limited (``--as-bytes``, default 2 GiB), as ``prlimit --as`` would.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import shutil
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

#: The synthetic trace every scenario template names (written once per worker).
TRACE_PRESET = "lte-stationary"


def send(message: dict[str, Any]) -> None:
    sys.__stdout__.write(json.dumps(message) + "\n")
    sys.__stdout__.flush()


def write_fixtures(root: Path) -> None:
    """Files the cases may name: a trace pair, a scenario, a sweep, a CSV."""
    from cellcc import synthetic

    synthetic.write_preset(TRACE_PRESET, root / "traces", duration_s=3.0)
    (root / "s.toml").write_text(
        'duration_s = 1.0\n[downlink]\ntrace = "traces/lte-stationary.down"\n'
        '[uplink]\nrate_mbps = 50.0\n[[flows]]\nscheme = "cubic"\n'
    )
    (root / "sw.toml").write_text(
        'name = "w"\nschemes = ["cubic"]\n[base]\nduration_s = 1.0\n'
        "downlink = { rate_mbps = 12.0 }\n"
    )
    (root / "c.csv").write_text("time,rate\n0,10\n1,12\n")


def run_scenario(case: dict[str, Any], root: Path) -> None:
    import cellcc

    scenario = case["scenario"]
    for key, count in case.get("repeat", {}).items():
        items = scenario.get(key)
        if isinstance(items, list) and items:
            scenario[key] = [items[0]] * count
        elif isinstance(scenario.get("cell"), dict) and key == "cell.ues":
            ues = scenario["cell"].get("ues")
            if isinstance(ues, list) and ues:
                scenario["cell"]["ues"] = [ues[0]] * count
    cellcc.simulate(scenario, base_dir=root)


def run_trace(case: dict[str, Any], root: Path) -> None:
    import cellcc

    path = root / "fuzzed.down"
    path.write_bytes(base64.b64decode(case["bytes"]))
    cellcc.trace_info(path)
    scenario = {
        "duration_s": 1.0,
        "downlink": {"trace": str(path), "mode": case.get("mode", "loop")},
        "flows": [{"scheme": "cubic"}],
    }
    cellcc.simulate(scenario, base_dir=root)


def run_sweep_file(case: dict[str, Any], root: Path) -> None:
    from cellcc import runner
    from cellcc.claims import check_claims, parse_claims
    from cellcc.sweep import load_sweep
    from cellcc.sweep_report import report_options

    path = root / "fuzzed-sweep.toml"
    path.write_text(case["text"], encoding="utf-8", errors="surrogatepass")
    sweep = load_sweep(path)
    options = report_options(sweep)
    check_claims(parse_claims(sweep.experiment, sweep.source), sweep, options)
    runner.check(sweep)


def run_cli(case: dict[str, Any], root: Path) -> dict[str, Any]:
    """Run the CLI in this process as its entry point does (``app(argv)``, which turns
    usage errors into one line)."""
    import contextlib
    import io

    from cellcc.cli import app

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            app(case["argv"], prog_name="cellcc")
    except SystemExit as exc:
        code = exc.code if exc.code is not None else 0
    output = out.getvalue() + err.getvalue()
    if "Traceback (most recent call last)" in output:
        return {"outcome": "crash", "detail": f"traceback in the output: {output[-2000:]}"}
    if code not in (0, 1, 2):
        return {"outcome": "crash", "detail": f"exit code {code!r}: {output[-500:]}"}
    if code == 0:
        return {"outcome": "ok"}
    # One error line, the last (a progress line may precede it), nothing else.
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    if len(errors) != 1 or lines[-1] != errors[0]:
        return {"outcome": "crash", "detail": f"not a one-line error: {err.getvalue()[-800:]!r}"}
    return {"outcome": "error", "detail": errors[0]}


def run_case(kind: str, case: dict[str, Any], root: Path) -> dict[str, Any]:
    from cellcc import CellccError

    try:
        if kind == "cli":
            return run_cli(case, root)
        {"scenario": run_scenario, "trace": run_trace, "sweep": run_sweep_file}[kind](case, root)
    except CellccError as exc:
        message = str(exc)
        if "\n" in message.strip() or not message.strip():
            return {"outcome": "crash", "detail": f"not a one-line error: {message!r}"}
        return {"outcome": "error", "detail": message}
    except BaseException as exc:  # a panic (BaseException), a traceback, anything else
        lines = traceback.format_exception(exc)
        return {"outcome": "crash", "detail": f"{type(exc).__name__}: {''.join(lines)[-2000:]}"}
    return {"outcome": "ok"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--as-bytes", type=int, default=2 * 2**30)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cellcc-fuzz-"))
    try:
        write_fixtures(base)
        import cellcc.cli  # noqa: F401  (imported before the limit: the cases are measured)

        resource.setrlimit(resource.RLIMIT_AS, (args.as_bytes, args.as_bytes))
        send({"ready": True})
        for line in sys.stdin:
            request = json.loads(line)
            work = Path(tempfile.mkdtemp(dir=base))
            for name in ("traces", "s.toml", "sw.toml", "c.csv"):
                target = work / name
                target.symlink_to(base / name)
            os.chdir(work)
            try:
                answer = run_case(request["kind"], request["case"], work)
            finally:
                os.chdir(base)
                shutil.rmtree(work, ignore_errors=True)
            send(answer)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
