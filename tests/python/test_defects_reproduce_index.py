"""``reproduce`` into an existing ``--out``: the index lists every experiment there,
not only the ones of the latest invocation."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cellcc import catalogue
from cellcc.report import Section, write_report
from cellcc.sweep_report import write_index


class _Index(HTMLParser):
    """The report links and the first column of the experiments table (the one under the
    "Experiments" heading: the scorecard of every claim comes first)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: list[str] = []
        self._cell = -1
        self._in_td = False
        self._in_body = False
        self._heading: str | None = None
        self._in_experiments = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        elif tag == "h2":
            self._heading = ""
        elif tag == "table":
            # Only the table under the "Experiments" heading (the scorecard comes first).
            self._in_experiments = (self._heading or "").strip() == "Experiments"
        elif tag == "tbody" and self._in_experiments:
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._cell = -1
        elif tag == "td" and self._in_body:
            self._cell += 1
            self._in_td = self._cell == 0
            if self._in_td:
                self.ids.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_experiments = False
        if tag == "td":
            self._in_td = False
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._heading is not None and self.lasttag == "h2":
            self._heading += data
        if self._in_td:
            self.ids[-1] += data


def parse_index(page: Path) -> _Index:
    parser = _Index()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _experiment(out: Path, experiment_id: str) -> dict:
    """An experiment folder as ``reproduce`` leaves it, and its index entry."""
    page = write_report(
        out / experiment_id,
        title=f"paper {experiment_id}, figure",
        sections=[Section(title=experiment_id)],
        provenance_record={"command": "test"},
    )
    (out / experiment_id / "provenance.json").write_text('{"command": "test"}')
    return {
        "id": experiment_id,
        "paper": f"paper {experiment_id}",
        "figure": "figure",
        "runs": 2,
        "cached": 0,
        "executed": 2,
        "wall_s": 0.5,
        "report": page,
    }


def test_index_lists_experiments_of_earlier_invocations(tmp_path):
    out = tmp_path / "rep"
    write_index(out, [_experiment(out, "beta")], command="c", provenance_record={})
    page = write_index(out, [_experiment(out, "alpha")], command="c", provenance_record={})
    index = parse_index(page)
    assert index.ids == ["alpha", "beta"]
    assert "alpha/index.html" in index.links and "beta/index.html" in index.links
    # An earlier experiment keeps what its own run recorded.
    text = page.read_text(encoding="utf-8")
    assert "paper beta" in text


def test_index_lists_a_report_folder_without_a_recorded_entry(tmp_path):
    """Folders written before entries were recorded are still listed, by their id."""
    out = tmp_path / "rep"
    _experiment(out, "older")
    (out / "traces").mkdir()  # not an experiment: no report in it
    page = write_index(out, [_experiment(out, "newer")], command="c", provenance_record={})
    index = parse_index(page)
    assert index.ids == ["newer", "older"]
    assert "older/index.html" in index.links


def _short_catalogue(directory: Path, ids: list[str], duration_s: float) -> Path:
    directory.mkdir()
    for entry_id in ids:
        text = catalogue.find(entry_id).path.read_text(encoding="utf-8")
        text, count = re.subn(
            r"(?ms)^(\[quick\].*?^duration_s = )[0-9.]+", rf"\g<1>{duration_s}", text
        )
        assert count == 1
        (directory / f"{entry_id}.toml").write_text(text, encoding="utf-8")
    return directory


@pytest.mark.usefixtures("native")
def test_reproduce_twice_into_one_out_keeps_both_in_the_index(tmp_path):
    from cellcc.cli import app

    cat = _short_catalogue(tmp_path / "cat", ["cesar-fig6", "cesar-table2"], 1.0)
    out = tmp_path / "rep"
    cli = CliRunner()
    for entry_id in ("cesar-fig6", "cesar-table2"):
        argv = ["reproduce", entry_id, "--quick", "--out", str(out), "--catalogue", str(cat)]
        result = cli.invoke(app, [*argv, "-j", "2"])
        assert result.exit_code == 0, result.output
    index = parse_index(out / "index.html")
    assert index.ids == ["cesar-fig6", "cesar-table2"]
    assert {"cesar-fig6/index.html", "cesar-table2/index.html"} <= set(index.links)
