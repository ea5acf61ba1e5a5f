"""``roboppo-zoo train`` / ``eval``: training into run folders, resuming, evaluating."""

from __future__ import annotations

import argparse
import contextlib
import math
import pathlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format

import roboppo_envs
from roboppo.common.callbacks import EvalCallback, read_evaluations
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.files import remove_partials
from roboppo.common.hparams import HparamsError, load_ppo_hparams, parse_overrides
from roboppo.common.validation import OFF, check_rollout
from roboppo.ppo import PPO
from roboppo.zoo.runs import (
    CHECKPOINTS,
    check_log_folder,
    model_file,
    new_run_dir,
    read_config,
    resume_point,
    write_config,
)

# flag -> default for a new run (the parser leaves them None so that --resume can tell what was given)
TRAIN_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "device": "auto",
    "log_folder": pathlib.Path("runs"),
    "eval_freq": 10_000,
    "eval_episodes": 10,
    "save_freq": 50_000,
}
# flags a resumed run takes from its config.yml (only --n-timesteps, the thread flags and --no-progress-bar
# are read from the command line)
FIXED_BY_RUN = (
    "env",
    "seed",
    "n_envs",
    "device",
    "p",
    "hparams",
    "log_folder",
    "eval_freq",
    "eval_episodes",
    "save_freq",
)
INTERRUPTED = 130  # exit code after Ctrl-C or SIGTERM, as a shell reports a SIGINT


def train(args: argparse.Namespace) -> int:
    """Train PPO with the zoo entry (plus ``-p`` overrides) into a new run folder, or resume one."""
    if args.resume is not None:
        return resume(args)
    settings = {key: default if getattr(args, key, None) is None else getattr(args, key)
                for key, default in TRAIN_DEFAULTS.items()}  # fmt: skip
    settings.update({key: None for key in ("eval_freq", "save_freq") if settings[key] == OFF})
    check_env_id(args.env)
    overrides = parse_overrides(args.p or [])
    entry = load_ppo_hparams(args.env, args.hparams, overrides, device=settings["device"])
    n_envs = args.n_envs or entry.n_envs
    if args.n_envs is not None:
        check_rollout(int(entry.ppo_kwargs.get("n_steps", 2048)), n_envs, f"--n-envs {n_envs}")
    check_log_folder(settings["log_folder"])
    config = {
        "algo": "ppo",
        "env": args.env,
        "seed": settings["seed"],
        "n_timesteps": args.n_timesteps or entry.n_timesteps,
        "n_envs": n_envs,
        "device": settings["device"],
        "env_threads": args.env_threads,
        "torch_threads": args.torch_threads,
        "eval_freq": settings["eval_freq"],
        "eval_episodes": settings["eval_episodes"],
        "save_freq": settings["save_freq"],
        "hparams_file": None if args.hparams is None else str(args.hparams),
        "overrides": overrides,
    }
    env_kwargs = apply_threads(config)
    try:
        model = PPO(
            "MlpPolicy", args.env, n_envs=n_envs, env_kwargs=env_kwargs, seed=config["seed"], device=config["device"],
            hyperparams=entry,
        )  # fmt: skip
    except HparamsError:
        raise
    except ValueError as error:  # a combination SB3 or the policy refuse, e.g. use_sde with the tanh policy
        raise HparamsError(f"{entry.source}: these settings cannot build a model: {error}") from error
    print(f"Hyperparameters from {model.hyperparams_source}")
    name = f"ppo_{args.env}_seed{config['seed']}_{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = new_run_dir(settings["log_folder"], name)
    write_config(run_dir, config, sys.argv)
    return _learn(model, run_dir, config, progress_bar=not args.no_progress_bar)


def resume(args: argparse.Namespace) -> int:
    """Continue a run from ``model.zip`` or its latest checkpoint (whichever is further) with the run's settings.

    ``--n-timesteps`` changes the budget; thread flags and ``--no-progress-bar`` apply to this session;
    any other flag is refused by name. A run that has reached its budget is not retrained.
    """
    given = [key for key in FIXED_BY_RUN if getattr(args, key, None) is not None]
    if given:
        flags = ", ".join("-p" if key == "p" else "--" + key.replace("_", "-") for key in given)
        raise HparamsError(
            f"{flags} cannot change a run being resumed (its config.yml fixes them); with --resume only "
            "--n-timesteps, --env-threads, --torch-threads and --no-progress-bar apply. Start a new run to change them."
        )
    run_dir = args.resume
    config = read_config(run_dir)
    if (run_dir / "evaluations.npz").is_file():
        read_evaluations(run_dir / "evaluations.npz")  # a damaged history is refused before anything is written
    budget = args.n_timesteps or config["n_timesteps"]
    checkpoint, steps = resume_point(run_dir)
    if steps >= budget:
        print(
            f"{run_dir} is complete: {steps:,} of {budget:,} env steps trained ({checkpoint.name}). "
            f"Pass --n-timesteps N with N above {steps:,} to train it further."
        )
        return 0
    for key in ("env_threads", "torch_threads"):
        if getattr(args, key, None) is not None:
            config[key] = getattr(args, key)
    if budget != config["n_timesteps"]:
        print(f"Budget of {run_dir} changed from {config['n_timesteps']:,} to {budget:,} env steps")
        config["n_timesteps"] = budget
    write_config(run_dir, config, sys.argv, resumed=True)
    remove_partials(run_dir)
    env_kwargs = apply_threads(config)
    env = make_env_from_id(config["env"], n_envs=config["n_envs"], seed=config["seed"] + 1, env_kwargs=env_kwargs)
    model = PPO.load(checkpoint, env=env, device=config.get("device", "auto"))
    print(f"Resuming {run_dir} from {checkpoint.name} ({model.num_timesteps:,} of {budget:,} steps)")
    return _learn(model, run_dir, config, progress_bar=not args.no_progress_bar)


