"""Comparisons over several traces and repeated runs (``cellcc.comparisons``,
``cellcc compare --trace A --trace B --runs N``) and the intervals behind them."""

from __future__ import annotations

import math
import shlex
from html.parser import HTMLParser

import pandas as pd
import pytest
from typer.testing import CliRunner

import cellcc
from cellcc import synthetic
from cellcc.cli import app
from cellcc.comparisons import MAX_RUNS, compare_set
from cellcc.stats import mean_ci

# t(0.975, 2) and t(0.975, 4), from a printed table of Student's t distribution.
T975_DF2 = 4.303
T975_DF4 = 2.776


@pytest.fixture
def two_traces(tmp_path):
    down_a, _ = synthetic.write_preset("lte-stationary", tmp_path / "a", duration_s=3.0)
    down_b, _ = synthetic.write_preset("lte-driving", tmp_path / "b", duration_s=3.0)
    return [down_a, down_b]


def test_mean_ci_is_the_student_t_interval():
    interval = mean_ci([1.0, 2.0, 3.0])
    assert interval.mean == 2.0 and interval.n == 3 and interval.std == 1.0
    assert interval.half_width == pytest.approx(T975_DF2 / math.sqrt(3), abs=1e-3)
    wide = mean_ci([10.0, 12.0, 11.0, 9.0, 13.0], confidence=0.95)
    assert wide.half_width == pytest.approx(T975_DF4 * math.sqrt(2.5) / math.sqrt(5), abs=1e-3)
    assert mean_ci([1.0, 2.0, 3.0], confidence=0.5).half_width < interval.half_width
    one = mean_ci([4.0, float("nan")])
    assert one.mean == 4.0 and one.n == 1 and math.isnan(one.low) and not one.contains(4.0)
    same = mean_ci([0.1 + 0.2] * 3)
    assert (same.low, same.mean, same.high, same.std) == (0.1 + 0.2, 0.1 + 0.2, 0.1 + 0.2, 0.0)
    with pytest.raises(ValueError, match="confidence"):
        mean_ci([1.0, 2.0], confidence=95)


@pytest.mark.usefixtures("native")
def test_compare_set_runs_every_trace_and_seed_like_single_comparisons(two_traces):
    settings = {"schemes": "cubic,bbr", "duration_s": 3.0, "queue": "droptail:packets=60"}
    got = compare_set(two_traces, runs=3, seed=5, **settings)
    assert got.traces == two_traces and got.seeds == [5, 6, 7]
    assert got.schemes == ["cubic", "bbr"]
    summary = got.summary
    assert list(summary.columns[:4]) == ["trace", "seed", "queue", "scheme"]
    assert len(summary) == 2 * 3 * 2
    for trace in two_traces:
        for seed in (5, 6, 7):
            alone = cellcc.compare(trace, seed=seed, **settings).summary
            rows = summary[(summary["trace"] == trace.name) & (summary["seed"] == seed)]
            pd.testing.assert_frame_equal(
                rows.drop(columns="seed").reset_index(drop=True), alone, check_exact=True
            )
    series = got.timeseries
    assert list(series.columns[:3]) == ["trace", "seed", "scheme"]
    assert set(series["seed"]) == {5, 6, 7}
    assert got.comparison(two_traces[1].name, 6).seed == 6
    with pytest.raises(KeyError, match="seed 9"):
        got.comparison(two_traces[0], 9)


