"""What the policy samples with, and what its weights were trained with: one owner for both.

PPO folds each rollout's observations into the observation statistics *after* the gradient steps
on it, so between an update and the next rollout the policy holds newer statistics than its
weights have seen. With ``overlap_update`` the weights differ too: the next rollout samples with
the weights from before the update that runs beside it. :class:`Pairing` keeps the other pair:

- *sampling* (during ``learn``): the policy holds what the next rollout samples with; the pairing
  keeps the statistics the weights were trained with, or the update still running (pending);
- *at rest* (after ``learn``, in saved files, in the zoo's evaluations): the policy holds the
  weights with the statistics their last gradient steps used; the pairing keeps what the next
  rollout will sample with, so training resumes as it would have gone on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch as th

from roboppo.ppo.fast_paths import describe
from roboppo.ppo.policies import TanhGaussianPolicy

if TYPE_CHECKING:
    from roboppo.ppo.jax_train import PendingUpdate

Statistics = list[dict[str, th.Tensor]]


class Pairing:
    """The pair the policy does not hold now (see the module docstring)."""

    def __init__(self) -> None:
        #: while sampling: the statistics the weights were trained with (None: the ones the policy holds)
        self.trained: Statistics | None = None
        #: while at rest: the statistics the next rollout samples with (None: the ones the policy holds)
        self.following: Statistics | None = None
        #: with overlap_update: the update running beside the rollout
        self.pending: PendingUpdate | None = None
        #: while at rest with an update pending: the weights the next rollout samples with
        self.sampling_weights: list[th.Tensor] | None = None

    def rest(self, policy: th.nn.Module) -> bool:
        """Put the trained pair into ``policy``, keeping what the next rollout samples with.

        With an update pending, the trained pair is its result and the statistics it was trained
        with. :return: False when the policy held the trained pair already.
        """
        if self.pending is not None and self.sampling_weights is None:
            weights = pending_parameters(policy)
            self.sampling_weights = [w.detach().clone() for w in weights]
            self.following = statistics_of(policy)
            self.pending.apply(weights, policy.optimizer)  # type: ignore[arg-type]
            load_statistics(policy, self.pending.statistics)
            return True
        if self.trained is None:
            return False
        self.following = statistics_of(policy)
        load_statistics(policy, self.trained)
        self.trained = None
        return True

    def resume(self, policy: th.nn.Module) -> None:
        """Put what :meth:`rest` kept back into ``policy`` (in place: the sampler's views stay valid)."""
        if self.sampling_weights is not None:
            with th.no_grad():
                for weight, kept in zip(pending_parameters(policy), self.sampling_weights, strict=True):
                    weight.copy_(kept)
            self.sampling_weights = None
            if self.following is not None:
                load_statistics(policy, self.following)
                self.following = None
            return
        if self.following is not None:
            self.trained = statistics_of(policy)
            load_statistics(policy, self.following)
            self.following = None

    def take_pending(self) -> PendingUpdate | None:
        """The pending update, now no longer pending; its statistics become the trained pair's."""
        pending, self.pending = self.pending, None
        if pending is not None:
            self.trained = pending.statistics or None
        return pending


def statistics_of(policy: th.nn.Module) -> Statistics:
    """Copies of the policy's observation statistics (none for a policy other than roboppo's)."""
    normalizers = policy.observation_normalizers() if isinstance(policy, TanhGaussianPolicy) else []
    return [{key: value.clone() for key, value in n.state_dict().items()} for n in normalizers]


def load_statistics(policy: th.nn.Module, states: Statistics) -> None:
    """Copy ``states`` into the policy's statistics buffers (the same buffers: the sampler's views stay valid)."""
    for normalizer, state in zip(policy.observation_normalizers(), states, strict=True):  # type: ignore[operator]
        normalizer.load_state_dict(state)


def pending_parameters(policy: th.nn.Module) -> list[th.Tensor]:
    """The policy's tensors a pending update writes, in its order."""
    graph = describe(policy)
    if isinstance(graph, str):
        raise RuntimeError(f"an update is pending for a policy that can no longer take it: {graph}.")
    return graph.parameters()
