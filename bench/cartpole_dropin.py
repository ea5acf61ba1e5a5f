"""Discrete actions: roboppo.PPO against stock SB3 PPO on CartPole-v1, same hyperparameters, side by side.

All systems use rl-baselines3-zoo's tuned CartPole-v1 entry (8 envs x 32 steps, minibatch 256,
20 epochs, gamma 0.98, GAE 0.8, linear learning rate 1e-3 and clip range 0.2, 100k steps) with
``"MlpPolicy"`` (SB3's categorical action head in every system):

- ``roboppo``: ``roboppo.PPO`` as is, observations normalized inside the policy;
- ``roboppo-raw``: the same with ``policy_kwargs={"normalize_obs": False}``;
- ``sb3``: stock SB3 PPO;
- ``sb3-vecnormalize``: stock SB3 PPO on ``VecNormalize(norm_reward=False)`` (normalized observations).

Every ``--eval-every`` steps each model is evaluated on 10 deterministic episodes of a separate env.
The table gives, per seed, the first step at which the evaluation reached 475 and the final one.

    python bench/cartpole_dropin.py --seeds 0 1 2 3 4 --out bench/results/cartpole_dropin.md
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
from typing import Any

from _report import publish

SOLVED = 475.0
SYSTEMS = ("roboppo", "roboppo-raw", "sb3", "sb3-vecnormalize")


def run(system: str, seed: int, n_timesteps: int, eval_every: int) -> dict[str, Any]:
    """Train one system on one seed; returns its evaluations ``[(steps, mean return), ...]``."""
    import torch as th
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize

    from roboppo import PPO
    from roboppo.cli.baselines import rl_zoo3_cartpole

    th.set_num_threads(1)
    env, eval_env = make_vec_env("CartPole-v1", n_envs=8, seed=seed), make_vec_env("CartPole-v1", seed=10_000 + seed)
    if system == "sb3-vecnormalize":
        env = VecNormalize(env, norm_reward=False)
        eval_env = VecNormalize(eval_env, norm_reward=False, training=False)
    if system.startswith("roboppo"):
        policy_kwargs = {"normalize_obs": system == "roboppo"}
        model: Any = PPO("MlpPolicy", env, seed=seed, policy_kwargs=policy_kwargs, **rl_zoo3_cartpole())
    else:
        model = SB3PPO("MlpPolicy", env, seed=seed, **rl_zoo3_cartpole())
    curve = []
    while model.num_timesteps < n_timesteps:
        model.learn(eval_every, reset_num_timesteps=False)
        if isinstance(env, VecNormalize):
            eval_env.obs_rms = env.obs_rms
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
        curve.append((model.num_timesteps, float(mean)))
        print(system, seed, model.num_timesteps, round(mean, 1), flush=True)
    return {"system": system, "seed": seed, "curve": curve}


def first_solved(curve: list[tuple[int, float]]) -> str:
    return next((f"{steps:,}" for steps, mean in curve if mean >= SOLVED), "never")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-timesteps", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    jobs = [(system, seed, args.n_timesteps, args.eval_every) for seed in args.seeds for system in SYSTEMS]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        results = pool.starmap(run, jobs)
    curves = {(r["system"], r["seed"]): r["curve"] for r in results}
    lines = [
        f"CartPole-v1, rl-zoo3's PPO settings, {args.n_timesteps:,} steps; evaluation: 10 deterministic episodes "
        f"every {args.eval_every:,} steps. Each cell: first step evaluated >= {SOLVED:.0f} / final evaluation.",
        "",
        "| seed | " + " | ".join(SYSTEMS) + " |",
        "|---:|" + "---:|" * len(SYSTEMS),
    ]
    for seed in args.seeds:
        cells = [f"{first_solved(curves[(s, seed)])} / {curves[(s, seed)][-1][1]:.0f}" for s in SYSTEMS]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    lines.append("")
    for system in SYSTEMS:
        reached = sum(first_solved(curves[(system, seed)]) != "never" for seed in args.seeds)
        final = sum(curves[(system, seed)][-1][1] >= SOLVED for seed in args.seeds)
        seeds = len(args.seeds)
        lines.append(f"- {system}: reached 475 on {reached} of {seeds} seeds, final >= 475 on {final}")
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
