"""Learn a congestion controller with the cross-entropy method (no deep-learning library).

The policy is a linear map from Aurora's three features (latency gradient, latency ratio,
sending ratio, over the last two intervals of one smoothed RTT each) to a window
multiplier:
``cwnd ← cwnd × 2^a`` with ``a = 0.25 tanh(w · x + b)`` (``cellcc.gym`` action mode
``"cwnd_mult"``). The cross-entropy method (Rubinstein, 1999; as in Szita and Lőrincz,
Neural Computation 2006) samples a population of weight vectors from a Gaussian, runs
each on a few training scenarios, and refits the Gaussian to the best ones.

Training and held-back scenarios are drawn from the same distribution of constant-rate
paths (4-40 Mbit/s, 10-40 ms one-way delay, 50-300 packet drop-tail queue), from
different seeds. The score of an episode is its mean reward per step under the
environment's ``"log_power"`` reward (Remy's and Copa's ``log(goodput) − 0.5
log(delay)``). The baseline is a fixed window (the same environment with the
action held at 0, so cwnd stays at ``initial_cwnd``), at each of several sizes.

    python examples/learn-cem/cem.py            # the budget of the README's figures
    python examples/learn-cem/cem.py --quick    # seconds; what the test runs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

import numpy as np

from cellcc.gym import CellccEnv, SyntheticScenarios

FEATURES = ("latency_gradient", "latency_ratio", "sending_ratio")
HISTORY = 2
#: Fixed windows the learned policy is compared with, packets.
BASELINE_WINDOWS = (10, 20, 40, 80)

PATHS = SyntheticScenarios(
    bandwidth_mbps=(4.0, 40.0),
    delay_ms=(10.0, 40.0),
    queue_packets=(50, 300),
    duration_s=10.0,
)


def make_env(initial_cwnd: int = 10) -> CellccEnv:
    return CellccEnv(
        scenarios=PATHS,
        action="cwnd_mult",
        features=FEATURES,
        history=HISTORY,
        reward="log_power",
        initial_cwnd=initial_cwnd,
        per_rtt=True,
    )


def normalise(obs: np.ndarray) -> np.ndarray:
    """Centre the features: latency ratio and sending ratio are 1 on an empty queue."""
    x = obs.astype(np.float64).reshape(HISTORY, len(FEATURES))
    x[:, 1] -= 1.0  # latency ratio
    x[:, 2] = np.clip(x[:, 2] - 1.0, -5.0, 5.0)  # sending ratio
    x[:, 0] = np.clip(x[:, 0], -5.0, 5.0)  # latency gradient
    return x.reshape(-1)


@dataclass
class LinearPolicy:
    """``a = tanh(w · x + b)`` on normalised features."""

    theta: np.ndarray

    def act(self, obs: np.ndarray) -> np.ndarray:
        w, b = self.theta[:-1], self.theta[-1]
        return np.array([ACTION_SCALE * np.tanh(w @ normalise(obs) + b)], dtype=np.float32)


DIM = len(FEATURES) * HISTORY + 1
#: The largest step: cwnd × 2^±0.25 per interval (±19 %).
ACTION_SCALE = 0.25


def episode_score(env: CellccEnv, act, seed: int) -> tuple[float, dict[str, float]]:
    """Mean reward per step of one episode, and the agent flow's summary."""
    obs, _ = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total += reward
        steps += 1
        if terminated or truncated:
            break
    row = env.result().summary.iloc[0]
    summary = {
        "throughput_mbps": float(row["throughput_mbps"]),
        "qdelay_mean_ms": float(row["qdelay_mean_ms"]),
        "utilisation": float(row["utilisation"]),
    }
    return total / steps, summary


