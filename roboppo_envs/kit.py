"""The sim-to-real kit's timing options, for any of roboppo's batched envs: action latency and observation history.

``gym.make_vec(id, num_envs=N, action_latency=2, history=3)`` builds the batch and wraps it:

- ``action_latency=k``: each copy draws a delay ``d`` in ``{0, ..., k}`` control steps at the start of
  each episode; the action applied at step ``t`` is the one the policy chose at ``t - d`` (zeros, the
  neutral command, before the first one arrives). The observations and rewards are the env's own.
- ``history=n``: each observation holds the last ``n`` frames, time-major (``[n, *shape]``, the oldest
  first, as EnvPool's ``frame_stack``); an episode starts with its first frame repeated.

A latency longer than the history kept is refused: a policy that cannot see as far back as its
actions take to arrive cannot tell what it already commanded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

KIT_KEYWORDS = ("action_latency", "history")


def checked_kit(name: str, action_latency: Any = 0, history: Any = 1) -> tuple[int, int]:
    """``(action_latency, history)`` as counts, or a ValueError naming the keyword and the fix."""
    for key, value, least in (("action_latency", action_latency, 0), ("history", history, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"{name}: {key} must be a whole number of control steps >= {least}, got {value!r}.")
    if action_latency > 0 and action_latency > history:
        raise ValueError(
            f"{name}: action_latency={action_latency} is longer than the history kept (history={history} frames); "
            f"keep history >= action_latency, e.g. history={action_latency}."
        )
    return int(action_latency), int(history)


def with_kit(env: VectorEnv, action_latency: int = 0, history: int = 1) -> VectorEnv:
    """``env`` with the kit's timing wrappers its options ask for (``env`` itself when none)."""
    latency, frames = checked_kit(getattr(env, "name", type(env).__name__), action_latency, history)
    if latency:
        env = ActionLatency(env, latency)
    if frames > 1:
        env = ObservationHistory(env, frames)
    return env


class _Forwarding(VectorWrapper):
    """A wrapper that passes what it does not change (``get_attr``, ``call``, ``set_command``, ...) to its env."""

    _ended: np.ndarray  # copies whose episode ended at the last step (NEXT_STEP resets them at the next)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The env's state and this wrapper's (to continue a run exactly)."""
        arrays, meta = self.env.get_state()  # type: ignore[attr-defined]
        mine, extra = self._own_state()
        return arrays | {f"{type(self).__name__}_{k}": v for k, v in mine.items()}, meta | {type(self).__name__: extra}

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        prefix = f"{type(self).__name__}_"
        self.env.set_state({k: v for k, v in arrays.items() if not k.startswith(prefix)}, meta)  # type: ignore[attr-defined]
        self._set_own_state(
            {k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)}, meta[type(self).__name__]
        )

    def _own_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        raise NotImplementedError

    def _set_own_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        raise NotImplementedError

    def _restarted(self, terminated: np.ndarray, truncated: np.ndarray) -> np.ndarray:
        """The copies whose new episode starts with this step's observation."""
        done = terminated | truncated
        if self.env.metadata.get("autoreset_mode") == AutoresetMode.SAME_STEP:
            return done
        started, self._ended = self._ended, done.copy()  # NEXT_STEP: the step after the end resets
        return started


class ActionLatency(_Forwarding):
    """Each copy's actions arrive ``d`` control steps late, ``d`` drawn per episode in ``{0, ..., max_delay}``."""

    def __init__(self, env: VectorEnv, max_delay: int) -> None:
        super().__init__(env)
        self.max_delay = max_delay
        action_shape: tuple[int, ...] = self.single_action_space.shape or ()
        shape = (self.num_envs, max_delay + 1, *action_shape)
        self._queue = np.zeros(shape, dtype=np.float64)  # [copy, age in steps, *action]
        self.delay = np.zeros(self.num_envs, dtype=np.int64)
        self._rng = np.random.default_rng()
        self._ended = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            entropy = [int(s) for s in np.atleast_1d(np.asarray(seed, dtype=object)) if s is not None]
            self._rng = np.random.default_rng(np.random.SeedSequence([*entropy, 0x4C41]))
        mask = (options or {}).get("reset_mask")
        self._start(np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask))
        self._ended[:] = False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, np.ndarray, np.ndarray, dict[str, Any]]:
        self._queue = np.roll(self._queue, 1, axis=1)
        self._queue[:, 0] = actions
        arrived = self._queue[np.arange(self.num_envs), self.delay]
        obs, reward, terminated, truncated, info = self.env.step(arrived.astype(np.asarray(actions).dtype))
        self._start(self._restarted(terminated, truncated))
        return obs, reward, terminated, truncated, info

    def _own_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays = {"queue": self._queue.copy(), "delay": self.delay.copy(), "ended": self._ended.copy()}
        return arrays, {"rng": self._rng.bit_generator.state}

    def _set_own_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        self._queue[...], self.delay[...], self._ended[...] = arrays["queue"], arrays["delay"], arrays["ended"]
        self._rng.bit_generator.state = meta["rng"]

    def _start(self, copies: np.ndarray) -> None:
        """New episodes for ``copies``: an empty queue and a new delay each."""
        self._queue[copies] = 0.0
        self.delay[copies] = self._rng.integers(0, self.max_delay + 1, size=int(np.sum(copies)))


