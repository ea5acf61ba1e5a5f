"""Robo* MuJoCo envs: registration, checkers, vector envs, equality with Gymnasium v5."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import roboppo_envs
from tests.conftest import ROBO_IDS

TWINS = {
    "RoboInvertedPendulum-v0": "InvertedPendulum-v5",
    "RoboInvertedDoublePendulum-v0": "InvertedDoublePendulum-v5",
    "RoboHopper-v0": "Hopper-v5",
}


def test_ids_are_registered_on_import_with_1000_step_episodes() -> None:
    assert set(ROBO_IDS) <= set(roboppo_envs.registered_ids())
    for env_id in ROBO_IDS:
        spec = gym.spec(env_id)
        assert spec.max_episode_steps == 1000
        assert spec.reward_threshold == gym.spec(TWINS[env_id]).reward_threshold
    roboppo_envs.register_envs()  # registering again is harmless
    assert roboppo_envs.registered_ids().count("RoboHopper-v0") == 1


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_gymnasium_and_sb3_checkers_pass(env_id: str) -> None:
    env = gym.make(env_id)
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env, warn=True)
    env.close()


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_float32_observations_and_float_rewards(env_id: str) -> None:
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.dtype == np.float32
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert obs.dtype == np.float32 and type(reward) is float
    assert type(terminated) is bool and type(truncated) is bool


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_make_vec_steps_a_batch(env_id: str) -> None:
    envs = gym.make_vec(env_id, num_envs=3)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, *gym.spec(env_id).make().observation_space.shape)
    obs, rewards, terminated, _, _ = envs.step(envs.action_space.sample())
    assert obs.dtype == np.float32 and rewards.shape == (3,) and terminated.shape == (3,)
    envs.close()


@pytest.mark.parametrize("env_id", ROBO_IDS)
def test_same_trajectory_as_gymnasium_v5(env_id: str, rng: np.random.Generator) -> None:
    ours, theirs = gym.make(env_id), gym.make(TWINS[env_id])
    obs_a, _ = ours.reset(seed=7)
    obs_b, _ = theirs.reset(seed=7)
    resets = 0
    for _ in range(400):
        np.testing.assert_allclose(obs_a, obs_b.astype(np.float32), rtol=1e-6, atol=1e-6)
        action = rng.uniform(ours.action_space.low, ours.action_space.high).astype(np.float32)
        obs_a, reward_a, term_a, trunc_a, _ = ours.step(action)
        obs_b, reward_b, term_b, trunc_b, _ = theirs.step(action)
        assert reward_a == pytest.approx(float(reward_b), rel=1e-12)
        assert (term_a, trunc_a) == (term_b, trunc_b)
        if term_a or trunc_a:
            resets += 1
            obs_a, _ = ours.reset(seed=100 + resets)
            obs_b, _ = theirs.reset(seed=100 + resets)
    assert resets > 0  # the comparison crossed episode boundaries


def test_episode_is_truncated_at_1000_steps() -> None:
    env = gym.make("RoboInvertedPendulum-v0", reset_noise_scale=0.0)
    env.reset(seed=0)
    steps, truncated, terminated = 0, False, False
    while not (terminated or truncated):
        # a hand-written PD controller keeps the pole up for the whole episode
        qpos, qvel = env.unwrapped.data.qpos, env.unwrapped.data.qvel
        action = np.clip([0.5 * qpos[0] + 10.0 * qpos[1] + 0.5 * qvel[0] + 2.0 * qvel[1]], -3, 3).astype(np.float32)
        _, _, terminated, truncated, _ = env.step(action)
        steps += 1
    assert (steps, truncated, terminated) == (1000, True, False)
