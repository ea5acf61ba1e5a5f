"""What roboppo's batched envs (MuJoCo and Brax) share of Gymnasium's ``VectorEnv`` contract."""

from __future__ import annotations

from typing import Any

import numpy as np

Info = dict[str, np.ndarray]  # per-term arrays, one row per copy


class NonFiniteEnvOutputError(RuntimeError):
    """An env returned NaN or inf (an observation, a reward): raised by roboppo's batched envs and by its PPO."""


def nonfinite_rows(values: Any) -> np.ndarray:
    """The copies (rows) whose ``values`` hold NaN or inf: the one check of env output, for arrays and dicts of them.

    Integer and boolean arrays are always finite. :return: the row indices, in order (empty: all finite).
    """
    if isinstance(values, dict):
        parts = [nonfinite_rows(value) for value in values.values()]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    array = np.asarray(values)
    if not np.issubdtype(array.dtype, np.floating) or array.size == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(~np.isfinite(array.reshape(array.shape[0], -1)).all(axis=1))


def time_limit(max_episode_steps: int | None, registered: int | None, name: str) -> int | None:
    """The steps after which an episode is truncated, by ``gym.make``'s rule; None: never.

    ``None`` is the id's registered limit (``registered``), ``-1`` no limit; ``gym.make_vec`` passes a
    caller's ``max_episode_steps`` through unchanged, so the same keyword means the same in both.
    """
    if max_episode_steps is None:
        return registered
    if max_episode_steps == -1:
        return None
    if max_episode_steps < 1:
        raise ValueError(
            f"{name}: max_episode_steps must be a positive number of steps, -1 (no limit) or None (the registered "
            f"limit, {registered}); got {max_episode_steps}."
        )
    return max_episode_steps


def reset_mask(options: dict[str, Any] | None, num_envs: int, name: str, first_reset: bool) -> np.ndarray | None:
    """``options["reset_mask"]``, checked as ``SyncVectorEnv`` checks it; None when absent (every copy resets).

    :param first_reset: the env was never reset, so every copy must be (a partial mask comes later; a mask of every
        copy is taken as none).
    """
    mask = (options or {}).get("reset_mask")
    if mask is None:
        return None
    wanted = f"a bool NumPy array of shape ({num_envs},)"
    # checked in SyncVectorEnv's order, with its exception types
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{name}: options['reset_mask'] must be {wanted}, got {mask!r}.")
    if mask.shape != (num_envs,):
        raise ValueError(f"{name}: options['reset_mask'] must be {wanted}, got shape {mask.shape}.")
    if mask.dtype != np.bool_:
        raise TypeError(f"{name}: options['reset_mask'] must be {wanted}, got dtype {mask.dtype}.")
    if not mask.any():
        raise ValueError(f"{name}: options['reset_mask'] must contain at least one True value.")
    if first_reset and not mask.all():
        raise ValueError(f"{name}: the first reset() resets every copy; a partial options['reset_mask'] comes later.")
    return None if first_reset else mask  # a first reset masking every copy is a plain reset


def expand(mask: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``mask`` ``[N]`` shaped to broadcast against ``value`` ``[N, ...]``."""
    return mask.reshape(-1, *([1] * (value.ndim - 1)))


def with_masks(terms: Info, present: np.ndarray | int) -> dict[str, Any]:
    """``terms`` with a ``_term`` mask each (``present``: a mask, or a count of copies that all have it)."""
    out: dict[str, Any] = {}
    for key, value in terms.items():
        out[key] = value
        out[f"_{key}"] = np.ones(present, dtype=bool) if isinstance(present, int) else present.copy()
    return out


def scattered(terms: Info, copies: np.ndarray, num_envs: int) -> dict[str, Any]:
    """Terms of ``copies`` alone laid out over all ``num_envs`` copies (zeros, masked out, elsewhere)."""
    present = np.zeros(num_envs, dtype=bool)
    present[copies] = True
    out = {}
    for key, value in terms.items():
        full = np.zeros((num_envs, *np.shape(value)[1:]), dtype=np.asarray(value).dtype)
        full[copies] = value
        out[key] = full
    return with_masks(out, present)
