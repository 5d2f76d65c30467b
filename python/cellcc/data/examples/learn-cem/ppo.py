"""Train stable-baselines3's PPO on the same paths as ``cem.py`` (not run by ``make test``).

Needs the ``rl`` extra (``pip install "cellcc[rl]"``: stable-baselines3 and PyTorch).
Four environments run in one process (``SyncVectorEnv`` through sb3's ``DummyVecEnv``):
a cellcc step costs tens of microseconds, less than a subprocess round trip.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cem  # the paths, the environment and the evaluation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError:
        print(
            'error: stable-baselines3 is not installed: pip install "cellcc[rl]"', file=sys.stderr
        )
        return 2
    env = make_vec_env(cem.make_env, n_envs=4, seed=args.seed)
    model = PPO("MlpPolicy", env, seed=args.seed, verbose=1)
    model.learn(total_timesteps=args.timesteps)

    def act(obs: np.ndarray) -> np.ndarray:
        action, _ = model.predict(obs, deterministic=True)
        return action

    held_back = list(range(20))
    learned = cem.evaluate(act, held_back)
    hold = np.zeros(1, dtype=np.float32)
    print(f"PPO: {learned}")
    for window in cem.BASELINE_WINDOWS:
        print(f"fixed {window}: {cem.evaluate(lambda _obs: hold, held_back, initial_cwnd=window)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
