"""``roboppo-zoo benchmark``: every zoo entry over several seeds, beside stock SB3, with interval estimates.

For each env: ``train`` runs (the zoo entry's budget unless ``--n-timesteps``) for seeds
``--first-seed`` ... ``--first-seed + --seeds - 1`` into ``<out>/runs``, ``--jobs`` at a time in
separate processes, each evaluated deterministically at the end on ``--final-episodes`` episodes. The
same command continues an interrupted benchmark: a seed whose run finished is only evaluated, and an
unfinished run continues from its last checkpoint exactly as it would have gone on (its training
state is saved beside each checkpoint); ``benchmark.md`` is rewritten as each run ends. The
settings roboppo's runs train with are recorded in ``<out>/<env>_settings.json``; a later benchmark
into the same folder with other settings is refused, so kept rows and runs never stand for them.
then, unless ``--no-sb3``, stock SB3 PPO with rl-baselines3-zoo's tuned hyperparameters on the
Gymnasium twin, same steps and seeds; an interrupted stock run continues from its last checkpoint too.

Writes ``<out>/benchmark.md``: every seed's final return; per system mean ± std and the
interquartile mean with its 95% stratified-bootstrap interval (``rliable``); and per seed the env
steps and wall-clock seconds until the periodic evaluation first reached the env's target. Plots:
learning curves (``<env>.png``) and performance profiles (``<env>_profile.png``). roboppo's wall
time includes its periodic evaluations (they draw the curves); stock SB3 trains without them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import json
import multiprocessing
import os
import pathlib
import statistics
import sys
import threading
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.evaluation import evaluate_policy

import roboppo_envs
from roboppo.cli.baselines import RL_ZOO3_PPO, evaluate_stock_sb3, train_stock_sb3
from roboppo.cli.runs import check_log_folder, file_name, resume_point, saved_steps
from roboppo.cli.stats import early_ends, iqm_intervals, performance_profile, score, time_to_target, timings
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.errors import UserInputError
from roboppo.common.files import atomic_target, write_atomic
from roboppo.common.training_state import state_path
from roboppo.ppo import PPO
from roboppo.ppo.settings import sb3_default_settings
from roboppo.zoo.loader import load_ppo_hparams
from roboppo.zoo.schema import flag_type
from roboppo_envs.mujoco.vector_env import available_cpus

DEFAULT_ENVS = ["RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0", "RoboHopper-v0"]
# the return each entry is tuned to reach (README, "Results"); other ids use their reward_threshold
TARGETS = {"RoboHopper-v0": 3000.0, "RoboInvertedDoublePendulum-v0": 9100.0, "RoboInvertedPendulum-v0": 950.0}
ROBOPPO, STOCK = "roboppo", "sb3 + rl-zoo3"
UNFINISHED = "unfinished"  # where a seed's run that cannot be continued exactly is kept


Runner = Callable[[argparse.Namespace, str, int], "Row"]


@dataclasses.dataclass
class Row:
    env_id: str
    system: str
    seed: int
    steps: int
    seconds: float
    final_return: float
    to_target: tuple[int, float] | None = None  # env steps and seconds until the evaluation first reached the target
    episodes: int = 0  # episodes of the final evaluation
    early_ends: int | None = None  # of those, how many terminated before the time limit (a fall); None: not counted


class SettingsMismatchError(UserInputError, ValueError):
    """An ``--out`` folder's runs of an env trained with other settings than those asked for now."""


def settings_record(env_id: str, hparams: str | None) -> dict:
    """The settings roboppo's runs of ``env_id`` train with, as the hyperparameter file writes them (the
    budget left out: kept rows and runs are checked against it already)."""
    values = load_ppo_hparams(env_id, hparams).values
    return {key: value for key, value in values.items() if key != "n_timesteps"}


def check_settings(args: argparse.Namespace, env_id: str) -> None:
    """Refuse an ``--out`` folder whose runs of ``env_id`` used other settings; record them where none are.

    A folder made before this record existed is taken to hold runs of the settings asked for now."""
    path = args.out / f"{file_name(env_id)}_settings.json"
    current = settings_record(env_id, getattr(args, "hparams", None))
    if not path.is_file():
        write_atomic(path, json.dumps(current, indent=1, sort_keys=True) + "\n")
        return
    # SB3's defaults filled in: a file that leaves out ``ent_coef: 0.0`` holds the settings of one that writes it
    defaults = sb3_default_settings()
    recorded, asked = defaults | json.loads(path.read_text()), defaults | current
    changed = sorted(key for key in recorded.keys() | asked.keys() if recorded.get(key) != asked.get(key))
    if changed:
        raise SettingsMismatchError(
            f"{args.out} holds runs of {env_id} trained with other settings ({', '.join(changed)} differ from "
            f"{path}); pass another --out folder, or delete {path.name}, rows/{file_name(env_id)} and "
            f"runs/{file_name(env_id)} there to remake the table with these settings."
        )


