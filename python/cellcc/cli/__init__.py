"""The ``cellcc`` command line (typer + rich).

Every command turns cellcc errors and bad arguments into one line on stderr,
``error: <file or option>: <what is wrong>``, and exit code 2 — never a traceback.

One module per command or command group, each with ``register(app)``; what they share
(consoles, errors, progress bars, tables, options taken by several commands) is in
:mod:`cellcc.cli._common`. Command modules import ``_common`` and library modules only,
never each other, and import anything heavy (pandas, matplotlib, the simulator's result
frames) inside the command that needs it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cellcc.cli import (
    analyze,
    compare,
    demo,
    experiments,
    real,
    reproduce,
    run,
    schemes,
    sweep,
    traces,
)
from cellcc.cli._common import OneLineUsageErrors, option

__all__ = ["app", "main"]

app = OneLineUsageErrors(
    name="cellcc",
    help="Congestion control on cellular links: a deterministic, trace-driven simulator.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _version_callback(value: bool) -> None:
    if value:
        from cellcc.results import git_revision, package_version

        typer.echo(f"cellcc {package_version()} ({git_revision()})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Congestion control on cellular links: a deterministic, trace-driven simulator."""


# The order of registration is the order of `cellcc --help` (commands, then groups).
for _module in (run, compare, analyze, traces, demo, schemes, sweep, reproduce, experiments, real):
    _module.register(app)


def main() -> None:
    """Entry point of ``python -m cellcc``."""
    app(prog_name="cellcc")
