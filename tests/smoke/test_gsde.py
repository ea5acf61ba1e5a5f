"""gSDE with roboppo's policy: SB3's state-dependent noise squashed by tanh into the Box."""

from __future__ import annotations

import pathlib

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.distributions import StateDependentNoiseDistribution

from roboppo import PPO
from roboppo.ppo.fast_paths import sampler_choice, update_choice
from roboppo.zoo.loader import load_ppo_hparams

TINY = {"n_steps": 32, "batch_size": 32, "n_epochs": 2}


def test_use_sde_squashes_state_dependent_noise_into_the_box() -> None:
    model = PPO("MlpPolicy", "Pendulum-v1", use_sde=True, seed=0, **TINY)  # actions in [-2, 2]
    dist = model.policy.action_dist
    assert isinstance(dist, StateDependentNoiseDistribution) and dist.bijector is not None
    sent: list[np.ndarray] = []
    step = model.env.step

    def record(actions: np.ndarray) -> object:
        sent.append(np.asarray(actions).copy())
        return step(actions)

    model.env.step = record  # type: ignore[method-assign]
    model.learn(64)
    actions = np.concatenate(sent)
    assert np.all(np.abs(actions) <= 2.0) and np.abs(actions).max() > 1.0  # rescaled to the Box, not clipped to 1


def test_log_prob_is_the_gaussian_of_atanh_with_the_tanh_correction() -> None:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", use_sde=True, seed=1, **TINY)
    policy = model.policy
    obs = th.as_tensor(np.random.default_rng(0).normal(size=(5, 4)), dtype=th.float32)
    policy.reset_noise(5)
    actions = th.tensor([[-0.9], [-0.3], [0.0], [0.5], [0.99]])  # the env's Box is [-3, 3]: scaled to [-1, 1]
    _, log_prob, _ = policy.evaluate_actions(obs, actions)
    latent_pi = policy.mlp_extractor.forward_actor(policy.extract_features(obs))
    latent_sde = latent_pi
    mean = policy.action_net(latent_pi)
    std = th.exp(policy.log_std)
    variance = th.mm(latent_sde**2, std**2)  # SB3's state-dependent variance (learn_features off)
    u = th.atanh(actions)
    gaussian = th.distributions.Normal(mean, th.sqrt(variance + 1e-6)).log_prob(u).sum(dim=1)
    expected = gaussian - th.log(1 - actions**2 + 1e-6).sum(dim=1)
    np.testing.assert_allclose(log_prob.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_noise_is_resampled_on_sb3s_schedule() -> None:
    """``reset_noise`` at each rollout's start, every ``sde_sample_freq`` steps and per update, as SB3's PPO."""
    counts = []
    for algo, env_id in ((PPO, "roboppo/InvertedPendulum-v5"), (SB3PPO, "InvertedPendulum-v5")):
        model = algo("MlpPolicy", gym.make(env_id), use_sde=True, sde_sample_freq=4, seed=0, **TINY)
        calls: list[int] = []
        reset = model.policy.reset_noise
        model.policy.reset_noise = lambda n=1, reset=reset, calls=calls: (calls.append(n), reset(n))[1]  # type: ignore[method-assign]
        model.learn(64)
        counts.append(calls)
    assert counts[0] == counts[1] and len(counts[0]) > 2 * 8


def test_the_fast_paths_step_aside_and_say_why() -> None:
    policy = PPO("MlpPolicy", "RoboHopper-v0", use_sde=True, **TINY).policy
    for choice in (sampler_choice(policy), update_choice(policy)):
        assert choice.path == "sb3" and "gSDE" in (choice.reason or "")


def test_a_zoo_entry_sets_gsde_and_the_model_keeps_it(tmp_path: pathlib.Path) -> None:
    hparams = tmp_path / "ppo.yml"
    hparams.write_text("RoboHopper-v0:\n  n_timesteps: 128\n  use_sde: true\n  sde_sample_freq: 8\n  n_steps: 32\n")
    entry = load_ppo_hparams("RoboHopper-v0", hparams)
    model = PPO("MlpPolicy", "RoboHopper-v0", seed=0, **entry.ppo_kwargs)
    assert (model.use_sde, model.sde_sample_freq) == (True, 8)
    model.learn(64)
    model.save(tmp_path / "model.zip")
    loaded = PPO.load(tmp_path / "model.zip")
    assert loaded.use_sde and isinstance(loaded.policy.action_dist, StateDependentNoiseDistribution)
    obs = gym.make("RoboHopper-v0").reset(seed=0)[0]
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])


@pytest.mark.parametrize("sde_sample_freq", [-1, 4])
def test_gsde_trains_finite(sde_sample_freq: int) -> None:
    model = PPO("MlpPolicy", "RoboHopper-v0", use_sde=True, sde_sample_freq=sde_sample_freq, seed=0, **TINY)
    model.learn(128)
    assert all(th.isfinite(p).all() for p in model.policy.parameters())
