"""The ``Robo*-v0`` MuJoCo robots (``RoboHopper-v0``, ...): Gymnasium's v5 envs, float32 for the networks.

Each class subclasses the Gymnasium v5 env (so every reward coefficient stays a
constructor keyword) and changes only the types: observations are float32, as the
networks consume them, and rewards are Python floats (the v5 pendulum returns ints).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
from gymnasium.envs.mujoco.inverted_double_pendulum_v5 import InvertedDoublePendulumEnv
from gymnasium.envs.mujoco.inverted_pendulum_v5 import InvertedPendulumEnv


class Float32MujocoMixin:
    """float32 observations and float rewards on top of a Gymnasium v5 MuJoCo env.

    The subclasses narrow the v5 classes' float64 types on purpose, hence their ``type: ignore[misc]``.
    """

    observation_space: spaces.Box

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shape = self.observation_space.shape
        self.observation_space = spaces.Box(low=-np.inf, high=np.inf, shape=shape, dtype=np.float32)

    def _get_obs(self) -> np.ndarray:
        return np.asarray(super()._get_obs(), dtype=np.float32)  # type: ignore[misc]

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)  # type: ignore[misc]
        return obs, float(reward), bool(terminated), bool(truncated), info


class RoboInvertedPendulumEnv(Float32MujocoMixin, InvertedPendulumEnv):  # type: ignore[misc]
    """Cart-pole balancing: +1 per step while the pole stays within 0.2 rad (``InvertedPendulum-v5``)."""


class RoboInvertedDoublePendulumEnv(Float32MujocoMixin, InvertedDoublePendulumEnv):  # type: ignore[misc]
    """Two-link pole on a cart: alive bonus minus distance and velocity penalties (``InvertedDoublePendulum-v5``)."""


class RoboHopperEnv(Float32MujocoMixin, HopperEnv):  # type: ignore[misc]
    """One-legged hopper: forward velocity + healthy bonus - control cost (``Hopper-v5``)."""
