"""GAIL learning curves: evaluation return (and fraction of the expert's) against generator steps.

Runs ``roboppo.gail.GAILTrainer`` with the env's ``zoo_hparams/gail.yml`` entry for several seeds,
evaluating the generator (deterministic, on the plain env) every ``--eval-every`` steps, and
prints per seed the first step at which it reached ``--target`` of the expert's return, the best
and the final return.

    python bench/gail_curve.py --env RoboInvertedPendulum-v0 --demos demos/pendulum.npz --seeds 3
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
import torch as th
from _report import publish
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo.common.env_util import make_env_from_id
from roboppo.gail import GAILTrainer, load_demonstrations
from roboppo.zoo.hparams import load_gail_hparams


def run_seed(args: argparse.Namespace, seed: int, expert_return: float) -> dict[str, float]:
    entry = load_gail_hparams(args.env)
    demos = load_demonstrations(args.demos, args.env)
    trainer = GAILTrainer(
        args.env, demos, n_envs=entry.n_envs, seed=seed, ppo_kwargs=entry.ppo_kwargs, **entry.trainer_kwargs
    )
    eval_env = make_env_from_id(args.env, seed=10_000 + seed)
    budget = args.n_timesteps or entry.n_timesteps
    reached, best, final, start = float("nan"), -np.inf, -np.inf, time.perf_counter()
    while trainer.generator.num_timesteps < budget:
        trainer.train(max(args.eval_every, trainer.steps_per_round))
        final = float(evaluate_policy(trainer.generator, eval_env, n_eval_episodes=args.eval_episodes)[0])
        best = max(best, final)
        steps = trainer.generator.num_timesteps
        print(
            f"seed {seed}: {steps:>9,} steps  return {final:9.1f}  ({final / expert_return:.3f} of expert)", flush=True
        )
        if np.isnan(reached) and final >= args.target * expert_return:
            reached = steps
            if args.stop_at_target:
                break
    return {"reached": reached, "best": best, "final": final, "steps": trainer.generator.num_timesteps,
            "seconds": time.perf_counter() - start}  # fmt: skip


def row(seed: int, result: dict[str, float], expert: float) -> str:
    reached = "not reached" if np.isnan(result["reached"]) else f"{result['reached']:,.0f}"
    final = f"{result['final']:,.1f} ({result['final'] / expert:.3f})"
    return (
        f"| {seed} | {reached} | {result['best']:,.1f} | {final} | {result['steps']:,.0f} | {result['seconds']:.0f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True)
    parser.add_argument("--demos", type=pathlib.Path, required=True)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-timesteps", type=int, default=None, help="default: the gail.yml entry's")
    parser.add_argument("--eval-every", type=int, default=5_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.95, help="fraction of the expert's return")
    parser.add_argument("--stop-at-target", action="store_true")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    returns = load_demonstrations(args.demos, args.env).episode_returns
    assert returns is not None, "the demonstrations carry no rewards, so there is no expert return to compare with"
    expert = float(returns.mean())
    rows = [run_seed(args, seed, expert) for seed in range(args.seeds)]
    lines = [
        f"GAIL on {args.env}, {len(returns)} expert episodes averaging {expert:,.1f}; "
        f"evaluation every {args.eval_every:,} steps, {args.eval_episodes} deterministic episodes",
        "",
        f"| seed | steps to {args.target:.0%} of expert | best return | final return (fraction) | steps | seconds |",
        "|---:|---:|---:|---:|---:|---:|",
        *(row(seed, r, expert) for seed, r in enumerate(rows)),
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
