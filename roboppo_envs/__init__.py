"""Gymnasium environments for roboppo, registered when this package is imported.

========================================  ==============================  ===========
id                                        physics and rewards of          max steps
========================================  ==============================  ===========
``RoboInvertedPendulum-v0``               ``InvertedPendulum-v5``         1000
``RoboInvertedDoublePendulum-v0``         ``InvertedDoublePendulum-v5``   1000
``RoboHopper-v0``                         ``Hopper-v5``                   1000
========================================  ==============================  ===========

Brax robots (the ``brax`` extra; JAX is imported when one is first made):

========================================  ==============================  ===========
id                                        Brax env (default backend       max steps
                                          ``spring``)
========================================  ==============================  ===========
``RoboAnt-v0``                            ``ant``                         1000
``RoboHalfCheetah-v0``                    ``halfcheetah``                 1000
``RoboHumanoid-v0``                       ``humanoid``                    1000
``RoboBraxHopper-v0``                     ``hopper``                      1000
``RoboBraxInvertedPendulum-v0``           ``inverted_pendulum``           1000
========================================  ==============================  ===========

MuJoCo Playground's robots (observations are ``Dict`` spaces of ``state`` and, for the joystick tasks,
``privileged_state``; the models come from the ``robots`` extra):

==========================================  ==================================================  =========
id                                          equals (EnvPool's port of Playground)               max steps
==========================================  ==================================================  =========
``roboppo/Go1JoystickFlatTerrain-v1``       ``MuJoCoPlayground/Go1JoystickFlatTerrain-v1``      1000
``roboppo/Go1JoystickRoughTerrain-v1``      ``MuJoCoPlayground/Go1JoystickRoughTerrain-v1``     1000
``roboppo/BerkeleyHumanoidJoystickFlat...`` ``MuJoCoPlayground/BerkeleyHumanoidJoystickFlat...`` 1000
``roboppo/PandaPickCube-v1``                ``MuJoCoPlayground/PandaPickCube-v1``               150
==========================================  ==================================================  =========

``RoboHopper-v0`` is MuJoCo's Hopper (Gymnasium v5 physics); ``RoboBraxHopper-v0`` is Brax's
hopper, a different model and reward scale. Likewise the two inverted pendulums.

``gym.make(id)`` gives one env, ``gym.make_vec(id, num_envs=N)`` a batch of N stepped together:
a :class:`~roboppo_envs.mujoco.MujocoVectorEnv` (one ``mujoco.batch.Batch`` on C++ threads,
``gym.make_vec("RoboHopper-v0", num_envs=16, num_threads=2)``) or, for Brax ids, a
:class:`~roboppo_envs.brax.BraxVectorEnv` stepped by JAX
(``gym.make_vec("RoboAnt-v0", num_envs=2048, backend="positional")``).
"""

from __future__ import annotations

import gymnasium as gym

ROBO_ENVS: dict[str, dict[str, object]] = {
    "RoboInvertedPendulum-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboInvertedPendulumEnv",
        "vector_entry_point": "roboppo_envs.mujoco.vector_env:RoboInvertedPendulumVectorEnv",
        "reward_threshold": 950.0,
    },
    "RoboInvertedDoublePendulum-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboInvertedDoublePendulumEnv",
        "vector_entry_point": "roboppo_envs.mujoco.vector_env:RoboInvertedDoublePendulumVectorEnv",
        "reward_threshold": 9100.0,
    },
    "RoboHopper-v0": {
        "entry_point": "roboppo_envs.mujoco:RoboHopperEnv",
        "vector_entry_point": "roboppo_envs.mujoco.vector_env:RoboHopperVectorEnv",
        "reward_threshold": 3800.0,
    },
}


#: Gymnasium's MuJoCo v5 suite, batched: ``roboppo/<Name>-v5`` equals ``<Name>-v5``
SUITE_NAMES = (
    "Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
    "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d",
)  # fmt: skip

#: the ``Robo*-v0`` ids of MuJoCo tasks (float32 observations) and the suite id each computes like
ROBO_SUITE_TWINS = {
    "RoboInvertedPendulum-v0": "roboppo/InvertedPendulum-v5",
    "RoboInvertedDoublePendulum-v0": "roboppo/InvertedDoublePendulum-v5",
    "RoboHopper-v0": "roboppo/Hopper-v5",
}


BRAX_ENVS: dict[str, str] = {
    "RoboAnt-v0": "ant",
    "RoboHalfCheetah-v0": "halfcheetah",
    "RoboHumanoid-v0": "humanoid",
    "RoboBraxHopper-v0": "hopper",
    "RoboBraxInvertedPendulum-v0": "inverted_pendulum",
}


#: MuJoCo Playground's robot tasks: each id and the keywords of its batched env (the EnvPool id it equals:
#: ``MuJoCoPlayground/<name>``, the same name)
PLAYGROUND_ENVS: dict[str, dict[str, str]] = {
    "roboppo/Go1JoystickFlatTerrain-v1": {"terrain": "flat"},
    "roboppo/Go1JoystickRoughTerrain-v1": {"terrain": "rough"},
    "roboppo/BerkeleyHumanoidJoystickFlatTerrain-v1": {"terrain": "flat"},
    "roboppo/PandaPickCube-v1": {},
}
#: each Playground robot: the module of its batched env (its ``make_vector``), its single env, its episode length
PLAYGROUND_ROBOTS: dict[str, tuple[str, str, int]] = {
    "Go1": ("roboppo_envs.playground.go1", "Go1JoystickEnv", 1000),
    "BerkeleyHumanoid": ("roboppo_envs.playground.berkeley_humanoid", "BerkeleyHumanoidJoystickEnv", 1000),
    "Panda": ("roboppo_envs.playground.panda", "PandaPickCubeEnv", 150),
}


