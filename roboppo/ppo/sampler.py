"""One rollout's action sampler: :meth:`TanhGaussianPolicy.rollout_actions` in NumPy, at a fraction of its cost.

A rollout step's policy call for 16 copies and 64x64 networks is about 35 small operations. In
PyTorch each costs 2-4 us of dispatch whatever its size, about 0.1 ms a step, more than the
arithmetic. NumPy runs the same operations on arrays this small in about a third of the time.

:class:`RolloutSampler` is built once per rollout (weights and observation statistics do not
change during one) for a policy on the CPU. It reads the layers through NumPy views of the policy's
own parameter tensors and draws its noise with ``torch.randn`` from PyTorch's generator, the same
draws of the same shape as ``rollout_actions``. So a seed gives the same random numbers, and every
output equals ``rollout_actions``'s up to float32 rounding: NumPy's matrix products and ``tanh``
may round the last bit differently (``tests/unit/test_sampler.py``). Policies it does not know
(custom extractors or networks, GELU, forward hooks, a GPU) keep ``rollout_actions``:
:func:`rollout_sampler` returns None for them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn

from roboppo.common.distributions import HALF_LOG_2PI, LOG_2, TanhNormalDistribution
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.policies import TanhGaussianPolicy, has_forward_hooks, pre_tanh_policy

Array = np.ndarray
Layer = Callable[[Array], Array]


def _sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` as ``(1 + tanh(x / 2)) / 2``, which cannot overflow."""
    return np.float32(0.5) + np.float32(0.5) * np.tanh(np.float32(0.5) * x)


def _numpy_activation(module: nn.Module) -> Layer | None:
    """``module``'s forward on float32 arrays, or None for an activation without a NumPy twin here."""
    if isinstance(module, nn.Tanh):
        return np.tanh
    if isinstance(module, nn.ReLU):
        return lambda x: np.maximum(x, np.float32(0.0))
    if isinstance(module, nn.ELU):
        alpha = np.float32(module.alpha)
        return lambda x: np.where(x > 0, x, alpha * np.expm1(x))
    if isinstance(module, nn.LeakyReLU):
        slope = np.float32(module.negative_slope)
        return lambda x: np.where(x > 0, x, x * slope)
    if isinstance(module, nn.SiLU):
        return lambda x: x * _sigmoid(x)
    if isinstance(module, nn.Sigmoid):
        return _sigmoid
    if isinstance(module, nn.Identity):
        return lambda x: x
    return None


