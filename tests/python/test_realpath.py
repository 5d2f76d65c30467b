"""The real path's Python side without root: finding the binaries, the pass-through
commands, requirement messages and the validation arithmetic."""

from __future__ import annotations

import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cellcc import realpath, validation

ECHO = """#!/bin/sh
echo "$(basename "$0") $*"
exit 3
"""


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CELLCC_BIN_DIR whose binaries print their arguments and exit 3."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in realpath.BINARIES:
        path = bin_dir / name
        path.write_text(ECHO)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CELLCC_BIN_DIR", str(bin_dir))
    return bin_dir


def test_find_binary_prefers_cellcc_bin_dir(fake_bin: Path) -> None:
    assert realpath.find_binary("cellcc-emu") == fake_bin / "cellcc-emu"


def test_find_binary_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CELLCC_BIN_DIR", str(tmp_path))
    with pytest.raises(realpath.RealPathError, match=r"no-such-binary not found.*make real"):
        realpath.find_binary("no-such-binary")


def _isolate_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Empty every place find_binary looks: no CELLCC_BIN_DIR, an empty PATH, a cargo home
    and a repository without the binaries."""
    monkeypatch.delenv("CELLCC_BIN_DIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    monkeypatch.setattr(realpath.sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(realpath, "_REPO", tmp_path / "checkout")


def _install_fake(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(ECHO)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_binary_searches_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _isolate_search(monkeypatch, tmp_path)
    installed = _install_fake(tmp_path / "elsewhere", "cellcc-emu")
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty-path'}{os.pathsep}{tmp_path / 'elsewhere'}")
    assert realpath.find_binary("cellcc-emu") == installed


def test_find_binary_searches_cargo_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _isolate_search(monkeypatch, tmp_path)
    installed = _install_fake(tmp_path / "cargo-home" / "bin", "cellcc-kernel")
    assert realpath.find_binary("cellcc-kernel") == installed


def test_find_binary_defaults_to_home_cargo_bin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _isolate_search(monkeypatch, tmp_path)
    monkeypatch.delenv("CARGO_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    installed = _install_fake(tmp_path / "home" / ".cargo" / "bin", "cellcc-flow")
    assert realpath.find_binary("cellcc-flow") == installed


@pytest.mark.parametrize(
    ("name", "crate"),
    [
        ("cellcc-kernel", "cellcc-kernel"),
        ("cellcc-emu", "cellcc-emu"),
        ("cellcc-flow", "cellcc-emu"),
    ],
)
def test_missing_binary_names_the_cargo_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, crate: str
) -> None:
    _isolate_search(monkeypatch, tmp_path)
    with pytest.raises(realpath.RealPathError) as raised:
        realpath.find_binary(name)
    message = str(raised.value)
    assert f"{name} not found" in message
    assert f"cargo install --locked --path crates/{crate}" in message
    assert str(tmp_path / "cargo-home" / "bin") in message


@pytest.mark.parametrize("command", ["kernel", "emu"])
def test_pass_through_hands_every_argument_over(fake_bin: Path, command: str) -> None:
    # The command replaces the Python process, so run it as a real subprocess.
    env = {**os.environ, "CELLCC_BIN_DIR": str(fake_bin)}
    args = ["--help", "set", "c2tcp", "alpha_x100=300", "--", "sh", "-c", "x"]
    done = subprocess.run(
        [sys.executable, "-m", "cellcc", command, *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == f"cellcc-{command} {' '.join(args)}"


def test_missing_requirements_are_specific(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CELLCC_BIN_DIR", str(tmp_path))
    monkeypatch.setattr(realpath, "find_binary", _missing)
    reasons = realpath.missing_requirements(bpf=False)
    assert any("cellcc-emu not found" in r for r in reasons)
    assert any("cellcc-flow not found" in r for r in reasons)
    if os.geteuid() != 0:  # the rootless emulator needs user namespaces, BPF needs root
        assert any("needs root" in r for r in reasons) != realpath._user_namespaces()
        assert any("BPF" in r for r in realpath.missing_requirements(bpf=True))


def _missing(name: str) -> Path:
    raise realpath.RealPathError(f"{name} not found")


def test_validate_rejects_unknown_schemes_before_running(tmp_path: Path) -> None:
    # Sprout exists in the simulator only.
    with pytest.raises(realpath.RealPathError, match=r"unknown validation scheme 'sprout'"):
        validation.validate(["cubic", "sprout"], ["x"], traces_dir=tmp_path, out_dir=tmp_path)


def test_validate_command_defaults_are_the_library_defaults() -> None:
    import inspect

    from cellcc.cli import real as cli_real

    params = inspect.signature(cli_real.validate).parameters
    assert params["schemes"].default == ",".join(validation.DEFAULT_SCHEMES)
    assert params["traces"].default == ",".join(validation.DEFAULT_TRACES)
    assert set(validation.DEFAULT_SCHEMES) <= set(validation.SCHEMES)


def test_compare_row_flags_differences_beyond_tolerance() -> None:
    sim = {
        "throughput_mbps": 10.0,
        "qdelay_mean_ms": 40.0,
        "qdelay_p95_ms": 80.0,
        "utilisation": 0.9,
    }
    close = dict(sim, throughput_mbps=9.2, qdelay_mean_ms=49.0)
    far = dict(sim, throughput_mbps=8.8, qdelay_mean_ms=51.0)
    row = validation.compare_row("cubic", "t", sim, close)
    assert row["throughput_diff"] == pytest.approx(-0.08)
    assert row["qdelay_mean_diff"] == pytest.approx(0.225)
    assert row["throughput_ok"] and row["qdelay_ok"]
    row = validation.compare_row("cubic", "t", sim, far)
    assert not row["throughput_ok"] and not row["qdelay_ok"]


def test_compare_row_with_nothing_simulated_is_not_agreement() -> None:
    sim = {
        "throughput_mbps": 0.0,
        "qdelay_mean_ms": math.nan,
        "qdelay_p95_ms": math.nan,
        "utilisation": 0.0,
    }
    row = validation.compare_row("cubic", "t", sim, dict(sim, throughput_mbps=1.0))
    assert math.isnan(row["throughput_diff"]) and not row["throughput_ok"]


def test_sim_scenario_mirrors_the_emulated_path(tmp_path: Path) -> None:
    setup = validation.Setup(duration_s=12.0, delay_ms=15.0, queue_packets=300)
    scenario = validation.sim_scenario(
        validation.SCHEMES["c2tcp"], tmp_path / "a.down", tmp_path / "a.up", setup
    )
    assert scenario["downlink"]["delay_ms"] == 15.0 == scenario["uplink"]["delay_ms"]
    assert scenario["downlink"]["queue"] == {"kind": "droptail", "packets": 300}
    assert scenario["flows"] == [
        {"scheme": "c2tcp", "params": dict(validation.SCHEMES["c2tcp"].sim_params)}
    ]
    assert scenario["metrics"]["packet_log"] is True
    link = realpath.EmuLink(tmp_path / "a.down", tmp_path / "a.up", 15.0, 300)
    args = link.args()
    assert args[args.index("--delay") + 1] == "15"
    assert args[args.index("--downlink-queue-args") + 1] == "packets=300"


FAKE_LOADER = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
  list) cat "$(dirname "$0")/state.json" ;;
  load) echo "ready: cellcc_c2tcp cellcc_vegas"; exec sleep 30 ;;
  set) ;;
esac
"""


