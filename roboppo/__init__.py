"""roboppo: train robot controllers with PPO.

Importing ``roboppo`` registers the ``Robo*`` environments (see :mod:`roboppo_envs`).
"""

import roboppo_envs  # noqa: F401  (registers the Robo* environments)
from roboppo.common.errors import ModelLoadError, NonFiniteEnvOutputError, UnknownEnvError
from roboppo.common.schedules import KLAdaptiveLR
from roboppo.ppo import PPO, MlpPolicy, TanhGaussianPolicy

__version__ = "0.1.0"

__all__ = [
    "PPO",
    "KLAdaptiveLR",
    "MlpPolicy",
    "ModelLoadError",
    "NonFiniteEnvOutputError",
    "TanhGaussianPolicy",
    "UnknownEnvError",
    "__version__",
]
