"""One rollout's action sampler: the policy's :class:`~roboppo.ppo.fast_paths.PolicyGraph` lowered to NumPy.

A rollout step's policy call for 16 copies and 64x64 networks is about 35 small operations. In
PyTorch each costs 2-4 us of dispatch whatever its size, about 0.1 ms a step, more than the
arithmetic. NumPy runs the same operations on arrays this small in about a third of the time.

:class:`RolloutSampler` computes what :meth:`TanhGaussianPolicy.rollout_actions` computes, from
the graph :func:`roboppo.ppo.fast_paths.describe` builds of the policy's own modules: one NumPy
function per operation (:data:`NUMPY_OPS`), reading the policy's tensors through NumPy views, so
in-place writes (``.data`` included) show at the next call. Everything derived from them
(``exp(log_std)``, the float32 observation statistics) is recomputed at every call. Before each
call it checks that the graph is still current; a replaced parameter or a new hook makes it
describe the policy again, and return None (the caller runs the torch path) while the policy
no longer qualifies, with the reason in :attr:`RolloutSampler.refusal`.

The noise comes from ``torch.randn`` on PyTorch's generator, the same draws of the same shape as
``rollout_actions``, so a seed gives the same random numbers, and every output equals
``rollout_actions``'s to float32 rounding (``tests/unit/test_fast_paths.py``).

While roboppo's PPO collects a rollout, NumPy's BLAS runs on one thread (:func:`one_blas_thread`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import numpy as np
import torch as th
from threadpoolctl import ThreadpoolController

from roboppo.common.distributions import HALF_LOG_2PI, LOG_2, TanhNormalDistribution
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.ppo.fast_paths import Op, PolicyGraph, Watch, describe

Array = np.ndarray
Layer = Callable[[Array], Array]


def _sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` as ``(1 + tanh(x / 2)) / 2``, which cannot overflow."""
    return np.float32(0.5) + np.float32(0.5) * np.tanh(np.float32(0.5) * x)


# each activation of roboppo.common.activations.ACTIVATIONS on float32 arrays, given its parameter
NUMPY_OPS: dict[str, Callable[[float], Layer]] = {
    "tanh": lambda _: np.tanh,
    "relu": lambda _: lambda x: np.maximum(x, np.float32(0.0)),
    "elu": lambda alpha: lambda x: np.where(x > 0, x, np.float32(alpha) * np.expm1(np.minimum(x, np.float32(0.0)))),
    "leaky_relu": lambda slope: lambda x: np.where(x > 0, x, x * np.float32(slope)),
    "silu": lambda _: lambda x: x * _sigmoid(x),
    "sigmoid": lambda _: _sigmoid,
    "identity": lambda _: lambda x: x,
}


