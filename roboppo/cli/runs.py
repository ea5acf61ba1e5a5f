"""Run folders: what ``roboppo-zoo train`` writes and ``eval``/``record``/``plot``/``--resume`` read.

runs/ppo_<env>_seed<seed>_<time>/
    config.yml            resolved settings (env, seed, budget, PPO keywords as written)
    command.txt           the command line, then one line per resume that trained
    model.zip             the final model
    best_model.zip        the best model by evaluation
    checkpoints/          ppo_<steps>_steps.zip every --save-freq steps
    evaluations.npz       evaluation history (SB3's EvalCallback format)
    progress*.csv, events.out.tfevents.*   scalars (TensorBoard)
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import time
import zipfile
from typing import Any

import yaml

from roboppo.common.errors import UserInputError
from roboppo.common.files import write_atomic

CONFIG_FILE = "config.yml"
CHECKPOINTS = "checkpoints"


INTERRUPTED = 130  # exit code after Ctrl-C or SIGTERM, as a shell reports a SIGINT


class RunFolderError(UserInputError, ValueError):
    """A folder that is not a roboppo run."""


def write_config(run_dir: pathlib.Path, config: dict[str, Any], command: list[str], resumed: bool = False) -> None:
    """Write ``config.yml`` and ``command.txt``; a ``resumed`` run's command is added under the earlier ones."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run_dir / CONFIG_FILE, yaml.safe_dump(config, sort_keys=False))
    commands = run_dir / "command.txt"
    earlier = commands.read_text() if resumed and commands.is_file() else ""
    write_atomic(commands, earlier + " ".join(command) + "\n")


def read_config(run_dir: pathlib.Path) -> dict[str, Any]:
    """The run's ``config.yml``; :class:`RunFolderError` when ``run_dir`` is not a run folder."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise RunFolderError(f"{run_dir} is not a roboppo run folder (no {CONFIG_FILE}); pass a folder made by train.")
    config = yaml.safe_load(path.read_text())
    if not isinstance(config, dict) or "env" not in config:
        raise RunFolderError(f"{path} does not describe a run (no 'env' key).")
    return config


def check_log_folder(folder: pathlib.Path, flag: str = "--log-folder") -> None:
    """Raise :class:`RunFolderError` unless ``folder`` is, or can be created as, a writable folder.

    Nothing is created: the nearest existing ancestor must be a folder this process may write.
    """
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        what = "is a file" if existing == folder else f"cannot be created: {existing} is a file"
        raise RunFolderError(f"{flag} {folder} {what}; pass a folder (for example {flag} runs).")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == folder else f" (its parent {existing} is not writable)"
        raise RunFolderError(
            f"{flag} {folder} is not writable{where}: read-only or no permission; pass a folder you can write."
        )


def file_name(env_id: str) -> str:
    """``env_id`` as one file or folder name: a namespace's ``/`` becomes ``-`` (``roboppo-Hopper-v5``)."""
    return env_id.replace("/", "-")


def run_name(algo: str, env_id: str, seed: int) -> str:
    """The one naming scheme of run folders (quickstart, ``train``, ``gail``): ``<algo>_<env>_seed<seed>_<time>``."""
    return f"{algo}_{file_name(env_id)}_seed{seed}_{time.strftime('%Y%m%d-%H%M%S')}"


def new_run_dir(log_folder: pathlib.Path, name: str) -> pathlib.Path:
    """``log_folder/name``, or ``name_2``, ``name_3``... when a run started in the same second took it."""
    log_folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        run_dir = log_folder / (name if attempt == 1 else f"{name}_{attempt}")
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            continue
    raise RunFolderError(f"{log_folder} already holds 999 runs named {name}; pass another --log-folder.")


def saved_steps(path: pathlib.Path) -> int:
    """The env steps a model zip was trained for (read from the zip's ``data``, without loading the model)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as error:
        raise RunFolderError(f"{path} is not a complete model zip ({type(error).__name__}: {error}).") from error


def resume_point(run_dir: pathlib.Path) -> tuple[pathlib.Path, int]:
    """The model to continue a run from: the one with the most steps among ``model.zip`` and the checkpoints
    that have a training state beside them (so the run continues exactly), else among all of them."""
    from roboppo.common.training_state import state_path  # imports torch: not at `roboppo-zoo --help`

    candidates = [run_dir / "model.zip"] if (run_dir / "model.zip").is_file() else []
    candidates += [
        path for path in sorted((run_dir / CHECKPOINTS).glob("ppo_*_steps.zip"))
        if re.fullmatch(r"ppo_\d+_steps\.zip", path.name)
    ]  # fmt: skip
    if not candidates:
        latest_checkpoint(run_dir)  # raises, naming where it looked
    exact = [path for path in candidates if state_path(path).is_file()]
    return max(((path, saved_steps(path)) for path in exact or candidates), key=lambda found: found[1])


def latest_checkpoint(run_dir: pathlib.Path) -> pathlib.Path:
    """The checkpoint with the most steps; :class:`RunFolderError` when there is none."""
    found = []
    for path in (run_dir / CHECKPOINTS).glob("ppo_*_steps.zip"):
        match = re.fullmatch(r"ppo_(\d+)_steps\.zip", path.name)
        if match:
            found.append((int(match.group(1)), path))
    if not found:
        raise RunFolderError(f"{run_dir} has no checkpoints to resume from (looked in {run_dir / CHECKPOINTS}).")
    return max(found)[1]


def model_file(run_dir: pathlib.Path, best: bool = False) -> pathlib.Path:
    """The run's final (or best) model, falling back to the latest checkpoint for interrupted runs.

    A GAIL run's model is its generator (``generator.zip``), a roboppo PPO model like any other.
    """
    read_config(run_dir)
    for name in (["best_model.zip"] if best else []) + ["model.zip", "generator.zip"]:
        if (run_dir / name).is_file():
            return run_dir / name
    return latest_checkpoint(run_dir)
