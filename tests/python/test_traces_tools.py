"""Trace tools: rate → trace conversion, Irish 5G CSVs, scaling, plotting, synthetic
models through the core, and downloads against a local mirror."""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import socket
import threading
import zipfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cellcc import TraceError, UsageError, api, traces
from cellcc.cli import app
from cellcc.trace_sources import IRELAND_5G_2020, MAHIMAHI, SETS

runner = CliRunner()


def invoke(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def read_trace(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


# -- rates → timestamps ----------------------------------------------------------------


def test_constant_rate_gives_one_line_per_millisecond():
    # 12 Mbit/s = 12 000 bits per ms = exactly one 1500-byte line per ms.
    stamps = traces.timestamps_from_rates(np.full(1000, 12_000_000))
    assert stamps.tolist() == list(range(1, 1001))


def test_carry_is_exact_and_the_trace_ends_at_its_length():
    # 1 Mbit/s: 1000 bits per ms; the k-th line completes when k·12 000 bits have
    # accumulated, at ms 12k, so lines sit at 12, 24, ..., 996 (83 lines = ⌊10^6/12 000⌋);
    # the last ms has none, so one line is added at 1000.
    stamps = traces.timestamps_from_rates(np.full(1000, 1_000_000))
    assert stamps.tolist() == [12 * k for k in range(1, 84)] + [1000]


def test_zero_rate_tail_and_all_zero_traces_are_valid():
    stamps = traces.timestamps_from_rates(np.r_[np.full(500, 12_000_000), np.zeros(500)])
    assert stamps.tolist() == [*range(1, 501), 1000]
    assert traces.timestamps_from_rates(np.zeros(250, dtype=np.int64)).tolist() == [250]


def test_rate_intervals(tmp_path):
    path = write(
        tmp_path / "rates.txt",
        "# t_s rate_mbps\n0 12\n\n2, 24  # doubled\n3\t0\n",
    )
    per_ms = traces.rate_intervals_per_ms(path)
    # The last interval (rate 0) is as long as the one before it (1 s): 4 s in all.
    assert len(per_ms) == 4000
    stamps = traces.timestamps_from_rates(per_ms)
    expected = [*range(1, 2001), *np.repeat(np.arange(2001, 3001), 2).tolist(), 4000]
    assert stamps.tolist() == expected
    assert len(traces.rate_intervals_per_ms(path, duration_s=3.5)) == 3500
    with pytest.raises(UsageError, match="--duration: 2 s ends before"):
        traces.rate_intervals_per_ms(path, duration_s=2.0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0 12\n0 5\n", r"rates\.txt:2: column 1 \(t_s\): 0 is not after"),
        ("0 12\n1 fast\n", r"rates\.txt:2: column 2 \(rate_mbps\): expected a non-negative"),
        ("0 12 3\n", r"rates\.txt:1: expected two columns"),
        ("-1 12\n", r"rates\.txt:1: column 1 \(t_s\)"),
        ("# nothing\n", r"rates\.txt: no 't_s rate_mbps' lines"),
        ("0 1\n0.0004 2\n", r"rates\.txt:1: the interval starting here is shorter than 1 ms"),
    ],
)
def test_rate_interval_errors_name_file_line_and_column(tmp_path, text, match):
    path = write(tmp_path / "rates.txt", text)
    with pytest.raises(TraceError, match=match):
        traces.rate_intervals_per_ms(path)


# -- Irish 5G CSV ------------------------------------------------------------------------

HEADER = "Timestamp,Longitude,DL_bitrate,UL_bitrate\n"


def test_irish_csv_rows_take_one_second_each_and_gaps_hold(tmp_path):
    path = write(
        tmp_path / "B.csv",
        HEADER
        + "2019.12.14_10.00.00,1,1000,1\n"
        + "2019.12.14_10.00.01,1,2000,2\n"
        + "2019.12.14_10.00.01,1,3000,3\n"  # second 1 taken: moves to second 2
        + "2019.12.14_10.00.03,1,-,4\n"  # no DL reading: second 3 holds 3000
        + "2019.12.14_10.00.05,1,500,5\n",  # second 4 holds 3000
    )
    series = traces.read_irish_csv(path)
    assert series.rates_bps.tolist() == [1e6, 2e6, 3e6, 3e6, 3e6, 5e5]
    assert (series.moved_rows, series.merged_rows, series.held_seconds) == (1, 0, 2)
    assert (series.no_reading_rows, series.largest_gap_s) == (1, 2)
    uplink = traces.read_irish_csv(path, column="UL_bitrate")
    assert uplink.rates_bps.tolist() == [1000, 2000, 3000, 4000, 4000, 5000]


def test_irish_csv_three_rows_in_one_second(tmp_path):
    path = write(
        tmp_path / "B.csv",
        HEADER
        + "2019.12.14_10.00.00,1,1000,1\n"
        + "2019.12.14_10.00.00,1,2000,1\n"  # → second 1
        + "2019.12.14_10.00.00,1,4000,1\n"  # 2 s late: averaged into second 1
        + "2019.12.14_10.00.02,1,8000,1\n",
    )
    series = traces.read_irish_csv(path)
    assert series.rates_bps.tolist() == [1e6, 3e6, 8e6]
    assert (series.moved_rows, series.merged_rows) == (1, 1)


def test_irish_csv_conversion_preserves_bytes(tmp_path):
    path = write(
        tmp_path / "B.csv",
        HEADER + "".join(f"2019.12.14_10.00.{s:02d},1,{1200 * (s + 1)},1\n" for s in range(10)),
    )
    report = traces.convert(path, tmp_path / "B.down")
    # 1.2 + 2.4 + ... + 12 Mbit/s for one second each = 66 Mbit = 5500 lines of 12 000 bits.
    assert report.kind == "irish-csv" and report.duration_s == 10.0
    stamps = read_trace(tmp_path / "B.down")
    assert len(stamps) == 5500 and stamps[-1] == 10_000 and stamps[0] >= 1
    # Second s carries 0.1·(s+1) lines per ms: second 0 has 100 lines.
    assert sum(1 for t in stamps if t <= 1000) == 100


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("2019.12.14 10:00:00,1,5,1\n", r"B\.csv:2: column Timestamp: expected a time such as"),
        ("2019.12.14_10.00.00,1,fast,1\n", r"B\.csv:2: column DL_bitrate: expected a rate"),
        ("2019.12.14_10.00.00,1,-3,1\n", r"B\.csv:2: column DL_bitrate"),
        ("2019.12.14_10.00.00,1,5\n", r"B\.csv:2: expected 4 comma-separated fields, found 3"),
        (
            "2019.12.14_10.00.05,1,5,1\n2019.12.14_10.00.04,1,5,1\n",
            r"B\.csv:3: column Timestamp: 2019\.12\.14_10\.00\.04 is earlier",
        ),
        (
            "2019.12.14_10.00.00,1,5,1\n2019.12.14_10.01.00,1,5,1\n",
            r"B\.csv:3: column Timestamp: 60 s without a row",
        ),
        ("", r"B\.csv: no data rows"),
    ],
)
def test_irish_csv_errors_name_file_line_and_column(tmp_path, body, match):
    path = write(tmp_path / "B.csv", HEADER + body)
    with pytest.raises(TraceError, match=match):
        traces.read_irish_csv(path)


