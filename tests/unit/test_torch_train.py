"""The PyTorch update backend takes the same gradient steps as Stable-Baselines3's PPO.train."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.ppo.fast_paths import update_choice


def test_same_gradients_and_logs_as_sb3_train() -> None:
    """Two epochs of one full-batch minibatch each, so that shuffling changes only the summation order.

    SB3's ``train`` scores env-space actions through ``evaluate_actions`` (SB3's contract), the
    backend scores the stored pre-tanh ones: the two must agree.

    The gradients (left in ``.grad`` by the last step) are compared, not the parameters after Adam's
    step, and Adam's ``eps`` is raised to 1 in both: Adam divides by the root of the squared-gradient
    average, so with the default eps elements with gradients near zero move by up to the learning
    rate on rounding-level differences. The second epoch makes ``train/approx_kl`` meaningful:
    SB3 logs the mean over the last epoch only.
    """
    kwargs = {"n_steps": 32, "batch_size": 64, "n_epochs": 2, "seed": 0, "hyperparams": "sb3"}
    ours = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, train_backend="torch", **kwargs)
    ours.learn(64)  # one rollout and one update, so the optimizer has state
    theirs = PPO("MlpPolicy", make_env_from_id("RoboHopper-v0", n_envs=2, vec_env_cls=DummyVecEnv), **kwargs)
    theirs.policy.load_state_dict(ours.policy.state_dict())
    theirs.policy.optimizer.load_state_dict(ours.policy.optimizer.state_dict())
    theirs.rollout_buffer = copy.deepcopy(ours.rollout_buffer)
    with th.no_grad():  # SB3's train sees the actions as the env saw them
        env_actions = ours.policy.action_dist.to_env(th.as_tensor(ours.rollout_buffer.actions))
    theirs.rollout_buffer.actions[:] = env_actions.numpy()
    for model in (ours, theirs):
        model._current_progress_remaining = 0.5
        model.set_logger(copy.deepcopy(ours.logger))
        for group in model.policy.optimizer.param_groups:
            group["eps"] = 1.0
    th.manual_seed(1)
    ours._train_pre_tanh(update_choice(ours.policy, ours.train_backend))
    th.manual_seed(1)
    SB3PPO.train(theirs)
    for a, b in zip(ours.policy.parameters(), theirs.policy.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        scale = b.grad.abs().max().item()
        assert scale > 0
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=0, atol=1e-3 * scale)  # float32 atanh(tanh(u))
    logged_ours, logged_theirs = ours.logger.name_to_value, theirs.logger.name_to_value
    for key in ("train/policy_gradient_loss", "train/value_loss", "train/approx_kl", "train/clip_fraction"):
        assert logged_ours[key] == pytest.approx(logged_theirs[key], rel=1e-3, abs=1e-6), key
    assert (ours._n_updates, theirs._n_updates) == (4, 2)  # ours had trained once before


def test_target_kl_stops_the_epoch_early() -> None:
    model = PPO(
        "MlpPolicy",
        "RoboHopper-v0",
        n_envs=2,
        n_steps=32,
        batch_size=16,
        n_epochs=20,
        target_kl=1e-6,
        hyperparams="sb3",
    )
    model.learn(64)
    assert model._n_updates == 1  # stopped in the first epoch
