"""The experiment catalogue (experiments/*.toml), `reproduce` and its reports."""

import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import cellcc
from cellcc import catalogue, runner
from cellcc.cli import app
from cellcc.sweep import load_sweep
from cellcc.sweep_report import grouped_table, report_options, with_published

cli = CliRunner()
pytestmark = pytest.mark.usefixtures("native")


def test_catalogue_lists_every_file():
    entries = catalogue.entries()
    ids = [e.id for e in entries]
    assert {
        "c2tcp-jsac-table1",
        "c2tcp-ifip-table1",
        "proprate-fig10",
        "cesar-fig6",
        "cesar-fig11",
    } <= set(ids)
    result = cli.invoke(app, ["experiments", "list"])
    assert result.exit_code == 0, result.output
    for entry_id in ids:
        assert entry_id in result.stdout


def test_catalogue_and_examples_are_package_data(monkeypatch):
    """The default catalogue is the package's own data, so an installed wheel has it; in
    a checkout, experiments/ and examples/ at the top level are the same directories."""
    monkeypatch.delenv(catalogue.CATALOGUE_ENV, raising=False)
    package = Path(cellcc.__file__).resolve().parent
    assert catalogue.catalogue_dir().resolve() == package / "data" / "experiments"
    assert (catalogue.examples_dir() / "two-flows-constant.toml").is_file()
    checkout = package.parents[1]
    if (checkout / "crates" / "cellcc-py").is_dir():
        assert (checkout / "experiments").resolve() == catalogue.catalogue_dir().resolve()
        assert (checkout / "examples").resolve() == catalogue.examples_dir().resolve()


@pytest.mark.parametrize("quick", [False, True])
def test_every_experiment_expands_and_validates(shared_traces, quick):
    for entry in catalogue.entries():
        sweep = load_sweep(entry.path, quick=quick)
        assert sweep.runs, entry.id
        report_options(sweep)
        runner.check(sweep)


def test_ifip_table1_runs_every_pair_in_both_directions(shared_traces):
    sweep = load_sweep(catalogue.find("c2tcp-ifip-table1").path)
    pairs = {(r.params["trace"], r.params["direction"]) for r in sweep.runs}
    assert len(pairs) == 12 and len(sweep.runs) == 12 * 7
    durations = {
        (r.params["trace"], r.params["direction"]): r.scenario["duration_s"] for r in sweep.runs
    }
    # Full length of the data direction's trace.
    assert durations["ATT-LTE-driving", "downlink"] == pytest.approx(786.1, abs=0.1)
    assert durations["ATT-LTE-driving", "uplink"] == pytest.approx(1012.5, abs=0.1)


def test_normalised_table_and_published_columns():
    results = pd.DataFrame(
        {
            "flow": [0] * 4,
            "label": ["ref", "other", "ref", "other"],
            "trace": ["a", "a", "b", "b"],
            "seed": [1] * 4,
            "throughput_mbps": [2.0, 4.0, 1.0, 1.0],
        }
    )
    table = grouped_table(
        results, group=["label"], metrics=["throughput_mbps"], normalise_to="ref",
        context=["trace", "seed"],
    )  # fmt: skip
    assert table.set_index("label")["throughput_mbps"].to_dict() == {"ref": 1.0, "other": 1.5}
    published = [{"label": "other", "throughput_mbps": 1.2}, {"label": "paper-only"}]
    shown = with_published(table, published, ["label"])
    assert list(shown["label"]) == ["ref", "other", "paper-only"]
    assert list(shown.columns) == ["label", "runs", "throughput_mbps", "throughput_mbps (paper)"]


