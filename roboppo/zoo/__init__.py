"""The hyperparameter zoo, all in this package: the files, their schema and their loader.

- ``hparams/ppo.yml`` and ``hparams/gail.yml``: tuned settings per env id, each backed by measured
  results (``zoo_hparams/`` at the repository's root is a link to that folder);
- :mod:`~roboppo.zoo.schema`: which keys exist and which values they may take;
- :mod:`~roboppo.zoo.loader`: reading, merging and validating an entry (:func:`load_ppo_hparams`).

The names below load :mod:`roboppo.zoo.loader` (and with it PyTorch) when first used, so
that ``roboppo-zoo --help`` starts quickly. The command line is :mod:`roboppo.cli`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["HparamsError", "ZooEntry", "load_gail_hparams", "load_ppo_hparams"]

if TYPE_CHECKING:
    from roboppo.zoo.loader import HparamsError, ZooEntry, load_gail_hparams, load_ppo_hparams


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'roboppo.zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module("roboppo.zoo.loader"), name)
    globals()[name] = value
    return value
