"""What MuJoCo Playground's joystick tasks share, batched: the copies, their episodes, the vector-env contract.

A task (:mod:`~roboppo_envs.playground.go1`, :mod:`~roboppo_envs.playground.berkeley_humanoid`) subclasses
:class:`JoystickVectorEnv` and says what is its own: the model and its settings, the initial state a
reset draws, what follows the physics in a control step (contacts, rewards, commands), the observations,
and its pushes. This class holds one ``mujoco.batch.Batch`` of the copies and does the rest:

- control: position targets ``home + action_scale * action`` (plus a randomized PD-centre offset), then
  ``ctrl_dt / sim_dt`` physics steps on MuJoCo's threads;
- autoreset as Gymnasium's vector envs (``NEXT_STEP`` by default, ``SAME_STEP`` with ``final_obs`` and
  ``final_info``, ``DISABLED``), masked resets, copy ``i`` seeded with ``seed + i``;
- domain randomization redrawn per copy at each reset (:mod:`roboppo_envs.randomize`), a fixed or
  steered command (``command=``, :meth:`set_command`), :meth:`set_robot_state`, rendering, and the
  state a run saves to resume exactly (:meth:`get_state`, :meth:`set_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.mujoco.vector_env import batch_class, resolve_num_threads
from roboppo_envs.playground.assets import playground_file
from roboppo_envs.vector_api import reset_mask, scattered, time_limit, with_masks

Terms = dict[str, np.ndarray]


class JoystickVectorEnv(VectorEnv):
    """``num_envs`` copies of a Playground joystick task, stepped as one ``mujoco.batch.Batch``.

    :param num_envs: copies.
    :param terrain: ``"flat"`` or ``"rough"`` (Playground's height field).
    :param num_threads: threads stepping the copies (default one per available core, at most ``num_envs``).
    :param max_episode_steps: steps before truncation (None: 1,000, Playground's ``episode_length``; -1: none).
    :param autoreset_mode: as Gymnasium's vector envs (``NEXT_STEP`` by default; roboppo's trainers use ``SAME_STEP``).
    :param noise_level: factor on the observation noise (Playground's ``noise_config.level``; 0: none).
    :param pushes: the task's pushes (see the task); a mapping changes their ranges.
    :param randomize: domain randomization redrawn at each reset of a copy: True for the task's Playground ranges,
        a mapping to change them (:mod:`roboppo_envs.randomize`), None or False for none.
    :param command: a fixed ``(vx, vy, yaw_rate)`` command for every copy and step (no sampling), or None.
    :param render_mode: ``"rgb_array"`` for one frame per copy, or None.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    #: the task's name (``roboppo/<task><Terrain>Terrain-v1``), its files and its settings
    task: ClassVar[str]
    asset_package: ClassVar[str]
    xml_folder: ClassVar[tuple[str, ...]]
    terrain_xml: ClassVar[dict[str, str]]
    torso: ClassVar[str]
    ctrl_dt: ClassVar[float] = 0.02
    sim_dt: ClassVar[float]
    action_scale: ClassVar[float] = 0.5
    obs_dims: ClassVar[tuple[int, int]]  # state, privileged_state
    reward_scales: ClassVar[dict[str, float]]
    default_randomization: ClassVar[dr.Ranges]
    #: per-copy arrays a step reads besides the physics (saved with a run's state)
    episode_arrays: ClassVar[tuple[str, ...]] = ("command", "last_act", "steps", "_autoreset")
    pushes_default: ClassVar[bool] = False

    def __init__(
        self,
        num_envs: int = 1,
        terrain: str = "flat",
        num_threads: int | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        noise_level: float = 1.0,
        pushes: bool | Mapping[str, Any] | None = None,
        randomize: bool | Mapping[str, Any] | None = None,
        command: tuple[float, float, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        if terrain not in self.terrain_xml:
            raise ValueError(f"terrain must be one of {sorted(self.terrain_xml)}, got {terrain!r}.")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}.")
        self.name = f"roboppo/{self.task}{terrain.capitalize()}Terrain-v1"
        self.num_envs, self.terrain, self.render_mode = num_envs, terrain, render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode, "render_fps": 1 / self.ctrl_dt}
        self.max_episode_steps = time_limit(max_episode_steps, 1000, self.name)
        self.noise_level = checked_noise(noise_level, self.name)
        self.fixed_command = None if command is None else checked_command(command, self.name)
        path = playground_file(*self.xml_folder, self.terrain_xml[terrain], package=self.asset_package)
        self.model = self._configure(mujoco.MjModel.from_xml_path(str(path)))
        self.n_substeps = round(self.ctrl_dt / self.sim_dt)
        self.num_threads = resolve_num_threads(num_threads, num_envs)
        self._find_common_ids()
        self._make_spaces()
        self._batch = batch_class()(self.model, nsim=num_envs, nthread=self.num_threads, persistent=True)
        self._batch.reset()
        self._reset_row = self._batch.state[0].copy()
        names = ("qpos", "qvel", "ctrl", "xfrc_applied", "sensordata", "site_xpos", "site_xmat", "actuator_force")
        bound = [self._batch.bind(name) for name in names]
        self._qpos, self._qvel, self._ctrl, self._xfrc, self._sensors, self._site_xpos, self._site_xmat = bound[:7]
        self._torque = bound[7]
        self._rngs, self._seeds = (list(v) for v in zip(*(np_random() for _ in range(num_envs)), strict=True))
        self.command = np.zeros((num_envs, 3))
        self.last_act = np.zeros((num_envs, self.model.nu))
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._setup_task(self.pushes_default if pushes is None else pushes)
        ranges = dr.resolve(randomize, self.default_randomization, self.model, self.name)
        self.randomizer = dr.DomainRandomization(self._batch, self.model, ranges) if ranges else None
        self._renderer: mujoco.Renderer | None = None
        self._needs_reset, self.closed = True, False

    # -- what a task defines ----------------------------------------------------------------------

    def _configure(self, model: mujoco.MjModel) -> mujoco.MjModel:
        """The task's settings of Playground's model (its time step, gains)."""
        model.opt.timestep = self.sim_dt
        return model

    def _setup_task(self, pushes: bool | Mapping[str, Any]) -> None:
        """The task's ids, per-copy arrays and pushes."""
        raise NotImplementedError

    def _reset_copy(self, index: int, rng: np.random.Generator) -> None:
        """Copy ``index``'s new episode: its physics rows (``qpos``, ``qvel``, ``ctrl``) and the task's draws."""
        raise NotImplementedError

    def _push(self, stepped: np.ndarray) -> None:
        """The task's pushes before the ``stepped`` copies' physics."""

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, Terms]:
        """After the physics: the reward, terminations and reward terms (scaled) of every copy."""
        raise NotImplementedError

    def _end_step(self, actions: np.ndarray) -> None:
        """After the observations: what the next step reads of this one (the last action, ...)."""
        self.last_act = actions.astype(np.float64)

    def _observe(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _extra_info(self) -> Terms:
        return {}

    # -- shared readings --------------------------------------------------------------------------

    def _find_common_ids(self) -> None:
        model = self.model
        home = model.keyframe("home")
        self.init_qpos = home.qpos.copy()
        self.default_pose = home.qpos[7:].copy()
        self.torso_id = model.body(self.torso).id
        self.torso_mass = float(model.body_subtreemass[self.torso_id])
        self.imu_site = model.site("imu").id
        sensors = ("gyro", "local_linvel", "accelerometer", "upvector", "global_linvel", "global_angvel")
        self._sensor = {name: self._sensor_slice(name) for name in sensors}

    def _sensor_slice(self, name: str) -> slice:
        sensor = self.model.sensor(name).id
        adr = int(self.model.sensor_adr[sensor])
        return slice(adr, adr + int(self.model.sensor_dim[sensor]))

    def _sensor_columns(self, name: str) -> np.ndarray:
        """The columns of sensor ``name`` in ``sensordata``."""
        where = self._sensor_slice(name)
        return np.arange(where.start, where.stop)

    def _read(self, sensor: str) -> np.ndarray:
        return self._sensors[:, self._sensor[sensor]]

    def _gravity(self) -> np.ndarray:
        """World down in the IMU's frame (projected gravity), ``[num_envs, 3]``."""
        return -self._site_xmat[:, self.imu_site, 6:9]

    def _noise(self, scales: np.ndarray) -> np.ndarray:
        """Uniform noise in +-(noise_level * scale) per reading, from each copy's generator."""
        if self.noise_level == 0:
            return np.zeros((self.num_envs, len(scales)))
        draws = np.stack([rng.uniform(-1.0, 1.0, len(scales)) for rng in self._rngs])
        return draws * self.noise_level * scales

    def _make_spaces(self) -> None:
        state, privileged = self.obs_dims
        self.single_observation_space = spaces.Dict(
            {
                "state": spaces.Box(-np.inf, np.inf, (state,), np.float64),
                "privileged_state": spaces.Box(-np.inf, np.inf, (privileged,), np.float64),
            }
        )
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
        """Apply position targets ``home + action_scale * action`` for one control step; finished copies reset as
        ``autoreset_mode`` says."""
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
        self._ctrl[:] = self.default_pose + self.action_scale * actions
        if self.randomizer is not None:
            self._ctrl[:] += self.randomizer.pose_offset
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
        """Each copy's reset (the task's draws), then the fixed command, the randomization, the sensors."""
        self._batch.state[copies] = self._reset_row
        self.last_act[copies] = 0.0
        self.steps[copies] = 0
        self._autoreset[copies] = False
        for index in copies:
            self._reset_copy(index, self._rngs[index])
        if self.fixed_command is not None:
            self.command[copies] = self.fixed_command
        if self.randomizer is not None:
            self.randomizer.draw(self._rngs, copies)
        self._batch.forward(copies)

    def _zero_terms(self) -> Terms:
        return {name: np.zeros(self.num_envs) for name in self.reward_scales}

    def _info(self, terms: Terms) -> dict[str, Any]:
        info = {f"reward_{name}": value for name, value in terms.items()}
        info |= {"command": self.command.copy()} | self._extra_info()
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

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """``name`` per copy: ``randomization`` (the drawn values, a dict per copy), ``command``, ``np_random``, ..."""
        if name == "randomization":
            values = self.randomizer.attributes() if self.randomizer is not None else {}
            return tuple({key: value[i] for key, value in values.items()} for i in range(self.num_envs))
        if name == "np_random":
            return tuple(self._rngs)
        value = getattr(self, name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (self.num_envs,):
            return tuple(value.copy())
        return tuple(value for _ in range(self.num_envs))

    def set_command(self, command: Any, copies: Any = None) -> None:
        """Command ``(vx, vy, yaw_rate)`` (or one per copy, ``[copies, 3]``) for ``copies`` (all by default) from now
        until the next resample (a joystick: build the env with ``command=`` to hold one for good)."""
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        self.command[rows] = checked_command(command, self.name, rows=len(rows))

    def set_robot_state(self, qpos: Any, qvel: Any, copies: Any = None) -> dict[str, np.ndarray]:
        """Put ``copies`` (all by default) in the state ``qpos``, ``qvel`` (an episode's start taken from elsewhere:
        a log, another simulator); returns the observations there."""
        self._check_open()
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        self._qpos[rows], self._qvel[rows] = qpos, qvel
        self._batch.forward(rows)
        return self._observe()

    def render(self) -> tuple[np.ndarray, ...] | None:  # type: ignore[override]
        """One frame per copy (``render_mode="rgb_array"``), from a camera tracking the torso, with the commanded
        and the achieved velocity written in its corner (what ``roboppo-zoo record`` and ``enjoy`` show)."""
        if self.render_mode is None:
            return None
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, 480, 640)
            self._frame_data = mujoco.MjData(self.model)
            self._camera = mujoco.MjvCamera()
            self._camera.type, self._camera.trackbodyid = mujoco.mjtCamera.mjCAMERA_TRACKING, self.torso_id
            self._camera.distance, self._camera.elevation, self._camera.azimuth = 1.5, -20.0, 120.0
        frames = []
        for index in range(self.num_envs):
            self._batch.get_data(index, self._frame_data)
            mujoco.mj_forward(self.model, self._frame_data)
            self._renderer.update_scene(self._frame_data, self._camera)
            frames.append(self._captioned(self._renderer.render(), index))
        return tuple(frames)

    def _captioned(self, frame: np.ndarray, index: int) -> np.ndarray:
        """``frame`` with copy ``index``'s command and its achieved (local) velocity and yaw rate written on it."""
        from PIL import Image, ImageDraw

        vx, vy, wz = self.command[index]
        achieved = self._read("local_linvel")[index]
        yaw_rate = self._read("gyro")[index, 2]
        image = Image.fromarray(frame)
        draw = ImageDraw.Draw(image)
        draw.text((8, 8), f"command   vx {vx:+.2f}  vy {vy:+.2f} m/s  yaw {wz:+.2f} rad/s", fill=(200, 0, 0))
        draw.text(
            (8, 24),
            f"achieved  vx {achieved[0]:+.2f}  vy {achieved[1]:+.2f} m/s  yaw {yaw_rate:+.2f} rad/s",
            fill=(0, 0, 0),
        )
        return np.asarray(image)

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


def yawed(qpos: np.ndarray, yaw: float) -> np.ndarray:
    """``qpos`` with its free joint's orientation turned by ``yaw`` about the vertical (``quat * yaw_quat``)."""
    turned = np.empty(4)
    mujoco.mju_mulQuat(turned, qpos[3:7].copy(), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))
    qpos = qpos.copy()
    qpos[3:7] = turned
    return qpos


def checked_noise(noise_level: float, env: str) -> float:
    level = float(noise_level)
    if not np.isfinite(level) or level < 0:
        raise ValueError(
            f"{env}: noise_level must be a finite number >= 0 (0: no noise, 1: Playground's), got {noise_level!r}."
        )
    return level


def checked_command(command: Any, env: str, rows: int = 1) -> np.ndarray:
    """``command`` as ``(vx, vy, yaw_rate)``, or ``[rows, 3]`` of them, checked."""
    values = np.asarray(command, dtype=np.float64)
    if values.shape not in ((3,), (rows, 3)) or not np.isfinite(values).all():
        raise ValueError(
            f"{env}: a command is (vx m/s, vy m/s, yaw rate rad/s), three finite numbers; got {command!r}."
        )
    return values
