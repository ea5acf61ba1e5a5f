"""One Brax environment (a batch of one) as a plain Gymnasium env, for ``gym.make`` and rendering."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from roboppo_envs.brax.vector_env import BraxVectorEnv


class BraxEnv(gym.Env):
    """A single Brax robot; ``gym.make`` adds the ``TimeLimit`` from the registration.

    :param env_name: Brax registry name.
    :param backend: ``spring``, ``positional``, ``generalized`` or ``mjx``.
    :param render_mode: ``"rgb_array"`` for RGB frames from MuJoCo's renderer.
    :param kwargs: keyword arguments of the Brax env class.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, env_name: str, backend: str = "spring", render_mode: str | None = None, **kwargs: Any) -> None:
        self.vector_env = BraxVectorEnv(
            env_name, 1, backend, max_episode_steps=-1, render_mode=render_mode, autoreset_mode="SameStep", **kwargs
        )
        self.observation_space = self.vector_env.single_observation_space
        self.action_space = self.vector_env.single_action_space
        self.render_mode = render_mode
        dt = getattr(self.vector_env.brax_env, "dt", None)
        if dt is not None:
            self.metadata = {**self.metadata, "render_fps": round(1.0 / float(dt))}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31 - 1))
        obs, info = self.vector_env.reset(seed=seed)
        return obs[0], _first(info)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        batch = np.asarray(action, dtype=np.float32).reshape(1, -1)
        obs, reward, terminated, _, info = self.vector_env.step(batch)
        if terminated[0]:  # the vector env already reset; report the terminal observation and terms
            obs, info = info["final_obs"], info["final_info"]
        return obs[0], float(reward[0]), bool(terminated[0]), False, _first(info)

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        frames = self.vector_env.render()
        return None if frames is None else frames[0]


def _first(info: dict[str, Any]) -> dict[str, float]:
    """The single copy's per-term values of a batch's ``info`` (Python floats, as Gymnasium's MuJoCo envs)."""
    return {key: float(value[0]) for key, value in info.items() if not key.startswith("_") and key != "final_obs"}
