"""Brax environments as Gymnasium vector environments.

Brax ships wrappers only for the legacy ``gym`` API: a 4-tuple ``step``, truncation hidden
in ``info['truncation']`` and an auto-reset that drops the terminal observation. This
adapter is a ``gymnasium.vector.VectorEnv`` instead:

- reset and step are one jit-compiled function each over the whole batch (``jax.vmap``);
- ``terminated`` (the robot fell) and ``truncated`` (``max_episode_steps`` reached) are kept apart;
- autoreset as Gymnasium's vector envs (``autoreset_mode``): ``NEXT_STEP`` by default (a finished
  copy returns its last observation, and resets in the next ``step``, whose action it ignores);
  ``SAME_STEP`` (what roboppo's trainers ask for: the copy resets inside the same ``step``, the
  finished episode's last observation and terms in ``info["final_obs"]`` and ``info["final_info"]``);
  or ``DISABLED`` (finished copies wait for ``reset(options={"reset_mask": ...})``);
- step infos carry the Brax env's per-term metrics (``reward_forward``, ``x_velocity``, ...) with
  their ``_``-masks, as ``SyncVectorEnv`` lays out its copies' infos;
- resets draw fresh random initial states from the env's key, so two envs seeded alike
  produce identical trajectories, and a reset without a seed continues the carried key;
- ``step`` returns writable NumPy arrays (one copy of a few kB per step; from a GPU, the
  one host transfer per step).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs.jax_cache import enable_compilation_cache
from roboppo_envs.vector_api import NonFiniteEnvOutputError, expand, reset_mask, scattered, time_limit, with_masks

# MuJoCo's MJX prints "Failed to import warp: ..." and "Failed to import mujoco_warp: ..." when
# Brax imports it without NVIDIA Warp, which only its GPU pipeline uses: those two lines are dropped.
_QUIET = ("Failed to import warp:", "Failed to import mujoco_warp:")

try:
    import jax
    import jax.numpy as jnp

    with contextlib.redirect_stdout(io.StringIO()) as _printed:
        from brax import envs as brax_envs
    sys.stdout.writelines(line for line in _printed.getvalue().splitlines(True) if not line.startswith(_QUIET))
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "Brax environments need JAX and Brax: pip install 'roboppo[brax]' (bash scripts/setup.sh installs them)."
    ) from error


BACKENDS = ("spring", "positional", "generalized", "mjx")


enable_compilation_cache(jax)


#: a Brax batch's NaN or inf: the one :class:`~roboppo_envs.vector_api.NonFiniteEnvOutputError`
BraxNonFiniteError = NonFiniteEnvOutputError


#: the autoreset modes, in the order the compiled step reads them
AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)


class _Outputs(NamedTuple):
    obs: jax.Array  # what step returns: a restarted copy's first observation
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array  # the stepped observation, before any restart
    metrics: dict[str, jax.Array]  # per-term values; a restarted copy's are its reset's
    final_metrics: dict[str, jax.Array]


class _Carry(NamedTuple):
    state: Any  # batched brax State
    steps: jax.Array  # [num_envs] int32, steps taken in the current episode
    key: jax.Array
    vector_steps: jax.Array  # scalar int32, steps taken by the whole batch
    first_bad_step: jax.Array  # scalar int32, -1 until a non-finite value appears
    finished: jax.Array  # [num_envs] bool, episodes that ended at the last step (NEXT_STEP, DISABLED)


def make_brax_env(env_name: str, backend: str, **kwargs: Any) -> Any:
    """``brax.envs.get_environment`` with errors that list the valid names and backends."""
    if env_name not in brax_envs._envs:
        raise ValueError(f"unknown Brax environment {env_name!r}; valid names: {', '.join(sorted(brax_envs._envs))}.")
    if backend not in BACKENDS:
        raise ValueError(f"unknown Brax backend {backend!r}; valid backends: {', '.join(BACKENDS)}.")
    return brax_envs.get_environment(env_name, backend=backend, **kwargs)


class BraxVectorEnv(VectorEnv):
    """``num_envs`` copies of a Brax environment stepped together by JAX.

    :param env_name: Brax registry name (``"ant"``, ``"halfcheetah"``, ``"humanoid"``, ...).
    :param num_envs: batch size.
    :param backend: physics pipeline: ``spring`` (fastest, the Brax notebook's), ``positional``,
        ``generalized`` or ``mjx``.
    :param max_episode_steps: steps after which an episode is truncated: None for the registered 1,000, -1
        for none, as ``gym.make`` reads it.
    :param render_mode: ``"rgb_array"``: ``render()`` returns one frame per copy (MuJoCo's renderer).
    :param autoreset_mode: how finished copies reset, as Gymnasium's ``SyncVectorEnv`` (default
        ``NEXT_STEP``; ``SAME_STEP`` for roboppo's trainers; ``DISABLED``).
    :param env_id: the Gymnasium id, used in error messages.
    :param kwargs: keyword arguments of the Brax env class (reward weights, ...).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        backend: str = "spring",
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        env_id: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: Brax batches render 'rgb_array' frames, one per copy.")
        self.brax_env = make_brax_env(env_name, backend, **kwargs)
        self.name = env_id or f"brax:{env_name}"
        self.num_envs = num_envs
        self.max_episode_steps = time_limit(max_episode_steps, 1000, self.name)
        self.render_mode = render_mode
        action_size, obs_size = self.brax_env.action_size, self.brax_env.observation_size
        self.action_size = action_size
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (action_size,), np.float32)
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.device = jax.devices()[0]
        self._reset_fn = jax.jit(self._reset_batch)
        self._step_fn = jax.jit(self._step_batch)
        no_limit = jnp.iinfo(jnp.int32).max if self.max_episode_steps is None else self.max_episode_steps
        self._limit, self._mode = jnp.int32(no_limit), jnp.int32(AUTORESET_MODES.index(self.autoreset_mode))
        self._carry: _Carry | None = None

    # -- pure functions, jit-compiled once ------------------------------------------------------

    def _reset_batch(self, key: jax.Array) -> _Carry:
        key, reset_key = jax.random.split(key)
        state = jax.vmap(self.brax_env.reset)(jax.random.split(reset_key, self.num_envs))
        zeros = jnp.zeros(self.num_envs, jnp.int32)
        return _Carry(state, zeros, key, jnp.int32(0), jnp.int32(-1), jnp.zeros(self.num_envs, bool))

    def _step_batch(
        self, carry: _Carry, action: jax.Array, limit: jax.Array, mode: jax.Array
    ) -> tuple[_Carry, _Outputs]:
        """One step of every copy. ``limit`` (the time limit) and ``mode`` (the autoreset mode's index in
        :data:`AUTORESET_MODES`) are traced, so envs that differ only in them share one compiled program."""
        stepped = jax.vmap(self.brax_env.step)(carry.state, action)
        steps = carry.steps + 1
        terminated = stepped.done > 0
        truncated = (steps >= limit) & ~terminated
        next_step, same_step = (
            mode == AUTORESET_MODES.index(AutoresetMode.NEXT_STEP),
            mode == AUTORESET_MODES.index(AutoresetMode.SAME_STEP),
        )
        # NEXT_STEP: the copies that finished at the last step only reset here (their action is unused)
        idle = carry.finished & next_step
        terminated, truncated = terminated & ~idle, truncated & ~idle
        reward = jnp.where(idle, 0.0, stepped.reward)
        done = terminated | truncated
        restart = jnp.where(same_step, idle | done, idle)
        key, reset_key = jax.random.split(carry.key)
        fresh = jax.lax.cond(
            restart.any(),
            lambda k: jax.vmap(self.brax_env.reset)(jax.random.split(k, self.num_envs)),
            lambda k: stepped,
            reset_key,
        )
        state = jax.tree_util.tree_map(lambda new, old: _where_rows(restart, new, old), fresh, stepped)
        finite = (
            jnp.isfinite(_where_rows(idle, jnp.zeros_like(stepped.obs), stepped.obs)).all() & jnp.isfinite(reward).all()
        )
        vector_steps = carry.vector_steps + 1
        first_bad = jnp.where((carry.first_bad_step < 0) & ~finite, vector_steps, carry.first_bad_step)
        finished = done & ~same_step
        new_carry = _Carry(state, jnp.where(restart, 0, steps), key, vector_steps, first_bad, finished)
        return new_carry, _Outputs(
            state.obs, reward, terminated, truncated, stepped.obs, state.metrics, stepped.metrics
        )

    # -- Gymnasium VectorEnv API ----------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Reset every copy; ``seed`` makes the following trajectories reproducible.

        As in Gymnasium, a reset without a seed continues the random stream of the last one (the
        carried key), so every reset after a seeded one is reproducible; only the first reset of
        an env that was never seeded draws from OS entropy.
        """
        if seed is not None:
            key = jax.random.PRNGKey(seed)
        elif self._carry is not None:
            key = self._carry.key
        else:
            key = jax.random.PRNGKey(int(np.random.SeedSequence().generate_state(1)[0] >> 1))
        fresh = self._reset_fn(key)
        mask = reset_mask(options, self.num_envs, self.name, self._carry is None)
        if mask is not None:  # only the masked copies restart; the others keep their episodes
            fresh = self._masked(fresh, mask)
        self._carry = fresh
        metrics = _host(fresh.state.metrics)
        if mask is None:
            return np.array(self._carry.state.obs), with_masks(metrics, self.num_envs)
        copies = np.flatnonzero(mask)  # the reset copies' terms alone, the others masked out
        info = scattered({key: value[copies] for key, value in metrics.items()}, copies, self.num_envs)
        return np.array(self._carry.state.obs), info

    def _masked(self, fresh: _Carry, mask: np.ndarray) -> _Carry:
        """``fresh`` for the copies in ``mask``, the current carry for the others (``SyncVectorEnv``'s reset_mask)."""
        assert self._carry is not None
        rows = jnp.asarray(mask)
        state = jax.tree_util.tree_map(lambda new, old: _where_rows(rows, new, old), fresh.state, self._carry.state)
        steps = jnp.where(rows, 0, self._carry.steps)
        finished = self._carry.finished & ~rows
        return fresh._replace(state=state, steps=steps, vector_steps=self._carry.vector_steps,
                              first_bad_step=self._carry.first_bad_step, finished=finished)  # fmt: skip

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every copy with actions ``[num_envs, action_dim]`` in ``[-1, 1]``; finished copies reset as
        ``autoreset_mode`` says, and ``info`` is laid out as ``SyncVectorEnv`` lays out its copies' infos."""
        jax_actions = jnp.asarray(self._checked_actions(actions))
        out = _Outputs(*jax.device_get(tuple(self._advance(jax_actions))))  # one transfer from the device
        self._raise_if_nonfinite()
        obs, terminated, truncated = np.array(out.obs), np.array(out.terminated), np.array(out.truncated)
        done = terminated | truncated
        info: dict[str, Any] = with_masks(_host(out.metrics), self.num_envs)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            final = {key: np.where(expand(done, value), value, 0) for key, value in _host(out.final_metrics).items()}
            info |= {"final_obs": np.array(out.final_obs), "_final_obs": done,
                     "final_info": with_masks(final, done), "_final_info": done}  # fmt: skip
        return obs, np.asarray(out.reward, np.float64), terminated, truncated, info

    def render(self) -> tuple[np.ndarray, ...] | None:  # type: ignore[override]
        """One RGB frame ``[240, 320, 3]`` per copy (``render_mode="rgb_array"``), as ``SyncVectorEnv``."""
        if self.render_mode != "rgb_array" or self._carry is None:
            return None
        from brax.io import image

        states = self._carry.state.pipeline_state
        rows = [jax.tree_util.tree_map(functools.partial(_row, index=i), states) for i in range(self.num_envs)]
        return tuple(np.asarray(image.render_array(self.brax_env.sys, row, 240, 320)) for row in rows)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of the Brax env the copies share, once per copy (called where it is a method)."""
        value = getattr(self.brax_env, name)
        return tuple(value(*args, **kwargs) if callable(value) else value for _ in range(self.num_envs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """``name`` of the Brax env, once per copy."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on the shared Brax env (one value for all copies); the step is compiled again."""
        values = list(values) if isinstance(values, list | tuple) else [values] * self.num_envs
        if len(values) != self.num_envs or any(v is not values[0] for v in values):
            raise ValueError(f"{self.name}: the copies share one Brax env; set_attr({name!r}) takes one value.")
        setattr(self.brax_env, name, values[0])
        self._reset_fn, self._step_fn = jax.jit(self._reset_batch), jax.jit(self._step_batch)

    # -- helpers --------------------------------------------------------------------------------

    def _advance(self, actions: jax.Array) -> _Outputs:
        if self._carry is None:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        if self.autoreset_mode == AutoresetMode.DISABLED and bool(self._carry.finished.any()):
            raise RuntimeError(
                f"{self.name}: copies {np.flatnonzero(np.asarray(self._carry.finished)).tolist()} finished their "
                "episodes; with autoreset_mode DISABLED reset them first: reset(options={'reset_mask': mask})."
            )
        self._carry, outputs = self._step_fn(self._carry, actions, self._limit, self._mode)
        return outputs

    def _checked_actions(self, actions: Any) -> np.ndarray | jax.Array:
        expected = (self.num_envs, self.action_size)
        shape = tuple(np.shape(actions))
        dtype = np.dtype(getattr(actions, "dtype", np.asarray(actions).dtype))
        if shape != expected or not np.issubdtype(dtype, np.floating):
            raise ValueError(f"{self.name}: actions must be a float array of shape {expected}, got {dtype} {shape}.")
        return actions

    def _raise_if_nonfinite(self) -> None:
        assert self._carry is not None
        bad_step = int(self._carry.first_bad_step)
        if bad_step >= 0:
            raise NonFiniteEnvOutputError(
                f"{self.name}: the Brax simulation returned NaN or inf at vector step {bad_step}; "
                "the physics diverged (try a smaller action scale or another backend)."
            )


def _host(metrics: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per-term metrics as writable float64 NumPy arrays (Gymnasium's MuJoCo envs report Python floats)."""
    return {key: np.asarray(value, np.float64) for key, value in metrics.items()}


def _row(array: jax.Array, index: int) -> jax.Array:
    return array[index]


def _where_rows(mask: jax.Array, new: jax.Array, old: jax.Array) -> jax.Array:
    return jnp.where(mask.reshape(mask.shape + (1,) * (new.ndim - 1)), new, old)
