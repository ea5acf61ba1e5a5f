"""Where each of a PPO's settings comes from: the user's arguments, the zoo entry, or SB3's defaults.

:func:`resolve` is the one step that decides it. ``PPO("MlpPolicy", "RoboHopper-v0")`` fills every
argument the user did not pass from the id's ``zoo_hparams/ppo.yml`` entry (:func:`zoo_entry`,
:func:`zoo_arguments`); what neither gives, SB3's ``PPO`` fills with its own defaults
(:func:`sb3_default_settings`). The entry's budget serves ``learn()`` without ``total_timesteps``
(:class:`BudgetNotice` reports it). The rest of the module writes settings in ``ppo.yml``'s form,
for a run's ``config.yml``.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from typing import Any

import numpy as np
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import MaybeCallback

import roboppo_envs
from roboppo.common.activations import ACTIVATION_NAMES
from roboppo.common.env_util import make_env_from_id
from roboppo.common.vec_env import flattenable
from roboppo.ppo.policies import TanhGaussianPolicy
from roboppo.zoo.loader import TRAIN_BACKENDS, ZooEntry, capped_budget, load_ppo_hparams
from roboppo.zoo.schema import NOT_SETTINGS

SB3_SOURCE = "Stable-Baselines3 defaults"
HYPERPARAMS_CHOICES = ("zoo", "sb3")
SB3_SIGNATURE = inspect.signature(SB3PPO.__init__)
#: roboppo's own PPO keywords and their values when neither the user nor the entry gives them
ROBOPPO_DEFAULTS: dict[str, Any] = {
    "reward_scale": 1.0, "normalize_reward": False, "recompute_advantage": False, "train_backend": "auto",
    "overlap_update": False,
}  # fmt: skip
#: the keywords of SB3's PPO that are settings (written to config.yml); policy keywords come from the policy itself
SETTINGS = set(SB3_SIGNATURE.parameters) - NOT_SETTINGS - {"policy_kwargs", "_init_setup_model"}
_POLICY_INTERNALS = {"observation_space", "action_space", "lr_schedule", "use_sde", "squash_output", "full_std"}


@dataclasses.dataclass
class Resolved:
    """A PPO's arguments, each taken from one source: the user's (``user``), else the zoo entry's (``zoo``).

    SB3's ``PPO.__init__`` fills what neither gives with its own defaults.
    """

    #: SB3's PPO arguments, the user's and then the entry's, by keyword
    sb3: dict[str, Any]
    #: roboppo's own keywords (:data:`ROBOPPO_DEFAULTS`), every one filled
    roboppo: dict[str, Any]
    #: env copies to build when ``env`` is an id (None: one)
    n_envs: int | None
    #: the entry used, the values it gave (as its file writes them) and the names of those the user's replaced
    entry: ZooEntry | None
    zoo: dict[str, Any]
    replaced: list[str]
    #: the ``Dict`` observation space roboppo's policy reads flattened (None: the env's space is read as it is)
    dict_space: Any = None

    @property
    def source(self) -> str:
        return SB3_SOURCE if self.entry is None else self.entry.source


def resolve(
    policy: Any,
    env: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    roboppo_kwargs: dict[str, Any],
    env_kwargs: dict[str, Any] | None,
    hyperparams: str | ZooEntry | None,
) -> Resolved:
    """Every argument of ``PPO(policy, env, *args, **kwargs)`` with its source decided, and the env built.

    An id in ``env`` becomes its envs (``n_envs`` copies, the entry's ``env_kwargs`` updated with the
    user's). A ``Dict`` of vectors that roboppo's policy reads flattened is noted in ``dict_space``, with
    ``MultiInputPolicy`` read as ``MlpPolicy`` and the keys' layout in ``policy_kwargs``.

    :param roboppo_kwargs: roboppo's keywords as the user passed them (None: not passed).
    """
    user = SB3_SIGNATURE.bind_partial(None, policy, env, *args, **kwargs).arguments
    user.pop("self")
    user |= {key: value for key, value in roboppo_kwargs.items() if value is not None}
    entry = zoo_entry(hyperparams, env, user.get("device", "auto"))
    # MultiInputPolicy on a Dict of vectors is roboppo's policy too (decided below, once the env is built)
    roboppo_policy = is_roboppo_policy(policy) or policy == "MultiInputPolicy"
    zoo, replaced = ({}, []) if entry is None else zoo_arguments(entry, set(user), roboppo_policy)
    arguments = user | zoo
    roboppo = {key: arguments.pop(key, default) for key, default in ROBOPPO_DEFAULTS.items()}
    if roboppo["train_backend"] not in TRAIN_BACKENDS:
        raise ValueError(f"train_backend must be one of {TRAIN_BACKENDS}, got {roboppo['train_backend']!r}.")
    n_envs = arguments.pop("n_envs", None)
    shown = {} if entry is None else {key: entry.values.get(key, value) for key, value in zoo.items()}
    if isinstance(env, str):
        env_kwargs = (entry.env_kwargs if entry is not None else {}) | (env_kwargs or {})
        arguments["env"] = make_env_from_id(
            env, n_envs=1 if n_envs is None else n_envs, seed=arguments.get("seed"), env_kwargs=env_kwargs
        )
    space = getattr(arguments.get("env"), "observation_space", None)
    resolved = Resolved(arguments, roboppo, n_envs, entry, shown, replaced)
    flat = flattenable(space) and reads_flat_dicts(policy, arguments.get("policy_kwargs"))
    if policy == "MultiInputPolicy" and not flat and "policy_kwargs" in zoo:  # SB3's policy: SB3's keywords
        arguments.pop("policy_kwargs")
        zoo.pop("policy_kwargs")
        resolved.zoo.pop("policy_kwargs", None)
    if flat:
        resolved.dict_space = space
        if policy == "MultiInputPolicy":
            arguments["policy"] = "MlpPolicy"
        if arguments.get("_init_setup_model") is not False:  # a loaded model's policy_kwargs have it already
            arguments["policy_kwargs"] = with_observation_layout(arguments.get("policy_kwargs"), space)
    return resolved


def is_roboppo_policy(policy: Any) -> bool:
    """Whether ``policy`` (an alias or a class) is roboppo's :class:`~roboppo.ppo.policies.TanhGaussianPolicy`."""
    return policy == "MlpPolicy" or (isinstance(policy, type) and issubclass(policy, TanhGaussianPolicy))


def reads_flat_dicts(policy: Any, policy_kwargs: dict[str, Any] | None) -> bool:
    """Whether ``policy`` reads a Dict of vectors flattened: roboppo's does, and ``MultiInputPolicy`` without
    a features extractor (one given reads the Dict, as in SB3)."""
    if policy == "MultiInputPolicy":
        return not {"features_extractor_class", "features_extractor_kwargs"} & set(policy_kwargs or {})
    return is_roboppo_policy(policy)


def default_budget(
    env_id: str | None, budget: int | None, source: str, callback: MaybeCallback
) -> tuple[int, MaybeCallback]:
    """``learn()`` without ``total_timesteps``: the entry's budget (capped by ``ROBOPPO_MAX_TIMESTEPS``) and
    ``callback`` with the notice that announces it.

    :raises TypeError: no budget (SB3's error for a missing argument).
    """
    if budget is None:
        raise TypeError(
            "learn() missing 1 required positional argument: 'total_timesteps' (a default budget comes "
            f"only with a zoo entry; this model's settings are from {source})"
        )
    total_timesteps, capped = capped_budget(budget)
    plan = (
        f"Training PPO on {env_id or 'the env'} for {total_timesteps:,} env steps{capped}, the budget of "
        f"{source}. Pass total_timesteps to choose another."
    )
    return total_timesteps, with_notice(callback, BudgetNotice(plan))


def zoo_entry(hyperparams: str | ZooEntry | None, env: Any, device: Any) -> ZooEntry | None:
    """The entry whose values fill the arguments left out, or ``None`` for SB3's defaults.

    :param hyperparams: ``None`` (the zoo for a registered roboppo id given as a string, SB3's
        defaults for anything else), ``"zoo"`` (the zoo, or an error), ``"sb3"`` or a
        :class:`~roboppo.zoo.loader.ZooEntry` (for example from ``load_ppo_hparams(id, path)``).
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


def settings_line(source: str, used: dict[str, Any], replaced: list[str]) -> str:
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


def sb3_default_settings() -> dict[str, Any]:
    """SB3 PPO's default for each of its settings, in ``ppo.yml``'s form."""
    return {name: yaml_value(p.default) for name, p in SB3_SIGNATURE.parameters.items() if name in SETTINGS}


def sb3_settings(arguments: dict[str, Any]) -> dict[str, Any]:
    """The settings among SB3's PPO ``arguments``, in ``ppo.yml``'s form."""
    return {name: yaml_value(value) for name, value in arguments.items() if name in SETTINGS}


def policy_keywords(policy: BasePolicy) -> dict[str, Any]:
    """The policy's constructor keywords in ``ppo.yml``'s form (spaces and the schedule left out)."""
    keywords = policy._get_constructor_parameters()
    return {name: yaml_value(value) for name, value in keywords.items() if name not in _POLICY_INTERNALS}


def with_observation_layout(policy_kwargs: dict[str, Any] | None, space: Any) -> dict[str, Any] | None:
    """``policy_kwargs`` with ``observation_layout`` (``{key: (start, stop)}`` in the flattened ``Dict`` ``space``)
    where they choose keys (``actor_keys``, ``critic_keys``); unchanged otherwise."""
    if not policy_kwargs or not {"actor_keys", "critic_keys"} & set(policy_kwargs):
        return policy_kwargs
    layout, start = {}, 0
    for key, sub in space.spaces.items():
        layout[key] = (start, start + int(np.prod(sub.shape)))
        start = layout[key][1]
    return {**policy_kwargs, "observation_layout": layout}


def yaml_value(value: Any) -> Any:
    """``value`` as YAML holds it: activation classes by their ``ppo.yml`` name, other classes by qualified name."""
    if isinstance(value, type):
        return ACTIVATION_NAMES.get(value, f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, dict):
        return {key: yaml_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [yaml_value(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
