"""``cellcc demo``: an offline, one-minute tour.

1. Generate synthetic cellular-like traces (``cellcc.synthetic`` presets) into
   ``<out>/traces/``; no network and no external data.
2. On each trace, run the default schemes (``DEFAULT_SCHEMES``: the papers' algorithms
   and their main baselines; one flow, 30 s, same seed),
   with a 10 ms one-way delay and a 100-packet drop-tail queue in each direction (the
   C2TCP evaluation set-up).
3. Write per-comparison results and plots under ``<out>/<preset>/`` and one HTML report,
   ``<out>/index.html``, whose every plot is captioned with the command that remakes it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from cellcc import api, report, synthetic
from cellcc.results import provenance, write_csv_atomic, write_json_atomic

__all__ = ["DEFAULT_PRESETS", "DEFAULT_SCHEMES", "demo_steps", "run_demo"]

DEFAULT_OUT = Path("demo-report")
DEFAULT_PRESETS = ("lte-driving", "lte-stationary")
#: Schemes compared by default: every algorithm that runs without parameters, one
#: PropRate preset for the three, and no aliases (``reno``) or probes (``fixed``).
DEFAULT_SCHEMES = ("newreno", "cubic", "bbr", "c2tcp", "c2tcp-ifip", "proprate-m", "cesar")
#: Trace length: longer than a run, so a 30 s run sees no loop boundary.
TRACE_DURATION_S = 60.0
DELAY_MS = 10.0
QUEUE = "droptail:packets=100"
BIN_MS = 200.0


def demo_steps(presets: Sequence[str], schemes: Sequence[str]) -> int:
    """Number of progress steps ``run_demo`` reports (a trace, then each scheme, per preset)."""
    return len(presets) * (1 + len(schemes))


def run_demo(
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    duration_s: float = 30.0,
    seed: int = 1,
    presets: Sequence[str] = DEFAULT_PRESETS,
    schemes: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run the demo and return the path of the HTML report.

    ``progress(message)`` is called once per step (see :func:`demo_steps`).
    """
    out = Path(out_dir)
    names = list(schemes) if schemes is not None else list(DEFAULT_SCHEMES)
    trace_dir = out / "traces"
    demo_command = shlex.join(
        [
            "cellcc",
            "demo",
            "--out",
            os.fspath(out),
            "--duration",
            f"{duration_s:g}",
            "--seed",
            str(seed),
        ]
    )
    sections = []
    tables = []
    for preset in presets:
        down, _up = synthetic.write_preset(
            preset, trace_dir, duration_s=TRACE_DURATION_S, seed=seed
        )
        if progress is not None:
            progress(f"generated {down.name}")
        trace_command = shlex.join(
            [
                "cellcc", "traces", "synth", preset, "--out-dir", os.fspath(trace_dir),
                "--seed", str(seed), "--duration", f"{TRACE_DURATION_S:g}",
            ]
        )  # fmt: skip

        def step(scheme: str, finished: bool, preset: str = preset) -> None:
            if finished and progress is not None:
                progress(f"{scheme} on {preset}")

        comparison = api.compare(
            down,
            schemes=names,
            delay_ms=DELAY_MS,
            queue=QUEUE,
            duration_s=duration_s,
            seed=seed,
            bin_ms=BIN_MS,
            progress=step,
        )
        section = report.write_comparison(
            comparison,
            out / preset,
            commands_before=[("Generate the trace:", trace_command)],
        )
        section.title = f"{preset}: {synthetic.PRESETS[preset].description}"
        sections.append(section)
        tables.append(comparison.summary)

    record = provenance(
        seed=seed,
        command=demo_command,
        extra={"presets": list(presets), "schemes": names, "duration_s": duration_s},
    )
    summary = pd.concat(tables, ignore_index=True)
    write_csv_atomic(out / "summary.csv", summary)
    write_json_atomic(out / "provenance.json", record)
    return report.write_report(
        out,
        title="cellcc demo: congestion control on synthetic cellular links",
        intro=(
            "Every scheme the simulator implements, one flow at a time, on synthetic "
            "cellular-like traces (generated from a seeded model, not measured). "
            f"Regenerate the whole page with: {demo_command}"
        ),
        sections=sections,
        provenance_record=record,
    )
