"""Every fast path computes exactly the policy it stands for, or steps aside: a matrix of policy variants.

For each variant a user can build through ``policy_kwargs`` or a subclass, and each fast path:

- the rollout sampler's actions, log-probs and values equal the policy's own torch computation
  (1e-5), or the sampler is refused and the rollout is exactly ``rollout_actions`` / ``forward``;
- the compiled update's weights after one update equal the torch update's (1e-5 relative), or it
  is refused and the update is the torch one;
- the exported file's actions equal ``predict(obs, deterministic=True)`` (1e-5), or export refuses.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.util
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from threadpoolctl import ThreadpoolController
from torch import nn
from torch.nn.utils import parametrizations, parametrize

from roboppo import PPO, TanhGaussianPolicy
from roboppo.common.activations import ACTIVATIONS
from roboppo.common.distributions import TanhNormalDistribution
from roboppo.common.normalization import NormalizedFlattenExtractor
from roboppo.export import ExportError, export_policy
from roboppo.ppo import torch_train
from roboppo.ppo.fast_paths import describe, export_refusal, sampler_choice, update_choice
from roboppo.ppo.rollout import policy_actions
from roboppo.ppo.sampler import NUMPY_OPS, RolloutSampler
from roboppo.ppo.update import RolloutBatch, UpdateSettings

OBS = spaces.Box(-np.inf, np.inf, (5,), np.float32)
ACTIONS = spaces.Box(np.array([-3.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32))


# -- the variants ---------------------------------------------------------------------------------


class TwiceTanh(nn.Tanh):
    def forward(self, x: th.Tensor) -> th.Tensor:
        return th.tanh(2.0 * x)


class QuietReLU(nn.ReLU):
    """A subclass that changes nothing: still not the exact type the fast paths were written for."""


class ScaledExtractor(NormalizedFlattenExtractor):
    def forward(self, observations: th.Tensor) -> th.Tensor:
        return 0.5 * super().forward(observations)


class Doubled(MlpExtractor):
    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return 2.0 * super().forward_actor(features)


class DoubledPolicy(TanhGaussianPolicy):
    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = Doubled(self.features_dim, self.net_arch, self.activation_fn, self.device)


class NarrowPolicy(TanhGaussianPolicy):
    """Overrides the distribution: its mean is halved."""

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor) -> Any:
        return self.action_dist.proba_distribution(0.5 * self.action_net(latent_pi), self.log_std)


class ShiftedValues(TanhGaussianPolicy):
    def predict_values(self, obs: th.Tensor) -> th.Tensor:
        return super().predict_values(obs) + 1.0


class OwnRollout(TanhGaussianPolicy):
    def rollout_actions(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor]:
        pre_tanh, env_actions, values, log_probs = super().rollout_actions(obs)
        return pre_tanh, env_actions, values + 1.0, log_probs


class OnlyInit(TanhGaussianPolicy):
    """A subclass that only sets defaults: computes exactly what its parent does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("net_arch", [12, 12])
        super().__init__(*args, **kwargs)


class OwnPredict(TanhGaussianPolicy):
    def predict(self, *args: Any, **kwargs: Any) -> Any:
        actions, state = super().predict(*args, **kwargs)
        return actions * 0.5, state


class SharedTrunk(TanhGaussianPolicy):
    """The actor and the critic share their first layer: one parameter, two uses."""

    def _build_mlp_extractor(self) -> None:
        super()._build_mlp_extractor()
        self.mlp_extractor.value_net[0] = self.mlp_extractor.policy_net[0]


def _one_log_std(policy: TanhGaussianPolicy) -> None:
    policy.log_std = nn.Parameter(th.full((1,), -0.5))
    policy.optimizer = th.optim.Adam(policy.parameters(), lr=3e-4, eps=1e-5)


def _own_to_env(policy: TanhGaussianPolicy) -> None:
    distribution = policy.action_dist
    distribution.to_env = lambda pre_tanh: TanhNormalDistribution.to_env(distribution, 0.5 * pre_tanh)  # type: ignore


class Scale(nn.Module):
    def forward(self, weight: th.Tensor) -> th.Tensor:
        return 1.5 * weight


def _forward_hook(policy: TanhGaussianPolicy) -> None:
    policy.action_net.register_forward_hook(lambda module, inputs, output: output * 2)


