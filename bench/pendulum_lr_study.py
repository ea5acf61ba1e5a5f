"""Settings of RoboInvertedPendulum-v0's zoo entry over many seeds: time to solve and the final policy.

    python bench/pendulum_lr_study.py lin2e-3-clip-lin lin2e-3-8envs --seeds 20 --torch-threads 1 \\
        --out bench/results/pendulum_robustness_threads1.md

Each setting trains ``PPO("MlpPolicy", "RoboInvertedPendulum-v0", seed=s, **setting)`` for the
entry's whole budget (every other value from the entry) and evaluates every 1,000 steps
(10 deterministic episodes): the first evaluation at or above 950 is when the quickstart would stop,
the last is what ``PPO("MlpPolicy", "RoboInvertedPendulum-v0").learn()`` hands back.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np
import torch
from stable_baselines3.common.callbacks import EvalCallback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _report import publish

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.common.schedules import LinearSchedule

ENV = "RoboInvertedPendulum-v0"
# 8 envs x 32 steps: the entry's batch of 256 in shorter rollouts
EIGHT_ENVS = {"learning_rate": LinearSchedule(2e-3), "n_envs": 8, "n_steps": 32}
SETTINGS: dict[str, dict] = {
    "const1e-3": {"learning_rate": 1e-3},
    "lin1e-3": {"learning_rate": LinearSchedule(1e-3)},
    "lin2e-3": {"learning_rate": LinearSchedule(2e-3)},
    "lin2e-3-ent1e-2": {"learning_rate": LinearSchedule(2e-3), "ent_coef": 0.01},
    "lin2e-3-clip-lin": {"learning_rate": LinearSchedule(2e-3), "clip_range": LinearSchedule(0.2)},
    "lin2e-3-8envs": EIGHT_ENVS,
    "lin2e-3-8envs-raw-obs": {**EIGHT_ENVS, "policy_kwargs": {"normalize_obs": False}},
    "lin2e-3-8envs-raw-adv": {**EIGHT_ENVS, "normalize_advantage": False},
    "lin2e-3-std-0.5": {"learning_rate": LinearSchedule(2e-3), "policy_kwargs": {"log_std_init": -0.5}},
}


def run(name: str, seed: int) -> dict:
    model = PPO("MlpPolicy", ENV, seed=seed, **SETTINGS[name])
    with tempfile.TemporaryDirectory() as folder:
        evaluation = EvalCallback(
            make_env_from_id(ENV, seed=10_000 + seed), n_eval_episodes=10, eval_freq=1000 // model.n_envs,
            log_path=folder, verbose=0,
        )  # fmt: skip
        model.learn(callback=evaluation, progress_bar=False)
    means = [float(np.mean(r)) for r in evaluation.evaluations_results]
    first = next((t for t, m in zip(evaluation.evaluations_timesteps, means, strict=True) if m >= 950), None)
    return {"first_solve": first, "final": means[-1], "dips_after_solve": _dips(means)}


def _dips(means: list[float]) -> int:
    """Evaluations below 950 after the first at or above it."""
    solved = next((i for i, m in enumerate(means) if m >= 950), len(means))
    return sum(m < 950 for m in means[solved:])


def table(results: dict[str, list[dict]]) -> str:
    lines = [
        "| learning rate | solved (≥ 950 at some evaluation) | steps to 950 (mean, per seed) | final ≥ 950 "
        "| final (per seed) | evaluations below 950 after solving |",
        "|---|---:|---|---:|---|---:|",
    ]
    for name, runs in results.items():
        firsts = [r["first_solve"] for r in runs]
        solved = [f for f in firsts if f is not None]
        finals = [r["final"] for r in runs]
        per_seed = ", ".join(f"{f:,}" if f else "-" for f in firsts)
        lines.append(
            f"| {name} | {len(solved)}/{len(runs)} | {np.mean(solved):,.0f} ({per_seed}) "
            f"| {sum(f >= 950 for f in finals)}/{len(runs)} | {', '.join(f'{f:,.0f}' for f in finals)} "
            f"| {sum(r['dips_after_solve'] for r in runs)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("settings", nargs="+", choices=sorted(SETTINGS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--torch-threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    results = {}
    for name in args.settings:
        results[name] = []
        for seed in range(args.seeds):
            results[name].append(run(name, seed))
            print(name, seed, json.dumps(results[name][-1]), flush=True)
    publish(table(results), args.out)


if __name__ == "__main__":
    main()