def test_irish_csv_missing_column_and_empty_file(tmp_path):
    path = write(tmp_path / "B.csv", HEADER + "2019.12.14_10.00.00,1,5,1\n")
    with pytest.raises(TraceError, match=r"B\.csv:1: no column 'RSRP_bitrate'; the header has"):
        traces.read_irish_csv(path, column="RSRP_bitrate")
    with pytest.raises(TraceError, match=r"E\.csv:1: the file is empty"):
        traces.read_irish_csv(write(tmp_path / "E.csv", ""))


def test_convert_cli_reports_and_errors(tmp_path):
    good = write(tmp_path / "B.csv", HEADER + "2019.12.14_10.00.00,1,12000,1\n")
    result = invoke("traces", "convert", good, "-o", tmp_path / "B.down")
    assert result.exit_code == 0, result.output
    assert "1,000 lines, 1 s, mean 12.000 Mbit/s (irish-csv)" in result.stdout
    bad = write(tmp_path / "Bad.csv", HEADER + "2019.12.14_10.00.00,1,12 Mbit,1\n")
    result = invoke("traces", "convert", bad, "-o", tmp_path / "x.down")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "Bad.csv:2: column DL_bitrate" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "x.down").exists()
    result = invoke("traces", "convert", tmp_path / "absent.csv", "-o", tmp_path / "y.down")
    assert result.exit_code == 2 and "absent.csv: no such file" in result.stderr
    result = invoke("traces", "convert", good, "-o", tmp_path / "z", "--format", "xml")
    assert result.exit_code == 2 and "--format: expected auto, irish-csv or rates" in result.stderr


