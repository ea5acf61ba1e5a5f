"""Which settings exist and which values they may take: the one place hyperparameters and CLI numbers are checked.

- The keys a ``ppo.yml`` entry (or ``roboppo-zoo train -p``) may set are read from the signatures
  of SB3's PPO and ``ActorCriticPolicy`` (so every SB3 keyword is accepted as soon as SB3 takes it;
  the accepted YAML types follow the annotations), plus the few roboppo adds, declared in
  :data:`ROBOPPO_PPO_KEYS` and :data:`ROBOPPO_POLICY_KEYS`. A typo is refused with the closest valid name.
- :data:`RANGES` holds the allowed range of every number; the CLI's numeric flags use the same
  ranges through :func:`flag_type`, so a bad value reads alike wherever it comes from.
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import difflib
import functools
import inspect
import math
import types
import typing
from typing import Any

from roboppo.common.errors import UserInputError

# keywords that are not hyperparameters: set by the caller, the CLI's own flags, or not expressible in YAML
NOT_SETTINGS = {
    "self", "policy", "env", "args", "kwargs", "return", "verbose", "seed", "device", "tensorboard_log",
    "hyperparams", "env_kwargs", "_init_setup_model", "rollout_buffer_class",
    "observation_space", "action_space", "lr_schedule", "features_extractor_class", "optimizer_class",
}  # fmt: skip
#: read by the zoo, not by PPO's algorithm: the budget, and the env's keywords (the sim-to-real kit: randomize, pushes,
#: action_latency, history, noise_level, ...), under which the entry's numbers were measured
ZOO_KEYS: dict[str, tuple[type, ...]] = {"n_timesteps": (int, float), "env_kwargs": (dict, type(None))}
OFF = "off"


class HparamsError(UserInputError, ValueError):
    """A hyperparameter file or override that cannot be used as written."""


class RangeError(HparamsError):
    """A number outside the range its setting allows."""


@dataclasses.dataclass(frozen=True)
class Range:
    """``low <= value <= high`` (``<`` where ``open_low``/``open_high``); ``None`` bounds are unbounded."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    integer: bool = False

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.open_low else value >= self.low)
        below = self.high is None or (value < self.high if self.open_high else value <= self.high)
        return above and below

    def __str__(self) -> str:
        left = "-inf" if self.low is None else _number(self.low)
        right = "inf" if self.high is None else _number(self.high)
        kind = "an integer" if self.integer else "a number"
        bracket_low = "(" if self.open_low or self.low is None else "["
        bracket_high = ")" if self.open_high or self.high is None else "]"
        if self.high is None and self.low is not None:
            return f"{kind} {'>' if self.open_low else '>='} {left}"
        return f"{kind} in {bracket_low}{left}, {right}{bracket_high}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


AT_LEAST_ONE = Range(1, integer=True)
POSITIVE = Range(0, open_low=True)
NON_NEGATIVE = Range(0)

RANGES: dict[str, Range] = {
    "n_timesteps": AT_LEAST_ONE,
    "n_envs": AT_LEAST_ONE,
    "n_steps": AT_LEAST_ONE,
    "batch_size": Range(2, integer=True),  # SB3 normalizes advantages per minibatch
    "n_epochs": AT_LEAST_ONE,
    "gamma": Range(0, 1, open_low=True),
    "gae_lambda": Range(0, 1),
    "learning_rate": POSITIVE,
    "clip_range": POSITIVE,
    "clip_range_vf": POSITIVE,
    "ent_coef": NON_NEGATIVE,
    "vf_coef": NON_NEGATIVE,
    "max_grad_norm": POSITIVE,
    "target_kl": POSITIVE,
    "reward_scale": POSITIVE,
    "stats_window_size": AT_LEAST_ONE,
    "sde_sample_freq": Range(-1, integer=True),
    "obs_clip": POSITIVE,
    # GAIL (zoo_hparams/gail.yml)
    "demo_batch_size": AT_LEAST_ONE,
    "n_disc_updates_per_round": AT_LEAST_ONE,
    "disc_lr": POSITIVE,
    # CLI flags
    "eval_freq": AT_LEAST_ONE,
    "save_freq": AT_LEAST_ONE,
    "eval_episodes": AT_LEAST_ONE,
    "episodes": AT_LEAST_ONE,
    "n_trials": AT_LEAST_ONE,
    "seeds": AT_LEAST_ONE,
    "jobs": AT_LEAST_ONE,
    "max_steps": AT_LEAST_ONE,
    "fps": AT_LEAST_ONE,
    "threads": AT_LEAST_ONE,
    "n_demos": AT_LEAST_ONE,
    "bc_batches": AT_LEAST_ONE,
}


def check_range(key: str, value: Any, where: str) -> None:
    """Raise :class:`RangeError` naming ``where``, the key, the value and the range when ``value`` is outside it."""
    allowed = RANGES.get(key)
    if allowed is None or value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if not allowed.contains(float(value)):
        raise RangeError(f"{where}: {key} = {value!r} is out of range; it must be {allowed}.")


