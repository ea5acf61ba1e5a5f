"""Gymnasium environments for roboppo, registered when this package is imported.

========================================  ==============================  ===========
id                                        physics and rewards of          max steps
========================================  ==============================  ===========
``RoboInvertedPendulum-v0``               ``InvertedPendulum-v5``         1000
``RoboInvertedDoublePendulum-v0``         ``InvertedDoublePendulum-v5``   1000
``RoboHopper-v0``                         ``Hopper-v5``                   1000
========================================  ==============================  ===========

``gym.make(id)`` gives one env, ``gym.make_vec(id, num_envs=N)`` a vector of N.
"""

from __future__ import annotations

import gymnasium as gym

ROBO_ENVS: dict[str, dict[str, object]] = {
    "RoboInvertedPendulum-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboInvertedPendulumEnv",
        "reward_threshold": 950.0,
    },
    "RoboInvertedDoublePendulum-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboInvertedDoublePendulumEnv",
        "reward_threshold": 9100.0,
    },
    "RoboHopper-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboHopperEnv",
        "reward_threshold": 3800.0,
    },
}


def register_envs() -> None:
    """Register every ``Robo*`` id with Gymnasium (idempotent)."""
    for env_id, spec in ROBO_ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, max_episode_steps=1000, **spec)  # type: ignore[arg-type]


def registered_ids() -> list[str]:
    """The ``Robo*`` ids currently registered with Gymnasium, sorted."""
    return sorted(env_id for env_id in gym.registry if env_id.startswith("Robo"))


register_envs()

__all__ = ["ROBO_ENVS", "register_envs", "registered_ids"]
