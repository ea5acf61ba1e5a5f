"""``roboppo-zoo benchmark``: every zoo entry over several seeds, beside stock SB3, as a table and plots.

For each env: ``train`` runs (the zoo entry's budget unless ``--n-timesteps``) into
``<out>/runs``, each evaluated deterministically at the end; then, unless ``--no-sb3``, stock SB3
PPO with rl-baselines3-zoo's tuned hyperparameters on the Gymnasium twin, same steps and seeds.
Writes ``<out>/benchmark.md`` (mean ± std return, steps, wall time, steps per second) and one
learning-curve PNG per env. roboppo's wall time includes its periodic evaluations (they draw the
curves); stock SB3 trains without them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.hparams import load_ppo_hparams
from roboppo.ppo import PPO
from roboppo.zoo.baselines import RL_ZOO3_PPO, evaluate_stock_sb3, train_stock_sb3
from roboppo.zoo.runs import write_atomic

DEFAULT_ENVS = ["RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0", "RoboHopper-v0"]


@dataclass
class Row:
    env_id: str
    system: str
    seed: int
    steps: int
    seconds: float
    final_return: float


def run_roboppo(args: argparse.Namespace, env_id: str, seed: int) -> Row:
    from roboppo.zoo.train import train

    budget = args.n_timesteps or load_ppo_hparams(env_id).n_timesteps
    log_folder = args.out / "runs" / env_id
    before = set(log_folder.glob("*")) if log_folder.exists() else set()
    train_args = argparse.Namespace(
        resume=None, env=env_id, seed=seed, n_timesteps=budget, n_envs=None, device="auto", p=None, hparams=None,
        log_folder=log_folder, eval_freq=args.eval_freq, eval_episodes=args.eval_episodes,
        save_freq=max(budget // 4, 1), no_progress_bar=True, env_threads=None, torch_threads=None,
    )  # fmt: skip
    start = time.perf_counter()
    train(train_args)
    seconds = time.perf_counter() - start
    (run_dir,) = set(log_folder.glob("*")) - before
    model = PPO.load(run_dir / "model.zip")
    eval_env = make_env_from_id(env_id, seed=20_000 + seed)
    final, _ = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
    return Row(env_id, "roboppo", seed, model.num_timesteps, seconds, float(np.mean(final)))


def run_sb3(args: argparse.Namespace, env_id: str, seed: int, budget: int) -> Row:
    model, env, seconds = train_stock_sb3(env_id, seed, budget)
    final = evaluate_stock_sb3(model, env, env_id, 20_000 + seed, episodes=args.eval_episodes)
    return Row(env_id, "sb3 + rl-zoo3", seed, model.num_timesteps, seconds, final)


def table(rows: list[Row]) -> str:
    lines = [
        "| env | system | seeds | env steps | final return (mean ± std) | wall time / run | steps/s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for env_id in dict.fromkeys(r.env_id for r in rows):
        for system in dict.fromkeys(r.system for r in rows if r.env_id == env_id):
            group = [r for r in rows if r.env_id == env_id and r.system == system]
            returns = [r.final_return for r in group]
            spread = statistics.pstdev(returns) if len(returns) > 1 else 0.0
            seconds = statistics.mean(r.seconds for r in group)
            lines.append(
                f"| {env_id} | {system} | {len(group)} | {group[0].steps:,} | {statistics.mean(returns):,.1f} ± "
                f"{spread:,.1f} | {seconds:,.0f} s | {group[0].steps / seconds:,.0f} |"
            )
    return "\n".join(lines)


def benchmark(args: argparse.Namespace) -> int:
    from roboppo.zoo.media import plot

    for env_id in args.envs:
        check_env_id(env_id)
    rows: list[Row] = []
    for env_id in args.envs:
        for seed in range(args.seeds):
            rows.append(run_roboppo(args, env_id, seed))
            print(f"{env_id} roboppo seed {seed}: {rows[-1].final_return:,.1f}", flush=True)
            if not args.no_sb3 and env_id in RL_ZOO3_PPO:
                rows.append(run_sb3(args, env_id, seed, rows[-1].steps))
                print(f"{env_id} stock SB3 seed {seed}: {rows[-1].final_return:,.1f}", flush=True)
        runs = sorted((args.out / "runs" / env_id).glob("*"))
        plot(argparse.Namespace(runs=runs, out=args.out / f"{env_id}.png"))
    text = table(rows)
    command = " ".join(["roboppo-zoo", *sys.argv[1:]]) if sys.argv[0].endswith("roboppo-zoo") else None
    write_atomic(args.out / "benchmark.md", (f"`{command}`\n\n" if command else "") + text + "\n")
    print(text)
    return 0
