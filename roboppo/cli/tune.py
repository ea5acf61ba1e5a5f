"""``roboppo-zoo tune``: Optuna search over PPO hyperparameters, with pruning and a shared study.

Every worker runs the same command with the same storage URL (``--storage``, else the
``ROBOPPO_STORAGE`` environment variable, else SQLite in ``--log-folder``) and ``--study-name``;
Optuna hands each one the next trial. A trial trains roboppo PPO for at most ``--n-timesteps``
steps (whole rollouts only), evaluating every ``--eval-freq`` steps; the median pruner stops
trials that fall behind. A running trial records a heartbeat every ``--heartbeat`` seconds: when
a worker dies, the next worker to ask for a trial marks its trial FAIL and queues a retry with
the same parameters (on Ray, the driver does so for trials still silent when its workers are done,
and runs the retries). The best trial so far is written as a ready ``ppo.yml`` entry. The storage
URL's password is masked wherever it is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import yaml
from stable_baselines3.common.callbacks import EvalCallback

from roboppo.cli.runs import check_log_folder, file_name, write_atomic
from roboppo.cli.train import apply_threads
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.errors import UserInputError
from roboppo.ppo import PPO
from roboppo.zoo.loader import load_ppo_hparams
from roboppo.zoo.schema import flag_type

NET_ARCHS = {"small": [64, 64], "medium": [128, 128], "large": [256, 256]}
STORAGE_ENV = "ROBOPPO_STORAGE"
MIN_TRIAL_STEPS = 64  # the smallest n_steps choice: below it a trial is too short to compare settings
GRACE_FACTOR = 3  # a running trial is stale after this many heartbeat intervals without one
MAX_RETRY = 2  # re-runs of a trial whose worker died


class TuneError(UserInputError):
    """Bad input to ``tune`` (reported as one ``error:`` line, exit code 2)."""


class StorageError(TuneError):
    """The study's database cannot be used; the message never holds the URL's password."""


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


def fit_budget(settings: dict[str, Any], budget: int) -> tuple[dict[str, Any], int]:
    """Shrink ``n_envs``/``n_steps`` so that a rollout fits in ``budget`` env steps.

    Returns the fitted settings and the steps to train: the most whole rollouts within the budget
    (SB3's ``learn`` only stops between rollouts, so any other count would overrun it).
    """
    n_envs = min(settings["n_envs"], budget)
    n_steps = min(settings["n_steps"], budget // n_envs)
    rollout = n_steps * n_envs
    fitted = {**settings, "n_envs": n_envs, "n_steps": n_steps, "batch_size": min(settings["batch_size"], rollout)}
    return fitted, budget // rollout * rollout


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


def objective(trial: Any, args: argparse.Namespace, env_kwargs: dict[str, Any] | None = None) -> float:
    """Train one sampled configuration within the budget; the last evaluation's mean return.

    The steps trained are kept as the trial's ``num_timesteps`` user attribute.
    """
    import optuna

    settings, steps = fit_budget(sample_ppo(trial), args.n_timesteps)
    entry = load_ppo_hparams(args.env, overrides={k: v for k, v in settings.items() if k != "n_envs"})
    n_envs = settings["n_envs"]
    model = PPO("MlpPolicy", args.env, n_envs=n_envs, env_kwargs=env_kwargs, seed=trial.number, hyperparams=entry)
    evaluation = _PruningEval(
        trial, make_env_from_id(args.env, seed=10_000 + trial.number), n_eval_episodes=args.eval_episodes,
        eval_freq=max(args.eval_freq // n_envs, 1), verbose=0,
    )  # fmt: skip
    model.learn(steps, callback=evaluation)
    trial.set_user_attr("num_timesteps", int(model.num_timesteps))
    if evaluation.pruned:
        raise optuna.TrialPruned()
    return float(evaluation.last_mean_reward if np.isfinite(evaluation.last_mean_reward) else -np.inf)


# -- storage ----------------------------------------------------------------------------------


def storage_url(args: argparse.Namespace) -> str:
    """``--storage``, else ``$ROBOPPO_STORAGE``, else a SQLite file in ``--log-folder``."""
    given = args.storage or os.environ.get(STORAGE_ENV)
    return given or f"sqlite:///{args.log_folder / ('tune_' + args.env + '.db')}"


def mask_url(url: str) -> str:
    """The URL with its password shown as ``***``; :class:`StorageError` if it does not parse."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        raise StorageError(
            f"the storage URL (--storage or ${STORAGE_ENV}) is not a database URL; write it as "
            "dialect+driver://user:password@host:port/database, e.g. postgresql+psycopg2://tuner:PASSWORD@db:5432/"
            "tuning, or sqlite:///path/to/study.db"
        ) from None


