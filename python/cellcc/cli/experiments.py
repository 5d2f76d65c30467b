"""``cellcc experiments list|docs``: the catalogue of reproduced experiments
(``experiments/*.toml``), and docs/reproduction.md rendered from its results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cellcc.cli._common import CatalogueOption, friendly_errors, option, stdout, table

__all__ = ["register"]


def list_experiments(catalogue: CatalogueOption = None) -> None:
    """List the catalogue: id, paper, figure and what it shows."""
    from cellcc import catalogue as cat

    shown = table()
    shown.add_column("id", no_wrap=True)
    for column in ("paper", "figure", "view", "claims", "description"):
        shown.add_column(column, overflow="fold", justify="right" if column == "claims" else "left")
    for entry in cat.entries(catalogue):
        shown.add_row(
            entry.id, entry.paper, entry.figure, entry.view, str(entry.claims), entry.description
        )
    stdout().print(shown)


def docs(
    results: Annotated[
        Path,
        option("--results", help="The --out directory of 'cellcc reproduce --all'."),
    ] = Path("out/reproduce"),
    out: Annotated[Path, option("--out", help="The Markdown file to write.")] = Path(
        "docs/reproduction.md"
    ),
    catalogue: CatalogueOption = None,
) -> None:
    """Write docs/reproduction.md from reproduced results: scorecards, tables, wall times."""
    from cellcc.reproduction import render_docs
    from cellcc.results import write_text_atomic

    text = render_docs(results, catalogue=catalogue)
    write_text_atomic(out, text)
    stdout().print(f"wrote {out} from {results}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the ``experiments`` command group to the ``cellcc`` app."""
    group = typer.Typer(help="The catalogue of reproduced experiments.", no_args_is_help=True)
    group.command("list")(friendly_errors(list_experiments))
    group.command("docs")(friendly_errors(docs))
    app.add_typer(group, name="experiments")