def _pre_hook(policy: TanhGaussianPolicy) -> None:
    policy.mlp_extractor.policy_net[0].register_forward_pre_hook(lambda module, inputs: (inputs[0] * 3,))


def _backward_hook(policy: TanhGaussianPolicy) -> None:
    policy.value_net.register_full_backward_hook(lambda module, grad_in, grad_out: (grad_in[0] * 0.1,))


def _gradient_hook(policy: TanhGaussianPolicy) -> None:
    policy.action_net.weight.register_hook(lambda grad: grad * 10)


def _weight_norm(policy: TanhGaussianPolicy) -> None:
    parametrizations.weight_norm(policy.action_net)


def _spectral_norm(policy: TanhGaussianPolicy) -> None:
    parametrizations.spectral_norm(policy.mlp_extractor.value_net[0])


def _custom_parametrization(policy: TanhGaussianPolicy) -> None:
    parametrize.register_parametrization(policy.mlp_extractor.policy_net[0], "weight", Scale())


def _old_weight_norm(policy: TanhGaussianPolicy) -> None:
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(policy.action_net)


def _instance_forward(policy: TanhGaussianPolicy) -> None:
    head = policy.action_net
    head.forward = lambda x: nn.functional.linear(x, head.weight, head.bias) - 1.0  # type: ignore[method-assign]


def _frozen_layer(policy: TanhGaussianPolicy) -> None:
    policy.mlp_extractor.policy_net[0].weight.requires_grad_(False)


def _optimizer_hook(policy: TanhGaussianPolicy) -> None:
    policy.optimizer.register_step_post_hook(lambda optimizer, args, kwargs: None)


@dataclasses.dataclass(frozen=True)
class Variant:
    """A policy a user can build, and the paths it must get: ``numpy``/``jax`` run the fast paths."""

    sampler: str
    update: str
    kwargs: dict = dataclasses.field(default_factory=dict)
    policy_class: type[ActorCriticPolicy] = TanhGaussianPolicy
    change: Callable[[TanhGaussianPolicy], None] | None = None
    reason: str = ""  # a word the refusal names
    torchscript_refusal: str = ""  # what TorchScript export refuses, when it does

    def build(self, seed: int = 0) -> ActorCriticPolicy:
        th.manual_seed(seed)
        policy = self.policy_class(OBS, ACTIONS, lambda _: 3e-4, **self.kwargs)  # type: ignore[arg-type]
        if isinstance(policy, TanhGaussianPolicy):
            policy.update_obs_normalizer(np.random.default_rng(3).normal(2.0, 3.0, size=(256, 5)).astype(np.float32))
        with th.no_grad():  # weights away from the initial ones, so that every layer matters
            for parameter in policy.parameters():
                parameter.add_(th.randn_like(parameter) * 0.3)
        if self.change is not None:
            self.change(policy)  # type: ignore[arg-type]
        policy.set_training_mode(False)  # as during rollouts (spectral norm iterates in training mode)
        return policy


FAST = {"sampler": "numpy", "update": "jax"}
TORCH = {"sampler": "torch", "update": "torch"}
SB3 = {"sampler": "sb3", "update": "sb3"}


def act(fn: Any) -> dict:
    return {"activation_fn": fn, "net_arch": [16, 16]}


