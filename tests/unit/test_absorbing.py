"""The absorbing state (DAC): indicator, padding of terminated episodes, and the value bootstrap."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from imitation.data import rollout, types
from imitation.rewards.reward_nets import BasicRewardNet
from stable_baselines3.common.vec_env import DummyVecEnv

from roboppo.gail.horizon import (
    AbsorbingBootstrap,
    AbsorbingReplayBuffer,
    AbsorbingRewardNet,
    absorbing_fraction,
    absorbing_logit,
    absorbing_state,
    add_absorbing,
    expert_transitions,
    generator_terminations,
)


def trajectory(n: int, terminal: bool, start: float = 1.0) -> types.Trajectory:
    obs = start + np.arange((n + 1) * 2, dtype=np.float32).reshape(n + 1, 2)
    return types.Trajectory(obs, np.full((n, 1), 0.5, np.float32), None, terminal)


def test_a_terminated_expert_episode_ends_in_the_absorbing_state_and_a_truncated_one_does_not() -> None:
    flat = expert_transitions([trajectory(3, terminal=True), trajectory(2, terminal=False, start=100.0)])
    absorbing = absorbing_state(2)
    np.testing.assert_array_equal(absorbing, [0, 0, 1])
    assert len(flat.obs) == 3 + 1 + 2  # one absorbing sample, after the terminated episode only
    np.testing.assert_array_equal(flat.obs[:, -1], [0, 0, 0, 1, 0, 0])  # the indicator
    np.testing.assert_array_equal(flat.obs[3], absorbing)
    np.testing.assert_array_equal(flat.acts[3], [0.0])  # the fixed absorbing action
    np.testing.assert_array_equal(flat.next_obs[2], absorbing)  # the terminating step leads into it
    np.testing.assert_array_equal(flat.next_obs[5, :2], [104.0, 105.0])  # the truncated one keeps its last state
    np.testing.assert_array_equal(flat.dones, [False, False, False, True, False, False])
    assert flat.infos[3] == {"absorbing": True}
    np.testing.assert_array_equal(flat.obs[:3, :2], trajectory(3, True).obs[:3])  # real states are unchanged


def test_generator_samples_terminated_by_the_env_get_the_absorbing_state_and_time_limits_do_not() -> None:
    trajectories = [trajectory(2, True), trajectory(2, True, start=50.0), trajectory(2, False, start=80.0)]
    flat = rollout.flatten_trajectories(trajectories)  # imitation marks every finished rollout terminal
    infos = np.array([{}, {"TimeLimit.truncated": False}, {}, {"TimeLimit.truncated": True}, {}, {}])
    flat = types.Transitions(flat.obs, flat.acts, infos, flat.next_obs, flat.dones)
    np.testing.assert_array_equal(generator_terminations(flat), [False, True, False, False, False, False])
    buffer = AbsorbingReplayBuffer(100, gym.spaces.Box(-np.inf, np.inf, (2,)), gym.spaces.Box(-1, 1, (1,)))
    buffer.store(flat)
    assert buffer.size() == 7
    stored = buffer.sample(1000)
    assert stored.obs.shape[1] == 3 and (stored.obs[:, -1] == 1).any()
    assert np.isin(stored.obs[stored.obs[:, -1] == 1, :2], 0).all()


def test_add_absorbing_handles_a_terminated_last_row_and_no_termination() -> None:
    flat = rollout.flatten_trajectories([trajectory(2, True)])
    padded = add_absorbing(flat, np.array([False, True]))
    assert len(padded.obs) == 3 and padded.obs[-1, -1] == 1
    unchanged = add_absorbing(flat, np.array([False, False]))
    assert len(unchanged.obs) == 2 and not unchanged.obs[:, -1].any()


class EndsAt(gym.Env):
    """Terminates (or is truncated) at step 3 with reward 1 per step."""

    observation_space = gym.spaces.Box(-1, 1, (1,))
    action_space = gym.spaces.Box(-1, 1, (1,))

    def __init__(self, truncate: bool) -> None:
        self.truncate, self.t = truncate, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        end = self.t == 3
        return np.zeros(1, np.float32), 1.0, end and not self.truncate, end and self.truncate, {}


def test_the_bootstrap_adds_the_absorbing_value_to_terminating_steps_only() -> None:
    venv = AbsorbingBootstrap(DummyVecEnv([lambda: EndsAt(False), lambda: EndsAt(True)]), 42.0)
    venv.reset()
    rewards = [venv.step(np.zeros((2, 1), np.float32))[1] for _ in range(3)]
    np.testing.assert_array_equal(rewards, [[1, 1], [1, 1], [43, 1]])


def test_the_reward_net_uses_the_absorbing_logit_on_the_absorbing_state_only() -> None:
    inner = BasicRewardNet(gym.spaces.Box(-np.inf, np.inf, (2,)), gym.spaces.Box(-1, 1, (1,)))
    net = AbsorbingRewardNet(inner)
    assert net.observation_space.shape == (3,)
    net.absorbing_logit.fill_(absorbing_logit(absorbing_fraction(0, 999), absorbing_fraction(99, 999)))
    assert net.absorbing_logit.item() == pytest.approx(np.log(0.5 / 1000) - np.log(99.5 / 1000))
    states = th.tensor([[0.3, -0.2, 0.0], [0.0, 0.0, 1.0]])
    actions = th.tensor([[0.5], [0.0]])
    out = net(states, actions, states, th.zeros(2))
    expected_real = inner(states[:1, :2], actions[:1], states[:1, :2], th.zeros(1))
    th.testing.assert_close(out[0], expected_real[0])
    assert out[1].item() == pytest.approx(net.absorbing_logit.item())
