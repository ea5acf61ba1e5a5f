"""Expert demonstrations: one loader for the formats robotics users have, and roboppo's own writer.

Accepted by :func:`load_demonstrations` (the format is recognised from the file):

- **OpenAI-baselines expert ``.npz``** (``deterministic.trpo.Hopper.0.00.npz``): keys ``obs``,
  ``acs``, ``rews``, ``ep_rets``; episodes as 3-D arrays ``[episodes, steps, dim]``, or flattened
  ``[steps, dim]`` with episode boundaries in ``episode_starts`` ``[steps]`` or ``ep_lens`` ``[episodes]``.
- **imitation's saved trajectories**: a pickled list of ``Trajectory``, imitation's legacy ``.npz``
  (``obs``, ``acts``, ``indices``, ...), or a HuggingFace dataset folder (needs ``datasets``).
- **roboppo's format**, written by :func:`save_demonstrations` (``roboppo-zoo collect-demos``):
  an ``.npz`` with ``format = "roboppo-demos-v1"``, flattened ``obs``/``acs``/``rews``,
  ``episode_lengths``, ``final_obs`` and ``terminated`` per episode.

Every array is checked against the env before any training: missing keys, ``obs``/``acs`` length
mismatches, dimensions that do not fit the env and NaN values raise :class:`DemoError` naming
the file, the array and the problem.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import zipfile
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from imitation.data.types import Trajectory, TrajectoryWithRew

from roboppo.common.files import atomic_target
from roboppo.gail.compat import load_imitation_trajectories

ROBOPPO_FORMAT = "roboppo-demos-v1"


class DemoError(ValueError):
    """Demonstrations that cannot be trained on as they are."""


@dataclasses.dataclass
class Demonstrations:
    """Validated expert episodes as imitation ``Trajectory`` objects (``obs`` has one row more than ``acts``)."""

    trajectories: list[Trajectory]
    source: str
    env_id: str | None = None  # the env the file says it was recorded on (roboppo's format only)

    @property
    def n_transitions(self) -> int:
        return sum(len(t.acts) for t in self.trajectories)

    @property
    def episode_returns(self) -> np.ndarray | None:
        """Per-episode returns when the file carries rewards, else None."""
        if not all(isinstance(t, TrajectoryWithRew) for t in self.trajectories):
            return None
        return np.array([float(np.sum(t.rews)) for t in self.trajectories])  # type: ignore[attr-defined]


def load_demonstrations(
    path: str | os.PathLike[str], env: gym.Env | str, allow_env_mismatch: bool = False
) -> Demonstrations:
    """Read, recognise and validate a demonstration file against ``env`` (an env or an env id).

    :param allow_env_mismatch: accept a roboppo file recorded on another env id whose dimensions fit
        (refused by default: same-sized envs such as two pendulums would train on the wrong expert).
    """
    file = pathlib.Path(path)
    if not file.exists():
        raise DemoError(f"{file}: demonstration file not found.")
    spaces = _spaces(env)
    recorded = None
    if file.is_dir() or file.suffix in {".pkl", ".pickle"}:
        trajectories, source = list(load_imitation_trajectories(file)), "imitation"
    else:
        arrays = _read_npz(file)
        if arrays.get("format") == ROBOPPO_FORMAT:
            trajectories, source = _from_roboppo(file, arrays), "roboppo"
            recorded = str(arrays["env_id"]) if "env_id" in arrays else None
            _check_env_id(file, recorded, env, allow_env_mismatch)
        elif "indices" in arrays and "acts" in arrays:
            trajectories, source = list(load_imitation_trajectories(file)), "imitation"
        else:
            trajectories, source = _from_baselines(file, arrays), "openai-baselines"
    _validate(file, trajectories, *spaces)
    return Demonstrations(trajectories, source, recorded)


def _check_env_id(file: pathlib.Path, recorded: str | None, env: gym.Env | str, allow_mismatch: bool) -> None:
    spec = None if isinstance(env, str) else getattr(env, "spec", None)
    wanted = env if isinstance(env, str) else (spec.id if spec is not None else None)
    if recorded is None or wanted is None or recorded == wanted or allow_mismatch:
        return
    raise DemoError(
        f"{file}: recorded on {recorded}, not {wanted}. Pass demonstrations of {wanted}, "
        "or --allow-env-mismatch (allow_env_mismatch=True) if the two envs really share observations and actions."
    )


def save_demonstrations(path: str | os.PathLike[str], trajectories: Sequence[TrajectoryWithRew], env_id: str) -> None:
    """Write episodes in roboppo's format, atomically (a temporary file renamed into place)."""
    with atomic_target(path) as partial, partial.open("wb") as handle:
        _write_arrays(handle, trajectories, env_id)


def _write_arrays(handle: Any, trajectories: Sequence[TrajectoryWithRew], env_id: str) -> None:
    np.savez_compressed(
        handle,
        format=np.array(ROBOPPO_FORMAT),
        env_id=np.array(env_id),
        obs=np.concatenate([np.asarray(t.obs)[:-1] for t in trajectories]).astype(np.float32),
        acs=np.concatenate([t.acts for t in trajectories]).astype(np.float32),
        rews=np.concatenate([t.rews for t in trajectories]).astype(np.float32),
        episode_lengths=np.array([len(t.acts) for t in trajectories]),
        final_obs=np.stack([np.asarray(t.obs)[-1] for t in trajectories]).astype(np.float32),
        terminated=np.array([t.terminal for t in trajectories]),
        ep_rets=np.array([float(np.sum(t.rews)) for t in trajectories]),
    )


