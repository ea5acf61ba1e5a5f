"""What one rollout step needs beyond SB3's loop: the policy's actions, truncation bootstraps, the flat batch.

:meth:`roboppo.PPO.collect_rollouts` is SB3's loop (every env through SB3's ``VecEnv``
interface and its wrappers; callbacks see SB3's ``locals``) with three changes, each a
function here:

- :func:`policy_actions`: roboppo's tanh-Gaussian policy samples pre-tanh actions (in one lean
  NumPy call, :mod:`roboppo.ppo.sampler`, where :mod:`roboppo.ppo.fast_paths` allows it) and the
  buffer stores them (exact log-probabilities); any other policy goes through ``policy.forward``
  and SB3's clipping, unchanged;
- :func:`truncation_values`: one batched value call for all copies cut by a time limit
  (SB3 makes one call per copy);
- :func:`flat_batch`: the stored rollout as flat tensors for roboppo's update backends.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.running_mean_std import RunningMeanStd

from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.sampler import RolloutSampler
from roboppo.ppo.update import RolloutBatch


class PolicyActions(NamedTuple):
    """One rollout step's policy output: ``stored`` goes to the buffer, ``env`` to ``env.step``."""

    stored: np.ndarray
    env: np.ndarray
    values: th.Tensor
    log_probs: th.Tensor


def policy_actions(
    policy: ActorCriticPolicy,
    obs: th.Tensor | dict[str, th.Tensor],
    pre_tanh: bool,
    sampler: RolloutSampler | None = None,
) -> PolicyActions:
    """Sample actions for a batch of observations (call under ``th.no_grad()``).

    With ``pre_tanh`` (roboppo's policy on its pre-tanh path, as
    :func:`~roboppo.ppo.fast_paths.sampler_choice` decided for this rollout) pre-tanh actions are
    stored and their squashed env-space image is sent, from ``sampler`` (this rollout's
    :class:`~roboppo.ppo.sampler.RolloutSampler`) while it applies, else from ``rollout_actions``.
    Every other policy is SB3's: ``policy(obs)``, then for Box actions ``unscale_action``
    (squashing policies) or clipping to the bounds.
    """
    if pre_tanh:
        assert isinstance(obs, th.Tensor) and isinstance(policy, TanhGaussianPolicy)
        sampled = None if sampler is None else sampler(obs.numpy())  # a CPU policy: obs views the env's array
        if sampled is not None:
            return PolicyActions(*sampled)
        pre_tanh_actions, env_actions, values, log_probs = policy.rollout_actions(obs)
        return PolicyActions(pre_tanh_actions.cpu().numpy(), env_actions.cpu().numpy(), values, log_probs)
    actions, values, log_probs = policy(obs)
    stored = actions.cpu().numpy()
    sent = stored
    if isinstance(policy.action_space, spaces.Box):
        if policy.squash_output:
            sent = policy.unscale_action(stored)
        else:
            sent = np.clip(stored, policy.action_space.low, policy.action_space.high)
    return PolicyActions(stored, sent, values, log_probs)


def truncation_values(policy: ActorCriticPolicy, infos: list[dict[str, Any]], ended: np.ndarray) -> np.ndarray:
    """``V(terminal_observation)`` for each copy in ``ended`` whose episode a time limit cut, else 0.

    :param infos: the step's info dicts (SB3's ``terminal_observation`` / ``TimeLimit.truncated``).
    :param ended: indices of the copies whose episode ended at this step.
    :return: ``[len(infos)]`` float32, zero where no bootstrap applies.
    """
    values = np.zeros(len(infos), np.float32)
    cut = [i for i in ended if infos[i].get("terminal_observation") is not None and infos[i].get("TimeLimit.truncated")]
    if not cut:
        return values
    terminal = [infos[i]["terminal_observation"] for i in cut]
    if isinstance(terminal[0], dict):
        batch: Any = {key: np.stack([obs[key] for obs in terminal]) for key in terminal[0]}
    else:
        batch = np.stack(terminal)
    with th.no_grad():
        tensor, _ = policy.obs_to_tensor(batch)
        values[cut] = policy.predict_values(tensor).flatten().cpu().numpy()  # type: ignore[arg-type]
    return values


def flat_batch(buffer: RolloutBuffer, device: th.device) -> RolloutBatch:
    """The buffer's rollout as flat tensors on ``device`` (views of the buffer's arrays on the CPU)."""
    total = buffer.buffer_size * buffer.n_envs

    def flat(array: np.ndarray, *shape: int) -> th.Tensor:
        return th.as_tensor(array.reshape(total, *shape), device=device)

    return RolloutBatch(
        observations=flat(buffer.observations, *buffer.obs_shape),  # type: ignore[arg-type]
        actions=flat(buffer.actions, buffer.action_dim),
        old_values=flat(buffer.values),
        old_log_prob=flat(buffer.log_probs),
        advantages=flat(buffer.advantages),
        returns=flat(buffer.returns),
    )


def normalized_rewards(
    rewards: np.ndarray, dones: np.ndarray, gamma: float, return_rms: RunningMeanStd, returns: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``normalize_reward``: the rewards divided by the running standard deviation of the discounted return
    and clipped to +-10, as SB3's ``VecNormalize`` computes them (float32, as it returns them).

    :param returns: each copy's running discounted return so far (None: start at 0, as ``VecNormalize.reset``).
    :return: the normalized rewards and the running returns after this step (0 where an episode ended).
    """
    if returns is None or returns.shape != rewards.shape:
        returns = np.zeros(rewards.shape)
    returns = returns * gamma + rewards
    return_rms.update(returns)
    returns[dones] = 0.0
    normalized = np.clip(rewards / np.sqrt(return_rms.var + 1e-8), -10.0, 10.0)
    return normalized.astype(np.float32), returns
