"""Run folders: what ``roboppo-zoo train`` writes and ``eval``/``record``/``plot``/``--resume`` read.

runs/ppo_<env>_seed<seed>_<time>/
    config.yml            resolved settings (env, seed, budget, PPO keywords as written)
    command.txt           the command line
    model.zip             the final model
    best_model.zip        the best model by evaluation
    checkpoints/          ppo_<steps>_steps.zip every --save-freq steps
    evaluations.npz       evaluation history (SB3's EvalCallback format)
    progress*.csv, events.out.tfevents.*   scalars (TensorBoard)
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Any

import yaml

CONFIG_FILE = "config.yml"
CHECKPOINTS = "checkpoints"


class RunFolderError(ValueError):
    """A folder that is not a roboppo run."""


def write_atomic(path: pathlib.Path, text: str) -> None:
    """Write ``text`` to a temporary file next to ``path`` and rename it into place."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def write_config(run_dir: pathlib.Path, config: dict[str, Any], command: list[str]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run_dir / CONFIG_FILE, yaml.safe_dump(config, sort_keys=False))
    write_atomic(run_dir / "command.txt", " ".join(command) + "\n")


def read_config(run_dir: pathlib.Path) -> dict[str, Any]:
    """The run's ``config.yml``; :class:`RunFolderError` when ``run_dir`` is not a run folder."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise RunFolderError(f"{run_dir} is not a roboppo run folder (no {CONFIG_FILE}); pass a folder made by train.")
    config = yaml.safe_load(path.read_text())
    if not isinstance(config, dict) or "env" not in config:
        raise RunFolderError(f"{path} does not describe a run (no 'env' key).")
    return config


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
    """The run's final (or best) model, falling back to the latest checkpoint for interrupted runs."""
    read_config(run_dir)
    for name in (["best_model.zip"] if best else []) + ["model.zip"]:
        if (run_dir / name).is_file():
            return run_dir / name
    return latest_checkpoint(run_dir)
