"""Helpers several test files share: reading the HTML reports, checking one-line CLI
errors, comparing Parquet files written by the core with those pyarrow writes, writing a
constant-rate Mahimahi trace."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


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


def assert_same_arrow_values(written, expected):
    """Two Arrow tables (``pyarrow.Table``) hold the same columns and values; a string
    column may be ``string`` in ``written`` where ``expected`` has ``large_string`` (the
    core's Parquet files do not carry pyarrow's own schema entry, which records that
    pyarrow wrote a pandas 3 frame's strings as ``large_string``)."""
    import pyarrow as pa

    written.validate(full=True)
    assert written.schema.names == expected.schema.names
    for got, want in zip(written.schema, expected.schema, strict=True):
        assert got.type == want.type or (got.type, want.type) == (pa.string(), pa.large_string())
    assert written.cast(expected.schema).equals(expected)


def constant_trace(directory: Path, mbps: float, seconds: int = 10) -> Path:
    """A Mahimahi trace of ``mbps``: opportunities spread evenly over each ms."""
    per_ms = mbps * 1e6 / 8 / 1504 / 1000
    lines, sent = [], 0
    for ms in range(1, seconds * 1000 + 1):
        due = int(ms * per_ms) - sent
        lines += [str(ms)] * due
        sent += due
    path = directory / f"const-{mbps:g}.trace"
    path.write_text("\n".join(lines) + "\n")
    return path
