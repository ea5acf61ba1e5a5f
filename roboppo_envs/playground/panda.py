"""MuJoCo Playground's Panda pick-and-lift task, batched: ``roboppo/PandaPickCube-v1``.

A Franka Emika Panda arm grasps a cube on the floor and carries it to a target in the air (a
mocap marker), as in Playground's ``manipulation/franka_emika_panda/pick.py``.

- Control at ``ctrl_dt`` = 0.02 s (4 substeps of 0.005 s): each action moves the 8 position targets
  (7 arm joints and the gripper) by ``0.04 * action``, clipped to the actuators' ranges.
- A reset puts the arm at ``home``, the cube at its home position moved by U(-0.2, 0.2) m in x and y,
  and the target above a point moved likewise, U(0.2, 0.4) m higher than the cube.
- ``state`` (66): joint positions and velocities (arm, fingers, the cube's free joint), the gripper
  site's position and the last two rows of its orientation, the cube's orientation rows, the cube
  from the gripper, the target from the cube, the target's orientation minus the cube's, and each
  position target minus its joint's angle.
- Four reward terms, unscaled in ``info["reward_<term>"]`` as EnvPool gives them: ``gripper_box``
  (``1 - tanh(5 |cube - gripper|)``), ``box_target`` (``1 - tanh(5 (0.9 |target - cube| + 0.1 rotation
  error))``, once the gripper has come within 12 mm of the cube), ``no_floor_collision`` (1 while neither
  finger pad nor the hand touches the floor) and ``robot_target_qpos`` (``1 - tanh`` of the arm's
  distance from home). The reward is their sum with Playground's scales (4, 8, 0.25, 0.3).
- An episode ends when the cube leaves the 1 m box around the origin (or falls through the floor), and
  is truncated after 150 steps (3 s).

Playground has no domain randomization for this task; ``randomize=True`` draws
:data:`PANDA_RANDOMIZATION` (link and cube masses, rotor inertia, position gains), a mapping others.
"""

from __future__ import annotations

import pathlib
from typing import Any

import mujoco
import numpy as np
from gymnasium.vector import VectorEnv

from roboppo_envs import randomize as dr
from roboppo_envs.kit import checked_kit, with_kit
from roboppo_envs.playground.assets import playground_file
from roboppo_envs.playground.base import PlaygroundVectorEnv, Terms

ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
FINGERS = ("finger_joint1", "finger_joint2")
#: the reward terms and their scales (Playground's ``default_config``), in the order they are summed
REWARD_SCALES: dict[str, float] = {
    "gripper_box": 4.0,
    "box_target": 8.0,
    "no_floor_collision": 0.25,
    "robot_target_qpos": 0.3,
}
FLOOR_SENSORS = ("left_finger_pad_floor_found", "right_finger_pad_floor_found", "hand_capsule_floor_found")
#: ``randomize=True`` for the Panda (Playground draws none for this task): each link's and the cube's mass, the arm
#: joints' rotor inertia and the arm's position gains
PANDA_RANDOMIZATION: dr.Ranges = {
    "link_mass_scale": ((0.9, 1.1), (*(f"link{i}" for i in range(1, 8)), "hand", "box")),
    "armature_scale": ((1.0, 1.05), ARM_JOINTS),
    "kp_scale": ((0.9, 1.1), ARM_JOINTS),
}


