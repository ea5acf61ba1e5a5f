"""Which sampler and update a model ran (``PPO.paths_run``), and the line that says why a fast path stepped aside.

:mod:`roboppo.ppo.fast_paths` decides; this module records and tells: each reason once per model,
at ``verbose >= 1``, and a warning when ``overlap_update`` cannot overlap.
"""

from __future__ import annotations

import warnings

from torch import nn

from roboppo.ppo.fast_paths import Choice, sampler_choice, update_choice

#: what each path is, in the line that says a fast path stepped aside
PATH_NAMES = {
    ("sampler", "torch"): "rollouts run the policy's torch code (rollout_actions), not the NumPy sampler",
    ("sampler", "sb3"): "rollouts run the policy's forward, as SB3's PPO does",
    ("update", "torch"): "the update runs in PyTorch (roboppo.ppo.torch_train), not the compiled JAX update",
    ("update", "sb3"): "the update is SB3's PPO.train",
}


def note_path(
    paths_run: dict[str, list[str]], said: set[tuple[str, str]], part: str, choice: Choice, verbose: int
) -> None:
    """Record that ``part`` (sampler, update) ran ``choice``; say once why a fast path stepped aside."""
    ran = paths_run.setdefault(part, [])
    if choice.path not in ran:
        ran.append(choice.path)
    if choice.reason is None or choice.reason == "train_backend='torch'" or verbose < 1:
        return
    if (part, choice.reason) not in said:
        said.add((part, choice.reason))
        print(f"roboppo: {PATH_NAMES[part, choice.path]}: {choice.reason}.")


def warn_overlap_refused(said: set[tuple[str, str]], choice: Choice) -> None:
    """Warn once that ``overlap_update`` was asked for and the update runs after each rollout, and why."""
    if ("overlap", choice.path) not in said:
        said.add(("overlap", choice.path))
        warnings.warn(
            f"overlap_update=True needs the compiled JAX update; {PATH_NAMES['update', choice.path]} "
            f"({choice.reason}), so this model trains after each rollout.",
            stacklevel=7,  # the caller of learn()
        )


def planned_paths(policy: nn.Module, train_backend: str) -> dict[str, str]:
    """Which sampler and update ``policy`` gets now, with the reason a fast path steps aside (``config.yml``)."""
    plan: dict[str, str] = {}
    for part, choice in (("sampler", sampler_choice(policy)), ("update", update_choice(policy, train_backend))):
        plan[part] = choice.path
        if choice.reason is not None:
            plan[f"{part}_reason"] = choice.reason
    return plan
