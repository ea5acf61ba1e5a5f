"""The JAX training loop takes the same steps as the PyTorch loop, and PPO picks between them."""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import numpy as np
import pytest
import torch as th

from roboppo import PPO
from roboppo.ppo.fast_paths import update_choice

pytest.importorskip("jax")
pytestmark = pytest.mark.filterwarnings("ignore:You have specified a mini-batch size of 24")

# 64 samples in minibatches of 24: two full ones and SB3's shorter last one per epoch
SMALL = {"n_steps": 32, "batch_size": 24, "n_epochs": 3, "seed": 0, "hyperparams": "sb3"}  # SB3 defaults otherwise
COMPARED_LOGS = (
    "train/policy_gradient_loss",
    "train/value_loss",
    "train/entropy_loss",
    "train/approx_kl",
    "train/clip_fraction",
)


def twins(**kwargs: Any) -> tuple[PPO, PPO]:
    """Two models with equal weights, Adam state and rollout, one for each backend.

    Adam's ``eps`` is raised to 1 in both, which makes its step nearly linear in the gradient:
    with the default 1e-5, elements whose gradients are near zero move by up to the learning
    rate on rounding-level differences, which would hide real differences in the comparison.
    """
    settings = SMALL | kwargs
    torch_model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, train_backend="torch", **settings)
    torch_model.learn(64)  # one rollout and one update, so that the optimizer has state
    _, callback = torch_model._setup_learn(64, reset_num_timesteps=False)  # and a rollout of the updated policy
    torch_model.collect_rollouts(torch_model.env, callback, torch_model.rollout_buffer, torch_model.n_steps)
    jax_model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, train_backend="jax", **settings)
    jax_model.policy.load_state_dict(torch_model.policy.state_dict())
    # deep copies: load_state_dict would share the moment tensors, which torch's Adam updates in place
    jax_model.policy.optimizer.load_state_dict(copy.deepcopy(torch_model.policy.optimizer.state_dict()))
    jax_model.rollout_buffer = copy.deepcopy(torch_model.rollout_buffer)
    jax_model._last_obs, jax_model._last_episode_starts = torch_model._last_obs, torch_model._last_episode_starts
    jax_model._n_updates = torch_model._n_updates
    for model in (torch_model, jax_model):
        model._current_progress_remaining = 0.5
        model.set_logger(copy.deepcopy(torch_model.logger))
        for group in model.policy.optimizer.param_groups:
            group["eps"] = 1.0
    return torch_model, jax_model


def train_both(torch_model: PPO, jax_model: PPO) -> list[th.Tensor]:
    """Train each model on its copy of the rollout from the same seed; returns the weights before."""
    before = [p.detach().clone() for p in torch_model.policy.parameters()]
    generator_states = []
    for model in (torch_model, jax_model):
        th.manual_seed(1)
        model._train_pre_tanh(update_choice(model.policy, model.train_backend))
        generator_states.append(th.get_rng_state())
    assert th.equal(*generator_states)  # both drew the same random numbers: later rollouts sample alike
    return before


def assert_same_steps(torch_model: PPO, jax_model: PPO, before: list[th.Tensor]) -> None:
    pairs = zip(torch_model.policy.named_parameters(), jax_model.policy.parameters(), before, strict=True)
    for (name, ours), theirs, start in pairs:
        torch_step, jax_step = (ours - start).detach().numpy(), (theirs - start).detach().numpy()
        scale = np.abs(torch_step).max()
        assert scale > 0, name
        np.testing.assert_allclose(jax_step, torch_step, rtol=0, atol=1e-3 * scale, err_msg=name)
    torch_logs, jax_logs = torch_model.logger.name_to_value, jax_model.logger.name_to_value
    for key in (*COMPARED_LOGS, "train/loss"):
        assert jax_logs[key] == pytest.approx(torch_logs[key], rel=1e-4, abs=1e-7), key
    torch_state = torch_model.policy.optimizer.state_dict()["state"]
    jax_state = jax_model.policy.optimizer.state_dict()["state"]
    assert [float(s["step"]) for s in jax_state.values()] == [float(s["step"]) for s in torch_state.values()]
    for index, state in torch_state.items():
        np.testing.assert_allclose(jax_state[index]["exp_avg_sq"], state["exp_avg_sq"], rtol=1e-3, atol=1e-12)


