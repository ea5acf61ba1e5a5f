"""TanhNormalDistribution against analytic and numerical references, in env space and in pre-tanh space."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as th
from torch.distributions import AffineTransform, Normal, TanhTransform, TransformedDistribution

from roboppo.common.distributions import TanhNormalDistribution, tanh_log_det_jacobian


def make_dist(
    mean: list[float], log_std: list[float], low: list[float] | None = None, high: list[float] | None = None
) -> TanhNormalDistribution:
    bounds = (None, None) if low is None else (np.array(low), np.array(high))
    dist = TanhNormalDistribution(len(mean), *bounds)
    return dist.proba_distribution(th.tensor([mean], dtype=th.float64), th.tensor(log_std, dtype=th.float64))


Values = list[float] | np.ndarray | th.Tensor


def reference(mean: Values, log_std: Values, low: Values, high: Values) -> TransformedDistribution:
    """torch's own squashed Gaussian: Normal -> tanh -> affine map onto [low, high] (float64)."""
    low_t, high_t = th.as_tensor(low, dtype=th.float64), th.as_tensor(high, dtype=th.float64)
    base = Normal(th.as_tensor(mean, dtype=th.float64), th.as_tensor(log_std, dtype=th.float64).exp())
    return TransformedDistribution(base, [TanhTransform(), AffineTransform((high_t + low_t) / 2, (high_t - low_t) / 2)])


def test_log_det_jacobian_matches_direct_formula() -> None:
    u = th.linspace(-4, 4, 101, dtype=th.float64)
    direct = th.log(1 - th.tanh(u) ** 2)
    assert th.allclose(tanh_log_det_jacobian(u), direct, atol=1e-9)


def test_env_space_log_prob_matches_torch_transformed_distribution() -> None:
    mean, log_std, low, high = [0.3, -1.2], [-0.5, 0.2], [-3.0, 0.0], [1.0, 10.0]
    dist = make_dist(mean, log_std, low, high)
    actions = th.tensor([[0.1, 9.0], [-2.5, 0.4], [-0.7, 5.0]], dtype=th.float64)
    expected = reference(mean, log_std, low, high).log_prob(actions).sum(-1)
    th.testing.assert_close(dist.log_prob(actions), expected, rtol=0, atol=1e-6)


def test_pendulum_action_near_the_edge_is_scored_in_env_space() -> None:
    """InvertedPendulum's Box is [-3, 3]: the env action 2.9 is tanh(u) = 2.9 / 3, not u = 2.9."""
    dist = make_dist([0.0], [0.0], [-3.0], [3.0])
    expected = reference([0.0], [0.0], [-3.0], [3.0]).log_prob(th.tensor([[2.9]], dtype=th.float64)).sum(-1)
    log_prob = dist.log_prob(th.tensor([[2.9]], dtype=th.float64))
    th.testing.assert_close(log_prob, expected)
    assert log_prob.item() == pytest.approx(-1.37, abs=0.01)
    assert dist.pre_tanh_log_prob(dist.to_pre_tanh(th.tensor([[2.9]], dtype=th.float64))).item() == pytest.approx(
        log_prob.item() + math.log(3.0)
    )  # the two scores differ by the Box's constant log-volume


def test_pre_tanh_log_prob_matches_torch_transformed_distribution() -> None:
    mean, log_std = [0.3, -1.2], [-0.5, 0.2]
    dist = make_dist(mean, log_std)
    u = th.tensor([[0.1, -2.0], [1.5, 0.4], [-0.7, 2.5]], dtype=th.float64)
    expected = reference(mean, log_std, [-1.0, -1.0], [1.0, 1.0]).log_prob(th.tanh(u)).sum(-1)
    assert th.allclose(dist.pre_tanh_log_prob(u), expected, atol=1e-9)


def test_env_space_density_integrates_to_one_over_the_box() -> None:
    dist = make_dist([0.8], [-0.3], [-3.0], [3.0])
    a = th.linspace(-3, 3, 200_001, dtype=th.float64)[:, None]
    mass = th.trapezoid(dist.log_prob(a).exp(), a[:, 0])
    assert mass.item() == pytest.approx(1.0, abs=1e-4)


def test_entropy_estimate_matches_numerical_entropy() -> None:
    th.manual_seed(0)
    mean, log_std, low, high = 0.5, -0.4, -2.0, 4.0
    a = th.linspace(low, high, 400_001, dtype=th.float64)[1:-1, None]
    log_p = make_dist([mean], [log_std], [low], [high]).log_prob(a)
    numerical = -th.trapezoid(log_p.exp() * log_p, a[:, 0]).item()
    many = TanhNormalDistribution(1, np.array([low]), np.array([high])).proba_distribution(
        th.full((200_000, 1), mean, dtype=th.float64), th.tensor([log_std], dtype=th.float64)
    )
    assert many.entropy().mean().item() == pytest.approx(numerical, abs=0.01)
    assert many.pre_tanh_entropy().mean().item() == pytest.approx(numerical - math.log(3.0), abs=0.01)


@pytest.mark.parametrize("u_value", [20.0, -20.0, 50.0, -300.0])
def test_saturated_actions_have_finite_log_prob_and_gradients(u_value: float) -> None:
    mean = th.tensor([[0.0, 1.0]], requires_grad=True)
    log_std = th.tensor([0.0, -1.0], requires_grad=True)
    dist = TanhNormalDistribution(2).proba_distribution(mean, log_std)
    u = th.full((1, 2), u_value)
    log_prob = dist.pre_tanh_log_prob(u) + dist.log_prob(dist.to_env(u))  # the edge of the Box, both ways
    (log_prob.sum() + dist.entropy().sum()).backward()
    assert th.isfinite(log_prob).all()
    assert mean.grad is not None and th.isfinite(mean.grad).all()
    assert log_std.grad is not None and th.isfinite(log_std.grad).all()
    # log(1 - tanh(u)^2) -> 2 log 2 - 2|u|: the Jacobian term grows linearly, it does not blow up
    assert tanh_log_det_jacobian(th.tensor(u_value)).item() == pytest.approx(2 * math.log(2) - 2 * abs(u_value))


def test_sample_and_mode_are_env_space_actions() -> None:
    th.manual_seed(0)
    dist = make_dist([0.5], [0.5], [0.0], [10.0])
    samples = th.cat([dist.sample() for _ in range(2000)])
    assert samples.min() >= 0.0 and samples.max() <= 10.0 and samples.max() > 9.0
    assert dist.mode().item() == pytest.approx(5.0 + 5.0 * math.tanh(0.5))
    actions, log_prob = TanhNormalDistribution(1).log_prob_from_params(th.zeros(4, 1), th.zeros(1))
    assert actions.shape == (4, 1) and actions.abs().max() <= 1.0 and np.all(np.isfinite(log_prob.numpy()))


def test_saturated_actions_stay_inside_asymmetric_bounds(rng: np.random.Generator) -> None:
    """``low + 2 * half_range`` can round above ``high``; the squashed action is clamped to the Box."""
    low = rng.uniform(-10, 0, size=1000).astype(np.float32)
    high = (low + rng.uniform(0.01, 10, size=1000)).astype(np.float32)
    dist = TanhNormalDistribution(1000, low, high)
    for u in (50.0, -50.0):
        actions = dist.to_env(th.full((1, 1000), u)).numpy()[0]
        assert np.all(actions >= low) and np.all(actions <= high)
