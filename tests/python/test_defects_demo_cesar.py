"""The demo shows why César can equal BBR (its final phase is the BBR fallback without a
scheduling pattern) and includes a scheduled path on which César's mechanism shows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cellcc.demo import run_demo
from helpers import TableHeaders

pytestmark = pytest.mark.usefixtures("native")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    run_demo(out, duration_s=5.0, presets=("lte-stationary",), schemes=("bbr", "cesar"))
    return out


def _rows(summary: pd.DataFrame, scheme: str) -> pd.DataFrame:
    return summary[summary["scheme"] == scheme].set_index(["trace", "scheduling"])


def test_summary_has_each_flows_final_phase(demo):
    summary = pd.read_csv(demo / "summary.csv", keep_default_na=False)
    assert "cc_phase" in summary.columns
    assert (summary["cc_phase"] != "").all()
    # Without a scheduling pattern César is its BBR fallback, and says so.
    plain = _rows(summary, "cesar").loc[("lte-stationary.down", "")]
    assert plain["cc_phase"] == "bbr"


def test_demo_has_a_scheduled_path_where_cesar_differs_from_bbr(demo):
    summary = pd.read_csv(demo / "summary.csv", keep_default_na=False)
    scheduled = summary[summary["scheduling"] != ""]
    assert not scheduled.empty, "the demo has no scheduled path"
    key = ("lte-stationary.down", scheduled["scheduling"].iloc[0])
    cesar, bbr = _rows(summary, "cesar").loc[key], _rows(summary, "bbr").loc[key]
    assert cesar["cc_phase"] != "bbr" and cesar["cc_phase"] != bbr["cc_phase"]
    assert cesar["qdelay_mean_ms"] != bbr["qdelay_mean_ms"]
    assert cesar["throughput_mbps"] != bbr["throughput_mbps"]
    # The scheduling-aware mechanism keeps the queue shorter than BBR's.
    assert cesar["qdelay_mean_ms"] < bbr["qdelay_mean_ms"]


def test_report_tables_show_the_phase(demo):
    parser = TableHeaders()
    parser.feed((demo / "index.html").read_text(encoding="utf-8"))
    assert parser.headers.count("final CC phase") >= 2, parser.headers


def test_sweep_tables_show_which_phases_each_group_ended_in():
    from cellcc.sweep_report import grouped_table, with_published

    results = pd.DataFrame(
        {
            "label": ["cesar", "cesar", "bbr"],
            "flow": [0, 0, 0],
            "cc.phase": ["steady", "bbr", "probe_bw"],
            "throughput_mbps": [1.0, 2.0, 3.0],
        }
    )
    table = grouped_table(results, group=["label"], metrics=["throughput_mbps"])
    assert list(table.columns) == ["label", "runs", "cc.phase", "throughput_mbps"]
    assert list(table["cc.phase"]) == ["bbr, steady", "probe_bw"]
    shown = with_published(table, [{"label": "bbr", "throughput_mbps": 2.5}], ["label"])
    assert list(shown.columns) == [
        "label", "runs", "cc.phase", "throughput_mbps", "throughput_mbps (paper)",
    ]  # fmt: skip
