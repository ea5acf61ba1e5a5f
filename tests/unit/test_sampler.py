"""The per-rollout sampler: what ``rollout_actions`` returns from the same draws, or not used at all."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import FlattenExtractor

from roboppo import TanhGaussianPolicy
from roboppo.ppo.fast_paths import sampler_choice
from roboppo.ppo.sampler import RolloutSampler

OBS = spaces.Box(-np.inf, np.inf, (5,), np.float32)
ACTIONS = spaces.Box(np.array([-3.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32))


def make_policy(**kwargs: object) -> TanhGaussianPolicy:
    return TanhGaussianPolicy(OBS, ACTIONS, lambda _: 3e-4, **kwargs)  # type: ignore[arg-type]


def rollout_sampler(policy: TanhGaussianPolicy) -> RolloutSampler | None:
    """This rollout's sampler, where the one decision allows it."""
    choice = sampler_choice(policy)
    return None if choice.graph is None else RolloutSampler(choice.graph)


def fit_statistics(policy: TanhGaussianPolicy, rng: np.random.Generator) -> None:
    policy.update_obs_normalizer(rng.normal(2.0, 3.0, size=(64, 5)).astype(np.float32))


def assert_same_draws(reference: TanhGaussianPolicy, sampler: RolloutSampler | None, obs: th.Tensor) -> None:
    """``sampler(obs)`` equals ``reference.rollout_actions(obs)`` to float32 rounding, from the same generator
    state, and leaves the generator where ``rollout_actions`` does."""
    assert sampler is not None
    with th.no_grad():
        th.manual_seed(7)
        expected = reference.rollout_actions(obs)
        after_reference = th.rand(4)
        th.manual_seed(7)
        got = sampler(obs.numpy())
        assert got is not None
        after_sampler = th.rand(4)
    assert th.equal(after_reference, after_sampler)
    for a, b in zip(expected, got, strict=True):
        b = th.as_tensor(b)
        assert a.shape == b.shape and b.dtype == th.float32
        th.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    assert not th.equal(expected[0], reference.rollout_actions(obs)[0])  # the comparison sees the noise


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"net_arch": [32, 16], "activation_fn": th.nn.ReLU},
        {"net_arch": {"pi": [16], "vf": [8, 8]}, "share_features_extractor": False},
        {"normalize_obs": False, "log_std_init": -1.0},
        {"obs_clip": 0.5},
        {"net_arch": [16, 16], "activation_fn": th.nn.ELU},
        {"net_arch": [16], "activation_fn": th.nn.LeakyReLU},
        {"net_arch": [16], "activation_fn": th.nn.SiLU},
        {"net_arch": [16], "activation_fn": th.nn.Sigmoid},
    ],
)
def test_the_sampler_returns_what_rollout_actions_returns(kwargs: dict, rng: np.random.Generator) -> None:
    policy = make_policy(**kwargs)
    fit_statistics(policy, rng)
    obs = th.as_tensor(rng.normal(2.0, 3.0, size=(16, 5)), dtype=th.float32)
    assert_same_draws(policy, rollout_sampler(policy), obs)


def test_in_place_changes_during_a_rollout_reach_the_sampler(rng: np.random.Generator) -> None:
    policy = make_policy()
    fit_statistics(policy, rng)
    sampler = rollout_sampler(policy)
    other = make_policy(log_std_init=-2.0)
    fit_statistics(other, np.random.default_rng(99))
    policy.load_state_dict(other.state_dict())  # in place, as SB3's set_parameters does
    assert_same_draws(other, sampler, th.as_tensor(rng.normal(size=(4, 5)), dtype=th.float32))


def test_policies_it_does_not_know_keep_rollout_actions() -> None:
    assert rollout_sampler(make_policy(features_extractor_class=FlattenExtractor)) is None
    hooked = make_policy()
    hooked.action_net.register_forward_hook(lambda module, inputs, output: output * 2)
    assert rollout_sampler(hooked) is None
    image = TanhGaussianPolicy(spaces.Box(0, 255, (3, 36, 36), np.uint8), ACTIONS, lambda _: 3e-4)
    assert rollout_sampler(image) is None
    with pytest.warns(UserWarning, match="infinite bounds"):
        gaussian = TanhGaussianPolicy(OBS, spaces.Box(-np.inf, np.inf, (2,), np.float32), lambda _: 3e-4)
    assert rollout_sampler(gaussian) is None
    assert rollout_sampler(make_policy(activation_fn=th.nn.GELU)) is None  # no NumPy twin here


def test_the_sampler_follows_large_inputs_without_overflow(rng: np.random.Generator) -> None:
    policy = make_policy(net_arch=[8], activation_fn=th.nn.SiLU, normalize_obs=False, log_std_init=3.0)
    obs = th.as_tensor(rng.normal(0.0, 300.0, size=(32, 5)), dtype=th.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is exact enough
        assert_same_draws(policy, rollout_sampler(policy), obs)
