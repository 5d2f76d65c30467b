"""No write outside the output directory, whatever the sweep's name, labels, facets,
experiment ids or scheme names hold."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cellcc import UsageError, results
from cellcc.cli import app

cli = CliRunner()

HOSTILE = ["../../..", "../../../escaped", "a/b", "/abs/path", ".hidden", "..", "", "x\\y\x00z"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_file_name_from_user_text_is_one_plain_component(text):
    name = results.file_name(text)
    assert name and "/" not in name and "\x00" not in name
    assert not name.startswith((".", "-"))
    assert Path(name).name == name


def test_plain_names_are_kept_and_different_texts_stay_apart():
    for text in ("ATT-LTE-driving", "cubic+codel", "c2tcp:target_ms=80", "PropRate (no NFL)"):
        assert results.file_name(text) == text
    names = {results.file_name(text) for text in ("a/b", "a-b", "a b", "a\\b")}
    assert len(names) == 4
    assert len(results.file_name("x" * 300)) < 100


def test_confined_refuses_a_path_that_leaves_the_root(tmp_path):
    confined = results.confined
    assert confined(tmp_path, "a", "b.png") == tmp_path / "a" / "b.png"
    for parts in (["..", "x"], ["a", "..", "..", "x"], ["/etc/passwd"]):
        with pytest.raises(UsageError, match="outside the output directory"):
            confined(tmp_path, *parts)
    (tmp_path / "link").symlink_to(tmp_path.parent)
    with pytest.raises(UsageError):
        confined(tmp_path, "link", "x")


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_dir()}


SWEEP = """
name = "{name}"
seeds = [1]
schemes = [{schemes}]

[base]
duration_s = 0.5
downlink = {{ rate_mbps = 12.0, delay_ms = 10.0 }}
uplink = {{ rate_mbps = 100.0, delay_ms = 10.0 }}

[report]
facets = ["label"]
"""


@pytest.mark.usefixtures("native")
def test_a_hostile_sweep_name_stays_inside_the_default_output(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    path = work / "sweep.toml"
    path.write_text(SWEEP.format(name="../../../..", schemes='"cubic"'), encoding="utf-8")
    before = _files(tmp_path)
    result = cli.invoke(app, ["sweep", str(path), "-j", "1"])
    assert result.exit_code == 0, result.output
    written = _files(tmp_path) - before
    out = work / "out"
    assert written and all(p == out or out in p.parents for p in written), written


@pytest.mark.usefixtures("native")
def test_hostile_labels_in_facets_stay_inside_out(tmp_path):
    labels = ["../../../escaped", "a/b", "/tmp/abs"]
    schemes = ", ".join(
        f'{{ scheme = "{s}", label = "{label}" }}'
        for s, label in zip(["cubic", "bbr", "newreno"], labels, strict=True)
    )
    work = tmp_path / "w" / "x"
    work.mkdir(parents=True)
    path = work / "sweep.toml"
    path.write_text(SWEEP.format(name="facets", schemes=schemes), encoding="utf-8")
    out = work / "out"
    before = _files(tmp_path)
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    written = _files(tmp_path) - before
    assert all(p == out or out in p.parents for p in written), written - {out}
    pngs = sorted(p.name for p in out.glob("throughput-delay-*.png"))
    assert len(pngs) == 3, pngs
    assert not [p for p in out.iterdir() if p.is_dir() and p.name != "runs"]


@pytest.mark.usefixtures("native")
def test_an_experiment_id_of_dots_stays_inside_out(tmp_path):
    catalogue = tmp_path / "catalogue"
    catalogue.mkdir()
    entry = SWEEP.format(name="dots", schemes='"cubic"').replace("[report]\nfacets", "#")
    entry += '\n[experiment]\npaper = "p"\nfigure = "f"\ndescription = "d"\n'
    (catalogue / "...toml").write_text(entry, encoding="utf-8")  # the id (stem) is ".."
    out = tmp_path / "a" / "out"
    before = _files(tmp_path)
    argv = ["reproduce", "--all", "--catalogue", str(catalogue), "--out", str(out), "-j", "1"]
    result = cli.invoke(app, argv)
    assert result.exit_code == 0, result.output
    written = _files(tmp_path) - before
    outside = {p for p in written if not (p == out or out in p.parents or p in out.parents)}
    assert not outside
    assert (out / "index.html").is_file()