class ObservationHistory(_Forwarding):
    """Observations of the last ``frames`` steps, ``[frames, *shape]`` per key, the oldest first."""

    def __init__(self, env: VectorEnv, frames: int) -> None:
        super().__init__(env)
        self.frames = frames
        self.single_observation_space = _stacked(env.single_observation_space, frames)
        self.observation_space = _stacked(env.observation_space, frames, batched=True)
        self._stack: Any = None
        self._ended = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        if self._stack is None or mask is None:
            self._stack = _map(obs, lambda x: np.repeat(x[:, None], self.frames, axis=1))
        else:
            self._fill(obs, np.asarray(mask))
        self._ended[:] = False
        return self._copy(), info

    def step(self, actions: Any) -> tuple[Any, Any, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if "final_obs" in info:  # SAME_STEP: the finished episode's last frame ends its own history
            final = _zip_map(self._stack, info["final_obs"], lambda old, x: np.concatenate([old[:, 1:], x[:, None]], 1))
            info = {**info, "final_obs": final}
        self._stack = _zip_map(self._stack, obs, lambda old, x: np.concatenate([old[:, 1:], x[:, None]], axis=1))
        self._fill(obs, self._restarted(terminated, truncated))
        return self._copy(), reward, terminated, truncated, info

    def _own_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        stack = self._stack if isinstance(self._stack, dict) else {"": self._stack}
        return {f"stack{key}": value.copy() for key, value in stack.items()} | {"ended": self._ended.copy()}, {}

    def _set_own_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        self._ended[...] = arrays.pop("ended")
        stack = {key.removeprefix("stack"): value.copy() for key, value in arrays.items()}
        self._stack = stack.get("", stack)

    def set_robot_state(self, qpos: Any, qvel: Any, copies: Any = None) -> Any:
        """The env's ``set_robot_state``; the copies' histories start again from the state's frame."""
        obs = self.env.set_robot_state(qpos, qvel, copies)  # type: ignore[attr-defined]
        mask = np.ones(self.num_envs, dtype=bool)
        if copies is not None:
            mask[:] = False
            mask[np.asarray(copies)] = True
        self._fill(obs, mask)
        return self._copy()

    def _fill(self, obs: Any, copies: np.ndarray) -> None:
        def fill(old: np.ndarray, x: np.ndarray) -> np.ndarray:
            old[copies] = x[copies][:, None]
            return old

        self._stack = _zip_map(self._stack, obs, fill)

    def _copy(self) -> Any:
        return _map(self._stack, np.copy)


def _map(obs: Any, function: Any) -> Any:
    return {key: function(value) for key, value in obs.items()} if isinstance(obs, dict) else function(obs)


def _zip_map(stack: Any, obs: Any, function: Any) -> Any:
    if isinstance(obs, dict):
        return {key: function(stack[key], value) for key, value in obs.items()}
    return function(stack, obs)


def _stacked(space: spaces.Space, frames: int, batched: bool = False) -> spaces.Space:
    """``space`` with a time axis of ``frames`` (after the batch axis of a batched space)."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({key: _stacked(sub, frames, batched) for key, sub in space.spaces.items()})
    assert isinstance(space, spaces.Box), f"observation history stacks Box spaces, got {space}"
    axis = 1 if batched else 0
    low, high = (np.repeat(np.expand_dims(bound, axis), frames, axis=axis) for bound in (space.low, space.high))
    return spaces.Box(low, high, dtype=space.dtype)  # type: ignore[arg-type]
