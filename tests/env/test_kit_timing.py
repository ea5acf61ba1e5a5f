"""The kit's timing options on the batched envs: observation history (against EnvPool's frame stack) and latency."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import roboppo_envs  # noqa: F401  (registers the ids)
from roboppo_envs.kit import ActionLatency, ObservationHistory
from roboppo_envs.playground.go1 import Go1JoystickVectorEnv
from tests.env.envpool_draws import go1_reset

envpool = pytest.importorskip("envpool")


def test_go1_history_is_envpools_frame_stack() -> None:
    n, frames, seed = 2, 3, 0
    theirs = envpool.make_gymnasium(
        "MuJoCoPlayground/Go1JoystickFlatTerrain-v1", num_envs=n, num_threads=1, seed=seed, noise_level=0.0,
        frame_stack=frames,
    )  # fmt: skip
    ours = gym.make_vec("roboppo/Go1JoystickFlatTerrain-v1", num_envs=n, noise_level=0.0, history=frames)
    assert isinstance(ours, ObservationHistory)
    assert ours.single_observation_space["state"].shape == (3, 48) == theirs.observation_space["state"].shape
    their_obs, their_info = theirs.reset()
    ours.reset(seed=1)
    batch = ours.unwrapped
    assert isinstance(batch, Go1JoystickVectorEnv)
    starts = [go1_reset(seed + i, batch.init_qpos, 18) for i in range(n)]
    qpos, qvel, command, _ = (np.array(v) for v in zip(*starts, strict=True))
    batch.set_command(command)
    batch.steps_until_next_cmd[:] = their_info["steps_until_next_cmd"]
    start = ours.set_robot_state(qpos, qvel)  # the history starts again from the state's frame
    np.testing.assert_allclose(start["state"], their_obs["state"], atol=1e-6)
    rng = np.random.default_rng(0)
    for step in range(20):
        actions = rng.uniform(-0.3, 0.3, size=(n, 12))
        their_obs, *_ = theirs.step(actions)
        obs, *_ = ours.step(actions)
        for key in obs:
            assert obs[key].shape == (n, frames, *batch.single_observation_space[key].shape)
            np.testing.assert_allclose(obs[key], their_obs[key], atol=1e-6, err_msg=f"step {step + 1} {key}")


def test_history_starts_each_episode_with_its_first_frame_repeated() -> None:
    envs = gym.make_vec("roboppo/Hopper-v5", num_envs=2, history=3, max_episode_steps=4, autoreset_mode="SameStep")
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 3, 11) and envs.observation_space.shape == (2, 3, 11)
    np.testing.assert_array_equal(obs[:, 0], obs[:, 2])
    frames = [obs[:, -1]]
    for _ in range(4):
        obs, _, _, truncated, info = envs.step(np.zeros((2, 3), dtype=np.float32))
        frames.append(info["final_obs"][:, -1] if truncated.any() else obs[:, -1])
    np.testing.assert_array_equal(info["final_obs"], np.stack(frames[-3:], axis=1))  # the old episode's last 3
    np.testing.assert_array_equal(obs[:, 0], obs[:, 2])  # the new one's first frame, repeated


def test_latency_delays_each_copys_actions_by_its_drawn_steps() -> None:
    n, steps = 6, 25
    late = gym.make_vec("roboppo/Go1JoystickFlatTerrain-v1", num_envs=n, noise_level=0.0, action_latency=2, history=2)
    plain = Go1JoystickVectorEnv(n, noise_level=0.0)
    late.reset(seed=3)
    plain.reset(seed=3)
    latency = late.env
    assert isinstance(latency, ActionLatency)
    delay = latency.delay.copy()
    assert set(delay) <= {0, 1, 2} and len(set(delay)) > 1  # drawn per copy
    rng = np.random.default_rng(1)
    chosen = [np.zeros((n, 12))] * 2
    for _ in range(steps):
        chosen.append(rng.uniform(-0.3, 0.3, size=(n, 12)))
        obs, *_ = late.step(chosen[-1])
        arrived = np.stack([chosen[-1 - d][i] for i, d in enumerate(delay)])
        expected, *_ = plain.step(arrived)
        np.testing.assert_array_equal(obs["privileged_state"][:, -1, 48:], expected["privileged_state"][:, 48:])


def test_latency_is_redrawn_when_an_episode_restarts() -> None:
    late = gym.make_vec("roboppo/Hopper-v5", num_envs=64, action_latency=3, history=3, max_episode_steps=2)
    late.reset(seed=0)
    before = late.env.delay.copy()
    for _ in range(3):  # truncated at step 2; NEXT_STEP resets at step 3
        late.step(np.zeros((64, 3), dtype=np.float32))
    assert not np.array_equal(before, late.env.delay)
    assert set(late.env.delay) == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"action_latency": 3, "history": 2}, "action_latency=3 is longer than the history kept (history=2 frames)"),
        ({"action_latency": -1}, "action_latency must be a whole number of control steps >= 0"),
        ({"history": 0}, "history must be a whole number of control steps >= 1"),
        ({"history": 1.5}, "history must be a whole number"),
    ],
)
def test_bad_timing_is_named(kwargs: dict, message: str) -> None:
    for env_id in ("roboppo/Go1JoystickFlatTerrain-v1", "roboppo/Walker2d-v5"):
        with pytest.raises(ValueError) as error:
            gym.make_vec(env_id, num_envs=1, **kwargs)
        assert message in str(error.value)