def scrub(text: str, url: str) -> str:
    """``text`` with the URL masked and its password, plain or percent-encoded, replaced by ``***``."""
    from sqlalchemy.engine import make_url

    text = text.replace(url, mask_url(url))
    password = make_url(url).password
    if password:
        for form in {str(password), urllib.parse.quote(str(password), safe=""), urllib.parse.quote_plus(str(password))}:
            text = text.replace(form, "***")
    return text


@contextlib.contextmanager
def _storage_errors(url: str) -> Iterator[None]:
    """Turn database and driver errors into a one-line :class:`StorageError` without the password."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except ImportError as error:
        raise StorageError(
            f"no database driver for {mask_url(url)} ({scrub(str(error), url)}); install the one its URL names, "
            "e.g. pip install psycopg2-binary for postgresql+psycopg2://"
        ) from None
    except SQLAlchemyError as error:
        cause = getattr(error, "orig", None) or error
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        detail = scrub(lines[0] if lines else type(cause).__name__, url)
        raise StorageError(
            f"cannot use the study database {mask_url(url)}: {detail}. Check that the server is running and that "
            f"the URL (--storage or ${STORAGE_ENV}) names the right host, port, user, password and database"
        ) from None


def _retry_callback() -> dict[str, Any]:
    """The RDBStorage keyword that re-queues a dead worker's trial (its name changed in Optuna 4.9)."""
    import optuna

    storages: Any = optuna.storages
    if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):
        return {"heartbeat_stale_trial_callback": storages.RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)}
    return {"failed_trial_callback": storages.RetryFailedTrialCallback(max_retry=MAX_RETRY)}


