"""Tanh-squashed diagonal Gaussian that lives in pre-tanh space.

The policy samples a pre-tanh action ``u ~ N(mean, std)``; the environment receives
``a = tanh(u)`` rescaled to its Box. Rollouts store ``u``, never ``a``: recovering ``u``
from a float32 ``a`` with a clamped ``atanh`` breaks down near ``|a| = 1``, which is
exactly where a trained controller likes to push its actuators.

Densities are those of the squashed action ``a`` in ``(-1, 1)``::

    log p(a) = log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2)

with the numerically stable form ``log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))``
(as in Brax's ``NormalTanhDistribution``). The affine map from ``(-1, 1)`` to
``[low, high]`` only adds a constant, which cancels in PPO's probability ratio.
"""

from __future__ import annotations

import math
from typing import TypeVar

import torch as th
from stable_baselines3.common.distributions import DiagGaussianDistribution, sum_independent_dims
from torch.distributions import Normal
from torch.nn.functional import softplus

SelfTanhNormal = TypeVar("SelfTanhNormal", bound="TanhNormalDistribution")

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)  # the normal density's log-normalizer per dimension


def tanh_log_det_jacobian(pre_tanh: th.Tensor) -> th.Tensor:
    """Elementwise ``log |d tanh(u) / du| = log(1 - tanh(u)^2)``, finite for any ``u``.

    :param pre_tanh: pre-tanh actions ``u``, any shape.
    :return: tensor of the same shape; tends to ``-2|u| + 2 log 2`` for large ``|u|``.
    """
    return 2.0 * (LOG_2 - pre_tanh - softplus(-2.0 * pre_tanh))


class TanhNormalDistribution(DiagGaussianDistribution):
    """Diagonal Gaussian over pre-tanh actions ``u``, densities of ``tanh(u)``.

    ``sample()`` and ``mode()`` return pre-tanh actions ``[batch, action_dim]``;
    the policy applies ``tanh`` and the Box rescaling when it hands actions to the env.

    Entropy: a tanh-normal has no closed-form entropy. We use the one-sample,
    reparameterised estimate ``H[a] ~= H[N(mean, std)] + sum_i log(1 - tanh(u_i)^2)``
    with ``u = mean + std * eps`` (exact in expectation, differentiable in mean and std),
    as Brax's PPO does. It is what ``ent_coef`` multiplies and what ``train/entropy_loss`` logs.
    """

    def proba_distribution(self: SelfTanhNormal, mean_actions: th.Tensor, log_std: th.Tensor) -> SelfTanhNormal:
        """``N(mean, exp(log_std))`` over pre-tanh actions (argument validation off: it runs every minibatch)."""
        action_std = th.ones_like(mean_actions) * log_std.exp()
        self.distribution = Normal(mean_actions, action_std, validate_args=False)
        return self

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        """Log-density of ``tanh(actions)``, where ``actions`` are pre-tanh ``[batch, action_dim]``.

        :return: ``[batch]``
        """
        gaussian = sum_independent_dims(self.distribution.log_prob(actions))
        return gaussian - tanh_log_det_jacobian(actions).sum(dim=-1)

    def entropy(self) -> th.Tensor:
        """One-sample reparameterised entropy estimate of the squashed action, ``[batch]``."""
        u = self.distribution.rsample()
        gaussian = sum_independent_dims(self.distribution.entropy())
        return gaussian + tanh_log_det_jacobian(u).sum(dim=-1)

    def log_prob_from_params(self, mean_actions: th.Tensor, log_std: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Sample pre-tanh actions and return them with their log-probabilities."""
        actions = self.actions_from_params(mean_actions, log_std)
        return actions, self.log_prob(actions)
