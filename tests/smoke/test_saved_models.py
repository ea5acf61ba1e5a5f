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
