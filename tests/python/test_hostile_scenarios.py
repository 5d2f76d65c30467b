"""Hostile scenarios: values that used to panic, abort on memory, hang or run without
meaning are refused before the run with one line naming the key (docs/scenarios.md,
"Limits").

The corpus is data: ``tests/corpus/scenarios/*.toml``, each opening with a comment that
says what it reproduces and a ``# expect: KEY`` line (``ok`` for a scenario that must
complete). Cases too large or too special to keep as files (100 000 flows, 1000 UEs, a
FIFO, an 8 GiB trace without a newline) are generated here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import cellcc

pytestmark = pytest.mark.usefixtures("native")

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "scenarios"
SCENARIOS = sorted(CORPUS.glob("*.toml"))
#: The address-space limit every corpus entry must live under (acceptance of issue 14).
ADDRESS_SPACE_BYTES = 2 * 1024**3
#: Wall-time bound of one CLI run under the limit: refusals are immediate.
CLI_TIMEOUT_S = 60


def with_trace(name: str) -> str:
    return f'duration_s = 1.0\n[downlink]\ntrace = "{name}"\n[[flows]]\nscheme = "cubic"\n'


BASE = """
duration_s = 1.0
[downlink]
rate_mbps = 10.0
"""


def expected_key(path: Path) -> str:
    match = re.search(r"^# expect: (\S+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name}: no `# expect: KEY` line"
    return match.group(1)


def assert_refused(scenario: object, key: str, **kwargs: object) -> str:
    with pytest.raises(cellcc.CellccError) as info:
        cellcc.simulate(scenario, **kwargs)
    message = str(info.value)
    assert f": {key}: " in message, message
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_corpus_entry_is_refused_naming_its_key(path: Path) -> None:
    key = expected_key(path)
    if key == "ok":
        assert cellcc.simulate(path).flows is not None
    else:
        assert_refused(path, key)


def test_limits_are_named_in_the_message() -> None:
    message = assert_refused(CORPUS / "scale-u32-max.toml", "downlink.scale")
    assert "4294967295 is above the limit 100" in message


def test_hundred_thousand_flows_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "flows.toml"
    path.write_text(BASE + '[[flows]]\nscheme = "cubic"\n' * 100_000)
    assert "above the limit 1000" in assert_refused(path, "flows")


def test_thousand_ues_with_a_1us_tti_are_refused(tmp_path: Path) -> None:
    ues = "[[cell.ues]]\nrate_mbps = 10.0\n" * 1000
    path = tmp_path / "cell.toml"
    path.write_text(f'duration_s = 1.0\n[cell]\ntti_ms = 0.001\n{ues}[[flows]]\nscheme = "cubic"\n')
    assert_refused(path, "cell.tti_ms")


def test_trace_without_newline_is_refused_without_reading_it(tmp_path: Path) -> None:
    trace = tmp_path / "huge.down"
    with trace.open("wb") as f:
        f.truncate(8 * 1024**3)  # sparse: costs no disk
    path = tmp_path / "s.toml"
    path.write_text(with_trace(trace.name))
    assert "longer than 64 bytes" in assert_refused(path, "downlink.trace")


def test_trace_must_be_a_regular_file(tmp_path: Path) -> None:
    # Through a subprocess: on a reader that opens the FIFO, the run would block.
    fifo = tmp_path / "fifo.down"
    os.mkfifo(fifo)
    path = tmp_path / "s.toml"
    path.write_text(with_trace(fifo.name))
    result = run_cli(path, tmp_path / "out", limit=False, timeout=30)
    assert result.returncode == 2, result.stderr
    assert "downlink.trace" in result.stderr
    assert "not a regular file" in result.stderr


def test_short_flow_and_time_series_memory_is_estimated(tmp_path: Path) -> None:
    # 500 flows/s for 10 s: about 5000 short TCP flows of metrics, over the 1 GiB estimate.
    path = tmp_path / "s.toml"
    path.write_text(
        BASE.replace("1.0", "10.0", 1)
        + '[[flows]]\nscheme = "cubic"\n[[background]]\n[background.source]\n'
        'kind = "short_flows"\nrate_per_s = 500.0\nsize = { kind = "constant", value = 1000 }\n'
    )
    assert "the run would need about" in assert_refused(path, "background[0].source")


def run_cli(
    scenario: Path, out: Path, *, limit: bool = True, timeout: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cellcc", "run", str(scenario), "--out", str(out)]
    if limit:
        prlimit = shutil.which("prlimit")
        assert prlimit is not None
        command = [prlimit, f"--as={ADDRESS_SPACE_BYTES}", *command]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(cellcc.__file__).parents[1]), *sys.path])
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{scenario.name}: still running after {timeout} s")


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_corpus_under_a_2_gib_address_space(tmp_path: Path) -> None:
    def one(path: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        return path, run_cli(path, tmp_path / path.stem)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, SCENARIOS))
    for path, result in results:
        key = expected_key(path)
        where = f"{path.name}: rc={result.returncode}\n{result.stderr[-2000:]}"
        assert result.returncode >= 0, f"killed by signal {-result.returncode}: {where}"
        assert "Traceback" not in result.stderr, where
        assert "panicked" not in result.stderr, where
        if key == "ok":
            assert result.returncode == 0, where
        else:
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            assert result.returncode == 2, where
            assert len(lines) == 1 and lines[0].startswith("error: "), where
            assert f": {key}: " in lines[0], where


def test_a_refusal_pickles_with_its_message() -> None:
    # Process pools (`--jobs`) send errors back pickled; pyo3's PanicException did not.
    import pickle

    with pytest.raises(cellcc.CellccError) as info:
        cellcc.simulate(CORPUS / "bin-ms-1e-300.toml")
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value)
    assert str(again) == str(info.value)
