"""``roboppo-zoo tune``: Optuna search over PPO hyperparameters, with pruning and a shared study.

Every worker runs the same command with the same ``--storage`` (SQLite by default, any
SQLAlchemy URL for several machines) and ``--study-name``; Optuna hands each one the next
trial. A trial trains roboppo PPO for ``--n-timesteps`` steps, evaluating every
``--eval-freq`` steps; the median pruner stops trials that fall behind. The best trial so far
is written as a ready ``ppo.yml`` entry.
"""

from __future__ import annotations

import argparse
import pathlib
import time
from typing import Any

import numpy as np
import yaml
from stable_baselines3.common.callbacks import EvalCallback

from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.hparams import load_ppo_hparams
from roboppo.ppo import PPO
from roboppo.zoo.runs import write_atomic

NET_ARCHS = {"small": [64, 64], "medium": [128, 128], "large": [256, 256]}


def sample_ppo(trial: Any) -> dict[str, Any]:
    """A PPO configuration in ``ppo.yml`` terms (plain numbers and names only)."""
    n_envs = trial.suggest_categorical("n_envs", [1, 4, 8])
    n_steps = trial.suggest_categorical("n_steps", [64, 128, 256, 512, 1024])
    batch = trial.suggest_categorical("batch_size", [64, 128, 256, 512])
    return {
        "n_envs": n_envs,
        "n_steps": n_steps,
        "batch_size": min(batch, n_steps * n_envs),
        "n_epochs": trial.suggest_categorical("n_epochs", [5, 10, 20]),
        "gamma": trial.suggest_categorical("gamma", [0.95, 0.98, 0.99, 0.995, 0.999]),
        "gae_lambda": trial.suggest_categorical("gae_lambda", [0.9, 0.95, 0.98, 1.0]),
        "clip_range": trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4]),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 1e-2, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 3e-3, log=True),
        "policy_kwargs": {
            "net_arch": NET_ARCHS[trial.suggest_categorical("net_arch", sorted(NET_ARCHS))],
            "log_std_init": trial.suggest_float("log_std_init", -2.0, 0.0),
        },
    }


class _PruningEval(EvalCallback):
    """EvalCallback that reports each evaluation to Optuna and stops pruned trials."""

    def __init__(self, trial: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trial, self.pruned = trial, False

    def _on_step(self) -> bool:
        keep_going = super()._on_step()
        if self.eval_freq > 0 and self.n_calls % self.eval_freq == 0:
            self.trial.report(self.last_mean_reward, self.num_timesteps)
            if self.trial.should_prune():
                self.pruned = True
                return False
        return keep_going


def objective(trial: Any, args: argparse.Namespace) -> float:
    import optuna

    settings = sample_ppo(trial)
    entry = load_ppo_hparams(args.env, overrides={k: v for k, v in settings.items() if k != "n_envs"})
    n_envs = settings["n_envs"]
    model = PPO("MlpPolicy", args.env, n_envs=n_envs, seed=trial.number, hyperparams=entry)
    evaluation = _PruningEval(
        trial, make_env_from_id(args.env, seed=10_000 + trial.number), n_eval_episodes=args.eval_episodes,
        eval_freq=max(args.eval_freq // n_envs, 1), verbose=0,
    )  # fmt: skip
    model.learn(args.n_timesteps, callback=evaluation)
    if evaluation.pruned:
        raise optuna.TrialPruned()
    return float(evaluation.last_mean_reward if np.isfinite(evaluation.last_mean_reward) else -np.inf)


def _open_study(name: str, storage: str, attempts: int = 6) -> Any:
    """Create or join a study; workers starting together may race to create the tables, so retry."""
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(attempts):
        try:
            engine_kwargs = {"connect_args": {"timeout": 60}} if storage.startswith("sqlite") else {}
            rdb = optuna.storages.RDBStorage(storage, engine_kwargs=engine_kwargs)
            return optuna.create_study(
                study_name=name, storage=rdb, direction="maximize", load_if_exists=True,
                sampler=optuna.samplers.TPESampler(n_startup_trials=5),
                pruner=optuna.pruners.MedianPruner(n_startup_trials=3),
            )  # fmt: skip
        except SQLAlchemyError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def tune(args: argparse.Namespace) -> int:
    """Run ``--n-trials`` trials in this worker and write the study's best as a ``ppo.yml`` entry."""
    import optuna

    check_env_id(args.env)
    storage = args.storage or f"sqlite:///{args.log_folder / ('tune_' + args.env + '.db')}"
    if storage.startswith("sqlite:///"):
        pathlib.Path(storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    study = _open_study(args.study_name or f"ppo-{args.env}", storage)
    study.optimize(
        lambda trial: objective(trial, args), n_trials=args.n_trials, show_progress_bar=not args.no_progress_bar
    )
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        print(f"study {study.study_name}: no trial has completed yet ({len(study.trials)} started)")
        return 0
    best = study.best_trial
    entry = {"n_timesteps": args.n_timesteps, **sample_ppo(optuna.trial.FixedTrial(best.params))}
    out = args.out or args.log_folder / f"tune_{args.env}_best.yml"
    comment = f"# best of {len(complete)} complete trials in study {study.study_name}: mean return {best.value:.1f}\n"
    write_atomic(out, comment + yaml.safe_dump({args.env: entry}, sort_keys=False))
    print(f"study {study.study_name} ({storage}): {len(study.trials)} trials, best {best.value:.1f}; entry in {out}")
    return 0
