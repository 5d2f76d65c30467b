"""The Gymnasium environment (cellcc.gym)."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cellcc
from cellcc.gym import FEATURES, CellccEnv, SyntheticScenarios

pytestmark = pytest.mark.usefixtures("native")


def path(
    rate_mbps: float = 12.0, queue: int = 60, duration_s: float = 4.0, loss: float = 0.0, **extra
) -> dict:
    return {
        "name": "gym",
        "duration_s": duration_s,
        "seed": 1,
        "downlink": {
            "rate_mbps": rate_mbps,
            "delay_ms": 15.0,
            "queue": {"kind": "droptail", "packets": queue},
            "loss": loss,
        },
        "uplink": {"rate_mbps": 100.0, "delay_ms": 15.0},
        "flows": [{"scheme": "cubic"}],
        **extra,
    }


def rollout(env: CellccEnv, seed: int, actions: np.ndarray) -> tuple[list, list]:
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(np.array([a], dtype=np.float32))
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return observations, rewards


@pytest.mark.parametrize("action", ["cwnd_mult", "cwnd", "aurora", "orca"])
def test_same_seed_and_actions_give_a_bit_identical_trajectory(action):
    env = CellccEnv(path(loss=0.01), action=action)
    actions = np.random.default_rng(5).uniform(-1, 1, size=500)
    first = rollout(env, 11, actions)
    second = rollout(env, 11, actions)
    assert len(first[1]) > 100
    for a, b in zip(first[0], second[0], strict=True):
        assert a.tobytes() == b.tobytes()
    assert first[1] == second[1]
    other = rollout(env, 12, actions)  # another seed: another loss pattern
    assert other[1] != first[1]


def test_check_env_passes():
    check_env(CellccEnv(path()), skip_render_check=True)
    check_env(CellccEnv(path(), action="aurora", features=list(FEATURES)), skip_render_check=True)


def test_registered_and_usable_through_make():
    env = gymnasium.make("cellcc/Cellcc-v0", scenario=path(), history=3)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (9,)
    env.close()


def test_vector_envs_match_single_envs():
    fns = [lambda s=s: CellccEnv(path(rate_mbps=s)) for s in (6.0, 24.0)]
    actions = np.zeros((30, 2, 1), dtype=np.float32)
    singles = [rollout(fn(), 3 + i, actions[:, i, 0]) for i, fn in enumerate(fns)]
    for vector in (
        gymnasium.vector.SyncVectorEnv(fns),
        gymnasium.vector.AsyncVectorEnv(fns, context="spawn"),
    ):
        vector.reset(seed=3)
        rewards = []
        for step in range(30):
            _, reward, *_ = vector.step(actions[step])
            rewards.append(reward)
        vector.close()
        for i in range(2):
            assert [r[i] for r in rewards] == singles[i][1][:30]


def test_an_episode_has_the_summary_and_time_series_of_any_run():
    env = CellccEnv(path(), action="orca")
    env.reset(seed=0)
    terminated = False
    steps = 0
    while not terminated:
        *_, terminated, _, _ = env.step(np.array([0.0], dtype=np.float32))
        steps += 1
    # Boundaries every 20 ms before the end (199); reset took the first, the last step
    # ends the run.
    assert steps == 199
    result = env.result()
    plain = cellcc.simulate(path())
    assert list(result.summary.columns) == list(plain.summary.columns)
    assert list(result.timeseries.columns) == list(plain.timeseries.columns)
    assert result.summary.loc[0, "scheme"] == "cellcc.gym:agent"
    # a = 0 leaves CUBIC's window as it is: the agent's flow is CUBIC itself.
    for column in ("throughput_mbps", "rtt_mean_ms", "drops", "retransmits"):
        assert result.summary.loc[0, column] == plain.summary.loc[0, column]
    with pytest.raises(cellcc.UsageError, match="call reset"):
        env.step(np.array([0.0]))


def test_other_flows_compete_in_the_same_run():
    scenario = path(duration_s=3.0)
    scenario["flows"] = [{"scheme": "cubic"}, {"scheme": "newreno", "start_s": 0.5}]
    env = CellccEnv(scenario, action="cwnd", agent_flow=0)
    rollout(env, 0, np.full(1000, -0.99))
    summary = env.result().summary.set_index("flow")
    assert summary.loc[0, "scheme"] == "cellcc.gym:agent"
    assert summary.loc[1, "scheme"] == "newreno" and summary.loc[1, "throughput_mbps"] > 1.0


def test_synthetic_distribution_samples_from_the_env_seed():
    dist = SyntheticScenarios(
        bandwidth_mbps=(2.0, 20.0),
        delay_ms=(5.0, 40.0),
        queue_packets=(10, 200),
        loss=(0.0, 0.02),
        trace_model=("constant", "steps"),
        scheduling=(None, "lte-fdd-sr5"),
        duration_s=2.0,
    )
    env = CellccEnv(scenarios=dist)
    rng = np.random.default_rng(0)
    seen = {dist.sample(rng)["downlink"].get("rate_mbps") for _ in range(5)}
    assert len(seen) > 1
    a = rollout(env, 4, np.zeros(200))
    b = rollout(env, 4, np.zeros(200))
    c = rollout(env, 5, np.zeros(200))
    assert a[1] == b[1] and a[1] != c[1]


def test_custom_reward_and_features():
    seen = []

    def reward(features):
        seen.append(features)
        return -features["queueing_delay_ms"]

    env = CellccEnv(path(), reward=reward, features=["cwnd", "srtt_ms"], history=2)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,)
    obs, r, *_ = env.step(np.array([0.5], dtype=np.float32))
    assert r == -seen[-1]["queueing_delay_ms"]
    assert obs[2] == seen[-1]["cwnd"] and math.isclose(obs[3], seen[-1]["srtt_ms"], rel_tol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"action": "warp"}, "action='warp'"),
        ({"features": ["latency_ratio", "nope"]}, "features ['nope'] unknown"),
        ({"history": 0}, "history=0"),
        ({"reward": "max"}, "reward='max'"),
        ({"interval_ms": -1}, "interval_ms=-1"),
        ({"action": "orca", "base": "held"}, "base='held' has none"),
        ({"action": "cwnd", "base": "cubic"}, "base must be 'held'"),
        ({"agent_flow": 3}, "agent_flow=3, but the scenario has 1 flows"),
    ],
)
def test_bad_configuration_is_a_clear_error(kwargs, needle):
    with pytest.raises(cellcc.UsageError, match=None) as info:
        CellccEnv(path(), **kwargs)
    assert needle in str(info.value)


def test_bad_scenario_and_base_params_are_scenario_errors_at_reset():
    env = CellccEnv(path(downlink_typo=1))
    with pytest.raises(cellcc.ScenarioError, match="downlink_typo"):
        env.reset(seed=0)
    env = CellccEnv(path(), action="orca", base_params={"betta": 0.5})
    with pytest.raises(cellcc.ScenarioError, match=r"base.*betta"):
        env.reset(seed=0)
    env = CellccEnv(path(duration_s=0.01), interval_ms=20.0)
    with pytest.raises(cellcc.ScenarioError, match="interval_s"):
        env.reset(seed=0)


def test_bad_synthetic_ranges_are_clear_errors():
    with pytest.raises(cellcc.UsageError, match="bandwidth_mbps"):
        SyntheticScenarios(bandwidth_mbps=(10.0, 1.0))
    with pytest.raises(cellcc.UsageError, match="trace_model"):
        SyntheticScenarios(trace_model=("fractal",))
