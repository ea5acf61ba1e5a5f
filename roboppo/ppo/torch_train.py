"""PPO's update in PyTorch, on a rollout held as flat tensors, with little work per minibatch.

Same losses, early stopping (``target_kl``) and statistics as Stable-Baselines3's ``PPO.train``;
what changes is the bookkeeping around them:

- each epoch shuffles the rollout with one gather per tensor, and minibatches are views of
  the shuffled tensors (SB3 gathers and converts every minibatch); the shuffles and the entropy
  estimate's normal draws come from :func:`~roboppo.ppo.update.random_draws`, as in
  :mod:`roboppo.ppo.jax_train`, so both backends consume torch's generator alike;
- per-minibatch statistics stay tensors and are read once per rollout (SB3 calls ``.item()``
  five times per minibatch, a device sync each on a GPU);
- gradient clipping runs over all parameters at once (``foreach``).

Actions are pre-tanh and scored by :meth:`~roboppo.ppo.policies.TanhGaussianPolicy.evaluate_pre_tanh`.
With a :class:`~roboppo.ppo.update.Revaluation` (``recompute_advantage``), each epoch after the first
trains on advantages and returns recomputed with the value network as it is then.
"""

from __future__ import annotations

import torch as th

from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.ppo.update import Revaluation, RolloutBatch, UpdateSettings, UpdateStats, random_draws


def train(
    policy: TanhGaussianPolicy, batch: RolloutBatch, settings: UpdateSettings, revaluation: Revaluation | None = None
) -> UpdateStats:
    """``settings.n_epochs`` epochs of clipped-surrogate minibatch updates of ``policy`` on ``batch``.

    :param revaluation: when given, the advantages and returns of every epoch after the first are
        recomputed from the current value network (:func:`revalued`).
    """
    stats: list[th.Tensor] = []
    loss = th.zeros(())
    epochs, last_epoch_start, stopped = 0, 0, False
    n_samples, action_dim = batch.actions.shape
    orders, noise = random_draws(n_samples, settings.n_epochs, action_dim)
    for order, epoch_noise in zip(orders, noise, strict=True):
        if epochs and revaluation is not None:
            batch = revalued(policy, batch, revaluation)
        epochs, last_epoch_start = epochs + 1, len(stats)
        order = order.to(batch.observations.device)
        loss, stopped = _run_epoch(policy, batch, order, epoch_noise.to(order.device)[order], settings, stats)
        if stopped:
            break
    policy_loss, value_loss, entropy_loss, _, clip_fraction = th.stack(stats).mean(dim=0).tolist()
    approx_kl = th.stack(stats[last_epoch_start:])[:, 3].mean().item()
    stop_kl = stats[-1][3].item() if stopped else None
    return UpdateStats(policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction, loss.item(), epochs, stop_kl)


def revalued(policy: TanhGaussianPolicy, batch: RolloutBatch, revaluation: Revaluation) -> RolloutBatch:
    """``batch`` with the advantages and returns GAE gives under ``policy``'s value network as it is now."""
    with th.no_grad():
        values = policy.predict_values(batch.observations).flatten()
        last_values = policy.predict_values(revaluation.last_observations)
    advantages, returns = revaluation.advantages(values, last_values)
    return batch._replace(advantages=advantages, returns=returns)


def _run_epoch(
    policy: TanhGaussianPolicy,
    batch: RolloutBatch,
    order: th.Tensor,
    noise: th.Tensor,
    settings: UpdateSettings,
    stats: list[th.Tensor],
) -> tuple[th.Tensor, bool]:
    """One pass over the rollout in ``order`` (``noise`` already in that order).

    :return: the last loss and whether ``target_kl`` stopped training.
    """
    loss = th.zeros(())
    shuffled = [tensor[order].split(settings.batch_size) for tensor in batch]
    for *minibatch, minibatch_noise in zip(*shuffled, noise.split(settings.batch_size), strict=True):
        loss, minibatch_stats = _minibatch_loss(policy, RolloutBatch(*minibatch), minibatch_noise, settings)
        stats.append(minibatch_stats)
        if settings.target_kl is not None and minibatch_stats[3].item() > 1.5 * settings.target_kl:
            return loss, True
        policy.optimizer.zero_grad()
        loss.backward()
        th.nn.utils.clip_grad_norm_(policy.parameters(), settings.max_grad_norm, foreach=True)
        policy.optimizer.step()
    return loss, False


def _minibatch_loss(
    policy: TanhGaussianPolicy, minibatch: RolloutBatch, noise: th.Tensor, settings: UpdateSettings
) -> tuple[th.Tensor, th.Tensor]:
    """The PPO loss of one minibatch and its statistics (policy, value, entropy loss, approx KL, clip fraction)."""
    values, log_prob, entropy = policy.evaluate_pre_tanh(minibatch.observations, minibatch.actions, noise)
    values = values.flatten()
    advantages = minibatch.advantages
    if settings.normalize_advantage and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    log_ratio = log_prob - minibatch.old_log_prob
    ratio = th.exp(log_ratio)
    clip_range = settings.clip_range
    policy_loss = -th.min(advantages * ratio, advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)).mean()
    if settings.clip_range_vf is not None:
        change = th.clamp(values - minibatch.old_values, -settings.clip_range_vf, settings.clip_range_vf)
        values = minibatch.old_values + change
    value_loss = th.nn.functional.mse_loss(minibatch.returns, values)
    entropy_loss = -th.mean(entropy)
    loss = policy_loss + settings.ent_coef * entropy_loss + settings.vf_coef * value_loss
    with th.no_grad():
        approx_kl = th.mean((ratio - 1) - log_ratio)
        clip_fraction = th.mean((th.abs(ratio - 1) > clip_range).float())
        stats = th.stack([policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction])
    return loss, stats
