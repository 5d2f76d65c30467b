"""``_core.pyi`` describes the compiled extension: the same public names, and for each
class the same public attributes and methods (an equivalent of mypy's stubtest for the
names; the types are checked by reading)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cellcc

pytestmark = pytest.mark.usefixtures("native")

STUB = Path(cellcc.__file__).with_name("_core.pyi")


def stub_names() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    names: set[str] = set()
    members: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            found = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    found.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found.add(item.target.id)
            members[node.name] = found
    return names, members


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def test_the_stub_names_what_the_extension_has():
    from cellcc import _core

    names, members = stub_names()
    assert names == public(_core) | {"__version__"}
    for cls, found in members.items():
        native = getattr(_core, cls)
        if issubclass(native, BaseException):
            continue  # exceptions add nothing to BaseException's members
        assert found == public(native), cls
