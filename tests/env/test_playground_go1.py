"""The Go1 joystick tasks against EnvPool's independent port of MuJoCo Playground, side by side.

Step by step: with observation noise off, the same initial state and command (EnvPool's, computed
from its seed: ``envpool_draws``) and the same actions, observations, every reward term, the reward,
terminations and truncations agree for 55 control steps. The tolerance is 1e-6 (absolute): EnvPool
1.2.5 steps its own MuJoCo 3.6, roboppo MuJoCo 4, and the two agree to about 1e-13 here; EnvPool
returns the reward as float32 (about 1e-9).

In distribution: with noise, command sampling and resets on, over the same random-action rollouts
(32 copies x 500 steps each), the mean of each reward term and the termination rate differ by at most
4.5 standard errors (the copies' spread, both envs' added): 18 comparisons, each a false alarm about
once in 150,000 runs.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import roboppo_envs
from roboppo_envs.playground.go1 import REWARD_SCALES, Go1JoystickVectorEnv
from tests.env.envpool_draws import go1_reset

envpool = pytest.importorskip("envpool")

STEP_TOLERANCE = 1e-6
Z_LIMIT = 4.5
#: an EnvPool seed per terrain whose four envs keep their first command past the compared steps
SEEDS = {"flat": 0, "rough": 11}
STEPS = 55


def envpool_env(terrain: str, num_envs: int, seed: int, **kwargs: object) -> object:
    return envpool.make_gymnasium(
        f"MuJoCoPlayground/Go1Joystick{terrain.capitalize()}Terrain-v1",
        num_envs=num_envs,
        num_threads=1,
        seed=seed,
        **kwargs,
    )


@pytest.mark.parametrize("terrain", ["flat", "rough"])
def test_go1_steps_as_envpools_port(terrain: str) -> None:
    n, seed = 4, SEEDS[terrain]
    theirs = envpool_env(terrain, n, seed, noise_level=0.0, max_episode_steps=STEPS)
    ours = Go1JoystickVectorEnv(n, terrain=terrain, noise_level=0.0, max_episode_steps=STEPS, num_threads=1)
    their_obs, their_info = theirs.reset()
    ours.reset(seed=123)
    starts = [go1_reset(seed + i, ours.init_qpos, ours.model.nv) for i in range(n)]
    qpos, qvel, command = (np.array(values) for values in zip(*starts, strict=True))
    np.testing.assert_allclose(command, their_info["command"], atol=1e-12)  # the same draws as EnvPool's
    assert (their_info["steps_until_next_cmd"] > STEPS).all(), "pick a seed whose commands last the compared steps"
    ours.set_command(command)
    ours.steps_until_next_cmd[:] = their_info["steps_until_next_cmd"]
    obs = ours.set_robot_state(qpos, qvel)
    for key in obs:
        np.testing.assert_allclose(obs[key], their_obs[key], atol=STEP_TOLERANCE, err_msg=f"reset {key}")
    rng = np.random.default_rng(seed)
    alive = np.ones(n, dtype=bool)  # a copy that ended resets from different draws: compared up to its end
    for step in range(STEPS):
        actions = rng.uniform(-0.4, 0.4, size=(n, 12))
        their_obs, their_reward, their_term, their_trunc, their_info = theirs.step(actions)
        obs, reward, terminated, truncated, info = ours.step(actions)
        where = f"step {step + 1}"
        fell = terminated | their_term  # a fall draws the next command, from each env's own generator
        for key in obs:
            mine, reference = obs[key].copy(), their_obs[key].copy()
            mine[fell, 45:48] = reference[fell, 45:48]
            np.testing.assert_allclose(mine[alive], reference[alive], atol=STEP_TOLERANCE, err_msg=where)
        for term in REWARD_SCALES:
            mine, reference = info[f"reward_{term}"][alive], their_info[f"reward_{term}"][alive]
            np.testing.assert_allclose(mine, reference, atol=STEP_TOLERANCE, err_msg=f"{where} {term}")
        np.testing.assert_allclose(reward[alive], their_reward[alive], atol=STEP_TOLERANCE, err_msg=where)
        np.testing.assert_array_equal(terminated[alive], their_term[alive], err_msg=where)
        np.testing.assert_array_equal(truncated[alive], their_trunc[alive], err_msg=where)
        alive &= ~(terminated | truncated)
    assert truncated.sum() + (~alive).sum() >= n  # every copy ended: by the time limit, or compared to its fall
    assert truncated.any()


def rollout_means(env: object, seed: int, num_envs: int, steps: int) -> dict[str, np.ndarray]:
    """Each copy's mean of every reward term, the reward and terminations over random actions."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed) if isinstance(env, Go1JoystickVectorEnv) else env.reset()  # type: ignore[attr-defined]
    sums = {key: np.zeros(num_envs) for key in [*REWARD_SCALES, "reward", "terminated"]}
    for _ in range(steps):
        _, reward, terminated, _, info = env.step(rng.uniform(-1, 1, size=(num_envs, 12)))  # type: ignore[attr-defined]
        for term in REWARD_SCALES:
            sums[term] += info[f"reward_{term}"]
        sums["reward"] += reward
        sums["terminated"] += terminated
    return {key: value / steps for key, value in sums.items()}


