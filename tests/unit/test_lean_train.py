"""The lean training loop takes the same gradient steps as Stable-Baselines3's PPO.train."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.vec_env import DummyVecEnv

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.ppo.device_rollout import DeviceRolloutBuffer
from roboppo.ppo.lean_train import train_on_tensors


def test_same_gradients_and_logs_as_sb3_train() -> None:
    """One epoch of one full-batch minibatch, so that shuffling changes only the summation order.

    The gradients (left in ``.grad`` by the step) are compared, not the parameters after Adam's
    step: Adam divides by the root of the squared-gradient average, so elements with gradients
    near zero move by up to the learning rate on rounding-level differences.
    """
    kwargs = {"n_steps": 32, "batch_size": 64, "n_epochs": 1, "seed": 0}
    ours = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, **kwargs)
    ours.learn(64)  # one rollout and one update, so the optimizer has state
    assert isinstance(ours.rollout_buffer, DeviceRolloutBuffer)
    theirs = PPO("MlpPolicy", make_env_from_id("RoboHopper-v0", n_envs=2, vec_env_cls=DummyVecEnv), **kwargs)
    theirs.policy.load_state_dict(ours.policy.state_dict())
    theirs.policy.optimizer.load_state_dict(ours.policy.optimizer.state_dict())
    theirs.rollout_buffer = _copy_to_sb3_buffer(ours.rollout_buffer, theirs)
    for model in (ours, theirs):
        model._current_progress_remaining = 0.5
        model.set_logger(copy.deepcopy(ours.logger))
    th.manual_seed(1)
    train_on_tensors(ours)
    th.manual_seed(1)
    SB3PPO.train(theirs)
    for a, b in zip(ours.policy.parameters(), theirs.policy.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        scale = b.grad.abs().max().item()
        assert scale > 0
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=0, atol=1e-5 * scale)
    logged_ours, logged_theirs = ours.logger.name_to_value, theirs.logger.name_to_value
    for key in ("train/policy_gradient_loss", "train/value_loss", "train/approx_kl", "train/clip_fraction"):
        assert logged_ours[key] == pytest.approx(logged_theirs[key], rel=1e-3, abs=1e-6), key
    assert (ours._n_updates, theirs._n_updates) == (2, 1)  # ours had trained once before


def test_target_kl_stops_the_epoch_early() -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, n_steps=32, batch_size=16, n_epochs=20, target_kl=1e-6)
    model.learn(64)
    assert model._n_updates == 1  # stopped in the first epoch


def _copy_to_sb3_buffer(source: DeviceRolloutBuffer, model: PPO) -> RolloutBuffer:
    buffer = RolloutBuffer(
        source.buffer_size, model.observation_space, model.action_space, "cpu",
        model.gae_lambda, model.gamma, source.n_envs,
    )  # fmt: skip
    buffer.observations[:] = source.observations.numpy()
    buffer.actions[:] = source.actions.numpy()
    buffer.values[:] = source.value_tensor.numpy()
    buffer.log_probs[:] = source.log_probs.numpy()
    buffer.advantages[:] = source.advantages.numpy()
    buffer.returns[:] = source.return_tensor.numpy()
    buffer.pos, buffer.full = source.buffer_size, True
    return buffer
