"""Training past an entry's budget: the same seeds at 1x and 3x the budget, evaluated along the way.

``PPO("MlpPolicy", id, seed=s).learn(k * budget)`` for each seed and multiple ``k``; an evaluation of
``--eval-episodes`` deterministic episodes every ``--eval-every`` steps, and the final model on
``--final-episodes``. The entry's schedules run over its own budget (then hold their final values),
so a longer run must end where the budget's run ended or better, never lower.

    python bench/budget_study.py --env RoboInvertedDoublePendulum-v0 --seeds 0 1 --multiples 1 3 \\
        --out bench/results/budget_idp.md
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import gymnasium as gym
import numpy as np
from _report import publish
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id


def run(env_id: str, seed: int, multiple: int, args: argparse.Namespace) -> tuple[list[float], float, int]:
    """Evaluation returns along the run, the final mean return and how many final episodes ended early."""
    model = PPO("MlpPolicy", env_id, seed=seed)
    assert model.default_total_timesteps is not None, f"{env_id} has no zoo entry"
    every = max(args.eval_every // model.n_envs, 1)
    with tempfile.TemporaryDirectory() as folder:  # SB3's EvalCallback keeps its history only with a log path
        evaluation = EvalCallback(make_env_from_id(env_id, seed=1000 + seed), n_eval_episodes=args.eval_episodes,
                                  eval_freq=every, log_path=folder, verbose=0)  # fmt: skip
        model.learn(multiple * model.default_total_timesteps, callback=evaluation)
    returns, lengths = evaluate_policy(
        model, make_env_from_id(env_id, seed=2000 + seed), n_eval_episodes=args.final_episodes,
        deterministic=True, return_episode_rewards=True,
    )  # fmt: skip
    curve = [float(np.mean(r)) for r in evaluation.evaluations_results]
    limit = gym.spec(env_id).max_episode_steps or np.inf
    return curve, float(np.mean(returns)), sum(1 for n in lengths if n < limit)  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="RoboInvertedDoublePendulum-v0")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--multiples", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--eval-every", type=int, default=10_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--final-episodes", type=int, default=50)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    lines = [
        f"**{args.env} at {'x, '.join(map(str, args.multiples))}x the entry's budget**, same seeds "
        f"(evaluations of {args.eval_episodes} deterministic episodes every {args.eval_every:,} steps; final model on "
        f"{args.final_episodes} episodes, those that ended before the time limit counted).",
        "",
        "| seed | budget | final return | episodes ended early | lowest evaluation past the budget | evaluations |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for seed in args.seeds:
        for multiple in args.multiples:
            curve, final, early = run(args.env, seed, multiple, args)
            per_budget = len(curve) // multiple
            after = f"{min(curve[per_budget:]):,.0f}" if multiple > 1 else "-"
            shown = ", ".join(f"{value:,.0f}" for value in curve)
            lines.append(
                f"| {seed} | {multiple}x | {final:,.1f} | {early} of {args.final_episodes} | {after} | {shown} |"
            )
            print(lines[-1], flush=True)
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
