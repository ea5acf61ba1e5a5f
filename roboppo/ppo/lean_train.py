"""PPO's gradient phase on a rollout held as torch tensors, with little work per minibatch.

Same losses, schedules, early stopping (``target_kl``) and log keys as Stable-Baselines3's
``PPO.train``; what changes is the bookkeeping around them:

- each epoch shuffles the rollout with one gather per tensor, and minibatches are views of
  the shuffled tensors (SB3 gathers and converts every minibatch); the permutations of all
  epochs are drawn first, so the JAX loop of :mod:`roboppo.ppo.jax_train` takes the same
  minibatches under the same seed;
- per-minibatch statistics stay tensors and are read once per rollout (SB3 calls ``.item()``
  five times per minibatch, a device sync each on a GPU);
- with ``ent_coef == 0`` the entropy is computed for the log only, outside the autograd graph;
- gradient clipping runs over all parameters at once (``foreach``).

Used by :class:`roboppo.PPO` with its :class:`~roboppo.ppo.device_rollout.DeviceRolloutBuffer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch as th
from stable_baselines3.common.utils import explained_variance

if TYPE_CHECKING:
    from roboppo.ppo.ppo import PPO


def train_on_tensors(model: PPO) -> None:
    """Run ``model.n_epochs`` epochs of clipped-surrogate updates on ``model.rollout_buffer``."""
    policy = model.policy
    policy.set_training_mode(True)
    model._update_learning_rate(policy.optimizer)
    progress = model._current_progress_remaining
    clip_range = model.clip_range(progress)  # type: ignore[operator]
    clip_range_vf = model.clip_range_vf(progress) if model.clip_range_vf is not None else None  # type: ignore[operator]
    flat = model.rollout_buffer.flat_tensors()  # type: ignore[attr-defined]
    stats: list[th.Tensor] = []
    orders = [th.randperm(flat[0].shape[0], device=flat[0].device) for _ in range(model.n_epochs)]
    loss = th.zeros(())
    for order in orders:
        loss, stopped = _run_epoch(model, flat, order, stats, clip_range, clip_range_vf)
        model._n_updates += 1
        if stopped:
            break
    log_train_stats(model, th.stack(stats).mean(dim=0).tolist(), loss.item(), clip_range, clip_range_vf)


def _run_epoch(
    model: PPO,
    flat: list[th.Tensor],
    order: th.Tensor,
    stats: list[th.Tensor],
    clip_range: float,
    clip_range_vf: float | None,
) -> tuple[th.Tensor, bool]:
    """One pass over the rollout in ``order``; returns the last loss and whether ``target_kl`` stopped training."""
    policy = model.policy
    loss = th.zeros(())
    for minibatch in zip(*(tensor[order].split(model.batch_size) for tensor in flat), strict=True):
        loss, minibatch_stats = _minibatch_loss(model, minibatch, clip_range, clip_range_vf)
        stats.append(minibatch_stats)
        if model.target_kl is not None and minibatch_stats[3].item() > 1.5 * model.target_kl:
            return loss, True
        policy.optimizer.zero_grad()
        loss.backward()
        th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm, foreach=True)
        policy.optimizer.step()
    return loss, False


def _minibatch_loss(
    model: PPO, minibatch: tuple[th.Tensor, ...], clip_range: float, clip_range_vf: float | None
) -> tuple[th.Tensor, th.Tensor]:
    """The PPO loss of one minibatch and its statistics (policy, value, entropy loss, approx KL, clip fraction)."""
    obs, actions, old_values, old_log_prob, advantages, returns = minibatch
    values, log_prob, entropy = _evaluate(model, obs, actions)
    if model.normalize_advantage and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - old_log_prob
    ratio = th.exp(log_ratio)
    clipped_ratio = th.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -th.min(advantages * ratio, advantages * clipped_ratio).mean()
    if clip_range_vf is not None:
        values = old_values + th.clamp(values - old_values, -clip_range_vf, clip_range_vf)
    value_loss = th.nn.functional.mse_loss(returns, values)
    entropy_loss = -th.mean(-log_prob) if entropy is None else -th.mean(entropy)
    loss = policy_loss + model.ent_coef * entropy_loss + model.vf_coef * value_loss
    with th.no_grad():
        approx_kl = th.mean((ratio - 1) - log_ratio)
        clip_fraction = th.mean((th.abs(ratio - 1) > clip_range).float())
        stats = th.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction])
    return loss, stats


def _evaluate(model: PPO, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
    """``policy.evaluate_actions``, with the entropy kept out of the graph when ``ent_coef`` is 0."""
    policy = model.policy
    if model.ent_coef != 0.0 or not policy.share_features_extractor:
        values, log_prob, entropy = policy.evaluate_actions(obs, actions)
        return values.flatten(), log_prob, entropy
    latent_pi, latent_vf = policy.mlp_extractor(policy.extract_features(obs))
    distribution = policy._get_action_dist_from_latent(latent_pi)
    with th.no_grad():
        entropy = distribution.entropy()
    return policy.value_net(latent_vf).flatten(), distribution.log_prob(actions), entropy


def log_train_stats(
    model: PPO, means: list[float], loss: float, clip_range: float, clip_range_vf: float | None
) -> None:
    """Record SB3's ``train/*`` keys from the rollout's mean minibatch statistics and last loss."""
    buffer = model.rollout_buffer
    policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction = means
    explained_var = explained_variance(buffer.values.flatten(), buffer.returns.flatten())
    model.logger.record("train/entropy_loss", entropy_loss)
    model.logger.record("train/policy_gradient_loss", policy_loss)
    model.logger.record("train/value_loss", value_loss)
    model.logger.record("train/approx_kl", approx_kl)
    model.logger.record("train/clip_fraction", clip_fraction)
    model.logger.record("train/loss", loss)
    model.logger.record("train/explained_variance", explained_var)
    if hasattr(model.policy, "log_std"):
        model.logger.record("train/std", th.exp(model.policy.log_std).mean().item())
    model.logger.record("train/n_updates", model._n_updates, exclude="tensorboard")
    model.logger.record("train/clip_range", clip_range)
    if clip_range_vf is not None:
        model.logger.record("train/clip_range_vf", clip_range_vf)
