"""Gymnasium vector envs behind Stable-Baselines3's ``VecEnv`` interface."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn


class GymnasiumVecEnv(VecEnv):
    """Adapt a ``SAME_STEP``-autoreset Gymnasium ``VectorEnv`` to SB3's ``VecEnv``.

    SB3 expects what its ``DummyVecEnv`` + ``Monitor`` provide: ``dones = terminated | truncated``,
    one info dict per copy with ``terminal_observation`` and ``TimeLimit.truncated`` for finished
    episodes, and ``info["episode"] = {"r", "l", "t"}`` episode statistics. This adapter
    computes them from the vector env's batched output.

    :param vector_env: a Gymnasium vector env whose ``metadata["autoreset_mode"]`` is ``SAME_STEP``.
    """

    def __init__(self, vector_env: VectorEnv) -> None:
        mode = vector_env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"GymnasiumVecEnv needs a SAME_STEP autoreset vector env, got autoreset mode {mode}.")
        self.vector_env: Any = vector_env  # roboppo's batches, or any VectorEnv with call/get_attr/set_attr
        self.render_mode = getattr(vector_env, "render_mode", None)
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(self.num_envs)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._start = time.time()

    def reset(self) -> VecEnvObs:
        seed = self._seeds[0] if self._seeds else None
        obs, _ = self.vector_env.reset(seed=seed)
        self._reset_seeds()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        self._returns += rewards
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        final = info.get("final_obs")
        for index in np.flatnonzero(dones):
            infos[index] = {
                # a Dict space's final observations are a dict of batched arrays
                "terminal_observation": (
                    {key: value[index] for key, value in final.items()} if isinstance(final, dict) else final[index]
                ),
                "TimeLimit.truncated": bool(truncated[index] and not terminated[index]),
                "episode": {
                    "r": float(self._returns[index]),
                    "l": int(self._lengths[index]),
                    "t": round(time.time() - self._start, 6),
                },
            }
        self._returns[dones] = 0.0
        self._lengths[dones] = 0
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.vector_env.close()

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The vector env's state (:meth:`~roboppo_envs.mujoco.MujocoVectorEnv.get_state`) and the episode counters.

        :raises NotImplementedError: the vector env cannot save its state (Brax batches)."""
        if not hasattr(self.vector_env, "get_state"):
            raise NotImplementedError(f"{type(self.vector_env).__name__} does not save its state.")
        arrays, meta = self.vector_env.get_state()
        meta = meta | {"pending_seeds": list(self._seeds)}  # seeds SB3's seed() set for the next reset, if any
        return arrays | {"episode_returns": self._returns.copy(), "episode_lengths": self._lengths.copy()}, meta

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        self.vector_env.set_state(arrays, meta)  # type: ignore[attr-defined]
        self._returns[:], self._lengths[:] = arrays["episode_returns"], arrays["episode_lengths"]
        self._seeds = list(meta["pending_seeds"])

    def get_images(self) -> Sequence[np.ndarray | None]:
        frames = self.vector_env.render()
        return [None] * self.num_envs if frames is None else list(frames)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The copies' ``attr_name`` (the vector env's ``get_attr``), as ``DummyVecEnv`` gives its envs'."""
        values = self.vector_env.get_attr(attr_name)
        return [values[i] for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        values = list(self.vector_env.get_attr(attr_name))
        for i in self._get_indices(indices):
            values[i] = value
        self.vector_env.set_attr(attr_name, values)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any) -> list:
        """``method_name`` of each copy (the vector env's ``call``; it runs on every copy)."""
        results = self.vector_env.call(method_name, *method_args, **kwargs)
        return [results[i] for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        # The adapter writes Monitor's episode statistics itself, so code that asks for a
        # Monitor (evaluate_policy) can rely on info["episode"].
        return [wrapper_class is Monitor for _ in self._get_indices(indices)]


def flattenable(space: object) -> bool:
    """A ``Dict`` of vector ``Box`` spaces (no images, nothing nested): what :class:`FlattenDictVecEnv` flattens."""
    from stable_baselines3.common.preprocessing import is_image_space

    return isinstance(space, gym.spaces.Dict) and all(
        isinstance(sub, gym.spaces.Box) and not is_image_space(sub) for sub in space.spaces.values()
    )


def flatten_dict_obs(space: gym.spaces.Dict, obs: dict[str, Any]) -> np.ndarray:
    """``obs`` (one observation or a batch) as ``gymnasium.spaces.flatten`` lays it out: the keys in the
    space's order, each flattened; ``[dim]`` for one observation, ``[batch, dim]`` for a batch."""
    flat_space = gym.spaces.flatten_space(space)
    first_key = next(iter(space.spaces))
    single = np.shape(obs[first_key]) == space.spaces[first_key].shape
    if single:
        return np.asarray(gym.spaces.flatten(space, obs), dtype=flat_space.dtype)
    parts = [np.asarray(obs[key]).reshape(len(obs[key]), -1) for key in space.spaces]
    return np.concatenate(parts, axis=1).astype(flat_space.dtype)


class FlattenDictVecEnv(VecEnvWrapper):
    """A ``VecEnv`` of ``Dict`` observations (vectors only) seen as one flat ``Box``, as Gymnasium's
    ``FlattenObservation`` lays them out; terminal observations in ``infos`` are flattened alike.

    roboppo.PPO puts it around such envs, so that a Dict env and its flattened twin train through the
    same computation (the NumPy sampler and the compiled update take flat observations).
    """

    def __init__(self, venv: VecEnv) -> None:
        assert isinstance(venv.observation_space, gym.spaces.Dict)
        self.dict_space: gym.spaces.Dict = venv.observation_space
        super().__init__(venv, observation_space=gym.spaces.flatten_space(self.dict_space))

    def reset(self) -> VecEnvObs:
        return flatten_dict_obs(self.dict_space, self.venv.reset())  # type: ignore[arg-type]

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if isinstance(info.get("terminal_observation"), dict):
                info["terminal_observation"] = flatten_dict_obs(self.dict_space, info["terminal_observation"])
        return flatten_dict_obs(self.dict_space, obs), rewards, dones, infos  # type: ignore[arg-type]


#: whether roboppo's PPO wraps a Dict of vectors in :class:`FlattenDictVecEnv`: for its own policy, not for SB3's
FLATTEN_DICTS: contextvars.ContextVar[bool] = contextvars.ContextVar("roboppo_flatten_dicts", default=True)


@contextlib.contextmanager
def flattening_dicts(flatten: bool) -> Iterator[None]:
    """Within it, :data:`FLATTEN_DICTS` is ``flatten``."""
    token = FLATTEN_DICTS.set(flatten)
    try:
        yield
    finally:
        FLATTEN_DICTS.reset(token)
