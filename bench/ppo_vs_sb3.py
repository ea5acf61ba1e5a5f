"""roboppo PPO against stock Stable-Baselines3 PPO, side by side in one process.

Both systems get the same hyperparameters (roboppo's ``zoo_hparams/ppo.yml`` entry for the
pendulum, rl-baselines3-zoo's tuned values for Hopper), the same env steps and the same seeds.
Stock SB3 runs its diagonal-Gaussian ``MlpPolicy`` on the Gymnasium v5 env
with ``VecNormalize`` (observations and rewards, as rl-baselines3-zoo's ``normalize: true``);
roboppo runs its tanh-Gaussian policy with in-policy observation normalization.

Reported per env and system, mean over seeds: environment steps per second of the whole
``learn()`` call, and the return of 10 deterministic evaluation episodes after training.

    python bench/ppo_vs_sb3.py                       # the README table
    python bench/ppo_vs_sb3.py --envs RoboInvertedPendulum-v0 --seeds 1 --steps 5000
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time
from dataclasses import dataclass

import torch as th
from _report import publish
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.zoo import ZooEntry, load_ppo_hparams
from roboppo.zoo.baselines import RL_ZOO3_PPO, evaluate_stock_sb3, train_stock_sb3

DEFAULT_STEPS = {"RoboInvertedPendulum-v0": 10_000, "RoboHopper-v0": 100_000}


def bench_hparams(env_id: str) -> ZooEntry:
    """The settings both systems get: rl-zoo3's for Hopper, roboppo's zoo entry otherwise."""
    if env_id == "RoboHopper-v0":
        return ZooEntry(
            env_id, 1_000_000, 1, RL_ZOO3_PPO[env_id], source="rl-baselines3-zoo hyperparams/ppo.yml [Hopper-v4]"
        )
    return load_ppo_hparams(env_id)


@dataclass
class Result:
    env_id: str
    system: str
    seed: int
    steps: int
    seconds: float
    eval_return: float

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds


def run_roboppo(env_id: str, seed: int, steps: int) -> Result:
    entry = bench_hparams(env_id)
    model = PPO("MlpPolicy", env_id, seed=seed, hyperparams=entry)
    start = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - start
    eval_env = make_env_from_id(env_id, n_envs=1, seed=10_000 + seed)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
    return Result(env_id, "roboppo", seed, model.num_timesteps, seconds, float(mean_return))


def run_sb3(env_id: str, seed: int, steps: int) -> Result:
    entry = bench_hparams(env_id)
    policy_kwargs = {k: v for k, v in entry.ppo_kwargs.get("policy_kwargs", {}).items() if k in SB3_POLICY_KEYS}
    kwargs = {**entry.ppo_kwargs, "policy_kwargs": policy_kwargs}
    model, env, seconds = train_stock_sb3(env_id, seed, steps, kwargs, n_envs=entry.n_envs)
    return Result(
        env_id, "sb3", seed, model.num_timesteps, seconds, evaluate_stock_sb3(model, env, env_id, 10_000 + seed)
    )


SB3_POLICY_KEYS = {"net_arch", "activation_fn", "log_std_init", "ortho_init"}


def markdown_table(results: list[Result]) -> str:
    lines = [
        "| env | system | env steps | steps/s | eval return (mean ± std over seeds) | speed vs sb3 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for env_id in dict.fromkeys(r.env_id for r in results):
        speeds = {}
        for system in ("sb3", "roboppo"):
            rows = [r for r in results if r.env_id == env_id and r.system == system]
            if not rows:
                continue
            speeds[system] = statistics.mean(r.steps_per_second for r in rows)
            returns = [r.eval_return for r in rows]
            spread = statistics.pstdev(returns) if len(returns) > 1 else 0.0
            ratio = f"{speeds[system] / speeds['sb3']:.2f}x" if "sb3" in speeds else "-"
            lines.append(
                f"| {env_id} | {system} | {rows[0].steps:,} | {speeds[system]:,.0f} "
                f"| {statistics.mean(returns):,.1f} ± {spread:,.1f} ({len(rows)} seeds) | {ratio} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_STEPS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default: per-env budget)")
    parser.add_argument("--out", type=pathlib.Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    th.set_num_threads(1)  # both systems on one torch thread, as the anchors were measured
    results: list[Result] = []
    for env_id in args.envs:
        steps = args.steps or DEFAULT_STEPS.get(env_id, 100_000)
        for seed in range(args.seeds):
            for runner in (run_sb3, run_roboppo):
                result = runner(env_id, seed, steps)
                results.append(result)
                print(
                    f"{result.env_id:32s} {result.system:8s} seed {seed}: {result.steps:,} steps in "
                    f"{result.seconds:.1f} s ({result.steps_per_second:,.0f}/s), eval return {result.eval_return:,.1f}",
                    flush=True,
                )
    publish(markdown_table(results), args.out)


if __name__ == "__main__":
    main()
