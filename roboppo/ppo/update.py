"""What roboppo's update backends share: a rollout and settings in, statistics out, and their log lines.

Both backends (:mod:`roboppo.ppo.torch_train`, :mod:`roboppo.ppo.jax_train`) expose
``train(policy, batch, settings) -> UpdateStats``; they read nothing else of the model. The
settings are evaluated once per rollout (:meth:`roboppo.PPO.train`): the learning rate goes from
its schedule into :class:`UpdateSettings` and from there into whichever backend runs.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import explained_variance

from roboppo.ppo.policies import TanhGaussianPolicy


class RolloutBatch(NamedTuple):
    """A rollout as flat tensors, ``[n_samples, ...]``; actions are pre-tanh."""

    observations: th.Tensor
    actions: th.Tensor
    old_values: th.Tensor
    old_log_prob: th.Tensor
    advantages: th.Tensor
    returns: th.Tensor


@dataclasses.dataclass(frozen=True)
class Revaluation:
    """What ``recompute_advantage`` needs to recompute a rollout's advantages before each epoch.

    The buffer gives the rewards PPO learns from (time-limit bootstraps included, as collected),
    the episode starts, ``gamma`` and ``gae_lambda``; the observations after the rollout's last step
    and their ``dones`` close it, as they did for the rollout's own advantages.
    """

    buffer: RolloutBuffer
    last_observations: th.Tensor
    last_dones: np.ndarray

    def advantages(self, values: th.Tensor, last_values: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """GAE and returns of the rollout under these values (flat, in :class:`RolloutBatch`'s order).

        SB3's own ``RolloutBuffer.compute_returns_and_advantage``, run on a shallow copy of the buffer
        whose values are ``values``: the buffer itself keeps the rollout's values and advantages.
        """
        buffer = copy.copy(self.buffer)
        buffer.values = values.detach().cpu().numpy().reshape(buffer.buffer_size, buffer.n_envs)
        buffer.advantages = np.zeros_like(buffer.values)
        buffer.compute_returns_and_advantage(last_values.detach(), self.last_dones)
        device = values.device
        return th.as_tensor(buffer.advantages.reshape(-1), device=device), th.as_tensor(
            buffer.returns.reshape(-1), device=device
        )


@dataclasses.dataclass(frozen=True)
class UpdateSettings:
    """PPO's update hyperparameters, with schedules already evaluated for this rollout."""

    n_epochs: int
    batch_size: int
    learning_rate: float
    clip_range: float
    clip_range_vf: float | None
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    target_kl: float | None
    normalize_advantage: bool


@dataclasses.dataclass(frozen=True)
class UpdateStats:
    """What SB3's ``train`` logs, computed as it computes them.

    Losses and clip fraction are means over every minibatch that ran, ``approx_kl`` the mean over
    the last epoch's minibatches (SB3 restarts that list each epoch), ``loss`` the last
    minibatch's; ``epochs`` counts the epochs started and ``stop_kl`` is the approximate KL of the
    minibatch at which ``target_kl`` stopped training (None when it did not).
    """

    policy_gradient_loss: float
    value_loss: float
    entropy_loss: float
    approx_kl: float
    clip_fraction: float
    loss: float
    epochs: int
    stop_kl: float | None = None


def random_draws(n_samples: int, n_epochs: int, action_dim: int) -> tuple[th.Tensor, th.Tensor]:
    """Every random number an update uses, drawn first from torch's generator (on the CPU).

    :return: one shuffle of ``range(n_samples)`` per epoch ``[n_epochs, n_samples]``, and the
        standard normal draws of the entropy estimate ``[n_epochs, n_samples, action_dim]``
        (sample ``i`` of an epoch uses row ``i``). Both backends draw them this way, so they take
        the same minibatches and leave torch's generator in the same state.
    """
    orders = th.stack([th.randperm(n_samples) for _ in range(n_epochs)])
    return orders, th.randn(n_epochs, n_samples, action_dim)


def explained_variance_of(buffer: RolloutBuffer) -> float:
    """SB3's explained variance of a rollout: its values against its returns."""
    return float(explained_variance(buffer.values.flatten(), buffer.returns.flatten()))


def record_update(logger: Logger, stats: UpdateStats, settings: UpdateSettings, explained: float, std: float) -> None:
    """SB3's ``train/*`` log keys for an update (``explained``: the explained variance of the rollout trained on)."""
    for key in ("entropy_loss", "policy_gradient_loss", "value_loss", "approx_kl", "clip_fraction", "loss"):
        logger.record(f"train/{key}", getattr(stats, key))
    logger.record("train/explained_variance", explained)
    logger.record("train/std", std)
    logger.record("train/clip_range", settings.clip_range)
    if settings.clip_range_vf is not None:
        logger.record("train/clip_range_vf", settings.clip_range_vf)


def record_statistics(logger: Logger, policy: TanhGaussianPolicy) -> None:
    """``obs_norm/*``: the first observation normalizer's count, mean size and spread (none: nothing logged)."""
    normalizers = [n for n in policy.observation_normalizers() if n.has_statistics]
    if normalizers:
        stats = normalizers[0].obs_rms
        logger.record("obs_norm/count", stats.count.item())
        logger.record("obs_norm/mean_abs", stats.mean.abs().mean().item())
        logger.record("obs_norm/std_mean", th.sqrt(stats.var).mean().item())
        logger.record("obs_norm/std_min", th.sqrt(stats.var).min().item())