def _rdb_storage(url: str, heartbeat: int) -> Any:
    """An RDBStorage with heartbeats and retries of trials whose worker stopped beating."""
    import optuna

    sqlite = url.startswith("sqlite")
    engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}} if sqlite else {"pool_pre_ping": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(
            url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat, grace_period=GRACE_FACTOR * heartbeat,
            **_retry_callback(),
        )  # fmt: skip


def _open_study(name: str, storage: str, heartbeat: int = 10, attempts: int = 4) -> Any:
    """Create or join a study; workers starting together may race to create the tables, so retry."""
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(attempts):
        try:
            return optuna.create_study(
                study_name=name, storage=_rdb_storage(storage, heartbeat), direction="maximize", load_if_exists=True,
                sampler=optuna.samplers.TPESampler(n_startup_trials=5),
                pruner=optuna.pruners.MedianPruner(n_startup_trials=3),
            )  # fmt: skip
        except SQLAlchemyError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


# -- the command ------------------------------------------------------------------------------


def tune(args: argparse.Namespace) -> int:
    """Run ``--n-trials`` trials in this worker and write the study's best as a ``ppo.yml`` entry.

    :raises TuneError: bad input or an unusable database (``roboppo-zoo`` prints it as one ``error:`` line).
    """
    check_env_id(args.env)
    check_log_folder(args.log_folder)
    if args.n_timesteps < MIN_TRIAL_STEPS:
        raise TuneError(f"--n-timesteps {args.n_timesteps} is too short for a trial; give at least {MIN_TRIAL_STEPS}")
    threads = {"env": args.env, "torch_threads": args.torch_threads, "env_threads": args.env_threads}
    env_kwargs = apply_threads(threads)
    url = storage_url(args)
    shown = mask_url(url)
    if url.startswith("sqlite:///"):
        pathlib.Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    if getattr(args, "ray_address", None):
        return _tune_on_ray(args, url, shown)
    with _storage_errors(url):
        study = _open_study(args.study_name or f"ppo-{args.env}", url, args.heartbeat)
        _optimize(study, args, env_kwargs)
        return _write_best(study, args, shown)


def _optimize(study: Any, args: argparse.Namespace, env_kwargs: dict[str, Any] | None) -> None:
    """``--n-trials`` trials of this worker. A trial that another worker failed as stale meanwhile (its heartbeats
    came late, on a busy machine) cannot be told its result: it is left to the re-run that worker queued, and this
    worker goes on with its other trials."""
    ended = [0]
    left = args.n_trials
    while left > 0:
        try:
            study.optimize(
                lambda trial: objective(trial, args, env_kwargs), n_trials=left,
                show_progress_bar=not args.no_progress_bar, callbacks=[lambda _study, _trial: ended.append(1)],
            )  # fmt: skip
            return
        except ValueError as error:
            if "Cannot tell a FAIL trial" not in str(error):
                raise
            print("a trial of this worker was failed as stale by another worker (late heartbeats); it re-runs there")
            ended.append(1)
        left = args.n_trials - (len(ended) - 1)


def _tune_on_ray(args: argparse.Namespace, url: str, shown: str) -> int:
    """``--ray-workers`` workers of ``--n-trials`` each as Ray tasks on one study; then the best entry, written here."""
    from roboppo.cli.ray_sweep import tune_workers

    if url.startswith("sqlite:///"):  # workers may start in another folder: the same file, by its absolute path
        url = "sqlite:///" + str(pathlib.Path(url.removeprefix("sqlite:///")).resolve())
    shared = {"ray_address": None, "storage": url, "no_progress_bar": True, "log_folder": args.log_folder.resolve(),
              "out": args.out.resolve() if args.out else None}  # fmt: skip
    worker = argparse.Namespace(**{**vars(args), **shared})
    with _storage_errors(url):
        study = _open_study(args.study_name or f"ppo-{args.env}", url, args.heartbeat)  # created once, here
        tune_workers(args, tune, worker)
        queued = _fail_dead_trials(study, args.heartbeat)
        if queued:  # a worker died mid-trial after the others last asked for a trial: no one re-ran its trial yet
            print(f"running {queued} queued trial(s): re-runs of trials whose worker died", flush=True)
            one = argparse.Namespace(**{**vars(args), "ray_workers": 1})
            tune_workers(one, tune, argparse.Namespace(**{**vars(worker), "n_trials": queued}))
        return _write_best(study, args, shown)


def _fail_dead_trials(study: Any, heartbeat: int) -> int:
    """Once every worker has returned, fail the trials still running whose heartbeats stop (Optuna then queues a
    re-run of each with its parameters); return how many trials are queued.

    A trial whose worker died is stale one grace period after its last heartbeat, which may come after every
    other worker has finished. A trial that keeps beating belongs to a worker outside this run (the study is
    shared): it is left to that worker when the wait (the grace period and two more heartbeats) ends.
    """
    import optuna

    def running() -> bool:
        return bool(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)))

    wait = (GRACE_FACTOR + 2) * heartbeat
    deadline = time.monotonic() + wait
    if running():
        print(f"waiting up to {wait} s for trials still running", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        while running() and time.monotonic() < deadline:
            time.sleep(min(1.0, heartbeat))
            optuna.storages.fail_stale_trials(study)
    return len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)))


