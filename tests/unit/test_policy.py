"""TanhGaussianPolicy: SB3's policy contract in env space, PPO's exact pre-tanh path, other action spaces."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import CategoricalDistribution, DiagGaussianDistribution

from roboppo import TanhGaussianPolicy
from roboppo.common.distributions import TanhNormalDistribution

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACTIONS = spaces.Box(np.array([-3.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32))
LOG_BOX_VOLUME = math.log(2.0) + math.log(5.0)  # half-ranges 2 and 5


def make_policy(action_space: spaces.Space = ACTIONS, **kwargs: object) -> TanhGaussianPolicy:
    return TanhGaussianPolicy(OBS, action_space, lambda _: 3e-4, net_arch=[8], **kwargs)  # type: ignore[arg-type]


def test_to_env_maps_pre_tanh_into_the_box_and_back() -> None:
    dist = make_policy().action_dist
    assert isinstance(dist, TanhNormalDistribution)
    u = th.tensor([[-1e6, -1e6], [0.0, 0.0], [1e6, 1e6], [math.atanh(0.5), math.atanh(-0.5)]])
    actions = dist.to_env(u)
    th.testing.assert_close(actions[0], th.as_tensor(ACTIONS.low))
    th.testing.assert_close(actions[1], th.tensor([-1.0, 5.0]))
    th.testing.assert_close(actions[2], th.as_tensor(ACTIONS.high))
    th.testing.assert_close(actions[3], th.tensor([0.0, 2.5]), atol=1e-6, rtol=0)
    dist.proba_distribution(th.zeros(1, 2), th.zeros(2))
    inside = th.tensor([[0.3, -1.7], [2.0, 0.1]])
    th.testing.assert_close(dist.to_pre_tanh(dist.to_env(inside)), inside, atol=1e-4, rtol=0)


def test_predict_stays_in_bounds_and_deterministic_is_the_squashed_mean(rng: np.random.Generator) -> None:
    policy = make_policy(log_std_init=2.0)
    obs = rng.normal(scale=100.0, size=(256, 3)).astype(np.float32)
    sampled, _ = policy.predict(obs, deterministic=False)
    assert sampled.shape == (256, 2)
    assert np.all(sampled >= ACTIONS.low) and np.all(sampled <= ACTIONS.high)
    deterministic, _ = policy.predict(obs[:4], deterministic=True)
    with th.no_grad():
        latent = policy.mlp_extractor.forward_actor(policy.extract_features(th.as_tensor(obs[:4])))
        mean = policy.action_net(latent)
        mode = policy.get_distribution(th.as_tensor(obs[:4])).mode()
    squashed_mean = ACTIONS.low + (np.tanh(mean.numpy()) + 1.0) / 2.0 * (ACTIONS.high - ACTIONS.low)
    np.testing.assert_allclose(deterministic, squashed_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mode.numpy(), deterministic, rtol=1e-6)


def test_forward_and_evaluate_actions_speak_env_space() -> None:
    policy = make_policy(log_std_init=1.0)
    obs = th.zeros(512, 3)
    with th.no_grad():
        actions, values, log_prob = policy(obs)
        _, log_prob_again, entropy = policy.evaluate_actions(obs, actions)
    assert (actions >= th.as_tensor(ACTIONS.low)).all() and (actions <= th.as_tensor(ACTIONS.high)).all()
    assert values.shape == (512, 1) and log_prob.shape == (512,) and entropy is not None
    th.testing.assert_close(log_prob, log_prob_again)


def test_pre_tanh_path_scores_what_evaluate_actions_scores_up_to_the_box_constant(rng: np.random.Generator) -> None:
    policy = make_policy(log_std_init=-0.3)
    obs = th.as_tensor(rng.normal(size=(64, 3)), dtype=th.float32)
    with th.no_grad():
        pre_tanh, env_actions, values, log_probs = policy.rollout_actions(obs)
        values_env, log_prob_env, _ = policy.evaluate_actions(obs, env_actions)
        values_pre, log_prob_pre, _ = policy.evaluate_pre_tanh(obs, pre_tanh)
    th.testing.assert_close(values_pre, values)
    th.testing.assert_close(values_env, values)
    th.testing.assert_close(log_prob_pre, log_probs, rtol=1e-5, atol=1e-5)
    th.testing.assert_close(log_prob_env, log_probs - LOG_BOX_VOLUME, rtol=1e-4, atol=1e-3)


def test_rollout_actions_sample_the_policy(rng: np.random.Generator) -> None:
    policy = make_policy(log_std_init=-0.5)
    obs = th.as_tensor(np.repeat(rng.normal(size=(1, 3)), 20_000, axis=0), dtype=th.float32)
    with th.no_grad():
        pre_tanh, env_actions, _, log_probs = policy.rollout_actions(obs)
        mean = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))[0]
    assert pre_tanh.shape == env_actions.shape == (20_000, 2) and log_probs.shape == (20_000,)
    th.testing.assert_close(pre_tanh.mean(dim=0), mean, rtol=0, atol=0.02)  # 4 standard errors
    th.testing.assert_close(pre_tanh.std(dim=0), th.full((2,), float(np.exp(-0.5))), rtol=0.02, atol=0)
    assert isinstance(policy.action_dist, TanhNormalDistribution)
    th.testing.assert_close(env_actions, policy.action_dist.to_env(pre_tanh))


def test_a_subclass_that_overrides_evaluate_actions_leaves_the_pre_tanh_path() -> None:
    class Custom(TanhGaussianPolicy):
        def evaluate_actions(self, obs, actions):  # type: ignore[no-untyped-def]
            return super().evaluate_actions(obs, actions)

    assert make_policy().uses_pre_tanh_path()
    custom = Custom(OBS, ACTIONS, lambda _: 3e-4, net_arch=[8])
    assert not custom.uses_pre_tanh_path()


@pytest.mark.parametrize(
    ("action_space", "distribution"),
    [
        (spaces.Discrete(3), CategoricalDistribution),
        (spaces.MultiDiscrete([2, 3]), None),
        (spaces.MultiBinary(4), None),
    ],
)
def test_other_action_spaces_use_sb3_distributions(action_space: spaces.Space, distribution: type | None) -> None:
    policy = make_policy(action_space)
    assert not isinstance(policy.action_dist, TanhNormalDistribution) and not policy.uses_pre_tanh_path()
    if distribution is not None:
        assert isinstance(policy.action_dist, distribution)
    actions, _ = policy.predict(np.zeros((5, 3), np.float32))
    assert all(action_space.contains(action) for action in actions)


def test_unbounded_box_falls_back_to_sb3_gaussian_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="infinite bounds"):
        policy = make_policy(spaces.Box(-np.inf, np.inf, (2,), np.float32))
    assert type(policy.action_dist) is DiagGaussianDistribution


def test_gsde_is_state_dependent_noise_squashed_by_tanh() -> None:
    from stable_baselines3.common.distributions import StateDependentNoiseDistribution

    policy = make_policy(use_sde=True)
    assert isinstance(policy.action_dist, StateDependentNoiseDistribution) and policy.squash_output
    assert not policy.uses_pre_tanh_path()


def test_adam_is_fused_only_where_torch_has_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch 2.3 (allowed by pyproject) refuses fused=True on the CPU; the policy then builds plain Adam."""
    from roboppo.ppo import policies

    assert policies.fused_adam_available() is True  # this torch (>= 2.4)
    assert make_policy().optimizer.defaults["fused"] is True
    real_adam = th.optim.Adam

    def old_adam(params: Any, **kwargs: Any) -> th.optim.Adam:
        if kwargs.get("fused"):
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices")
        return real_adam(params, **kwargs)

    policies.fused_adam_available.cache_clear()
    with monkeypatch.context() as patch:
        patch.setattr(th.optim, "Adam", old_adam)
        assert policies.fused_adam_available() is False
    policies.fused_adam_available.cache_clear()
    monkeypatch.setattr(policies, "fused_adam_available", lambda: False)
    optimizer = make_policy().optimizer
    assert not optimizer.defaults["fused"] and optimizer.defaults["eps"] == 1e-5
