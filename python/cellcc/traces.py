"""Trace-file helpers for the Python layer.

Traces are parsed and measured by the Rust core only (``cellcc.trace_info``; capacity per
bin comes back in the ``capacity_mbps`` link rows of every time series), so this module
holds no parser of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["uplink_sibling"]


def uplink_sibling(downlink: str | os.PathLike[str]) -> Path | None:
    """The ``.up`` trace next to a ``.down`` trace, if it exists (Pantheon/C2TCP layout)."""
    path = Path(downlink)
    if path.suffix != ".down":
        return None
    sibling = path.with_suffix(".up")
    return sibling if sibling.is_file() else None
