"""``cellcc demo``: the offline tour (synthetic traces, the papers' schemes, a report)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import (
    DurationOption,
    SeedOption,
    check_schemes,
    friendly_errors,
    option,
    progress,
    split_schemes,
    stdout,
)

__all__ = ["register"]


def demo(
    out: Annotated[Path, option("--out", help="Output directory.")] = Path("demo-report"),
    duration: DurationOption = 30.0,
    seed: SeedOption = 1,
    schemes: Annotated[
        str | None,
        option(
            "--schemes",
            help="Comma-separated schemes [default: the papers' algorithms and baselines].",
        ),
    ] = None,
) -> None:
    """Offline tour: synthetic traces, the papers' schemes, plots and an HTML report."""
    from cellcc.demo import DEFAULT_PRESETS, DEFAULT_SCHEMES, demo_steps, run_demo

    names = split_schemes(schemes) if schemes is not None else list(DEFAULT_SCHEMES)
    check_schemes(names)
    started = time.monotonic()
    with progress(demo_steps(DEFAULT_PRESETS, names), "demo") as advance:
        index = run_demo(out, duration_s=duration, seed=seed, schemes=names, progress=advance)
    stdout().print(f"demo report: {index}  ({time.monotonic() - started:.0f} s)", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the ``cellcc`` app."""
    app.command("demo")(friendly_errors(demo))
