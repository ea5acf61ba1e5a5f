"""Time to solve RoboInvertedPendulum-v0: roboppo's zoo entry against stock SB3 with rl-zoo3's tuned values.

Both systems are evaluated the same way: every 1,000 env steps, 10 deterministic episodes
on a separate env; training stops at the first evaluation averaging >= 950. Stock SB3 runs
on Gymnasium's ``InvertedPendulum-v5`` with ``VecNormalize`` and rl-baselines3-zoo's tuned
``InvertedPendulum`` hyperparameters (the anchor of DEVELOPERS.md: solved in 5-10k steps,
6-11 s on one core). Reported per seed: env steps to solve, training seconds (excluding
evaluation) and total seconds; then means and roboppo/sb3 ratios.

    python bench/pendulum_time_to_solve.py --seeds 5
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch as th
from _report import publish
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from roboppo import PPO
from roboppo.cli.baselines import RL_ZOO3_PPO
from roboppo.common.env_util import make_env_from_id

BUDGET = 50_000
ENV = "RoboInvertedPendulum-v0"
THRESHOLD = 950.0


class TimedEvalCallback(EvalCallback):
    """EvalCallback that also sums the wall-clock time spent evaluating."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eval_seconds = 0.0

    def _on_step(self) -> bool:
        start = time.perf_counter()
        keep_going = super()._on_step()
        self.eval_seconds += time.perf_counter() - start
        return keep_going


@dataclass
class Run:
    system: str
    seed: int
    steps: int
    solved: bool
    train_seconds: float
    total_seconds: float


def solve(system: str, model: Any, eval_env: VecEnv, n_envs: int, seed: int) -> Run:
    stop = StopTrainingOnRewardThreshold(reward_threshold=THRESHOLD)
    evaluation = TimedEvalCallback(
        eval_env, n_eval_episodes=10, eval_freq=1000 // n_envs, callback_on_new_best=stop, verbose=0
    )
    start = time.perf_counter()
    model.learn(BUDGET, callback=evaluation)
    total = time.perf_counter() - start
    solved = evaluation.best_mean_reward >= THRESHOLD
    return Run(system, seed, model.num_timesteps, solved, total - evaluation.eval_seconds, total)


def run_roboppo(seed: int) -> Run:
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=seed)  # the zoo entry's settings
    eval_env = make_env_from_id("RoboInvertedPendulum-v0", seed=10_000 + seed)
    return solve("roboppo", model, eval_env, model.n_envs, seed)


def run_sb3(seed: int) -> Run:
    env = VecNormalize(make_vec_env("InvertedPendulum-v5", n_envs=1, seed=seed), gamma=RL_ZOO3_PPO[ENV]["gamma"])
    model = SB3PPO("MlpPolicy", env, seed=seed, **RL_ZOO3_PPO[ENV])
    eval_env = VecNormalize(make_vec_env("InvertedPendulum-v5", seed=10_000 + seed), training=False, norm_reward=False)
    eval_env.obs_rms = env.obs_rms  # shares the training statistics, as rl-zoo3's evaluation does
    return solve("sb3", model, eval_env, 1, seed)


def summary(runs: list[Run]) -> str:
    lines = [
        "| system | solved | env steps to 950 (mean, per seed) | train s (mean) | total s incl. eval (mean) |",
        "|---|---:|---|---:|---:|",
    ]
    means: dict[str, tuple[float, float, float]] = {}
    for system in ("sb3", "roboppo"):
        rows = [r for r in runs if r.system == system]
        steps = statistics.mean(r.steps for r in rows)
        train = statistics.mean(r.train_seconds for r in rows)
        total = statistics.mean(r.total_seconds for r in rows)
        means[system] = (steps, train, total)
        per_seed = ", ".join(f"{r.steps:,}" for r in rows)
        solved = sum(r.solved for r in rows)
        lines.append(f"| {system} | {solved}/{len(rows)} | {steps:,.0f} ({per_seed}) | {train:.1f} | {total:.1f} |")
    ratios = [means["roboppo"][i] / means["sb3"][i] for i in range(3)]
    lines.append(f"| roboppo / sb3 | | {ratios[0]:.2f} | {ratios[1]:.2f} | {ratios[2]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=pathlib.Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    runs = []
    for seed in range(args.seeds):
        for runner in (run_sb3, run_roboppo):
            run = runner(seed)
            runs.append(run)
            print(
                f"{run.system:8s} seed {seed}: {'solved' if run.solved else 'NOT solved'} after {run.steps:,} steps, "
                f"{run.train_seconds:.1f} s training, {run.total_seconds:.1f} s with evaluation",
                flush=True,
            )
    publish(summary(runs), args.out)


if __name__ == "__main__":
    main()
