"""Shared fixtures.

* ``fake_core`` replaces the compiled core by ``fake_core.FakeCore`` for tests of the
  Python layer alone.
* ``native`` marks tests that need the compiled core. They are skipped when it is not
  built, except under ``CELLCC_REQUIRE_NATIVE=1`` (set by ``make test`` and so in CI),
  where a missing core is a failure.
* ``shared_traces`` is the directory of the real (GPL) traces kept beside the checkout,
  also set as ``$CELLCC_TRACES``; tests using it skip when it is absent, except under
  ``CELLCC_REQUIRE_TRACES=1`` (set by ``.ci/run``), where an absent set is a failure.
  Every test that needs the shared traces gets them through this fixture.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cellcc import _native
from fake_core import FakeCore

SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> FakeCore:
    core = FakeCore()
    monkeypatch.setattr(_native, "_core", core)
    return core


@pytest.fixture
def native() -> None:
    if not _native.AVAILABLE:
        if os.environ.get("CELLCC_REQUIRE_NATIVE") == "1":
            pytest.fail("cellcc._core is not built but CELLCC_REQUIRE_NATIVE=1")
        pytest.skip("cellcc._core is not built (run `make build`)")


@pytest.fixture
def shared_traces(monkeypatch: pytest.MonkeyPatch) -> Path:
    mahimahi = SHARED_TRACES / "mahimahi"
    if not mahimahi.is_dir():
        if os.environ.get("CELLCC_REQUIRE_TRACES") == "1":
            pytest.fail(
                f"shared traces not found at {mahimahi}, and CELLCC_REQUIRE_TRACES=1 "
                "requires them (unset it to skip the tests that need them)"
            )
        pytest.skip(f"shared traces not found beside the checkout ({mahimahi})")
    # The catalogue's relative traces_dir only reaches them from a checkout; an installed
    # wheel's copy of the catalogue is found through $CELLCC_TRACES, as a user's would be.
    monkeypatch.setenv("CELLCC_TRACES", str(SHARED_TRACES))
    return SHARED_TRACES


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    """A 2 s synthetic downlink trace with its .up sibling."""
    from cellcc import synthetic

    down, _up = synthetic.write_preset("lte-stationary", tmp_path / "traces", duration_s=2.0)
    return down
