import numpy as np
import pytest

from cellcc import TraceError, traces


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_one_line_trace_is_one_opportunity_per_ms(tmp_path):
    stamps = traces.read_trace(write(tmp_path, "one", "1\n"))
    t, mbps = traces.capacity_series(stamps, duration_s=2.0, bin_ms=500)
    np.testing.assert_allclose(t, [0.0, 0.5, 1.0, 1.5])
    # 1504 bytes per ms = 12.032 Mbit/s; the opportunity at t = 0 does not exist (first is 1).
    assert mbps[1:] == pytest.approx([12.032] * 3)
    assert mbps[0] == pytest.approx(12.032 * 499 / 500)


def test_looping_follows_mm_link_period_and_once_stops(tmp_path):
    stamps = traces.read_trace(write(tmp_path, "t", "0\n2\n"))  # period 2 ms
    _, looped = traces.capacity_series(stamps, duration_s=0.01, bin_ms=10, opportunity_bytes=1000)
    # Opportunities at 0, 2 | 2, 4 | 4, 6 | 6, 8 | 8 (<10 ms): 9 in 10 ms.
    assert looped[0] == pytest.approx(9 * 1000 * 8 / 10_000)
    _, once = traces.capacity_series(
        stamps, duration_s=0.01, bin_ms=10, loop=False, opportunity_bytes=1000
    )
    assert once[0] == pytest.approx(2 * 1000 * 8 / 10_000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty trace"),
        ("1\n0\n", r":2: timestamps must not decrease"),
        ("1\nx\n", r":2: expected a non-negative integer"),
        ("1\n\n2\n", r":2: expected a non-negative integer"),
        ("0\n", r":1: the last timestamp must be > 0"),
    ],
)
def test_invalid_traces_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "bad.down", text)
    with pytest.raises(TraceError, match=message) as info:
        traces.read_trace(path)
    assert "bad.down" in str(info.value)


def test_missing_trace_names_the_file(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.down"):
        traces.read_trace(tmp_path / "nope.down")


def test_uplink_sibling(tmp_path):
    down = write(tmp_path, "x.down", "1\n")
    assert traces.uplink_sibling(down) is None
    up = write(tmp_path, "x.up", "1\n")
    assert traces.uplink_sibling(down) == up
    assert traces.uplink_sibling(up) is None


def test_real_trace_mean_matches_the_shared_readme(shared_traces):
    # ATT-LTE-driving-2016.down: 45604 lines over 120.0 s = 4.560 Mbit/s at 1500 B/line.
    stamps = traces.read_trace(shared_traces / "mahimahi" / "ATT-LTE-driving-2016.down")
    assert len(stamps) == 45604
    span_ms = float(stamps[-1]) + 1.0  # one bin that includes the last line
    _, mbps = traces.capacity_series(
        stamps, duration_s=span_ms / 1000, bin_ms=span_ms, loop=False, opportunity_bytes=1500
    )
    assert mbps[0] == pytest.approx(4.560, abs=0.001)
