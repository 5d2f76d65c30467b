"""The one module that imports the compiled core ``cellcc._core``.

Everything else in the package goes through the functions here, so the native API
(``_core.pyi``) is used in exactly one place. This module also owns the exception
hierarchy: the core's exceptions are re-exported unchanged, and errors the core may
raise as plain Python exceptions (``OSError`` for an unreadable trace, ``OverflowError``
for a seed that does not fit in 64 bits) are mapped to the matching ``cellcc`` error with
the file or key named in the message.

When the extension has not been built, importing :mod:`cellcc` still works (synthetic
traces, plots and reports are pure Python); calling a simulator function then raises
:class:`NativeUnavailableError` with the command that builds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

try:
    from cellcc import _core
except ImportError as _exc:  # the extension is built by `make build` (maturin develop)
    _core = None
    _IMPORT_ERROR: ImportError | None = _exc
else:
    _IMPORT_ERROR = None

__all__ = [
    "AVAILABLE",
    "CellccError",
    "ControlError",
    "NativeUnavailableError",
    "ScenarioError",
    "TraceError",
    "UsageError",
    "core_version",
    "encode_parquet",
    "scheme_info",
    "schemes",
    "simulate",
    "stepper",
    "synth_trace",
    "trace_info",
    "trace_timestamps",
    "validate_scenario",
]

#: Whether the compiled core could be imported.
AVAILABLE: bool = _core is not None

if _core is not None:
    CellccError = _core.CellccError
    ScenarioError = _core.ScenarioError
    TraceError = _core.TraceError
    ControlError = _core.ControlError
else:
    # Stand-ins with the same names and hierarchy, so that `except cellcc.CellccError`
    # is valid code whether or not the extension is present.

    class CellccError(Exception):  # type: ignore[no-redef]
        """Base class of every error raised by cellcc."""

    class ScenarioError(CellccError):  # type: ignore[no-redef]
        """A scenario is invalid; the message names the file, key path and expected value."""

    class TraceError(CellccError):  # type: ignore[no-redef]
        """A trace file is invalid; the message names the file and line."""

    class ControlError(CellccError):  # type: ignore[no-redef]
        """Congestion-control code written in Python failed or returned a bad value."""


class UsageError(CellccError):
    """An argument given to the Python API or the CLI is invalid (the message names it)."""


class NativeUnavailableError(CellccError):
    """The compiled extension ``cellcc._core`` is not built or failed to import."""


def _require() -> Any:
    if _core is None:
        raise NativeUnavailableError(
            "the native simulator (cellcc._core) is not built: run `make build` "
            f"in the cellcc checkout ({_IMPORT_ERROR})"
        )
    return _core


def core_version() -> str | None:
    """Version string of the compiled core, or ``None`` when it is not built."""
    return None if _core is None else str(_core.__version__)


#: The core's Parquet encoder, taken at import: it only encodes, so tests that stand a
#: fake in for the simulator (``_core``) still write real files with it.
_ENCODE_PARQUET = None if _core is None else _core.encode_parquet


def encode_parquet(
    columns: list[tuple[str, str, list[Any]]], metadata: Mapping[str, str]
) -> bytes | None:
    """A result table of known column kinds as Parquet bytes (``_core.encode_parquet``),
    or None when the core is not built (the caller then writes through pyarrow)."""
    if _ENCODE_PARQUET is None:
        return None
    return _ENCODE_PARQUET(columns, list(metadata.items()))


def _check_seed(seed: int | None, source_name: str) -> None:
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise UsageError(f"{source_name}: seed: expected an integer in [0, 2^64), got {seed!r}")


def simulate(
    text: str,
    *,
    base_dir: str | None,
    source_name: str,
    seed: int | None,
    progress: Callable[[float], object] | None = None,
) -> dict[str, Any]:
    """Run one scenario given as TOML text (see ``_core.simulate``)."""
    core = _require()
    _check_seed(seed, source_name)
    failures: list[BaseException] = []
    watched = None if progress is None else _watched(progress, failures)
    try:
        raw = core.simulate(
            text, base_dir=base_dir, source_name=source_name, seed=seed, progress=watched
        )
    except OSError as exc:
        raise ScenarioError(f"{source_name}: {_os_message(exc)}") from exc
    except UnicodeEncodeError:
        raise ScenarioError(f"{source_name}: {_not_utf8(base_dir)}") from None
    if failures:  # the callback raised, and the core went on (its final call): re-raise
        raise failures[0]
    return dict(raw)


def _watched(
    progress: Callable[[float], object], failures: list[BaseException]
) -> Callable[[float], object]:
    """``progress`` recording the first exception it raises in ``failures``: the core
    may not stop on an exception from its final call, which must not be lost."""

    def call(done: float) -> object:
        try:
            return progress(done)
        except BaseException as exc:
            failures.append(exc)
            raise

    return call


def _not_utf8(path: str | None) -> str:
    return f"base_dir {path!r}: not valid UTF-8 (a lone surrogate); rename the directory"


def stepper(text: str, *, base_dir: str | None, source_name: str, **options: Any) -> Any:
    """A run that stops at each interval boundary of one flow (``_core.Stepper``)."""
    core = _require()
    _check_seed(options.get("seed"), source_name)
    try:
        return core.Stepper(text, base_dir=base_dir, source_name=source_name, **options)
    except OSError as exc:
        raise ScenarioError(f"{source_name}: {_os_message(exc)}") from exc
    except UnicodeEncodeError:
        raise ScenarioError(f"{source_name}: {_not_utf8(base_dir)}") from None


def validate_scenario(text: str, *, base_dir: str | None, source_name: str) -> None:
    """Parse and check a scenario and its traces without running it."""
    core = _require()
    try:
        core.validate_scenario(text, base_dir=base_dir, source_name=source_name)
    except OSError as exc:
        raise ScenarioError(f"{source_name}: {_os_message(exc)}") from exc
    except UnicodeEncodeError:
        raise ScenarioError(f"{source_name}: {_not_utf8(base_dir)}") from None


def trace_info(path: str) -> dict[str, Any]:
    """Statistics of one Mahimahi trace file."""
    core = _require()
    try:
        return dict(core.trace_info(path))
    except OSError as exc:
        raise TraceError(f"{path}: {_os_message(exc)}") from exc
    except UnicodeEncodeError:
        raise TraceError(f"{path!r}: the path is not valid UTF-8 (a lone surrogate)") from None


def trace_timestamps(path: str) -> bytes:
    """Timestamps of a Mahimahi trace as little-endian ``u32`` bytes (validated by the core)."""
    core = _require()
    try:
        return bytes(core.trace_timestamps(path))
    except OSError as exc:
        raise TraceError(f"{path}: {_os_message(exc)}") from exc
    except UnicodeEncodeError:
        raise TraceError(f"{path!r}: the path is not valid UTF-8 (a lone surrogate)") from None


def synth_trace(config: Mapping[str, Any], seed: int) -> bytes:
    """A synthetic trace from the core's models as little-endian ``u32`` timestamps.

    The core reports a bad configuration as ``ValueError`` naming the key; it becomes a
    :class:`UsageError` that also names the model.
    """
    core = _require()
    model = config.get("model", "?")
    _check_seed(seed, f"synth {model}")
    try:
        text = json.dumps(dict(config), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"synth {model}: the configuration is not plain data: {exc}") from None
    try:
        return bytes(core.synth_trace(text, seed))
    except ValueError as exc:
        raise UsageError(f"synth {model}: {exc}") from None


def schemes() -> list[str]:
    """Names of the congestion controls the simulator implements."""
    return [str(name) for name in _require().schemes()]


def scheme_info() -> list[dict[str, Any]]:
    """Every scheme: name, description, source, doc page and parameters with defaults."""
    return list(json.loads(_require().scheme_info()))


def _os_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason
