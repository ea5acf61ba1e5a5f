"""Rollouts that stay on the env's device: torch tensors from step to minibatch.

Used by :class:`roboppo.PPO` when the env offers ``step_torch`` (roboppo's batched vector
envs: the MuJoCo robots stepped by threads on the CPU, the Brax robots by JAX on the CPU or
a GPU): one batched policy call and one env call per vector step, no per-env Python work,
results written into preallocated tensors, GAE and minibatch shuffling in torch. On a GPU the
only host transfers happen once per rollout (episode statistics, the finiteness check, SB3's
explained-variance log).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import BaseBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import RolloutBufferSamples

if TYPE_CHECKING:
    from roboppo.ppo.ppo import PPO


class DeviceRolloutBuffer(BaseBuffer):
    """Rollout storage as torch tensors ``[n_steps, n_envs, ...]`` on one device.

    Same constructor and ``get`` as SB3's ``RolloutBuffer``, so SB3's ``PPO.train`` uses it as is.
    ``values`` and ``returns`` are also published as NumPy arrays after GAE, for SB3's
    explained-variance log.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        gae_lambda: float = 1.0,
        gamma: float = 0.99,
        n_envs: int = 1,
    ) -> None:
        super().__init__(buffer_size, observation_space, action_space, device, n_envs=n_envs)
        self.gae_lambda, self.gamma = gae_lambda, gamma
        self.reset()

    def reset(self) -> None:
        def zeros(*shape: int) -> th.Tensor:
            return th.zeros((self.buffer_size, self.n_envs, *shape), dtype=th.float32, device=self.device)

        self.observations = zeros(*self.obs_shape)
        self.actions = zeros(self.action_dim)
        self.rewards, self.episode_starts = zeros(), zeros()
        self.value_tensor, self.log_probs = zeros(), zeros()
        self.advantages, self.return_tensor = zeros(), zeros()
        self.values: np.ndarray = np.zeros((self.buffer_size, self.n_envs), np.float32)
        self.returns: np.ndarray = np.zeros((self.buffer_size, self.n_envs), np.float32)
        super().reset()

    def add(  # type: ignore[override]
        self,
        obs: th.Tensor,
        action: th.Tensor,
        reward: th.Tensor,
        episode_start: th.Tensor,
        value: th.Tensor,
        log_prob: th.Tensor,
    ) -> None:
        """Store one vector step; every argument is ``[n_envs, ...]`` on the buffer's device."""
        self.observations[self.pos] = obs
        self.actions[self.pos] = action.reshape(self.n_envs, self.action_dim)
        self.rewards[self.pos] = reward
        self.episode_starts[self.pos] = episode_start
        self.value_tensor[self.pos] = value.flatten()
        self.log_probs[self.pos] = log_prob
        self.pos += 1
        self.full = self.pos == self.buffer_size

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: th.Tensor) -> None:
        """GAE(lambda) over the stored rollout; ``dones`` ``[n_envs]`` marks episodes that ended at the last step."""
        next_value = last_values.flatten()
        next_non_terminal = 1.0 - dones.float()
        advantage = th.zeros(self.n_envs, device=self.device)
        for step in reversed(range(self.buffer_size)):
            delta = self.rewards[step] + self.gamma * next_value * next_non_terminal - self.value_tensor[step]
            advantage = delta + self.gamma * self.gae_lambda * next_non_terminal * advantage
            self.advantages[step] = advantage
            next_value = self.value_tensor[step]
            next_non_terminal = 1.0 - self.episode_starts[step]
        self.return_tensor = self.advantages + self.value_tensor
        self.values = self.value_tensor.cpu().numpy()
        self.returns = self.return_tensor.cpu().numpy()

    def flat_tensors(self) -> list[th.Tensor]:
        """Observations, actions, values, log-probs, advantages and returns, each ``[n_steps * n_envs, ...]``."""
        total = self.buffer_size * self.n_envs
        return [
            self.observations.reshape(total, *self.obs_shape),
            self.actions.reshape(total, self.action_dim),
            self.value_tensor.reshape(total),
            self.log_probs.reshape(total),
            self.advantages.reshape(total),
            self.return_tensor.reshape(total),
        ]

    def get(self, batch_size: int | None = None) -> Generator[RolloutBufferSamples, None, None]:  # type: ignore[override]
        """Shuffled minibatches of ``batch_size`` samples (all samples when None), drawn on the device."""
        total = self.buffer_size * self.n_envs
        batch_size = batch_size or total
        flat = self.flat_tensors()
        order = th.randperm(total, device=self.device)
        for start in range(0, total, batch_size):
            index = order[start : start + batch_size]
            yield RolloutBufferSamples(*(tensor[index] for tensor in flat))

    def _get_samples(self, batch_inds: np.ndarray, env: Any = None) -> RolloutBufferSamples:  # pragma: no cover
        raise NotImplementedError("DeviceRolloutBuffer draws its minibatches in get().")


