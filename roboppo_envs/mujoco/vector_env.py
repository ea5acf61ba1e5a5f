"""MuJoCo robots as one batched Gymnasium vector env, stepped on MuJoCo's own thread pool.

``gym.make_vec("RoboHopper-v0", num_envs=16)`` returns a :class:`MujocoVectorEnv`:

- the copies are the simulations of one persistent ``mujoco.batch.Batch``: each keeps its own
  ``MjData`` (so its solver warm start, and hence its trajectory, is exactly that of a single
  env), and one ``Batch.step`` call runs ``mj_step`` on all of them on ``num_threads`` C++
  threads, releasing the GIL once per vector step rather than once per copy;
- the fields the task reads are live ``[N, ...]`` arrays bound to the batch, so nothing is
  gathered copy by copy;
- observations, rewards and terminations are computed for the whole batch with NumPy
  (:mod:`roboppo_envs.mujoco.tasks`), term by term as the Gymnasium v5 env does;
- autoreset is ``SAME_STEP``: a finished copy is reset inside the same ``step``; the returned
  observation is the new episode's first and the last one of the finished episode is in
  ``info["final_obs"]`` (rows where ``info["_final_obs"]`` is True);
- copy ``i`` reset with ``seed`` draws its initial states as ``gym.make(id)`` reset with
  ``seed + i`` does, so a batch reproduces single envs step for step; a later reset without a
  seed continues each copy's generator, as Gymnasium's envs do.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs.mujoco.envs import RoboHopperEnv, RoboInvertedDoublePendulumEnv, RoboInvertedPendulumEnv
from roboppo_envs.mujoco.suite import SUITE
from roboppo_envs.mujoco.tasks import (
    HopperTask,
    Info,
    InvertedDoublePendulumTask,
    InvertedPendulumTask,
    MujocoTask,
    State,
)

#: ``MjData`` fields that are state (set by a reset, read by ``mj_step``), not computed from it
STATE_FIELDS = ("qpos", "qvel")
#: a reset of at most ``FEW_RESETS_DOFS // nv`` copies (at least 2) runs ``mj_forward`` in this thread on
#: one scratch ``MjData``: a batch call wakes its threads, which costs more than a few forwards of a small
#: model (the double pendulum's take about 5 us each); more copies use the batch's threads
FEW_RESETS_DOFS = 256


def batch_class() -> type[Any]:
    """``mujoco.batch.Batch``, or an ImportError naming the MuJoCo version it needs."""
    try:
        from mujoco.batch import Batch
    except ImportError as error:
        raise ImportError(
            f"roboppo's batched MuJoCo envs step on mujoco.batch, new in MuJoCo 4.0; this is MuJoCo "
            f"{mujoco.__version__}: pip install -U 'mujoco>=4'"
        ) from error
    return Batch


class MujocoNonFiniteError(RuntimeError):
    """A MuJoCo simulation produced NaN or inf."""


def available_cpus() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def resolve_num_threads(num_threads: int | None, num_envs: int) -> int:
    """Threads stepping ``num_envs`` copies: default one per available core (at most one per copy).

    More threads than cores is capped with a warning; fewer than one is an error.
    """
    cores = available_cpus()
    if num_threads is None:
        return max(1, min(cores, num_envs))
    if num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, got {num_threads}.")
    if num_threads > cores:
        warnings.warn(
            f"num_threads={num_threads} exceeds the {cores} CPU cores available; using {cores}.",
            stacklevel=3,
        )
        num_threads = cores
    return min(num_threads, num_envs)


class MujocoVectorEnv(VectorEnv):
    """``num_envs`` copies of a Gymnasium v5 MuJoCo env stepped as one batch.

    ``task`` names the Gymnasium env (``"Hopper"`` for ``Hopper-v5``, a key of
    :data:`~roboppo_envs.mujoco.suite.SUITE`); the ``Robo*VectorEnv`` subclasses name theirs as
    class attributes instead (``env_class``, ``task_class``).

    :param num_envs: number of copies.
    :param task: the Gymnasium v5 env these copies are (observations of its dtype, float64).
    :param num_threads: threads stepping the copies, the calling one included (default: one per
        available core, at most ``num_envs``; more than the machine has is capped with a warning).
    :param max_episode_steps: steps after which an episode is truncated (None: never).
    :param render_mode: ``"rgb_array"`` renders copy 0.
    :param env_kwargs: keyword arguments of the single env (reward weights, ``reset_noise_scale``, ...).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["rgb_array"]}
    env_class: ClassVar[type[Any]]
    task_class: ClassVar[type[MujocoTask]]

    def __init__(
        self,
        num_envs: int,
        task: str | None = None,
        num_threads: int | None = None,
        max_episode_steps: int | None = 1000,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        env_class, task_class = self._classes(task)
        self.template = env_class(render_mode=render_mode, **env_kwargs)
        self.model: mujoco.MjModel = self.template.model
        self.frame_skip: int = self.template.frame_skip
        self.task = task_class(self.template)
        self.name = type(self).__name__ if task is None else f"roboppo/{task}-v5"
        self.num_envs, self.max_episode_steps, self.render_mode = num_envs, max_episode_steps, render_mode
        self.num_threads = resolve_num_threads(num_threads, num_envs)
        self.single_observation_space = self.template.observation_space
        self.single_action_space = self.template.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._obs_dtype = self.single_observation_space.dtype
        self._batch = batch_class()(self.model, nsim=num_envs, nthread=self.num_threads, persistent=True)
        # every copy runs on this env's own model (the batch would otherwise simulate a copy of it), so an
        # edit to ``envs.model`` (a mass, a friction: domain randomization) reaches the physics at the next step
        self._batch.set_models(self.model)
        self._ctrl, self._qpos, self._qvel = (self._batch.bind(name) for name in ("ctrl", "qpos", "qvel"))
        # live views: state rows (qpos, qvel) and outputs refreshed by every call (site_xpos, ...)
        self._state: State = {name: self._batch.bind(name) for name in self.task.fields if name != "cfrc_ext"}
        self._contact = ContactForces(self._batch, self.model) if "cfrc_ext" in self.task.fields else None
        if self._contact is not None:
            self._state["cfrc_ext"] = self._contact.cfrc_ext
        self._batch.reset()  # every row now holds mj_resetData's state: a new episode starts from a copy of it
        # mj_forward after a reset only computes what the task reads: positions, forces (mj_step recomputes
        # it all from the state before it integrates); a task that reads the state alone skips it
        self._forward_on_reset = not set(self.task.fields) <= set(STATE_FIELDS)
        # the scratch forward leaves the batch's own derived fields stale, so only for tasks that read none
        # of them from before a step (the double pendulum, the arms)
        self._scratch = mujoco.MjData(self.model) if set(self.task.before_fields) <= set(STATE_FIELDS) else None
        self._few_resets = max(2, FEW_RESETS_DOFS // self.model.nv)
        self._render_stale = False  # copy 0 was reset without mj_forward: its positions are the old episode's
        self._reset_row = self._batch.state[0].copy()
        self._rngs = [np_random()[0] for _ in range(num_envs)]
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._needs_reset = True
        self._restored_before: State | None = None  # set_state's copy of the fields the next step reads as before
        self.closed = False

    @classmethod
    def _classes(cls, task: str | None) -> tuple[type[Any], type[MujocoTask]]:
        if task is None:
            if not hasattr(cls, "task_class"):
                raise TypeError(f"{cls.__name__} needs task=, one of {sorted(SUITE)}.")
            return cls.env_class, cls.task_class
        if task not in SUITE:
            raise ValueError(f"unknown MuJoCo task {task!r}; the v5 suite has {', '.join(sorted(SUITE))}.")
        return SUITE[task]

    # -- Gymnasium VectorEnv API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy; copy ``i`` is seeded with ``seed + i`` (or ``seed[i]`` from a list).

        As in Gymnasium, a copy reset without a seed continues its generator, so every reset after a
        seeded one is reproducible; only a copy that was never seeded draws from OS entropy.
        """
        seeds = seed if isinstance(seed, list) else [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"{self.name}: reset(seed=list) needs {self.num_envs} seeds, got {len(seeds)}.")
        self._rngs = [rng if s is None else np_random(s)[0] for rng, s in zip(self._rngs, seeds, strict=True)]
        obs, reset_info = self._reset_copies(np.arange(self.num_envs))
        self._steps[:] = 0
        self._needs_reset = False
        return obs.astype(self._obs_dtype), with_masks(reset_info, self.num_envs)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy with actions ``[num_envs, action_dim]``; finished copies reset in the same call.

        ``info`` is laid out as Gymnasium's ``SyncVectorEnv`` lays out its copies' infos: each term
        with a ``_term`` mask; for a copy that finished, the terms of its new episode's reset, and the
        finished episode's last observation and terms in ``final_obs`` and ``final_info`` (rows where
        ``_final_obs`` / ``_final_info`` are True; ``final_obs`` is one array, not an array of objects).
        """
        actions = self._checked_actions(np.asarray(actions))
        obs64, reward, terminated, terms = self._simulate(actions)
        self._steps += 1
        limit = self.max_episode_steps
        truncated = self._steps >= limit if limit is not None else np.zeros(self.num_envs, dtype=bool)
        done = terminated | truncated
        final_obs = obs64.astype(self._obs_dtype)
        info = with_masks(terms, self.num_envs)
        if not done.any():
            return final_obs, reward, terminated, truncated, info
        finished = np.flatnonzero(done)
        obs = final_obs.copy()
        obs[finished], reset_info = self._reset_copies(finished)
        self._steps[finished] = 0
        final_info = {key: np.where(expand(done, value), value, 0).astype(value.dtype) for key, value in terms.items()}
        info = with_reset_terms(info, reset_info, finished)
        info |= {
            "final_obs": final_obs,
            "_final_obs": done,
            "final_info": with_masks(final_info, done),
            "_final_info": done,
        }
        return obs, reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """An RGB frame of copy 0 (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            return None
        if self._render_stale:
            self._batch.forward(np.zeros(1, dtype=np.int64))
            self._render_stale = False
        self._batch.get_data(0, self.template.data)
        return self.template.render()

    def close(self, **kwargs: Any) -> None:
        """Release the batch (its threads and every copy's ``MjData``) and the template env."""
        if hasattr(self, "_batch"):
            del self._batch, self._state, self._ctrl, self._qpos, self._qvel, self._contact
        self.template.close()
        self.closed = True

    # -- state, to continue a run exactly ------------------------------------------------------

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything the next ``step`` depends on: arrays (each copy's physics state row, episode steps, the
        fields the task reads from before a step, contact forces) and JSON-able values (each copy's generator)."""
        arrays = {"physics": self._batch.state.copy(), "steps": self._steps.copy()}
        arrays |= {f"before_{name}": self._state[name].copy() for name in self.task.before_fields}
        if self._contact is not None:
            arrays["cfrc_ext"] = self._contact.cfrc_ext.copy()
        meta = {"env": self.name, "num_envs": self.num_envs, "needs_reset": self._needs_reset}
        meta["rngs"] = [rng.bit_generator.state for rng in self._rngs]
        return arrays, meta

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Continue from what :meth:`get_state` returned (of an env built alike: same task, copies and keywords)."""
        if (meta["env"], meta["num_envs"]) != (self.name, self.num_envs) or arrays[
            "physics"
        ].shape != self._batch.state.shape:
            raise ValueError(
                f"{self.name}: the saved state is of {meta['env']} with {meta['num_envs']} copies "
                f"(state rows {arrays['physics'].shape}); this env has {self.num_envs} "
                f"(rows {self._batch.state.shape})."
            )
        self._batch.state[:] = arrays["physics"]
        self._steps[:] = arrays["steps"]
        for rng, state in zip(self._rngs, meta["rngs"], strict=True):
            rng.bit_generator.state = state
        self._restored_before = {name: arrays[f"before_{name}"].copy() for name in self.task.before_fields}
        if self._contact is not None:
            self._contact.cfrc_ext[:] = arrays["cfrc_ext"]
        self._needs_reset = bool(meta["needs_reset"])
        self._render_stale = True

    # -- stepping -------------------------------------------------------------------------------

    def _simulate(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Info]:
        """Step every copy (no truncation, no reset): float64 observations, rewards, terminations, info terms."""
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        before = self._restored_before or {name: self._state[name].copy() for name in self.task.before_fields}
        self._restored_before = None
        self._ctrl[:] = actions
        self._batch.step(nstep=self.frame_skip)  # mj_step frame_skip times per copy, as MujocoEnv.do_simulation
        if self._contact is not None:
            self._contact.update()
        self._render_stale = False
        obs64 = self.task.observe(self._state)
        reward, terminated, terms = self.task.step(before, self._state, actions, obs64)
        self._check_finite(obs64, reward)
        return obs64, reward, terminated, terms

    def _reset_copies(self, copies: np.ndarray) -> tuple[np.ndarray, Info]:
        """Reset ``copies`` as ``MujocoEnv.reset`` does each; return their first observations (float64) and reset info.

        ``mj_resetData`` (its state row, which is all a step reads: ``mjSTATE_INTEGRATION``; and zero
        contact forces), the new ``qpos, qvel`` from each copy's generator, then ``mj_forward`` where
        the task reads more than ``qpos, qvel``.
        """
        self._batch.state[copies] = self._reset_row
        for index in copies:
            self._qpos[index], self._qvel[index] = self.task.initial_state(self._rngs[index])
        if self._contact is not None:
            self._contact.cfrc_ext[copies] = 0.0
        here = self._forward_on_reset and self._scratch is not None and len(copies) <= self._few_resets
        if self._forward_on_reset and not here:
            self._batch.forward(copies)
        else:  # copy 0's own MjData still holds the old episode's positions
            self._render_stale = self._render_stale or bool(copies[0] == 0)
        rows = {name: array[copies] for name, array in self._state.items()}
        if here:
            rows |= self._forward_here(copies)
        return self.task.observe(rows), self.task.reset_info(rows)

    def _forward_here(self, copies: np.ndarray) -> State:
        """The derived fields the task reads, by ``mj_forward`` of each copy's state row on the scratch ``MjData``."""
        assert self._scratch is not None
        derived = [name for name in self._state if name not in STATE_FIELDS and name != "cfrc_ext"]
        rows = {name: np.empty((len(copies), *self._state[name].shape[1:])) for name in derived}
        for row, index in enumerate(copies):
            mujoco.mj_setState(self.model, self._scratch, self._batch.state[index], mujoco.mjtState.mjSTATE_INTEGRATION)
            mujoco.mj_forward(self.model, self._scratch)
            for name in derived:
                rows[name][row] = getattr(self._scratch, name)
        return rows

    # -- checks ---------------------------------------------------------------------------------

    def _checked_actions(self, actions: np.ndarray) -> np.ndarray:
        expected = (self.num_envs, self.model.nu)
        if actions.shape != expected or actions.dtype.kind != "f":
            raise ValueError(
                f"{self.name}: actions must be a float array of shape {expected} (num_envs, action_dim), "
                f"got {actions.dtype} {actions.shape}."
            )
        if not np.isfinite(actions).all():
            rows = np.flatnonzero(~np.isfinite(actions).all(axis=1)).tolist()
            raise ValueError(f"{self.name}: actions contain NaN or inf (copies {rows}); check the policy's output.")
        return actions

    def _check_finite(self, obs: np.ndarray, reward: np.ndarray) -> None:
        finite = np.isfinite(obs).all(axis=1) & np.isfinite(reward)
        if not finite.all():
            rows = np.flatnonzero(~finite).tolist()
            raise MujocoNonFiniteError(
                f"{self.name}: the simulation returned NaN or inf in copies {rows} "
                f"(episode steps {self._steps[rows].tolist()}); the physics diverged."
            )


class ContactForces:
    """``cfrc_ext`` of every copy after a step: ``mj_rnePostConstraint``, as ``MujocoEnv`` runs after ``mj_step``.

    A batch step stops at ``mj_step``; this loads each copy's ``MjData`` (a persistent batch keeps
    them) into one scratch ``MjData`` and runs the function on it, about 8 us per copy.
    """

    def __init__(self, batch: Any, model: mujoco.MjModel) -> None:
        self.batch, self.model = batch, model
        self.scratch = mujoco.MjData(model)
        self.cfrc_ext = np.zeros((batch.nsim, model.nbody, 6))

    def update(self) -> None:
        for index in range(self.batch.nsim):
            self.batch.get_data(index, self.scratch)
            mujoco.mj_rnePostConstraint(self.model, self.scratch)
            self.cfrc_ext[index] = self.scratch.cfrc_ext


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


def with_reset_terms(info: dict[str, Any], reset_info: Info, finished: np.ndarray) -> dict[str, Any]:
    """The step's info with the ``finished`` copies' terms replaced by their reset's (absent terms masked out,
    and left out where no copy has them)."""
    for key in [key for key in info if not key.startswith("_")]:
        value = info[key] = info[key].copy()
        if key in reset_info:
            value[finished] = reset_info[key]
        else:
            value[finished] = 0
            info[f"_{key}"][finished] = False
            if not info[f"_{key}"].any():  # no copy has this term now
                del info[key], info[f"_{key}"]
    return info


class RoboInvertedPendulumVectorEnv(MujocoVectorEnv):
    """Batched ``RoboInvertedPendulum-v0``."""

    env_class = RoboInvertedPendulumEnv
    task_class = InvertedPendulumTask


class RoboInvertedDoublePendulumVectorEnv(MujocoVectorEnv):
    """Batched ``RoboInvertedDoublePendulum-v0``."""

    env_class = RoboInvertedDoublePendulumEnv
    task_class = InvertedDoublePendulumTask


class RoboHopperVectorEnv(MujocoVectorEnv):
    """Batched ``RoboHopper-v0``."""

    env_class = RoboHopperEnv
    task_class = HopperTask
