"""``cellcc schemes``: the registry of congestion-control schemes."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cellcc.cli._common import friendly_errors, option

__all__ = ["register"]


def list_schemes(
    names_only: Annotated[bool, option("--names", help="Print only the names.")] = False,
    as_json: Annotated[bool, option("--json", help="Print the registry as JSON.")] = False,
) -> None:
    """List every congestion-control scheme: what it is, its source paper, RFC or kernel
    file, its documentation page, and its parameters with their defaults."""
    import json

    from cellcc import api

    info = api.scheme_info()
    if as_json:
        typer.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    for s in info:
        if names_only:
            typer.echo(s["name"])
            continue
        typer.echo(f"{s['name']}: {s['description']}")
        typer.echo(f"    source: {s['source']}")
        typer.echo(f"    docs:   {s['doc']}")
        params = [_param_text(p) for p in s["params"]]
        typer.echo(f"    params: {', '.join(params) if params else '(none)'}")
    if not names_only:
        typer.echo(
            "In comparisons, <scheme>+codel and <scheme>+pie put that AQM "
            "on both directions' queues."
        )


def _param_text(param: dict[str, Any]) -> str:
    kind = param["kind"]
    if kind == "value":
        return f"{param['key']} = {param['default']}"
    if kind == "fixed":
        return f"{param['key']} = {param['default']} (fixed by the preset)"
    labels = {"unset": "unset", "required": "required", "flow_seed": "seed from the run"}
    return f"{param['key']} ({labels.get(kind, kind)})"


def register(app: typer.Typer) -> None:
    """Add ``schemes`` to the ``cellcc`` app."""
    app.command("schemes")(friendly_errors(list_schemes))
