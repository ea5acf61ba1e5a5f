"""``roboppo-zoo train`` / ``eval``: training into run folders, resuming, evaluating."""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format

import roboppo_envs
from roboppo.cli.runs import (
    CHECKPOINTS,
    CONFIG_FILE,
    INTERRUPTED,
    check_log_folder,
    new_run_dir,
    read_config,
    resume_point,
    run_name,
    write_config,
)
from roboppo.common.callbacks import EvalCallback, RandomizationLogger, read_evaluations
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.files import remove_partials, write_atomic
from roboppo.common.training_state import (
    TrainingState,
    read_training_state,
    restore_env,
    restore_training_state,
    save_training_state,
    state_path,
)
from roboppo.common.vec_env import FlattenDictVecEnv
from roboppo.ppo import PPO
from roboppo.zoo.loader import HparamsError, load_ppo_hparams, parse_overrides
from roboppo.zoo.schema import OFF, check_rollout, flag_type

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
    "params",
    "env_kwargs",
    "tensorboard_log",
)

FLAG_NAMES = {"p": "-p", "params": "-params"}


def train(args: argparse.Namespace) -> int:
    """Train PPO with the zoo entry (plus ``-p`` overrides) into a new run folder, or resume one."""
    if args.resume is not None:
        return resume(args)
    settings = {key: default if getattr(args, key, None) is None else getattr(args, key)
                for key, default in TRAIN_DEFAULTS.items()}  # fmt: skip
    settings.update({key: None for key in ("eval_freq", "save_freq") if settings[key] == OFF})
    check_env_id(args.env)
    overrides = parse_overrides([*(args.p or []), *(colon_pair(pair, "-params") for pair in args.params or [])])
    env_kwargs_given = parse_overrides([colon_pair(pair, "--env-kwargs") for pair in args.env_kwargs or []])
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
        "env_kwargs": {**entry.env_kwargs, **env_kwargs_given} or None,  # the entry's, updated by --env-kwargs
        "tensorboard_log": None if args.tensorboard_log is None else str(args.tensorboard_log),
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
    config["hyperparams_source"] = model.hyperparams_source
    config["hyperparams"] = model.resolved_hyperparams()  # every PPO and policy keyword, as trained
    try:  # which sampler and update will train it; _learn records what ran
        config["paths"] = model.planned_paths()
    except ValueError as error:  # train_backend=jax for a policy the compiled update does not compute
        raise HparamsError(f"{entry.source}: {error}") from error
    run_dir = new_run_dir(settings["log_folder"], run_name("ppo", args.env, config["seed"]))
    write_config(run_dir, config, sys.argv)
    return _learn(model, run_dir, config, progress_bar=not args.no_progress_bar)


def resume(args: argparse.Namespace) -> int:
    """Continue a run from ``model.zip`` or its latest checkpoint (whichever is further) with the run's settings.

    ``--n-timesteps`` changes the budget; thread flags and ``--no-progress-bar`` apply to this session;
    any other flag is refused by name. A run that has reached its budget is not retrained.
    """
    given = [key for key in FIXED_BY_RUN if getattr(args, key, None) is not None]
    if given:
        flags = ", ".join(FLAG_NAMES.get(key, "--" + key.replace("_", "-")) for key in given)
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
    state = read_training_state(checkpoint)
    how = "exactly where it stopped" if state is not None else "with new episodes (no training state saved)"
    print(f"Resuming {run_dir} from {checkpoint.name} ({model.num_timesteps:,} of {budget:,} steps), {how}")
    return _learn(model, run_dir, config, progress_bar=not args.no_progress_bar, state=state)


def apply_threads(config: dict[str, Any]) -> dict[str, Any] | None:
    """Set torch's thread count from the run's config; return the env kwargs (``--env-kwargs``, MuJoCo threads)."""
    if config.get("torch_threads") is not None:
        th.set_num_threads(config["torch_threads"])
    env_kwargs = dict(config.get("env_kwargs") or {})
    if config.get("env_threads") is None:
        return env_kwargs or None
    if not roboppo_envs.has_vector_env(config["env"]) or roboppo_envs.is_brax_id(config["env"]):
        raise HparamsError(f"--env-threads applies to roboppo's MuJoCo ids, not to {config['env']}.")
    return env_kwargs | {"num_threads": config["env_threads"]}


def colon_pair(pair: str, flag: str) -> str:
    """rl-zoo3's ``key:value`` as roboppo's ``key=value``."""
    key, sep, value = pair.partition(":")
    if not sep or not key:
        raise HparamsError(f"{flag} {pair!r} is not key:value (for example {flag} learning_rate:3e-4).")
    return f"{key}={value}"