def playground_robot(env_id: str) -> str:
    """The robot of a Playground id (``Go1`` for ``roboppo/Go1JoystickFlatTerrain-v1``)."""
    name = env_id.removeprefix("roboppo/")
    return next(robot for robot in PLAYGROUND_ROBOTS if name.startswith(robot))


# observation and action dims of the Brax robots, so that listing them needs neither JAX nor a compilation
BRAX_DIMS: dict[str, tuple[int, int]] = {
    "RoboAnt-v0": (27, 8),
    "RoboHalfCheetah-v0": (18, 6),
    "RoboHumanoid-v0": (244, 17),
    "RoboBraxHopper-v0": (11, 3),
    "RoboBraxInvertedPendulum-v0": (4, 1),
}


def register_envs() -> None:
    """Register every ``Robo*`` and ``roboppo/*`` id with Gymnasium (idempotent)."""
    for name in SUITE_NAMES:
        env_id = f"roboppo/{name}-v5"
        if env_id not in gym.registry:
            twin = gym.spec(f"{name}-v5")
            gym.register(
                id=env_id,
                entry_point="roboppo_envs.mujoco.single_env:MujocoSuiteEnv",
                vector_entry_point="roboppo_envs.mujoco.vector_env:make_vector",
                max_episode_steps=twin.max_episode_steps,
                reward_threshold=twin.reward_threshold,
                kwargs={"task": name},
            )
    for env_id, spec in ROBO_ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, max_episode_steps=1000, **spec)  # type: ignore[arg-type]
    for env_id, kwargs in PLAYGROUND_ENVS.items():
        module, single_env, episode_length = PLAYGROUND_ROBOTS[playground_robot(env_id)]
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point=f"roboppo_envs.playground.single_env:{single_env}",
                vector_entry_point=f"{module}:make_vector",
                max_episode_steps=episode_length,
                kwargs=kwargs,
            )
    for env_id, brax_name in BRAX_ENVS.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point="roboppo_envs.brax.single_env:BraxEnv",
                vector_entry_point="roboppo_envs.brax.vector_env:BraxVectorEnv",
                max_episode_steps=1000,
                kwargs={"env_name": brax_name, "env_id": env_id},
            )


def is_brax_id(env_id: str) -> bool:
    """True for the ids backed by Brax (their vector env is a :class:`~roboppo_envs.brax.BraxVectorEnv`)."""
    return env_id in BRAX_ENVS


def has_vector_env(env_id: str) -> bool:
    """True for the ids whose ``gym.make_vec`` builds one of roboppo's batched vector envs."""
    entry_point = gym.spec(env_id).vector_entry_point if env_id in gym.registry else None
    return isinstance(entry_point, str) and entry_point.startswith("roboppo_envs.")


def playground_ids() -> list[str]:
    """The ids of MuJoCo Playground's robot tasks, sorted."""
    return sorted(PLAYGROUND_ENVS)


def playground_twin(env_id: str) -> str | None:
    """The EnvPool id of the Playground task ``env_id`` equals (``MuJoCoPlayground/Go1JoystickFlatTerrain-v1``)."""
    return f"MuJoCoPlayground/{env_id.removeprefix('roboppo/')}" if env_id in PLAYGROUND_ENVS else None


def suite_ids() -> list[str]:
    """``roboppo/<Name>-v5`` for each of Gymnasium's eleven MuJoCo v5 tasks, sorted."""
    return sorted(f"roboppo/{name}-v5" for name in SUITE_NAMES)


def gymnasium_twin(env_id: str) -> str | None:
    """The Gymnasium id whose physics and rewards ``env_id`` has (``roboppo/Hopper-v5``: ``Hopper-v5``), else None."""
    suite = ROBO_SUITE_TWINS.get(env_id, env_id)
    return suite.removeprefix("roboppo/") if suite in suite_ids() else None


def roboppo_ids() -> list[str]:
    """The ids this package registers (MuJoCo and Brax), sorted."""
    return sorted([*suite_ids(), *ROBO_ENVS, *BRAX_ENVS])


def registered_ids() -> list[str]:
    """The ``Robo*`` and ``roboppo/*`` ids currently registered with Gymnasium, sorted."""
    return sorted(env_id for env_id in gym.registry if env_id.startswith(("Robo", "roboppo/")))


register_envs()

__all__ = [
    "BRAX_ENVS",
    "PLAYGROUND_ENVS",
    "PLAYGROUND_ROBOTS",
    "ROBO_ENVS",
    "SUITE_NAMES",
    "gymnasium_twin",
    "has_vector_env",
    "is_brax_id",
    "playground_ids",
    "playground_robot",
    "playground_twin",
    "register_envs",
    "registered_ids",
    "roboppo_ids",
    "suite_ids",
]