VARIANTS: dict[str, Variant] = {
    "default": Variant(**FAST),
    "net_arch list": Variant(**FAST, kwargs={"net_arch": [32, 16]}),
    "net_arch dict": Variant(**FAST, kwargs={"net_arch": {"pi": [16], "vf": [8, 8]}}),
    "net_arch empty": Variant(**FAST, kwargs={"net_arch": []}),
    "actor empty": Variant(**FAST, kwargs={"net_arch": {"pi": [], "vf": [8]}}),
    "separate extractors": Variant(**FAST, kwargs={"net_arch": [16], "share_features_extractor": False}),
    "ortho_init off": Variant(**FAST, kwargs={"ortho_init": False}),
    "log_std_init": Variant(**FAST, kwargs={"log_std_init": -1.5}),
    "no normalization": Variant(**FAST, kwargs={"normalize_obs": False}),
    "tight clip": Variant(**FAST, kwargs={"obs_clip": 0.5}),
    "subclass with defaults": Variant(**FAST, policy_class=OnlyInit),
    **{f"activation {name}": Variant(**FAST, kwargs=act(cls)) for name, (cls, _) in ACTIVATIONS.items()},
    "ELU alpha 0.2": Variant(**FAST, kwargs=act(functools.partial(nn.ELU, alpha=0.2))),
    "LeakyReLU slope 0.3": Variant(**FAST, kwargs=act(functools.partial(nn.LeakyReLU, negative_slope=0.3))),
    "GELU": Variant(**TORCH, kwargs=act(nn.GELU), reason="GELU"),
    "GELU tanh": Variant(**TORCH, kwargs=act(functools.partial(nn.GELU, approximate="tanh")), reason="GELU"),
    "Softplus beta": Variant(**TORCH, kwargs=act(functools.partial(nn.Softplus, beta=2.0)), reason="Softplus"),
    "Mish": Variant(**TORCH, kwargs=act(nn.Mish), reason="Mish"),
    "Hardtanh": Variant(**TORCH, kwargs=act(nn.Hardtanh), reason="Hardtanh"),
    "PReLU": Variant(**TORCH, kwargs=act(nn.PReLU), reason="PReLU"),
    "SELU": Variant(**TORCH, kwargs=act(nn.SELU), reason="SELU"),
    "CELU alpha": Variant(**TORCH, kwargs=act(functools.partial(nn.CELU, alpha=0.5)), reason="CELU"),
    "Softsign": Variant(**TORCH, kwargs=act(nn.Softsign), reason="Softsign"),
    "Tanh subclass": Variant(**TORCH, kwargs=act(TwiceTanh), reason="TwiceTanh"),
    "ReLU subclass": Variant(**TORCH, kwargs=act(QuietReLU), reason="QuietReLU"),
    "SB3 FlattenExtractor": Variant(**TORCH, kwargs={"features_extractor_class": FlattenExtractor}, reason="Flatten"),
    "extractor subclass": Variant(**TORCH, kwargs={"features_extractor_class": ScaledExtractor}, reason="Scaled"),
    "MlpExtractor subclass": Variant(**TORCH, policy_class=DoubledPolicy, reason="Doubled"),
    "predict_values overridden": Variant(**TORCH, policy_class=ShiftedValues, reason="predict_values"),
    "rollout_actions overridden": Variant(**TORCH, policy_class=OwnRollout, reason="rollout_actions"),
    "distribution overridden": Variant(**SB3, policy_class=NarrowPolicy, reason="_get_action_dist_from_latent"),
    "predict overridden": Variant(**TORCH, policy_class=OwnPredict, reason="predict", torchscript_refusal="predict"),
    "forward hook": Variant(**TORCH, change=_forward_hook, reason="hook"),
    "forward pre-hook": Variant(**TORCH, change=_pre_hook, reason="hook"),
    "backward hook": Variant(**TORCH, change=_backward_hook, reason="hook", torchscript_refusal="backward hook"),
    "gradient hook": Variant(sampler="numpy", update="torch", change=_gradient_hook, reason="gradient hook"),
    "weight norm": Variant(**TORCH, change=_weight_norm, reason="parametrized"),
    "spectral norm": Variant(**TORCH, change=_spectral_norm, reason="parametrized"),
    "parametrization": Variant(**TORCH, change=_custom_parametrization, reason="parametrized"),
    "legacy weight_norm": Variant(**TORCH, change=_old_weight_norm, reason="hook"),
    "forward replaced on an instance": Variant(**TORCH, change=_instance_forward, reason="instance"),
    "frozen layer": Variant(sampler="numpy", update="torch", change=_frozen_layer, reason="frozen"),
    "SGD": Variant(sampler="numpy", update="torch", kwargs={"optimizer_class": th.optim.SGD}, reason="SGD"),
    "Adam weight decay": Variant(
        sampler="numpy", update="torch", kwargs={"optimizer_kwargs": {"weight_decay": 1e-3}}, reason="weight_decay"
    ),
    "optimizer hook": Variant(sampler="numpy", update="torch", change=_optimizer_hook, reason="hook"),
    "SB3 policy": Variant(**SB3, policy_class=ActorCriticPolicy, reason="not roboppo"),
    "tied layer": Variant(sampler="numpy", update="torch", policy_class=SharedTrunk, reason="tied"),
    "one log_std for every dimension": Variant(**TORCH, change=_one_log_std, reason="log_std"),
    "an instance method of the distribution": Variant(**TORCH, change=_own_to_env, reason="action_dist.to_env"),
}


