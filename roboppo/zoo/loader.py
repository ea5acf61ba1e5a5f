"""Read and validate ``zoo_hparams/ppo.yml`` into keyword arguments for :class:`roboppo.PPO`.

Values are never ``eval``'d: activation functions are looked up by name in a fixed table,
and every key and type is checked, with errors naming the file, the env id and the key.

An env's settings are merged from up to three layers, each optionally with ``cpu:`` and ``gpu:``
sub-entries for values that depend on where training runs: ``default``, then ``default_brax``
for Brax ids, then the env's own entry. Within a layer the sub-entry for the chosen device
overrides the layer's plain keys; a later layer overrides everything before it.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import os
import pathlib
import re
from typing import Any

import yaml
from stable_baselines3.common.utils import get_device

import roboppo_envs
from roboppo.common.activations import ACTIVATIONS
from roboppo.common.schedules import KLAdaptiveLR, LinearSchedule  # LinearSchedule: also where old models name it
from roboppo.zoo.schema import (
    NON_NEGATIVE,
    HparamsError,
    check_range,
    check_rollout,
    policy_key_types,
    ppo_key_types,
    unknown_key_message,
)

__all__ = ["HparamsError", "ZooEntry", "load_gail_hparams", "load_ppo_hparams", "parse_overrides", "zoo_device"]

TRAIN_BACKENDS = ("auto", "jax", "torch")
DEVICE_KINDS = ("cpu", "gpu")
BRAX_LAYER = "default_brax"
MAX_TIMESTEPS_VARIABLE = "ROBOPPO_MAX_TIMESTEPS"


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e6`` and ``3.0e-4`` as floats (plain YAML 1.1 wants ``1.0e+6``)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.[\d_]*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.[\d_]*$|^[-+]?\.[\d_]+$"),
    list("-+0123456789."),
)


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    """One env's settings: the training budget, the number of envs and PPO's keyword arguments.

    ``values`` holds the same settings as the file writes them (plain numbers, strings and
    mappings, so they can be saved with a model); ``source`` says where they came from.
    """

    env_id: str
    n_timesteps: int
    n_envs: int
    ppo_kwargs: dict[str, Any]
    device: str = "cpu"
    source: str = ""
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the env's keywords the entry trains with (``env_kwargs:``; a user's keywords update them)
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)


def default_hparams_file(algo: str = "ppo") -> pathlib.Path:
    """``zoo_hparams/<algo>.yml``: in the repository's ``zoo_hparams/``, installed as ``roboppo.zoo.hparams``."""
    return pathlib.Path(str(importlib.resources.files("roboppo.zoo.hparams").joinpath(f"{algo}.yml")))


def load_ppo_hparams(
    env_id: str,
    path: str | pathlib.Path | None = None,
    overrides: dict[str, Any] | None = None,
    device: str = "auto",
) -> ZooEntry:
    """The validated settings for ``env_id`` from ``zoo_hparams/ppo.yml`` (or ``path``).

    Layers ``default``, ``default_brax`` (Brax ids only) and the ``env_id`` entry are merged in
    that order, each with its sub-entry for the device kind :func:`zoo_device` picks.

    :param overrides: values that replace the file's (``roboppo-zoo train -p key=value``), validated alike;
        ``{"policy_kwargs": {...}}`` is merged key by key.
    :param device: the torch device training will use (``"auto"``, ``"cpu"``, ``"cuda"``, ...), or
        ``"gpu"`` to read the GPU sub-entries on any machine.
    :raises HparamsError: YAML syntax error, unknown key or wrong type (names file, env id and key).
    """
    kind, why = zoo_device(env_id, device)
    file, layers = _ppo_layers(env_id, path)
    merged: dict[str, Any] = {}
    for name, layer in layers:
        merged.update(_layer_values(layer, kind, f"{file} [{name}]"))
    for key, value in (overrides or {}).items():
        if key in ("policy_kwargs", "env_kwargs") and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    values = copy.deepcopy(merged)
    where = f"{file} [{env_id}]" + (" with -p overrides" if overrides else "")
    settings = _ppo_settings(merged, where)
    n_timesteps = int(settings.pop("n_timesteps", 1_000_000))
    n_envs = int(settings.pop("n_envs", 1))
    env_kwargs = dict(settings.pop("env_kwargs", None) or {})
    check_rollout(int(settings.get("n_steps", 2048)), n_envs, where)
    name = layers[-1][0] if layers else "default"
    source = f"{_shown(file, path)} [{name}] for {kind} ({why})" + ("" if name == env_id else f"; no {env_id} entry")
    if overrides:
        source += f"; overridden: {', '.join(sorted(overrides))}"
    return ZooEntry(env_id, n_timesteps, n_envs, settings, kind, source, values, env_kwargs)


