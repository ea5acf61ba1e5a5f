"""GAIL learning curves: evaluation return (and fraction of the expert's) against generator steps.

Runs ``roboppo.gail.GAILTrainer`` with the env's ``zoo_hparams/gail.yml`` entry for several seeds,
evaluating the generator (deterministic, on the plain env) every ``--eval-every`` steps, and
prints per seed the first step at which it reached ``--target`` of the expert's return, the best
and the final return, and the mean over seeds. Seeds train in parallel processes (``--jobs``, torch
on one thread each); with ``--out`` the curves are also drawn next to the table (``.png``) and each
final generator is saved under ``runs/gail_curve/``. ``--n-demos N`` uses the first N expert episodes;
``--bc-batches N`` also trains behaviour cloning (imitation's BC, the same policy network, N
minibatches) on the same demonstrations for each seed and reports it beside GAIL.

    python bench/gail_curve.py --env RoboInvertedPendulum-v0 --demos demos/pendulum.npz --seeds 3
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import time
from typing import Any

import numpy as np
import torch as th
from _report import publish
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.gail import GAILTrainer, load_demonstrations
from roboppo.gail.bc import train_bc
from roboppo.zoo.loader import load_gail_hparams


def run_seed(args: argparse.Namespace, seed: int, expert_return: float) -> dict[str, Any]:
    th.set_num_threads(1)
    entry = load_gail_hparams(args.env)
    demos = load_demonstrations(args.demos, args.env, n_demos=args.n_demos)
    budget = args.n_timesteps or entry.n_timesteps
    trainer = GAILTrainer(
        args.env, demos, n_envs=entry.n_envs, seed=seed, ppo_kwargs=entry.ppo_kwargs,
        schedule_timesteps=args.schedule_timesteps or budget,
        **entry.trainer_kwargs,
    )  # fmt: skip
    eval_env = make_env_from_id(args.env, seed=10_000 + seed)
    cloned = float("nan")
    if args.bc_batches:
        model = PPO("MlpPolicy", make_env_from_id(args.env, seed=seed), seed=seed, **entry.ppo_kwargs)
        train_bc(model, demos, n_batches=args.bc_batches, seed=seed)
        cloned = float(evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes)[0])
        print(
            f"seed {seed}: behaviour cloning  return {cloned:9.1f}  ({cloned / expert_return:.3f} of expert)",
            flush=True,
        )
    reached, best, final, start = float("nan"), -np.inf, -np.inf, time.perf_counter()
    curve: list[tuple[int, float]] = []
    while trainer.generator.num_timesteps < budget:
        trainer.train(max(args.eval_every, trainer.steps_per_round))
        final = float(evaluate_policy(trainer.generator, eval_env, n_eval_episodes=args.eval_episodes)[0])
        best = max(best, final)
        steps = trainer.generator.num_timesteps
        curve.append((steps, final))
        print(
            f"seed {seed}: {steps:>9,} steps  return {final:9.1f}  ({final / expert_return:.3f} of expert)", flush=True
        )
        if np.isnan(reached) and final >= args.target * expert_return:
            reached = steps
            if args.stop_at_target:
                break
    if args.out is not None:
        trainer.save(pathlib.Path("runs/gail_curve") / f"{args.env}_seed{seed}")
    return {"reached": reached, "best": best, "final": final, "steps": trainer.generator.num_timesteps,
            "seconds": time.perf_counter() - start, "curve": curve, "bc": cloned, "seed": seed}  # fmt: skip


def plot(results: list[dict[str, Any]], expert: float, title: str, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for result in results:
        seed = result["seed"]
        steps, returns = zip(*result["curve"], strict=True)
        ax.plot(steps, returns, marker=".", label=f"seed {seed}")
    ax.axhline(expert, color="black", linestyle="--", label="expert")
    ax.axhline(0.9 * expert, color="gray", linestyle=":", label="90% of expert")
    ax.set(xlabel="generator env steps", ylabel="evaluation return", title=title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def row(seed: int, result: dict[str, Any], expert: float) -> str:
    reached = "not reached" if np.isnan(result["reached"]) else f"{result['reached']:,.0f}"
    final = f"{result['final']:,.1f} ({result['final'] / expert:.3f})"
    cloned = "" if np.isnan(result["bc"]) else f" {result['bc']:,.1f} ({result['bc'] / expert:.3f}) |"
    return (
        f"| {seed} |{cloned} {reached} | {result['best']:,.1f} | {final} | {result['steps']:,.0f} "
        f"| {result['seconds']:.0f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True)
    parser.add_argument("--demos", type=pathlib.Path, required=True)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed, first-seed + 1, ...")
    parser.add_argument("--n-timesteps", type=int, default=None, help="default: the gail.yml entry's")
    parser.add_argument(
        "--schedule-timesteps",
        type=int,
        default=None,
        help="steps over which the generator's schedules run (default: the budget)",
    )
    parser.add_argument("--eval-every", type=int, default=5_000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.95, help="fraction of the expert's return")
    parser.add_argument("--stop-at-target", action="store_true")
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained at once, one process each")
    parser.add_argument("--n-demos", type=int, default=None, help="the first N expert episodes only")
    parser.add_argument("--bc-batches", type=int, default=0, help="also behaviour cloning, N minibatches")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    returns = load_demonstrations(args.demos, args.env, n_demos=args.n_demos).episode_returns
    assert returns is not None, "the demonstrations carry no rewards, so there is no expert return to compare with"
    expert = float(returns.mean())
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        seeds = list(range(args.first_seed, args.first_seed + args.seeds))
        rows = pool.starmap(run_seed, [(args, seed, expert) for seed in seeds])
    finals = np.array([r["final"] for r in rows])
    bc_column = " BC return (fraction) |" if args.bc_batches else ""
    lines = [
        f"GAIL on {args.env}, {len(returns)} expert episodes averaging {expert:,.1f}; "
        f"evaluation every {args.eval_every:,} steps, {args.eval_episodes} deterministic episodes",
        "",
        f"| seed |{bc_column} GAIL steps to {args.target:.0%} of expert | best return | final return (fraction) "
        "| steps | seconds |",
        "|---:|" + "---:|" * (6 if args.bc_batches else 5),
        *(row(seed, r, expert) for seed, r in zip(seeds, rows, strict=True)),
        "",
        f"Final return over seeds: {finals.mean():,.1f} ± {finals.std():,.1f} "
        f"({finals.mean() / expert:.3f} of the expert's return).",
    ]
    if args.bc_batches:
        cloned = np.array([r["bc"] for r in rows])
        lines.append(
            f"Behaviour cloning ({args.bc_batches:,} minibatches): {cloned.mean():,.1f} ± {cloned.std():,.1f} "
            f"({cloned.mean() / expert:.3f} of the expert's return)."
        )
    publish("\n".join(lines), args.out)
    if args.out is not None:
        plot(rows, expert, f"GAIL on {args.env}", args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
