"""One copy of a batched robot task behind ``gym.Env``: what ``gym.make("roboppo/Go1JoystickFlatTerrain-v1")`` returns.

It steps a one-copy vector env on the calling thread without its autoreset; ``gym.make`` adds the
``TimeLimit`` (the task's episode length) as for any registered env.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from roboppo_envs.playground.base import PlaygroundVectorEnv
from roboppo_envs.playground.berkeley_humanoid import BerkeleyHumanoidJoystickVectorEnv
from roboppo_envs.playground.go1 import Go1JoystickVectorEnv
from roboppo_envs.playground.joystick import JoystickVectorEnv
from roboppo_envs.playground.panda import PandaPickCubeVectorEnv


class PlaygroundEnv(gym.Env):
    """One robot of a Playground task (keywords: its vector env's)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 50}
    vector_class: type[PlaygroundVectorEnv]

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        kwargs.pop("max_episode_steps", None)  # the TimeLimit's, as gym.make reads it
        self.vector = self.vector_class(
            1, num_threads=1, max_episode_steps=-1, autoreset_mode="Disabled", render_mode=render_mode, **kwargs
        )
        self.observation_space = self.vector.single_observation_space
        self.action_space = self.vector.single_action_space
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.vector._rngs[0] = self.np_random  # the initial state is drawn from env.unwrapped.np_random
        obs, info = self.vector.reset()
        return _first(obs), _first(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, _, info = self.vector.step(np.asarray(action)[None])
        return _first(obs), float(reward[0]), bool(terminated[0]), False, _first(info)

    def render(self) -> Any:
        frames = self.vector.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.vector.close()


def _first(values: dict[str, Any]) -> dict[str, Any]:
    """Copy 0's entries (masks dropped)."""
    return {key: np.asarray(value)[0] for key, value in values.items() if not key.startswith("_")}


class JoystickEnv(PlaygroundEnv):
    """One robot tracking joystick commands (keywords: :class:`~roboppo_envs.playground.joystick.JoystickVectorEnv`)."""

    vector: JoystickVectorEnv

    def set_command(self, command: Any) -> None:
        """Command ``(vx, vy, yaw_rate)`` until the next resample."""
        self.vector.set_command(command)

    @property
    def command(self) -> np.ndarray:
        return self.vector.command[0].copy()


class Go1JoystickEnv(JoystickEnv):
    """One Go1 (``gym.make("roboppo/Go1JoystickFlatTerrain-v1")``)."""

    vector_class = Go1JoystickVectorEnv


class BerkeleyHumanoidJoystickEnv(JoystickEnv):
    """One Berkeley Humanoid (``gym.make("roboppo/BerkeleyHumanoidJoystickFlatTerrain-v1")``)."""

    vector_class = BerkeleyHumanoidJoystickVectorEnv


class PandaPickCubeEnv(PlaygroundEnv):
    """One Panda arm lifting a cube (``gym.make("roboppo/PandaPickCube-v1")``)."""

    vector_class = PandaPickCubeVectorEnv
