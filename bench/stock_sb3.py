"""Stock SB3 PPO with rl-baselines3-zoo's tuned values on a roboppo env's Gymnasium twin, over seeds.

The stock-SB3 rows of the zoo tables, for budgets too long to run beside roboppo in one
``roboppo-zoo benchmark`` call. Each seed trains in its own process (``--jobs`` at a time, torch on
one thread each) and is scored by 10 deterministic episodes on a fresh twin env.

    python bench/stock_sb3.py --env RoboHopper-v0 --seeds 3 --n-timesteps 1000000 --jobs 3 \\
        --out bench/results/zoo-hopper-sb3/benchmark.md
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import statistics

from _report import publish


def run_seed(env_id: str, seed: int, n_timesteps: int) -> tuple[int, float, float]:
    """(seed, final return, training seconds) of one stock SB3 run."""
    import torch

    from roboppo.cli.baselines import evaluate_stock_sb3, train_stock_sb3

    torch.set_num_threads(1)
    model, env, seconds = train_stock_sb3(env_id, seed, n_timesteps)
    final, _ = evaluate_stock_sb3(model, env, env_id, seed=20_000 + seed)
    print(f"{env_id} sb3 + rl-zoo3 seed {seed}: {final:,.1f} in {seconds:,.0f} s", flush=True)
    return seed, final, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="RoboHopper-v0")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-timesteps", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained at once, one process each")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    jobs = [(args.env, seed, args.n_timesteps) for seed in range(args.seeds)]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        results = sorted(pool.starmap(run_seed, jobs))
    finals = [final for _, final, _ in results]
    seconds = statistics.mean(s for _, _, s in results)
    spread = statistics.pstdev(finals) if len(finals) > 1 else 0.0
    table = "\n".join(
        [
            "| env | system | seeds | env steps | final return (mean ± std) | per seed | wall time / run | steps/s |",
            "|---|---|---:|---:|---:|---|---:|---:|",
            f"| {args.env} | sb3 + rl-zoo3 | {len(finals)} | {args.n_timesteps:,} | "
            f"{statistics.mean(finals):,.1f} ± {spread:,.1f} | {' / '.join(f'{f:,.0f}' for f in finals)} | "
            f"{seconds:,.0f} s | {args.n_timesteps / seconds:,.0f} |",
        ]
    )
    publish(table, args.out)


if __name__ == "__main__":
    main()
