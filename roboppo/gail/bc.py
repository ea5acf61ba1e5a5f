"""Behaviour cloning on imitation's ``BC``, with roboppo's policy: a baseline for GAIL and its warm start.

imitation's BC maximizes the log-likelihood of the expert's actions through the policy's
``evaluate_actions``, which roboppo's tanh-Gaussian policy scores in env-space actions (actions on
the Box's edges are clamped just inside it). The policy's in-policy observation normalization is
set from the expert's states first, so the cloned model is one self-contained ``model.zip``.
"""

from __future__ import annotations

import numpy as np
import torch as th
from imitation.algorithms import bc
from imitation.data import rollout, types
from imitation.util import logger as imitation_logger

from roboppo.gail.demos import Demonstrations
from roboppo.ppo import PPO
from roboppo.ppo.policies import TanhGaussianPolicy


def train_bc(
    model: PPO,
    demonstrations: Demonstrations,
    *,
    n_batches: int = 10_000,
    batch_size: int = 64,
    ent_weight: float = 1e-3,
    seed: int = 0,
    logger: imitation_logger.HierarchicalLogger | None = None,
    progress_bar: bool = False,
) -> PPO:
    """Fit ``model``'s policy to the demonstrations by behaviour cloning; returns ``model``.

    :param n_batches: gradient steps (minibatches of ``batch_size`` expert transitions).
    :param ent_weight: imitation's entropy bonus (keeps the action std from collapsing to 0).
    """
    transitions = rollout.flatten_trajectories(demonstrations.trajectories)
    if isinstance(model.policy, TanhGaussianPolicy):  # a stock SB3 policy has no normalizer to set
        model.policy.update_obs_normalizer(types.assert_not_dictobs(transitions.obs))
    trainer = bc.BC(
        observation_space=model.observation_space,
        action_space=model.action_space,
        rng=np.random.default_rng(seed),
        policy=model.policy,
        demonstrations=transitions,
        batch_size=min(batch_size, len(transitions)),
        ent_weight=ent_weight,
        device=model.device,
        custom_logger=logger,
    )
    trainer.train(n_batches=n_batches, progress_bar=progress_bar, log_interval=max(n_batches // 20, 1))
    return model


def reset_action_std(model: PPO, log_std: float) -> None:
    """Set the policy's state-independent log std back to ``log_std`` (BC shrinks it to the expert's
    near-deterministic actions; a generator that starts there would not explore)."""
    with th.no_grad():
        model.policy.log_std.fill_(log_std)
