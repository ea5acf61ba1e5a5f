"""TanhGaussianPolicy: action rescaling to any Box, deterministic squashed mean, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from roboppo import TanhGaussianPolicy

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACTIONS = spaces.Box(np.array([-3.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32))


def make_policy(action_space: spaces.Space = ACTIONS, **kwargs: object) -> TanhGaussianPolicy:
    return TanhGaussianPolicy(OBS, action_space, lambda _: 3e-4, net_arch=[8], **kwargs)  # type: ignore[arg-type]


def test_unscale_action_maps_pre_tanh_into_the_box() -> None:
    policy = make_policy()
    u = np.array([[-1e6, -1e6], [0.0, 0.0], [1e6, 1e6], [np.arctanh(0.5), np.arctanh(-0.5)]])
    actions = policy.unscale_action(u)
    np.testing.assert_allclose(actions[0], ACTIONS.low)
    np.testing.assert_allclose(actions[1], [-1.0, 5.0])
    np.testing.assert_allclose(actions[2], ACTIONS.high)
    np.testing.assert_allclose(actions[3], [0.0, 2.5], atol=1e-6)
    assert actions.dtype == np.float32


def test_scale_action_inverts_unscale_inside_the_box() -> None:
    policy = make_policy()
    u = np.array([[0.3, -1.7], [2.0, 0.1]])
    np.testing.assert_allclose(policy.scale_action(policy.unscale_action(u)), u, atol=1e-5)


def test_predict_stays_in_bounds_and_deterministic_is_squashed_mean(rng: np.random.Generator) -> None:
    policy = make_policy(log_std_init=2.0)
    obs = rng.normal(scale=100.0, size=(256, 3)).astype(np.float32)
    sampled, _ = policy.predict(obs, deterministic=False)
    assert sampled.shape == (256, 2)
    assert np.all(sampled >= ACTIONS.low) and np.all(sampled <= ACTIONS.high)
    deterministic, _ = policy.predict(obs[:4], deterministic=True)
    with th.no_grad():
        mean = policy.get_distribution(th.as_tensor(obs[:4])).mode().numpy()
    np.testing.assert_allclose(deterministic, policy.unscale_action(mean), rtol=1e-6)


def test_forward_returns_pre_tanh_actions_with_their_log_prob() -> None:
    policy = make_policy(log_std_init=1.0)
    obs = th.zeros(512, 3)
    with th.no_grad():
        actions, values, log_prob = policy(obs)
        _, log_prob_again, _ = policy.evaluate_actions(obs, actions)
    assert actions.abs().max() > 1.0  # pre-tanh, not squashed
    assert values.shape == (512, 1) and log_prob.shape == (512,)
    th.testing.assert_close(log_prob, log_prob_again)


def test_non_box_action_space_is_rejected_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"continuous Box action space.*Discrete"):
        make_policy(spaces.Discrete(3))


def test_unbounded_action_space_is_rejected() -> None:
    with pytest.raises(ValueError, match="finite low and high"):
        make_policy(spaces.Box(-np.inf, np.inf, (2,), np.float32))


def test_forward_rollout_samples_the_policy_and_scores_what_it_samples(rng: np.random.Generator) -> None:
    policy = make_policy(log_std_init=-0.5)
    obs = th.as_tensor(np.repeat(rng.normal(size=(1, 3)), 20_000, axis=0), dtype=th.float32)
    with th.no_grad():
        actions, values, log_probs = policy.forward_rollout(obs)
        expected_values, expected_log_probs, _ = policy.evaluate_actions(obs, actions)
        mean = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))[0]
    assert actions.shape == (20_000, 2) and values.shape == (20_000, 1) and log_probs.shape == (20_000,)
    th.testing.assert_close(values, expected_values)
    th.testing.assert_close(log_probs, expected_log_probs, rtol=1e-5, atol=1e-4)
    th.testing.assert_close(actions.mean(dim=0), mean, rtol=0, atol=0.02)  # 4 standard errors
    th.testing.assert_close(actions.std(dim=0), th.full((2,), float(np.exp(-0.5))), rtol=0.02, atol=0)
    squashed = policy.squash_to_box(actions)
    assert (squashed >= th.as_tensor(ACTIONS.low)).all() and (squashed <= th.as_tensor(ACTIONS.high)).all()
    np.testing.assert_allclose(squashed.numpy(), policy.unscale_action(actions.numpy()), rtol=1e-5, atol=1e-5)
