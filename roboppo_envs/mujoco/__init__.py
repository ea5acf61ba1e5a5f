"""MuJoCo environments (Gymnasium v5 physics and rewards, float32 observations), single and batched."""

from roboppo_envs.mujoco.robo_v0 import RoboHopperEnv, RoboInvertedDoublePendulumEnv, RoboInvertedPendulumEnv
from roboppo_envs.mujoco.vector_env import (
    MujocoNonFiniteError,
    MujocoVectorEnv,
    RoboHopperVectorEnv,
    RoboInvertedDoublePendulumVectorEnv,
    RoboInvertedPendulumVectorEnv,
)

__all__ = [
    "MujocoNonFiniteError",
    "MujocoVectorEnv",
    "RoboHopperEnv",
    "RoboHopperVectorEnv",
    "RoboInvertedDoublePendulumEnv",
    "RoboInvertedDoublePendulumVectorEnv",
    "RoboInvertedPendulumEnv",
    "RoboInvertedPendulumVectorEnv",
]
