"""The hyperparameter zoo: tuned settings per env id (``zoo_hparams/``), and the ``roboppo-zoo`` command line.

The names below load :mod:`roboppo.common.hparams` (and with it PyTorch) when first used, so
that ``roboppo-zoo --help`` starts quickly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["HparamsError", "ZooEntry", "load_gail_hparams", "load_ppo_hparams"]

if TYPE_CHECKING:
    from roboppo.common.hparams import HparamsError, ZooEntry, load_gail_hparams, load_ppo_hparams


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'roboppo.zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module("roboppo.common.hparams"), name)
    globals()[name] = value
    return value
