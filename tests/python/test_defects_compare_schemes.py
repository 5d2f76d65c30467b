"""``cellcc.compare``: ``schemes`` is a list of names or one comma-separated string."""

import pytest

import cellcc


@pytest.fixture
def down(tmp_path):
    path = tmp_path / "t.down"
    path.write_text("1\n2\n")
    return path


def test_compare_accepts_a_comma_separated_string(fake_core, down):
    comparison = cellcc.compare(down, schemes="cubic,bbr", duration_s=1.0)
    assert comparison.schemes == ["cubic", "bbr"]
    assert list(comparison.results) == ["cubic", "bbr"]


def test_compare_string_and_list_agree(fake_core, down):
    spaced = cellcc.compare(down, schemes=" cubic , bbr ", duration_s=1.0)
    listed = cellcc.compare(down, schemes=["cubic", "bbr"], duration_s=1.0)
    assert spaced.schemes == listed.schemes == ["cubic", "bbr"]


def test_compare_accepts_a_single_name(fake_core, down):
    assert cellcc.compare(down, schemes="cubic", duration_s=1.0).schemes == ["cubic"]


@pytest.mark.parametrize("schemes", ["cubic,,bbr", "cubic,", ",cubic", ["cubic", " "]])
def test_compare_names_an_empty_scheme(fake_core, down, schemes):
    with pytest.raises(cellcc.UsageError, match=r"schemes: empty scheme name"):
        cellcc.compare(down, schemes=schemes, duration_s=1.0)
    assert fake_core.calls == []


@pytest.mark.parametrize("schemes", ["", " ", []])
def test_compare_without_schemes_says_so(fake_core, down, schemes):
    with pytest.raises(cellcc.UsageError, match=r"schemes: expected at least one scheme"):
        cellcc.compare(down, schemes=schemes, duration_s=1.0)