@pytest.fixture(params=list(VARIANTS), ids=list(VARIANTS))
def variant(request: pytest.FixtureRequest) -> Variant:
    return VARIANTS[request.param]


# -- which path runs ------------------------------------------------------------------------------


def test_one_place_decides_and_names_the_reason(variant: Variant) -> None:
    policy = variant.build()
    sampler, update = sampler_choice(policy), update_choice(policy)
    assert (sampler.path, update.path) == (variant.sampler, variant.update)
    for choice in (sampler, update):
        fast = choice.path in ("numpy", "jax")
        assert (choice.reason is None) == fast and (choice.graph is not None) == fast
    if variant.reason:
        refusal = update.reason if update.reason is not None else sampler.reason
        assert variant.reason.lower() in str(refusal).lower(), refusal


def test_a_method_replaced_on_a_class_makes_the_fast_paths_step_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = Variant(**FAST).build()
    monkeypatch.setattr(nn.Tanh, "forward", lambda self, x: th.tanh(2.0 * x))
    for choice in (sampler_choice(policy), update_choice(policy)):
        assert choice.path == "torch" and "Tanh.forward was replaced on the class" in str(choice.reason)
    stored, *_ = one_step(policy, observations())
    assert th.equal(stored, reference_step(policy, observations())[0])


def test_a_replaced_torch_function_or_autocast_makes_the_fast_paths_step_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = Variant(**FAST).build()
    with th.autocast("cpu", dtype=th.bfloat16):
        assert "autocast" in str(sampler_choice(policy).reason)
    linear = nn.functional.linear
    monkeypatch.setattr(nn.functional, "linear", lambda x, w, b=None: 1.5 * linear(x, w, b))
    choice = sampler_choice(policy)
    assert choice.path == "torch" and "functional.linear was replaced" in str(choice.reason)


def test_adam_steps_that_differ_between_parameters_keep_the_torch_update() -> None:
    policy = Variant(**FAST).build()
    assert isinstance(policy, TanhGaussianPolicy)
    first = policy.mlp_extractor.policy_net[0].weight
    first.requires_grad_(False)
    torch_train.train(policy, rollout_batch(policy), SETTINGS)  # Adam counts steps for every other parameter
    first.requires_grad_(True)
    choice = update_choice(policy)
    assert choice.path == "torch" and "step counts differ" in str(choice.reason)


def test_the_lowerings_know_the_same_operations() -> None:
    from roboppo.ppo.jax_program import JAX_OPS

    kinds = set(ACTIVATIONS)
    assert set(NUMPY_OPS) == kinds == set(JAX_OPS)


# -- the sampler ----------------------------------------------------------------------------------


def one_step(policy: ActorCriticPolicy, obs: th.Tensor, seed: int = 11) -> tuple:
    """What a rollout step of roboppo's PPO computes for this policy, with the path the decision gave."""
    choice = sampler_choice(policy)
    sampler = None if choice.graph is None else RolloutSampler(choice.graph)
    th.manual_seed(seed)
    with th.no_grad():
        return tuple(th.as_tensor(x) for x in policy_actions(policy, obs, choice.path != "sb3", sampler))


def reference_step(policy: ActorCriticPolicy, obs: th.Tensor, seed: int = 11) -> tuple:
    """The policy's own torch code for the same step: ``rollout_actions`` on the pre-tanh path, else ``forward``."""
    th.manual_seed(seed)
    with th.no_grad():
        if sampler_choice(policy).path == "sb3":
            actions, values, log_probs = policy(obs)
            sent = actions if not policy.squash_output else policy.unscale_action(actions)
            return actions, th.clamp(sent, th.as_tensor(ACTIONS.low), th.as_tensor(ACTIONS.high)), values, log_probs
        assert isinstance(policy, TanhGaussianPolicy)
        return policy.rollout_actions(obs)


def observations(count: int = 32) -> th.Tensor:
    return th.as_tensor(np.random.default_rng(5).normal(2.0, 6.0, size=(count, 5)), dtype=th.float32)