@pytest.mark.usefixtures("native")
def test_aggregate_gives_means_and_intervals_over_the_runs(two_traces):
    got = compare_set(two_traces, schemes="bbr,cubic", runs=3, duration_s=3.0)
    aggregate = got.aggregate(["throughput_mbps", "owd_p95_ms"])
    assert list(aggregate["trace"]) == [two_traces[0].name] * 2 + [two_traces[1].name] * 2 + [
        "all",
        "all",
    ]
    summary = got.summary
    for record in aggregate.to_dict(orient="records"):
        rows = summary[summary["scheme"] == record["scheme"]]
        if record["trace"] != "all":
            rows = rows[rows["trace"] == record["trace"]]
        assert record["runs"] == len(rows) == (6 if record["trace"] == "all" else 3)
        values = rows["owd_p95_ms"].to_numpy()
        mean = values.mean()
        half = T975_DF2 * values.std(ddof=1) / math.sqrt(3) if len(values) == 3 else None
        assert record["owd_p95_ms"] == pytest.approx(mean)
        if half is not None:
            assert record["owd_p95_ms_ci_high"] - mean == pytest.approx(half, rel=1e-3, abs=1e-9)
            assert mean - record["owd_p95_ms_ci_low"] == pytest.approx(half, rel=1e-3, abs=1e-9)
    # BBR's randomised start of its gain cycle differs between seeds; the spread shows.
    bbr = aggregate[(aggregate["scheme"] == "bbr") & (aggregate["trace"] != "all")]
    assert (bbr["owd_p95_ms_ci_high"] > bbr["owd_p95_ms_ci_low"]).any()
    with pytest.raises(cellcc.UsageError, match="no column owd_p96_ms"):
        got.aggregate(["owd_p96_ms"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"runs": 0}, "runs: expected an integer >= 1"),
        ({"runs": True}, "runs: expected an integer >= 1"),
        ({"runs": MAX_RUNS}, "more than the"),
        ({"uplink_trace": "x.up"}, "uplink_trace: only with a single trace"),
        ({"schemes": "cubic,cubci"}, "cubci"),
    ],
)
def test_compare_set_refuses_bad_requests_before_running(two_traces, kwargs, message):
    arguments = {"schemes": "cubic", **kwargs}
    with pytest.raises(cellcc.UsageError, match=message):
        compare_set(two_traces, **arguments)


def test_compare_set_refuses_two_traces_of_the_same_name(two_traces, tmp_path):
    other = tmp_path / "c" / two_traces[0].name
    other.parent.mkdir()
    other.write_text(two_traces[0].read_text())
    with pytest.raises(cellcc.UsageError, match="same file name"):
        compare_set([two_traces[0], other], schemes="cubic")
    with pytest.raises(cellcc.UsageError, match="at least one trace"):
        compare_set([], schemes="cubic")


class _Tables(HTMLParser):
    """The headings, each table's headers and the commands (``<pre>``) of a report."""

    def __init__(self):
        super().__init__()
        self.h2: list[str] = []
        self.th: list[list[str]] = []
        self.commands: list[str] = []
        self._tag: str | None = None

    def handle_starttag(self, tag, attrs):
        self._tag = tag
        if tag == "table":
            self.th.append([])

    def handle_data(self, data):
        if self._tag == "h2":
            self.h2.append(data.strip())
        elif self._tag == "th" and data.strip():
            self.th[-1].append(data.strip())
        elif self._tag == "pre" and data.strip():
            self.commands.append(data.strip())

    def handle_endtag(self, tag):
        self._tag = None


@pytest.mark.usefixtures("native")
def test_cli_compares_on_several_traces_with_runs(two_traces, tmp_path):
    out = tmp_path / "out"
    argv = ["compare", "--schemes", "cubic,bbr", "--runs", "2", "--seed", "3"]
    argv += ["--duration", "3", "--out", str(out), "-j", "2"]
    for trace in two_traces:
        argv += ["--trace", str(trace)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "mean ± 95 % interval over 2 runs" in result.output
    aggregate = pd.read_csv(out / "aggregate.csv")
    assert list(aggregate["trace"]) == [t.name for t in two_traces for _ in (0, 1)] + [
        "all",
        "all",
    ]
    assert set(pd.read_csv(out / "summary.csv")["seed"]) == {3, 4}
    for trace in two_traces:
        for seed in (3, 4):
            assert (out / trace.name / f"seed-{seed}" / "cubic" / "summary.csv").is_file()
    assert (out / two_traces[0].name / "seed-3" / "timeseries-bbr.png").is_file()
    assert not (out / two_traces[0].name / "seed-4" / "timeseries-bbr.png").exists()
    page = _Tables()
    page.feed((out / "index.html").read_text())
    assert page.h2[0] == "Means over the runs"
    assert page.th[0][:4] == ["trace", "runs", "scheme", "throughput (Mbit/s)"]
    assert page.h2[1:] == [f"{t.name}, seed {s}" for t in two_traces for s in (3, 4)]
    command = next(c for c in page.commands if c.startswith("cellcc compare"))
    words = shlex.split(command)
    assert [words[i + 1] for i, w in enumerate(words) if w == "--trace"] == list(
        map(str, two_traces)
    )
    assert words[words.index("--runs") + 1] == "2" and words[words.index("--seed") + 1] == "3"
    assert "--uplink-trace" not in words


def test_cli_refuses_an_uplink_trace_with_several_traces(two_traces):
    argv = ["compare", "--schemes", "cubic", "--uplink-trace", str(two_traces[0])]
    argv += ["--trace", str(two_traces[0]), "--trace", str(two_traces[1])]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    assert "--uplink-trace: only with a single --trace" in result.output