class RolloutSampler:
    """``rollout_actions`` of the policy ``graph`` describes, in NumPy (see the module docstring)."""

    def __init__(self, graph: PolicyGraph) -> None:
        self.refusal: str | None = None
        self._refused_at: Watch | None = None  # the policy as it was when refused
        self._build(graph)

    def __call__(self, obs: Array) -> tuple[Array, Array, th.Tensor, th.Tensor] | None:
        """Pre-tanh and env-space actions, values ``[batch, 1]`` and log-probabilities ``[batch]`` for raw ``obs``;
        None when the policy no longer has a graph (:attr:`refusal` says why)."""
        if (self.refusal is not None or not self.graph.current()) and not self._redescribe():
            return None
        pi_features = self.pi_features(obs)
        vf_features = pi_features if self.vf_features is None else self.vf_features(obs)
        mean = _through(self.actor, pi_features)
        values = _through(self.critic, vf_features)
        noise = th.randn(mean.shape, dtype=th.float32).numpy()  # rollout_actions' draws, from the same generator
        log_std = self.log_std
        actions = mean + np.exp(log_std) * noise
        log_probs = (np.float32(-0.5) * noise * noise - log_std - np.float32(HALF_LOG_2PI)).sum(axis=-1)
        log_probs -= _tanh_log_det_jacobian(actions).sum(axis=-1)
        squashed = self.low + (np.tanh(actions) + np.float32(1.0)) * self.half_range
        env_actions = np.minimum(np.maximum(squashed, self.low), self.high)
        return actions, env_actions.reshape(-1, *self.action_shape), th.from_numpy(values), th.from_numpy(log_probs)

    def _build(self, graph: PolicyGraph) -> None:
        self.graph = graph
        self.pi_features = _features(graph.pi_features)
        self.vf_features = None if graph.vf_features is graph.pi_features else _features(graph.vf_features)
        self.actor = [_numpy_op(op) for op in graph.actor]
        self.critic = [_numpy_op(op) for op in graph.critic]
        self.log_std = graph.log_std.detach().numpy()  # a view: in-place writes show
        distribution = graph.policy.action_dist
        assert isinstance(distribution, TanhNormalDistribution)
        self.low, self.high, self.half_range = (
            bound.detach().numpy() for bound in (distribution.low, distribution.high, distribution.half_range)
        )
        self.action_shape: tuple[int, ...] = graph.policy.action_space.shape  # type: ignore[assignment]

    def _redescribe(self) -> bool:
        """Describe the policy again after a change; False (with :attr:`refusal`) when it no longer qualifies."""
        if self._refused_at is not None and self._refused_at.unchanged():
            return False  # nothing changed since it was refused
        graph = describe(self.graph.policy)
        if isinstance(graph, str):
            self.refusal, self._refused_at = graph, Watch(self.graph.policy, hook_tables=True)
            return False
        self.refusal, self._refused_at = None, None
        self._build(graph)
        return True


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Inside the block NumPy's BLAS runs on one thread; after it, on as many as before.

    The sampler's products are a few rows by a few hundred columns. From about 8 x 256 x 256 on,
    OpenBLAS splits them over its threads, and at these sizes the hand-offs cost more than the split
    saves, most of all beside a busy core (a second run, the overlapped update, any other process).
    docs/studies.md (retired benchmark scripts) has the timings of both ways."""
    with _blas().limit(limits=1, user_api="blas"):
        yield


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()  # about 1 ms: finds the loaded libraries once


def _features(extractor: NormalizedFlattenExtractor) -> Layer:
    """``extractor.forward`` on arrays; the statistics are read (float64 views) and rounded at every call."""
    statistics = extractor.obs_rms
    mean64, var64 = statistics.mean.numpy(), statistics.var.numpy()
    columns = None if extractor.columns is None else extractor.columns.numpy()  # an asymmetric actor-critic's

    def features(obs: Array) -> Array:
        x = obs.astype(np.float32, copy=False)
        if columns is not None:
            x = x[..., columns]
        if extractor.normalize and extractor.has_statistics:
            mean = mean64.astype(np.float32)
            std = np.sqrt(var64 + statistics.epsilon).astype(np.float32)
            clip = np.float32(extractor.clip)
            x = np.minimum(np.maximum((x - mean) / std, -clip), clip)
        return x.reshape(len(obs), -1)

    return features


def _numpy_op(op: Op) -> Layer:
    if op.kind != "linear":
        return NUMPY_OPS[op.kind](op.arg)
    assert op.weight is not None
    weight = op.weight.detach().numpy().T  # views: in-place updates of the parameters show
    if op.bias is None:
        return lambda x: x @ weight
    bias = op.bias.detach().numpy()
    return lambda x: x @ weight + bias


def _through(layers: list[Layer], x: Array) -> Array:
    for layer in layers:
        x = layer(x)
    return x


def _tanh_log_det_jacobian(pre_tanh: Array) -> Array:
    """:func:`roboppo.common.distributions.tanh_log_det_jacobian` on arrays (``logaddexp(0, x)`` is softplus)."""
    return np.float32(2.0) * (np.float32(LOG_2) - pre_tanh - np.logaddexp(np.float32(0.0), np.float32(-2.0) * pre_tanh))
