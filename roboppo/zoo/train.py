"""``roboppo-zoo train`` / ``eval``: training into run folders, resuming, evaluating."""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format

import roboppo_envs
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.hparams import HparamsError, load_ppo_hparams, parse_overrides
from roboppo.ppo import PPO
from roboppo.zoo.runs import CHECKPOINTS, latest_checkpoint, model_file, read_config, write_config


def train(args: argparse.Namespace) -> int:
    """Train PPO with the zoo entry (plus ``-p`` overrides) into a new run folder, or resume one."""
    if args.resume is not None:
        return resume(args.resume, progress_bar=not args.no_progress_bar)
    check_env_id(args.env)
    overrides = parse_overrides(args.p or [])
    entry = load_ppo_hparams(args.env, args.hparams, overrides, device=args.device)
    config = {
        "algo": "ppo",
        "env": args.env,
        "seed": args.seed,
        "n_timesteps": args.n_timesteps or entry.n_timesteps,
        "n_envs": args.n_envs or entry.n_envs,
        "device": args.device,
        "env_threads": args.env_threads,
        "torch_threads": args.torch_threads,
        "eval_freq": args.eval_freq,
        "eval_episodes": args.eval_episodes,
        "save_freq": args.save_freq,
        "hparams_file": None if args.hparams is None else str(args.hparams),
        "overrides": overrides,
    }
    run_dir = args.log_folder / f"ppo_{args.env}_seed{args.seed}_{time.strftime('%Y%m%d-%H%M%S')}"
    env_kwargs = _apply_threads(config)
    model = PPO(
        "MlpPolicy", args.env, n_envs=config["n_envs"], env_kwargs=env_kwargs, seed=args.seed, device=args.device,
        hyperparams=entry,
    )  # fmt: skip
    print(f"Hyperparameters from {model.hyperparams_source}")
    write_config(run_dir, config, sys.argv)
    return _learn(model, run_dir, config, progress_bar=not args.no_progress_bar)


def resume(run_dir: pathlib.Path, progress_bar: bool = True) -> int:
    """Continue a run from its latest checkpoint with the same settings, step count and logs."""
    config = read_config(run_dir)
    checkpoint = latest_checkpoint(run_dir)
    env_kwargs = _apply_threads(config)
    env = make_env_from_id(config["env"], n_envs=config["n_envs"], seed=config["seed"] + 1, env_kwargs=env_kwargs)
    model = PPO.load(checkpoint, env=env, device=config.get("device", "auto"))
    print(f"Resuming {run_dir} from {checkpoint.name} ({model.num_timesteps:,} of {config['n_timesteps']:,} steps)")
    return _learn(model, run_dir, config, progress_bar=progress_bar)


def _apply_threads(config: dict[str, Any]) -> dict[str, Any] | None:
    """Set torch's thread count from the run's config; return the env kwargs for the worker threads."""
    if config.get("torch_threads") is not None:
        th.set_num_threads(config["torch_threads"])
    if config.get("env_threads") is None:
        return None
    if not roboppo_envs.has_vector_env(config["env"]) or roboppo_envs.is_brax_id(config["env"]):
        raise HparamsError(f"--env-threads applies to roboppo's MuJoCo ids, not to {config['env']}.")
    return {"num_threads": config["env_threads"]}


def _learn(model: PPO, run_dir: pathlib.Path, config: dict[str, Any], progress_bar: bool) -> int:
    start_steps = model.num_timesteps
    csv_name = "progress.csv" if start_steps == 0 else f"progress-from-{start_steps}.csv"
    model.set_logger(
        Logger(
            str(run_dir), [make_output_format("tensorboard", str(run_dir)), CSVOutputFormat(str(run_dir / csv_name))]
        )
    )
    n_envs = model.n_envs
    eval_env = make_env_from_id(config["env"], n_envs=1, seed=config["seed"] + 10_000)
    evaluation = EvalCallback(
        eval_env, n_eval_episodes=config["eval_episodes"], eval_freq=max(config["eval_freq"] // n_envs, 1),
        best_model_save_path=str(run_dir), log_path=str(run_dir), verbose=0,
    )  # fmt: skip
    _restore_evaluations(evaluation, run_dir)
    checkpoints = CheckpointCallback(max(config["save_freq"] // n_envs, 1), str(run_dir / CHECKPOINTS), "ppo")
    remaining = config["n_timesteps"] - start_steps
    model.learn(remaining, callback=[evaluation, checkpoints], progress_bar=progress_bar, reset_num_timesteps=False)
    model.save(run_dir / "model.zip")
    best = evaluation.best_mean_reward
    print(f"Trained {config['env']} to {model.num_timesteps:,} steps; best evaluation {best:.1f}; run folder {run_dir}")
    return 0


def _restore_evaluations(evaluation: EvalCallback, run_dir: pathlib.Path) -> None:
    """Carry an interrupted run's evaluation history over, so evaluations.npz keeps growing."""
    path = run_dir / "evaluations.npz"
    if not path.is_file():
        return
    with np.load(path) as history:
        evaluation.evaluations_timesteps = [int(t) for t in history["timesteps"]]
        evaluation.evaluations_results = [list(r) for r in history["results"]]
        evaluation.evaluations_length = [list(n) for n in history["ep_lengths"]]
    if evaluation.evaluations_results:
        evaluation.best_mean_reward = float(np.max(np.mean(evaluation.evaluations_results, axis=1)))


def evaluate(args: argparse.Namespace) -> int:
    """Deterministic evaluation of a run's model: mean ± std return over ``--episodes`` episodes."""
    config = read_config(args.run)
    path = model_file(args.run, best=args.best)
    model = PPO.load(path)
    env = make_env_from_id(config["env"], n_envs=1, seed=args.seed)
    mean, std = evaluate_policy(model, env, n_eval_episodes=args.episodes, deterministic=True)
    print(f"{config['env']} {path}: {mean:.1f} ± {std:.1f} over {args.episodes} deterministic episodes")
    return 0
