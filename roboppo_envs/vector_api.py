"""What roboppo's batched envs (MuJoCo and Brax) share of Gymnasium's ``VectorEnv`` contract."""

from __future__ import annotations

from typing import Any

import numpy as np


def reset_mask(options: dict[str, Any] | None, num_envs: int, name: str, first_reset: bool) -> np.ndarray | None:
    """``options["reset_mask"]``, checked as ``SyncVectorEnv`` checks it; None when absent (every copy resets).

    :param first_reset: the env was never reset, so every copy must be (a mask comes later).
    """
    mask = (options or {}).get("reset_mask")
    if mask is None:
        return None
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise ValueError(
            f"{name}: options['reset_mask'] must be a bool NumPy array of shape ({num_envs},), got {mask!r}."
        )
    if not mask.any():
        raise ValueError(f"{name}: options['reset_mask'] must contain at least one True value.")
    if first_reset:
        raise ValueError(f"{name}: the first reset() resets every copy; options['reset_mask'] comes later.")
    return mask
