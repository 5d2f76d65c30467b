"""Plots and HTML reports from fake data (no simulator needed)."""

import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import cellcc
from cellcc import plots, report


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "a":
            self.links.append(attrs["href"])


def parse(path):
    collector = _Collector()
    collector.feed(path.read_text())
    return collector


def summary_frame():
    return pd.DataFrame(
        {
            "scheme": ["newreno", "cubic", "bbr"],
            "throughput_mbps": [5.0, 7.5, 9.0],
            "owd_p95_ms": [300.0, 420.0, 80.0],
            "qdelay_mean_ms": [150.0, 260.0, 0.0],
        }
    )


def test_scatter_inverts_the_delay_axis_on_a_log_scale():
    figure = plots.throughput_delay_figure(summary_frame(), title="t", subtitle="s")
    ax = figure.axes[0]
    assert ax.get_xscale() == "log"
    left, right = ax.get_xlim()
    assert left > right  # inverted: lower delay to the right
    assert "95th-percentile one-way delay (ms)" in ax.get_xlabel()
    assert ax.get_ylabel() == "Average throughput (Mbit/s)"


def test_scatter_with_zero_delay_uses_symlog():
    figure = plots.throughput_delay_figure(summary_frame(), delay="qdelay_mean_ms", title="t")
    assert figure.axes[0].get_xscale() == "symlog"


def test_scatter_draws_the_spread_of_runs_as_error_bars():
    from matplotlib.collections import LineCollection

    frame = summary_frame()
    plain = plots.throughput_delay_figure(frame, title="t")
    assert not [c for c in plain.axes[0].collections if isinstance(c, LineCollection)]
    frame["owd_p95_ms_lo"] = frame["owd_p95_ms"] * 0.8
    frame["owd_p95_ms_hi"] = frame["owd_p95_ms"] * 1.25
    frame["throughput_mbps_lo"] = frame["throughput_mbps"] - 1.0
    frame["throughput_mbps_hi"] = frame["throughput_mbps"] + 0.5
    figure = plots.throughput_delay_figure(frame, title="t")
    bars = [c for c in figure.axes[0].collections if isinstance(c, LineCollection)]
    # One horizontal and one vertical bar per scheme.
    assert len(bars) == 2 * len(frame)
    vertical = [seg for c in bars for seg in c.get_segments() if seg[0][0] == seg[1][0]]
    assert sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in vertical) == [
        (4.0, 5.5), (6.5, 8.0), (8.0, 9.5)
    ]  # fmt: skip


def test_scatter_lists_schemes_without_samples():
    frame = summary_frame()
    frame.loc[0, "owd_p95_ms"] = np.nan
    figure = plots.throughput_delay_figure(frame, title="t")
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert "no samples: newreno" in texts


def test_timeseries_figure_has_three_labelled_panels(tmp_path):
    t = np.arange(0, 5, 0.5)
    frame = pd.DataFrame(
        {
            "flow": [0] * len(t) + [-1] * len(t),
            "t_s": np.concatenate([t, t]),
            "throughput_mbps": np.concatenate([np.full(len(t), 4.0), np.full(len(t), np.nan)]),
            "qdelay_ms": np.concatenate([np.linspace(1, 50, len(t)), np.full(len(t), np.nan)]),
            "cwnd": np.concatenate([np.arange(len(t)) + 10.0, np.full(len(t), np.nan)]),
            "capacity_mbps": np.concatenate([np.full(len(t), np.nan), np.full(len(t), 6.0)]),
        }
    )
    figure = plots.timeseries_figure(frame, title="cubic on x", flow_labels={0: "cubic"})
    labels = [ax.get_ylabel() for ax in figure.axes]
    assert labels == ["Throughput (Mbit/s)", "Queueing delay (ms)", "cwnd (packets)"]
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == ["link capacity", "cubic"]
    path = plots.save(figure, tmp_path / "ts.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_saved_png_is_byte_identical_across_runs(tmp_path):
    a = plots.save(plots.throughput_delay_figure(summary_frame(), title="t"), tmp_path / "a.png")
    b = plots.save(plots.throughput_delay_figure(summary_frame(), title="t"), tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()


def test_report_references_existing_pngs_and_commands(tmp_path):
    png = plots.save(plots.throughput_delay_figure(summary_frame(), title="t"), tmp_path / "p.png")
    section = report.Section(
        title="x <&> y",
        commands=[("Regenerate:", "cellcc compare --trace a.down --schemes cubic")],
        table=summary_frame(),
        plots=[report.Plot(png, "Throughput vs delay", "cellcc compare --trace a.down")],
        files=[("summary.csv", tmp_path / "summary.csv")],
    )
    record = cellcc.results.provenance(seed=1, command="cellcc demo")
    index = report.write_report(tmp_path, title="T", sections=[section], provenance_record=record)
    text = index.read_text()
    assert "x &lt;&amp;&gt; y" in text
    assert "cellcc compare --trace a.down --schemes cubic" in text
    assert record["git_revision"] in text
    assert parse(index).images == ["p.png"]
    assert '<td class="num">7.5</td>' in text


@pytest.mark.slow
def test_compare_report_with_fake_core(fake_core, tmp_path):
    from cellcc import synthetic

    down, _ = synthetic.write_preset("lte-driving", tmp_path / "traces", duration_s=5.0)
    comparison = cellcc.compare(down, schemes=["newreno", "cubic", "bbr"], duration_s=5.0)
    out = tmp_path / "cmp"
    section = report.write_comparison(comparison, out)
    index = out / report.REPORT_FILE
    images = parse(index).images
    assert len(images) == 2 + 3  # two scatter variants, one time series per scheme
    for src in images:
        assert (out / src).is_file(), src
    for href in parse(index).links:
        assert (out / href).is_file(), href
    for scheme in ("newreno", "cubic", "bbr"):
        assert (out / scheme / "provenance.json").is_file()
    assert len(section.plots) == 5
    html = index.read_text()
    assert re.search(r"cellcc compare --trace \S+lte-driving\.down", html)
    assert (out / "summary.parquet").is_file()