class RolloutSampler:
    """``rollout_actions`` of a CPU ``policy`` in NumPy (see the module docstring).

    Weights are NumPy views of the parameters, so in-place updates show; the constants derived from
    ``log_std`` and the observation statistics are recomputed whenever those tensors have changed in
    place since (a callback loading parameters in the middle of a rollout).
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
        self.low, self.high = (bound.numpy().astype(np.float32) for bound in (distribution.low, distribution.high))
        self.half_range = distribution.half_range.numpy().astype(np.float32)
        self.action_shape: tuple[int, ...] = policy.action_space.shape  # type: ignore[assignment]

    def __call__(self, obs: Array) -> tuple[Array, Array, th.Tensor, th.Tensor]:
        """Pre-tanh and env-space actions, values ``[batch, 1]`` and log-probabilities ``[batch]`` for raw ``obs``."""
        if [tensor._version for tensor in self._sources] != self._versions:
            self._refresh()
        pi_features = self.pi_features(obs)
        vf_features = pi_features if self.vf_features is None else self.vf_features(obs)
        mean = _through(self.actor, pi_features)
        values = _through(self.critic, vf_features)
        noise = th.randn(mean.shape, dtype=th.float32).numpy()  # rollout_actions' draws, from the same generator
        actions = mean + self.std * noise
        log_probs = (np.float32(-0.5) * noise * noise).sum(axis=-1) + self.log_norm
        log_probs -= _tanh_log_det_jacobian(actions).sum(axis=-1)
        squashed = self.low + (np.tanh(actions) + np.float32(1.0)) * self.half_range
        env_actions = np.minimum(np.maximum(squashed, self.low), self.high)
        return actions, env_actions.reshape(-1, *self.action_shape), th.from_numpy(values), th.from_numpy(log_probs)

    def _refresh(self) -> None:
        """(Re)compute the constants derived from ``log_std`` and the observation statistics."""
        policy = self.policy
        self.pi_features = _features(policy.pi_features_extractor)  # type: ignore[arg-type]
        shared = policy.vf_features_extractor is policy.pi_features_extractor
        self.vf_features = None if shared else _features(policy.vf_features_extractor)  # type: ignore[arg-type]
        log_std = policy.log_std.detach()
        self.std = log_std.exp().numpy()
        self.log_norm = np.float32((-log_std - HALF_LOG_2PI).sum().item())
        self._versions = [tensor._version for tensor in self._sources]


def rollout_sampler(policy: nn.Module) -> RolloutSampler | None:
    """A :class:`RolloutSampler` for ``policy``, or None where ``rollout_actions`` (or SB3's ``forward``) must run.

    It applies to roboppo's policy on the CPU, on its pre-tanh path, with non-image Box observations,
    its own extractor, SB3's ``MlpExtractor`` of linear layers and activations with a NumPy twin, and
    no forward hooks.
    """
    tanh_policy = pre_tanh_policy(policy)  # type: ignore[arg-type]
    if tanh_policy is None or not _plain(tanh_policy):
        return None
    return RolloutSampler(tanh_policy)


def _plain(policy: TanhGaussianPolicy) -> bool:
    space = policy.observation_space
    if policy.device.type != "cpu" or not isinstance(space, spaces.Box):
        return False
    if policy.normalize_images and is_image_space(space):
        return False  # preprocessed by SB3's preprocess_obs first
    extractors = (policy.pi_features_extractor, policy.vf_features_extractor)
    mlp = policy.mlp_extractor
    if not all(type(e) is NormalizedFlattenExtractor for e in extractors) or type(mlp) is not MlpExtractor:
        return False
    layers = [*mlp.policy_net, *mlp.value_net]
    if not all(type(layer) is nn.Linear or _numpy_activation(layer) is not None for layer in layers):
        return False
    if any(p.dtype != th.float32 for p in policy.parameters()):
        return False
    hooks = (nn.modules.module._global_forward_hooks, nn.modules.module._global_forward_pre_hooks)
    return not any(hooks) and not has_forward_hooks(policy)


def _features(extractor: NormalizedFlattenExtractor) -> Layer:
    """``extractor.forward`` on arrays, with the float32 mean and standard deviation computed once."""
    if not (extractor.normalize and extractor.has_statistics):
        return lambda obs: obs.astype(np.float32, copy=False).reshape(len(obs), -1)
    statistics, clip = extractor.obs_rms, np.float32(extractor.clip)
    mean = statistics.mean.to(th.float32).numpy()
    std = th.sqrt(statistics.var + statistics.epsilon).to(th.float32).numpy()

    def normalize(obs: Array) -> Array:
        scaled = (obs.astype(np.float32, copy=False) - mean) / std
        return np.minimum(np.maximum(scaled, -clip), clip).reshape(len(obs), -1)

    return normalize


def _layer(module: nn.Module) -> Layer:
    if isinstance(module, nn.Linear):
        weight = module.weight.detach().numpy().T  # views: in-place updates of the parameters show
        if module.bias is None:
            return lambda x: x @ weight
        bias = module.bias.detach().numpy()
        return lambda x: x @ weight + bias
    activation = _numpy_activation(module)
    assert activation is not None
    return activation


def _through(layers: list[Layer], x: Array) -> Array:
    for layer in layers:
        x = layer(x)
    return x


def _tanh_log_det_jacobian(pre_tanh: Array) -> Array:
    """:func:`roboppo.common.distributions.tanh_log_det_jacobian` on arrays (``logaddexp(0, x)`` is softplus)."""
    return np.float32(2.0) * (np.float32(LOG_2) - pre_tanh - np.logaddexp(np.float32(0.0), np.float32(-2.0) * pre_tanh))