class PandaPickCubeVectorEnv(PlaygroundVectorEnv):
    """``num_envs`` Panda arms lifting a cube to a target (keywords: :class:`PlaygroundVectorEnv`)."""

    sim_dt = 0.005
    episode_length = 150
    action_scale = 0.04
    obs_dims = {"state": 66}
    reward_scales = REWARD_SCALES
    default_randomization = PANDA_RANDOMIZATION
    episode_arrays = ("target", "reached_box", *PlaygroundVectorEnv.episode_arrays)
    bound_fields = {
        **PlaygroundVectorEnv.bound_fields, "_xpos": "xpos", "_xmat": "xmat", "_mocap_pos": "mocap_pos",
        "_mocap_quat": "mocap_quat",
    }  # fmt: skip
    _xpos: np.ndarray
    _xmat: np.ndarray
    _mocap_pos: np.ndarray
    _mocap_quat: np.ndarray
    reach_distance = 0.012  # the gripper within this of the cube has reached it (m)
    box_range, target_height = 0.2, (0.2, 0.4)

    def _env_name(self) -> str:
        return "roboppo/PandaPickCube-v1"

    def _xml_path(self) -> pathlib.Path:
        return playground_file("manipulation", "franka_emika_panda", "xmls", "mjx_single_cube.xml")

    def _find_ids(self) -> None:
        model = self.model
        home = model.keyframe("home")
        self.init_qpos, self.init_ctrl = home.qpos.copy(), home.ctrl.copy()
        self.arm_qpos = np.array([model.jnt_qposadr[model.joint(name).id] for name in ARM_JOINTS])
        self.target_qpos = np.array([model.jnt_qposadr[model.joint(name).id] for name in (*ARM_JOINTS, FINGERS[0])])
        self.init_arm = self.init_qpos[self.arm_qpos]
        self.gripper_site = model.site("gripper").id
        self.box_id = model.body("box").id
        self.box_qpos = int(model.jnt_qposadr[model.body_jntadr[self.box_id]])
        self.mocap_id = int(model.body_mocapid[model.body("mocap_target").id])
        self.floor_sensors = np.array([self._sensor_slice(name).start for name in FLOOR_SENSORS])
        self.ctrl_low, self.ctrl_high = model.actuator_ctrlrange.T.copy()

    def _setup_task(self) -> None:
        self.target = np.zeros((self.num_envs, 3))
        self.reached_box = np.zeros(self.num_envs)
        self.out_of_bounds = np.zeros(self.num_envs, dtype=bool)

    def _check_randomization(self, ranges: dr.Ranges) -> None:
        if "default_pose_offset" in ranges:
            raise ValueError(
                f"{self.name}: randomize['default_pose_offset'] offsets PD targets around a home pose, but the Panda's "
                "actions move its targets step by step from where they are; leave it out (a reset's home pose is "
                "the keyframe's)."
            )

    # -- episodes ---------------------------------------------------------------------------------

    def _reset_copy(self, index: int, rng: np.random.Generator) -> None:
        """Playground's reset: the arm at home, the cube and the target moved as the module says."""
        qpos = self.init_qpos.copy()
        box_home = self.init_qpos[self.box_qpos : self.box_qpos + 3]
        box_x, target_x, box_y, target_y = rng.uniform(-self.box_range, self.box_range, size=4)
        qpos[self.box_qpos : self.box_qpos + 2] = box_home[:2] + np.array([box_x, box_y])
        target = box_home + np.array([target_x, target_y, rng.uniform(*self.target_height)])
        self._qpos[index], self._qvel[index], self._ctrl[index] = qpos, 0.0, self.init_ctrl
        self._mocap_pos[index], self._mocap_quat[index] = 0.0, (1.0, 0.0, 0.0, 0.0)
        self.target[index] = self._mocap_pos[index, self.mocap_id] = target
        self.reached_box[index] = 0.0
        self.out_of_bounds[index] = False

    def set_target(self, target: Any, copies: Any = None) -> dict[str, np.ndarray]:
        """Move the target of ``copies`` (all by default) to ``target`` (m, world frame; one, or one per copy);
        returns the observations there."""
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        values = np.asarray(target, dtype=np.float64)
        if values.shape not in ((3,), (len(rows), 3)) or not np.isfinite(values).all():
            raise ValueError(f"{self.name}: a target is (x, y, z) in m, three finite numbers; got {target!r}.")
        self.target[rows] = values
        self._mocap_pos[rows, self.mocap_id] = values
        self._batch.forward(rows)
        return self._observe()

    def deployment(self) -> dict[str, Any]:
        """Beside the task's facts, the actions' meaning: each target moves by ``action_scale * action``."""
        return super().deployment() | {
            "action": "each position target moves by action_scale * action, clipped to ctrl_range",
            "action_scale": self.action_scale, "home_ctrl": self.init_ctrl.tolist(),
            "ctrl_range": self.model.actuator_ctrlrange.tolist(), "kp": self.model.actuator_gainprm[:, 0].tolist(),
        }  # fmt: skip

    # -- one control step -------------------------------------------------------------------------

    def _apply_actions(self, actions: np.ndarray) -> None:
        """Each position target moved by ``action_scale * action``, within its actuator's range."""
        self._ctrl[:] = np.clip(self._ctrl + self.action_scale * actions, self.ctrl_low, self.ctrl_high)

    def _after_physics(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, Terms]:
        """Reward terms (unscaled), the reward, and the end of episodes whose cube left the workspace."""
        box = self._xpos[:, self.box_id]
        gripper_err = np.linalg.norm(box - self._site_xpos[:, self.gripper_site], axis=1)
        self.reached_box = np.maximum(self.reached_box, gripper_err < self.reach_distance)
        position_err = np.linalg.norm(self.target - box, axis=1)
        rotation_err = np.linalg.norm(self._target_rows() - self._xmat[:, self.box_id, :6], axis=1)
        arm_err = np.linalg.norm(self._qpos[:, self.arm_qpos] - self.init_arm, axis=1)
        terms = {
            "gripper_box": 1.0 - np.tanh(5.0 * gripper_err),
            "box_target": (1.0 - np.tanh(5.0 * (0.9 * position_err + 0.1 * rotation_err))) * self.reached_box,
            "no_floor_collision": (~(self._sensors[:, self.floor_sensors] > 0).any(axis=1)).astype(np.float64),
            "robot_target_qpos": 1.0 - np.tanh(arm_err),
        }
        reward = np.clip(sum(terms[name] * scale for name, scale in self.reward_scales.items()), -1e4, 1e4)
        self.out_of_bounds = (np.abs(box) > 1.0).any(axis=1) | (box[:, 2] < 0.0)
        finite = np.isfinite(self._qpos).all(axis=1) & np.isfinite(self._qvel).all(axis=1)
        return reward, self.out_of_bounds | ~finite, terms

    def _target_rows(self) -> np.ndarray:
        """The first two rows of the target's orientation matrix, ``[num_envs, 6]``."""
        quat = self._mocap_quat[:, self.mocap_id]
        rows = np.empty((self.num_envs, 9))
        for index in range(self.num_envs):
            mujoco.mju_quat2Mat(rows[index], quat[index])
        return rows[:, :6]

    def _observe(self) -> dict[str, np.ndarray]:
        box, box_rows = self._xpos[:, self.box_id], self._xmat[:, self.box_id]
        gripper = self._site_xpos[:, self.gripper_site]
        state = np.hstack(
            [
                self._qpos, self._qvel, gripper, self._site_xmat[:, self.gripper_site, 3:9], box_rows[:, 3:9],
                box - gripper, self.target - box, self._target_rows() - box_rows[:, :6],
                self._ctrl - self._qpos[:, self.target_qpos],
            ]
        )  # fmt: skip
        return {"state": state}

    def _extra_info(self) -> Terms:
        return {"out_of_bounds": self.out_of_bounds.astype(np.float64), "reached_box": self.reached_box.copy()}

    def _camera(self) -> mujoco.MjvCamera:
        """A camera on the workspace, from the front left."""
        camera = mujoco.MjvCamera()
        camera.lookat[:] = (0.5, 0.0, 0.15)
        camera.distance, camera.elevation, camera.azimuth = 1.6, -25.0, 150.0
        return camera

    def _captioned(self, frame: np.ndarray, index: int) -> np.ndarray:
        """``frame`` with the cube's distance to the target written on it."""
        from PIL import Image, ImageDraw

        distance = np.linalg.norm(self.target[index] - self._xpos[index, self.box_id])
        image = Image.fromarray(frame)
        ImageDraw.Draw(image).text((8, 8), f"cube to target {distance:.3f} m", fill=(200, 0, 0))
        return np.asarray(image)


def make_vector(num_envs: int = 1, action_latency: int = 0, history: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gym.make_vec`` builds: the batch, wrapped for the kit's ``action_latency`` and ``history``."""
    checked_kit("roboppo/PandaPickCube-v1", action_latency, history)
    return with_kit(PandaPickCubeVectorEnv(num_envs, **kwargs), action_latency, history)
