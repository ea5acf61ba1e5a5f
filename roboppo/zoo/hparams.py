"""Read and validate ``zoo_hparams/ppo.yml`` into keyword arguments for :class:`roboppo.PPO`.

Values are never ``eval``'d: activation functions are looked up by name in a fixed table,
and every key and type is checked, with errors naming the file, the env id and the key.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import pathlib
import re
from typing import Any

import yaml
from torch import nn

from roboppo.ppo.ppo import TRAIN_BACKENDS

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "silu": nn.SiLU, "elu": nn.ELU}

# key -> accepted Python types (YAML ints are accepted where floats are expected)
PPO_KEYS: dict[str, tuple[type, ...]] = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "n_steps": (int,),
    "batch_size": (int,),
    "n_epochs": (int,),
    "gamma": (int, float),
    "gae_lambda": (int, float),
    "clip_range": (int, float, dict),
    "ent_coef": (int, float),
    "vf_coef": (int, float),
    "max_grad_norm": (int, float),
    "learning_rate": (int, float, dict),
    "target_kl": (int, float),
    "normalize_advantage": (bool,),
    "reward_scale": (int, float),
    "train_backend": (str,),
    "policy_kwargs": (dict,),
}
POLICY_KEYS: dict[str, tuple[type, ...]] = {
    "net_arch": (list, dict),
    "activation_fn": (str,),
    "log_std_init": (int, float),
    "ortho_init": (bool,),
    "obs_clip": (int, float),
    "normalize_obs": (bool,),
}


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e6`` and ``3.0e-4`` as floats (plain YAML 1.1 wants ``1.0e+6``)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.[\d_]*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.[\d_]*$|^[-+]?\.[\d_]+$"),
    list("-+0123456789."),
)


class HparamsError(ValueError):
    """A hyperparameter file that cannot be used as written."""


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    """One env's settings: the training budget, the number of envs and PPO's keyword arguments."""

    env_id: str
    n_timesteps: int
    n_envs: int
    ppo_kwargs: dict[str, Any]


def default_hparams_file(algo: str = "ppo") -> pathlib.Path:
    """``zoo_hparams/<algo>.yml`` from the checkout or the installed package."""
    return pathlib.Path(str(importlib.resources.files("zoo_hparams").joinpath(f"{algo}.yml")))


def load_ppo_hparams(
    env_id: str, path: str | pathlib.Path | None = None, overrides: dict[str, Any] | None = None
) -> ZooEntry:
    """The ``default`` entry of ``zoo_hparams/ppo.yml`` (or ``path``) updated with the ``env_id`` entry, validated.

    :param overrides: values that replace the file's (``roboppo-zoo train -p key=value``), validated alike;
        ``{"policy_kwargs": {...}}`` is merged key by key.
    :raises HparamsError: YAML syntax error, unknown key or wrong type (names file, env id and key).
    """
    file, merged = _merged_entry("ppo", env_id, path)
    for key, value in (overrides or {}).items():
        if key == "policy_kwargs" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    settings = _ppo_settings(merged, f"{file} [{env_id}]" + (" with -p overrides" if overrides else ""))
    n_timesteps = int(settings.pop("n_timesteps", 1_000_000))
    n_envs = int(settings.pop("n_envs", 1))
    return ZooEntry(env_id=env_id, n_timesteps=n_timesteps, n_envs=n_envs, ppo_kwargs=settings)


@dataclasses.dataclass(frozen=True)
class GailEntry:
    """One env's GAIL settings: budget, env copies, trainer keywords and the generator's PPO keywords."""

    env_id: str
    n_timesteps: int
    n_envs: int
    trainer_kwargs: dict[str, Any]
    ppo_kwargs: dict[str, Any]


GAIL_KEYS: dict[str, tuple[type, ...]] = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "demo_batch_size": (int,),
    "n_disc_updates_per_round": (int,),
    "disc_lr": (int, float),
    "reward_hid_sizes": (list,),
    "reward_use_action": (bool,),
    "reward_use_next_state": (bool,),
    "disc_spectral_norm": (bool,),
    "ppo": (dict,),
}


def load_gail_hparams(env_id: str, path: str | pathlib.Path | None = None) -> GailEntry:
    """The validated ``zoo_hparams/gail.yml`` entry for ``env_id`` (merged over ``default``)."""
    file, merged = _merged_entry("gail", env_id, path)
    where = f"{file} [{env_id}]"
    settings = _validated(merged, GAIL_KEYS, where)
    ppo_kwargs = _ppo_settings(settings.pop("ppo", {}), f"{where} ppo")
    for key in ("n_timesteps", "n_envs"):
        if key in ppo_kwargs:
            raise HparamsError(f"{where} ppo: key {key!r} belongs at the entry's top level, not under ppo.")
    trainer_kwargs: dict[str, Any] = {}
    for key in ("demo_batch_size", "n_disc_updates_per_round", "disc_lr", "disc_spectral_norm"):
        if key in settings:
            trainer_kwargs[key] = settings[key]
    reward_net_kwargs = {
        key: settings[f"reward_{key}"] for key in ("use_action", "use_next_state") if f"reward_{key}" in settings
    }
    if "reward_hid_sizes" in settings:
        reward_net_kwargs["hid_sizes"] = tuple(int(n) for n in settings["reward_hid_sizes"])
    if reward_net_kwargs:
        trainer_kwargs["reward_net_kwargs"] = reward_net_kwargs
    return GailEntry(
        env_id=env_id,
        n_timesteps=int(settings.get("n_timesteps", 1_000_000)),
        n_envs=int(settings.get("n_envs", 8)),
        trainer_kwargs=trainer_kwargs,
        ppo_kwargs=ppo_kwargs,
    )


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["n_steps=64", "policy_kwargs.log_std_init=-1"]`` -> ``{"n_steps": 64, "policy_kwargs": {...}}``.

    Values are read as YAML scalars or flow collections (``[64, 64]``), never evaluated as code.
    """
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key or not re.fullmatch(r"[A-Za-z_][\w.]*", key):
            raise HparamsError(f"-p {pair!r} is not key=value (for example -p learning_rate=3e-4).")
        try:
            value = yaml.load(raw, Loader=_Loader)  # a SafeLoader subclass
        except yaml.YAMLError as error:
            raise HparamsError(f"-p {pair!r}: the value does not parse ({error.__class__.__name__}).") from error
        head, _, tail = key.partition(".")
        if tail:
            overrides.setdefault(head, {})[tail] = value
        else:
            overrides[head] = value
    return overrides