def final_evaluation(model: PPO, env_id: str, seed: int, episodes: int) -> tuple[float, int]:
    """Mean return of ``episodes`` deterministic episodes on a fresh env, and how many ended before the time limit."""
    eval_env = make_env_from_id(env_id, seed=20_000 + seed)
    returns, lengths = evaluate_policy(
        model, eval_env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return float(np.mean(returns)), early_ends(lengths, env_id)


def target_of(env_id: str) -> float | None:
    """The return an env's time to target is measured to: roboppo's own target, else Gymnasium's threshold, if any."""
    return TARGETS.get(env_id, gym.spec(env_id).reward_threshold)


def target_text(env_id: str) -> str:
    target = target_of(env_id)
    return f"{env_id} {score(target)}" if target is not None else f"{env_id} none (no reward threshold)"


def run_roboppo(args: argparse.Namespace, env_id: str, seed: int) -> Row:
    """One ``train`` run into ``<out>/runs/<env>/``, evaluated at the end on a fresh env."""
    from roboppo.cli.train import INTERRUPTED, train

    hparams = getattr(args, "hparams", None)
    budget = args.n_timesteps or load_ppo_hparams(env_id, hparams).n_timesteps
    log_folder = args.out / "runs" / file_name(env_id) / f"seed{seed}"
    torch_threads, env_threads = run_threads(args, env_id)
    train_args = argparse.Namespace(
        resume=None, env=env_id, seed=seed, n_timesteps=budget, n_envs=None, device="auto", p=None, hparams=hparams,
        log_folder=log_folder, eval_freq=args.eval_freq, eval_episodes=args.eval_episodes,
        save_freq=max(budget // 4, 1), no_progress_bar=True, torch_threads=torch_threads, env_threads=env_threads,
        params=None, env_kwargs=None, tensorboard_log=None,
    )  # fmt: skip
    kept = kept_row(args, env_id, ROBOPPO, seed, budget)
    if kept is not None:
        return kept
    run_dir = finished_run(log_folder, budget)
    if run_dir is None:
        unfinished = resumable_run(log_folder)
        before = 0.0 if unfinished is None else next((t for _, t in reversed(timings(unfinished))), 0.0)
        if unfinished is not None:  # continue it exactly from its last checkpoint, as if never interrupted
            train_args = argparse.Namespace(
                resume=unfinished, n_timesteps=budget, no_progress_bar=True, torch_threads=train_args.torch_threads,
                env_threads=train_args.env_threads,
            )  # fmt: skip
        start = time.perf_counter()
        if train(train_args) == INTERRUPTED:  # Ctrl-C or SIGTERM stops the benchmark, not just this seed
            raise KeyboardInterrupt
        seconds = before + time.perf_counter() - start
        (run_dir,) = run_dirs(log_folder)
    else:  # the training time the finished run logged last
        seconds = next((elapsed for _, elapsed in reversed(timings(run_dir))), float("nan"))
    model = PPO.load(run_dir / "model.zip")
    final, early = final_evaluation(model, env_id, seed, args.final_episodes)
    target = target_of(env_id)
    reached = None if target is None else time_to_target(run_dir, target)
    row = Row(env_id, ROBOPPO, seed, model.num_timesteps, seconds, final, reached, args.final_episodes, early)
    keep_row(args, row, run_dir / "evaluations.npz")
    return row


def run_threads(args: argparse.Namespace, env_id: str) -> tuple[int | None, int | None]:
    """Torch and MuJoCo threads of one run: its share of the cores beside ``--jobs - 1`` others (a Ray task: the
    CPUs it declares); None leaves a lone run's defaults."""
    mujoco_batch = roboppo_envs.has_vector_env(env_id) and not roboppo_envs.is_brax_id(env_id)
    if getattr(args, "ray_address", None):
        return 1, int(args.ray_cpus) if mujoco_batch else None
    if args.jobs == 1:
        return None, None
    return 1, max(1, available_cpus() // args.jobs) if mujoco_batch else None


def row_path(args: argparse.Namespace, env_id: str, system: str, seed: int) -> pathlib.Path:
    """Where a finished run's row is kept: small enough to commit, so a fresh checkout continues the table."""
    folder = "sb3" if system == STOCK else "rows"
    return args.out / folder / file_name(env_id) / f"seed{seed}.json"


def kept_row(args: argparse.Namespace, env_id: str, system: str, seed: int, budget: int) -> Row | None:
    """The row an earlier benchmark kept for this run, if it trained the budget and was evaluated as asked."""
    path = row_path(args, env_id, system, seed)
    if not path.is_file():
        return None
    fields = json.loads(path.read_text())
    fields["to_target"] = tuple(fields["to_target"]) if fields.get("to_target") else None
    row = Row(**fields)
    return row if row.steps >= budget and row.episodes == args.final_episodes else None


def keep_row(args: argparse.Namespace, row: Row, evaluations: pathlib.Path | None = None) -> None:
    """Write ``row`` (and a copy of its periodic evaluations, which draw the learning curves) beside the table."""
    path = row_path(args, row.env_id, row.system, row.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dataclasses.asdict(row)))
    if evaluations is not None and evaluations.is_file():
        with atomic_target(path.with_suffix(".npz")) as partial:
            partial.write_bytes(evaluations.read_bytes())


def finished_run(log_folder: pathlib.Path, budget: int) -> pathlib.Path | None:
    """A run of this seed that an earlier benchmark finished (so a re-run only reports it), else None."""
    if not log_folder.is_dir():
        return None
    for run_dir in run_dirs(log_folder):
        if (run_dir / "model.zip").is_file() and saved_steps(run_dir / "model.zip") >= budget:
            return run_dir
    return None


def resumable_run(log_folder: pathlib.Path) -> pathlib.Path | None:
    """An unfinished run of this seed with a checkpoint it can continue from exactly (training state beside it).

    Any other unfinished run is kept, moved into ``<seed folder>/unfinished/``, and the seed trains again
    from the start.
    """
    if not log_folder.is_dir():
        return None
    for run_dir in run_dirs(log_folder):
        try:
            point, steps = resume_point(run_dir)
        except UserInputError:
            point = None
        if point is not None and state_path(point).is_file():
            print(f"{run_dir} did not finish; continuing it from {point.name} ({steps:,} steps)", flush=True)
            return run_dir
        kept = log_folder / UNFINISHED / run_dir.name
        kept.parent.mkdir(exist_ok=True)
        run_dir.rename(kept)
        print(f"{run_dir} did not finish and has no training state; kept as {kept}, training this seed again")
    return None


def run_dirs(log_folder: pathlib.Path) -> list[pathlib.Path]:
    """The run folders of one seed (not the unfinished ones set aside)."""
    return sorted(path for path in log_folder.iterdir() if path.is_dir() and path.name != UNFINISHED)


def run_sb3(args: argparse.Namespace, env_id: str, seed: int, budget: int) -> Row:
    """Stock SB3 on the Gymnasium twin; the row is kept in ``<out>/sb3/<env>/seed<seed>.json`` for a re-run to reuse.

    The run saves a checkpoint every quarter of its budget (``<out>/runs/sb3/<env>/seed<seed>.pkl``); a
    re-run after an interruption continues from it as the uninterrupted run would have gone on.
    """
    kept = kept_row(args, env_id, STOCK, seed, budget)
    if kept is not None:
        return kept
    if args.jobs > 1:
        th.set_num_threads(1)  # one core per run, as roboppo's runs beside it
    checkpoint = args.out / "runs" / "sb3" / file_name(env_id) / f"seed{seed}.pkl"
    model, env, seconds = train_stock_sb3(env_id, seed, budget, checkpoint=checkpoint)
    final, early = evaluate_stock_sb3(model, env, env_id, 20_000 + seed, episodes=args.final_episodes)
    row = Row(env_id, STOCK, seed, model.num_timesteps, seconds, final, episodes=args.final_episodes, early_ends=early)
    keep_row(args, row)
    checkpoint.unlink(missing_ok=True)
    return row


def _quiet(runner: Runner, args: argparse.Namespace, env_id: str, seed: int) -> Row:
    """``runner`` in a worker process, its training output kept out of the parent's terminal."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return runner(args, env_id, seed)


def seed_rows(args: argparse.Namespace, runner: Runner, env_id: str, done: list[Row]) -> list[Row]:
    """``runner`` for every seed, ``--jobs`` at a time in fresh processes (one at a time in this one).

    As each run ends, ``benchmark.md`` is rewritten with it and the ``done`` rows before it, so an
    interrupted benchmark leaves the table of what finished.
    """
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    rows: list[Row] = []

    def finished(row: Row) -> None:
        rows.append(_announce(row))
        write_report(args, [*done, *sorted(rows, key=lambda r: r.seed)])

    if args.jobs == 1:
        for seed in seeds:
            finished(runner(args, env_id, seed))
        return rows
    context = multiprocessing.get_context("spawn")  # JAX and MuJoCo's threads do not survive a fork
    watch = {"initializer": exit_with_parent, "initargs": (os.getpid(),)}  # no orphans if the benchmark is killed
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context, **watch) as pool:  # type: ignore[call-overload]
        futures = [pool.submit(_quiet, runner, args, env_id, seed) for seed in seeds]
        for future in concurrent.futures.as_completed(futures):
            finished(future.result())
    return sorted(rows, key=lambda r: r.seed)


def write_report(args: argparse.Namespace, rows: list[Row]) -> str:
    """``<out>/benchmark.md`` with the command that made it; returns the report."""
    text = report(rows)
    command = " ".join(["roboppo-zoo", *sys.argv[1:]]) if pathlib.Path(sys.argv[0]).name == "roboppo-zoo" else None
    write_atomic(args.out / "benchmark.md", (f"`{command}`\n\n" if command else "") + text + "\n")
    return text


def exit_with_parent(parent: int, period: float = 2.0) -> None:
    """In a worker: end this process once the benchmark that started it is gone (killed, not just
    interrupted), instead of training on unseen."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(period)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _announce(row: Row) -> Row:
    reached = "" if row.to_target is None else f"; target at {row.to_target[0]:,} steps ({row.to_target[1]:,.0f} s)"
    print(f"{row.env_id} {row.system} seed {row.seed}: {score(row.final_return, 1)}{reached}", flush=True)
    return row


def summary_table(rows: list[Row]) -> str:
    lines = [
        "| env | system | seeds | env steps | final return (mean ± std) | IQM [95% CI] | worst seed | time / run |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for env_id in dict.fromkeys(r.env_id for r in rows):
        groups = {s: [r for r in rows if r.env_id == env_id and r.system == s] for s in (ROBOPPO, STOCK)}
        groups = {system: group for system, group in groups.items() if group}
        intervals = iqm_intervals({system: np.array([r.final_return for r in g]) for system, g in groups.items()})
        for system, group in groups.items():
            returns = [r.final_return for r in group]
            mean = statistics.mean(returns)
            spread = statistics.pstdev(returns) if len(returns) > 1 else 0.0
            seconds = statistics.mean(r.seconds for r in group)
            lines.append(
                f"| {env_id} | {system} | {len(group)} | {group[0].steps:,} | {score(mean, 1)} ± "
                f"{score(spread, 1, like=mean)} | {intervals[system]} | {score(min(returns), 1)} | {seconds:,.0f} s |"
            )
    return "\n".join(lines)


def seed_table(rows: list[Row]) -> str:
    lines = [
        "| env | system | seed | final return | episodes ended early | env steps to target | seconds to target "
        "| wall time |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        steps, seconds = (
            ("not reached", "") if r.to_target is None else (f"{r.to_target[0]:,}", f"{r.to_target[1]:,.0f}")
        )
        steps, seconds = ("-", "-") if target_of(r.env_id) is None else (steps, seconds)
        if r.system == STOCK:
            steps = "(not evaluated during training)"
        early = "" if r.early_ends is None else f"{r.early_ends} of {r.episodes}"
        lines.append(
            f"| {r.env_id} | {r.system} | {r.seed} | {score(r.final_return, 1)} | {early} | {steps} | {seconds} "
            f"| {r.seconds:,.0f} s |"
        )
    return "\n".join(lines)


def report(rows: list[Row]) -> str:
    targets = ", ".join(target_text(env_id) for env_id in dict.fromkeys(r.env_id for r in rows))
    return (
        f"{summary_table(rows)}\n\nFinal return: mean of {rows[0].episodes} deterministic episodes on a fresh env "
        "after training (an episode ended early: terminated before the time limit, a fall). IQM: "
        "interquartile mean over seeds, 95% stratified-bootstrap interval (rliable).\n\n"
        f"Every seed (targets: {targets}; steps and seconds until the periodic evaluation first reached it, "
        f"evaluations included):\n\n{seed_table(rows)}"
    )


def benchmark(args: argparse.Namespace) -> int:
    from roboppo.cli.media import plot

    args.envs = args.envs or DEFAULT_ENVS
    for env_id in args.envs:
        check_env_id(env_id)
    check_log_folder(args.out, "--out")
    for env_id in args.envs:
        check_settings(args, env_id)
    rows = ray_rows(args) if args.ray_address else local_rows(args)
    for env_id in args.envs:
        runs = [run for seed in sorted((args.out / "runs" / file_name(env_id)).glob("seed*")) for run in run_dirs(seed)]
        if runs:  # absent when every row was kept from an earlier checkout
            plot(argparse.Namespace(runs=runs, out=args.out / f"{file_name(env_id)}.png"))
        finals = {
            s: np.array([r.final_return for r in rows if r.env_id == env_id and r.system == s])
            for s in (ROBOPPO, STOCK)
        }
        performance_profile(
            {s: v for s, v in finals.items() if v.size}, env_id, args.out / f"{file_name(env_id)}_profile.png"
        )
    print(write_report(args, rows))
    return 0


def local_rows(args: argparse.Namespace) -> list[Row]:
    """Each env's seeds in turn, ``--jobs`` at a time on this machine; stock SB3's after roboppo's."""
    rows: list[Row] = []
    for env_id in args.envs:
        mine = seed_rows(args, run_roboppo, env_id, rows)
        rows += mine
        if not args.no_sb3 and env_id in RL_ZOO3_PPO:  # the same seeds and env steps as roboppo's runs
            rows += seed_rows(args, functools.partial(run_sb3, budget=mine[0].steps), env_id, rows)
    return rows


def ray_rows(args: argparse.Namespace) -> list[Row]:
    """Every (env, seed) run at once as Ray tasks; then stock SB3's, with the env steps roboppo's runs took."""
    from roboppo.cli.ray_sweep import sweep

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    rows: list[Row] = []

    def finished(row: Row) -> None:
        keep_row(args, row)  # on the driver too, where --out is not shared with the workers
        rows.append(_announce(row))
        write_report(args, sorted(rows, key=lambda r: (args.envs.index(r.env_id), r.system != ROBOPPO, r.seed)))

    sweep(args, run_roboppo, [(env_id, seed) for env_id in args.envs for seed in seeds], finished)
    for env_id in [e for e in args.envs if not args.no_sb3 and e in RL_ZOO3_PPO]:
        steps = next(r.steps for r in rows if r.env_id == env_id)
        sweep(args, functools.partial(run_sb3, budget=steps), [(env_id, seed) for seed in seeds], finished)
    return sorted(rows, key=lambda r: (args.envs.index(r.env_id), r.system != ROBOPPO, r.seed))


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``benchmark``; the handler each runs."""
    parser.set_defaults(handler=benchmark)
    parser.add_argument("--envs", nargs="+", default=None, help="env ids (default: the MuJoCo entries)")
    parser.add_argument("--seeds", type=flag_type("seeds"), default=3, help="number of seeds")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed, first-seed + 1, ...")
    parser.add_argument("--jobs", type=flag_type("jobs"), default=1, help="runs at a time, in separate processes")
    parser.add_argument("--n-timesteps", type=flag_type("n_timesteps"), default=None, help="override every budget")
    parser.add_argument(
        "--eval-freq", type=flag_type("eval_freq"), default=10_000, help="env steps between evaluations"
    )
    parser.add_argument("--eval-episodes", type=flag_type("eval_episodes"), default=10, help="episodes per evaluation")
    parser.add_argument(
        "--final-episodes", type=flag_type("eval_episodes"), default=50, help="episodes of each run's final evaluation"
    )
    parser.add_argument("--no-sb3", action="store_true", help="skip the stock SB3 rows")
    parser.add_argument("--hparams", type=pathlib.Path, default=None, help="a ppo.yml (default: zoo_hparams/)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("bench/results/zoo"), help="tables and plots")
    parser.add_argument(
        "--ray-address", default=None,
        help="run every (env, seed) as a Ray task: auto, ray://host:port, host:port, or local (start one)",
    )  # fmt: skip
    parser.add_argument("--ray-cpus", type=flag_type("jobs"), default=1, help="CPUs each Ray task declares (and uses)")
    parser.add_argument("--ray-gpus", type=float, default=0.0, help="GPUs each Ray task declares (fractions allowed)")
