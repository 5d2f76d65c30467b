"""``cellcc demo``: an offline, one-minute tour.

1. Generate synthetic cellular-like traces (``cellcc.synthetic`` presets) into
   ``<out>/traces/``; no network and no external data.
2. On each trace, run the default schemes (``DEFAULT_SCHEMES``: the papers' algorithms
   and their main baselines; one flow, 30 s, same seed),
   with a 10 ms one-way delay and a 100-packet drop-tail queue in each direction (the
   C2TCP evaluation set-up).
3. Run them again on one trace behind an LTE scheduling model (``DEFAULT_SCHEDULED``:
   uplink grants on a 5 ms scheduling-request period, docs/cellular-models.md). Without
   such a pattern César finds no scheduling unit and runs as its BBR fallback, so its
   numbers equal BBR's; here its own mechanism runs. Every table shows each flow's final
   congestion-control phase (``cc_phase``), which says which case applies.
4. Write per-comparison results and plots under ``<out>/<preset>/`` (and
   ``<out>/<preset>-<scheduling>/``) and one HTML report, ``<out>/index.html``, whose
   every plot is captioned with the command that remakes it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cellcc import api, report, synthetic
from cellcc.results import provenance, write_csv_atomic, write_json_atomic

__all__ = [
    "DEFAULT_PRESETS",
    "DEFAULT_SCHEDULED",
    "DEFAULT_SCHEMES",
    "ScheduledComparison",
    "demo_steps",
    "run_demo",
]

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
#: Scheduled paths, as (trace preset, scheduling preset): SKT's and KT's LTE pattern in
#: César (5 ms SR period), on which César estimates a 5 ms scheduling unit and leaves
#: its BBR fallback (cesar-fig6 in the experiment catalogue).
DEFAULT_SCHEDULED = (("lte-stationary", "lte-fdd-sr5"),)


def demo_steps(
    presets: Sequence[str],
    schemes: Sequence[str],
    scheduled: Sequence[tuple[str, str]] = DEFAULT_SCHEDULED,
) -> int:
    """Number of progress steps ``run_demo`` reports: a trace, then each scheme, per
    preset; each scheme per scheduled path (plus its trace if no preset made it)."""
    extra_traces = {trace for trace, _ in scheduled} - set(presets)
    return len(presets) * (1 + len(schemes)) + len(extra_traces) + len(scheduled) * len(schemes)


@dataclass
class ScheduledComparison(api.Comparison):
    """A comparison whose path has a ``[scheduling]`` preset (docs/scenarios.md)."""

    scheduling: str = "lte-fdd-sr5"

    @property
    def path_label(self) -> str:
        return f"{super().path_label}, {self.scheduling} scheduling"

    def scenario(self, scheme: str) -> dict[str, Any]:
        scenario = super().scenario(scheme)
        scenario["name"] = f"{scheme}-on-{self.trace.stem}-{self.scheduling}"
        scenario["scheduling"] = {"preset": self.scheduling}
        return scenario


def _run(comparison: api.Comparison, progress: Callable[[str, bool], None]) -> None:
    """Run every scheme of ``comparison`` (all validated first), as ``api.compare`` does."""
    scenarios = {name: comparison.scenario(name) for name in comparison.schemes}
    for scenario in scenarios.values():
        api.validate(scenario)
    for name, scenario in scenarios.items():
        progress(name, False)
        comparison.results[name] = api.simulate(scenario)
        progress(name, True)


def _summary(comparison: api.Comparison, scheduling: str = "") -> pd.DataFrame:
    """The comparison's summary (with ``cc_phase``) and its ``scheduling`` preset."""
    summary = report.comparison_summary(comparison)
    summary.insert(int(summary.columns.get_loc("queue")) + 1, "scheduling", scheduling)
    return summary


def run_demo(
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    duration_s: float = 30.0,
    seed: int = 1,
    presets: Sequence[str] = DEFAULT_PRESETS,
    schemes: Sequence[str] | None = None,
    scheduled: Sequence[tuple[str, str]] = DEFAULT_SCHEDULED,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Run the demo and return the path of the HTML report.

    ``scheduled`` lists the (trace preset, scheduling preset) paths run after the
    plain ones. ``progress(message)`` is called once per step (see :func:`demo_steps`).
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
    traces: dict[str, tuple[Path, Path, str]] = {}

    def trace(preset: str) -> tuple[Path, Path, str]:
        """The preset's traces (generated once) and the command that makes them."""
        if preset not in traces:
            down, up = synthetic.write_preset(
                preset, trace_dir, duration_s=TRACE_DURATION_S, seed=seed
            )
            if progress is not None:
                progress(f"generated {down.name}")
            traces[preset] = down, up, shlex.join(
                [
                    "cellcc", "traces", "synth", preset, "--out-dir", os.fspath(trace_dir),
                    "--seed", str(seed), "--duration", f"{TRACE_DURATION_S:g}",
                ]
            )  # fmt: skip
        return traces[preset]

    for preset in presets:
        down, _up, trace_command = trace(preset)

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
        tables.append(_summary(comparison))

    for preset, scheduling in scheduled:
        down, up, trace_command = trace(preset)
        scheduled_run = ScheduledComparison(
            trace=down,
            uplink_trace=up,
            uplink_mbps=None,
            schemes=names,
            delay_ms=DELAY_MS,
            queue=api.parse_queue(QUEUE),
            duration_s=duration_s,
            seed=seed,
            bin_ms=BIN_MS,
            scheduling=scheduling,
        )

        where = f"{down.name} with {scheduling} scheduling"

        def scheduled_step(scheme: str, finished: bool, where: str = where) -> None:
            if finished and progress is not None:
                progress(f"{scheme} on {where}")

        _run(scheduled_run, scheduled_step)
        # `cellcc compare` has no scheduling option: the demo command remakes this part.
        section = report.write_comparison(
            scheduled_run,
            out / f"{preset}-{scheduling}",
            command=demo_command,
            commands_before=[("Generate the trace:", trace_command)],
        )
        section.title = f"{preset} with {scheduling} scheduling"
        section.description += (
            f" Both directions pass the {scheduling} cellular scheduling model "
            "(docs/cellular-models.md): data and ACKs leave in the bursts its grants "
            "allow, so ACKs arrive in a pattern. César estimates the scheduling unit from "
            "that pattern and paces to it (final phase steady); on the paths above, "
            "without a pattern, it runs as its BBR fallback (final phase bbr) and its "
            "numbers equal BBR's."
        )
        sections.append(section)
        tables.append(_summary(scheduled_run, scheduling))

    record = provenance(
        seed=seed,
        command=demo_command,
        extra={
            "presets": list(presets),
            "scheduled": [list(pair) for pair in scheduled],
            "schemes": names,
            "duration_s": duration_s,
        },
    )
    summary = pd.concat(tables, ignore_index=True)
    write_csv_atomic(out / "summary.csv", summary)
    write_json_atomic(out / "provenance.json", record)
    return report.write_report(
        out,
        title="cellcc demo: congestion control on synthetic cellular links",
        intro=(
            "Every scheme the simulator implements, one flow at a time, on synthetic "
            "cellular-like traces (generated from a seeded model, not measured), then on "
            "one of them behind an LTE scheduling model. The final CC phase column "
            "tells, for example, when César ran as its BBR fallback. "
            f"Regenerate the whole page with: {demo_command}"
        ),
        sections=sections,
        provenance_record=record,
    )