def zoo_device(env_id: str, device: str = "auto") -> tuple[str, str]:
    """Which sub-entries (``"cpu"`` or ``"gpu"``) fit training ``env_id`` on ``device``, and why.

    ``"gpu"`` when torch's device is CUDA and, for a Brax id, JAX's default backend is a GPU too
    (the env steps where JAX runs, the update where torch runs); ``"cpu"`` otherwise.
    """
    if device == "gpu":
        return "gpu", "requested"
    torch_device = get_device(device)
    why = f"torch on {torch_device.type}"
    if not roboppo_envs.is_brax_id(env_id):
        return ("gpu" if torch_device.type == "cuda" else "cpu"), why
    import jax  # only for Brax ids, which need JAX anyway

    backend = jax.default_backend()
    why += f", JAX on {backend}"
    return ("gpu" if torch_device.type == "cuda" and backend == "gpu" else "cpu"), why


def capped_budget(n_timesteps: int) -> tuple[int, str]:
    """``n_timesteps``, or less when :data:`MAX_TIMESTEPS_VARIABLE` (``ROBOPPO_MAX_TIMESTEPS``) says so.

    The variable caps every default budget (``PPO(...).learn()`` without ``total_timesteps``),
    for smoke-testing scripts; returns the budget and a note naming the cap when it applied.
    """
    raw = os.environ.get(MAX_TIMESTEPS_VARIABLE)
    if raw is None or raw == "":
        return n_timesteps, ""
    if not raw.isdigit() or int(raw) == 0:
        raise ValueError(f"{MAX_TIMESTEPS_VARIABLE}={raw!r}: expected a positive whole number of env steps, or unset.")
    cap = int(raw)
    return (cap, f" (capped by {MAX_TIMESTEPS_VARIABLE}={cap})") if cap < n_timesteps else (n_timesteps, "")


def _ppo_layers(env_id: str, path: str | pathlib.Path | None) -> tuple[pathlib.Path, list[tuple[str, dict[str, Any]]]]:
    file, document = _document("ppo", path)
    names = ["default"] + ([BRAX_LAYER] if roboppo_envs.is_brax_id(env_id) else []) + [env_id]
    layers = []
    for name in names:
        layer = document.get(name) or {}
        if not isinstance(layer, dict):
            raise HparamsError(f"{file} [{name}]: expected a mapping of settings, got {layer!r}.")
        if name in document:
            layers.append((name, layer))
    return file, layers


