"""What users write for schemes, queues and scenario keys, parsed: scheme names with
parameters (``c2tcp:target_ms=80``) and AQM suffixes (``cubic+codel``), queue specs
(``droptail:packets=100``) and overrides by key path (``downlink.queue.packets``)."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from cellcc import _native
from cellcc._native import ScenarioError, UsageError

__all__ = [
    "AQM_SUFFIXES",
    "apply_overrides",
    "format_queue",
    "parse_queue",
    "parse_scheme",
    "parse_value",
    "queue_spec",
    "split_scheme",
    "unknown_scheme",
    "with_aqm",
]


def parse_value(text: str) -> Any:
    """A command-line value as TOML reads it (``50`` → int, ``0.5`` → float, ``true``,
    ``"x"``, ``[1, 2]``); anything TOML cannot read is the string itself."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(
    document: Mapping[str, Any], overrides: Mapping[str, Any], *, source: str
) -> dict[str, Any]:
    """A copy of the scenario ``document`` with each key path (``downlink.queue.packets``,
    ``flows[0].params.target_ms``) set to its value; a bad path is a
    :class:`ScenarioError` naming it."""
    from cellcc.sweep import set_path

    out = copy.deepcopy(dict(document))
    for path, value in overrides.items():
        try:
            set_path(out, str(path), value)
        except ValueError as exc:
            raise ScenarioError(f"{source}: override {exc}") from None
    return out


#: AQMs a comparison can put under any scheme as ``<scheme>+<aqm>`` (C2TCP §IV-B's
#: "CUBIC + CoDel"): the AQM replaces drop-tail on both directions' queues and keeps
#: their limits.
AQM_SUFFIXES = ("codel", "pie")


def parse_scheme(spec: str) -> tuple[str, dict[str, Any]]:
    """``"c2tcp:target_ms=80:alpha=2"`` → ``("c2tcp", {"target_ms": 80, "alpha": 2})``.

    Parameters follow the name, each as ``:key=value`` (values read as TOML). A Python
    class's import path keeps its own colon: ``"mypkg.cc:MyReno:beta=0.7"``."""
    parts = spec.split(":")
    names = [p for p in parts if "=" not in p]
    params: dict[str, Any] = {}
    for part in parts:
        if "=" in part:
            key, _, value = part.partition("=")
            key = key.strip()
            if not key:
                raise UsageError(f"{spec!r}: a parameter without a name in {part!r}")
            params[key] = parse_value(value.strip())
    return ":".join(names), params


def split_scheme(name: str) -> tuple[str, str | None]:
    """``"cubic+codel"`` → ``("cubic", "codel")``; a plain name → ``(name, None)``."""
    base, plus, aqm = name.rpartition("+")
    if plus and aqm in AQM_SUFFIXES and base:
        return base, aqm
    return name, None


def unknown_scheme(name: str, known: Sequence[str] | None = None) -> str | None:
    """Why ``name`` (a scheme, optionally ``+codel``/``+pie``) is not a scheme, with the
    closest valid name; ``None`` when it is one."""
    known = list(known if known is not None else _native.schemes())
    base, _ = split_scheme(parse_scheme(name)[0])
    if base in known or base == "reno":
        return None
    if ":" in base:
        # A Python class by import path (docs/python-cc.md); imported when validated.
        return None
    hint = difflib.get_close_matches(base, known, n=1)
    return (
        f"unknown scheme {name!r};"
        + (f" did you mean {hint[0]!r}?" if hint else "")
        + f" expected one of: {', '.join(known)}"
        + f" (in comparisons optionally +{' or +'.join(AQM_SUFFIXES)})"
    )


def with_aqm(queue: Mapping[str, Any], aqm: str | None) -> dict[str, Any]:
    """``queue`` with its discipline replaced by ``aqm`` (at the AQM's defaults, keeping
    the packet and byte limits); unchanged when ``aqm`` is ``None``."""
    if aqm is None:
        return dict(queue)
    limits = {k: v for k, v in queue.items() if k in _QUEUE_LIMITS}
    return {"kind": aqm, **limits}


_QUEUE_KINDS = ("infinite", "droptail", "drophead")
_QUEUE_LIMITS = ("packets", "bytes")


def parse_queue(spec: str, *, option: str = "queue") -> dict[str, Any]:
    """Parse a queue spec such as ``droptail:packets=100`` or ``infinite`` into the
    scenario's ``queue`` table; errors name ``option``."""
    kind, _, args = spec.strip().partition(":")
    kind = kind.strip()
    if kind not in _QUEUE_KINDS:
        raise UsageError(
            f"{option}: unknown queue kind {kind!r}; expected one of: {', '.join(_QUEUE_KINDS)}"
        )
    queue: dict[str, Any] = {"kind": kind}
    for item in filter(None, (part.strip() for part in args.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in _QUEUE_LIMITS:
            raise UsageError(
                f"{option}: bad queue argument {item!r}; expected packets=N and/or bytes=N"
            )
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            raise UsageError(f"{option}: {name} must be an integer >= 1, got {value.strip()!r}")
        if name in queue:
            raise UsageError(f"{option}: {name} is given twice in {spec!r}; give it once")
        queue[name] = number
    if kind == "infinite" and len(queue) > 1:
        raise UsageError(f"{option}: the infinite queue takes no limits")
    if kind != "infinite" and len(queue) == 1:
        raise UsageError(f"{option}: {kind} needs a limit, e.g. {kind}:packets=100")
    return queue


def format_queue(queue: Mapping[str, Any]) -> str:
    """Human label of a queue table, e.g. ``droptail 100 pkts``."""
    kind = str(queue.get("kind", "infinite"))
    if kind == "infinite":
        return "infinite queue"
    limits = []
    if "packets" in queue:
        limits.append(f"{queue['packets']} pkts")
    if "bytes" in queue:
        limits.append(f"{queue['bytes']} B")
    return f"{kind} {' / '.join(limits)}".strip()


def queue_spec(queue: Mapping[str, Any]) -> str:
    """Inverse of :func:`parse_queue` (for printing the command that reproduces a run)."""
    args = ",".join(f"{k}={queue[k]}" for k in _QUEUE_LIMITS if k in queue)
    return f"{queue['kind']}:{args}" if args else str(queue["kind"])
