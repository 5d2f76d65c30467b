"""Helpers several test files share: reading the HTML reports, checking one-line CLI
errors."""

from __future__ import annotations

from html.parser import HTMLParser


class Images(HTMLParser):
    """The ``src`` of every ``<img>`` of a page, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.src: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.src.append(dict(attrs)["src"])


class TableHeaders(HTMLParser):
    """The text of every ``<th>`` of a page: ``tables`` holds each ``<table>``'s headers,
    ``headers`` all of them in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[str]] = []
        self._in_th = False

    @property
    def headers(self) -> list[str]:
        return [header for table in self.tables for header in table]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "th" and self.tables:
            self._in_th = True
            self.tables[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "th":
            self._in_th = False

    def handle_data(self, data: str) -> None:
        if self._in_th:
            self.tables[-1][-1] += data


def assert_one_line_error(result, *needles):
    """The command failed with a usage error: exit code 2, one ``error: `` line on stderr
    holding every needle, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
