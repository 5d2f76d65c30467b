"""The broad ``cellcc validate`` without root: buffers, the trace preset and the Irish
conversion, the aggregation of repeated kernel runs, resuming, and the generated docs
section. Kernel runs are faked (``validation.kernel_run``); the real path is exercised
by ``test_validate_broad_end_to_end`` in ``test_real_kernel.py``."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cellcc import realpath, traces, validation, validation_report, validation_runs
from cellcc._native import UsageError
from cellcc.validation_runs import Buffer, load_finished, parse_buffers
from helpers import assert_one_line_error, constant_trace

# -- buffers ------------------------------------------------------------------------------


def test_parse_buffers_reads_packets_and_decimal_bytes() -> None:
    assert parse_buffers("150KB,1000p") == [Buffer(bytes=150_000), Buffer(packets=1000)]
    assert parse_buffers(" 2MB , 1500B, 150kB") == [
        Buffer(bytes=2_000_000),
        Buffer(bytes=1500),
        Buffer(bytes=150_000),
    ]
    assert [b.label for b in parse_buffers("150KB,1000p,2MB,1500B")] == [
        "150KB",
        "1000p",
        "2MB",
        "1500B",
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "comma-separated list"),
        ("150KB,,1000p", "comma-separated list"),
        ("150kb", "'150kb' is not a buffer"),
        ("150 KB", "'150 KB' is not a buffer"),
        ("1.5MB", "'1.5MB' is not a buffer"),
        ("1000", "'1000' is not a buffer"),
        ("-5p", "'-5p' is not a buffer"),
        ("0p", "at least 1"),
        ("1000p,1000p", "given twice"),
        ("150KB,150000B", "given twice"),
    ],
)
def test_parse_buffers_names_the_option_and_the_item(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=r"^--buffers: ") as info:
        parse_buffers(text)
    assert needle in str(info.value)


def test_byte_buffer_reaches_both_sides(tmp_path: Path) -> None:
    setup = Buffer(bytes=150_000).setup(validation.Setup(duration_s=5.0))
    assert setup.queue_packets is None and setup.queue_bytes == 150_000
    scenario = validation.sim_scenario(
        validation.SCHEMES["cubic"], tmp_path / "a.down", tmp_path / "a.up", setup
    )
    assert scenario["downlink"]["queue"] == {"kind": "droptail", "bytes": 150_000}
    assert scenario["uplink"]["queue"] == {"kind": "droptail", "bytes": 150_000}
    args = validation.emu_link(tmp_path / "a.down", tmp_path / "a.up", setup).args()
    assert args[args.index("--downlink-queue-args") + 1] == "bytes=150000"
    assert args[args.index("--uplink-queue-args") + 1] == "bytes=150000"
    both = realpath.EmuLink(tmp_path / "a", tmp_path / "b", 20.0, 300, queue_bytes=450_000)
    assert "packets=300, bytes=450000" in both.args()
    # The validation runs the emulator without its offloads unless asked: the simulated
    # receiver has no GRO.
    assert args[-1] == "--no-offload" and "--no-offload" not in both.args()
    offload = replace(setup, offload=True)
    assert "--no-offload" not in validation.emu_link(tmp_path / "a", tmp_path / "b", offload).args()
    with pytest.raises(realpath.RealPathError, match="packet or a byte limit"):
        validation.Setup(queue_packets=None)


# -- aggregation --------------------------------------------------------------------------

SPREAD = {
    "sim_throughput_min_mbps": 9.5,
    "sim_throughput_max_mbps": 10.5,
    "sim_qdelay_mean_min_ms": 90.0,
    "sim_qdelay_mean_max_ms": 110.0,
}


def _run(k: int, real_tput: float, real_qd: float, sim_tput: float = 10.0, sim_qd: float = 100.0):
    sim = {
        "throughput_mbps": sim_tput,
        "qdelay_mean_ms": sim_qd,
        "qdelay_p95_ms": 2 * sim_qd,
        "utilisation": 0.9,
    }
    real = dict(sim, throughput_mbps=real_tput, qdelay_mean_ms=real_qd, qdelay_p95_ms=2 * real_qd)
    return dict(validation.compare_row("cubic", "t", sim, real), run=k, emu_within_1ms=0.999)


def test_aggregate_reports_medians_ranges_and_the_difference_of_the_medians() -> None:
    runs = [_run(1, 10.4, 120.0), _run(2, 9.0, 104.0), _run(3, 10.2, 95.0, sim_tput=10.2)]
    row = validation_runs.aggregate("cubic", "t", "150KB", runs, SPREAD)
    assert row["runs"] == 3
    assert row["real_throughput_mbps"] == 10.2
    assert (row["real_throughput_min_mbps"], row["real_throughput_max_mbps"]) == (9.0, 10.4)
    assert row["sim_throughput_mbps"] == 10.0  # median of the aligned simulations
    assert row["real_qdelay_mean_ms"] == 104.0
    assert (row["real_qdelay_mean_min_ms"], row["real_qdelay_mean_max_ms"]) == (95.0, 120.0)
    assert row["throughput_diff"] == pytest.approx(0.02)
    assert row["throughput_diff_min"] == pytest.approx(-0.10)
    assert row["throughput_diff_max"] == pytest.approx(0.04)
    assert row["qdelay_mean_diff"] == pytest.approx(0.04)
    assert row["sim_throughput_spread_min"] == pytest.approx(-0.05)
    assert row["sim_qdelay_mean_spread_max"] == pytest.approx(0.10)
    assert row["throughput_ok"] and row["qdelay_ok"]
    assert row["real_in_sim_spread"]
    assert row["median_run"] == 3
    assert row["emu_within_1ms_min"] == 0.999


def test_acceptance_bounds_apply_to_the_kernels_own_schemes_only() -> None:
    # Medians 6 % and 12 % away: beyond 5 % / 10 %, within the BPF schemes' 10 % / 25 %.
    runs = [_run(k, 10.6, 112.0) for k in (1, 2, 3)]
    for scheme in ("cubic", "reno", "bbr"):
        row = validation_runs.aggregate(scheme, "t", "1000p", runs, SPREAD)
        assert (row["throughput_bound"], row["qdelay_bound"]) == (0.05, 0.10)
        assert not row["throughput_ok"] and not row["qdelay_ok"], scheme
    row = validation_runs.aggregate("vegas", "t", "1000p", runs, SPREAD)
    assert (row["throughput_bound"], row["qdelay_bound"]) == (0.10, 0.25)
    assert row["throughput_ok"] and row["qdelay_ok"]
    assert validation.bounds_for("cdg") == (
        validation.THROUGHPUT_TOLERANCE,
        validation.QDELAY_TOLERANCE,
    )


def test_aggregate_of_an_even_number_of_runs_and_of_none() -> None:
    runs = [_run(1, 10.0, 100.0), _run(2, 11.0, 100.0)]
    row = validation_runs.aggregate("reno", "t", "1000p", runs, SPREAD)
    assert row["real_throughput_mbps"] == 10.5
    assert row["median_run"] == 1  # the lower of two equally near runs
    assert row["throughput_diff"] == 0.05 and row["throughput_ok"]  # at the bound is within
    with pytest.raises(ValueError, match="no kernel run"):
        validation_runs.aggregate("reno", "t", "1000p", [], SPREAD)


def test_aggregate_with_nothing_simulated_is_not_agreement() -> None:
    runs = [_run(1, 1.0, 100.0, sim_tput=0.0)]
    row = validation_runs.aggregate("cubic", "t", "1000p", runs, SPREAD)
    assert math.isnan(row["throughput_diff"]) and not row["throughput_ok"]


# -- the driver, with faked kernel runs ---------------------------------------------------


class FakeKernel:
    """Stands in for ``validation.kernel_run`` and ``validation.simulated_spread``."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str, str | None, int | None, str]] = []
        self.spreads = 0

    def kernel_run(
        self, scheme: Any, trace: str, down: Path, up: Path, setup: Any, run_dir: Path
    ) -> dict[str, Any]:
        k = int(run_dir.name.removeprefix("run-"))
        self.runs.append((scheme.name, trace, setup.queue_packets, setup.queue_bytes, run_dir.name))
        # As cellcc-flow and cellcc-emu, which never write over an existing log.
        run_dir.mkdir(parents=True, exist_ok=True)
        if (run_dir / "timeseries.csv").exists():
            raise FileExistsError(run_dir / "timeseries.csv")
        (run_dir / "downlink.log").write_text("")
        series = pd.DataFrame(
            {
                "t_s": [0.0, 0.5, 1.0] * 2,
                "throughput_mbps": [9.0, 10.0, 11.0, 9.5, 10.5, 10.0],
                "qdelay_mean_ms": [50.0, 60.0, 70.0, 55.0, 65.0, 60.0],
                "capacity_mbps": [12.0] * 6,
                "side": ["simulator"] * 3 + ["kernel"] * 3,
            }
        )
        series.to_csv(run_dir / "timeseries.csv", index=False)
        record = _run(k, 10.0 + 0.1 * k, 100.0 - k)
        return record | {"scheme": scheme.name, "trace": trace, "start_ms": 21 + k}

    def spread(self, scheme: Any, down: Path, up: Path, setup: Any) -> dict[str, float]:
        self.spreads += 1
        return dict(SPREAD)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    kernel = FakeKernel()
    monkeypatch.setattr(validation, "kernel_run", kernel.kernel_run)
    monkeypatch.setattr(validation, "simulated_spread", kernel.spread)
    monkeypatch.setattr(realpath, "missing_requirements", lambda *, bpf: [])
    return kernel


