"""One rollout's action sampler: :meth:`TanhGaussianPolicy.rollout_actions` at a fraction of its cost.

During a rollout the policy's weights and its observation statistics do not change, yet
``rollout_actions`` recomputes ``sqrt(var + eps)`` and ``exp(log_std)`` and goes through a
dozen ``nn.Module`` calls (hooks, ``__call__`` dispatch) on every step. For 16 copies and
64x64 networks that overhead is most of the ~0.2 ms a step's inference costs.

:class:`RolloutSampler` is built once per rollout. It keeps the derived constants and calls
the layers' functional forms, performing the same floating-point operations in the same
order and drawing the same random numbers, so its outputs are bitwise those of
``rollout_actions`` (``tests/unit/test_policy.py`` checks it). Policies it does not know
(custom extractors or networks, hooks) keep ``rollout_actions``: :func:`rollout_sampler`
returns None for them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn
from torch.nn import functional

from roboppo.common.distributions import HALF_LOG_2PI, TanhNormalDistribution, tanh_log_det_jacobian
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.policies import TanhGaussianPolicy, has_forward_hooks, pre_tanh_policy

Layer = Callable[[th.Tensor], th.Tensor]
STATELESS_ACTIVATIONS = (nn.Tanh, nn.ReLU, nn.ELU, nn.LeakyReLU, nn.SiLU, nn.GELU, nn.Sigmoid, nn.Identity)


class RolloutSampler:
    """``rollout_actions`` of ``policy`` with this rollout's constants computed once (see the module docstring).

    The layers are read through the policy's own parameter tensors, so in-place updates show; the
    constants derived from ``log_std`` and the observation statistics are recomputed whenever those
    tensors have changed in place since (a callback loading parameters in the middle of a rollout).
    """

    def __init__(self, policy: TanhGaussianPolicy) -> None:
        distribution = policy.action_dist
        assert isinstance(distribution, TanhNormalDistribution)
        self.policy = policy
        self._sources: list[th.Tensor] = [policy.log_std]
        for extractor in policy.observation_normalizers():
            self._sources += [extractor.obs_rms.mean, extractor.obs_rms.var]
        self._refresh()
        mlp = policy.mlp_extractor
        self.actor = [*map(_layer, mlp.policy_net), _layer(policy.action_net)]
        self.critic = [*map(_layer, mlp.value_net), _layer(policy.value_net)]
        device = policy.log_std.device
        self.low, self.high = distribution.low.to(device), distribution.high.to(device)
        self.half_range = distribution.half_range.to(device)
        self.action_shape = policy.action_space.shape

    def __call__(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
        """Pre-tanh actions, env-space actions, values ``[batch, 1]`` and log-probabilities ``[batch]``."""
        if [tensor._version for tensor in self._sources] != self._versions:
            self._refresh()
        pi_features = self.pi_features(obs)
        vf_features = pi_features if self.vf_features is None else self.vf_features(obs)
        mean = _through(self.actor, pi_features)
        values = _through(self.critic, vf_features)
        noise = th.randn_like(mean)
        actions = mean + self.std * noise
        gaussian = (-0.5 * noise.square() - self.log_std - HALF_LOG_2PI).sum(dim=-1)
        log_probs = gaussian - tanh_log_det_jacobian(actions).sum(dim=-1)
        env_actions = th.clamp(self.low + (th.tanh(actions) + 1.0) * self.half_range, self.low, self.high)
        return actions, env_actions.reshape(-1, *self.action_shape), values, log_probs  # type: ignore[misc]

    def _refresh(self) -> None:
        """(Re)compute the constants derived from ``log_std`` and the observation statistics."""
        policy = self.policy
        self.pi_features = _features(policy.pi_features_extractor)  # type: ignore[arg-type]
        shared = policy.vf_features_extractor is policy.pi_features_extractor
        self.vf_features = None if shared else _features(policy.vf_features_extractor)  # type: ignore[arg-type]
        self.log_std = policy.log_std
        self.std = policy.log_std.exp()
        self._versions = [tensor._version for tensor in self._sources]


def rollout_sampler(policy: nn.Module) -> RolloutSampler | None:
    """A :class:`RolloutSampler` for ``policy``, or None where ``rollout_actions`` (or SB3's ``forward``) must run.

    It applies to roboppo's policy on its pre-tanh path with non-image Box observations, its own extractor, SB3's
    ``MlpExtractor`` of linear layers and stock activations, and no forward hooks.
    """
    tanh_policy = pre_tanh_policy(policy)  # type: ignore[arg-type]
    if tanh_policy is None or not _plain(tanh_policy):
        return None
    return RolloutSampler(tanh_policy)


def _plain(policy: TanhGaussianPolicy) -> bool:
    space = policy.observation_space
    if not isinstance(space, spaces.Box) or (policy.normalize_images and is_image_space(space)):
        return False  # other spaces are preprocessed by SB3's preprocess_obs first
    extractors = (policy.pi_features_extractor, policy.vf_features_extractor)
    mlp = policy.mlp_extractor
    if not all(type(e) is NormalizedFlattenExtractor for e in extractors) or type(mlp) is not MlpExtractor:
        return False
    layers = [*mlp.policy_net, *mlp.value_net]
    if not all(type(layer) in (nn.Linear, *STATELESS_ACTIVATIONS) for layer in layers):
        return False
    hooks = (nn.modules.module._global_forward_hooks, nn.modules.module._global_forward_pre_hooks)
    return not any(hooks) and not has_forward_hooks(policy)


def _features(extractor: NormalizedFlattenExtractor) -> Layer:
    """``extractor.forward`` with the float32 mean and standard deviation computed once."""
    if not (extractor.normalize and extractor.has_statistics):
        return lambda obs: obs.float().flatten(start_dim=1)
    statistics, clip = extractor.obs_rms, extractor.clip
    mean = statistics.mean.to(th.float32)
    std = th.sqrt(statistics.var + statistics.epsilon).to(th.float32)
    return lambda obs: th.clamp((obs.float() - mean) / std, -clip, clip).flatten(start_dim=1)


def _layer(module: nn.Module) -> Layer:
    if isinstance(module, nn.Linear):
        weight, bias = module.weight, module.bias
        return lambda x: functional.linear(x, weight, bias)
    return module.forward


def _through(layers: list[Layer], x: th.Tensor) -> th.Tensor:
    for layer in layers:
        x = layer(x)
    return x
