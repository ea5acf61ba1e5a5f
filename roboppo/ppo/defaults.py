"""Where a PPO's settings come from when the caller leaves them out: the zoo entry or SB3's defaults.

``PPO("MlpPolicy", "RoboHopper-v0")`` fills every argument the caller did not pass from the
id's ``zoo_hparams/ppo.yml`` entry (:func:`zoo_entry`, :func:`zoo_arguments`) and remembers the
entry's budget for ``learn()`` without ``total_timesteps`` (:class:`BudgetNotice` reports it).
"""

from __future__ import annotations

import time
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback
from stable_baselines3.common.type_aliases import MaybeCallback

import roboppo_envs
from roboppo.common.hparams import ZooEntry, load_ppo_hparams

SB3_SOURCE = "Stable-Baselines3 defaults"
HYPERPARAMS_CHOICES = ("zoo", "sb3")


def zoo_entry(hyperparams: str | ZooEntry | None, env: Any, device: Any) -> ZooEntry | None:
    """The entry whose values fill the arguments left out, or ``None`` for SB3's defaults.

    :param hyperparams: ``None`` (the zoo for a registered roboppo id given as a string, SB3's
        defaults for anything else), ``"zoo"`` (the zoo, or an error), ``"sb3"`` or a
        :class:`~roboppo.common.hparams.ZooEntry` (for example from ``load_ppo_hparams(id, path)``).
    """
    if isinstance(hyperparams, ZooEntry):
        return hyperparams
    if hyperparams is not None and hyperparams not in HYPERPARAMS_CHOICES:
        raise ValueError(
            f"hyperparams must be 'zoo', 'sb3', None or a ZooEntry (roboppo.zoo.load_ppo_hparams), got {hyperparams!r}."
        )
    is_id = isinstance(env, str) and env in roboppo_envs.roboppo_ids()
    if hyperparams == "sb3" or (hyperparams is None and not is_id):
        return None
    if not is_id:
        raise ValueError(
            f"hyperparams='zoo' reads the zoo entry of a registered roboppo env id given as a string, "
            f"got env={env!r}; pass one of {roboppo_envs.roboppo_ids()}, or "
            "hyperparams=roboppo.zoo.load_ppo_hparams(env_id) to use an entry with an env object."
        )
    return load_ppo_hparams(env, device=str(device))


def zoo_arguments(entry: ZooEntry, explicit: set[str], roboppo_policy: bool) -> tuple[dict[str, Any], list[str]]:
    """The entry's PPO arguments the caller left out, and the names of those the caller's own values replace.

    ``policy_kwargs`` (roboppo's policy keywords) apply only to roboppo's policy; any other policy
    keeps SB3's.
    """
    values = {"n_envs": entry.n_envs, **entry.ppo_kwargs}
    if not roboppo_policy:
        values.pop("policy_kwargs", None)
    taken = {key: value for key, value in values.items() if key not in explicit}
    return taken, sorted(set(values) & explicit)


def describe(source: str, used: dict[str, Any], replaced: list[str]) -> str:
    """One line: where the settings came from, the values used (as the file writes them), what the caller replaced."""
    shown = ", ".join(f"{key}={value}" for key, value in used.items())
    line = f"Hyperparameters from {source}: {shown}"
    return line + (f"; your arguments replace {', '.join(replaced)}" if replaced else "")


def with_notice(callback: MaybeCallback, notice: BaseCallback) -> list[BaseCallback]:
    """``callback`` (anything ``learn`` accepts) with ``notice`` run first."""
    if callback is None:
        return [notice]
    callbacks = callback if isinstance(callback, list) else [callback]
    return [notice] + [c if isinstance(c, BaseCallback) else ConvertCallback(c) for c in callbacks]


class BudgetNotice(BaseCallback):
    """Says once what a default-budget ``learn()`` is about to do, then how long it should take.

    The estimate is printed when the third rollout starts, from the time the second rollout and
    its update took (the first includes one-off compilation).
    """

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan
        self._marks: list[tuple[float, int]] = []

    def _on_training_start(self) -> None:
        print(self.plan)

    def _on_rollout_start(self) -> None:
        self._marks.append((time.perf_counter(), self.num_timesteps))
        if len(self._marks) != 3:
            return
        (start, first), (end, last) = self._marks[1], self._marks[2]
        rate = (last - first) / max(end - start, 1e-9)
        left = max(self.model._total_timesteps - self.num_timesteps, 0) / rate
        print(f"About {_duration(left)} to go on this machine ({rate:,.0f} env steps/s over the last rollout).")

    def _on_step(self) -> bool:
        return True


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