def _merged_entry(algo: str, env_id: str, path: str | pathlib.Path | None) -> tuple[pathlib.Path, dict[str, Any]]:
    file = pathlib.Path(path) if path is not None else default_hparams_file(algo)
    try:
        document = yaml.load(file.read_text(), Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise HparamsError(f"{file}: YAML syntax error: {error}") from error
    if not isinstance(document, dict):
        raise HparamsError(f"{file}: expected a mapping of env ids to settings at the top level.")
    merged: dict[str, Any] = dict(document.get("default") or {})
    merged.update(document.get(env_id) or {})
    return file, merged


class LinearSchedule:
    """``initial * progress_remaining`` (1 at the start of training, 0 at the end), down to ``final``."""

    def __init__(self, initial: float, final: float = 0.0) -> None:
        self.initial, self.final = initial, final

    def __call__(self, progress_remaining: float) -> float:
        return self.final + (self.initial - self.final) * progress_remaining

    def __repr__(self) -> str:
        return f"LinearSchedule(initial={self.initial}, final={self.final})"


def _schedule(value: Any, where: str) -> Any:
    """A number, or a mapping ``{type: linear|constant, initial: x[, final: y]}``."""
    if not isinstance(value, dict):
        return value
    kind, unknown = value.get("type"), set(value) - {"type", "initial", "final"}
    if unknown or kind not in ("linear", "constant") or not isinstance(value.get("initial"), (int, float)):
        raise HparamsError(
            f"{where}: a schedule is {{type: linear|constant, initial: NUMBER[, final: NUMBER]}}, got {value!r}."
        )
    if kind == "constant":
        return float(value["initial"])
    return LinearSchedule(float(value["initial"]), float(value.get("final", 0.0)))


def _ppo_settings(values: dict[str, Any], where: str) -> dict[str, Any]:
    """PPO keywords validated against :data:`PPO_KEYS`, with schedules and ``policy_kwargs`` resolved."""
    settings = _validated(values, PPO_KEYS, where)
    for key in ("learning_rate", "clip_range"):
        if key in settings:
            settings[key] = _schedule(settings[key], f"{where} {key}")
    backend = settings.get("train_backend", "auto")
    if backend not in TRAIN_BACKENDS:
        raise HparamsError(f"{where}: train_backend {backend!r} is not one of {list(TRAIN_BACKENDS)}.")
    policy_kwargs = _validated(settings.pop("policy_kwargs", {}), POLICY_KEYS, f"{where} policy_kwargs")
    if "activation_fn" in policy_kwargs:
        name = policy_kwargs["activation_fn"]
        if name not in ACTIVATIONS:
            raise HparamsError(f"{where} policy_kwargs: activation_fn {name!r} is not one of {sorted(ACTIVATIONS)}.")
        policy_kwargs["activation_fn"] = ACTIVATIONS[name]
    if policy_kwargs:
        settings["policy_kwargs"] = policy_kwargs
    return settings


def _validated(values: dict[str, Any], schema: dict[str, tuple[type, ...]], where: str) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key not in schema:
            raise HparamsError(f"{where}: unknown key {key!r}; known keys: {', '.join(sorted(schema))}.")
        accepted = schema[key]
        is_bool = isinstance(value, bool)
        if not isinstance(value, accepted) or (is_bool and bool not in accepted):
            names = " or ".join(t.__name__ for t in accepted)
            raise HparamsError(f"{where}: key {key!r} must be {names}, got {value!r} ({type(value).__name__}).")
        checked[key] = value
    return checked
