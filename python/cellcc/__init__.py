"""cellcc: congestion control on cellular (LTE/5G) links.

A deterministic, trace-driven simulator written in Rust (``cellcc._core``) with a Python
API, a command line (``cellcc``), plots and reports on top. A run is
``(scenario, seed) -> metrics``; see docs/scenarios.md and docs/metrics.md.

>>> import cellcc
>>> cellcc.schemes()  # doctest: +SKIP
['newreno', 'cubic', 'bbr']
"""

from cellcc._native import (
    CellccError,
    ControlError,
    NativeUnavailableError,
    ScenarioError,
    TraceError,
    UsageError,
)
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
from cellcc.results import package_version as _package_version

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
