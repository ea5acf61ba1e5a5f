"""What MuJoCo Playground's tasks share, batched: the copies, their episodes, the vector-env contract.

A task subclasses :class:`PlaygroundVectorEnv` (the joystick tasks through
:class:`~roboppo_envs.playground.joystick.JoystickVectorEnv`) and says what is its own: the model and
its settings, how an action sets the controls, the initial state a reset draws, what follows the
physics in a control step (contacts, rewards, commands), and the observations. This class holds one
``mujoco.batch.Batch`` of the copies and does the rest:

- ``ctrl_dt / sim_dt`` physics steps per control step on MuJoCo's threads;
- autoreset as Gymnasium's vector envs (``NEXT_STEP`` by default, ``SAME_STEP`` with ``final_obs`` and
  ``final_info``, ``DISABLED``), masked resets, copy ``i`` seeded with ``seed + i``;
- domain randomization redrawn per copy at each reset (:mod:`roboppo_envs.randomize`),
  :meth:`set_robot_state`, rendering, and the state a run saves to resume exactly (:meth:`get_state`,
  :meth:`set_state`).
"""

from __future__ import annotations

import pathlib
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.mujoco.vector_env import batch_class, resolve_num_threads
from roboppo_envs.vector_api import reset_mask, scattered, time_limit, with_masks

Terms = dict[str, np.ndarray]


