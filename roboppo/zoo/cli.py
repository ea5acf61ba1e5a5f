"""``roboppo-zoo``: the command line.

    roboppo-zoo collect-demos --model expert.zip --env RoboHopper-v0 --episodes 50 --out demos.npz
    roboppo-zoo gail --env RoboHopper-v0 --demos demos.npz [--seed 0] [--n-timesteps N] [--log-folder runs]

Every sub-command is also callable in-process: ``main(["gail", "--env", ...])``. Bad input
(unknown env id, unreadable demonstrations or hyperparameters, a missing model) ends with a
one-line ``error: ...`` on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
import yaml
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.common.errors import ModelLoadError, UnknownEnvError
from roboppo.gail import DemoError, GAILTrainer, collect_demonstrations, load_demonstrations, save_demonstrations
from roboppo.ppo import PPO
from roboppo.zoo.hparams import HparamsError, load_gail_hparams

USER_ERRORS = (UnknownEnvError, HparamsError, DemoError, ModelLoadError, FileNotFoundError)


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
    demos = load_demonstrations(args.demos, args.env)
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
    (run_dir / "config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    eval_env = make_env_from_id(args.env, seed=args.seed + 10_000)
    mean_return, std_return = evaluate_policy(trainer.generator, eval_env, n_eval_episodes=args.eval_episodes)
    print(f"final evaluation: {mean_return:.1f} ± {std_return:.1f} over {args.eval_episodes} deterministic episodes")
    if expert_returns is not None:
        print(f"expert return {expert_returns.mean():.1f}: fraction reached {mean_return / expert_returns.mean():.3f}")
    print(f"run folder: {run_dir} (generator.zip loads with roboppo.PPO.load; tensorboard --logdir {args.log_folder})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roboppo-zoo", description="Train, imitate and evaluate robot controllers.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demos = commands.add_parser("collect-demos", help="save deterministic rollouts of a trained policy")
    demos.add_argument("--model", type=pathlib.Path, required=True, help="a model zip saved by roboppo")
    demos.add_argument("--env", required=True, help="registered env id")
    demos.add_argument("--episodes", type=int, default=50)
    demos.add_argument("--out", type=pathlib.Path, required=True, help="output .npz")
    demos.add_argument("--seed", type=int, default=0)
    demos.set_defaults(run=collect_demos)

    imitate = commands.add_parser("gail", help="imitate demonstrations with GAIL")
    imitate.add_argument("--env", required=True, help="registered env id")
    imitate.add_argument("--demos", type=pathlib.Path, required=True, help="demonstrations (.npz, .pkl or folder)")
    imitate.add_argument("--seed", type=int, default=0)
    imitate.add_argument("--n-timesteps", type=int, default=None, help="generator env steps (default: gail.yml)")
    imitate.add_argument("--log-folder", type=pathlib.Path, default=pathlib.Path("runs"))
    imitate.add_argument("--hparams", type=pathlib.Path, default=None, help="a gail.yml (default: zoo_hparams/)")
    imitate.add_argument("--eval-episodes", type=int, default=10)
    imitate.add_argument("--no-progress-bar", action="store_true")
    imitate.set_defaults(run=gail)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command; returns the exit code (2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def entry_point() -> None:
    sys.exit(main())
