"""The mm-link log reader: parsing, errors naming the line, and the metrics."""

from __future__ import annotations

import math

import pytest

from cellcc import mmlog

LOG = """# mahimahi mm-link [downlink] > x
# init timestamp: 0
# base timestamp: 0
0 + 1504
1 # 1504
1 - 1504 1
2 + 1504
2 + 1504
3 # 1504
3 - 1504 1
4 d 1 1504
999 # 1504
999 - 1504 997
"""


def test_parse_reads_every_event_kind() -> None:
    log = mmlog.parse(LOG, source="t.log")
    assert list(log.opportunities_ms) == [1, 3, 999]
    assert list(log.arrivals_ms) == [0, 2, 2]
    assert list(log.departures_ms) == [1, 3, 999]
    assert list(log.delays_ms) == [1, 1, 997]
    assert list(log.drop_bytes) == [1504]
    assert log.end_ms == 999


def test_summary_over_one_second() -> None:
    s = mmlog.summary(mmlog.parse(LOG), start_ms=0, end_ms=1000)
    assert s["throughput_mbps"] == pytest.approx(3 * 1504 * 8 / 1e6)
    assert s["capacity_mbps"] == pytest.approx(3 * 1504 * 8 / 1e6)
    assert s["utilisation"] == pytest.approx(1.0)
    assert s["qdelay_mean_ms"] == pytest.approx(333.0)
    assert s["drops"] == 1
    # The window excludes the last departure: two packets of 1 ms each.
    s = mmlog.summary(mmlog.parse(LOG), start_ms=0, end_ms=500)
    assert s["qdelay_mean_ms"] == pytest.approx(1.0)
    assert s["packets"] == 2


def test_empty_window_metrics_are_nan() -> None:
    s = mmlog.summary(mmlog.parse(LOG), start_ms=10, end_ms=20)
    assert math.isnan(s["qdelay_mean_ms"])
    assert s["throughput_mbps"] == 0.0


def test_timeseries_bins() -> None:
    ts = mmlog.timeseries(mmlog.parse(LOG), bin_ms=500)
    assert list(ts["t_s"]) == [0.0, 0.5]
    assert ts["throughput_mbps"].iloc[0] == pytest.approx(2 * 1504 * 8 / 0.5 / 1e6)
    assert ts["qdelay_mean_ms"].iloc[1] == pytest.approx(997.0)


@pytest.mark.parametrize(
    ("line", "needle"),
    [("5 x 10", "expected"), ("5 - 10", "expected"), ("a + 10", "integers")],
)
def test_bad_lines_name_source_and_line(line: str, needle: str) -> None:
    with pytest.raises(mmlog.MmLogError, match=rf"bad.log:2: .*{needle}"):
        mmlog.parse("# header\n" + line + "\n", source="bad.log")
