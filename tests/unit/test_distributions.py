"""TanhNormalDistribution against analytic and numerical references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as th
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from roboppo.common.distributions import TanhNormalDistribution, tanh_log_det_jacobian


def make_dist(mean: list[float], log_std: list[float]) -> TanhNormalDistribution:
    dist = TanhNormalDistribution(len(mean))
    return dist.proba_distribution(th.tensor([mean], dtype=th.float64), th.tensor(log_std, dtype=th.float64))


def test_log_det_jacobian_matches_direct_formula() -> None:
    u = th.linspace(-4, 4, 101, dtype=th.float64)
    direct = th.log(1 - th.tanh(u) ** 2)
    assert th.allclose(tanh_log_det_jacobian(u), direct, atol=1e-10)


def test_log_prob_matches_torch_transformed_distribution() -> None:
    mean, log_std = [0.3, -1.2], [-0.5, 0.2]
    dist = make_dist(mean, log_std)
    u = th.tensor([[0.1, -2.0], [1.5, 0.4], [-0.7, 2.5]], dtype=th.float64)
    reference = TransformedDistribution(
        Normal(th.tensor(mean, dtype=th.float64), th.tensor(log_std, dtype=th.float64).exp()), [TanhTransform()]
    )
    expected = reference.log_prob(th.tanh(u)).sum(-1)
    assert th.allclose(dist.log_prob(u), expected, atol=1e-9)


def test_density_of_squashed_action_integrates_to_one() -> None:
    """p(a) on (-1, 1), obtained through u = atanh(a), is a probability density."""
    dist = make_dist([0.8], [-0.3])
    u = th.linspace(-12, 12, 200_001, dtype=th.float64)[:, None]
    a = th.tanh(u[:, 0])
    density = dist.log_prob(u).exp()
    mass = th.trapezoid(density, a)
    assert mass.item() == pytest.approx(1.0, abs=1e-6)


def test_entropy_estimate_matches_numerical_entropy() -> None:
    th.manual_seed(0)
    mean, log_std = 0.5, -0.4
    u = th.linspace(-12, 12, 200_001, dtype=th.float64)[:, None]
    dist = make_dist([mean], [log_std])
    log_p = dist.log_prob(u)
    a = th.tanh(u[:, 0])
    reference = -th.trapezoid(log_p.exp() * log_p, a).item()
    many = TanhNormalDistribution(1).proba_distribution(
        th.full((200_000, 1), mean, dtype=th.float64), th.tensor([log_std], dtype=th.float64)
    )
    assert many.entropy().mean().item() == pytest.approx(reference, abs=0.01)


@pytest.mark.parametrize("u_value", [20.0, -20.0, 50.0, -300.0])
def test_saturated_actions_have_finite_log_prob_and_gradients(u_value: float) -> None:
    mean = th.tensor([[0.0, 1.0]], requires_grad=True)
    log_std = th.tensor([0.0, -1.0], requires_grad=True)
    dist = TanhNormalDistribution(2).proba_distribution(mean, log_std)
    u = th.full((1, 2), u_value)
    log_prob = dist.log_prob(u)
    (log_prob.sum() + dist.entropy().sum()).backward()
    assert th.isfinite(log_prob).all()
    assert mean.grad is not None and th.isfinite(mean.grad).all()
    assert log_std.grad is not None and th.isfinite(log_std.grad).all()
    # log(1 - tanh(u)^2) -> 2 log 2 - 2|u|: the Jacobian term grows linearly, it does not blow up
    assert tanh_log_det_jacobian(th.tensor(u_value)).item() == pytest.approx(2 * math.log(2) - 2 * abs(u_value))


def test_sample_and_mode_are_pre_tanh() -> None:
    th.manual_seed(0)
    dist = make_dist([3.0], [0.5])
    samples = th.cat([dist.sample() for _ in range(2000)])
    assert samples.abs().max() > 1.0  # not squashed
    assert samples.mean().item() == pytest.approx(3.0, abs=0.1)
    assert dist.mode().item() == pytest.approx(3.0)
    actions, log_prob = TanhNormalDistribution(1).log_prob_from_params(th.zeros(4, 1), th.zeros(1))
    assert actions.shape == (4, 1) and np.all(np.isfinite(log_prob.numpy()))