def check_rollout(n_steps: int, n_envs: int, where: str) -> None:
    """PPO needs at least two transitions per rollout (``n_steps * n_envs >= 2``)."""
    if n_steps * n_envs < 2:
        raise RangeError(
            f"{where}: n_steps * n_envs = {n_steps} * {n_envs} = {n_steps * n_envs} is out of range; "
            "a rollout needs at least 2 transitions (raise n_steps or n_envs)."
        )


# -- accepted keys, from the signatures -------------------------------------------------------------


#: the keywords :class:`roboppo.PPO` adds to SB3's PPO, and :class:`roboppo.TanhGaussianPolicy` to SB3's
#: ``ActorCriticPolicy``, with their YAML types. Declared here, so that this shared layer reads nothing
#: from the algorithms; ``tests/unit/test_hparams.py`` checks them against the two signatures.
ROBOPPO_PPO_KEYS: dict[str, tuple[type, ...]] = {
    "n_envs": (int, type(None)),
    "reward_scale": (int, float, type(None)),
    "normalize_reward": (bool, type(None)),
    "recompute_advantage": (bool, type(None)),
    "train_backend": (str,),
    "overlap_update": (bool,),
}
ROBOPPO_POLICY_KEYS: dict[str, tuple[type, ...]] = {
    "normalize_obs": (bool,),
    "obs_clip": (int, float),
    # the asymmetric actor-critic: the Dict keys each network reads (PPO fills the layout from the env)
    "actor_keys": (list, type(None)),
    "critic_keys": (list, type(None)),
    "observation_layout": (dict, type(None)),
}


@functools.cache
def ppo_key_types() -> dict[str, tuple[type, ...]]:
    """Every key an entry may set, with the YAML types it accepts: SB3's PPO keywords and roboppo's."""
    from stable_baselines3 import PPO as SB3PPO

    return {**_settings_of(SB3PPO.__init__), **ROBOPPO_PPO_KEYS, **ZOO_KEYS}


@functools.cache
def policy_key_types() -> dict[str, tuple[type, ...]]:
    """Every key ``policy_kwargs`` may set for roboppo's policy (SB3's ``ActorCriticPolicy`` keywords and its own)."""
    from stable_baselines3.common.policies import ActorCriticPolicy

    keys = {**_settings_of(ActorCriticPolicy.__init__), **ROBOPPO_POLICY_KEYS}
    keys["activation_fn"] = (str,)  # a name from roboppo.common.activations.ACTIVATIONS
    return keys


def unknown_key_message(key: str, known: collections.abc.Iterable[str], where: str) -> str:
    """``where: unknown key 'n_step'; did you mean 'n_steps'? ...`` listing the valid keys."""
    names = sorted(known)
    close = difflib.get_close_matches(key, names, n=1)
    hint = f" did you mean {close[0]!r}?" if close else ""
    return f"{where}: unknown key {key!r};{hint} valid keys: {', '.join(names)}."


def _settings_of(function: Any) -> dict[str, tuple[type, ...]]:
    from stable_baselines3.common.vec_env import VecEnv  # SB3 annotates `env` with a forward reference to it

    hints = typing.get_type_hints(function, localns={"VecEnv": VecEnv})
    accepted: dict[str, tuple[type, ...]] = {}
    for name in inspect.signature(function).parameters:
        if name in NOT_SETTINGS or name not in hints:
            continue
        yaml_types = _yaml_types(hints[name])
        if yaml_types:
            accepted[name] = yaml_types
    return accepted


def _yaml_types(annotation: Any) -> tuple[type, ...]:
    """The YAML value types an annotation admits: numbers, strings, booleans, lists, mappings, null."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        found: list[type] = []
        for part in typing.get_args(annotation):
            found += [t for t in _yaml_types(part) if t not in found]
        return tuple(found)
    if annotation is type(None):
        return (type(None),)
    if annotation is float:
        return (int, float)
    if annotation in (int, bool, str):
        return (annotation,)
    if annotation is collections.abc.Callable or origin is collections.abc.Callable:
        return (dict,)  # a schedule: {type: linear, initial: ...}
    if origin is dict or annotation is dict:
        return (dict,)
    if origin is list or annotation is list:
        return (list,)
    return ()


# -- command-line numbers ---------------------------------------------------------------------------


def flag_type(key: str, allow_off: bool = False) -> collections.abc.Callable[[str], Any]:
    """An argparse ``type`` that reads an integer and checks it against ``RANGES[key]``.

    With ``allow_off`` the word ``off`` is accepted too and returned as :data:`OFF`.
    """
    allowed = RANGES[key]

    def parse(text: str) -> int | str:
        if allow_off and text.lower() == OFF:
            return OFF
        try:
            value = int(text)
        except ValueError:
            extra = f' or "{OFF}"' if allow_off else ""
            raise argparse.ArgumentTypeError(f"expected {allowed}{extra}, got {text!r}") from None
        if not allowed.contains(value):
            extra = f' (or "{OFF}")' if allow_off else ""
            raise argparse.ArgumentTypeError(f"{value} is out of range; it must be {allowed}{extra}")
        return value

    parse.__name__ = key  # argparse names the type in some messages
    return parse