def test_rollout_steps_equal_the_policys_own_computation(variant: Variant) -> None:
    policy = variant.build()
    obs = observations()
    stored, sent, values, log_probs = one_step(policy, obs)
    expected = reference_step(policy, obs)
    if variant.sampler == "numpy":
        for got, want in zip((stored, sent, values, log_probs), expected, strict=True):
            th.testing.assert_close(got, want.reshape(got.shape), rtol=1e-5, atol=1e-5)
    else:  # refused: the rollout is exactly the torch one
        for got, want in zip((stored, sent, values, log_probs), expected, strict=True):
            assert th.equal(got, want.reshape(got.shape))
    with th.no_grad():  # and the log-probs and values are the policy's own score of what was stored
        if variant.sampler == "sb3":
            own_values, own_log_probs, _ = policy.evaluate_actions(obs, stored)
        else:
            assert isinstance(policy, TanhGaussianPolicy)
            own_values, own_log_probs, _ = policy.evaluate_pre_tanh(obs, stored)
    if variant.policy_class is not OwnRollout:  # its override shifts rollout values on purpose
        th.testing.assert_close(values.flatten(), own_values.flatten(), rtol=1e-5, atol=1e-5)
    th.testing.assert_close(log_probs, own_log_probs, rtol=1e-5, atol=1e-5)


# -- parameters read live -------------------------------------------------------------------------


def sampler_of(policy: TanhGaussianPolicy) -> RolloutSampler:
    choice = sampler_choice(policy)
    assert choice.graph is not None, choice.reason
    return RolloutSampler(choice.graph)


def assert_sampler_matches(sampler: RolloutSampler, policy: TanhGaussianPolicy, obs: th.Tensor) -> None:
    th.manual_seed(2)
    got = sampler(obs.numpy())
    assert got is not None, sampler.refusal
    th.manual_seed(2)
    with th.no_grad():
        want = policy.rollout_actions(obs)
    for a, b in zip(got, want, strict=True):
        th.testing.assert_close(th.as_tensor(a), b.reshape(np.shape(a)), rtol=1e-5, atol=1e-5)


