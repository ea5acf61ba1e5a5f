"""roboppo.PPO on Brax envs, through SB3's VecEnv interface."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id

pytest.importorskip("jax")


def test_ant_learns_saves_and_loads(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    model = PPO("MlpPolicy", "RoboAnt-v0", n_envs=8, n_steps=16, batch_size=64, n_epochs=2, seed=0)
    model.learn(8 * 16 * 2)
    assert model.num_timesteps == 256
    assert model.policy.features_extractor.obs_rms.count.item() == 128  # at rest: the statistics the weights saw
    model.save(tmp_path / "ant.zip")
    loaded = PPO.load(tmp_path / "ant.zip")
    obs = rng.normal(size=(5, 27)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    loaded.set_env(make_env_from_id("RoboAnt-v0", n_envs=8, seed=1))
    loaded.learn(128, reset_num_timesteps=False)
    assert loaded.num_timesteps == 384


def test_brax_defaults_fill_what_the_caller_leaves_out() -> None:
    model = PPO("MlpPolicy", "RoboBraxInvertedPendulum-v0", n_steps=32)
    assert (model.n_envs, model.n_steps, model.batch_size, model.n_epochs) == (32, 32, 512, 4)


@pytest.fixture
def pendulum_model() -> PPO:
    kwargs: dict[str, Any] = {"n_steps": 16, "batch_size": 64, "n_epochs": 2, "policy_kwargs": {"net_arch": [16]}}
    return PPO("MlpPolicy", "RoboBraxInvertedPendulum-v0", n_envs=8, seed=0, **kwargs)


def test_first_minibatch_ratio_is_one_on_brax(pendulum_model: PPO) -> None:
    model = pendulum_model
    model.learn(256)
    _, callback = model._setup_learn(128, reset_num_timesteps=False)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    batch = next(model.rollout_buffer.get(model.batch_size))
    with th.no_grad():
        _, log_prob, _ = model.policy.evaluate_pre_tanh(batch.observations, batch.actions)
    assert th.max(th.abs(th.exp(log_prob - batch.old_log_prob) - 1)).item() < 1e-5


def test_brax_rollout_bootstraps_truncation_only() -> None:
    model = PPO(
        "MlpPolicy", "RoboBraxInvertedPendulum-v0", n_envs=4, n_steps=8, batch_size=32, gamma=0.5,
        env_kwargs={"max_episode_steps": 3}, seed=0,
    )  # fmt: skip
    with th.no_grad():
        model.policy.value_net.bias.fill_(4.0)
    _, callback = model._setup_learn(32)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=8)
    rewards = model.rollout_buffer.rewards  # brax pendulum: reward 1 per step
    starts = model.rollout_buffer.episode_starts
    ends_by_truncation = np.zeros_like(starts, dtype=bool)
    ends_by_truncation[:-1] = starts[1:] > 0  # an episode start after step t means step t ended an episode
    assert ends_by_truncation[2].all()  # the 3-step limit, unless the pole fell first
    np.testing.assert_allclose(rewards[~ends_by_truncation], 1.0)
    assert (rewards[ends_by_truncation] > 1.5).all()  # 1 + 0.5 * V(final_obs), V ~ 4


def test_callbacks_tensorboard_and_evaluation_on_brax(tmp_path: pathlib.Path, pendulum_model: PPO) -> None:
    model = pendulum_model
    model.tensorboard_log = str(tmp_path / "tb")
    eval_env = make_env_from_id("RoboBraxInvertedPendulum-v0", n_envs=2, seed=3)
    checkpoints = CheckpointCallback(save_freq=32, save_path=str(tmp_path / "ckpt"))
    evaluation = EvalCallback(eval_env, n_eval_episodes=2, eval_freq=32, log_path=str(tmp_path))
    model.learn(512, callback=[checkpoints, evaluation], progress_bar=True)
    assert len(list((tmp_path / "ckpt").iterdir())) == 2
    assert np.load(tmp_path / "evaluations.npz")["results"].shape == (2, 2)
    assert len(model.ep_info_buffer) > 0 and all(e["l"] >= 1 for e in model.ep_info_buffer)
    assert any((tmp_path / "tb").rglob("events.out.tfevents*"))
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=4)
    assert mean >= 1.0