def apply_threads(config: dict[str, Any]) -> dict[str, Any] | None:
    """Set torch's thread count from the run's config; return the env kwargs for the worker threads."""
    if config.get("torch_threads") is not None:
        th.set_num_threads(config["torch_threads"])
    if config.get("env_threads") is None:
        return None
    if not roboppo_envs.has_vector_env(config["env"]) or roboppo_envs.is_brax_id(config["env"]):
        raise HparamsError(f"--env-threads applies to roboppo's MuJoCo ids, not to {config['env']}.")
    return {"num_threads": config["env_threads"]}


def _learn(model: PPO, run_dir: pathlib.Path, config: dict[str, Any], progress_bar: bool) -> int:
    """Train to the run's budget with evaluations and checkpoints; save ``model.zip`` also when interrupted."""
    start_steps = model.num_timesteps
    csv_name = "progress.csv" if start_steps == 0 else f"progress-from-{start_steps}.csv"
    model.set_logger(
        Logger(
            str(run_dir), [make_output_format("tensorboard", str(run_dir)), CSVOutputFormat(str(run_dir / csv_name))]
        )
    )
    evaluation = _evaluation(model, run_dir, config)
    callbacks: list[BaseCallback] = [] if evaluation is None else [evaluation]
    if config["save_freq"] is not None:
        save_every = max(config["save_freq"] // model.n_envs, 1)
        callbacks.append(CheckpointCallback(save_every, str(run_dir / CHECKPOINTS), "ppo"))
    remaining = config["n_timesteps"] - start_steps
    with _stop_on_signals() as stopper:
        model.learn(remaining, callback=[stopper, *callbacks], progress_bar=progress_bar, reset_num_timesteps=False)
    model.save(run_dir / "model.zip")
    best = _best_evaluation(evaluation)
    if stopper.received is not None:
        print(
            f"Interrupted: {config['env']} at {model.num_timesteps:,} of {config['n_timesteps']:,} steps{best}; "
            f"model.zip saved. Continue with: roboppo-zoo train --resume {run_dir}"
        )
        return INTERRUPTED
    print(f"Trained {config['env']} to {model.num_timesteps:,} steps{best}; run folder {run_dir}")
    return 0


def _evaluation(model: PPO, run_dir: pathlib.Path, config: dict[str, Any]) -> EvalCallback | None:
    """The periodic evaluation (None when ``--eval-freq off``), continuing the run's history up to the model's steps."""
    if config["eval_freq"] is None:
        return None
    eval_env = make_env_from_id(config["env"], n_envs=1, seed=config["seed"] + 10_000)
    evaluation = EvalCallback(
        eval_env, n_eval_episodes=config["eval_episodes"], eval_freq=max(config["eval_freq"] // model.n_envs, 1),
        best_model_save_path=str(run_dir), log_path=str(run_dir), verbose=0,
    )  # fmt: skip
    path = run_dir / "evaluations.npz"
    if not path.is_file():
        return evaluation
    dropped, best_dropped = evaluation.continue_history(read_evaluations(path), model.num_timesteps)
    if dropped:
        print(f"Dropped {dropped} evaluation(s) made after step {model.num_timesteps:,}; they will be made again")
    if best_dropped:
        (run_dir / "best_model.zip").unlink(missing_ok=True)
        print(
            "Removed best_model.zip (its evaluation was dropped); the next evaluation that beats the kept ones saves it"
        )
    return evaluation


def _best_evaluation(evaluation: EvalCallback | None) -> str:
    if evaluation is None:
        return ""
    if not math.isfinite(evaluation.best_mean_reward):
        return "; no evaluation ran (the budget ended before --eval-freq steps)"
    return f"; best evaluation {evaluation.best_mean_reward:.1f}"


class StopOnSignal(BaseCallback):
    """Ends training at the next env step after SIGINT (Ctrl-C) or SIGTERM; a second signal interrupts at once.

    The handler only records the signal, so training stops between steps, never inside a write or an update.
    """

    def __init__(self) -> None:
        super().__init__()
        self.received: int | None = None

    def handle(self, signum: int, frame: Any) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum

    def _on_step(self) -> bool:
        return self.received is None


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[StopOnSignal]:
    """Handle SIGINT and SIGTERM with a :class:`StopOnSignal` while training (handlers restored after).

    Only the main thread may set handlers. SIGINT is handled even when it was ignored: a process
    started in the background by a script inherits an ignored SIGINT, and ``kill -INT`` should still stop it.
    """
    stopper = StopOnSignal()
    signals = (signal.SIGINT, signal.SIGTERM) if threading.current_thread() is threading.main_thread() else ()
    previous = {signum: signal.signal(signum, stopper.handle) for signum in signals}
    try:
        yield stopper
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def evaluate(args: argparse.Namespace) -> int:
    """Deterministic evaluation of a run's model: mean ± std return over ``--episodes`` episodes."""
    config = read_config(args.run)
    path = model_file(args.run, best=args.best)
    model = PPO.load(path)
    env = make_env_from_id(config["env"], n_envs=1, seed=args.seed)
    mean, std = evaluate_policy(model, env, n_eval_episodes=args.episodes, deterministic=True)
    print(f"{config['env']} {path}: {mean:.1f} ± {std:.1f} over {args.episodes} deterministic episodes")
    return 0
