"""``cellcc experiments list``: the catalogue of reproduced experiments
(``experiments/*.toml``)."""

from __future__ import annotations

import typer

from cellcc.cli._common import CatalogueOption, friendly_errors, stdout, table

__all__ = ["register"]


def list_experiments(catalogue: CatalogueOption = None) -> None:
    """List the catalogue: id, paper, figure and what it shows."""
    from cellcc import catalogue as cat

    shown = table()
    shown.add_column("id", no_wrap=True)
    for column in ("paper", "figure", "view", "description"):
        shown.add_column(column, overflow="fold")
    for entry in cat.entries(catalogue):
        shown.add_row(entry.id, entry.paper, entry.figure, entry.view, entry.description)
    stdout().print(shown)


def register(app: typer.Typer) -> None:
    """Add the ``experiments`` command group to the ``cellcc`` app."""
    group = typer.Typer(help="The catalogue of reproduced experiments.", no_args_is_help=True)
    group.command("list")(friendly_errors(list_experiments))
    app.add_typer(group, name="experiments")
