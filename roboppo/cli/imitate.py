"""``roboppo-zoo collect-demos``, ``bc`` and ``gail``."""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

import numpy as np
import yaml
from imitation.util import logger as imitation_logger
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo.cli.runs import check_log_folder, new_run_dir, run_name, write_atomic
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.gail import Demonstrations, GAILTrainer, collect_demonstrations, load_demonstrations, save_demonstrations
from roboppo.gail.bc import reset_action_std, train_bc
from roboppo.ppo import PPO
from roboppo.zoo.loader import load_gail_hparams
from roboppo.zoo.schema import flag_type


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


def load_demos(args: argparse.Namespace) -> Demonstrations:
    """The demonstrations named on the command line, with ``--n-demos`` and ``--clip-demo-actions``."""
    return load_demonstrations(
        args.demos, args.env, allow_env_mismatch=args.allow_env_mismatch, n_demos=args.n_demos,
        clip_actions=args.clip_demo_actions, allow_pickle=args.allow_pickle,
    )  # fmt: skip


def bc(args: argparse.Namespace) -> int:
    """Behaviour cloning: fit the policy GAIL would train (the gail.yml entry's) to the demonstrations."""
    check_env_id(args.env)
    entry = load_gail_hparams(args.env, args.hparams)
    demos = load_demos(args)
    check_log_folder(args.log_folder)
    run_dir = new_run_dir(args.log_folder, run_name("bc", args.env, args.seed))
    eval_env = make_env_from_id(args.env, seed=args.seed + 10_000)
    model = PPO("MlpPolicy", make_env_from_id(args.env, seed=args.seed), seed=args.seed, **entry.ppo_kwargs)
    print(f"BC on {args.env}: {len(demos.trajectories)} expert episodes, {demos.n_transitions:,} transitions")
    logger = imitation_logger.configure(str(run_dir), format_strs=["tensorboard", "csv"])
    train_bc(model, demos, n_batches=args.batches, seed=args.seed, logger=logger, progress_bar=not args.no_progress_bar)
    model.save(run_dir / "model.zip")
    config = {"env": args.env, "seed": args.seed, "demos": str(args.demos), "n_demos": len(demos.trajectories),
              "batches": args.batches, "command": sys.argv}  # fmt: skip
    write_atomic(run_dir / "config.yml", yaml.safe_dump(config, sort_keys=False))
    _report(model, eval_env, args.eval_episodes, demos)
    print(f"run folder: {run_dir} (model.zip loads with roboppo.PPO.load)")
    return 0


def gail(args: argparse.Namespace) -> int:
    """Train a policy by GAIL from demonstrations; write generator, reward net, logs and the resolved config."""
    check_env_id(args.env)
    entry = load_gail_hparams(args.env, args.hparams)
    demos = load_demos(args)
    check_log_folder(args.log_folder)
    budget = args.n_timesteps or entry.n_timesteps
    run_dir = new_run_dir(args.log_folder, run_name("gail", args.env, args.seed))
    trainer = GAILTrainer.from_zoo(args.env, demos, seed=args.seed, log_dir=run_dir, hparams=args.hparams)
    eval_env = make_env_from_id(args.env, seed=args.seed + 10_000)
    print(f"GAIL on {args.env}: {len(demos.trajectories)} expert episodes ({demos.source} format), {budget:,} steps")
    if args.init_from_bc:
        generator = trainer.generator
        train_bc(generator, demos, n_batches=args.bc_batches, seed=args.seed, progress_bar=not args.no_progress_bar)
        print("behaviour cloning first:", end=" ")
        _report(generator, eval_env, args.eval_episodes, demos)
        reset_action_std(generator, generator.policy.log_std_init)  # type: ignore[attr-defined]
    config = {"algo": "gail", "env": args.env, "seed": args.seed, "demos": str(args.demos),
              "n_demos": len(demos.trajectories), "init_from_bc": args.init_from_bc, "n_timesteps": budget,
              "hyperparams": trainer.generator.resolved_hyperparams(), "command": sys.argv}  # fmt: skip
    write_atomic(run_dir / "config.yml", yaml.safe_dump(config, sort_keys=False))
    try:
        trainer.train(budget, progress_bar=not args.no_progress_bar)
    except KeyboardInterrupt:  # Ctrl-C: keep what was learned, then stop as the command line does
        trainer.save(run_dir)
        print(f"\nInterrupted at {trainer.generator.num_timesteps:,} generator steps; saved to {run_dir}")
        raise
    trainer.save(run_dir)
    _report(trainer.generator, eval_env, args.eval_episodes, demos)
    print(f"run folder: {run_dir} (generator.zip loads with roboppo.PPO.load; tensorboard --logdir {args.log_folder})")
    return 0