def _write_best(study: Any, args: argparse.Namespace, shown_url: str) -> int:
    """Write the best complete trial as a complete ``ppo.yml`` entry: every setting its trials trained with.

    ``n_timesteps`` is the zoo entry's training budget; the trials' (shorter) budget is in the comment above it.
    """
    import optuna

    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        print(f"study {study.study_name} ({shown_url}): no trial has completed yet ({len(study.trials)} started)")
        return 0
    best = study.best_trial
    settings, steps = fit_budget(sample_ppo(optuna.trial.FixedTrial(best.params)), args.n_timesteps)
    out = args.out or args.log_folder / f"tune_{file_name(args.env)}_best.yml"
    tuned = load_ppo_hparams(args.env, overrides={k: v for k, v in settings.items() if k != "n_envs"})
    entry = {**tuned.values, "n_timesteps": tuned.n_timesteps, "n_envs": settings["n_envs"]}
    comment = (
        f"# best of {len(complete)} complete trials in study {study.study_name}: mean return {best.value:.1f} after "
        f"{steps:,} env steps per trial (the tuning budget).\n# Every setting the trials trained with, the zoo "
        f"entry's included; n_timesteps is the zoo entry's training budget.\n"
    )
    write_atomic(out, comment + yaml.safe_dump({args.env: entry}, sort_keys=False))
    print(f"study {study.study_name} ({shown_url}): {len(study.trials)} trials, best {best.value:.1f}; entry in {out}")
    return 0


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``tune``; the handler each runs."""
    parser.set_defaults(handler=tune)
    parser.add_argument("--env", required=True, help="registered env id")
    parser.add_argument("--n-trials", type=flag_type("n_trials"), default=20, help="trials for this worker")
    parser.add_argument(
        "--n-timesteps", type=flag_type("n_timesteps"), default=50_000, help="env steps per trial, at most"
    )
    parser.add_argument(
        "--eval-freq", type=flag_type("eval_freq"), default=10_000, help="env steps between evaluations"
    )
    parser.add_argument("--eval-episodes", type=flag_type("eval_episodes"), default=5, help="episodes per evaluation")
    parser.add_argument(
        "--storage", default=None,
        help="study database URL, e.g. postgresql+psycopg2://user:PASSWORD@host/db (default: $ROBOPPO_STORAGE, "
        "else sqlite in --log-folder); its password is never printed",
    )  # fmt: skip
    parser.add_argument("--study-name", default=None, help="default: ppo-<env>")
    parser.add_argument(
        "--heartbeat", type=flag_type("threads"), default=10, metavar="SECONDS",
        help="a running trial's heartbeat; a trial silent for 3 heartbeats is failed and retried (default: 10)",
    )  # fmt: skip
    parser.add_argument(
        "--env-threads", type=flag_type("threads"), help="threads of a MuJoCo batch (default: the cores)"
    )
    parser.add_argument(
        "--torch-threads", type=flag_type("threads"), help="torch threads (1 is fastest for small networks)"
    )
    parser.add_argument("--log-folder", type=pathlib.Path, default=pathlib.Path("runs"), help="where the study goes")
    parser.add_argument(
        "--out", type=pathlib.Path, default=None, help="best entry (default: <log-folder>/tune_<env>_best.yml)"
    )
    parser.add_argument("--no-progress-bar", action="store_true", help="no progress bar")
    parser.add_argument(
        "--ray-address", default=None,
        help="start --ray-workers workers as Ray tasks on this cluster (auto, ray://host:port, host:port, local)",
    )  # fmt: skip
    parser.add_argument("--ray-workers", type=flag_type("jobs"), default=2, help="tuning workers on Ray (default: 2)")
    parser.add_argument("--ray-cpus", type=flag_type("jobs"), default=1, help="CPUs each Ray worker declares")
    parser.add_argument("--ray-gpus", type=float, default=0.0, help="GPUs each Ray worker declares")
