"""Sweep and ``reproduce`` reports show every column of their table: the group (label)
columns, the metrics the report asks for and the paper's numbers beside ours."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cellcc import catalogue, runner
from cellcc.sweep import load_sweep
from cellcc.sweep_report import write_sweep_report
from helpers import TableHeaders

pytestmark = pytest.mark.usefixtures("native")


def table_headers(page: Path) -> list[str]:
    """The headers of the summary table: the first after the scorecard (whose first
    column is the claim)."""
    parser = TableHeaders()
    parser.feed(page.read_text(encoding="utf-8"))
    tables = [[h.strip() for h in headers] for headers in parser.tables]
    return next(headers for headers in tables if headers and headers[0] != "claim")


def _short_copy(entry_id: str, directory: Path, duration_s: float) -> Path:
    """The catalogue file with a shorter ``[quick]`` duration, so the test is quick."""
    text = catalogue.find(entry_id).path.read_text(encoding="utf-8")
    text, count = re.subn(r"(?ms)^(\[quick\].*?^duration_s = )[0-9.]+", rf"\g<1>{duration_s}", text)
    assert count == 1, "the entry has a [quick] duration_s"
    path = directory / f"{entry_id}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _report(entry_id: str, tmp_path: Path, duration_s: float) -> Path:
    sweep = load_sweep(_short_copy(entry_id, tmp_path, duration_s), quick=True)
    out = tmp_path / "out" / entry_id
    outcome = runner.run_sweep(sweep, out, jobs=2, command="test")
    record = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    page, _table = write_sweep_report(
        sweep, outcome.results, out, command="test", provenance_record=record
    )
    return page


def test_cesar_table2_report_has_label_and_paper_columns(tmp_path):
    headers = table_headers(_report("cesar-table2", tmp_path, 2.0))
    assert headers[0] == "label", headers
    assert "runs" in headers
    assert "jain_index" in headers and "jain_index (paper)" in headers, headers
    assert headers.index("jain_index (paper)") == headers.index("jain_index") + 1
    # The other metrics keep their readable names.
    assert "throughput (Mbit/s)" in headers and "mean RTT (ms)" in headers, headers


def test_cesar_fig6_report_keeps_its_key_metric_and_paper_column(tmp_path):
    headers = table_headers(_report("cesar-fig6", tmp_path, 3.0))
    assert headers[0] == "scheduling.preset", headers
    for column in ("cc.su_ms", "cc.su_ms (paper)", "cc.su_min_ms", "cc.su_max_ms"):
        assert column in headers, (column, headers)
    assert "note" in headers, headers


def test_c2tcp_table1_shows_the_queueing_delay_deviation_next_to_the_papers_jitter(
    shared_traces, tmp_path
):
    headers = table_headers(_report("c2tcp-jsac-table1", tmp_path, 2.0))
    # The paper's jitter (mean deviation of delay) beside ours; RFC 3550's under its name.
    assert headers.index("qdelay_mdev_ms (paper)") == headers.index("qdelay_mdev_ms") + 1
    assert "rfc3550_jitter_ms" in headers and "rfc3550_jitter_ms (paper)" not in headers