def _report(model: PPO, eval_env: Any, episodes: int, demos: Demonstrations) -> None:
    mean_return, std_return = evaluate_policy(model, eval_env, n_eval_episodes=episodes)
    line = f"final evaluation: {mean_return:.1f} ± {std_return:.1f} over {episodes} deterministic episodes"
    expert_returns = demos.episode_returns
    if expert_returns is not None:
        line += (
            f"; expert return {expert_returns.mean():.1f}: fraction reached {mean_return / expert_returns.mean():.3f}"
        )
    print(line)


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``collect-demos``, ``bc``, ``gail``; the handler each runs."""
    if command == "collect-demos":
        parser.set_defaults(handler=collect_demos)
        parser.add_argument("--model", type=pathlib.Path, required=True, help="a model zip saved by roboppo")
        parser.add_argument("--env", required=True, help="registered env id")
        parser.add_argument("--episodes", type=flag_type("episodes"), default=50, help="episodes to record")
        parser.add_argument("--out", type=pathlib.Path, required=True, help="output .npz")
        parser.add_argument("--seed", type=int, default=0, help="seed of the first episode")

    elif command == "bc":
        parser.set_defaults(handler=bc)
        add_demo_flags(parser)
        parser.add_argument("--batches", type=flag_type("bc_batches"), default=10_000, help="gradient steps")

    elif command == "gail":
        parser.set_defaults(handler=gail)
        add_demo_flags(parser)
        parser.add_argument(
            "--n-timesteps", type=flag_type("n_timesteps"), default=None, help="generator env steps (default: gail.yml)"
        )
        parser.add_argument("--init-from-bc", action="store_true", help="start the generator from behaviour cloning")
        parser.add_argument(
            "--bc-batches", type=flag_type("bc_batches"), default=10_000, help="BC steps for --init-from-bc"
        )


def add_demo_flags(command: argparse.ArgumentParser) -> None:
    """The flags ``bc`` and ``gail`` share: env, demonstrations, seed, folders, evaluation."""
    command.add_argument("--env", required=True, help="registered env id")
    command.add_argument(
        "--demos", type=pathlib.Path, required=True, help="demonstrations (.npz or folder; .pkl with --allow-pickle)"
    )
    command.add_argument("--n-demos", type=flag_type("n_demos"), default=None, help="use the first N episodes only")
    command.add_argument(
        "--clip-demo-actions", action="store_true", help="clip actions outside the env's bounds instead of refusing"
    )
    command.add_argument(
        "--allow-pickle", action="store_true", help="read pickled demonstrations (can run code: trusted files only)"
    )
    command.add_argument("--seed", type=int, default=0, help="random seed")
    command.add_argument("--log-folder", type=pathlib.Path, default=pathlib.Path("runs"), help="where run folders go")
    command.add_argument("--hparams", type=pathlib.Path, default=None, help="a gail.yml (default: zoo_hparams/)")
    command.add_argument(
        "--eval-episodes", type=flag_type("eval_episodes"), default=10, help="final evaluation episodes"
    )
    command.add_argument(
        "--allow-env-mismatch", action="store_true", help="accept demonstrations recorded on another env id"
    )
    command.add_argument("--no-progress-bar", action="store_true", help="no progress bar")
