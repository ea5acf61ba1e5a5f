"""Domain randomization on the v5 suite: the drawn physics is what Gymnasium's own env simulates with those values."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import roboppo_envs  # noqa: F401  (registers the ids)
from roboppo_envs.mujoco.vector_env import MujocoVectorEnv

FIELDS = ("body_mass", "body_ipos", "dof_armature", "geom_friction", "actuator_gainprm", "actuator_biasprm")


@pytest.mark.parametrize("task", ["Hopper", "Ant", "Walker2d"])
def test_a_randomized_copy_is_gymnasiums_env_with_the_drawn_values(task: str) -> None:
    ours = gym.make_vec(f"roboppo/{task}-v5", num_envs=2, randomize=True)
    assert isinstance(ours, MujocoVectorEnv) and ours.randomizer is not None
    obs, _ = ours.reset(seed=3)
    theirs = gym.make(f"{task}-v5")
    first, _ = theirs.reset(seed=4)  # copy 1 is seeded 3 + 1
    np.testing.assert_array_equal(obs[1], first)  # the draws come after the initial state
    drawn, model = ours._batch.get_model(1), theirs.unwrapped.model
    assert not np.array_equal(drawn.body_mass, model.body_mass)
    for name in FIELDS:
        getattr(model, name)[...] = getattr(drawn, name)
    rng = np.random.default_rng(0)
    for step in range(30):
        actions = rng.uniform(-1, 1, size=ours.action_space.shape).astype(np.float32)
        obs, reward, terminated, *_ = ours.step(actions)
        their_obs, their_reward, their_terminated, *_ = theirs.step(actions[1])
        np.testing.assert_allclose(obs[1], their_obs, rtol=1e-10, atol=1e-10, err_msg=f"step {step + 1}")
        assert reward[1] == pytest.approx(their_reward, rel=1e-10, abs=1e-10)
        if terminated[1] or their_terminated:
            assert terminated[1] == their_terminated
            break


@pytest.mark.parametrize("task", ["Hopper", "Ant"])
def test_randomization_at_nominal_values_is_bit_identical_to_none(task: str) -> None:
    plain = MujocoVectorEnv(3, task=task)
    friction = float(plain.model.geom_friction[plain.model.geom("floor").id, 0])
    nominal = {
        "link_mass_scale": (1.0, 1.0), "armature_scale": (1.0, 1.0), "torso_com_offset": (0.0, 0.0),
        "motor_strength": (1.0, 1.0), "floor_friction": (friction, friction),
    }  # fmt: skip
    drawn = MujocoVectorEnv(3, task=task, randomize=nominal)
    np.testing.assert_array_equal(plain.reset(seed=0)[0], drawn.reset(seed=0)[0])
    rng = np.random.default_rng(1)
    for _ in range(40):  # the first episodes (a new one draws its state after the copy's randomization draws)
        actions = rng.uniform(-1, 1, size=plain.action_space.shape).astype(np.float32)
        (obs, reward, terminated, *_), (twin, twin_reward, *_) = plain.step(actions), drawn.step(actions)
        np.testing.assert_array_equal(obs, twin)
        np.testing.assert_array_equal(reward, twin_reward)
        if terminated.any():
            break


def test_each_reset_redraws_and_a_saved_state_keeps_the_draws() -> None:
    env = MujocoVectorEnv(4, task="Ant", randomize={"torso_added_mass": (0.5, 2.0)}, max_episode_steps=5)
    env.reset(seed=0)
    first = [copy["torso_added_mass"][0] for copy in env.get_attr("randomization")]
    assert len(set(first)) == 4 and all(0.5 <= value <= 2.0 for value in first)
    arrays, meta = env.get_state()
    twin = MujocoVectorEnv(4, task="Ant", randomize={"torso_added_mass": (0.5, 2.0)}, max_episode_steps=5)
    twin.set_state(arrays, meta)
    actions = np.zeros((4, 8), dtype=np.float32)
    for _ in range(6):  # past the time limit: every copy resets and draws again
        obs, *_ = env.step(actions)
        twin_obs, *_ = twin.step(actions)
        np.testing.assert_array_equal(obs, twin_obs)
    assert all(copy["torso_added_mass"][0] not in first for copy in env.get_attr("randomization"))


def test_pd_options_are_refused_for_torque_motors() -> None:
    with pytest.raises(ValueError, match=r"needs position-controlled joints .* randomize 'motor_strength'"):
        MujocoVectorEnv(1, task="Hopper", randomize={"kp_scale": (0.9, 1.1)})
    with pytest.raises(ValueError, match="names bodies \\['tail'\\] that the model lacks; its bodies are world"):
        MujocoVectorEnv(1, task="Hopper", randomize={"link_mass_scale": {"range": (0.9, 1.1), "names": ["tail"]}})


def test_kicks_on_the_suite_push_the_torso_and_are_kept_in_the_saved_state() -> None:
    pushes = {"kick_wait_times": (0.1, 0.1), "kick_durations": (0.15, 0.15), "velocity_kick": (2.0, 2.0)}
    kicked, calm = MujocoVectorEnv(2, task="Ant", pushes=pushes), MujocoVectorEnv(2, task="Ant")
    np.testing.assert_array_equal(kicked.reset(seed=0)[0], calm.reset(seed=0)[0])  # schedules drawn after the state
    actions = np.zeros((2, 8), dtype=np.float32)
    xfrc = kicked._batch.bind("xfrc_applied")
    forces = []
    for _ in range(3):
        kicked.step(actions)
        calm.step(actions)
        forces.append(np.linalg.norm(xfrc[:, 1, :3], axis=-1))
    twin = MujocoVectorEnv(2, task="Ant", pushes=pushes)
    twin.set_state(*kicked.get_state())
    for _ in range(5):
        obs, *_ = kicked.step(actions)
        forces.append(np.linalg.norm(xfrc[:, 1, :3], axis=-1))
        np.testing.assert_array_equal(twin.step(actions)[0], obs)  # the kick schedule and progress were saved
        calm_obs, *_ = calm.step(actions)
    peak = 0.5 * kicked.torso_mass * 2.0 / 0.15  # the half-sine's peak force, N
    assert 0.5 * peak < np.max(forces) <= peak
    assert not np.array_equal(obs, calm_obs)  # the kicked torso moved
