"""The schedules ``ppo.yml`` names, for the learning rate and the clip range.

SB3 takes any ``progress_remaining -> value`` callable; these are the two the zoo writes as mappings:
``{type: linear, initial: 2.0e-3}`` (:class:`LinearSchedule`) and ``{type: kl_adaptive, ...}``
(:class:`KLAdaptiveLR`).
"""

from __future__ import annotations


class LinearSchedule:
    """From ``initial`` to ``final`` as ``progress_remaining`` goes from 1 (start of training) to 0 (end).

    Progress past the end (the last rollout overshoots a budget that is not a whole number of
    rollouts, so SB3 reports negative progress) holds the value at ``final``.
    """

    def __init__(self, initial: float, final: float = 0.0) -> None:
        self.initial, self.final = initial, final

    def __call__(self, progress_remaining: float) -> float:
        progress = min(max(progress_remaining, 0.0), 1.0)
        return self.final + (self.initial - self.final) * progress

    def __repr__(self) -> str:
        return f"LinearSchedule(initial={self.initial}, final={self.final})"


class KLAdaptiveLR:
    """A learning rate steered by the KL divergence each update measures, as Brax's and rsl_rl's PPO do.

    Pass it as ``learning_rate`` (or write ``learning_rate: {type: kl_adaptive, initial: 3.0e-4,
    target_kl: 0.01}`` in ``ppo.yml``). After every update roboppo's PPO calls :meth:`update` with
    the update's approximate KL (``train/approx_kl``): above ``2 * target_kl`` the rate is divided by
    ``factor``, below ``target_kl / 2`` multiplied by it, always within ``[min_lr, max_lr]``. Steps
    that move the policy too little speed up, steps that move it too far slow down, whatever the
    reward scale or the stage of training. The current rate is saved with the model.

    :param initial: the rate of the first update.
    :param target_kl: the approximate KL per update to aim for.
    :param factor: how much one update's measurement changes the rate (> 1).
    :param min_lr: the lowest rate.
    :param max_lr: the highest rate.
    """

    def __init__(
        self,
        initial: float = 3e-4,
        target_kl: float = 0.01,
        factor: float = 1.5,
        min_lr: float = 1e-5,
        max_lr: float = 1e-2,
    ) -> None:
        if not 0 < min_lr <= initial <= max_lr:
            raise ValueError(f"KLAdaptiveLR needs 0 < min_lr <= initial <= max_lr, got {min_lr}, {initial}, {max_lr}.")
        if target_kl <= 0 or factor <= 1:
            raise ValueError(f"KLAdaptiveLR needs target_kl > 0 and factor > 1, got {target_kl} and {factor}.")
        self.value, self.target_kl, self.factor = float(initial), float(target_kl), float(factor)
        self.min_lr, self.max_lr = float(min_lr), float(max_lr)

    def __call__(self, progress_remaining: float) -> float:
        return self.value

    def update(self, approx_kl: float) -> float:
        """Adjust the rate after an update that measured ``approx_kl``; returns the new rate."""
        if approx_kl > 2.0 * self.target_kl:
            self.value = max(self.value / self.factor, self.min_lr)
        elif approx_kl < 0.5 * self.target_kl:
            self.value = min(self.value * self.factor, self.max_lr)
        return self.value

    def __repr__(self) -> str:
        return f"KLAdaptiveLR(value={self.value:.3g}, target_kl={self.target_kl})"