def _learn(
    model: PPO, run_dir: pathlib.Path, config: dict[str, Any], progress_bar: bool, state: TrainingState | None = None
) -> int:
    """Train to the run's budget with evaluations and checkpoints; save ``model.zip`` also when interrupted.

    Checkpoints and a finished ``model.zip`` get a training state (:mod:`roboppo.common.training_state`)
    where the envs can save theirs; ``state`` continues a resumed run from one.
    """
    start_steps = model.num_timesteps
    csv_name = "progress.csv" if start_steps == 0 else f"progress-from-{start_steps}.csv"
    events = pathlib.Path(config["tensorboard_log"]) / run_dir.name if config.get("tensorboard_log") else run_dir
    model.set_logger(
        Logger(str(run_dir), [make_output_format("tensorboard", str(events)), CSVOutputFormat(str(run_dir / csv_name))])
    )
    evaluation = _evaluation(model, run_dir, config)
    eval_env = None if evaluation is None else evaluation.eval_env
    callbacks: list[BaseCallback] = (
        [RandomizationLogger()] if evaluation is None else [evaluation, RandomizationLogger()]
    )
    if config["save_freq"] is not None:
        callbacks.append(RolloutCheckpoint(config["save_freq"], run_dir / CHECKPOINTS, eval_env))
    if evaluation is not None:
        evaluation.n_calls = start_steps // model.n_envs  # evaluations at the uninterrupted run's steps
    if state is not None:
        if eval_env is not None:
            restore_env(state, "eval_env", eval_env)  # type: ignore[arg-type]
        restore_training_state(state, model)  # last: it sets torch's generator
    remaining = config["n_timesteps"] - start_steps
    start = time.perf_counter()
    with _stop_on_signals() as stopper:
        model.learn(remaining, callback=[stopper, *callbacks], progress_bar=progress_bar, reset_num_timesteps=False)
    seconds = time.perf_counter() - start
    model.save(run_dir / "model.zip")
    if stopper.received is None:  # stopped at a rollout boundary: the run can continue exactly from here
        save_training_state(run_dir / "model.zip", model, eval_env)  # type: ignore[arg-type]
    else:
        state_path(run_dir / "model.zip").unlink(missing_ok=True)
    _record_paths(model, run_dir, config)
    _summary(model, run_dir, config, evaluation, seconds, model.num_timesteps - start_steps)
    if stopper.received is not None:
        print(
            f"Interrupted at {model.num_timesteps:,} of {config['n_timesteps']:,} steps; model.zip saved. "
            f"Continue with: roboppo-zoo train --resume {run_dir}"
        )
        return INTERRUPTED
    return 0


