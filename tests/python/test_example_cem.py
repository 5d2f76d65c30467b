"""The learning example (examples/learn-cem): a short, seeded budget reproduces the
improvement its README reports over every fixed window on held-back paths."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.usefixtures("native"), pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "learn-cem" / "cem.py"


def load_example():
    spec = importlib.util.spec_from_file_location("learn_cem", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cem_policy_beats_every_fixed_window_on_held_back_paths():
    report = load_example().run("quick", seed=0)
    learned = report["learned"]
    best = report["fixed"][str(report["best_fixed_window"])]
    print(
        f"\nlearned {learned['score']:.4f} ({learned['throughput_mbps']:.2f} Mbit/s, "
        f"{learned['qdelay_mean_ms']:.1f} ms) vs fixed {report['best_fixed_window']} "
        f"{best['score']:.4f} ({best['throughput_mbps']:.2f} Mbit/s, "
        f"{best['qdelay_mean_ms']:.1f} ms); training {report['train_cpu_s']:.1f} CPU-s"
    )
    assert report["improvement"] > 0.05
    for fixed in report["fixed"].values():
        assert learned["score"] > fixed["score"]
    # More of the link at no more queueing than the best fixed window.
    assert learned["throughput_mbps"] > 1.2 * best["throughput_mbps"]
    assert learned["qdelay_mean_ms"] <= 1.1 * best["qdelay_mean_ms"]
