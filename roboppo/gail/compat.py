"""Every adjustment that ``imitation`` 1.0.1 needs on roboppo's stack, in one place.

imitation 1.0.1 was released against Stable-Baselines3 2.2 and Gymnasium 0.29; roboppo runs
SB3 2.x, Gymnasium 1.x and NumPy 2. Its GAIL code works there with these fixes:

1. **Integer rewards.** Gymnasium 1.x's pendulum envs return Python ``int`` rewards;
   imitation's ``TrajectoryWithRew`` refuses non-float rewards ("rewards dtype int64 not a
   float"). :class:`FloatReward` casts them.
2. **Trajectory files without HuggingFace ``datasets``, and without pickle.** ``imitation.data.serialize``
   imports ``datasets`` at module level (a heavy dependency roboppo does not install) and reads
   every file with ``np.load(..., allow_pickle=True)``, so :func:`load_imitation_trajectories`
   reads imitation's legacy ``.npz`` itself, without pickle, opens its pickle layout only when
   allowed, and imports ``datasets`` only for a saved-dataset folder.

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


def load_imitation_trajectories(path: pathlib.Path, allow_pickle: bool = False) -> Sequence[Trajectory]:
    """Trajectories saved by imitation: a ``datasets`` folder, the legacy ``.npz``, or (``allow_pickle``) a pickle.

    A pickle can run code when it is read, so it is only opened when the caller allows it. The
    legacy ``.npz`` keeps ``infos`` as an object array, which only pickle can read: without
    ``allow_pickle`` the infos are left out (GAIL does not use them) and the numeric arrays are read.
    """
    if path.is_dir():
        try:
            from imitation.data import serialize
        except ImportError as error:
            raise ImportError(
                f"{path} is a HuggingFace dataset folder written by imitation; reading it needs "
                "`pip install datasets`. Or save the trajectories with roboppo.gail.save_demonstrations."
            ) from error
        return list(serialize.load(path))
    if path.suffix == ".npz":
        return _trajectories_from_npz(read_npz_arrays(path, allow_pickle, optional_objects={"infos"}))
    if not allow_pickle:
        raise PickleRefusedError(path)
    with path.open("rb") as handle:
        trajectories = pickle.load(handle)
    if not isinstance(trajectories, Sequence) or not all(isinstance(t, Trajectory) for t in trajectories):
        raise ValueError(f"{path}: expected a pickled list of imitation Trajectory objects, got {type(trajectories)}.")
    return trajectories


SAFE_FORMATS = (
    "roboppo's .npz (roboppo-zoo collect-demos, roboppo.gail.save_demonstrations), "
    "an OpenAI-baselines .npz, imitation's legacy .npz or its HuggingFace dataset folder"
)


class PickleRefusedError(ValueError):
    """A data file that only pickle can read, opened without ``allow_pickle``."""

    def __init__(self, path: pathlib.Path, array: str | None = None) -> None:
        what = f"array {array!r} of {path} is an object array" if array else f"{path} is a pickle"
        super().__init__(
            f"{what}: reading it runs pickle, which can execute code from the file. Use a format without "
            f"code ({SAFE_FORMATS}), or, if you trust where the file came from, pass allow_pickle=True "
            "(--allow-pickle on the command line)."
        )


def read_npz_arrays(path: pathlib.Path, allow_pickle: bool, optional_objects: frozenset[str] | set[str] = frozenset()
                    ) -> dict[str, Any]:  # fmt: skip
    """Every array of an ``.npz``; object arrays (pickled) only with ``allow_pickle``.

    Without it, an object array named in ``optional_objects`` is left out; any other raises
    :class:`PickleRefusedError` naming it.
    """
    arrays = {}
    with np.load(path, allow_pickle=allow_pickle) as data:
        for key in data.files:
            try:
                arrays[key] = data[key]
            except ValueError as error:
                if "allow_pickle" not in str(error):
                    raise
                if key not in optional_objects:
                    raise PickleRefusedError(path, key) from error
    return arrays


def _trajectories_from_npz(data: dict[str, Any]) -> list[Trajectory]:
    """imitation's legacy ``.npz`` layout: ``obs``, ``acts``, ``infos``, ``terminal``, ``indices`` [, ``rews``]."""
    count = len(data["indices"])
    observations = np.split(data["obs"], data["indices"] + np.arange(count) + 1)
    actions = np.split(data["acts"], data["indices"])
    infos = np.split(data["infos"], data["indices"]) if "infos" in data else [None] * (count + 1)
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