def evaluate(act, seeds: list[int], initial_cwnd: int = 10) -> dict[str, float]:
    env = make_env(initial_cwnd)
    scores, rows = [], []
    for seed in seeds:
        score, row = episode_score(env, act, seed)
        scores.append(score)
        rows.append(row)
    return {
        "score": float(np.mean(scores)),
        "throughput_mbps": float(np.mean([r["throughput_mbps"] for r in rows])),
        "qdelay_mean_ms": float(np.mean([r["qdelay_mean_ms"] for r in rows])),
        "utilisation": float(np.mean([r["utilisation"] for r in rows])),
    }


def train(
    *,
    iterations: int,
    population: int,
    elite: int,
    episodes: int,
    seed: int = 0,
) -> tuple[LinearPolicy, list[float]]:
    """The cross-entropy method with the mean kept in the population; returns the best
    policy of the last iteration and the elite scores of every iteration."""
    rng = np.random.default_rng(seed)
    mean = np.zeros(DIM)
    std = np.full(DIM, 1.0)
    env = make_env()
    history = []
    best = mean
    for it in range(iterations):
        candidates = mean + std * rng.standard_normal((population, DIM))
        candidates[0] = mean  # the current mean competes too (elitism)
        # Every candidate of an iteration sees the same training scenarios.
        seeds = [int(s) for s in rng.integers(1_000_000, 2_000_000, size=episodes)]
        scores = []
        for theta in candidates:
            act = LinearPolicy(theta).act
            scores.append(np.mean([episode_score(env, act, s)[0] for s in seeds]))
        order = np.argsort(scores)[::-1][:elite]
        elites = candidates[order]
        best = elites[0]
        mean = elites.mean(axis=0)
        std = elites.std(axis=0) + 0.05  # a floor keeps the search from collapsing early
        history.append(float(np.mean(np.asarray(scores)[order])))
        print(f"iteration {it + 1}: elite mean score {history[-1]:.4f}", file=sys.stderr)
    # The best candidate of the last iteration (the previous mean among them).
    return LinearPolicy(best), history


BUDGETS = {
    "full": {"iterations": 12, "population": 24, "elite": 5, "episodes": 3, "held_back": 20},
    "quick": {"iterations": 8, "population": 12, "elite": 3, "episodes": 2, "held_back": 8},
}


def run(budget: str, seed: int = 0) -> dict:
    b = BUDGETS[budget]
    started = time.process_time()
    policy, history = train(
        iterations=b["iterations"],
        population=b["population"],
        elite=b["elite"],
        episodes=b["episodes"],
        seed=seed,
    )
    train_cpu = time.process_time() - started
    held_back = list(range(b["held_back"]))  # training seeds are >= 1 000 000
    learned = evaluate(policy.act, held_back)
    hold = np.zeros(1, dtype=np.float32)
    baselines = {
        w: evaluate(lambda _obs: hold, held_back, initial_cwnd=w) for w in BASELINE_WINDOWS
    }
    best_window = max(baselines, key=lambda w: baselines[w]["score"])
    return {
        "budget": budget,
        "train_cpu_s": train_cpu,
        "elite_scores": history,
        "theta": policy.theta.tolist(),
        "learned": learned,
        "fixed": {str(w): v for w, v in baselines.items()},
        "best_fixed_window": best_window,
        "improvement": learned["score"] - baselines[best_window]["score"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="Learn a window policy with the CEM.")
    parser.add_argument("--quick", action="store_true", help="a budget of seconds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    report = run("quick" if args.quick else "full", seed=args.seed)
    print(json.dumps(report, indent=1))
    line = (
        f"learned: score {report['learned']['score']:.4f}, "
        f"{report['learned']['throughput_mbps']:.2f} Mbit/s, "
        f"{report['learned']['qdelay_mean_ms']:.1f} ms queueing"
    )
    print(line, file=sys.stderr)
    for w, v in report["fixed"].items():
        print(
            f"fixed {w:>3}: score {v['score']:.4f}, {v['throughput_mbps']:.2f} Mbit/s, "
            f"{v['qdelay_mean_ms']:.1f} ms queueing",
            file=sys.stderr,
        )
    print(f"training: {report['train_cpu_s']:.1f} CPU-s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