# -- scaling ----------------------------------------------------------------------------


def test_scale_worked_examples():
    stamps = np.array([1, 1, 3, 5])
    assert traces.scale_timestamps(stamps, Fraction(3)).tolist() == [1] * 6 + [3] * 3 + [5] * 3
    # ×1/2: cumulative counts 2, 2, 3, 4 at ms 1, 3, 4, 5 → ⌊·/2⌋ = 1, 1, 1, 2.
    assert traces.scale_timestamps(stamps, Fraction(1, 2)).tolist() == [1, 5]
    # ×1/3: ⌊4/3⌋ = 1 line, at ms 3 where the cumulative count reaches 3; plus the period.
    assert traces.scale_timestamps(stamps, Fraction(1, 3)).tolist() == [3, 5]


def test_scale_total_is_exact_for_random_traces():
    rng = np.random.default_rng(5)
    for _ in range(20):
        stamps = np.sort(rng.integers(0, 5000, size=rng.integers(1, 3000)))
        stamps[-1] = max(int(stamps[-1]), 1)
        for factor in (Fraction(3), Fraction(7, 10), Fraction(1, 3), Fraction("2.5")):
            scaled = traces.scale_timestamps(stamps, factor)
            expected = len(stamps) * factor.numerator // factor.denominator
            assert len(scaled) - expected in (0, 1)  # +1 only for the period line
            assert scaled[-1] == stamps[-1]
            assert (np.diff(scaled) >= 0).all()


@pytest.mark.parametrize("text", ["abc", "0", "-2", "1/0"])
def test_bad_factor_names_the_option(text):
    with pytest.raises(UsageError, match="--factor"):
        traces.parse_factor(text)


def test_scale_and_plot_cli_with_the_fake_core(tmp_path, fake_core):
    trace = write(tmp_path / "t.down", "1\n1\n3\n5\n")
    result = invoke("traces", "scale", trace, "--factor", "3", "-o", tmp_path / "t3.down")
    assert result.exit_code == 0, result.output
    assert read_trace(tmp_path / "t3.down") == [1] * 6 + [3] * 3 + [5] * 3
    assert "4 → 12 lines (×3)" in result.stdout
    result = invoke("traces", "scale", trace, "--factor", "fast", "-o", tmp_path / "x")
    assert result.exit_code == 2 and "--factor" in result.stderr
    png = tmp_path / "cap.png"
    result = invoke("traces", "plot", trace, tmp_path / "t3.down", "--out", png, "--bin-ms", 2)
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = invoke("traces", "plot", tmp_path / "absent.down")
    assert result.exit_code == 2 and "absent.down: no such trace file" in result.stderr


def test_capacity_bins():
    t, mbps = traces.capacity_mbps(np.array([1, 1, 2, 1500]), bin_ms=1000)
    # Bin 0 holds the lines at 1, 1, 2 (3 lines in 1 s); bin 1 the line at 1500 (0.5 s).
    assert t.tolist() == [0.0, 1.0]
    assert mbps.tolist() == pytest.approx([0.036, 0.024])


# -- synthetic models -------------------------------------------------------------------