def collect_on_device(model: PPO, vector_env: Any, callback: BaseCallback, n_rollout_steps: int) -> bool:
    """Fill ``model.rollout_buffer`` (a :class:`DeviceRolloutBuffer`) from ``vector_env.step_torch``.

    Mirrors SB3's ``collect_rollouts``: pre-tanh actions and their log-probs are stored,
    rewards of time-limit truncations are bootstrapped with ``gamma * V(final_obs)``,
    callbacks see every step. Returns False when a callback stops training.
    """
    buffer = model.rollout_buffer
    assert isinstance(buffer, DeviceRolloutBuffer)
    policy, device, n_envs = model.policy, model.device, vector_env.num_envs
    last_obs = model._last_obs
    obs = last_obs.to(device) if isinstance(last_obs, th.Tensor) else th.tensor(last_obs, device=device)
    episode_starts = th.as_tensor(model._last_episode_starts, dtype=th.float32, device=device)
    finished_returns = th.full((n_rollout_steps, n_envs), th.nan, device=device)
    finished_lengths = th.zeros((n_rollout_steps, n_envs), device=device)
    policy.set_training_mode(False)
    buffer.reset()
    callback.on_rollout_start()
    dones = th.zeros(n_envs, device=device)
    for step in range(n_rollout_steps):
        with th.no_grad():
            actions, values, log_probs = policy.forward_rollout(obs)
        out = vector_env.step_torch(policy.squash_to_box(actions))
        rewards = out.reward.to(device).float()
        dones = (out.terminated | out.truncated).to(device)
        _track_episodes(model, rewards, dones, finished_returns[step], finished_lengths[step])
        rewards = _learning_rewards(model, rewards, out, device)
        model.num_timesteps += n_envs
        callback.update_locals({"dones": dones, "infos": [], "rewards": rewards, "step": step})
        if not callback.on_step():
            return False
        buffer.add(obs, actions, rewards, episode_starts, values, log_probs)
        obs, episode_starts = out.obs.to(device), dones.float()
    vector_env.check_finite()
    with th.no_grad():
        last_values = policy.predict_values(obs)
    buffer.compute_returns_and_advantage(last_values, dones)
    model._last_obs, model._last_episode_starts = obs, episode_starts  # type: ignore[assignment]
    _record_episodes(model, finished_returns, finished_lengths)
    callback.update_locals({"dones": dones})
    callback.on_rollout_end()
    return True


def _track_episodes(
    model: PPO, rewards: th.Tensor, dones: th.Tensor, finished_returns: th.Tensor, finished_lengths: th.Tensor
) -> None:
    """Add a step to each copy's running return and length; write out and restart the finished ones.

    ``finished_returns`` (NaN-filled) and ``finished_lengths`` (zeros) are this step's rows. On the
    CPU, steps where no episode ends (most of them) skip the writes.
    """
    assert model._episode_returns is not None, "collect_rollouts sets up the running returns"
    model._episode_returns += rewards
    model._episode_lengths += 1
    if dones.device.type == "cpu" and not bool(dones.any()):
        return
    finished_returns.copy_(th.where(dones, model._episode_returns, th.nan))
    finished_lengths.copy_(th.where(dones, model._episode_lengths, 0.0))
    model._episode_returns *= ~dones
    model._episode_lengths *= ~dones


def _learning_rewards(model: PPO, rewards: th.Tensor, out: Any, device: th.device) -> th.Tensor:
    """``reward_scale * r``, plus ``gamma * V(final_obs)`` where the time limit cut an episode (not where it ended).

    Env output on the CPU is checked first, so the value net runs only on steps with a truncation;
    on a GPU it runs every step, which costs less than a device sync.
    """
    if out.truncated.device.type == "cpu" and not bool(out.truncated.any()):
        return model.reward_scale * rewards
    bootstrap = (out.truncated & ~out.terminated).to(device)
    with th.no_grad():
        final_values = model.policy.predict_values(out.final_obs.to(device)).flatten()
    return model.reward_scale * rewards + model.gamma * final_values * bootstrap.float()


def _record_episodes(model: PPO, returns: th.Tensor, lengths: th.Tensor) -> None:
    """Push the rollout's finished episodes into SB3's ``ep_info_buffer`` (one host transfer)."""
    assert model.ep_info_buffer is not None
    mask = ~th.isnan(returns)
    for episode_return, length in zip(returns[mask].tolist(), lengths[mask].tolist(), strict=True):
        model.ep_info_buffer.extend([{"r": episode_return, "l": int(length)}])