@pytest.mark.slow
def test_reproduce_quick_writes_a_report_with_published_numbers(tmp_path):
    out = tmp_path / "rep"
    result = cli.invoke(app, ["reproduce", "cesar-fig6", "--quick", "--out", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "cesar-fig6" / "table.csv")
    assert "cc.su_ms (paper)" in table.columns
    measured = table.set_index("scheduling.preset")["cc.su_ms"]
    published = table.set_index("scheduling.preset")["cc.su_ms (paper)"]
    print("\nCésar SU (ms), ours vs paper:", dict(zip(measured.index, measured, strict=True)))
    assert (measured - published).abs().max() < 1e-9
    page = (out / "cesar-fig6" / "index.html").read_text()
    assert "cellcc reproduce cesar-fig6 --out" in page and "(paper)" in page
    assert "cesar-fig6" in (out / "index.html").read_text()
    again = cli.invoke(app, ["reproduce", "cesar-fig6", "--quick", "--out", str(out)])
    assert "4 runs (4 cached, 0 executed)" in again.stdout


@pytest.mark.slow
def test_ifip_table1_full_length_speed(shared_traces, tmp_path):
    """The full C2TCP IFIP Table I reproduction: 7 schemes × 6 Boston pairs × 2
    directions at full trace length (target: under 2 minutes on 2 cores)."""
    sweep = load_sweep(catalogue.find("c2tcp-ifip-table1").path)
    started = time.monotonic()
    outcome = runner.run_sweep(sweep, tmp_path / "ifip")
    wall = time.monotonic() - started
    simulated = sum(r.scenario["duration_s"] for r in sweep.runs)
    print(
        f"\nIFIP Table I: {outcome.executed} runs, {simulated:.0f} s simulated, {wall:.1f} s "
        f"wall, {outcome.executed / wall:.2f} runs/s"
    )
    assert outcome.executed == 84
    assert wall < 600  # generous for shared CI machines; the target is 120 s


def _entry_ids() -> list[str]:
    return [e.id for e in catalogue.entries()]


@pytest.mark.parametrize("entry_id", _entry_ids())
def test_entry_loads_expands_and_matches_its_published_rows(shared_traces, entry_id):
    """Every catalogue file: loads, expands (full and quick), has a valid report, and
    every published row names only group columns and metrics the report shows."""
    entry = catalogue.find(entry_id)
    full = load_sweep(entry.path)
    quick = load_sweep(entry.path, quick=True)
    assert full.runs and quick.runs
    assert len(quick.runs) <= len(full.runs)
    options = report_options(full)
    for row in full.experiment.get("published", []):
        for key in row:
            if key == "note":
                continue
            assert key in options["group"] or key in options["metrics"], (entry_id, key)
    runner.check(quick)


def test_derived_metrics_jain_share_and_window():
    from cellcc.sweep_views import derive

    results = pd.DataFrame(
        {
            "run_index": [0, 0, 0],
            "flow": [0, 1, -1],
            "start_s": [10.0, 0.0, 0.0],
            "throughput_mbps": [2.0, 6.0, 8.0],
        }
    )
    whole = derive(results).set_index("flow")
    assert whole.loc[0, "jain_index"] == pytest.approx(64 / (2 * 40))
    assert whole.loc[0, "share"] == pytest.approx(0.25)
    assert whole.loc[0, "late_to_early"] == pytest.approx(2 / 6)
    assert pd.isna(whole.loc[1, "jain_index"])
    # Flow 1 alone for the first 10 s at 8 Mbit/s, then 4 + 4: the window from the later
    # start sees a fair share.
    times = [t * 1.0 for t in range(20)]
    series = pd.DataFrame(
        {
            "run_index": 0,
            "t_s": times + times[10:],
            "flow": [1] * 20 + [0] * 10,
            "throughput_mbps": [8.0] * 10 + [4.0] * 10 + [4.0] * 10,
        }
    )
    windowed = derive(results, series, []).set_index("flow")
    assert windowed.loc[0, "jain_index"] == pytest.approx(1.0)
    assert windowed.loc[0, "flow1_mbps"] == pytest.approx(4.0)
    early = derive(results, series, [0.0, 10.0]).set_index("flow")
    assert early.loc[0, "flow0_mbps"] == pytest.approx(0.0)
    assert early.loc[0, "flow1_mbps"] == pytest.approx(8.0)


def test_percentile_metrics_and_loss_normalisation():
    from cellcc.sweep_views import normalise_to_first_x

    results = pd.DataFrame(
        {
            "flow": [0] * 4,
            "label": ["a"] * 4,
            "seed": [1, 2, 3, 4],
            "efficiency": [1.0, 2.0, 3.0, 4.0],
        }
    )
    table = grouped_table(results, group=["label"], metrics=["efficiency", "efficiency@p25"])
    assert table["efficiency"].iloc[0] == pytest.approx(2.5)
    assert table["efficiency@p25"].iloc[0] == pytest.approx(1.75)
    lossy = pd.DataFrame(
        {
            "label": ["a", "a", "b", "b"],
            "loss": [0.0, 0.01, 0.0, 0.01],
            "seed": [1] * 4,
            "throughput_mbps": [4.0, 1.0, 2.0, 2.0],
        }
    )
    out = normalise_to_first_x(lossy, x="loss", metrics=["throughput_mbps"], context=["seed"])
    assert list(out["throughput_mbps"]) == [1.0, 0.25, 1.0, 1.0]


@pytest.mark.slow
def test_reproduce_quick_fairness_entry_writes_share_view(tmp_path):
    """C2TCP IFIP Fig. 5-7 end to end: time series kept, share and Jain's index over the
    window after the second flow joins, the share figure written."""
    out = tmp_path / "rep"
    result = cli.invoke(
        app, ["reproduce", "c2tcp-ifip-fig5-7", "--quick", "--out", str(out), "-j", "2"]
    )
    assert result.exit_code == 0, result.output
    folder = out / "c2tcp-ifip-fig5-7"
    assert (folder / "share.png").is_file() and (folder / "timeseries.parquet").is_file()
    table = pd.read_csv(folder / "table.csv").set_index("label")
    assert table["share"].between(0, 1).all()
    assert table["jain_index"].between(0.5, 1.0).all()
    # BBR takes most of the bandwidth from CUBIC (the paper's claim, and ours).
    assert table.loc["bbr vs cubic", "share"] > 0.7


@pytest.mark.slow
def test_reproduce_quick_cesar_table2_jain(tmp_path):
    out = tmp_path / "rep"
    result = cli.invoke(app, ["reproduce", "cesar-table2", "--quick", "--out", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "cesar-table2" / "table.csv").set_index("label")
    assert "jain_index (paper)" in table.columns
    for label in ("bbr x2", "bbr x3", "bbr x4", "cesar x2", "cesar x3", "cesar x4"):
        assert table.loc[label, "jain_index"] > 0.98, label
