"""Tanh-squashed diagonal Gaussian over a Box action space.

The policy samples a pre-tanh action ``u ~ N(mean, std)``; the environment receives
``a = low + (tanh(u) + 1) * (high - low) / 2``. Two ways to score actions:

- **SB3's contract (env space).** ``sample()``, ``mode()`` and ``log_prob(a)`` speak actions as
  the environment sees them, as every caller outside PPO expects (``predict``, imitation's BC
  and AIRL). ``log_prob(a)`` inverts the squashing (``u = atanh(...)``, clamped just inside the
  Box) and returns the density of ``a`` in the Box::

      log p(a) = log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2) - sum_i log((high_i - low_i) / 2)

- **PPO's own path (pre-tanh).** Rollouts store ``u``, never ``a``: recovering ``u`` from a
  float32 ``a`` breaks down near ``|a| = 1``, which is where a trained controller likes to push
  its actuators. :meth:`TanhNormalDistribution.pre_tanh_log_prob` scores ``u`` exactly; it
  differs from ``log_prob(a)`` by the constant Box term, which cancels in PPO's ratio.

``log(1 - tanh(u)^2)`` uses the stable form ``2 * (log 2 - u - softplus(-2u))`` (as in Brax's
``NormalTanhDistribution``).
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.distributions import DiagGaussianDistribution, sum_independent_dims
from torch.distributions import Normal
from torch.nn.functional import softplus

SelfTanhNormal = TypeVar("SelfTanhNormal", bound="TanhNormalDistribution")

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)  # the normal density's log-normalizer per dimension
ATANH_LIMIT = 1.0 - 1e-6  # env-space actions on the Box edge are scored as this far inside it


def tanh_log_det_jacobian(pre_tanh: th.Tensor) -> th.Tensor:
    """Elementwise ``log |d tanh(u) / du| = log(1 - tanh(u)^2)``, finite for any ``u``.

    :param pre_tanh: pre-tanh actions ``u``, any shape.
    :return: tensor of the same shape; tends to ``-2|u| + 2 log 2`` for large ``|u|``.
    """
    return 2.0 * (LOG_2 - pre_tanh - softplus(-2.0 * pre_tanh))


class TanhNormalDistribution(DiagGaussianDistribution):
    """Diagonal Gaussian over pre-tanh actions, squashed by ``tanh`` and rescaled to ``[low, high]``.

    Entropy: a tanh-normal has no closed form. Both entropies are the one-sample,
    reparameterised estimate ``H ~= H[N(mean, std)] + sum_i log(1 - tanh(u_i)^2)`` with
    ``u = mean + std * eps`` (exact in expectation, differentiable in mean and std), as Brax's
    PPO uses; :meth:`entropy` adds the Box term so that it is the entropy of the env-space action.

    :param action_dim: number of action dimensions.
    :param low: lower Box bounds (default -1).
    :param high: upper Box bounds (default 1).
    """

    def __init__(self, action_dim: int, low: np.ndarray | None = None, high: np.ndarray | None = None) -> None:
        super().__init__(action_dim)
        low_t = th.full((action_dim,), -1.0) if low is None else th.as_tensor(low, dtype=th.float32).flatten()
        high_t = th.full((action_dim,), 1.0) if high is None else th.as_tensor(high, dtype=th.float32).flatten()
        self.low, self.high, self.half_range = low_t, high_t, 0.5 * (high_t - low_t)
        self.log_box_volume = float(th.log(self.half_range.double()).sum())  # log |da / d tanh(u)|

    def proba_distribution(self: SelfTanhNormal, mean_actions: th.Tensor, log_std: th.Tensor) -> SelfTanhNormal:
        """``N(mean, exp(log_std))`` over pre-tanh actions (argument validation off: it runs every minibatch)."""
        action_std = th.ones_like(mean_actions) * log_std.exp()
        self.distribution = Normal(mean_actions, action_std, validate_args=False)
        return self

    # -- env space (SB3's Distribution contract) ------------------------------------------------

    def to_env(self, pre_tanh: th.Tensor) -> th.Tensor:
        """Pre-tanh actions ``[batch, action_dim]`` -> env-space actions in ``[low, high]``.

        Clamped to the bounds: with a saturated ``tanh``, ``low + 2 * half_range`` can round one
        float above ``high``.
        """
        low, high, half_range = self.low.to(pre_tanh), self.high.to(pre_tanh), self.half_range.to(pre_tanh)
        return th.clamp(low + (th.tanh(pre_tanh) + 1.0) * half_range, low, high)

    def to_pre_tanh(self, actions: th.Tensor) -> th.Tensor:
        """Env-space actions -> pre-tanh actions; the Box edges map to ``atanh(1 - 1e-6)``."""
        actions = actions.to(self.distribution.mean.dtype)
        low, half_range = self.low.to(actions), self.half_range.to(actions)
        squashed = th.clamp((actions - low) / half_range - 1.0, -ATANH_LIMIT, ATANH_LIMIT)
        return th.atanh(squashed)

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        """Log-density of env-space ``actions`` ``[batch, action_dim]`` in the Box, ``[batch]``."""
        return self.pre_tanh_log_prob(self.to_pre_tanh(actions)) - self.log_box_volume

    def entropy(self) -> th.Tensor:
        """One-sample entropy estimate of the env-space action, ``[batch]``."""
        return self.pre_tanh_entropy() + self.log_box_volume

    def sample(self) -> th.Tensor:
        """Env-space actions drawn from the policy."""
        return self.to_env(self.distribution.rsample())

    def mode(self) -> th.Tensor:
        """The squashed mean in env space (the deterministic action)."""
        return self.to_env(self.distribution.mean)

    # -- pre-tanh space (PPO's exact path) ------------------------------------------------------

    def pre_tanh_log_prob(self, pre_tanh: th.Tensor) -> th.Tensor:
        """Log-density of ``tanh(pre_tanh)`` in ``(-1, 1)``, ``[batch]``: exact for what the rollout sampled."""
        gaussian = sum_independent_dims(self.distribution.log_prob(pre_tanh))
        return gaussian - tanh_log_det_jacobian(pre_tanh).sum(dim=-1)

    def pre_tanh_entropy(self, noise: th.Tensor | None = None) -> th.Tensor:
        """One-sample entropy estimate of ``tanh(u)`` in ``(-1, 1)``, ``[batch]``.

        :param noise: the standard normal draw ``eps`` ``[batch, action_dim]`` (drawn here when None).
        """
        normal = self.distribution
        u = normal.rsample() if noise is None else normal.mean + normal.stddev * noise
        gaussian = sum_independent_dims(self.distribution.entropy())
        return gaussian + tanh_log_det_jacobian(u).sum(dim=-1)
