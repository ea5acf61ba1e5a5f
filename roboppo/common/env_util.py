"""Building vectorized environments from ids, and checking env output for NaN and inf."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import roboppo_envs
from roboppo.common.errors import NonFiniteEnvOutputError, UnknownEnvError
from roboppo.common.vec_env import GymnasiumVecEnv
from roboppo_envs.vector_api import nonfinite_rows


def check_env_id(env_id: str) -> None:
    """Raise :class:`UnknownEnvError` listing roboppo's ids when ``env_id`` is not registered."""
    if env_id in gym.registry:
        return
    known = ", ".join(roboppo_envs.registered_ids())
    raise UnknownEnvError(
        f"unknown environment id {env_id!r}. roboppo registers: {known}. "
        "Any other Gymnasium id works too once the package that registers it is imported."
    )


def make_env_from_id(
    env_id: str,
    n_envs: int = 1,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: type[DummyVecEnv] | None = None,
) -> VecEnv:
    """``n_envs`` copies of ``env_id`` as one SB3 ``VecEnv``.

    roboppo's ids have batched vector envs of their own (MuJoCo robots stepped by worker
    threads, Brax robots by JAX): they are built with ``gym.make_vec`` and adapted by
    :class:`GymnasiumVecEnv`. Other ids, or any id when ``vec_env_cls`` is given, are ``n_envs``
    ``Monitor``-wrapped copies in a ``DummyVecEnv`` (or ``vec_env_cls``).

    :param env_id: a registered Gymnasium id, e.g. ``"RoboHopper-v0"``.
    :param n_envs: number of parallel copies.
    :param seed: seed of the first copy; copy ``i`` gets ``seed + i``.
    :param env_kwargs: keyword arguments for ``gym.make`` / ``gym.make_vec`` (for the MuJoCo
        batches also ``num_threads``).
    :param vec_env_cls: SB3 vector env class for one env per copy (``DummyVecEnv``, ``SubprocVecEnv``).
    """
    check_env_id(env_id)
    if n_envs < 1:
        raise ValueError(f"n_envs must be at least 1, got {n_envs}.")
    if vec_env_cls is None and roboppo_envs.has_vector_env(env_id):
        kwargs = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP, **(env_kwargs or {})}
        venv: VecEnv = GymnasiumVecEnv(gym.make_vec(env_id, num_envs=n_envs, **kwargs))
        venv.seed(seed)
    else:
        venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, vec_env_cls=vec_env_cls)
    return venv


def env_name(venv: VecEnv) -> str:
    """The Gymnasium id of a vector env's first copy, or its class name when it has no spec."""
    try:
        spec = venv.get_attr("spec", indices=[0])[0]
    except (AttributeError, IndexError):
        spec = None
    return spec.id if spec is not None else type(venv.unwrapped).__name__


def check_finite(
    venv: VecEnv,
    step: int | None,
    obs: Any,
    rewards: np.ndarray | None = None,
    infos: list[dict[str, Any]] | tuple = (),
    actions: np.ndarray | None = None,
) -> None:
    """Raise :class:`NonFiniteEnvOutputError` if an observation, reward or terminal observation is NaN or inf.

    Unlike SB3's ``VecCheckNan`` the message names the environment id, the copy index and
    where it happened (vector step ``step``, or the reset when ``step`` is None), which is what
    one needs to reproduce the fault. roboppo's PPO calls it on every step of its rollouts.
    """
    bad = _first_bad_copy(obs, "observation")
    if bad is None and rewards is not None:
        bad = _first_bad_copy(rewards, "reward")
    if bad is None:
        bad = _first_bad_terminal_observation(infos)
    if bad is None:
        return
    index, what = bad
    where = "reset" if step is None else f"vector step {step}"
    action = "" if actions is None else f" after action {actions[index]!r}"
    raise NonFiniteEnvOutputError(
        f"environment {env_name(venv)} (copy {index}) returned a non-finite {what} at {where}{action}. "
        "Training stopped before the bad value reached the networks; check the env's physics or reward."
    )


def _first_bad_terminal_observation(infos: list[dict[str, Any]] | tuple) -> tuple[int, str] | None:
    """The first copy whose ``info["terminal_observation"]`` holds NaN or inf, and what it is."""
    for index, info in enumerate(infos):
        if "terminal_observation" in info:
            found = _first_bad_copy(_as_batch(info["terminal_observation"]), "terminal observation")
            if found is not None:
                return index, found[1]
    return None


def _first_bad_copy(values: Any, what: str) -> tuple[int, str] | None:
    """The first copy whose ``values`` row holds NaN or inf, and what it is (a dict's key named); None when finite."""
    if isinstance(values, dict):
        for key, value in values.items():
            found = _first_bad_copy(value, f"{what} ({key!r})")
            if found is not None:
                return found
        return None
    rows = nonfinite_rows(values)
    return (int(rows[0]), what) if rows.size else None


def _as_batch(obs: Any) -> Any:
    """One observation (an array or a dict of arrays) as a batch of one."""
    if isinstance(obs, dict):
        return {key: np.asarray(value)[None] for key, value in obs.items()}
    return np.asarray(obs)[None]
