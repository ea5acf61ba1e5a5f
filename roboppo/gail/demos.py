"""Expert demonstrations: one loader for the formats robotics users have, and roboppo's own writer.

Accepted by :func:`load_demonstrations` (the format is recognised from the file):

- **OpenAI-baselines expert ``.npz``** (``deterministic.trpo.Hopper.0.00.npz``): keys ``obs``,
  ``acs``, ``rews``, ``ep_rets``; episodes as 3-D arrays ``[episodes, steps, dim]``, or flattened
  ``[steps, dim]`` with episode boundaries in ``episode_starts`` ``[steps]`` or ``ep_lens`` ``[episodes]``.
- **imitation's saved trajectories**: imitation's legacy ``.npz`` (``obs``, ``acts``, ``indices``, ...;
  its ``infos`` object array is left out), a HuggingFace dataset folder (needs ``datasets``), or a
  pickled list of ``Trajectory`` (only with ``allow_pickle=True``: reading a pickle can run code).
- **roboppo's format**, written by :func:`save_demonstrations` (``roboppo-zoo collect-demos``):
  an ``.npz`` with ``format = "roboppo-demos-v1"``, flattened ``obs``/``acs``/``rews``,
  ``episode_lengths``, ``final_obs`` and ``terminated`` per episode.

No file is read with pickle unless ``allow_pickle=True``: a pickle, or an ``.npz`` object array
other than imitation's ``infos``, is refused with an error naming the safe formats.

Every array is checked against the env before any training: missing keys, ``obs``/``acs`` length
mismatches, dimensions that do not fit the env, NaN values, actions outside the env's action
bounds, episodes without a transition and zero padding that the file's ``ep_lens``/``ep_rets``
contradict raise :class:`DemoError` naming the file, the array, the episode and the problem.

``[episodes, steps, dim]`` arrays pad episodes that end early; each episode is cut to its
``ep_lens`` entry, or without ``ep_lens`` before its trailing all-zero rows. Whether an episode
*terminated* (fell) or was cut by the time limit decides whether GAIL gives it an absorbing state:
roboppo's format records it; for the other formats an episode terminated when it is shorter than
the env's time limit.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import pickle
import zipfile
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from imitation.data.types import Trajectory, TrajectoryWithRew

from roboppo.common.errors import UserInputError
from roboppo.common.files import atomic_target
from roboppo.gail.compat import PickleRefusedError, load_imitation_trajectories, read_npz_arrays

ROBOPPO_FORMAT = "roboppo-demos-v1"


class DemoError(UserInputError, ValueError):
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
    path: str | os.PathLike[str],
    env: gym.Env | str,
    allow_env_mismatch: bool = False,
    n_demos: int | None = None,
    clip_actions: bool = False,
    allow_pickle: bool = False,
) -> Demonstrations:
    """Read, recognise and validate a demonstration file against ``env`` (an env or an env id).

    :param allow_env_mismatch: accept a roboppo file recorded on another env id whose dimensions fit
        (refused by default: same-sized envs such as two pendulums would train on the wrong expert).
    :param n_demos: keep only the first ``n_demos`` episodes (OpenAI baselines' ``traj_limitation``).
    :param clip_actions: clip actions outside the env's action bounds into them (what the physics
        did with them when they were recorded) instead of refusing the file.
    :param allow_pickle: read pickles (imitation's ``.pkl`` lists, ``.npz`` object arrays). Reading a
        pickle can run code from the file: only for files you trust (NumPy's ``allow_pickle``).
    """
    file = pathlib.Path(path)
    if not file.exists():
        raise DemoError(f"{file}: demonstration file not found.")
    spaces = EnvSpaces.of(env)
    recorded = None
    if file.is_dir() or file.suffix in {".pkl", ".pickle"}:
        trajectories, source = _from_imitation(file, spaces, allow_pickle), "imitation"
    else:
        arrays = _read_npz(file, allow_pickle)
        if arrays.get("format") == ROBOPPO_FORMAT:
            trajectories, source = _from_roboppo(file, arrays), "roboppo"
            recorded = str(arrays["env_id"]) if "env_id" in arrays else None
            _check_env_id(file, recorded, env, allow_env_mismatch)
        elif "indices" in arrays and "acts" in arrays:
            trajectories, source = _from_imitation(file, spaces, allow_pickle), "imitation"
        else:
            trajectories, source = _from_baselines(file, arrays, spaces, n_demos), "openai-baselines"
    trajectories = _first(file, trajectories, n_demos)
    _validate(file, trajectories, spaces)
    if clip_actions:
        trajectories = [_clipped(t, spaces.action_space) for t in trajectories]
    else:
        _check_action_bounds(file, trajectories, spaces.action_space)
    return Demonstrations(trajectories, source, recorded)


@dataclasses.dataclass(frozen=True)
class EnvSpaces:
    """What a demonstration file is checked against: the env's spaces and its time limit."""

    obs_dim: int
    act_dim: int
    action_space: gym.Space
    max_episode_steps: int | None

    @classmethod
    def of(cls, env: gym.Env | str) -> EnvSpaces:
        made = gym.make(env) if isinstance(env, str) else env
        obs_space, act_space, spec = made.observation_space, made.action_space, made.spec
        if isinstance(env, str):
            made.close()
        assert obs_space.shape is not None and act_space.shape is not None
        limit = spec.max_episode_steps if spec is not None else None
        return cls(int(np.prod(obs_space.shape)), int(np.prod(act_space.shape)), act_space, limit)

    def ended_early(self, steps: int) -> bool:
        """Whether an episode of ``steps`` actions ended before the time limit (so it terminated)."""
        return self.max_episode_steps is not None and steps < self.max_episode_steps


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


def _read_npz(file: pathlib.Path, allow_pickle: bool) -> dict[str, Any]:
    try:
        arrays = read_npz_arrays(file, allow_pickle, optional_objects={"infos"})
    except PickleRefusedError as error:
        raise DemoError(str(error)) from error
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
    _check_lengths(file, "episode_lengths", lengths, minimum=1)
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


def _from_imitation(file: pathlib.Path, spaces: EnvSpaces, allow_pickle: bool) -> list[Trajectory]:
    """imitation's files; its ``terminal`` is also set for time-limit ends, so those count as truncated."""
    try:
        loaded = list(load_imitation_trajectories(file, allow_pickle))
    except PickleRefusedError as error:
        raise DemoError(str(error)) from error
    except (ValueError, TypeError, KeyError, pickle.UnpicklingError, EOFError) as error:
        raise DemoError(f"{file}: not readable as imitation trajectories ({error}).") from error
    return [dataclasses.replace(t, terminal=bool(t.terminal) and spaces.ended_early(len(t.acts))) for t in loaded]


def _from_baselines(
    file: pathlib.Path, arrays: dict[str, Any], spaces: EnvSpaces, n_demos: int | None
) -> list[Trajectory]:
    _require(file, arrays, "obs", "acs")
    obs, acs, rews = arrays["obs"], arrays["acs"], arrays.get("rews")
    step_axes = 2 if obs.ndim == 3 else 1
    _check_width(file, "obs", obs, spaces.obs_dim, "in the file", step_axes)
    _check_width(file, "acs", acs, spaces.act_dim, "in the file", step_axes)
    if obs.ndim == 3:  # [episodes, steps, dim], padded after an early end
        _same_length(file, ("obs", obs), ("acs", acs), *([] if rews is None else [("rews", rews)]))
        if obs.shape[1] != acs.shape[1]:
            raise DemoError(f"{file}: obs has {obs.shape[1]} steps per episode but acs has {acs.shape[1]}.")
        count = len(obs) if n_demos is None else min(n_demos, len(obs))
        lengths = _padded_lengths(file, arrays, count)
        episodes = [(obs[i, :n], acs[i, :n], None if rews is None else rews[i, :n]) for i, n in enumerate(lengths)]
    else:
        _same_length(file, ("obs", obs), ("acs", acs), *([] if rews is None else [("rews", rews)]))
        bounds = _episode_bounds(file, arrays, len(obs))
        episodes = list(
            zip(np.split(obs, bounds), np.split(acs, bounds), [None] * (len(bounds) + 1) if rews is None
                else np.split(rews, bounds), strict=True)
        )  # fmt: skip
    _check_lengths(file, "episode", np.array([len(o) for o, _, _ in episodes]), minimum=2)
    _check_returns(file, arrays, [r for _, _, r in episodes])
    # Without the observation after each episode's last action, that last transition is dropped.
    return [_trajectory(o, a, r, spaces.ended_early(len(o))) for o, a, r in episodes]


def _padded_lengths(file: pathlib.Path, arrays: dict[str, Any], count: int) -> np.ndarray:
    """Each padded episode's length: ``ep_lens``, or the rows before its trailing all-zero ones."""
    steps = arrays["obs"].shape[1]
    if "ep_lens" in arrays:
        lengths = np.asarray(arrays["ep_lens"]).astype(int).reshape(-1)
        if len(lengths) != len(arrays["obs"]):
            raise DemoError(f"{file}: ep_lens has {len(lengths)} entries but obs has {len(arrays['obs'])} episodes.")
        if lengths.max(initial=0) > steps:
            raise DemoError(f"{file}: ep_lens says {lengths.max()} steps but obs holds {steps} per episode.")
        for i, n in enumerate(lengths[:count]):
            if n > 0 and not (np.any(arrays["obs"][i, n - 1]) or np.any(arrays["acs"][i, n - 1])):
                raise DemoError(
                    f"{file}: episode {i} ends with all-zero obs and acs at step {n - 1} of the {n} that ep_lens "
                    "gives it: zero padding would be kept as expert data. Fix ep_lens."
                )
        return lengths[:count]
    lengths = np.empty(count, int)
    for i in range(count):  # one episode at a time: no copy of the whole array
        used = np.flatnonzero(np.any(arrays["obs"][i] != 0, axis=-1) | np.any(arrays["acs"][i] != 0, axis=-1))
        lengths[i] = used[-1] + 1 if len(used) else 0
    return lengths


def _check_lengths(file: pathlib.Path, name: str, lengths: np.ndarray, minimum: int) -> None:
    short = np.flatnonzero(lengths < minimum)
    if len(short):
        i = int(short[0])
        raise DemoError(
            f"{file}: {name} {i} has {int(lengths[i])} step(s); every episode needs at least {minimum} "
            f"({len(short)} episode(s) too short). Remove them from the file."
        )


def _check_returns(file: pathlib.Path, arrays: dict[str, Any], rewards: list[np.ndarray | None]) -> None:
    """The kept rewards must add up to ``ep_rets``: otherwise padding or a wrong length is being kept."""
    present = [r for r in rewards if r is not None]
    if "ep_rets" not in arrays or len(present) != len(rewards):
        return
    recorded = np.asarray(arrays["ep_rets"], dtype=np.float64).reshape(-1)
    if len(recorded) < len(present):
        raise DemoError(f"{file}: ep_rets has {len(recorded)} entries for {len(present)} episodes.")
    recorded = recorded[: len(present)]
    kept = np.array([float(np.sum(r)) for r in present])
    wrong = np.flatnonzero(~np.isclose(kept, recorded, rtol=1e-3, atol=1e-3))
    if len(wrong):
        i = int(wrong[0])
        raise DemoError(
            f"{file}: episode {i}'s rews sum to {kept[i]:.3f} over its {len(present[i])} kept steps, but ep_rets "
            f"says {recorded[i]:.3f}; the episode lengths are wrong (add or fix ep_lens)."
        )


def _first(file: pathlib.Path, trajectories: list[Trajectory], n_demos: int | None) -> list[Trajectory]:
    if n_demos is None:
        return trajectories
    if n_demos < 1 or n_demos > len(trajectories):
        raise DemoError(f"{file}: n_demos={n_demos}, but the file holds {len(trajectories)} episodes.")
    return trajectories[:n_demos]


def _episode_bounds(file: pathlib.Path, arrays: dict[str, Any], steps: int) -> np.ndarray:
    if "episode_starts" in arrays:
        starts = np.flatnonzero(np.asarray(arrays["episode_starts"]).astype(bool))
        return starts[starts > 0]  # the first row starts an episode whether it is marked or not
    if "ep_lens" in arrays:
        lengths = arrays["ep_lens"].astype(int)
        if int(lengths.sum()) != steps:
            raise DemoError(f"{file}: ep_lens sum to {int(lengths.sum())} but obs has {steps} rows.")
        _check_lengths(file, "episode", lengths, minimum=2)
        return np.cumsum(lengths)[:-1]
    raise DemoError(
        f"{file}: obs is {arrays['obs'].ndim}-D; flattened episodes need an 'episode_starts' or 'ep_lens' array "
        "(or store obs as [episodes, steps, dim])."
    )


def _trajectory(obs: np.ndarray, acs: np.ndarray, rews: np.ndarray | None, terminal: bool) -> Trajectory:
    if rews is None:
        return Trajectory(obs, acs[:-1], None, terminal)
    return TrajectoryWithRew(obs, acs[:-1], None, terminal, np.asarray(rews[:-1], dtype=np.float32))


def _same_length(file: pathlib.Path, *named: tuple[str, np.ndarray]) -> None:
    lengths = {name: len(array) for name, array in named}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise DemoError(f"{file}: arrays disagree on the number of rows/episodes: {described}.")


def _validate(file: pathlib.Path, trajectories: list[Trajectory], spaces: EnvSpaces) -> None:
    if not trajectories or sum(len(t.acts) for t in trajectories) == 0:
        raise DemoError(f"{file}: no transitions (empty demonstrations).")
    for index, traj in enumerate(trajectories):
        for name, array, dim in (
            ("obs", np.asarray(traj.obs), spaces.obs_dim),
            ("acs", np.asarray(traj.acts), spaces.act_dim),
        ):
            _check_width(file, name, array, dim, f"in episode {index}")
            if not np.all(np.isfinite(array)):
                raise DemoError(f"{file}: array {name} contains NaN or inf (episode {index}).")
        rews = getattr(traj, "rews", None)
        if rews is not None and not np.all(np.isfinite(rews)):
            raise DemoError(f"{file}: array rews contains NaN or inf (episode {index}).")


def _check_width(file: pathlib.Path, name: str, array: np.ndarray, dim: int, where: str, step_axes: int = 1) -> None:
    width = int(np.prod(array.shape[step_axes:])) if array.ndim > step_axes else 1
    if width != dim:
        raise DemoError(
            f"{file}: array {name} has {width} values per step (shape {array.shape} {where}) but the env expects {dim}."
        )


def _bounds(space: gym.Space) -> tuple[np.ndarray, np.ndarray] | None:
    if not isinstance(space, gym.spaces.Box) or not (space.is_bounded("below") or space.is_bounded("above")):
        return None
    return space.low.reshape(-1), space.high.reshape(-1)


def _check_action_bounds(file: pathlib.Path, trajectories: list[Trajectory], space: gym.Space) -> None:
    """Refuse actions outside the Box: a tanh policy cannot produce them, so they separate trivially."""
    bounds = _bounds(space)
    if bounds is None:
        return
    low, high = bounds
    slack = 1e-5 * np.maximum(high - low, 1.0)
    for episode, traj in enumerate(trajectories):
        acts = np.asarray(traj.acts).reshape(len(traj.acts), -1)
        outside = (acts < low - slack) | (acts > high + slack)
        if outside.any():
            step, dim = (int(v) for v in np.argwhere(outside)[0])
            raise DemoError(
                f"{file}: acs in episode {episode}, step {step}, dimension {dim} is {acts[step, dim]:.4g}, outside the "
                f"env's action bounds [{low[dim]:.4g}, {high[dim]:.4g}]. Clip them (clip_actions=True, "
                "--clip-demo-actions: what the physics did with them) or record the expert in this env."
            )


def _clipped(traj: Trajectory, space: gym.Space) -> Trajectory:
    bounds = _bounds(space)
    if bounds is None:
        return traj
    shape = np.asarray(traj.acts).shape
    acts = (
        np.clip(np.asarray(traj.acts).reshape(shape[0], -1), *bounds).reshape(shape).astype(np.asarray(traj.acts).dtype)
    )
    return dataclasses.replace(traj, acts=acts)
