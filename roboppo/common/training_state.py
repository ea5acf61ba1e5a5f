"""What a run needs beside its model file to continue exactly as if it had never stopped.

A model zip holds the weights, the optimizer and the observation statistics (with the newer ones the
next rollout samples with). Written at a rollout boundary, ``<model>.state.npz`` holds the rest of
what the following rollouts depend on: each env copy's physics state and random generator, the
episode counters, the last observations, the evaluation env's generators, and torch's random
generator (every draw of the sampler and the update). ``roboppo-zoo train --resume`` continues from
a model with this file as the uninterrupted run would have gone on, to the bit.

The file is plain arrays and one JSON string (``np.load(..., allow_pickle=False)``): reading it
never runs code. Envs that cannot save their state (Brax batches, ``DummyVecEnv``) get no file.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from roboppo.common.files import atomic_target

SUFFIX = ".state.npz"

#: a state file's arrays and its JSON values
TrainingState = tuple[dict[str, np.ndarray], dict[str, Any]]


def state_path(model_path: pathlib.Path) -> pathlib.Path:
    """``ppo_1000_steps.zip`` -> ``ppo_1000_steps.state.npz``."""
    return model_path.with_name(model_path.name.removesuffix(".zip") + SUFFIX)


def can_save(venv: VecEnv | None) -> bool:
    return venv is not None and hasattr(venv, "get_state") and hasattr(getattr(venv, "vector_env", None), "get_state")


def save_training_state(model_path: pathlib.Path, model: BaseAlgorithm, eval_env: VecEnv | None = None) -> bool:
    """Write the state file beside ``model_path``; False (nothing written) when an env cannot save its state."""
    envs = {"env": model.get_env(), "eval_env": eval_env}
    if not can_save(envs["env"]) or (eval_env is not None and not can_save(eval_env)):
        return False
    arrays: dict[str, np.ndarray] = {"torch_rng": th.get_rng_state().numpy()}
    arrays |= {"last_obs": np.asarray(model._last_obs), "episode_starts": np.asarray(model._last_episode_starts)}
    meta: dict[str, Any] = {"num_timesteps": model.num_timesteps}
    for prefix, venv in envs.items():
        if venv is not None:
            env_arrays, meta[prefix] = venv.get_state()  # type: ignore[attr-defined]
            arrays |= {f"{prefix}/{key}": value for key, value in env_arrays.items()}
    with atomic_target(state_path(model_path)) as partial, open(partial, "wb") as file:
        np.savez(file, **(arrays | {"meta": np.array(json.dumps(meta))}))  # type: ignore[arg-type]
    return True


def read_training_state(model_path: pathlib.Path) -> TrainingState | None:
    """The arrays and values of the state file beside ``model_path``; None when there is none."""
    path = state_path(model_path)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as file:
        arrays = {key: file[key] for key in file.files}
    return arrays, json.loads(str(arrays.pop("meta")))


def restore_env(state: TrainingState, prefix: str, venv: VecEnv) -> None:
    """Put ``venv`` (``"env"`` or ``"eval_env"`` of the run) back in its saved state."""
    arrays, meta = state
    mine = {key.removeprefix(f"{prefix}/"): value for key, value in arrays.items() if key.startswith(f"{prefix}/")}
    venv.set_state(mine, meta[prefix])  # type: ignore[attr-defined]


def restore_training_state(state: TrainingState, model: BaseAlgorithm) -> None:
    """Continue ``model`` (loaded from the same file, with an env built alike) where the state was written.

    Call last, just before ``learn``: it sets torch's random generator.
    """
    arrays, meta = state
    if meta["num_timesteps"] != model.num_timesteps:
        raise ValueError(f"the state file is of step {meta['num_timesteps']:,}, the model of {model.num_timesteps:,}.")
    venv = model.get_env()
    assert venv is not None, "load the model with its env first"
    restore_env(state, "env", venv)
    model._last_obs = arrays["last_obs"]  # type: ignore[assignment]
    model._last_episode_starts = arrays["episode_starts"]
    th.set_rng_state(th.from_numpy(arrays["torch_rng"]))
