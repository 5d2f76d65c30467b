"""cellcc: congestion control on cellular (LTE/5G) links.

A deterministic, trace-driven simulator written in Rust (``cellcc._core``) with a Python
API, a command line (``cellcc``), plots and reports on top. A run is
``(scenario, seed) -> metrics``; see docs/scenarios.md and docs/metrics.md.

>>> import cellcc
>>> cellcc.schemes()  # doctest: +SKIP
['newreno', 'cubic', 'bbr']
"""

from typing import TYPE_CHECKING, Any

from cellcc._native import (
    CellccError,
    ControlError,
    NativeUnavailableError,
    ScenarioError,
    TraceError,
    UsageError,
)
from cellcc.results import package_version as _package_version

#: Names served by :mod:`cellcc.api`, imported on first use: a command such as
#: ``cellcc --version`` needs none of it (the API itself loads pandas only for its
#: DataFrames, and pyarrow only to write Parquet).
_API = (
    "Comparison",
    "Result",
    "compare",
    "scheme_info",
    "schemes",
    "simulate",
    "trace_info",
    "validate",
)

__all__ = [
    "CellccError",
    "Comparison",
    "ControlError",
    "NativeUnavailableError",
    "Result",
    "ScenarioError",
    "TraceError",
    "UsageError",
    "__version__",
    "compare",
    "scheme_info",
    "schemes",
    "simulate",
    "trace_info",
    "validate",
]

__version__: str = _package_version()


def __getattr__(name: str) -> Any:
    if name in _API:
        from cellcc import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cellcc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from cellcc.api import (
        Comparison,
        Result,
        compare,
        scheme_info,
        schemes,
        simulate,
        trace_info,
        validate,
    )
