"""Models saved by earlier roboppo versions load, act as they did, and train on."""

import pathlib

import gymnasium as gym
import numpy as np

from roboppo import PPO

DATA = pathlib.Path(__file__).parent.parent / "data"


def test_a_model_of_version_0_1_0_loads_acts_and_trains_on() -> None:
    recorded = np.load(DATA / "pendulum-0.1.0-actions.npz")
    model = PPO.load(DATA / "pendulum-0.1.0.zip", env=gym.make("Pendulum-v1"))
    actions, _ = model.predict(recorded["observations"], deterministic=True)
    np.testing.assert_allclose(actions, recorded["actions"], atol=1e-6)
    assert model.normalize_reward and model.return_rms is not None
    assert model.return_rms.var == recorded["return_var"]
    assert model.resolved_hyperparams()["normalize_reward"] is True
    start = model.num_timesteps
    model.learn(64, reset_num_timesteps=False)
    assert model.num_timesteps == start + 64


def test_a_zoo_model_of_version_0_1_0_loads_with_its_schedules() -> None:
    """Its learning rate and clip range are the schedules 0.1.0 named ``roboppo.common.hparams.LinearSchedule``."""
    from roboppo.common.schedules import LinearSchedule

    recorded = np.load(DATA / "pendulum-zoo-0.1.0-actions.npz")
    model = PPO.load(DATA / "pendulum-zoo-0.1.0.zip", env=gym.make("RoboInvertedPendulum-v0"))
    assert isinstance(model.learning_rate, LinearSchedule) and model.learning_rate.initial == 2e-3
    actions, _ = model.predict(recorded["observations"], deterministic=True)
    np.testing.assert_allclose(actions, recorded["actions"], atol=1e-6)
    assert model.default_total_timesteps == 20_000
    model.learn(64, reset_num_timesteps=False)
