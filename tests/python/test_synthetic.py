import numpy as np
import pytest

from cellcc import UsageError, synthetic


@pytest.mark.parametrize("preset", sorted(synthetic.PRESETS))
def test_presets_write_valid_mahimahi_traces(tmp_path, preset):
    down, up = synthetic.write_preset(preset, tmp_path, duration_s=20.0, seed=3)
    assert (down.name, up.name) == (f"{preset}.down", f"{preset}.up")
    for path in (down, up):
        text = path.read_text()
        assert text.endswith("\n") and "\n\n" not in text and "\r" not in text
        stamps = np.array([int(line) for line in text.splitlines()])  # integers only
        assert stamps[0] >= 1
        assert stamps[-1] == 20_000  # the loop period equals the requested duration
        assert np.all(np.diff(stamps) >= 0)
    # No leftover temporary files from the atomic writes.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([down.name, up.name])


def test_same_seed_gives_identical_bytes_and_other_seeds_differ(tmp_path):
    a = synthetic.write_preset("lte-driving", tmp_path / "a", duration_s=10.0, seed=5)
    b = synthetic.write_preset("lte-driving", tmp_path / "b", duration_s=10.0, seed=5)
    c = synthetic.write_preset("lte-driving", tmp_path / "c", duration_s=10.0, seed=6)
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes()
    assert a[0].read_bytes() != c[0].read_bytes()
    # Directions and presets use independent streams.
    assert a[0].read_bytes() != a[1].read_bytes()


def test_capacity_is_bounded_and_has_outages():
    model = synthetic.PRESETS["lte-driving"].down
    rates = synthetic.capacity_mbps(model, duration_s=300.0, seed=1)
    assert rates.shape == (300_000,)
    positive = rates[rates > 0]
    assert positive.min() >= model.min_mbps - 1e-9
    assert positive.max() <= model.max_mbps + 1e-9
    assert (rates == 0).any(), "expected at least one outage in 5 minutes"
    # Outages are whole multiples of the model step and within the configured range.
    zero = np.concatenate([[0], (rates == 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(zero))
    lengths = edges[1::2] - edges[0::2]
    low, high = model.outage_ms
    assert lengths.min() >= low
    assert lengths.max() <= 2 * high + synthetic.STEP_MS  # two outages may touch


def test_mean_capacity_of_the_trace_matches_the_model():
    model = synthetic.PRESETS["lte-stationary"].down
    rates = synthetic.capacity_mbps(model, duration_s=60.0, seed=2, label="lte-stationary")
    stamps = synthetic.generate(model, duration_s=60.0, seed=2, label="lte-stationary")
    trace_mbps = len(stamps) * synthetic.LINE_BYTES * 8 / 60.0 / 1e6
    assert trace_mbps == pytest.approx(rates.mean(), rel=0.02)


def test_unknown_preset_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="lte-drivng"):
        synthetic.write_preset("lte-drivng", tmp_path)


def test_bad_model_parameters_are_rejected():
    with pytest.raises(ValueError, match="min_mbps"):
        synthetic.DirectionModel(
            state_means_mbps=(1.0,), mean_dwell_s=1.0, sigma=0.1, reversion=0.1,
            min_mbps=5.0, max_mbps=1.0, outages_per_min=0.0, outage_ms=(10, 20),
        )  # fmt: skip