class RolloutCheckpoint(BaseCallback):
    """``checkpoints/ppo_<steps>_steps.zip`` at the first rollout start past every ``save_freq`` env steps,
    with its training state (a rollout boundary: the run continues from it exactly)."""

    def __init__(self, save_freq: int, folder: pathlib.Path, eval_env: Any = None) -> None:
        super().__init__()
        self.save_freq, self.folder, self.eval_env = save_freq, folder, eval_env
        self.next_save = 0

    def _on_training_start(self) -> None:
        self.next_save = (self.num_timesteps // self.save_freq + 1) * self.save_freq

    def _on_rollout_start(self) -> None:
        if self.num_timesteps < self.next_save:
            return
        path = self.folder / f"ppo_{self.num_timesteps}_steps.zip"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.model.save(path)
        save_training_state(path, self.model, self.eval_env)
        self.next_save = (self.num_timesteps // self.save_freq + 1) * self.save_freq

    def _on_step(self) -> bool:
        return True


def _record_paths(model: PPO, run_dir: pathlib.Path, config: dict[str, Any]) -> None:
    """Write into ``config.yml`` which sampler and which update trained the model (both, when one changed)."""
    paths = dict(config.get("paths") or {})
    for part, ran in model.paths_run.items():
        if ran:
            paths[part] = ", ".join(ran)
    config["paths"] = paths
    write_atomic(run_dir / CONFIG_FILE, yaml.safe_dump(config, sort_keys=False))


#: what a run folder may hold, in the order the end summary lists what is there
RUN_FILES = ("model.zip", "best_model.zip", "evaluations.npz", "checkpoints/", "config.yml", "progress.csv")


def _summary(
    model: PPO, run_dir: pathlib.Path, config: dict[str, Any], evaluation: EvalCallback | None, seconds: float,
    steps: int,
) -> None:  # fmt: skip
    """The end of a run: final and best evaluation, steps, time, where the files are, what to run next."""
    if evaluation is not None and evaluation.evaluations_results:  # the run's last evaluation is the final model's
        returns = np.asarray(evaluation.evaluations_results[-1])
        mean, std = float(returns.mean()), float(returns.std())
    else:
        seed = config["seed"] + 20_000
        env = make_env_from_id(config["env"], n_envs=1, seed=seed, env_kwargs=config.get("env_kwargs"))
        mean, std = evaluate_policy(model, env, n_eval_episodes=config["eval_episodes"], deterministic=True)  # type: ignore[assignment]
    print(f"\n{config['env']}: {model.num_timesteps:,} env steps, {steps:,} in this session in {seconds:.1f} s "
          f"({steps / max(seconds, 1e-9):,.0f} steps/s)")  # fmt: skip
    print(f"  final evaluation: {mean:.1f} ± {std:.1f} over {config['eval_episodes']} deterministic episodes")
    print(f"  best evaluation:  {_best_evaluation(evaluation)}")
    files = [name for name in RUN_FILES if (run_dir / name.rstrip("/")).exists()]
    print(f"  run folder:  {run_dir}  ({', '.join(files)})")
    print(f"  next:        roboppo-zoo enjoy --run {run_dir}")
    print(f"               roboppo-zoo plot {run_dir} --out curves.png")
    print(f"               roboppo-zoo export --run {run_dir} --out policy.onnx")
    print(f"               tensorboard --logdir {config.get('tensorboard_log') or run_dir.parent}")


def _evaluation(model: PPO, run_dir: pathlib.Path, config: dict[str, Any]) -> EvalCallback | None:
    """The periodic evaluation (None when ``--eval-freq off``), continuing the run's history up to the model's steps."""
    if config["eval_freq"] is None:
        return None
    eval_env = make_env_from_id(
        config["env"], n_envs=1, seed=config["seed"] + 10_000, env_kwargs=config.get("env_kwargs")
    )
    if model.dict_observation_space is not None:  # flattened as the training env is
        eval_env = FlattenDictVecEnv(eval_env)
    evaluation = EvalCallback(
        eval_env, n_eval_episodes=config["eval_episodes"], eval_freq=max(config["eval_freq"] // model.n_envs, 1),
        best_model_save_path=str(run_dir), log_path=str(run_dir), verbose=1,
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
        return "none (--eval-freq off)"
    return f"{evaluation.best_mean_reward:.1f} (best_model.zip)"  # the final evaluation at least: every run has one


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


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``train``; the handler each runs."""
    parser.set_defaults(handler=train, check=_check)
    parser.add_argument("--env", default=None, help="registered env id")
    parser.add_argument("--seed", type=int, help="random seed (default: 0)")
    parser.add_argument(
        "-n", "--n-timesteps", type=flag_type("n_timesteps"), help="env steps (default: the zoo entry's); with "
        "--resume, the run's new budget",
    )  # fmt: skip
    parser.add_argument("--n-envs", type=flag_type("n_envs"), help="env copies (default: the zoo entry's)")
    parser.add_argument("--device", help="torch device (default: auto)")
    parser.add_argument(
        "--env-threads", type=flag_type("threads"), help="threads stepping a MuJoCo batch (default: the cores)"
    )
    parser.add_argument(
        "--torch-threads", type=flag_type("threads"), help="torch threads (1 is fastest for small networks)"
    )
    parser.add_argument("-p", action="append", metavar="KEY=VALUE", help="override a hyperparameter (repeatable)")
    parser.add_argument(
        "-params", "--hyperparams", nargs="+", metavar="KEY:VALUE", dest="params",
        help="rl-zoo3's form of -p: key:value pairs (values read as YAML, never evaluated)",
    )  # fmt: skip
    parser.add_argument(
        "--env-kwargs", nargs="+", metavar="KEY:VALUE", help="keywords of the env (values read as YAML), e.g. "
        "reset_noise_scale:0.01",
    )  # fmt: skip
    parser.add_argument("--tensorboard-log", type=pathlib.Path, help="also write TensorBoard events under this folder")
    parser.add_argument("--hparams", type=pathlib.Path, default=None, help="a ppo.yml (default: zoo_hparams/)")
    parser.add_argument("-f", "--log-folder", type=pathlib.Path, help="where run folders go (default: runs)")
    parser.add_argument(
        "--eval-freq", type=flag_type("eval_freq", allow_off=True), help='env steps between evaluations, or "off" '
        "(default: 10000)",
    )  # fmt: skip
    parser.add_argument(
        "--eval-episodes", type=flag_type("eval_episodes"), help="episodes per evaluation (default: 10)"
    )
    parser.add_argument(
        "--save-freq", type=flag_type("save_freq", allow_off=True), help="env steps between checkpoints (each at the "
        'first rollout boundary past a multiple, with its training state), or "off" (default: 50000)',
    )  # fmt: skip
    parser.add_argument(
        "--resume", type=pathlib.Path, default=None, metavar="RUN_DIR",
        help="continue a run (with --n-timesteps: to a new budget)",
    )  # fmt: skip
    parser.add_argument("--no-progress-bar", action="store_true", help="no progress bar (logs only)")


def _check(args: argparse.Namespace) -> str | None:
    return (
        "train needs --env ID, or --resume RUN_DIR to continue a run"
        if args.env is None and args.resume is None
        else None
    )
