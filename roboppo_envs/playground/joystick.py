"""What Playground's joystick (locomotion) tasks share: a velocity command, PD targets around home, an IMU.

A robot (:mod:`~roboppo_envs.playground.go1`, :mod:`~roboppo_envs.playground.berkeley_humanoid`)
subclasses :class:`JoystickVectorEnv`; beside :class:`~roboppo_envs.playground.base.PlaygroundVectorEnv`
this adds:

- control: position targets ``home + action_scale * action`` (plus a randomized PD-centre offset);
- the command ``(vx, vy, yaw_rate)`` of each copy: drawn by the robot, or fixed (``command=``) or steered
  (:meth:`~JoystickVectorEnv.set_command`);
- the IMU's readings, observation noise, the terrain, and frames captioned with the commanded and the
  achieved velocity.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any, ClassVar

import mujoco
import numpy as np
from gymnasium.vector import AutoresetMode

from roboppo_envs.playground.assets import playground_file
from roboppo_envs.playground.base import PlaygroundVectorEnv


class JoystickVectorEnv(PlaygroundVectorEnv):
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
    :param command: a fixed ``(vx, vy, yaw_rate)`` command for every copy and step (no sampling), one per copy
        (``[num_envs, 3]``), or None.
    :param render_mode: ``"rgb_array"`` for one frame per copy, or None.
    """

    #: the task's name (``roboppo/<task><Terrain>Terrain-v1``), its files and its settings
    task: ClassVar[str]
    asset_package: ClassVar[str]
    xml_folder: ClassVar[tuple[str, ...]]
    terrain_xml: ClassVar[dict[str, str]]
    torso: ClassVar[str]
    action_scale: ClassVar[float] = 0.5
    episode_arrays = ("command", *PlaygroundVectorEnv.episode_arrays)
    bound_fields = {**PlaygroundVectorEnv.bound_fields, "_xfrc": "xfrc_applied", "_torque": "actuator_force"}
    _xfrc: np.ndarray
    _torque: np.ndarray
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
        if terrain not in self.terrain_xml:
            raise ValueError(f"terrain must be one of {sorted(self.terrain_xml)}, got {terrain!r}.")
        self.terrain = terrain
        name = self._env_name()
        self.noise_level = checked_noise(noise_level, name)
        fixed = None if command is None else checked_command(command, name, rows=num_envs)
        self.fixed_command = None if fixed is None else np.broadcast_to(fixed, (num_envs, 3)).copy()
        self._pushes_asked = self.pushes_default if pushes is None else pushes
        super().__init__(num_envs, num_threads, max_episode_steps, autoreset_mode, randomize, render_mode)  # type: ignore[arg-type]

    def _env_name(self) -> str:
        return f"roboppo/{self.task}{self.terrain.capitalize()}Terrain-v1"

    def _xml_path(self) -> pathlib.Path:
        return playground_file(*self.xml_folder, self.terrain_xml[self.terrain], package=self.asset_package)

    def _find_ids(self) -> None:
        model = self.model
        home = model.keyframe("home")
        self.init_qpos = home.qpos.copy()
        self.default_pose = home.qpos[7:].copy()
        self.torso_id = model.body(self.torso).id
        self.torso_mass = float(model.body_subtreemass[self.torso_id])
        self.imu_site = model.site("imu").id
        sensors = ("gyro", "local_linvel", "accelerometer", "upvector", "global_linvel", "global_angvel")
        self._sensor = {name: self._sensor_slice(name) for name in sensors}

    def _setup_task(self) -> None:
        self.command = np.zeros((self.num_envs, 3))
        self._setup_robot(self._pushes_asked)

    def _setup_robot(self, pushes: bool | Mapping[str, Any]) -> None:
        """The robot's ids, per-copy arrays and pushes."""
        raise NotImplementedError

    def _after_resets(self, copies: np.ndarray) -> None:
        if self.fixed_command is not None:
            self.command[copies] = self.fixed_command[copies]

    def _apply_actions(self, actions: np.ndarray) -> None:
        """Position targets ``home + action_scale * action`` (plus the randomized PD-centre offset)."""
        self._ctrl[:] = self.default_pose + self.action_scale * actions
        if self.randomizer is not None:
            self._ctrl[:] += self.randomizer.pose_offset

    def deployment(self) -> dict[str, Any]:
        """Beside the task's facts, the PD controller's: targets ``home_pose + action_scale * action`` (rad), gains
        Kp (N m/rad) and Kd (N m s/rad) per joint in action order."""
        return super().deployment() | {
            "action": "position targets home_pose + action_scale * action, for PD motors",
            "home_pose": self.default_pose.tolist(), "action_scale": self.action_scale,
            "kp": self.model.actuator_gainprm[:, 0].tolist(),
            "kd": (self.model.dof_damping[self.model.jnt_dofadr[self.model.actuator_trnid[:, 0]]]
                   - self.model.actuator_biasprm[:, 2]).tolist(),  # joint damping and any actuator velocity gain
        }  # fmt: skip

    def _extra_info(self) -> dict[str, np.ndarray]:
        return {"command": self.command.copy()}

    # -- readings ---------------------------------------------------------------------------------

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

    # -- the joystick -----------------------------------------------------------------------------

    def set_command(self, command: Any, copies: Any = None) -> None:
        """Command ``(vx, vy, yaw_rate)`` (or one per copy, ``[copies, 3]``) for ``copies`` (all by default) from now
        until the next resample (a joystick: build the env with ``command=`` to hold one for good)."""
        rows = np.arange(self.num_envs) if copies is None else np.asarray(copies)
        self.command[rows] = checked_command(command, self.name, rows=len(rows))

    def _camera(self) -> mujoco.MjvCamera:
        """A camera tracking the torso."""
        camera = mujoco.MjvCamera()
        camera.type, camera.trackbodyid = mujoco.mjtCamera.mjCAMERA_TRACKING, self.torso_id
        camera.distance, camera.elevation, camera.azimuth = 1.5, -20.0, 120.0
        return camera

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
