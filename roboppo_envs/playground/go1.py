"""MuJoCo Playground's Go1 joystick task, batched: ``roboppo/Go1JoystickFlatTerrain-v1`` and ``...RoughTerrain-v1``.

A Unitree Go1 tracks a velocity command (forward, sideways, yaw rate) sampled and resampled as in
Playground's ``go1/joystick.py``. The copies are the simulations of one ``mujoco.batch.Batch``
stepped on MuJoCo's threads; everything else (PD targets, sensors, the sixteen reward terms,
commands, noise, kicks) is computed for the whole batch with NumPy.

- Control at ``ctrl_dt`` = 0.02 s (5 substeps of 0.004 s): position targets ``home + 0.5 * action``
  for PD motors (Kp 35, Kd 0.5 as joint damping).
- Observations are a ``Dict``: ``state`` (48: noisy local linear velocity, gyro, projected gravity,
  joint angles from home, joint velocities, the last action, the command) and ``privileged_state``
  (123: ``state``, then the same readings without noise, the accelerometer, global angular velocity,
  motor torques, foot contacts, foot velocities, air times, the kick force and whether a kick is on).
- Each reward term (scaled, before the sum) is in ``info`` as ``reward_<term>``, as EnvPool gives them;
  the reward is their sum times ``ctrl_dt``, clipped at 0.
- An episode ends when the torso turns upside down, and is truncated after 1,000 steps (20 s).

The sim-to-real kit is keywords: ``randomize`` (:mod:`roboppo_envs.randomize`), ``pushes``
(Playground's velocity kicks), ``noise_level`` (0 switches the observation noise off), and through
``gym.make_vec`` (:func:`make_vector`) ``action_latency`` and ``history`` (:mod:`roboppo_envs.kit`).
Where this differs from Playground's own env it follows EnvPool's port (``docs/robots.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.kit import checked_kit, with_kit
from roboppo_envs.mujoco.vector_env import batch_class, resolve_num_threads
from roboppo_envs.playground.assets import playground_file
from roboppo_envs.pushes import PUSHES, Kicks, checked_pushes
from roboppo_envs.vector_api import reset_mask, scattered, time_limit, with_masks

TERRAIN_XML = {
    "flat": "scene_mjx_feetonly_flat_terrain.xml",
    "rough": "scene_mjx_feetonly_rough_terrain.xml",
}
FEET = ("FR", "FL", "RR", "RL")
#: the reward terms and their scales (Playground's ``default_config``), in the order they are summed
REWARD_SCALES: dict[str, float] = {
    "tracking_lin_vel": 1.0,
    "tracking_ang_vel": 0.5,
    "lin_vel_z": -0.5,
    "ang_vel_xy": -0.05,
    "orientation": -5.0,
    "dof_pos_limits": -1.0,
    "pose": 0.5,
    "termination": -1.0,
    "stand_still": -1.0,
    "torques": -0.0002,
    "action_rate": -0.01,
    "energy": -0.001,
    "feet_clearance": -2.0,
    "feet_height": -0.2,
    "feet_slip": -0.1,
    "feet_air_time": 0.1,
}
#: observation noise: uniform in +-(noise_level * scale), per reading
NOISE_SCALES = {"linvel": 0.1, "gyro": 0.2, "gravity": 0.05, "joint_pos": 0.03, "joint_vel": 1.5}
#: Playground's Go1 domain randomization (``go1/randomize.py``): the defaults of ``randomize=True``
LEG_JOINTS = tuple(f"{leg}_{part}_joint" for leg in FEET for part in ("hip", "thigh", "calf"))
LINKS = ("trunk", *(f"{leg}_{part}" for leg in FEET for part in ("hip", "thigh", "calf")))
GO1_RANDOMIZATION: dr.Ranges = {
    "floor_friction": ((0.4, 1.0), ("floor",)),
    "joint_friction_scale": ((0.9, 1.1), LEG_JOINTS),
    "armature_scale": ((1.0, 1.05), LEG_JOINTS),
    "torso_com_offset": ((-0.05, 0.05), ("trunk",)),
    "link_mass_scale": ((0.9, 1.1), LINKS),
    "torso_added_mass": ((-1.0, 1.0), ("trunk",)),
    "default_pose_offset": ((-0.05, 0.05), LEG_JOINTS),
}


class Go1JoystickVectorEnv(VectorEnv):
    """``num_envs`` Go1s tracking joystick commands, stepped as one ``mujoco.batch.Batch``.

    :param num_envs: copies.
    :param terrain: ``"flat"`` or ``"rough"`` (Playground's height field).
    :param num_threads: threads stepping the copies (default one per available core, at most ``num_envs``).
    :param max_episode_steps: steps before truncation (None: 1,000, Playground's ``episode_length``; -1: none).
    :param autoreset_mode: as Gymnasium's vector envs (``NEXT_STEP`` by default; roboppo's trainers use ``SAME_STEP``).
    :param noise_level: factor on the observation noise (Playground's ``noise_config.level``; 0: none).
    :param pushes: Playground's velocity kicks on the torso (``pert_config.enable``); a mapping changes their ranges
        (keys of :data:`PUSHES`).
    :param randomize: domain randomization redrawn at each reset of a copy: True for Playground's Go1 ranges,
        a mapping to change them (:mod:`roboppo_envs.randomize`), None or False for none.
    :param command: a fixed ``(vx, vy, yaw_rate)`` command for every copy and step (no sampling), or None.
    :param render_mode: ``"rgb_array"`` for one frame per copy, or None.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    ctrl_dt = 0.02
    sim_dt = 0.004
    kp, kd, action_scale = 35.0, 0.5, 0.5
    soft_joint_pos_limit_factor = 0.95
    tracking_sigma, max_foot_height = 0.25, 0.1
    command_amplitude = np.array([1.5, 0.8, 1.2])  # Playground's command_config.a
    command_keep = np.array([0.9, 0.25, 0.5])  # command_config.b: probability a resampled axis is not zeroed

    def __init__(
        self,
        num_envs: int = 1,
        terrain: str = "flat",
        num_threads: int | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        noise_level: float = 1.0,
        pushes: bool | Mapping[str, tuple[float, float]] = False,
        randomize: bool | Mapping[str, Any] | None = None,
        command: tuple[float, float, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}.")
        if terrain not in TERRAIN_XML:
            raise ValueError(f"terrain must be one of {sorted(TERRAIN_XML)}, got {terrain!r}.")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}.")
        self.name = f"roboppo/Go1Joystick{terrain.capitalize()}Terrain-v1"
        self.num_envs, self.terrain, self.render_mode = num_envs, terrain, render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode, "render_fps": 1 / self.ctrl_dt}
        self.max_episode_steps = time_limit(max_episode_steps, 1000, self.name)
        self.noise_level = checked_noise(noise_level, self.name)
        self.pushes = checked_pushes(pushes, self.name)
        self.fixed_command = None if command is None else checked_command(command, self.name)
        self.model = self._load_model()
        self.num_threads = resolve_num_threads(num_threads, num_envs)
        self._find_ids()
        self._make_spaces()
        self._batch = batch_class()(self.model, nsim=num_envs, nthread=self.num_threads, persistent=True)
        self._batch.reset()
        self._reset_row = self._batch.state[0].copy()
        names = ("qpos", "qvel", "ctrl", "xfrc_applied", "sensordata", "site_xpos", "site_xmat", "actuator_force")
        (
            self._qpos,
            self._qvel,
            self._ctrl,
            self._xfrc,
            self._sensors,
            self._site_xpos,
            self._site_xmat,
            self._torque,
        ) = (self._batch.bind(name) for name in names)
        # every episode draws a kick schedule (the same draws with kicks on or off); kicks on apply it
        self.kicks = Kicks(self.pushes or PUSHES, self._xfrc, self.torso_id, self.torso_mass, self.ctrl_dt)
        ranges = dr.resolve(randomize, GO1_RANDOMIZATION, self.model, self.name)
        self.randomizer = dr.DomainRandomization(self._batch, self.model, ranges) if ranges else None
        self._rngs, self._seeds = (list(v) for v in zip(*(np_random() for _ in range(num_envs)), strict=True))
        self._episode_arrays()
        self._renderer: mujoco.Renderer | None = None
        self._needs_reset, self.closed = True, False

    # -- construction -----------------------------------------------------------------------------

    def _load_model(self) -> mujoco.MjModel:
        """Playground's scene with its task settings: the time step, PD gains (Kd as joint damping, as EnvPool)."""
        model = mujoco.MjModel.from_xml_path(
            str(playground_file("locomotion", "go1", "xmls", TERRAIN_XML[self.terrain]))
        )
        model.opt.timestep = self.sim_dt
        model.opt.ccd_iterations = 20
        model.dof_damping[6:] = self.kd
        model.actuator_gainprm[:, 0] = self.kp
        model.actuator_biasprm[:, 1] = -self.kp
        return model

    def _find_ids(self) -> None:
        model = self.model
        self.n_substeps = round(self.ctrl_dt / self.sim_dt)
        home = model.keyframe("home")
        self.init_qpos = home.qpos.copy()
        self.default_pose = home.qpos[7:].copy()
        lowers, uppers = model.jnt_range[1:].T
        self.soft_lowers = lowers * self.soft_joint_pos_limit_factor
        self.soft_uppers = uppers * self.soft_joint_pos_limit_factor
        self.torso_id = model.body("trunk").id
        self.torso_mass = float(model.body_subtreemass[self.torso_id])
        self.imu_site = model.site("imu").id
        self.feet_sites = np.array([model.site(name).id for name in FEET])

        def sensor(name: str) -> slice:
            adr = int(model.sensor_adr[model.sensor(name).id])
            return slice(adr, adr + int(model.sensor_dim[model.sensor(name).id]))

        self._sensor = {
            name: sensor(name)
            for name in ("gyro", "local_linvel", "accelerometer", "upvector", "global_linvel", "global_angvel")
        }
        self._foot_vel = np.array(
            [np.arange(sensor(f"{f}_global_linvel").start, sensor(f"{f}_global_linvel").stop) for f in FEET]
        )
        self._foot_floor = np.array([sensor(f"{f}_floor_found").start for f in FEET])

    def _make_spaces(self) -> None:
        self.single_observation_space = spaces.Dict(
            {
                "state": spaces.Box(-np.inf, np.inf, (48,), np.float64),
                "privileged_state": spaces.Box(-np.inf, np.inf, (123,), np.float64),
            }
        )
        self.single_action_space = spaces.Box(-1.0, 1.0, (self.model.nu,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    def _episode_arrays(self) -> None:
        n, nu = self.num_envs, self.model.nu
        self.command = np.zeros((n, 3))
        self.steps_until_next_cmd = np.zeros(n, dtype=np.int64)
        self.last_act = np.zeros((n, nu))
        self.feet_air_time = np.zeros((n, 4))
        self.last_contact = np.zeros((n, 4), dtype=bool)
        self.swing_peak = np.zeros((n, 4))
        self.steps = np.zeros(n, dtype=np.int64)
        self._autoreset = np.zeros(n, dtype=bool)

    # -- Gymnasium VectorEnv API ------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every copy (or those of ``options["reset_mask"]``); copy ``i`` is seeded with ``seed + i``."""
        self._check_open()
        seeds = (
            list(seed)
            if isinstance(seed, list | tuple)
            else [None if seed is None else seed + i for i in range(self.num_envs)]
        )
        if len(seeds) != self.num_envs:
            raise ValueError(f"{self.name}: reset(seed=list) needs {self.num_envs} seeds, got {len(seeds)}.")
        mask = reset_mask(options, self.num_envs, self.name, self._needs_reset)
        copies = np.arange(self.num_envs) if mask is None else np.flatnonzero(mask)
        for index in copies:
            if seeds[index] is not None:
                self._rngs[index], self._seeds[index] = np_random(seeds[index])
        self._reset_copies(copies)
        self._needs_reset = False
        obs = self._observe()
        info = self._info(self._reward_terms_zero())
        if mask is not None:
            info = scattered({k: v[copies] for k, v in info.items() if not k.startswith("_")}, copies, self.num_envs)
        return obs, info

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply position targets ``home + 0.5 * action`` for one control step; finished copies reset as
        ``autoreset_mode`` says."""
        self._check_open()
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: call reset() before step().")
        pending = (
            self._autoreset.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros(self.num_envs, bool)
        )
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            raise RuntimeError(
                f"{self.name}: copies {np.flatnonzero(self._autoreset).tolist()} finished their episodes; with "
                "autoreset_mode DISABLED reset them first: reset(options={'reset_mask': mask})."
            )
        actions = self._checked_actions(actions, pending)
        stepped = ~pending
        if self.pushes is not None:
            self.kicks.apply(stepped, self._rngs)
        self._ctrl[:] = self.default_pose + self.action_scale * actions
        if self.randomizer is not None:
            self._ctrl[:] += self.randomizer.pose_offset
        self._batch.step(stepped if pending.any() else None, nstep=self.n_substeps)
        reward, terminated, terms = self._after_physics(actions)
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps if self.max_episode_steps else np.zeros(self.num_envs, bool)
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
        obs = {
            key: np.where(np.isin(np.arange(self.num_envs), copies)[:, None], first[key], value)
            for key, value in obs.items()
        }
        fresh = self._info(self._reward_terms_zero())
        for key, value in fresh.items():
            if not key.startswith("_"):
                info[key] = info[key].copy()
                info[key][copies] = value[copies]
        return obs, info

    # -- episodes ---------------------------------------------------------------------------------

    def _reset_copies(self, copies: np.ndarray) -> None:
        """Playground's reset for ``copies``: home pose moved by U(-0.5, 0.5) m in x and y, turned by a yaw in
        U(-3.14, 3.14), base velocities U(-0.5, 0.5); then the kick schedule, the command and its countdown."""
        self._batch.state[copies] = self._reset_row
        for index in copies:
            rng = self._rngs[index]
            qpos = self.init_qpos.copy()
            qpos[0:2] += rng.uniform(-0.5, 0.5, size=2)
            yaw = rng.uniform(-3.14, 3.14)
            turned = np.empty(4)
            mujoco.mju_mulQuat(turned, qpos[3:7].copy(), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))
            qpos[3:7] = turned
            qvel = np.zeros(self.model.nv)
            qvel[0:6] = rng.uniform(-0.5, 0.5, size=6)
            self._qpos[index], self._qvel[index], self._ctrl[index] = qpos, qvel, self.default_pose
            self.kicks.schedule(index, rng)
            self.steps_until_next_cmd[index] = self._countdown(rng)
            self.command[index] = rng.uniform(-self.command_amplitude, self.command_amplitude)
        if self.fixed_command is not None:
            self.command[copies] = self.fixed_command
        if self.randomizer is not None:
            self.randomizer.draw(self._rngs, copies)
        for array in (self.last_act, self.feet_air_time, self.swing_peak, self.steps):
            array[copies] = 0
        self.last_contact[copies] = False
        self._autoreset[copies] = False
        self._batch.forward(copies)

    def _countdown(self, rng: np.random.Generator) -> int:
        """Control steps until the next command: an exponential time of mean 5 s."""
        return round(rng.exponential() * 5.0 / self.ctrl_dt)

    def _resample_commands(self, due: np.ndarray) -> None:
        """Playground's ``sample_command`` for the copies whose countdown ran out: each axis keeps its value with
        probability 1/2, else takes a new uniform value, zeroed with probability ``1 - command_keep``."""
        for index in np.flatnonzero(due):
            rng = self._rngs[index]
            new = rng.uniform(-self.command_amplitude, self.command_amplitude)
            keep_new = rng.random(3) < self.command_keep
            switch = rng.random(3) < 0.5
            if self.fixed_command is None:
                self.command[index] = np.where(switch, new * keep_new, self.command[index])
            self.steps_until_next_cmd[index] = self._countdown(rng)

    # -- one control step -------------------------------------------------------------------------

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Contacts, air times and swing peaks, termination, reward terms, then the commands that fall due."""
        contact = self._sensors[:, self._foot_floor] > 0
        first_contact = (self.feet_air_time > 0) & (contact | self.last_contact)
        self.feet_air_time += self.ctrl_dt
        self.swing_peak = np.maximum(self.swing_peak, self._site_xpos[:, self.feet_sites, 2])
        terminated = self._read("upvector")[:, 2] < 0
        terms = self._reward_terms(actions, first_contact, contact, terminated)
        reward = np.clip(sum(terms.values()) * self.ctrl_dt, 0.0, 10000.0)
        self._contact = contact
        self.steps_until_next_cmd -= 1
        self._resample_commands((self.steps_until_next_cmd <= 0) | terminated)
        return reward, terminated, terms

    def _end_step(self, actions: np.ndarray) -> None:
        self.last_act = actions.astype(np.float64)
        self.feet_air_time *= ~self._contact
        self.swing_peak *= ~self._contact
        self.last_contact = self._contact

    def _reward_terms(
        self, actions: np.ndarray, first_contact: np.ndarray, contact: np.ndarray, terminated: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Playground's reward terms, each times its scale."""
        command, local_linvel, gyro = self.command, self._read("local_linvel"), self._read("gyro")
        joints, joint_vel, torque = self._qpos[:, 7:], self._qvel[:, 6:], self._torque
        moving = np.linalg.norm(command, axis=1) > 0.01
        delta = joints - self.default_pose
        foot_vel_xy = self._sensors[:, self._foot_vel[:, :2]]
        foot_speed_sq = np.sum(foot_vel_xy**2, axis=-1)
        foot_z = self._site_xpos[:, self.feet_sites, 2]
        upvector = self._read("upvector")
        raw = {
            "tracking_lin_vel": np.exp(
                -np.sum((command[:, :2] - local_linvel[:, :2]) ** 2, axis=1) / self.tracking_sigma
            ),
            "tracking_ang_vel": np.exp(-((command[:, 2] - gyro[:, 2]) ** 2) / self.tracking_sigma),
            "lin_vel_z": self._read("global_linvel")[:, 2] ** 2,
            "ang_vel_xy": np.sum(self._read("global_angvel")[:, :2] ** 2, axis=1),
            "orientation": np.sum(upvector[:, :2] ** 2, axis=1),
            "dof_pos_limits": np.sum(
                -np.minimum(joints - self.soft_lowers, 0.0) + np.maximum(joints - self.soft_uppers, 0.0), axis=1
            ),
            "pose": np.exp(-np.sum(delta**2 * np.tile([1.0, 1.0, 0.1], 4), axis=1)),
            "termination": terminated.astype(np.float64),
            "stand_still": np.sum(np.abs(delta), axis=1) * ~moving,
            "torques": np.sqrt(np.sum(torque**2, axis=1)) + np.sum(np.abs(torque), axis=1),
            "action_rate": np.sum((actions - self.last_act) ** 2, axis=1),
            "energy": np.sum(np.abs(joint_vel) * np.abs(torque), axis=1),
            "feet_clearance": np.sum(np.abs(foot_z - self.max_foot_height) * foot_speed_sq**0.25, axis=1),
            "feet_height": np.sum((self.swing_peak / self.max_foot_height - 1.0) ** 2 * first_contact, axis=1) * moving,
            "feet_slip": np.sum(foot_speed_sq * contact, axis=1) * moving,
            "feet_air_time": np.sum((self.feet_air_time - 0.1) * first_contact, axis=1) * moving,
        }
        return {name: raw[name] * scale for name, scale in REWARD_SCALES.items()}

    def _reward_terms_zero(self) -> dict[str, np.ndarray]:
        return {name: np.zeros(self.num_envs) for name in REWARD_SCALES}

    def _read(self, sensor: str) -> np.ndarray:
        return self._sensors[:, self._sensor[sensor]]

    def _observe(self) -> dict[str, np.ndarray]:
        """``state`` (noisy, as the robot senses it) and ``privileged_state`` (the critic's view)."""
        gyro, linvel = self._read("gyro"), self._read("local_linvel")
        gravity = -self._site_xmat[:, self.imu_site, 6:9]  # world down in the IMU's frame
        joints, joint_vel = self._qpos[:, 7:] - self.default_pose, self._qvel[:, 6:]
        clean = [linvel, gyro, gravity, self._qpos[:, 7:], joint_vel]
        noisy = np.hstack(clean) + self._noise(sum(part.shape[1] for part in clean))
        noisy[:, 9:21] -= self.default_pose
        state = np.hstack([noisy, self.last_act, self.command])
        kick_on = self.kicks.on() if self.pushes is not None else np.zeros(self.num_envs, bool)
        privileged = np.hstack(
            [
                state, gyro, self._read("accelerometer"), gravity, linvel, self._read("global_angvel"),
                joints, joint_vel, self._torque, self.last_contact, self._sensors[:, self._foot_vel.ravel()],
                self.feet_air_time, self._xfrc[:, self.torso_id, :3], kick_on[:, None],
            ]
        )  # fmt: skip
        return {"state": state, "privileged_state": privileged}

    def _noise(self, width: int) -> np.ndarray:
        """Uniform noise in +-(noise_level * scale) for linvel, gyro, gravity, joint angles and velocities."""
        if self.noise_level == 0:
            return np.zeros((self.num_envs, width))
        scales = np.repeat(
            [NOISE_SCALES[k] for k in ("linvel", "gyro", "gravity", "joint_pos", "joint_vel")], [3, 3, 3, 12, 12]
        )
        draws = np.stack([rng.uniform(-1.0, 1.0, width) for rng in self._rngs])
        return draws * self.noise_level * scales

    def _info(self, terms: dict[str, np.ndarray]) -> dict[str, Any]:
        info = {f"reward_{name}": value for name, value in terms.items()}
        info |= {"command": self.command.copy(), "steps_until_next_cmd": self.steps_until_next_cmd.copy()}
        return with_masks(info, self.num_envs)

    # -- the rest of the VectorEnv API ------------------------------------------------------------

    # -- state, to continue a run exactly (roboppo-zoo train --resume) ----------------------------

    #: the per-copy arrays a step reads besides the physics
    EPISODE_ARRAYS = (
        "command", "steps_until_next_cmd", "last_act", "feet_air_time", "last_contact", "swing_peak", "steps",
        "_autoreset",
    )  # fmt: skip

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything the next ``step`` depends on: the physics rows, the episode arrays, each copy's generator and
        the drawn randomization."""
        arrays = {"physics": self._batch.state.copy()} | {
            name: getattr(self, name).copy() for name in self.EPISODE_ARRAYS
        }
        arrays |= self.kicks.get_state()
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
        for name in self.EPISODE_ARRAYS:
            getattr(self, name)[...] = arrays[name]
        self.kicks.set_state(arrays)
        for rng, state in zip(self._rngs, meta["rngs"], strict=True):
            rng.bit_generator.state = state
        if self.randomizer is not None:
            self.randomizer.restore({key: arrays[f"randomization_{key}"] for key in self.randomizer.values})
        self._needs_reset = bool(meta["needs_reset"])
        self._batch.forward()  # the sensors of the restored states (a step recomputes them before it reads them)

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
        """Put ``copies`` (all by default) in the state ``qpos [.., 19]``, ``qvel [.., 18]`` (an episode's start taken
        from elsewhere: a log, another simulator); returns the observations there."""
        self._check_open()
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        self._qpos[rows], self._qvel[rows] = qpos, qvel
        self._batch.forward(rows)
        return self._observe()

    def render(self) -> tuple[np.ndarray, ...] | None:  # type: ignore[override]
        """One frame per copy (``render_mode="rgb_array"``), from a camera tracking the torso."""
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
            frames.append(self._renderer.render())
        return tuple(frames)

    def close(self, **kwargs: Any) -> None:
        if self.closed:
            return
        if self._renderer is not None:
            self._renderer.close()
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


def make_vector(num_envs: int = 1, action_latency: int = 0, history: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gym.make_vec`` builds: the batch, wrapped for the kit's ``action_latency`` and ``history``
    (:mod:`roboppo_envs.kit`; the batch itself when neither is asked for)."""
    name = f"roboppo/Go1Joystick{str(kwargs.get('terrain', 'flat')).capitalize()}Terrain-v1"
    checked_kit(name, action_latency, history)
    return with_kit(Go1JoystickVectorEnv(num_envs, **kwargs), action_latency, history)
