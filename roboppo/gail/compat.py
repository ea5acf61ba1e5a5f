"""Every adjustment that ``imitation`` 1.0.1 needs on roboppo's stack, in one place.

imitation 1.0.1 was released against Stable-Baselines3 2.2 and Gymnasium 0.29; roboppo runs
SB3 2.x, Gymnasium 1.x and NumPy 2. Its GAIL code works there with these fixes:

1. **Integer rewards.** Gymnasium 1.x's pendulum envs return Python ``int`` rewards;
   imitation's ``TrajectoryWithRew`` refuses non-float rewards ("rewards dtype int64 not a
   float"). :class:`FloatReward` casts them.
2. **Trajectory files without HuggingFace ``datasets``.** ``imitation.data.serialize``
   imports ``datasets`` at module level (a heavy dependency roboppo does not install), so
   :func:`load_imitation_trajectories` reads imitation's pickle and ``.npz`` layouts itself
   and imports ``datasets`` only for a saved-dataset folder.

``tests/unit/test_gail_compat.py`` fails if any of these comes back.
"""

from __future__ import annotations

import pathlib
import pickle
from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from imitation.data.types import Trajectory, TrajectoryWithRew


class FloatReward(gym.RewardWrapper):
    """Return rewards as Python floats (imitation rejects integer reward arrays)."""

    def reward(self, reward: SupportsFloat) -> float:
        return float(reward)


def load_imitation_trajectories(path: pathlib.Path) -> Sequence[Trajectory]:
    """Trajectories saved by imitation: a ``datasets`` folder, a pickled list, or the legacy ``.npz``."""
    if path.is_dir():
        try:
            from imitation.data import serialize
        except ImportError as error:
            raise ImportError(
                f"{path} is a HuggingFace dataset folder written by imitation; reading it needs "
                "`pip install datasets`. Or save the trajectories as a pickled list instead."
            ) from error
        return list(serialize.load(path))
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=True) as data:
            return _trajectories_from_npz({key: data[key] for key in data.files})
    with path.open("rb") as handle:
        trajectories = pickle.load(handle)
    if not isinstance(trajectories, Sequence) or not all(isinstance(t, Trajectory) for t in trajectories):
        raise ValueError(f"{path}: expected a pickled list of imitation Trajectory objects, got {type(trajectories)}.")
    return trajectories


def _trajectories_from_npz(data: dict[str, Any]) -> list[Trajectory]:
    """imitation's legacy ``.npz`` layout: ``obs``, ``acts``, ``infos``, ``terminal``, ``indices`` [, ``rews``]."""
    count = len(data["indices"])
    observations = np.split(data["obs"], data["indices"] + np.arange(count) + 1)
    actions = np.split(data["acts"], data["indices"])
    infos = np.split(data["infos"], data["indices"])
    if "rews" in data:
        rewards = np.split(data["rews"].astype(np.float32), data["indices"])
        return [
            TrajectoryWithRew(obs, acts, info, bool(term), rews)
            for obs, acts, info, term, rews in zip(observations, actions, infos, data["terminal"], rewards, strict=True)
        ]
    return [
        Trajectory(obs, acts, info, bool(term))
        for obs, acts, info, term in zip(observations, actions, infos, data["terminal"], strict=True)
    ]
