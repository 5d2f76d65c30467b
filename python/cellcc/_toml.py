"""A small TOML writer covering the value types of the scenario schema.

Scenarios are data (docs/scenarios.md). The API accepts a scenario as a ``dict``; it is
serialised here to TOML text, which is what the native core parses and what provenance
records. Supported values: ``str``, ``bool``, ``int``, ``float``, ``os.PathLike`` (written
as a string), lists of scalars, tables (``dict``) and arrays of tables (a list of
``dict``). Keys whose value is ``None`` are left out (the schema's default applies).
Top-level tables become ``[name]`` sections, tables nested inside a section are
written inline (``queue = { kind = "droptail", packets = 100 }``) and a top-level list of
tables becomes ``[[name]]`` blocks, which is the layout used throughout the docs.

Reading goes through the standard library's ``tomllib``; tests round-trip the two.
:func:`read_text` reads a scenario or sweep file with one error per way it can fail.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cellcc._native import ScenarioError

__all__ = ["TomlTypeError", "dumps", "read_text"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


class TomlTypeError(TypeError):
    """A value cannot be written as TOML; ``key_path`` names where it is."""

    def __init__(self, key_path: str, message: str) -> None:
        super().__init__(f"{key_path}: {message}")
        self.key_path = key_path


def dumps(document: Mapping[str, Any]) -> str:
    """Serialise a mapping to TOML text (keys keep their insertion order)."""
    if not isinstance(document, Mapping):
        raise TomlTypeError("<root>", f"expected a table (dict), got {type(document).__name__}")
    scalars: list[str] = []
    sections: list[str] = []
    for key, value in _present(document):
        path = _key(key, "")
        if isinstance(value, Mapping):
            body = "".join(
                f"{_key(k, path)} = {_value(v, f'{path}.{k}')}\n" for k, v in _present(value)
            )
            sections.append(f"[{path}]\n{body}")
        elif _is_table_array(value):
            for index, table in enumerate(value):
                body = "".join(
                    f"{_key(k, path)} = {_value(v, f'{path}[{index}].{k}')}\n"
                    for k, v in _present(table)
                )
                sections.append(f"[[{path}]]\n{body}")
        else:
            scalars.append(f"{path} = {_value(value, path)}\n")
    return "\n".join(["".join(scalars), *sections]).lstrip("\n")


def _present(table: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    return [(k, v) for k, v in table.items() if v is not None]


def _is_table_array(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and len(value) > 0
        and all(isinstance(item, Mapping) for item in value)
    )


def _key(key: Any, parent: str) -> str:
    if not isinstance(key, str):
        where = parent or "<root>"
        raise TomlTypeError(where, f"table keys must be strings, got {key!r}")
    return key if _BARE_KEY.match(key) else _string(key, parent or "<root>")


#: Deepest nesting of tables and arrays a scenario may have (the schema needs a handful;
#: deeper is a mistake, or a table that contains itself).
MAX_DEPTH = 64


def _string(text: str, path: str = "<root>") -> str:
    if any("\ud800" <= char <= "\udfff" for char in text):
        raise TomlTypeError(
            path, f"{text!r} holds a lone surrogate, which TOML (UTF-8) cannot represent"
        )
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _value(value: Any, path: str, depth: int = 0) -> str:
    if depth > MAX_DEPTH:
        raise TomlTypeError(
            path.partition(".")[0] or "<root>",
            f"nested more than {MAX_DEPTH} levels deep (a table or list that contains itself?)",
        )
    # bool before int: bool is a subclass of int. numpy's bool_ is not, but has kind "b".
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise TomlTypeError(path, "NaN is not a valid scenario value")
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(float(value))  # numpy scalars repr as "np.float64(...)"
        # repr gives "30.0", "0.001", "1e-05"; TOML needs a '.' or an exponent to read a float.
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(value, str):
        return _string(value, path)
    if isinstance(value, os.PathLike):
        return _string(os.fspath(value), path)
    if isinstance(value, Mapping):
        items = ", ".join(
            f"{_key(k, path)} = {_value(v, f'{path}.{k}', depth + 1)}" for k, v in _present(value)
        )
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        inner = (_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
        return "[" + ", ".join(inner) + "]"
    # numpy scalars and similar: accept anything that converts losslessly to int/float.
    for convert in (int, float):
        try:
            converted = convert(value)
        except (TypeError, ValueError):
            continue
        if converted == value:
            return _value(converted, path)
    raise TomlTypeError(path, f"cannot write a value of type {type(value).__name__} as TOML")


#: Largest scenario, sweep or experiment file read: 4 MiB, the bound the native core puts
#: on scenario text (``MAX_SCENARIO_BYTES``, docs/scenarios.md "Limits").
MAX_TEXT_BYTES = 4 << 20


def read_text(path: Path, what: str) -> str:
    """The text of the ``what`` file (``scenario``, ``sweep``) at ``path``; every way
    reading can fail is a :class:`ScenarioError` naming the file. Only a regular file of
    at most :data:`MAX_TEXT_BYTES` is read (a FIFO or ``/dev/zero`` would never end)."""
    try:
        status = path.stat()
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(status.st_mode):
            raise ScenarioError(f"{path}: not a regular file, expected a {what} TOML file")
        if status.st_size > MAX_TEXT_BYTES:
            raise ScenarioError(
                f"{path}: the {what} file is {status.st_size} bytes, above the limit "
                f"{MAX_TEXT_BYTES} (4 MiB)"
            )
        with path.open("rb") as file:
            data = file.read(MAX_TEXT_BYTES + 1)
        if len(data) > MAX_TEXT_BYTES:
            raise ScenarioError(f"{path}: the {what} file grew above the limit while read")
        # Universal newlines, as text-mode reading gives.
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such {what} file") from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a directory, expected a {what} TOML file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
