"""A bounded fuzz run (tests/fuzz) and the replay of every case it ever found.

Each case runs in a worker process under a 2 GiB address-space limit: a scenario, trace
file, sweep file or CLI argument set is either accepted or refused with a one-line
cellcc error; a traceback, an abort, a killed worker or a hang is a finding. ``make
fuzz`` runs the same for 30 minutes with fresh random cases; a finding it writes is
fixed, then moved to tests/corpus/fuzz/ so that it is replayed here from then on.
"""

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "fuzz"
sys.path.insert(0, str(FUZZ))

import fuzz  # noqa: E402

#: Seconds of fuzzing per kind of input in `make test` (fixed seeds: the same cases on
#: every run; `make fuzz` draws new ones).
BUDGET_S = 25.0


@pytest.mark.slow
@pytest.mark.usefixtures("native")
@pytest.mark.parametrize("kind", ["scenario", "trace", "sweep", "cli"])
def test_a_bounded_fuzz_run_finds_nothing(kind):
    pytest.importorskip("hypothesis")
    report = fuzz.fuzz(BUDGET_S, [kind], seed=20261128)
    print(report.summary())
    assert sum(report.counts.values()) >= 20, report.summary()  # it did run cases
    assert not report.findings, report.summary()


@pytest.mark.usefixtures("native")
@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.json")), ids=lambda p: p.stem)
def test_every_case_found_before_is_accepted_or_refused_cleanly(path):
    answer = fuzz.replay(path)
    assert answer["outcome"] in ("ok", "error"), answer