def test_same_steps_moments_and_logs_as_the_torch_loop() -> None:
    torch_model, jax_model = twins()
    before = train_both(torch_model, jax_model)
    assert_same_steps(torch_model, jax_model, before)
    assert torch_model._n_updates == jax_model._n_updates == 2 * SMALL["n_epochs"]
    assert float(jax_model.policy.optimizer.state_dict()["state"][0]["step"]) == 2 * 3 * SMALL["n_epochs"]


def test_same_steps_with_clipped_values_and_raw_advantages() -> None:
    torch_model, jax_model = twins(clip_range_vf=0.1, normalize_advantage=False)
    assert_same_steps(torch_model, jax_model, train_both(torch_model, jax_model))


def test_same_steps_with_advantages_recomputed_each_epoch() -> None:
    """A learning rate at which the critic moves enough between epochs for its new advantages to show."""
    torch_model, jax_model = twins(recompute_advantage=True, learning_rate=0.05)
    assert jax_model.rollout_buffer.episode_starts[1:].any()  # GAE crosses episode ends inside the rollout
    assert_same_steps(torch_model, jax_model, train_both(torch_model, jax_model))


def test_target_kl_stops_both_loops_at_the_same_minibatch(capsys: pytest.CaptureFixture[str]) -> None:
    torch_model, jax_model = twins(target_kl=0.01, learning_rate=0.5)  # Adam's eps is 1: steps near lr x gradient
    torch_model.verbose = jax_model.verbose = 1
    steps_before, updates_before = optimizer_steps(jax_model), jax_model._n_updates
    before = train_both(torch_model, jax_model)
    assert_same_steps(torch_model, jax_model, before)
    assert optimizer_steps(torch_model) == optimizer_steps(jax_model)
    assert 0 < optimizer_steps(jax_model) - steps_before < 3 * SMALL["n_epochs"]  # stopped after some updates
    assert torch_model._n_updates == jax_model._n_updates < updates_before + SMALL["n_epochs"]
    torch_line, jax_line = capsys.readouterr().out.splitlines()
    assert torch_line == jax_line and torch_line.startswith("Early stopping at step ")  # SB3's message


def optimizer_steps(model: PPO) -> float:
    return float(model.policy.optimizer.state_dict()["state"][0]["step"])


def test_auto_backend_uses_jax_on_the_cpu_and_torch_for_other_optimizers() -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, **SMALL)
    assert model.train_backend == "auto" and update_choice(model.policy).path == "jax"
    sgd = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, policy_kwargs={"optimizer_class": th.optim.SGD}, **SMALL)
    choice = update_choice(sgd.policy)
    assert choice.path == "torch" and "not plain Adam" in str(choice.reason)
    sgd.learn(64)  # trains through the torch loop
    assert sgd._n_updates == SMALL["n_epochs"]


def test_jax_backend_that_cannot_train_names_the_reason() -> None:
    model = PPO(
        "MlpPolicy", "RoboHopper-v0", n_envs=2, train_backend="jax",
        policy_kwargs={"optimizer_class": th.optim.SGD}, **SMALL,
    )  # fmt: skip
    with pytest.raises(ValueError, match="train_backend='jax' cannot train this model: the optimizer is SGD"):
        model.learn(64)
    with pytest.raises(ValueError, match="train_backend must be one of"):
        PPO("MlpPolicy", "RoboHopper-v0", train_backend="numpy")


def test_relu_network_with_separate_extractors_matches_too() -> None:
    kwargs = {"policy_kwargs": {"activation_fn": th.nn.ReLU, "net_arch": [32, 16], "share_features_extractor": False}}
    torch_model, jax_model = twins(**kwargs)
    assert update_choice(jax_model.policy).path == "jax"
    assert_same_steps(torch_model, jax_model, train_both(torch_model, jax_model))


def test_save_load_and_continue_training(tmp_path: pathlib.Path) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=2, **SMALL).learn(128)
    model.save(tmp_path / "model")
    loaded = PPO.load(tmp_path / "model", env=model.get_env())
    assert loaded.train_backend == "auto"
    for saved, restored in zip(model.policy.parameters(), loaded.policy.parameters(), strict=True):
        assert th.equal(saved, restored)
    steps = float(loaded.policy.optimizer.state_dict()["state"][0]["step"])
    loaded.learn(64, reset_num_timesteps=False)
    assert float(loaded.policy.optimizer.state_dict()["state"][0]["step"]) == steps + 3 * SMALL["n_epochs"]
    assert all(th.isfinite(p).all() for p in loaded.policy.parameters())