def test_go1_agrees_in_distribution_with_envpools_port() -> None:
    n, steps = 32, 500
    theirs = rollout_means(envpool_env("flat", n, seed=5), 5, n, steps)
    ours = rollout_means(Go1JoystickVectorEnv(n, num_threads=2), 5, n, steps)
    assert theirs["terminated"].mean() > 0.005  # random actions make it fall: the rate is compared
    for key in theirs:
        se = np.sqrt(theirs[key].var(ddof=1) / n + ours[key].var(ddof=1) / n)
        gap = abs(theirs[key].mean() - ours[key].mean())
        assert gap <= Z_LIMIT * se + 1e-12, f"{key}: EnvPool {theirs[key].mean():.5f}, roboppo {ours[key].mean():.5f}"


def test_registered_ids_make_the_task() -> None:
    assert roboppo_envs.playground_ids() == ["roboppo/Go1JoystickFlatTerrain-v1", "roboppo/Go1JoystickRoughTerrain-v1"]
    assert (
        roboppo_envs.playground_twin("roboppo/Go1JoystickFlatTerrain-v1")
        == "MuJoCoPlayground/Go1JoystickFlatTerrain-v1"
    )
    vector = gym.make_vec("roboppo/Go1JoystickRoughTerrain-v1", num_envs=3)
    assert isinstance(vector, Go1JoystickVectorEnv) and vector.terrain == "rough" and vector.num_envs == 3
    env = gym.make("roboppo/Go1JoystickFlatTerrain-v1", noise_level=0.0)
    obs, info = env.reset(seed=4)
    assert obs["state"].shape == (48,) and obs["privileged_state"].shape == (123,)
    np.testing.assert_array_equal(obs["state"][-3:], info["command"])  # the command is the state's last three
    single = Go1JoystickVectorEnv(1, noise_level=0.0)
    np.testing.assert_array_equal(single.reset(seed=4)[0]["state"][0], obs["state"])  # gym.make's copy is copy 0
    assert env.spec is not None and env.spec.max_episode_steps == 1000


def test_same_step_autoreset_keeps_the_final_observation() -> None:
    env = Go1JoystickVectorEnv(2, noise_level=0.0, max_episode_steps=3, autoreset_mode="SameStep")
    env.reset(seed=0)
    for _ in range(3):
        obs, _, _, truncated, info = env.step(np.zeros((2, 12)))
    assert truncated.all() and info["_final_obs"].all()
    assert not np.array_equal(info["final_obs"]["state"], obs["state"])  # the new episode's start is returned
    assert (env.steps == 0).all()


def test_a_fixed_command_holds_through_resampling() -> None:
    env = Go1JoystickVectorEnv(2, command=(0.5, 0.0, 0.2))
    env.reset(seed=0)
    env.steps_until_next_cmd[:] = 1  # falls due at the next step
    _, _, _, _, info = env.step(np.zeros((2, 12)))
    np.testing.assert_array_equal(info["command"], [[0.5, 0.0, 0.2]] * 2)
    assert (info["steps_until_next_cmd"] > 0).all()  # a new countdown was drawn


def test_commands_resample_as_playground_says() -> None:
    env = Go1JoystickVectorEnv(400, noise_level=0.0)
    env.reset(seed=1)
    before = env.command.copy()
    env.steps_until_next_cmd[:] = 1
    env.step(np.zeros((400, 12)))
    after = env.command
    changed = after != before
    assert 0.4 < changed.mean() < 0.6  # each axis switches with probability 1/2
    zeroed = (after == 0) & changed
    keep = np.array([0.9, 0.25, 0.5])
    rate = zeroed.sum(axis=0) / changed.sum(axis=0)  # a switched axis is zeroed with probability 1 - b
    np.testing.assert_allclose(rate, 1 - keep, atol=0.12)
    assert (np.abs(after) <= env.command_amplitude).all()
