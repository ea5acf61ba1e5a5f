"""``recompute_advantage``: every epoch after the first trains on SB3's GAE under the critic as it is then."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th

from roboppo import PPO
from roboppo.ppo import torch_train
from roboppo.ppo.fast_paths import update_choice
from roboppo.ppo.rollout import flat_batch
from roboppo.ppo.update import UpdateSettings, random_draws

pytest.importorskip("jax")
SMALL = {"n_steps": 32, "batch_size": 16, "n_epochs": 2, "seed": 0, "hyperparams": "sb3"}


def rolled_out(**kwargs: object) -> PPO:
    """A model after one update and one more rollout (falls inside it), ready to train on that rollout."""
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, **(SMALL | kwargs))  # type: ignore[arg-type]
    model.learn(64)
    _, callback = model._setup_learn(64, reset_num_timesteps=False)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    assert model.rollout_buffer.episode_starts[1:].any()
    return model


def weights(model: PPO) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.policy.parameters()]


def test_the_rollouts_own_values_give_back_its_advantages() -> None:
    model = rolled_out(recompute_advantage=True)
    revaluation = model._revaluation()
    assert revaluation is not None
    batch = flat_batch(model.rollout_buffer, model.device)
    with th.no_grad():
        last_values = model.policy.predict_values(revaluation.last_observations)
    advantages, returns = revaluation.advantages(batch.old_values, last_values)
    assert th.equal(advantages, batch.advantages) and th.equal(returns, batch.returns)


def test_jax_gae_is_sb3s() -> None:
    from roboppo.ppo.jax_program import _gae

    model = rolled_out()
    buffer = copy.deepcopy(model.rollout_buffer)
    generator = np.random.default_rng(0)
    buffer.values = generator.normal(size=buffer.values.shape).astype(np.float32)
    last_values, dones = generator.normal(size=2).astype(np.float32), np.array([True, False])
    buffer.compute_returns_and_advantage(th.as_tensor(last_values), dones)
    gamma, gae_lambda = buffer.gamma, buffer.gae_lambda
    ours = _gae(
        buffer.values, last_values, buffer.rewards, buffer.episode_starts, dones.astype(np.float32),
        gamma, gamma * gae_lambda,
    )  # fmt: skip
    np.testing.assert_allclose(np.asarray(ours), buffer.advantages, rtol=1e-5, atol=1e-5)


def test_the_second_epoch_trains_on_sb3s_gae_under_the_critic_after_the_first() -> None:
    """Two epochs with recomputation equal one epoch, SB3's GAE with the critic as it then is, and one more."""
    model, twin = (rolled_out(recompute_advantage=True, train_backend="torch") for _ in range(2))
    np.testing.assert_array_equal(model.rollout_buffer.advantages, twin.rollout_buffer.advantages)
    th.manual_seed(1)
    model._train_pre_tanh(update_choice(model.policy, model.train_backend))
    settings, batch = twin._update_settings(), flat_batch(twin.rollout_buffer, twin.device)
    twin.policy.set_training_mode(True)
    th.manual_seed(1)
    orders, noise = random_draws(len(batch.actions), 2, batch.actions.shape[1])
    one_epoch = UpdateSettings(**{**settings.__dict__, "n_epochs": 1})
    torch_train._run_epoch(twin.policy, batch, orders[0], noise[0][orders[0]], one_epoch, [])
    buffer = copy.deepcopy(twin.rollout_buffer)  # SB3's own GAE, on the values the critic now gives
    with th.no_grad():
        buffer.values = twin.policy.predict_values(batch.observations).numpy().reshape(buffer.values.shape)
        last_values = twin.policy.predict_values(th.as_tensor(twin._last_obs))
    buffer.compute_returns_and_advantage(last_values, twin._last_episode_starts)
    recomputed = batch._replace(
        **{key: th.as_tensor(getattr(buffer, key).reshape(-1)) for key in ("advantages", "returns")}
    )
    assert not th.equal(recomputed.advantages, batch.advantages)
    torch_train._run_epoch(twin.policy, recomputed, orders[1], noise[1][orders[1]], one_epoch, [])
    for ours, theirs in zip(weights(model), weights(twin), strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_one_epoch_trains_as_without_and_two_differ(backend: str) -> None:
    results = {}
    for n_epochs in (1, 2):
        for recompute in (False, True):
            model = rolled_out(n_epochs=n_epochs, train_backend=backend)
            model.recompute_advantage = recompute
            th.manual_seed(1)
            model._train_pre_tanh(update_choice(model.policy, model.train_backend))
            results[n_epochs, recompute] = weights(model)
    for ours, theirs in zip(results[1, True], results[1, False], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert not all(np.array_equal(a, b) for a, b in zip(results[2, True], results[2, False], strict=True))


def test_policies_sb3_trains_are_refused_with_the_reason() -> None:
    with pytest.raises(
        ValueError, match=r"recompute_advantage=True needs .* updates this policy: .*StateDependentNoise"
    ):
        PPO("MlpPolicy", "RoboHopper-v0", use_sde=True, recompute_advantage=True, hyperparams="sb3")
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, recompute_advantage=True, **SMALL)
    assert model.resolved_hyperparams()["recompute_advantage"] is True
    model.policy.evaluate_actions = model.policy.evaluate_actions  # replaced on the instance: SB3's train takes it
    with pytest.raises(ValueError, match=r"updates this policy: policy\.evaluate_actions is replaced on the instance"):
        model.learn(64)