def test_synth_model_cli_builds_the_core_configuration(tmp_path, fake_core):
    out = tmp_path / "m.down"
    result = invoke(
        "traces", "synth", "--model", "mobility", "--speed-kmh", 200, "--seed", 4,
        "--param", "shadowing_sigma_db=8", "--param", "path_loss=free_space",
        "--duration", 2, "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    call = fake_core.calls[-1]
    assert call["seed"] == 4
    assert call["synth"] == {
        "model": "mobility",
        "speed_kmh": 200.0,
        "shadowing_sigma_db": 8,
        "path_loss": "free_space",
        "duration_s": 2.0,
    }
    assert read_trace(out)[-1] == 2000


def test_synth_config_file_and_option_errors(tmp_path, fake_core):
    config = write(tmp_path / "steps.toml", 'model = "steps"\nbase_mbps = 24\nfactor = 4\n')
    result = invoke(
        "traces", "synth", "--model", "steps", "--config", config, "--direction", "down",
        "-o", tmp_path / "s.down",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert fake_core.calls[-1]["synth"] == {
        "model": "steps",
        "base_mbps": 24,
        "factor": 4,
        "direction": "down",
    }
    cases = [
        (["--model", "mobility", "--rate-mbps", 3], "--rate-mbps: not an option of --model"),
        (["lte-driving", "--model", "steps"], "give either a PRESET"),
        ([], "give a PRESET"),
        (["lte-driving", "--speed-kmh", 60], "--speed-kmh: only applies with --model"),
        (["--model", "wobbly"], "--model: expected one of: mobility, steps, constant"),
        (["--model", "steps", "--param", "oops"], "--param: expected KEY=VALUE"),
        (["--model", "constant", "--config", tmp_path / "no.toml"], "--config:"),
    ]
    for args, message in cases:
        result = invoke("traces", "synth", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.output


def test_synth_presets_still_work(tmp_path):
    result = invoke("traces", "synth", "lte-stationary", "--out-dir", tmp_path, "--duration", 2)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lte-stationary.down").is_file()
    assert (tmp_path / "lte-stationary.up").is_file()


@pytest.mark.usefixtures("native")
def test_synth_mobility_through_the_core_is_deterministic(tmp_path):
    paths = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        paths[name] = tmp_path / f"{name}.down"
        result = invoke(
            "traces", "synth", "--model", "mobility", "--speed-kmh", 200, "--seed", seed,
            "--duration", 10, "-o", paths[name],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    assert paths["a"].read_bytes() == paths["b"].read_bytes()
    assert paths["a"].read_bytes() != paths["c"].read_bytes()
    info = api.trace_info(paths["a"])
    assert info["duration_s"] == 10.0 and info["mean_mbps"] > 1.0
    result = invoke("traces", "synth", "--model", "mobility", "--param", "rx_antennas=0")
    assert result.exit_code == 2
    assert "synth mobility: rx_antennas: expected 1..=8, got 0" in result.stderr


@pytest.mark.usefixtures("native")
def test_synth_steps_through_the_core_has_the_requested_rates():
    stamps = traces.synthesize(
        {"model": "steps", "base_mbps": 24.064, "factor": 4, "direction": "down"}, seed=1
    )
    # 24.064 Mbit/s is two 1504-byte opportunities per ms; the second period is ÷4.
    assert int(stamps[-1]) == 38_000
    counts = np.bincount(stamps, minlength=38_001)
    assert (counts[1:17_001] == 2).all()
    assert counts[17_001:24_001].sum() == 7000 // 2
    with pytest.raises(UsageError, match="synth steps: missing field `base_mbps`"):
        traces.synthesize({"model": "steps"}, seed=1)


# -- real data --------------------------------------------------------------------------


def test_catalogue_matches_the_shared_traces(shared_traces):
    for trace_set in SETS.values():
        for item in trace_set.files:
            data = (shared_traces / item.dest).read_bytes()
            assert len(data) == item.size, item.dest
            assert hashlib.sha256(data).hexdigest() == item.sha256, item.dest


IRISH_SAMPLE = "ireland-5g-2020/Download/Driving/B_2019.12.14_10.16.30.csv"
ARCHIVE = "5G-production-dataset.zip"


@pytest.mark.usefixtures("native")
def test_irish_csv_to_cubic_end_to_end(shared_traces, tmp_path):
    source = shared_traces / IRISH_SAMPLE
    result = invoke("traces", "convert", source, "-o", tmp_path / "irl.down")
    assert result.exit_code == 0, result.output
    series = traces.read_irish_csv(source)
    info = api.trace_info(tmp_path / "irl.down")
    assert info["duration_s"] == len(series.rates_bps)
    run = api.simulate(
        {
            "name": "cubic-on-irish-5g",
            "duration_s": 30.0,
            "seed": 1,
            "downlink": {
                "trace": str(tmp_path / "irl.down"),
                "delay_ms": 10.0,
                "queue": {"kind": "droptail", "packets": 200},
            },
            "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
            "flows": [{"scheme": "cubic"}],
        }
    )
    flow = run.flows.iloc[0]
    # The link offers what the CSV says for its first 30 s (1504-byte opportunities).
    csv_mbps = series.rates_bps[:30].mean() / 1e6 * 1504 / 1500
    assert run.link["capacity_mbps"] == pytest.approx(csv_mbps, rel=0.01)
    assert flow["utilisation"] > 0.5
    assert flow["throughput_mbps"] > 0.5 * run.link["capacity_mbps"]


@pytest.mark.usefixtures("native")
def test_tripling_a_real_trace(shared_traces, tmp_path):
    source = shared_traces / "mahimahi" / "TMobile-LTE-short.down"
    out = tmp_path / "x3.down"
    result = invoke("traces", "scale", source, "--factor", 3, "-o", out)
    assert result.exit_code == 0, result.output
    before, after = api.trace_info(source), api.trace_info(out)
    assert after["opportunities"] == 3 * before["opportunities"]
    assert after["duration_s"] == before["duration_s"]
    assert after["mean_mbps"] == pytest.approx(3 * before["mean_mbps"])
    png = tmp_path / "both.png"
    assert invoke("traces", "plot", source, out, "--out", png).exit_code == 0
    assert png.stat().st_size > 10_000


# -- download ---------------------------------------------------------------------------


class _Mirror:
    """A local http.server holding the raw-GitHub layout of the catalogue."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                mirror.requests.append(self.path)

        handler = functools.partial(Handler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def path_of(self, trace_set, source: str) -> Path:
        return self.root / trace_set.repository / trace_set.commit / source

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def mirror(shared_traces, tmp_path) -> Iterator[_Mirror]:
    root = tmp_path / "mirror"
    for item in MAHIMAHI.files:
        target = root / MAHIMAHI.repository / MAHIMAHI.commit / item.source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_traces / item.dest, target)
    archive = root / IRELAND_5G_2020.repository / IRELAND_5G_2020.commit / ARCHIVE
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("5G-production-dataset/README.txt", "not a listed member\n")
        for item in IRELAND_5G_2020.files:
            zf.write(shared_traces / item.dest, item.source)
    server = _Mirror(root)
    yield server
    server.close()


def _no_partial_files(directory: Path) -> bool:
    return not [p for p in directory.rglob("*") if p.name.endswith(".part")]


def test_download_everything_then_skip_and_resume(mirror, shared_traces, tmp_path):
    dest = tmp_path / "traces"
    env = {"CELLCC_TRACE_MIRROR": mirror.url}
    result = invoke("traces", "download", "--dest", dest, env=env)
    assert result.exit_code == 0, result.output
    assert "34 downloaded, 0 already present" in result.stdout
    for trace_set in SETS.values():
        for item in trace_set.files:
            assert (dest / item.dest).read_bytes() == (shared_traces / item.dest).read_bytes()
    # 13 Mahimahi files and one archive for the 21 CSVs.
    assert len(mirror.requests) == 14
    assert _no_partial_files(dest)

    mirror.requests.clear()
    result = invoke("traces", "download", "--dest", dest, env=env)
    assert result.exit_code == 0, result.output
    assert "0 downloaded, 34 already present" in result.stdout
    assert mirror.requests == []

    # A missing file and a damaged one are fetched again, nothing else.
    (dest / "mahimahi/Verizon-LTE-short.up").unlink()
    (dest / "mahimahi/ATT-LTE-driving.up").write_bytes(b"1\n2\n")
    (dest / IRISH_SAMPLE).unlink()
    result = invoke("traces", "download", "--dest", dest, env=env)
    assert result.exit_code == 0, result.output
    assert "3 downloaded, 31 already present" in result.stdout
    assert "replaced" in result.stdout
    assert len(mirror.requests) == 3
    assert (dest / IRISH_SAMPLE).read_bytes() == (shared_traces / IRISH_SAMPLE).read_bytes()


def test_download_hash_mismatch_names_the_file_and_writes_nothing(mirror, tmp_path):
    item = MAHIMAHI.files[0]
    served = mirror.path_of(MAHIMAHI, item.source)
    data = served.read_bytes()  # the declared size, other contents
    served.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    dest = tmp_path / "traces"
    result = invoke(
        "traces", "download", "--set", "mahimahi", "--only", "ATT-LTE-driving-2016.down",
        "--dest", dest, "--mirror", mirror.url,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "ATT-LTE-driving-2016.down: sha256 mismatch" in result.stderr
    assert f"expected {item.sha256}" in result.stderr
    assert "Traceback" not in result.output
    assert not (dest / item.dest).exists()
    assert _no_partial_files(dest)


def test_download_archive_member_mismatch(mirror, tmp_path):
    archive = mirror.path_of(IRELAND_5G_2020, ARCHIVE)
    item = IRELAND_5G_2020.files[0]
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(item.source, "Timestamp,DL_bitrate\n")
    result = invoke(
        "traces", "download", "--set", "ireland-5g-2020", "--dest", tmp_path / "t",
        "--mirror", mirror.url,
    )  # fmt: skip
    assert result.exit_code == 2
    assert f"{Path(item.dest).name}: sha256 mismatch" in result.stderr
    assert not (tmp_path / "t" / item.dest).exists()
    archive.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    result = invoke(
        "traces", "download", "--set", "ireland-5g-2020", "--dest", tmp_path / "t",
        "--mirror", mirror.url,
    )  # fmt: skip
    assert result.exit_code == 2 and "is not a zip archive" in result.stderr


def test_download_network_failure_names_the_file(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on `port` any more.
    result = invoke(
        "traces", "download", "--set", "mahimahi", "--only", "TMobile-LTE-short.up",
        "--dest", tmp_path, "--mirror", f"http://127.0.0.1:{port}", "--timeout", 5,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "TMobile-LTE-short.up: cannot download http://127.0.0.1:" in result.stderr
    missing = invoke(
        "traces", "download", "--set", "mahimahi", "--only", "TMobile-LTE-short.up",
        "--dest", tmp_path, "--mirror", (tmp_path / "empty").as_uri(),
    )  # fmt: skip
    assert missing.exit_code == 2 and "cannot download file://" in missing.stderr


def test_download_from_a_file_url_and_bad_arguments(shared_traces, tmp_path):
    root = tmp_path / "mirror"
    item = next(f for f in MAHIMAHI.files if f.dest.endswith("Verizon-LTE-short.up"))
    target = root / MAHIMAHI.repository / MAHIMAHI.commit / item.source
    target.parent.mkdir(parents=True)
    shutil.copyfile(shared_traces / item.dest, target)
    dest = tmp_path / "dest"
    results = traces.download(
        ["mahimahi"], dest, mirror=root.as_uri(), only=["Verizon-LTE-short.up"]
    )
    assert [(r.path, r.status) for r in results] == [(dest / item.dest, "downloaded")]
    result = invoke("traces", "download", "--set", "lumos", "--dest", dest)
    assert result.exit_code == 2 and "--set: unknown trace set 'lumos'" in result.stderr
    result = invoke("traces", "download", "--only", "nope.down", "--dest", dest)
    assert result.exit_code == 2 and "--only: no file named nope.down" in result.stderr


def test_download_stops_at_the_declared_size(tmp_path):
    # A file:// mirror serving 64 MiB where 271 kB are declared: the download stops as
    # soon as the declared size is passed, instead of fetching it all first.
    item = MAHIMAHI.files[0]
    served = tmp_path / "mirror" / MAHIMAHI.repository / MAHIMAHI.commit / item.source
    served.parent.mkdir(parents=True)
    with served.open("wb") as handle:
        handle.truncate(64 << 20)
    dest = tmp_path / "traces"
    result = invoke(
        "traces", "download", "--set", "mahimahi", "--only", Path(item.dest).name,
        "--dest", dest, "--mirror", (tmp_path / "mirror").as_uri(),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"more than the declared {item.size:,} bytes" in result.stderr
    assert "Traceback" not in result.output
    assert not (dest / item.dest).exists()
    assert _no_partial_files(dest)