class PlaygroundVectorEnv(VectorEnv):
    """``num_envs`` copies of a Playground task, stepped as one ``mujoco.batch.Batch``.

    :param num_envs: copies.
    :param num_threads: threads stepping the copies (default one per available core, at most ``num_envs``).
    :param max_episode_steps: steps before truncation (None: the task's ``episode_length``; -1: none).
    :param autoreset_mode: as Gymnasium's vector envs (``NEXT_STEP`` by default; roboppo's trainers use ``SAME_STEP``).
    :param randomize: domain randomization redrawn at each reset of a copy: True for the task's default ranges,
        a mapping to change them (:mod:`roboppo_envs.randomize`), None or False for none.
    :param render_mode: ``"rgb_array"`` for one frame per copy, or None.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    ctrl_dt: ClassVar[float] = 0.02
    sim_dt: ClassVar[float]
    episode_length: ClassVar[int] = 1000
    #: the observation's keys and their sizes
    obs_dims: ClassVar[dict[str, int]]
    reward_scales: ClassVar[dict[str, float]]
    default_randomization: ClassVar[dr.Ranges]
    #: per-copy arrays a step reads besides the physics (saved with a run's state)
    episode_arrays: ClassVar[tuple[str, ...]] = ("last_act", "steps", "_autoreset")
    #: MjData fields read and written as live ``[num_envs, ...]`` arrays: attribute -> field
    bound_fields: ClassVar[dict[str, str]] = {
        "_qpos": "qpos", "_qvel": "qvel", "_ctrl": "ctrl", "_sensors": "sensordata", "_site_xpos": "site_xpos",
        "_site_xmat": "site_xmat",
    }  # fmt: skip
    _qpos: np.ndarray
    _qvel: np.ndarray
    _ctrl: np.ndarray
    _sensors: np.ndarray
    _site_xpos: np.ndarray
    _site_xmat: np.ndarray

    def __init__(
        self,
        num_envs: int = 1,
        num_threads: int | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        randomize: bool | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}.")
        self.name = self._env_name()
        self.num_envs, self.render_mode = num_envs, render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode, "render_fps": 1 / self.ctrl_dt}
        self.max_episode_steps = time_limit(max_episode_steps, self.episode_length, self.name)
        self.model = self._configure(mujoco.MjModel.from_xml_path(str(self._xml_path())))
        self.n_substeps = round(self.ctrl_dt / self.sim_dt)
        self.num_threads = resolve_num_threads(num_threads, num_envs)
        self._find_ids()
        self._make_spaces()
        self._batch = batch_class()(self.model, nsim=num_envs, nthread=self.num_threads, persistent=True)
        self._batch.reset()
        self._reset_row = self._batch.state[0].copy()
        for attribute, field in self.bound_fields.items():
            setattr(self, attribute, self._batch.bind(field))
        self._rngs, self._seeds = (list(v) for v in zip(*(np_random() for _ in range(num_envs)), strict=True))
        self.last_act = np.zeros((num_envs, self.model.nu))
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._setup_task()
        ranges = dr.resolve(randomize, self.default_randomization, self.model, self.name)
        self._check_randomization(ranges)
        self.randomizer = dr.DomainRandomization(self._batch, self.model, ranges) if ranges else None
        self._renderer: mujoco.Renderer | None = None
        self._needs_reset, self.closed = True, False

    # -- what a task defines ----------------------------------------------------------------------

    def _env_name(self) -> str:
        """The registered id this env equals (``roboppo/<Playground task>-v1``)."""
        raise NotImplementedError

    def _xml_path(self) -> pathlib.Path:
        """Playground's model file of the task."""
        raise NotImplementedError

    def _configure(self, model: mujoco.MjModel) -> mujoco.MjModel:
        """The task's settings of Playground's model (its time step, gains)."""
        model.opt.timestep = self.sim_dt
        return model

    def _find_ids(self) -> None:
        """The ids and nominal values the task reads (before the batch exists)."""

    def _setup_task(self) -> None:
        """The task's per-copy arrays (after the batch exists)."""

    def _check_randomization(self, ranges: dr.Ranges) -> None:
        """Reject options the task's control cannot honour."""

    def _reset_copy(self, index: int, rng: np.random.Generator) -> None:
        """Copy ``index``'s new episode: its physics rows (``qpos``, ``qvel``, ``ctrl``) and the task's draws."""
        raise NotImplementedError

    def _after_resets(self, copies: np.ndarray) -> None:
        """After every copy's draws, before the randomization's (a fixed command)."""

    def _apply_actions(self, actions: np.ndarray) -> None:
        """Set the controls from the actions (checked, ``[num_envs, nu]``)."""
        raise NotImplementedError

    def _push(self, stepped: np.ndarray) -> None:
        """The task's pushes before the ``stepped`` copies' physics."""

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, Terms]:
        """After the physics: the reward, terminations and reward terms of every copy."""
        raise NotImplementedError

    def _end_step(self, actions: np.ndarray) -> None:
        """After the observations: what the next step reads of this one (the last action, ...)."""
        self.last_act = actions.astype(np.float64)

    def _observe(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _extra_info(self) -> Terms:
        return {}

    def _camera(self) -> mujoco.MjvCamera:
        """The camera frames are rendered from."""
        return mujoco.MjvCamera()

    def _captioned(self, frame: np.ndarray, index: int) -> np.ndarray:
        """``frame`` of copy ``index`` with what the task writes on it."""
        return frame

    # -- shared readings --------------------------------------------------------------------------

    def _sensor_slice(self, name: str) -> slice:
        sensor = self.model.sensor(name).id
        adr = int(self.model.sensor_adr[sensor])
        return slice(adr, adr + int(self.model.sensor_dim[sensor]))

    def _sensor_columns(self, name: str) -> np.ndarray:
        """The columns of sensor ``name`` in ``sensordata``."""
        where = self._sensor_slice(name)
        return np.arange(where.start, where.stop)

    def _make_spaces(self) -> None:
        boxes: dict[str, spaces.Space] = {
            key: spaces.Box(-np.inf, np.inf, (dim,), np.float64) for key, dim in self.obs_dims.items()
        }
        self.single_observation_space = spaces.Dict(boxes)
        self.single_action_space = spaces.Box(-1.0, 1.0, (self.model.nu,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    # -- Gymnasium VectorEnv API ------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every copy (or those of ``options["reset_mask"]``); copy ``i`` is seeded with ``seed + i``."""
        self._check_open()
        n = self.num_envs
        seeds = list(seed) if isinstance(seed, list | tuple) else [None if seed is None else seed + i for i in range(n)]
        if len(seeds) != n:
            raise ValueError(f"{self.name}: reset(seed=list) needs {n} seeds, got {len(seeds)}.")
        mask = reset_mask(options, n, self.name, self._needs_reset)
        copies = np.arange(n) if mask is None else np.flatnonzero(mask)
        for index in copies:
            if seeds[index] is not None:
                self._rngs[index], self._seeds[index] = np_random(seeds[index])
        self._reset_copies(copies)
        self._needs_reset = False
        obs = self._observe()
        info = self._info(self._zero_terms())
        if mask is not None:
            info = scattered({k: v[copies] for k, v in info.items() if not k.startswith("_")}, copies, n)
        return obs, info

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One control step of every copy; finished copies reset as ``autoreset_mode`` says."""
        self._check_open()
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        pending = self._autoreset.copy() if next_step else np.zeros(self.num_envs, bool)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            raise RuntimeError(
                f"{self.name}: copies {np.flatnonzero(self._autoreset).tolist()} finished their episodes; with "
                "autoreset_mode DISABLED reset them first: reset(options={'reset_mask': mask})."
            )
        actions = self._checked_actions(actions, pending)
        self._push(~pending)
        self._apply_actions(actions)
        self._batch.step(~pending if pending.any() else None, nstep=self.n_substeps)
        reward, terminated, terms = self._after_physics(actions)
        self.steps += 1
        limit = self.max_episode_steps
        truncated = self.steps >= limit if limit else np.zeros(self.num_envs, bool)
        obs = self._observe()
        self._end_step(actions)
        info = self._info(terms)
        if pending.any():  # NEXT_STEP: the copies that finished last step only reset (their action unused)
            reward[pending], terminated[pending], truncated[pending] = 0.0, False, False
            obs, info = self._reset_into(obs, info, np.flatnonzero(pending))
        done = terminated | truncated
        self._autoreset = done.copy()
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            final = {"final_obs": {k: v.copy() for k, v in obs.items()}, "_final_obs": done.copy()}
            final |= {"final_info": with_masks({k: v for k, v in info.items() if not k.startswith("_")}, done)}
            final["_final_info"] = done.copy()
            obs, info = self._reset_into(obs, info, np.flatnonzero(done))
            info |= final
            self._autoreset[:] = False
        return obs, reward, terminated, truncated, info

    def _reset_into(self, obs: dict[str, np.ndarray], info: dict[str, Any], copies: np.ndarray) -> tuple[dict, dict]:
        """``copies`` reset: their first observations and reset terms replace theirs in ``obs`` and ``info``."""
        self._reset_copies(copies)
        first = self._observe()
        chosen = np.isin(np.arange(self.num_envs), copies)[:, None]
        obs = {key: np.where(chosen, first[key], value) for key, value in obs.items()}
        for key, value in self._info(self._zero_terms()).items():
            if not key.startswith("_"):
                info[key] = info[key].copy()
                info[key][copies] = value[copies]
        return obs, info

    def _reset_copies(self, copies: np.ndarray) -> None:
        """Each copy's reset (the task's draws), then the randomization's, then the sensors."""
        self._batch.state[copies] = self._reset_row
        self.last_act[copies] = 0.0
        self.steps[copies] = 0
        self._autoreset[copies] = False
        for index in copies:
            self._reset_copy(index, self._rngs[index])
        self._after_resets(copies)
        if self.randomizer is not None:
            self.randomizer.draw(self._rngs, copies)
        self._batch.forward(copies)

    def _zero_terms(self) -> Terms:
        return {name: np.zeros(self.num_envs) for name in self.reward_scales}

    def _info(self, terms: Terms) -> dict[str, Any]:
        info = {f"reward_{name}": value for name, value in terms.items()}
        info |= self._extra_info()
        return with_masks(info, self.num_envs)

    # -- state, to continue a run exactly (roboppo-zoo train --resume) ----------------------------

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything the next ``step`` depends on: the physics rows, the episode arrays, each copy's generator and
        the drawn randomization."""
        arrays = {"physics": self._batch.state.copy()}
        arrays |= {name: getattr(self, name).copy() for name in self.episode_arrays}
        if self.randomizer is not None:
            arrays |= {f"randomization_{key}": value for key, value in self.randomizer.attributes().items()}
        meta = {"env": self.name, "num_envs": self.num_envs, "needs_reset": self._needs_reset}
        meta["rngs"] = [rng.bit_generator.state for rng in self._rngs]
        return arrays, meta

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Continue from what :meth:`get_state` returned (of an env built alike: same task, copies and keywords)."""
        if (meta["env"], meta["num_envs"]) != (self.name, self.num_envs):
            raise ValueError(
                f"{self.name}: the saved state is of {meta['env']} with {meta['num_envs']} copies; this env has "
                f"{self.num_envs}."
            )
        self._batch.state[:] = arrays["physics"]
        for name in self.episode_arrays:
            getattr(self, name)[...] = arrays[name]
        for rng, state in zip(self._rngs, meta["rngs"], strict=True):
            rng.bit_generator.state = state
        if self.randomizer is not None:
            self.randomizer.restore({key: arrays[f"randomization_{key}"] for key in self.randomizer.values})
        self._needs_reset = bool(meta["needs_reset"])
        self._batch.forward()  # the sensors of the restored states (a step recomputes them before it reads them)

    # -- the rest of the VectorEnv API ------------------------------------------------------------

    def deployment(self) -> dict[str, Any]:
        """What a robot's control loop needs to run a policy of this task: the control period, the actuated
        joints in action order, the observation's keys and sizes (``roboppo-zoo export`` writes it in the file)."""
        joints = [
            mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_JOINT, int(j)) for j in self.model.actuator_trnid[:, 0]
        ]
        return {
            "task": self.name, "control_period_s": self.ctrl_dt, "physics_steps": self.n_substeps,
            "physics_timestep_s": float(self.model.opt.timestep), "ccd_iterations": int(self.model.opt.ccd_iterations),
            "joint_names": joints, "observation_sizes": dict(self.obs_dims),
        }  # fmt: skip

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """``name`` per copy: ``randomization`` (the drawn values, a dict per copy), ``np_random``, ``command``
        (joystick tasks), ..."""
        if name == "randomization":
            values = self.randomizer.attributes() if self.randomizer is not None else {}
            return tuple({key: value[i] for key, value in values.items()} for i in range(self.num_envs))
        if name == "np_random":
            return tuple(self._rngs)
        value = getattr(self, name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (self.num_envs,):
            return tuple(value.copy())
        return tuple(value for _ in range(self.num_envs))

    def set_robot_state(self, qpos: Any, qvel: Any, copies: Any = None) -> dict[str, np.ndarray]:
        """Put ``copies`` (all by default) in the state ``qpos``, ``qvel`` (an episode's start taken from elsewhere:
        a log, another simulator); returns the observations there."""
        self._check_open()
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        self._qpos[rows], self._qvel[rows] = qpos, qvel
        self._batch.forward(rows)
        return self._observe()

    def render(self) -> tuple[np.ndarray, ...] | None:  # type: ignore[override]
        """One frame per copy (``render_mode="rgb_array"``), with what the task writes on it (what ``roboppo-zoo
        record`` and ``enjoy`` show)."""
        if self.render_mode is None:
            return None
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, 480, 640)
            self._frame_data = mujoco.MjData(self.model)
            self._camera_view = self._camera()
        frames = []
        for index in range(self.num_envs):
            self._batch.get_data(index, self._frame_data)
            mujoco.mj_forward(self.model, self._frame_data)
            self._renderer.update_scene(self._frame_data, self._camera_view)
            frames.append(self._captioned(self._renderer.render(), index))
        return tuple(frames)

    def close(self, **kwargs: Any) -> None:
        if self.closed or "_batch" not in vars(self):  # closed, or never built (a constructor that raised)
            return
        renderer = getattr(self, "_renderer", None)
        if renderer is not None:
            renderer.close()
        del self._batch
        self.closed = True

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(self._seeds)

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self.name}: this env was closed, which released its simulations; make a new one.")

    def _checked_actions(self, actions: Any, ignore: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        expected = (self.num_envs, self.model.nu)
        if actions.shape != expected or actions.dtype.kind not in "biuf":
            raise ValueError(
                f"{self.name}: actions must be a numeric array of shape {expected} (num_envs, action_dim), "
                f"got {actions.dtype} {actions.shape}."
            )
        actions = actions.astype(np.float64)
        bad = ~np.isfinite(actions).all(axis=1) & ~ignore
        if bad.any():
            raise ValueError(f"{self.name}: actions contain NaN or inf (copies {np.flatnonzero(bad).tolist()}).")
        actions[ignore] = 0.0
        return actions