def _log_std_data(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.log_std.data.fill_(-2.5)  # .data writes do not bump the parameter's version counter


def _assign(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.load_state_dict(other.state_dict(), assign=True)


def _load(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.load_state_dict(other.state_dict())


def _data_replaced(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.action_net.weight.data = other.action_net.weight.detach().clone()


def _parameter_replaced(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.action_net.bias = nn.Parameter(th.full_like(policy.action_net.bias, 4.0))


def _module_replaced(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.action_net = copy.deepcopy(other.action_net)


def _statistics(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.update_obs_normalizer(np.random.default_rng(8).normal(-5.0, 0.5, size=(64, 5)).astype(np.float32))


def _alpha(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.mlp_extractor.policy_net[1].alpha = 0.05


def _bounds(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    distribution = policy.action_dist
    assert isinstance(distribution, TanhNormalDistribution)
    distribution.low = th.full_like(distribution.low, -0.5)


def _transposed(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    weight = policy.mlp_extractor.policy_net[2].weight  # 16 x 16: a transposed view has the same address
    weight.data = weight.data.t()


def _appended(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.mlp_extractor.policy_net.append(nn.Tanh())


def _class_changed(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.mlp_extractor.policy_net[1].__class__ = nn.SiLU


def _to_cpu(policy: TanhGaussianPolicy, other: TanhGaussianPolicy) -> None:
    policy.to("cpu")


CHANGES = [_log_std_data, _assign, _load, _data_replaced, _parameter_replaced, _module_replaced, _statistics, _alpha,
           _bounds, _transposed, _appended, _class_changed, _to_cpu]  # fmt: skip


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_changes_between_two_calls_reach_the_next_sampled_action(change: Callable) -> None:
    kwargs = {"activation_fn": nn.ELU, "net_arch": [16, 16]}
    policy, other = (Variant(**FAST, kwargs=kwargs).build(seed) for seed in (0, 1))
    assert isinstance(policy, TanhGaussianPolicy) and isinstance(other, TanhGaussianPolicy)
    sampler = sampler_of(policy)
    obs = observations(8)
    assert_sampler_matches(sampler, policy, obs)
    th.manual_seed(2)
    before = sampler(obs.numpy())
    change(policy, other)
    assert_sampler_matches(sampler, policy, obs)
    th.manual_seed(2)
    after = sampler(obs.numpy())
    assert before is not None and after is not None
    if change is not _to_cpu:
        assert not (np.allclose(before[1], after[1]) and np.allclose(before[3], after[3])), "the change showed"


def test_a_hook_added_during_a_rollout_makes_the_sampler_step_aside() -> None:
    policy = Variant(**FAST).build()
    assert isinstance(policy, TanhGaussianPolicy)
    sampler = sampler_of(policy)
    obs = observations(4)
    assert sampler(obs.numpy()) is not None
    handle = policy.action_net.register_forward_hook(lambda module, inputs, output: output + 1)
    assert sampler(obs.numpy()) is None and "hook" in str(sampler.refusal)
    stored, *_ = one_step(policy, obs)  # the rollout goes on with the torch path, hook included
    assert th.equal(stored, reference_step(policy, obs)[0])
    handle.remove()
    assert sampler(obs.numpy()) is not None and sampler.refusal is None


def test_rollouts_run_numpys_blas_on_one_thread_and_restore_it_after() -> None:
    """OpenBLAS splits products from 8 x 256 x 256 on; beside a busy core its threads wait on each other."""
    blas = ThreadpoolController().select(user_api="blas")
    seen = []

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            seen.append({lib["num_threads"] for lib in blas.info()})
            return True

    model = PPO("MlpPolicy", "Pendulum-v1", n_steps=32, n_epochs=1, batch_size=32, train_backend="torch", seed=0)
    with blas.limit(limits=2):
        model.learn(64, callback=Record())
        after = {lib["num_threads"] for lib in blas.info()}
    assert blas.info() and seen and all(threads == {1} for threads in seen) and after == {2}, (seen, after)


def test_the_sampler_gives_the_same_bits_on_one_blas_thread_as_on_two() -> None:
    """So that limiting BLAS during rollouts leaves every run as it was (16 rows of 256x256 are split on two)."""
    policy = Variant(**FAST, kwargs={"net_arch": [256, 256]}).build()
    assert isinstance(policy, TanhGaussianPolicy)
    sampler, obs, blas = sampler_of(policy), observations(16).numpy(), ThreadpoolController().select(user_api="blas")
    outputs = []
    for threads in (2, 1):
        with blas.limit(limits=threads):
            th.manual_seed(0)
            outputs.append(sampler(obs))
    two, one = outputs
    assert two is not None and one is not None
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(two, one, strict=True))


def test_the_update_refuses_a_policy_whose_optimizer_lost_its_parameters() -> None:
    policy, other = Variant(**FAST).build(0), Variant(**FAST).build(1)
    _assign(policy, other)  # type: ignore[arg-type]
    choice = update_choice(policy)
    assert choice.path == "torch" and "optimizer does not hold" in str(choice.reason)
    assert sampler_choice(policy).path == "numpy"


# -- the compiled update --------------------------------------------------------------------------


def rollout_batch(policy: TanhGaussianPolicy, n: int = 96) -> RolloutBatch:
    rng = np.random.default_rng(4)
    obs = th.as_tensor(rng.normal(2.0, 3.0, size=(n, 5)), dtype=th.float32)
    with th.no_grad():
        actions, _, values, log_probs = policy.rollout_actions(obs)
    advantages = th.as_tensor(rng.normal(size=n), dtype=th.float32)
    return RolloutBatch(obs, actions, values.flatten(), log_probs, advantages, values.flatten() + advantages)


SETTINGS = UpdateSettings(  # three epochs of three minibatches: Adam's later steps follow the gradients' sizes
    n_epochs=3, batch_size=32, learning_rate=3e-4, clip_range=0.2, clip_range_vf=None, ent_coef=0.01,
    vf_coef=0.5, max_grad_norm=0.5, target_kl=None, normalize_advantage=True,
)  # fmt: skip


def test_one_compiled_update_trains_the_weights_the_torch_update_trains(variant: Variant) -> None:
    pytest.importorskip("jax")
    from roboppo.ppo import jax_train

    if variant.update != "jax":
        assert update_choice(variant.build()).path == update_choice(variant.build(), "torch").path
        return
    torch_policy, jax_policy = variant.build(), variant.build()
    assert isinstance(torch_policy, TanhGaussianPolicy)
    batch = rollout_batch(torch_policy)
    before = [p.detach().clone() for p in torch_policy.parameters()]
    th.manual_seed(6)
    torch_train.train(torch_policy, batch, SETTINGS)
    th.manual_seed(6)
    graph = update_choice(jax_policy).graph
    assert graph is not None
    jax_train.train(graph, batch, SETTINGS)
    trained = [(a, b, s) for a, b, s in zip(torch_policy.parameters(), jax_policy.parameters(), before, strict=True)]
    assert any(not th.equal(a, s) for a, _, s in trained), "the update moved the weights"
    gap = th.sqrt(sum(((a - b) ** 2).sum() for a, b, _ in trained))
    size = th.sqrt(sum((a**2).sum() for a, _, _ in trained))
    assert gap / size < 1e-5


# -- export ---------------------------------------------------------------------------------------


def test_exported_file_computes_predict(variant: Variant, tmp_path: pathlib.Path) -> None:
    policy = variant.build()
    if variant.torchscript_refusal:
        with pytest.raises(ExportError, match=variant.torchscript_refusal):
            export_policy(policy, tmp_path / "policy.pt", "torchscript")
        assert not list(tmp_path.iterdir())
        return
    path = export_policy(policy, tmp_path / "policy.pt", "torchscript")
    obs = np.random.default_rng(9).normal(2.0, 6.0, size=(200, 5)).astype(np.float32)
    expected, _ = policy.predict(obs, deterministic=True)
    with th.no_grad():
        written = th.jit.load(str(path))(th.as_tensor(obs)).numpy()
    np.testing.assert_allclose(written, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name", ["default", "MlpExtractor subclass", "distribution overridden", "Tanh subclass", "backward hook"]
)
def test_exported_onnx_file_computes_predict(name: str, tmp_path: pathlib.Path) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    policy = VARIANTS[name].build()
    path = export_policy(policy, tmp_path / "policy.onnx", "onnx")
    obs = np.random.default_rng(9).normal(2.0, 6.0, size=(200, 5)).astype(np.float32)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (written,) = session.run(["action"], {"observation": obs})
    np.testing.assert_allclose(written, policy.predict(obs, deterministic=True)[0], rtol=1e-5, atol=1e-5)


def test_dict_observations_take_sb3s_paths_and_export_refuses_them(tmp_path: pathlib.Path) -> None:
    space = spaces.Dict({"a": OBS, "b": spaces.Box(-1, 1, (2,), np.float32)})
    policy = MultiInputActorCriticPolicy(space, ACTIONS, lambda _: 3e-4)
    assert sampler_choice(policy).path == update_choice(policy).path == "sb3"
    assert "Dict" in str(export_refusal(policy))
    with pytest.raises(ExportError, match="one observation array"):
        export_policy(policy, tmp_path / "policy.onnx", "onnx")
    assert not list(tmp_path.iterdir())


def test_a_policy_that_branches_on_observation_values_is_refused_by_module(tmp_path: pathlib.Path) -> None:
    class Branching(nn.Module):
        def forward(self, x: th.Tensor) -> th.Tensor:
            return x if float(x.sum()) > 0 else -x

    policy = Variant(**FAST).build()
    assert isinstance(policy, TanhGaussianPolicy)
    policy.action_net = nn.Sequential(policy.action_net, Branching())
    assert isinstance(describe(policy), str)
    with pytest.raises(ExportError, match=r"action_net\.1 turns observation values into Python values"):
        export_policy(policy, tmp_path / "policy.pt", "torchscript")
    assert not list(tmp_path.iterdir())


def test_a_file_specialised_to_its_example_batch_is_not_written(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("onnxruntime")

    class OneOrMany(nn.Module):
        def forward(self, x: th.Tensor) -> th.Tensor:
            return 0.5 * x if x.shape[0] == 1 else x

    policy = Variant(**FAST).build()
    assert isinstance(policy, TanhGaussianPolicy)
    policy.action_net = nn.Sequential(policy.action_net, OneOrMany())
    for fmt in ("onnx", "torchscript"):
        with pytest.raises(ExportError):
            export_policy(policy, tmp_path / f"policy.{fmt}", fmt)
    assert not list(tmp_path.iterdir())


def test_a_file_that_would_differ_from_predict_is_not_written(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roboppo import export

    real_forward = export.DeterministicPolicy.forward
    monkeypatch.setattr(export.DeterministicPolicy, "forward", lambda self, obs: real_forward(self, obs) + 1e-3)
    onnx = ["onnx"] if importlib.util.find_spec("onnxscript") else []  # the export extra
    for fmt in ["torchscript", *onnx]:
        with pytest.raises(ExportError, match="differ from predict"):
            export_policy(Variant(**FAST).build(), tmp_path / f"policy.{fmt}", fmt)
    assert not list(tmp_path.iterdir())


# -- inside PPO -----------------------------------------------------------------------------------


class Anneal(BaseCallback):
    """Lowers exploration in place in the middle of a rollout, as annealing callbacks do."""

    def __init__(self, at_call: int) -> None:
        super().__init__()
        self.at_call, self.old_log_std = at_call, th.zeros(0)

    def _on_step(self) -> bool:
        if self.n_calls == self.at_call:
            self.old_log_std = self.model.policy.log_std.detach().clone()
            self.model.policy.log_std.data.fill_(-2.0)  # .data: no version bump, no autograd
        return True


def one_rollout(kwargs: dict, callback: BaseCallback | None = None, env_id: str = "RoboHopper-v0") -> PPO:
    model = PPO("MlpPolicy", env_id, n_envs=2, n_steps=16, hyperparams="sb3", seed=0, policy_kwargs=kwargs)
    _, initialized = model._setup_learn(32, callback)
    assert model.env is not None
    model.collect_rollouts(model.env, initialized, model.rollout_buffer, model.n_steps)
    return model


def stored_and_own_log_probs(model: PPO, steps: slice = slice(None)) -> tuple[th.Tensor, th.Tensor]:
    buffer = model.rollout_buffer
    obs = th.as_tensor(buffer.observations[steps].reshape(-1, 11))
    actions = th.as_tensor(buffer.actions[steps].reshape(-1, 3))
    assert isinstance(model.policy, TanhGaussianPolicy)
    with th.no_grad():
        _, own, _ = model.policy.evaluate_pre_tanh(obs, actions)
    return th.as_tensor(buffer.log_probs[steps].flatten()), own


@pytest.mark.parametrize(
    "kwargs",
    [{}, act(TwiceTanh), act(functools.partial(nn.ELU, alpha=0.2)), act(nn.GELU)],
    ids=["default", "Tanh subclass", "ELU alpha", "GELU"],
)
def test_the_rollout_stores_the_policys_own_log_probs(kwargs: dict) -> None:
    stored, own = stored_and_own_log_probs(one_rollout(kwargs))
    th.testing.assert_close(stored, own, rtol=1e-5, atol=1e-5)


def test_float64_observations_take_the_numpy_sampler_and_store_the_policys_own_log_probs() -> None:
    model = one_rollout({}, env_id="roboppo/Hopper-v5")  # Gymnasium's float64 observations
    assert model.observation_space.dtype == np.float64 and model.paths_run["sampler"] == ["numpy"]
    stored, own = stored_and_own_log_probs(model)
    th.testing.assert_close(stored, own, rtol=1e-5, atol=1e-5)


def test_an_in_place_log_std_change_during_a_rollout_reaches_the_next_steps() -> None:
    model = one_rollout({}, Anneal(at_call=6))  # steps 0-5 sampled before the change, 6-15 after
    stored, own = stored_and_own_log_probs(model, slice(6, None))
    th.testing.assert_close(stored, own, rtol=1e-5, atol=1e-5)
    stored_before, own_now = stored_and_own_log_probs(model, slice(0, 6))
    assert (stored_before - own_now).abs().max() > 1.0  # the early steps were sampled with the old std


def test_a_refused_fast_path_is_said_once_and_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, n_steps=16, batch_size=32, n_epochs=1, hyperparams="sb3",
                policy_kwargs=act(TwiceTanh), verbose=1)  # fmt: skip
    model.learn(96)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("roboppo:")]
    assert len(lines) == 2 and all("TwiceTanh" in line for line in lines)
    assert lines[0].startswith("roboppo: rollouts run the policy's torch code")
    assert lines[1].startswith("roboppo: the update runs in PyTorch")
    assert model.paths_run == {"sampler": ["torch"], "update": ["torch"]}
    plan = model.planned_paths()
    assert plan["sampler"] == plan["update"] == "torch" and "TwiceTanh" in plan["update_reason"]
    fast = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, n_steps=16, batch_size=32, n_epochs=1, hyperparams="sb3")
    fast.learn(32)
    assert fast.paths_run == {"sampler": ["numpy"], "update": ["jax"]} and fast.planned_paths() == {
        "sampler": "numpy",
        "update": "jax",
    }