@pytest.fixture
def boston(tmp_path: Path) -> Path:
    """A traces directory with two pairs."""
    directory = tmp_path / "mahimahi"
    directory.mkdir()
    trace = constant_trace(tmp_path, 12.0, seconds=2).read_text()
    for name in ("A", "B"):
        (directory / f"{name}.down").write_text(trace)
        (directory / f"{name}.up").write_text(trace)
    return directory


def _validate(boston: Path, out: Path, **kwargs: Any) -> pd.DataFrame:
    options: dict[str, Any] = {
        "traces_dir": boston,
        "out_dir": out,
        "setup": validation.Setup(duration_s=2.0),
        "buffers": parse_buffers("150KB,1000p"),
        "runs": 3,
    }
    return validation_runs.validate(["cubic", "reno"], ["A", "B"], **(options | kwargs))


def test_every_run_is_its_own_file_and_the_table_has_a_row_per_pair(
    fake: FakeKernel, boston: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    messages: list[str] = []
    table = _validate(boston, out, progress=messages.append)
    assert len(fake.runs) == 2 * 2 * 2 * 3 and fake.spreads == 8
    assert len(messages) == 2 * 2 * 2 * (3 + 1)
    assert {(q, b) for _, _, q, b, _ in fake.runs} == {(None, 150_000), (1000, None)}
    # In rounds: run 1 of all eight pairs, then run 2 of all, then run 3.
    assert [d for *_, d in fake.runs] == ["run-1"] * 8 + ["run-2"] * 8 + ["run-3"] * 8
    assert list(table["buffer"].unique()) == ["150KB", "1000p"]
    assert len(table) == 8 and set(table["runs"]) == {3}
    row = table[(table["buffer"] == "150KB") & (table["scheme"] == "cubic")].iloc[0]
    assert row["real_throughput_mbps"] == pytest.approx(10.2)
    assert row["real_throughput_min_mbps"] == pytest.approx(10.1)
    record = json.loads((out / "runs/150KB/cubic--A/run-2.json").read_text())
    assert record["buffer"] == "150KB" and record["run"] == 2
    assert record["setup"]["queue_bytes"] == 150_000 and record["setup"]["queue_packets"] is None
    assert (out / "runs/1000p/reno--B/sim-spread.json").is_file()
    assert len(pd.read_csv(out / "runs.csv")) == 24
    assert len(pd.read_csv(out / "validation.csv")) == 8
    text = (out / "validation.md").read_text()
    assert "#### Drop-tail 150000 bytes each way (150KB)" in text
    assert "#### Drop-tail 1000 packets each way (1000p)" in text
    assert "| cubic | A | 3 | 10.20 (10.10–10.30) |" in text
    assert "](plots/delta-150KB.png)" in text
    for name in ("delta-150KB.png", "delta-1000p.png", "overview-1000p-qdelay_mean_ms.png"):
        assert (out / "plots" / name).stat().st_size > 0
    assert (out / "plots/150KB/cubic--A.png").is_file()
    assert "delta-1000p.png" in (out / "index.html").read_text()


def test_resume_runs_only_what_is_missing_or_cut_short(
    fake: FakeKernel, boston: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _validate(boston, out)
    fake.runs.clear()
    fake.spreads = 0
    (out / "runs/150KB/cubic--A/run-2.json").unlink()
    # A run killed mid-write: a truncated file (a full disk, an older writer) and the
    # atomic writer's temporary file; neither is a finished run.
    cut = out / "runs/1000p/reno--B/run-3.json"
    cut.write_text(cut.read_text()[:40])
    (out / "runs/1000p/reno--B/.run-1.json.x1y2.tmp").write_text("{")
    # A file that parses but lacks what a finished run writes.
    partial = out / "runs/1000p/cubic--B/run-1.json"
    partial.write_text(json.dumps({"scheme": "cubic", "trace": "B"}))
    table = _validate(boston, out)
    assert sorted((s, t, d) for s, t, _, _, d in fake.runs) == [
        ("cubic", "A", "run-2"),
        ("cubic", "B", "run-1"),
        ("reno", "B", "run-3"),
    ]
    assert fake.spreads == 0
    assert len(table) == 8 and set(table["runs"]) == {3}
    assert json.loads(cut.read_text())["run"] == 3

    # Everything done: the table and report are rebuilt without the real path.
    def no_real_path(*, bpf: bool) -> list[str]:
        raise AssertionError("the requirements were checked with nothing to run")

    monkeypatch.setattr(realpath, "missing_requirements", no_real_path)
    fake.runs.clear()
    _validate(boston, out)
    assert fake.runs == []


def test_remeasure_recomputes_finished_runs_from_their_logs_and_keeps_the_kernel_runs(
    fake: FakeKernel, boston: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    _validate(boston, out)
    fake.runs.clear()
    fake.spreads = 0
    measured: list[tuple[str, str, str]] = []

    def measure_run(
        scheme: Any, trace: str, down: Path, up: Path, setup: Any, run_dir: Path
    ) -> dict[str, Any]:
        assert (run_dir / "downlink.log").is_file()
        measured.append((scheme.name, trace, run_dir.name))
        k = int(run_dir.name.removeprefix("run-"))
        record = _run(k, 10.0 + 0.1 * k, 100.0 - k, sim_tput=12.0)
        return record | {"scheme": scheme.name, "trace": trace, "start_ms": 1096}

    monkeypatch.setattr(validation, "measure_run", measure_run)
    table = _validate(boston, out, remeasure=True)
    assert fake.runs == [] and len(measured) == 24 and fake.spreads == 8
    assert set(table["sim_throughput_mbps"]) == {12.0}
    record = json.loads((out / "runs/1000p/reno--B/run-3.json").read_text())
    assert record["start_ms"] == 1096 and record["run"] == 3 and record["buffer"] == "1000p"

    # A finished run whose logs are gone cannot be measured again: named, not guessed.
    (out / "runs/150KB/cubic--A/run-2/downlink.log").unlink()
    with pytest.raises(realpath.RealPathError, match=r"cubic--A/run-2: the run's logs"):
        _validate(boston, out, remeasure=True)


def test_the_window_starts_at_the_first_data_packet_not_the_handshake() -> None:
    """The kernel's downlink log opens with a set-up packet (52 bytes), the SYN (64) and,
    where the uplink's first opportunity comes late, the SYN again; the flow's data comes
    a second later on Verizon-EVDO-driving."""
    from cellcc import mmlog

    lines = ["24 + 52", "26 + 64", "94 - 52 70", "94 - 64 68", "1031 + 64", "1039 - 64 8"]
    lines += [f"{1096 + i} + 1504" for i in range(20)]
    lines += [f"{1100 + i} - 1504 {4}" for i in range(20)]
    log = mmlog.parse("\n".join(sorted(lines, key=lambda x: int(x.split()[0]))) + "\n")
    assert validation.first_data_ms(log) == 1096
    summary, _ = validation.measure(log, 1.0)
    assert summary["packets"] == 20
    with pytest.raises(realpath.RealPathError, match="no data packet"):
        validation.first_data_ms(mmlog.parse("24 + 52\n26 + 64\n"))
    # The simulation is aligned on the SYN (the first 64-byte arrival), not on the
    # namespaces' 52-byte packet before it.
    assert validation.syn_ms(log) == 26
    with pytest.raises(realpath.RealPathError, match="no SYN reached the link"):
        validation.syn_ms(mmlog.parse("24 + 52\n1096 + 1504\n"))


@pytest.mark.usefixtures("native")
def test_an_aligned_simulation_whose_handshake_ends_late_is_run_once_more(
    tmp_path: Path,
) -> None:
    """A kernel log whose data follows its SYN by 4 ms, sooner than any simulated
    handshake over 20 ms each way: the simulation is run again, longer, once, and its
    window starts at its own first data packet."""
    from cellcc import mmlog

    trace = constant_trace(tmp_path, 12.0, seconds=2)
    lines = ["26 + 64"] + [f"{30 + i} + 1504" for i in range(10)]
    real_log = mmlog.parse("\n".join(lines) + "\n")
    setup = validation.Setup(duration_s=1.0)
    _, sim, _ = validation.simulate_aligned(
        validation.SCHEMES["cubic"], trace, trace, setup, real_log
    )
    # The SYN reaches the link at 26 ms; the SYN-ACK comes back over the uplink and its
    # 20 ms delay, and the data crosses the 20 ms downlink delay: 68 ms, after the
    # kernel's 30.
    assert sim["start_ms"] == 68
    # Run again for the 38 ms its handshake took longer, the simulation covers the window
    # to within the 20 ms its SYN leads on the link (11.77 Mbit/s of the 12.0 offered); the
    # first run alone stopped 58 ms short (11.3).
    assert sim["capacity_mbps"] == pytest.approx(11.767, abs=0.01)


def test_resume_refuses_runs_made_with_another_setup(
    fake: FakeKernel, boston: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    _validate(boston, out, runs=1)
    with pytest.raises(realpath.RealPathError, match=r"run-1.json was made with .*--force"):
        _validate(boston, out, runs=1, setup=validation.Setup(duration_s=3.0))
    fake.runs.clear()
    _validate(boston, out, runs=1, setup=validation.Setup(duration_s=3.0), force=True)
    assert len(fake.runs) == 8
    # A record from before the offload setting was made with the emulator's offloads on.
    run_file = next(out.glob("runs/*/*/run-1.json"))
    record = json.loads(run_file.read_text())
    del record["setup"]["offload"]
    run_file.write_text(json.dumps(record))
    keys = ("scheme",)
    on = validation.Setup(duration_s=3.0, offload=True)
    assert load_finished(run_file, keys, Buffer.from_setup(on).setup(on)) is not None
    with pytest.raises(realpath.RealPathError, match="was made with"):
        load_finished(run_file, keys, validation.Setup(duration_s=3.0))


def test_runs_must_be_at_least_one(fake: FakeKernel, boston: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--runs: at least 1"):
        _validate(boston, tmp_path / "out", runs=0)


def test_requirements_are_checked_before_any_run(
    boston: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(realpath, "missing_requirements", lambda *, bpf: ["no TUN here"])
    monkeypatch.setattr(validation, "kernel_run", pytest.fail)
    with pytest.raises(realpath.RealPathError, match="cannot validate here: no TUN here"):
        _validate(boston, tmp_path / "out")


# -- the generated docs section -----------------------------------------------------------

DOC = f"""# Validation

Hand-written text.

{validation_report.BEGIN}
old table
{validation_report.END}

More hand-written text.
"""


def test_replace_section_keeps_everything_outside_the_markers() -> None:
    new = validation_report.replace_section(DOC, "new table\n", where="doc.md")
    before, after = DOC.split(validation_report.BEGIN)[0], DOC.split(validation_report.END)[1]
    assert new == f"{before}{validation_report.BEGIN}\nnew table\n{validation_report.END}{after}"
    assert validation_report.replace_section(new, "new table\n", where="doc.md") == new


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("# no markers\n", "found 0 and 0"),
        (DOC.replace(validation_report.END, ""), "found 1 and 0"),
        (DOC + validation_report.BEGIN, "found 2 and 1"),
        (f"{validation_report.END}\n{validation_report.BEGIN}\n", "comes before"),
    ],
)
def test_replace_section_needs_one_pair_of_markers_in_order(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=r"^doc\.md: ") as info:
        validation_report.replace_section(text, "x", where="doc.md")
    assert needle in str(info.value)


def test_docs_section_and_figures_are_written_by_the_command(
    fake: FakeKernel, boston: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "docs" / "validation.md"
    doc.parent.mkdir()
    doc.write_text(DOC)
    _validate(boston, tmp_path / "out", docs=doc, command="cellcc validate --preset broad")
    text = doc.read_text()
    assert text.startswith("# Validation\n\nHand-written text.\n\n")
    assert text.endswith(f"{validation_report.END}\n\nMore hand-written text.\n")
    assert "old table" not in text
    assert "Generated by `cellcc validate --preset broad`" in text
    assert "](validation/delta-150KB.png)" in text and "](validation/delta-1000p.png)" in text
    assert (doc.parent / "validation" / "delta-150KB.png").stat().st_size > 0
    assert "8 pairs within both bounds" not in text  # counted per buffer
    assert text.count("of 4 pairs within both bounds.") == 2


def test_docs_without_markers_fail_before_any_run(
    fake: FakeKernel, boston: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "validation.md"
    doc.write_text("# Validation\n")
    with pytest.raises(UsageError, match="validate:begin"):
        _validate(boston, tmp_path / "out", docs=doc)
    assert fake.runs == []
    assert doc.read_text() == "# Validation\n"


def test_repository_doc_has_the_markers() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "validation.md"
    validation_report.check_docs(doc)


# -- traces -------------------------------------------------------------------------------

IRISH_HEADER = "Timestamp,NetworkMode,DL_bitrate,UL_bitrate"


def _irish_csv(path: Path, rates_kbps: list[int]) -> Path:
    rows = [IRISH_HEADER] + [
        f"2020.02.14_13.21.{i:02d},5G,{rate},10" for i, rate in enumerate(rates_kbps)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n")
    return path


def test_irish_conversion_cuts_the_idle_lead_in_and_adds_a_constant_uplink(
    tmp_path: Path,
) -> None:
    source = tmp_path / "irl"
    # The logger's readings before the download: low, not zero (as in the shared files).
    _irish_csv(source / "Download" / "Static" / "x.csv", [63, 2, 800, 24_000, 12_000, 12_000])
    spec = validation_runs.IrishTrace("Static/x.csv", uplink_mbps=12.0)
    pair = validation_runs.convert_irish("irl", spec, source, tmp_path / "out" / "traces")
    down = traces.read_timestamps(pair.down)
    # 24 Mbit/s is two lines per ms from the first millisecond of the first busy second
    # (the lead-in's lines go with it; what it carries over is less than a line).
    assert list(down[:4]) == [1, 1, 2, 2]
    assert down[-1] == 3000 and len(down) == 2000 + 1000 + 1000
    up = traces.read_timestamps(pair.up)
    assert list(up) == list(range(1, 3001))  # 12 Mbit/s: one line per ms, same period
    note = json.loads((tmp_path / "out" / "traces" / "irl.json").read_text())
    assert note["lead_in_cut_s"] == 3 and note["uplink_mbps"] == 12.0
    assert sorted(p.name for p in (tmp_path / "out" / "traces").iterdir()) == [
        "irl.down",
        "irl.json",
        "irl.up",
        "irl.up.rates",
    ]


def test_irish_source_missing_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(realpath.RealPathError, match="traces download ireland-5g-2020"):
        validation_runs.resolve_traces(
            ["Ireland-5G-static"],
            traces_dir=tmp_path / "mahimahi",
            irish_dir=None,
            out_dir=tmp_path,
        )


def test_broad_preset_is_every_boston_pair_and_the_irish_trace(
    shared_traces: Path, tmp_path: Path
) -> None:
    mahimahi = shared_traces / "mahimahi"
    with_both = {p.stem for p in mahimahi.glob("*.down") if p.with_suffix(".up").is_file()}
    assert with_both == set(validation_runs.BOSTON_PAIRS)
    preset = validation_runs.PRESETS["broad"]
    assert len(preset["traces"]) >= 6 + 1
    assert list(preset["schemes"]) == list(validation.DEFAULT_SCHEMES)
    assert parse_buffers(preset["buffers"]) == [Buffer(bytes=150_000), Buffer(packets=1000)]
    pairs = validation_runs.resolve_traces(
        preset["traces"], traces_dir=mahimahi, irish_dir=None, out_dir=tmp_path
    )
    assert [p.name for p in pairs] == list(preset["traces"])
    irish = pairs[-1]
    assert irish.down.parent == tmp_path / "traces"  # converted into the output only
    note = json.loads((tmp_path / "traces" / f"{irish.name}.json").read_text())
    assert note["lead_in_cut_s"] == 6.0
    _, capacity = traces.capacity_mbps(traces.read_timestamps(irish.down), bin_ms=1000)
    assert capacity[0] > 15.0  # the download starts in the first second
    assert 12.0 < capacity[:30].mean() < 24.0  # suits a 30 s run (measured: 18 Mbit/s)


# -- the command --------------------------------------------------------------------------


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The arguments ``cellcc validate`` passes to the library, which returns a table."""
    seen: dict[str, Any] = {}

    def fake_validate(schemes: Any, trace_names: Any, **kwargs: Any) -> pd.DataFrame:
        seen.update(kwargs, schemes=list(schemes), traces=list(trace_names))
        return pd.DataFrame([_run(1, 10.0, 100.0) | {"buffer": "1000p", "runs": 1}])

    monkeypatch.setattr(validation_runs, "validate", fake_validate)
    return seen


def _invoke(*args: str) -> Any:
    from cellcc.cli import app

    return CliRunner().invoke(app, ["validate", *args])


def test_preset_broad_fills_what_is_not_given(captured: dict[str, Any], tmp_path: Path) -> None:
    result = _invoke("--preset", "broad", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert captured["schemes"] == list(validation.DEFAULT_SCHEMES)
    assert captured["traces"] == [*validation_runs.BOSTON_PAIRS, "Ireland-5G-static"]
    assert [b.label for b in captured["buffers"]] == ["150KB", "1000p"]
    assert captured["runs"] == 3
    assert captured["command"].startswith("cellcc validate --preset broad")

    result = _invoke(
        "--preset", "broad", "--schemes", "cubic", "--runs", "2", "--traces", "A", "--queue", "50"
    )
    assert result.exit_code == 0, result.output
    assert captured["schemes"] == ["cubic"] and captured["traces"] == ["A"]
    assert captured["runs"] == 2 and captured["buffers"] == [Buffer(packets=50)]


def test_without_a_preset_the_defaults_are_one_run_on_the_queue(
    captured: dict[str, Any],
) -> None:
    result = _invoke("--queue", "300")
    assert result.exit_code == 0, result.output
    assert captured["runs"] == 1 and captured["buffers"] == [Buffer(packets=300)]
    assert captured["docs"] is None


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--buffers", "150kb"), ("--buffers", "'150kb' is not a buffer")),
        (("--buffers", "150KB", "--queue", "50"), ("--buffers and --queue",)),
        (("--preset", "wide"), ("--preset", "unknown preset 'wide'", "broad")),
        (("--force", "--remeasure"), ("--force", "--remeasure")),
    ],
)
def test_command_errors_name_the_option(
    captured: dict[str, Any], args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    assert_one_line_error(_invoke(*args), *needles)
    assert captured == {}


def test_diagnostics_say_where_the_two_sides_part(tmp_path: Path) -> None:
    t = [0.0, 0.5, 5.0, 5.5, 6.0]
    real = pd.DataFrame(
        {
            "t_s": t,
            "throughput_mbps": [10.0, 10.0, 0.5, 10.0, 10.0],
            "capacity_mbps": [10.0] * 5,
            "qdelay_mean_ms": [20.0, 40.0, 0.0, 50.0, 50.0],
        }
    )
    sim = real.assign(throughput_mbps=[10.0] * 5, qdelay_mean_ms=[30.0, 30.0, 50.0, 50.0, 50.0])
    row = validation.diagnostics(real, sim)
    # First 5 s: kernel 30 ms (packet-weighted), simulator 30 ms. After: the kernel's
    # stalled bin (0.5 of 20.5 Mbit/s-bins) weighs in with its 0 ms.
    assert row["qdelay_diff_first_5s"] == pytest.approx(0.0)
    assert row["qdelay_diff_after_5s"] == pytest.approx(1000 / 20.5 / 50 - 1)
    assert row["real_stall_s"] == 0.5 and row["sim_stall_s"] == 0.0
    info = tmp_path / "tcp_info.csv"
    states = [4, 0, 4, 4, 3, 0, 4]
    # In flight as tcp_packets_in_flight counts it: unacked, less SACKed and lost, plus
    # retransmitted; after an RTO marks everything lost, far below unacked.
    rows = [(0, 4, 10, 0, 10, 1), (1, 0, 20, 2, 0, 0), (2, 4, 60, 0, 55, 5), (3, 4, 54, 0, 50, 8)]
    rows += [(4, 3, 30, 4, 1, 1), (5, 0, 12, 0, 0, 0), (6, 4, 9, 0, 9, 0)]
    assert [r[1] for r in rows] == states
    info.write_text(
        "t_ns,ca_state,unacked,sacked,lost,retrans_out\n"
        + "".join(",".join(map(str, r)) + "\n" for r in rows)
    )
    assert validation.kernel_sender(info) == {
        "real_rtos": 3.0,
        "real_unacked_max": 60.0,
        "real_inflight_max": 26.0,
    }
    # Older logs without the loss columns keep the unacked maximum only.
    info.write_text("t_ns,ca_state,unacked\n0,0,7\n")
    assert math.isnan(validation.kernel_sender(info)["real_inflight_max"])
    assert "real_rwnd_limited_s" not in validation.kernel_sender(info)
    # The chronographs are cumulative: the last sample holds the run's totals.
    info.write_text(
        "t_ns,ca_state,unacked,rwnd_limited_us,sndbuf_limited_us\n"
        "0,0,7,0,0\n1,0,7,84000,1000\n2,0,7,3540000,2000\n"
    )
    row = validation.kernel_sender(info)
    assert row["real_rwnd_limited_s"] == 3.54 and row["real_sndbuf_limited_s"] == 0.002


def test_the_report_lists_each_miss_with_its_diagnostics() -> None:
    base = {
        "scheme": "cubic", "trace": "A", "buffer": "150KB", "runs": 3,
        "throughput_ok": True, "qdelay_ok": True, "throughput_diff": 0.01,
        "qdelay_mean_diff": 0.02, "qdelay_diff_first_5s": 0.3, "qdelay_diff_after_5s": 0.01,
        "real_rtos": 0.0, "sim_rtos": 0.0, "real_stall_s": 0.0, "sim_stall_s": 0.0,
    }  # fmt: skip
    missed = base | {"trace": "B", "qdelay_ok": False, "qdelay_mean_diff": -0.18,
                     "real_rtos": 2.0, "sim_rtos": 1.0, "real_stall_s": 4.5,
                     "real_unacked_max": 2125.0, "real_inflight_max": 2100.0,
                     "sim_inflight_max": 2476.0, "real_rwnd_limited_s": 3.54,
                     "sim_rwnd_limited_s": 0.7}  # fmt: skip
    assert validation_report.misses_table(pd.DataFrame([base])) == ""
    ranges = {
        f"{side}_{m}_{end}_{u}": 1.0
        for side in ("real", "sim")
        for m, u in (("throughput", "mbps"), ("qdelay_mean", "ms"))
        for end in ("min", "max")
    }
    plain = base | ranges | {"real_throughput_mbps": 1.0, "sim_throughput_mbps": 1.0}
    plain |= {"real_qdelay_mean_ms": 1.0, "sim_qdelay_mean_ms": 1.0}
    plain |= {"throughput_bound": 0.05, "qdelay_bound": 0.1}
    table = validation_report.markdown_table(pd.DataFrame([plain, plain | missed]))
    rows = table.splitlines()[2:]
    assert "✗" not in rows[0] and rows[1].count("✗") == 1 and "−18.0 % ✗" in rows[1]
    text = validation_report.misses_table(pd.DataFrame([base, missed]))
    assert text.count("\n") == 3
    assert (
        "| cubic | B | +1.0 % | −18.0 % | +30.0 % | +1.0 % | 2 / 1 | 4.5 / 0 | 2100 / 2476 "
        "| 3.54 / 0.70 |" in text
    )
