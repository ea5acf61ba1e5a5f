"""One copy of a batched v5 task behind ``gym.Env``: what ``gym.make("roboppo/<Name>-v5")`` returns.

It steps a one-copy :class:`~roboppo_envs.mujoco.vector_env.MujocoVectorEnv` on the calling
thread, without its autoreset (``gym.make`` adds the ``TimeLimit``), and returns what Gymnasium's
``<Name>-v5`` returns, types included: float64 observations, NumPy scalar rewards and info terms
(Python scalars where Gymnasium's env gives those). So ``gymnasium.utils.env_match.check_environments_match``
holds between the two, and a model trained on the batch is evaluated on the same computation.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from roboppo_envs.mujoco.vector_env import MujocoVectorEnv


class MujocoSuiteEnv(gym.Env):
    """Gymnasium's ``<task>-v5``, computed by roboppo's batched task for one copy.

    :param task: the Gymnasium env, e.g. ``"Hopper"`` (a key of :data:`~roboppo_envs.mujoco.suite.SUITE`).
    :param render_mode: ``"rgb_array"``, ``"depth_array"``, ``"rgbd_tuple"`` or None.
    :param env_kwargs: the keyword arguments of Gymnasium's env (``xml_file``, ``frame_skip``, reward weights, ...).
    """

    def __init__(self, task: str, render_mode: str | None = None, **env_kwargs: Any) -> None:
        self.vector = MujocoVectorEnv(
            1, task=task, num_threads=1, max_episode_steps=None, render_mode=render_mode, **env_kwargs
        )
        self.template = self.vector.template
        self.observation_space = self.vector.single_observation_space
        self.action_space = self.vector.single_action_space
        self.metadata = {**self.template.metadata, "render_modes": self.vector.metadata["render_modes"]}
        self.render_mode = render_mode
        self._python = self.vector.task.python_scalars

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self.vector.reset(seed=[seed])
        return obs[0], self._first(info)

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        actions = self.vector._checked_actions(np.asarray(action)[None])
        obs, reward, terminated, terms = self.vector._simulate(actions)
        value = self._python["reward"](reward[0]) if "reward" in self._python else reward[0]
        return obs[0].astype(self.observation_space.dtype), value, bool(terminated[0]), False, self._first(terms)

    def render(self) -> Any:
        frames = self.vector.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.vector.close()

    def _first(self, terms: dict[str, Any]) -> dict[str, Any]:
        """Copy 0's terms, in the types Gymnasium's env returns."""
        first = {key: value[0] for key, value in terms.items() if not key.startswith("_")}
        return {key: self._python[key](value) if key in self._python else value for key, value in first.items()}
