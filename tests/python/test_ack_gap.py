"""The ``ack_gap`` report view: per-run ACK-gap histograms, their dataset, the figure,
and reports that list several views (César Fig. 6 end to end)."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from cellcc import runner
from cellcc.cli import app
from cellcc.sweep import load_sweep
from cellcc.sweep_report import report_options
from helpers import Images

cli = CliRunner()

#: Constant links with a 5 ms SR grant pattern: 2 schemes, 2 seeds.
SWEEP = """
name = "gaps"
seeds = [1, 2]
schemes = ["cubic", "bbr"]

[base]
duration_s = 3.0
downlink = { rate_mbps = 12.0, delay_ms = 10.0, queue = { kind = "droptail", packets = 100 } }
uplink = { rate_mbps = 100.0, delay_ms = 10.0 }
scheduling = { preset = "lte-fdd-sr5" }

[report]
view = ["table", "ack_gap"]
"""


def test_ack_gap_counts_bins_each_flow_and_pools_long_gaps_in_the_last_bin():
    acks = pd.DataFrame(
        {
            "flow": [0, 0, 0, 0, 0, 1, 2],
            # Gaps of flow 0: 1 ms, 5 ms, 0 ms, 194 ms.
            "t_s": [0.0, 0.001, 0.006, 0.006, 0.2, 0.5, 0.7],
        }
    )
    counts = runner.ack_gap_counts(acks, 2, bin_ms=0.25, max_ms=80.0)
    assert [c["flow"] for c in counts] == [0, 1]  # flow 2 is not a scenario flow
    first = counts[0]["counts"]
    assert len(first) == 321  # 80 ms of 0.25 ms bins, then gaps >= 80 ms
    assert {i: n for i, n in enumerate(first) if n} == {0: 1, 4: 1, 20: 1, 320: 1}
    # One ACK makes no gap.
    assert sum(counts[1]["counts"]) == 0


def test_report_views_are_one_name_or_a_list(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP, encoding="utf-8")
    sweep = load_sweep(path)
    options = report_options(sweep)
    assert options["views"] == ["table", "ack_gap"] and options["view"] == "table"
    assert runner.needs_ack_gaps(sweep) and not runner.needs_series(sweep)
    from cellcc._native import ScenarioError

    path.write_text(SWEEP.replace('"ack_gap"]', '"ack-gap"]'), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"report\.view\[1\]: expected one of: .*ack_gap"):
        report_options(load_sweep(path))
    path.write_text(SWEEP.replace('["table", "ack_gap"]', "[]"), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"report\.view: expected a view"):
        report_options(load_sweep(path))


def test_ack_gaps_change_the_cache_key_only_when_asked_for(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP, encoding="utf-8")
    run = load_sweep(path).runs[0]
    code = {"cellcc": "x", "core": "y", "git_revision": "z"}
    plain = runner.run_key(run, code)
    assert runner.run_key(run, code, ack_gaps=False) == plain
    assert runner.run_key(run, code, ack_gaps=True) != plain


@pytest.mark.usefixtures("native")
def test_sweep_with_an_ack_gap_view_writes_histograms_and_both_views(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP, encoding="utf-8")
    out = tmp_path / "out"
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    gaps = pd.read_parquet(out / "ack_gaps.parquet")
    assert list(gaps.columns[:2]) == ["run_index", "seed"]
    assert {"label", "flow", "gap_ms", "count"} <= set(gaps.columns)
    assert set(gaps["run_index"]) == {0, 1, 2, 3} and (gaps["count"] > 0).all()
    # The runs' ACKs leave in grants every 5 ms (the SR period): past the ACKs of one
    # grant (gaps under 1 ms), nearly every gap is a multiple of 5 ms (CUBIC's mostly
    # 5 ms; BBR, pacing below the link rate, skips occasions: mostly 10 ms).
    for label, part in gaps[gaps["flow"] == 0].groupby("label"):
        spaced = part[part["gap_ms"] >= 1.0].groupby("gap_ms")["count"].sum()
        offset = spaced.index.to_numpy() % 5.0
        near = spaced[(offset >= 4.5) | (offset < 0.5)].sum()
        assert near >= 0.95 * spaced.sum(), (label, spaced.nlargest(5))
    # The records keep histograms, not the ACK log.
    record = next((out / "runs").glob("*.json")).read_text(encoding="utf-8")
    assert '"ack_gaps"' in record and '"acks"' not in record
    parser = Images()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert parser.src == ["throughput-delay.png", "ack_gap.png"]
    assert all((out / src).is_file() for src in parser.src)


@pytest.mark.usefixtures("native")
def test_reproduce_cesar_fig6_draws_each_presets_ack_gaps(tmp_path):
    out = tmp_path / "rep"
    result = cli.invoke(app, ["reproduce", "cesar-fig6", "--quick", "--out", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    folder = out / "cesar-fig6"
    assert (folder / "ack_gap.png").is_file() and (folder / "throughput-delay.png").is_file()
    gaps = pd.read_parquet(folder / "ack_gaps.parquet")
    gaps = gaps[(gaps["flow"] == 0) & (gaps["gap_ms"] >= 1.0)]
    peaks = gaps.groupby(["scheduling.preset", "gap_ms"])["count"].sum()
    # The commonest gap between grants is each preset's scheduling unit (César Fig. 6).
    for preset, su_ms in {
        "lte-fdd-sr5": 5.0,
        "lte-sr20-burst8": 8.0,
        "nr-tdd-2.5ms-sr5": 5.0,
        "nr-tdd-2.5ms": 2.5,
    }.items():
        peak = peaks[preset].idxmax()
        assert su_ms - 0.5 <= peak <= su_ms + 0.25, (preset, peaks[preset].nlargest(3))
