"""roboppo: train robot controllers with PPO.

Importing ``roboppo`` registers the ``Robo*`` environments (see :mod:`roboppo_envs`). The
public names (``PPO``, ``TanhGaussianPolicy``, ...) load their modules, and with them PyTorch
and Stable-Baselines3, when first used, so ``import roboppo`` and ``roboppo-zoo --help`` are quick.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

import roboppo_envs  # noqa: F401  (registers the Robo* environments)


def _quiet_legacy_gym() -> None:
    """Stable-Baselines3 imports the legacy `gym` package whenever it is installed (only to convert old
    envs), and gym's import prints the notice `gym_notices` holds for its version, that gym is
    unmaintained, to stderr. roboppo speaks Gymnasium: that notice is dropped before gym is imported."""
    if "gym" in sys.modules or importlib.util.find_spec("gym_notices") is None:
        return
    try:
        notices = importlib.import_module("gym_notices.notices")
    except ImportError:
        return
    for version, text in list(notices.notices.items()):
        if "Gym has been unmaintained" in text:
            del notices.notices[version]


_quiet_legacy_gym()

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "PPO": "roboppo.ppo",
    "MlpPolicy": "roboppo.ppo",
    "TanhGaussianPolicy": "roboppo.ppo",
    "KLAdaptiveLR": "roboppo.common.schedules",
    "ModelLoadError": "roboppo.common.errors",
    "NonFiniteEnvOutputError": "roboppo.common.errors",
    "UnknownEnvError": "roboppo.common.errors",
}

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

if TYPE_CHECKING:
    from roboppo.common.errors import ModelLoadError, NonFiniteEnvOutputError, UnknownEnvError
    from roboppo.common.schedules import KLAdaptiveLR
    from roboppo.ppo import PPO, MlpPolicy, TanhGaussianPolicy


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'roboppo' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
