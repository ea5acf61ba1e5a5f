"""Bad input gets an error that names the problem and the fix."""

from __future__ import annotations

import pathlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from roboppo import PPO, ModelLoadError, NonFiniteEnvOutputError, UnknownEnvError


def test_unknown_env_id_lists_the_robo_ids() -> None:
    with pytest.raises(UnknownEnvError) as error:
        PPO("MlpPolicy", "RoboHoper-v0")
    message = str(error.value)
    assert "'RoboHoper-v0'" in message
    for env_id in ("RoboHopper-v0", "RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0"):
        assert env_id in message


def test_wrong_env_on_load_keeps_sb3s_message(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    PPO("MlpPolicy", "RoboInvertedPendulum-v0", **tiny).save(tmp_path / "pendulum.zip")
    with pytest.raises(ValueError, match="Observation spaces do not match") as error:
        PPO.load(tmp_path / "pendulum.zip", env=gym.make("RoboHopper-v0"))
    assert not isinstance(error.value, ModelLoadError)


class NaNAfterEnv(gym.Env):
    """Returns a NaN observation (or reward) at its 10th step."""

    metadata = {"render_modes": ["rgb_array"]}
    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, where: str = "observation") -> None:
        self.where, self.t = where, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        bad = self.t == 10
        obs = np.full(2, np.nan if bad and self.where == "observation" else 0.0, np.float32)
        reward = float("inf") if bad and self.where == "reward" else 1.0
        return obs, reward, False, False, {}


gym.register("NaNAfter10-v0", entry_point=NaNAfterEnv, max_episode_steps=100)


@pytest.mark.parametrize("where", ["observation", "reward"])
def test_non_finite_env_output_stops_training_naming_env_and_step(where: str, tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", "NaNAfter10-v0", env_kwargs={"where": where}, seed=0, **tiny)
    before = [p.detach().clone() for p in model.policy.parameters()]
    with pytest.raises(
        NonFiniteEnvOutputError, match=rf"NaNAfter10-v0 \(copy 0\) returned a non-finite {where} at vector step 10"
    ):
        model.learn(64)
    assert all((a == b).all() for a, b in zip(before, model.policy.parameters(), strict=True))


class NaNAtReset(NaNAfterEnv):
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.array([0.0, np.nan], np.float32), {}


def test_non_finite_first_observation_is_refused_at_reset(tiny: dict[str, Any]) -> None:
    model = PPO("MlpPolicy", NaNAtReset(), seed=0, **tiny)
    with pytest.raises(NonFiniteEnvOutputError, match=r"\(copy 0\) returned a non-finite observation at reset"):
        model.learn(64)


def test_missing_model_file_names_both_paths_tried(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"model file not found: .*nothing.*also tried .*nothing\.zip"):
        PPO.load(tmp_path / "nothing")


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04truncated"])
def test_corrupt_model_file_says_which_file_and_why(tmp_path: pathlib.Path, content: bytes) -> None:
    path = tmp_path / "model.zip"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError, match=rf"cannot load a model from {path}: .*not a complete model zip"):
        PPO.load(path)


def test_truncated_model_zip_is_refused(tmp_path: pathlib.Path, tiny: dict[str, Any]) -> None:
    PPO("MlpPolicy", "RoboInvertedPendulum-v0", **tiny).save(tmp_path / "good.zip")
    data = (tmp_path / "good.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"cut\.zip"):
        PPO.load(tmp_path / "cut.zip")


def test_zero_envs_is_refused() -> None:
    with pytest.raises(ValueError, match=r"n_envs must be at least 1, got 0"):
        PPO("MlpPolicy", "RoboHopper-v0", n_envs=0)
