"""The Panda pick-and-lift task beyond its equality with EnvPool: resets, the grasp terms, the kit, bad input."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from roboppo_envs.playground.panda import PANDA_RANDOMIZATION, PandaPickCubeVectorEnv


def test_reset_draws_the_cube_and_the_target_in_playgrounds_ranges() -> None:
    env = PandaPickCubeVectorEnv(64)
    obs, _ = env.reset(seed=0)
    home = env.init_qpos[env.box_qpos : env.box_qpos + 3]
    cube = env._qpos[:, env.box_qpos : env.box_qpos + 3]
    assert (np.abs(cube[:, :2] - home[:2]) <= 0.2).all() and np.allclose(cube[:, 2], home[2])
    assert (np.abs(env.target[:, :2] - home[:2]) <= 0.2).all()
    assert ((env.target[:, 2] - home[2] >= 0.2) & (env.target[:, 2] - home[2] <= 0.4)).all()
    assert cube[:, 0].std() > 0.08  # U(-0.2, 0.2) has a spread of 0.115
    np.testing.assert_allclose(obs["state"][:, 49:52], env.target - cube, atol=1e-12)  # the target from the cube
    np.testing.assert_array_equal(env._mocap_pos[:, env.mocap_id], env.target)  # the marker shows it
    again, _ = PandaPickCubeVectorEnv(64).reset(seed=0)
    np.testing.assert_array_equal(again["state"], obs["state"])


def test_the_grasp_terms_follow_the_gripper_to_the_cube() -> None:
    env = PandaPickCubeVectorEnv(2)
    env.reset(seed=0)
    pickup = env.model.keyframe("pickup")  # Playground's keyframe: the gripper 17 mm from the cube
    env.set_robot_state(np.tile(pickup.qpos, (2, 1)), np.zeros((2, env.model.nv)))
    env._ctrl[:] = pickup.ctrl
    env.set_target(pickup.qpos[env.box_qpos : env.box_qpos + 3] + np.array([0.0, 0.0, 0.05]))
    _, reward, terminated, _, info = env.step(np.zeros((2, 8)))
    gripper = env._site_xpos[:, env.gripper_site]
    distance = np.linalg.norm(env._xpos[:, env.box_id] - gripper, axis=1)
    np.testing.assert_allclose(info["reward_gripper_box"], 1 - np.tanh(5 * distance))
    assert (info["reward_gripper_box"] > 0.85).all() and not terminated.any()
    env.reached_box[:] = 1.0  # as if the gripper had come within 12 mm: the target's term opens
    _, reward_after, _, _, info = env.step(np.zeros((2, 8)))
    cube = env._xpos[:, env.box_id]
    target_rows = np.empty(9)
    mujoco.mju_quat2Mat(target_rows, env._mocap_quat[0, env.mocap_id])
    rotation_err = np.linalg.norm(target_rows[:6] - env._xmat[:, env.box_id, :6], axis=1)
    expected = 1 - np.tanh(5 * (0.9 * np.linalg.norm(env.target - cube, axis=1) + 0.1 * rotation_err))
    np.testing.assert_allclose(info["reward_box_target"], expected)
    assert (expected > 0.1).all() and (reward_after > reward + 8 * 0.1 - 0.05).all()


def test_a_cube_leaving_the_workspace_ends_the_episode() -> None:
    env = PandaPickCubeVectorEnv(2, autoreset_mode="SameStep")
    env.reset(seed=0)
    qpos = env._qpos.copy()
    qpos[1, env.box_qpos] = 1.5  # copy 1's cube beyond x = 1 m
    env.set_robot_state(qpos, np.zeros((2, env.model.nv)))
    _, _, terminated, truncated, info = env.step(np.zeros((2, 8)))
    assert terminated.tolist() == [False, True] and not truncated.any()
    assert info["final_info"]["out_of_bounds"][1] == 1.0


def test_actions_move_the_targets_step_by_step_within_their_ranges() -> None:
    env = PandaPickCubeVectorEnv(1, max_episode_steps=-1)
    env.reset(seed=0)
    start = env._ctrl.copy()
    env.step(np.full((1, 8), 0.5))
    np.testing.assert_allclose(env._ctrl, np.minimum(start + 0.02, env.ctrl_high))
    for _ in range(200):
        env.step(np.ones((1, 8)))
    np.testing.assert_array_equal(env._ctrl[0], env.ctrl_high)


def test_randomize_true_draws_the_arms_masses_and_gains_per_copy() -> None:
    env = PandaPickCubeVectorEnv(3, randomize=True)
    env.reset(seed=0)
    drawn = env.get_attr("randomization")
    assert set(drawn[0]) >= set(PANDA_RANDOMIZATION) and drawn[0]["kp_scale"][0] != drawn[1]["kp_scale"][0]
    low, high = PANDA_RANDOMIZATION["kp_scale"][0]
    assert all(low <= scale <= high for copy in drawn for scale in np.ravel(copy["kp_scale"]))
    models = [env._batch.get_model(i) for i in range(3)]
    kp = np.array([m.actuator_gainprm[0, 0] for m in models])
    assert len(set(kp.tolist())) == 3 and ((kp >= 1000 * low - 1e-9) & (kp <= 1000 * high + 1e-9)).all()
    masses = np.array([m.body_mass[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "box")] for m in models])
    assert len(set(masses.tolist())) == 3


def test_state_saved_mid_episode_continues_exactly() -> None:
    env = PandaPickCubeVectorEnv(2, randomize=True)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        env.step(rng.uniform(-1, 1, (2, 8)))
    arrays, meta = env.get_state()
    actions = rng.uniform(-1, 1, (10, 2, 8))
    first = [env.step(a)[0]["state"] for a in actions]
    other = PandaPickCubeVectorEnv(2, randomize=True)
    other.reset(seed=99)
    other.set_state(arrays, meta)
    second = [other.step(a)[0]["state"] for a in actions]
    np.testing.assert_array_equal(np.array(first), np.array(second))


def test_bad_settings_get_errors_that_name_the_fix() -> None:
    with pytest.raises(ValueError, match=r"default_pose_offset.*step by step"):
        PandaPickCubeVectorEnv(1, randomize={"default_pose_offset": (-0.05, 0.05)})
    with pytest.raises(ValueError, match=r"link_mass_scale.*gripper_base"):
        PandaPickCubeVectorEnv(1, randomize={"link_mass_scale": {"range": (0.9, 1.1), "names": ["gripper_base"]}})
    env = PandaPickCubeVectorEnv(1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="a target is \\(x, y, z\\)"):
        env.set_target([0.5, 0.0])


def test_frames_show_the_cube_to_target_distance() -> None:
    env = PandaPickCubeVectorEnv(1, render_mode="rgb_array")
    env.reset(seed=0)
    (frame,) = env.render()  # type: ignore[misc]
    assert frame.shape == (480, 640, 3)
    red = (frame[:20, :, 0] > 150) & (frame[:20, :, 1] < 60)
    assert red.sum() > 30