def _layer_values(layer: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    """A layer's plain keys updated with its ``kind`` sub-entry (both checked for stray sub-entries)."""
    values = {key: value for key, value in layer.items() if key not in DEVICE_KINDS}
    for sub in DEVICE_KINDS:
        block = layer.get(sub)
        if block is None:
            continue
        if not isinstance(block, dict) or any(key in DEVICE_KINDS for key in block):
            raise HparamsError(f"{where} {sub}: a device sub-entry is a mapping of settings (no nested cpu/gpu).")
        if sub == kind:
            values.update(block)
    return values


def _shown(file: pathlib.Path, path: str | pathlib.Path | None) -> str:
    return f"zoo_hparams/{file.name}" if path is None else str(file)


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
    file, document = _document(algo, path)
    merged: dict[str, Any] = dict(document.get("default") or {})
    merged.update(document.get(env_id) or {})
    return file, merged


def _document(algo: str, path: str | pathlib.Path | None) -> tuple[pathlib.Path, dict[str, Any]]:
    file = pathlib.Path(path) if path is not None else default_hparams_file(algo)
    try:
        document = yaml.load(file.read_text(), Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise HparamsError(f"{file}: YAML syntax error: {error}") from error
    if not isinstance(document, dict):
        raise HparamsError(f"{file}: expected a mapping of env ids to settings at the top level.")
    return file, document


def _schedule(key: str, value: Any, where: str) -> Any:
    """A number, or a mapping ``{type: linear|constant, initial: x[, final: y]}`` (for ``learning_rate`` also
    ``{type: kl_adaptive, initial: x[, target_kl: y]}``); numbers are range-checked."""
    if not isinstance(value, dict):
        check_range(key, value, where)
        return value
    if key == "learning_rate" and value.get("type") == "kl_adaptive":
        return _kl_adaptive(value, f"{where} {key}")
    kind, unknown = value.get("type"), set(value) - {"type", "initial", "final"}
    numbers = [value.get("initial"), value.get("final", 0.0)]
    if unknown or kind not in ("linear", "constant") or not all(_is_number(n) for n in numbers):
        raise HparamsError(
            f"{where} {key}: a schedule is {{type: linear|constant, initial: NUMBER[, final: NUMBER]}}, got {value!r}."
        )
    check_range(key, value["initial"], f"{where} {key} initial:")
    if not NON_NEGATIVE.contains(float(numbers[1])):
        raise HparamsError(f"{where} {key}: final = {numbers[1]!r} is out of range; it must be {NON_NEGATIVE}.")
    if kind == "constant":
        return float(value["initial"])
    return LinearSchedule(float(value["initial"]), float(value.get("final", 0.0)))


def _kl_adaptive(value: dict[str, Any], where: str) -> KLAdaptiveLR:
    """``{type: kl_adaptive, initial: x[, target_kl: y, factor: f, min_lr: a, max_lr: b]}``."""
    numbers = {key: number for key, number in value.items() if key != "type"}
    unknown = set(numbers) - {"initial", "target_kl", "factor", "min_lr", "max_lr"}
    if unknown or "initial" not in numbers or not all(_is_number(n) for n in numbers.values()):
        raise HparamsError(
            f"{where}: an adaptive rate is {{type: kl_adaptive, initial: NUMBER[, target_kl: NUMBER, factor: NUMBER, "
            f"min_lr: NUMBER, max_lr: NUMBER]}}, got {value!r}."
        )
    try:
        return KLAdaptiveLR(**{key: float(number) for key, number in numbers.items()})
    except ValueError as error:
        raise HparamsError(f"{where}: {error}") from error


def _ppo_settings(values: dict[str, Any], where: str) -> dict[str, Any]:
    """PPO keywords checked against PPO's signature and :data:`~roboppo.zoo.schema.RANGES`,
    with schedules and ``policy_kwargs`` resolved."""
    settings = _validated(values, ppo_key_types(), where)
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in settings:
            settings[key] = _schedule(key, settings[key], where)
    backend = settings.get("train_backend", "auto")
    if backend not in TRAIN_BACKENDS:
        raise HparamsError(f"{where}: train_backend {backend!r} is not one of {list(TRAIN_BACKENDS)}.")
    policy_kwargs = _validated(settings.pop("policy_kwargs", None) or {}, policy_key_types(), f"{where} policy_kwargs")
    if "activation_fn" in policy_kwargs:
        name = policy_kwargs["activation_fn"]
        if name not in ACTIVATIONS:
            raise HparamsError(f"{where} policy_kwargs: activation_fn {name!r} is not one of {sorted(ACTIVATIONS)}.")
        policy_kwargs["activation_fn"] = ACTIVATIONS[name][0]
    if policy_kwargs:
        settings["policy_kwargs"] = policy_kwargs
    return settings


def _validated(values: dict[str, Any], schema: dict[str, tuple[type, ...]], where: str) -> dict[str, Any]:
    """``values`` with every key known to ``schema``, of an accepted type and (for numbers) in range."""
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key not in schema:
            hint = " (device sub-entries are cpu: and gpu:)" if schema is ppo_key_types() else ""
            raise HparamsError(unknown_key_message(key, schema, where) + hint)
        accepted = schema[key]
        is_bool = isinstance(value, bool)
        if not isinstance(value, accepted) or (is_bool and bool not in accepted):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in accepted)
            raise HparamsError(f"{where}: key {key!r} must be {names}, got {value!r} ({type(value).__name__}).")
        if not isinstance(value, dict):
            check_range(key, value, where)
        checked[key] = value
    return checked


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