def _spaces(env: gym.Env | str) -> tuple[int, int]:
    if isinstance(env, str):
        spec_env = gym.make(env)
        obs_space, act_space = spec_env.observation_space, spec_env.action_space
        spec_env.close()
    else:
        obs_space, act_space = env.observation_space, env.action_space
    assert obs_space.shape is not None and act_space.shape is not None
    return int(np.prod(obs_space.shape)), int(np.prod(act_space.shape))


def _read_npz(file: pathlib.Path) -> dict[str, Any]:
    try:
        with np.load(file, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise DemoError(f"{file}: not a readable .npz file ({error}).") from error
    if not arrays:
        raise DemoError(f"{file}: the file holds no arrays.")
    if "format" in arrays:
        arrays["format"] = str(arrays["format"])
    return arrays


def _require(file: pathlib.Path, arrays: dict[str, Any], *keys: str) -> None:
    missing = [key for key in keys if key not in arrays]
    if missing:
        raise DemoError(f"{file}: missing array(s) {', '.join(missing)}; the file has {', '.join(sorted(arrays))}.")


def _from_roboppo(file: pathlib.Path, arrays: dict[str, Any]) -> list[Trajectory]:
    _require(file, arrays, "obs", "acs", "rews", "episode_lengths", "final_obs", "terminated")
    obs, acs, rews, lengths = arrays["obs"], arrays["acs"], arrays["rews"], arrays["episode_lengths"]
    _same_length(file, ("obs", obs), ("acs", acs), ("rews", rews))
    if int(lengths.sum()) != len(obs):
        raise DemoError(f"{file}: episode_lengths sum to {int(lengths.sum())} but obs has {len(obs)} rows.")
    bounds = np.cumsum(lengths)[:-1]
    return [
        TrajectoryWithRew(np.concatenate([o, f[None]]), a, None, bool(t), r.astype(np.float32))
        for o, a, r, f, t in zip(
            np.split(obs, bounds),
            np.split(acs, bounds),
            np.split(rews, bounds),
            arrays["final_obs"],
            arrays["terminated"],
            strict=True,
        )
    ]


def _from_baselines(file: pathlib.Path, arrays: dict[str, Any]) -> list[Trajectory]:
    _require(file, arrays, "obs", "acs")
    obs, acs = arrays["obs"], arrays["acs"]
    rews = arrays.get("rews")
    if obs.ndim == 3:  # [episodes, steps, dim]
        _same_length(file, ("obs", obs), ("acs", acs))
        if obs.shape[1] != acs.shape[1]:
            raise DemoError(f"{file}: obs has {obs.shape[1]} steps per episode but acs has {acs.shape[1]}.")
        episodes = [(obs[i], acs[i], None if rews is None else rews[i]) for i in range(len(obs))]
    else:
        _same_length(file, ("obs", obs), ("acs", acs), *([] if rews is None else [("rews", rews)]))
        bounds = _episode_bounds(file, arrays, len(obs))
        episodes = list(
            zip(np.split(obs, bounds), np.split(acs, bounds), [None] * (len(bounds) + 1) if rews is None
                else np.split(rews, bounds), strict=True)
        )  # fmt: skip
    # Without the observation after each episode's last action, that last transition is dropped.
    return [_trajectory(o, a, r) for o, a, r in episodes if len(o) >= 2]


def _episode_bounds(file: pathlib.Path, arrays: dict[str, Any], steps: int) -> np.ndarray:
    if "episode_starts" in arrays:
        return np.flatnonzero(arrays["episode_starts"].astype(bool))[1:] if steps else np.array([], int)
    if "ep_lens" in arrays:
        lengths = arrays["ep_lens"].astype(int)
        if int(lengths.sum()) != steps:
            raise DemoError(f"{file}: ep_lens sum to {int(lengths.sum())} but obs has {steps} rows.")
        return np.cumsum(lengths)[:-1]
    raise DemoError(
        f"{file}: obs is {arrays['obs'].ndim}-D; flattened episodes need an 'episode_starts' or 'ep_lens' array "
        "(or store obs as [episodes, steps, dim])."
    )


def _trajectory(obs: np.ndarray, acs: np.ndarray, rews: np.ndarray | None) -> Trajectory:
    if rews is None:
        return Trajectory(obs, acs[:-1], None, False)
    return TrajectoryWithRew(obs, acs[:-1], None, False, np.asarray(rews[:-1], dtype=np.float32))


def _same_length(file: pathlib.Path, *named: tuple[str, np.ndarray]) -> None:
    lengths = {name: len(array) for name, array in named}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise DemoError(f"{file}: arrays disagree on the number of rows/episodes: {described}.")


def _validate(file: pathlib.Path, trajectories: list[Trajectory], obs_dim: int, act_dim: int) -> None:
    if not trajectories or sum(len(t.acts) for t in trajectories) == 0:
        raise DemoError(f"{file}: no transitions (empty demonstrations).")
    for index, traj in enumerate(trajectories):
        for name, array, dim in (("obs", np.asarray(traj.obs), obs_dim), ("acs", np.asarray(traj.acts), act_dim)):
            width = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
            if width != dim:
                raise DemoError(
                    f"{file}: array {name} has {width} values per step (shape {array.shape} in episode {index}) "
                    f"but the env expects {dim}."
                )
            if not np.all(np.isfinite(array)):
                raise DemoError(f"{file}: array {name} contains NaN or inf (episode {index}).")
        rews = getattr(traj, "rews", None)
        if rews is not None and not np.all(np.isfinite(rews)):
            raise DemoError(f"{file}: array rews contains NaN or inf (episode {index}).")
