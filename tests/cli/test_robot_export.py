"""``roboppo-zoo export`` of a robot's run: the actor alone, and what the robot's control loop needs in the file."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import gymnasium as gym
import numpy as np
import pytest

from roboppo import PPO
from roboppo.cli import main

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "go1_control_loop.py"


def test_a_go1_export_holds_its_controller_and_observation_layout(tmp_path: pathlib.Path) -> None:
    keys = "policy_kwargs={actor_keys: [state], critic_keys: [privileged_state], net_arch: [32]}"
    assert main([
        "train", "--env", "roboppo/Go1JoystickFlatTerrain-v1", "-n", "128", "--n-envs", "2", "-p", "n_steps=64",
        "-p", "batch_size=64", "-p", keys, "--env-kwargs", "history:2", "--eval-freq", "off", "--save-freq", "off",
        "-f", str(tmp_path), "--no-progress-bar",
    ]) == 0  # fmt: skip
    (run,) = tmp_path.iterdir()
    out = tmp_path / "go1.onnx"
    assert main(["export", "--run", str(run), "--out", str(out)]) == 0
    meta = {entry.key: json.loads(entry.value) for entry in onnx.load(str(out)).metadata_props}
    assert meta["control_period_s"] == 0.02 and meta["history"] == 2 and meta["action_scale"] == 0.5
    assert meta["joint_names"][:3] == ["FR_hip_joint", "FR_thigh_joint", "FR_calf_joint"]
    np.testing.assert_allclose(meta["home_pose"], [0.1, 0.9, -1.8] * 2 + [0.1, 0.9, -1.8] * 2, atol=0.21)
    assert meta["kp"] == [35.0] * 12 and meta["kd"] == [0.5] * 12
    assert meta["observation_layout"] == [["state", 0, 96]]  # the actor's key alone: 2 frames of 48
    model = PPO.load(run / "model.zip")
    full = np.random.default_rng(0).normal(size=(16, model.observation_space.shape[0])).astype(np.float32)
    columns = list(model.policy.actor_columns)
    session = onnxruntime.InferenceSession(str(out))
    actions = session.run(None, {"observation": full[:, columns]})[0]
    expected, _ = model.predict(full, deterministic=True)
    np.testing.assert_allclose(actions, expected, atol=1e-5)

    # the example control loop (ONNX Runtime and MuJoCo only) acts as the env does, from the same state and command
    spec = importlib.util.spec_from_file_location("go1_control_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    loop = example.Controller(out)
    command = np.array([0.8, 0.0, 0.3])
    envs = gym.make_vec("roboppo/Go1JoystickFlatTerrain-v1", num_envs=1, history=2, noise_level=0.0, command=command)
    obs, _ = envs.reset(seed=5)
    base = envs.unwrapped
    loop.reset(base._qpos[0].copy(), base._qvel[0].copy())
    for step in range(30):
        theirs = session.run(None, {"observation": obs["state"].reshape(1, -1).astype(np.float32)})[0]
        mine = loop.act(command)
        np.testing.assert_allclose(mine, theirs[0], atol=1e-5, err_msg=f"step {step}")
        obs, _, terminated, _, _ = envs.step(theirs)
        assert not terminated.any()
    np.testing.assert_allclose(loop.data.qpos, base._qpos[0], atol=1e-4)
