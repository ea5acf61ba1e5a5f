"""``roboppo-zoo collect-demos`` and ``gail``."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import yaml
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.hparams import load_gail_hparams
from roboppo.gail import GAILTrainer, collect_demonstrations, load_demonstrations, save_demonstrations
from roboppo.ppo import PPO
from roboppo.zoo.runs import check_log_folder, write_atomic


def collect_demos(args: argparse.Namespace) -> int:
    """Roll a trained policy out deterministically and save the episodes in roboppo's format."""
    check_env_id(args.env)
    model = PPO.load(args.model)
    trajectories = collect_demonstrations(model, args.env, args.episodes, seed=args.seed)
    save_demonstrations(args.out, trajectories, args.env)
    returns = np.array([float(np.sum(t.rews)) for t in trajectories])
    lengths = [len(t.acts) for t in trajectories]
    print(
        f"{args.episodes} episodes of {args.env} from {args.model}: return {returns.mean():.1f} ± {returns.std():.1f}, "
        f"mean length {np.mean(lengths):.0f}; written to {args.out}"
    )
    return 0


def gail(args: argparse.Namespace) -> int:
    """Train a policy by GAIL from demonstrations; write generator, reward net, logs and the resolved config."""
    check_env_id(args.env)
    entry = load_gail_hparams(args.env, args.hparams)
    demos = load_demonstrations(args.demos, args.env, allow_env_mismatch=args.allow_env_mismatch)
    check_log_folder(args.log_folder)
    budget = args.n_timesteps or entry.n_timesteps
    run_dir = args.log_folder / f"gail_{args.env}_seed{args.seed}_{time.strftime('%Y%m%d-%H%M%S')}"
    trainer = GAILTrainer(
        args.env, demos, n_envs=entry.n_envs, seed=args.seed, ppo_kwargs=entry.ppo_kwargs,
        log_dir=run_dir, **entry.trainer_kwargs,
    )  # fmt: skip
    expert_returns = demos.episode_returns
    print(f"GAIL on {args.env}: {len(demos.trajectories)} expert episodes ({demos.source} format), {budget:,} steps")
    trainer.train(budget, progress_bar=not args.no_progress_bar)
    trainer.save(run_dir)
    config = {"env": args.env, "seed": args.seed, "demos": str(args.demos), "n_timesteps": budget, "command": sys.argv}
    write_atomic(run_dir / "config.yml", yaml.safe_dump(config, sort_keys=False))
    eval_env = make_env_from_id(args.env, seed=args.seed + 10_000)
    mean_return, std_return = evaluate_policy(trainer.generator, eval_env, n_eval_episodes=args.eval_episodes)
    print(f"final evaluation: {mean_return:.1f} ± {std_return:.1f} over {args.eval_episodes} deterministic episodes")
    if expert_returns is not None:
        print(f"expert return {expert_returns.mean():.1f}: fraction reached {mean_return / expert_returns.mean():.3f}")
    print(f"run folder: {run_dir} (generator.zip loads with roboppo.PPO.load; tensorboard --logdir {args.log_folder})")
    return 0
