"""Gymnasium's eleven MuJoCo v5 tasks: the single env each batched task reads its coefficients from.

``roboppo/<Name>-v5`` is ``<Name>-v5`` batched: :data:`SUITE` pairs Gymnasium's env class (its
constructor keywords, model and spaces) with the task that computes its step for a batch.
"""

from __future__ import annotations

from gymnasium.envs.mujoco.ant_v5 import AntEnv
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
from gymnasium.envs.mujoco.humanoid_v5 import HumanoidEnv
from gymnasium.envs.mujoco.humanoidstandup_v5 import HumanoidStandupEnv
from gymnasium.envs.mujoco.inverted_double_pendulum_v5 import InvertedDoublePendulumEnv
from gymnasium.envs.mujoco.inverted_pendulum_v5 import InvertedPendulumEnv
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from gymnasium.envs.mujoco.pusher_v5 import PusherEnv
from gymnasium.envs.mujoco.reacher_v5 import ReacherEnv
from gymnasium.envs.mujoco.swimmer_v5 import SwimmerEnv
from gymnasium.envs.mujoco.walker2d_v5 import Walker2dEnv

from roboppo_envs.mujoco.tasks import (
    AntTask,
    HalfCheetahTask,
    HopperTask,
    HumanoidStandupTask,
    HumanoidTask,
    InvertedDoublePendulumTask,
    InvertedPendulumTask,
    MujocoTask,
    PusherTask,
    ReacherTask,
    SwimmerTask,
    Walker2dTask,
)

SUITE: dict[str, tuple[type[MujocoEnv], type[MujocoTask]]] = {
    "Ant": (AntEnv, AntTask),
    "HalfCheetah": (HalfCheetahEnv, HalfCheetahTask),
    "Hopper": (HopperEnv, HopperTask),
    "Humanoid": (HumanoidEnv, HumanoidTask),
    "HumanoidStandup": (HumanoidStandupEnv, HumanoidStandupTask),
    "InvertedDoublePendulum": (InvertedDoublePendulumEnv, InvertedDoublePendulumTask),
    "InvertedPendulum": (InvertedPendulumEnv, InvertedPendulumTask),
    "Pusher": (PusherEnv, PusherTask),
    "Reacher": (ReacherEnv, ReacherTask),
    "Swimmer": (SwimmerEnv, SwimmerTask),
    "Walker2d": (Walker2dEnv, Walker2dTask),
}


def suite_id(name: str) -> str:
    """roboppo's id of Gymnasium's ``<name>-v5``: ``roboppo/<name>-v5``."""
    return f"roboppo/{name}-v5"
