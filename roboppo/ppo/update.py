"""The interface of roboppo's PPO update backends: a rollout and settings in, statistics out.

Both backends (:mod:`roboppo.ppo.torch_train`, :mod:`roboppo.ppo.jax_train`) expose
``train(policy, batch, settings) -> UpdateStats``; they read nothing else of the model.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch as th


class RolloutBatch(NamedTuple):
    """A rollout as flat tensors, ``[n_samples, ...]``; actions are pre-tanh."""

    observations: th.Tensor
    actions: th.Tensor
    old_values: th.Tensor
    old_log_prob: th.Tensor
    advantages: th.Tensor
    returns: th.Tensor


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