@pytest.mark.parametrize("running", [False, True])
def test_kernel_loaded_shares_a_running_loader(fake_bin: Path, running: bool) -> None:
    """Two validations at once (one per scheme group) use the one loader there can be:
    the second shares the first's, sets its defaults and leaves it running."""
    kernel = fake_bin / "cellcc-kernel"
    kernel.write_text(FAKE_LOADER)
    (fake_bin / "state.json").write_text(
        '{"loader_pid": %s, "algorithms": [{"name": "cellcc_c2tcp", "registered": true},'
        ' {"name": "cellcc_cdg", "registered": false}]}' % ("4242" if running else "null")
    )
    with realpath.kernel_loaded({"c2tcp": {"alpha_x100": 200}}) as names:
        pass
    calls = (fake_bin / "calls").read_text().splitlines()
    if running:
        assert names == ["cellcc_c2tcp"]
        assert calls == ["list --json", "set c2tcp alpha_x100=200"]
    else:
        assert names == ["cellcc_c2tcp", "cellcc_vegas"]
        assert calls == ["list --json", "load", "set c2tcp alpha_x100=200"]


def test_a_command_past_its_time_limit_is_a_clear_error() -> None:
    """A run that does not end (a path too slow to drain the sender's queue, say) is
    stopped and named, not a traceback."""
    with pytest.raises(realpath.RealPathError, match=r"sleeper did not finish within 0 s"):
        realpath._run_checked(["sleep", "5"], what="sleeper", timeout=0.3)
