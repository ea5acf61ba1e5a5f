"""DeviceRolloutBuffer computes the same GAE as SB3's RolloutBuffer and yields every sample once."""

from __future__ import annotations

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer

from roboppo.ppo.device_rollout import DeviceRolloutBuffer

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Box(-1, 1, (2,), np.float32)


def test_gae_matches_stable_baselines3(rng: np.random.Generator) -> None:
    steps, envs = 16, 4
    ours = DeviceRolloutBuffer(steps, OBS, ACT, "cpu", gae_lambda=0.9, gamma=0.97, n_envs=envs)
    theirs = RolloutBuffer(steps, OBS, ACT, "cpu", gae_lambda=0.9, gamma=0.97, n_envs=envs)
    for _ in range(steps):
        obs = rng.normal(size=(envs, 3)).astype(np.float32)
        action = rng.normal(size=(envs, 2)).astype(np.float32)
        reward = rng.normal(size=envs).astype(np.float32)
        start = rng.random(envs) < 0.2
        value = rng.normal(size=(envs, 1)).astype(np.float32)
        log_prob = rng.normal(size=envs).astype(np.float32)
        theirs.add(obs, action, reward, start, th.as_tensor(value), th.as_tensor(log_prob))
        ours.add(*(th.as_tensor(x, dtype=th.float32) for x in (obs, action, reward, start, value, log_prob)))
    last_values, dones = rng.normal(size=(envs, 1)).astype(np.float32), rng.random(envs) < 0.5
    theirs.compute_returns_and_advantage(th.as_tensor(last_values), dones)
    ours.compute_returns_and_advantage(th.as_tensor(last_values), th.as_tensor(dones))
    np.testing.assert_allclose(ours.advantages.numpy(), theirs.advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.returns, theirs.returns, rtol=1e-5, atol=1e-5)


def test_minibatches_cover_the_rollout_once() -> None:
    buffer = DeviceRolloutBuffer(8, OBS, ACT, "cpu", n_envs=3)
    for step in range(8):
        obs = th.arange(3, dtype=th.float32)[:, None].repeat(1, 3) + 10 * step
        buffer.add(obs, th.zeros(3, 2), th.zeros(3), th.zeros(3), th.zeros(3, 1), th.zeros(3))
    buffer.compute_returns_and_advantage(th.zeros(3, 1), th.zeros(3))
    batches = list(buffer.get(5))
    assert [len(b.observations) for b in batches] == [5, 5, 5, 5, 4]
    seen = th.cat([b.observations[:, 0] for b in batches]).sort().values
    th.testing.assert_close(seen, (th.arange(3)[None, :] + 10 * th.arange(8)[:, None]).flatten().float().sort().values)
