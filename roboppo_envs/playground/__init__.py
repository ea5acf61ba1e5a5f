"""MuJoCo Playground's robot tasks, batched on MuJoCo's CPU threads, with the sim-to-real kit.

========================================  ==========================================  =========
id                                        equals (EnvPool's port of Playground)       max steps
========================================  ==========================================  =========
``roboppo/Go1JoystickFlatTerrain-v1``     ``MuJoCoPlayground/Go1JoystickFlatTerrain-v1``   1000
``roboppo/Go1JoystickRoughTerrain-v1``    ``MuJoCoPlayground/Go1JoystickRoughTerrain-v1``  1000
``roboppo/BerkeleyHumanoidJoystick``      ``MuJoCoPlayground/BerkeleyHumanoidJoystick``    1000
``FlatTerrain-v1``                        ``FlatTerrain-v1``
``roboppo/PandaPickCube-v1``              ``MuJoCoPlayground/PandaPickCube-v1``            150
========================================  ==========================================  =========
"""

from roboppo_envs.playground.berkeley_humanoid import BerkeleyHumanoidJoystickVectorEnv
from roboppo_envs.playground.go1 import Go1JoystickVectorEnv
from roboppo_envs.playground.panda import PandaPickCubeVectorEnv
from roboppo_envs.playground.single_env import (
    BerkeleyHumanoidJoystickEnv,
    Go1JoystickEnv,
    JoystickEnv,
    PandaPickCubeEnv,
    PlaygroundEnv,
)

__all__ = [
    "BerkeleyHumanoidJoystickEnv",
    "BerkeleyHumanoidJoystickVectorEnv",
    "Go1JoystickEnv",
    "Go1JoystickVectorEnv",
    "JoystickEnv",
    "PandaPickCubeEnv",
    "PandaPickCubeVectorEnv",
    "PlaygroundEnv",
]
