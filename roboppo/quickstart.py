"""The README's first command: train a controller until it balances the pendulum.

    python -m roboppo.quickstart [--env RoboInvertedPendulum-v0] [--seed 0] [--log-dir runs]

Trains roboppo PPO with the env's ``zoo_hparams/ppo.yml`` entry, evaluating every 1,000
steps (10 deterministic episodes) and stopping once the mean return reaches the env's
solved threshold (950 for the pendulum). Writes TensorBoard logs, the evaluation history
and the trained model, then prints the final evaluation and where everything went.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import gymnasium as gym
from stable_baselines3.common.callbacks import StopTrainingOnRewardThreshold
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure

from roboppo import PPO, UnknownEnvError
from roboppo.cli.runs import new_run_dir, run_name, write_config
from roboppo.common.callbacks import EvalCallback  # SB3's, writing evaluations.npz atomically
from roboppo.common.env_util import check_env_id, make_env_from_id
from roboppo.zoo import HparamsError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m roboppo.quickstart", description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="RoboInvertedPendulum-v0", help="registered env id")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", type=pathlib.Path, default=pathlib.Path("runs"), help="TensorBoard and run folder")
    parser.add_argument("--max-steps", type=int, default=None, help="step budget (default: the zoo entry's)")
    parser.add_argument("--threshold", type=float, default=None, help="stop at this mean return (default: env's)")
    parser.add_argument("--eval-freq", type=int, default=1000, help="env steps between evaluations")
    parser.add_argument("--no-progress-bar", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> float:
    """Train, evaluate and save; returns the final mean evaluation return."""
    args = parse_args(argv)
    check_env_id(args.env)
    threshold = args.threshold if args.threshold is not None else gym.spec(args.env).reward_threshold
    if threshold is None:
        raise SystemExit(f"{args.env} has no reward threshold; pass --threshold.")
    model = PPO("MlpPolicy", args.env, seed=args.seed)  # every setting from the env's zoo entry
    run_dir = new_run_dir(args.log_dir, run_name("ppo", args.env, args.seed))
    config = {"algo": "ppo", "env": args.env, "seed": args.seed, "n_envs": model.n_envs, "eval_episodes": 10}
    config |= {"hyperparams_source": model.hyperparams_source, "hyperparams": model.resolved_hyperparams()}
    write_config(run_dir, config, sys.argv)  # so that roboppo-zoo eval, record, plot and export take the folder
    # TensorBoard events, a CSV of the same scalars, the evaluations and the model share one folder.
    model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]))
    eval_env = make_env_from_id(args.env, n_envs=1, seed=args.seed + 10_000)
    evaluation = EvalCallback(
        eval_env,
        n_eval_episodes=10,
        eval_freq=max(args.eval_freq // model.n_envs, 1),
        deterministic=True,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=threshold),
        log_path=str(run_dir),
        verbose=1,
    )
    print(f"Stopping once 10 deterministic episodes average {threshold:g} (evaluated every {args.eval_freq:,} steps)")
    start = time.perf_counter()
    # without --max-steps, learn() trains the entry's budget and says how long that should take
    model.learn(args.max_steps, callback=evaluation, progress_bar=not args.no_progress_bar)
    seconds = time.perf_counter() - start
    model.save(run_dir / "model.zip")

    mean_return, std_return = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
    assert isinstance(mean_return, float) and isinstance(std_return, float)
    solved = mean_return >= threshold
    print()
    print(
        f"{'Solved' if solved else 'NOT solved'}: {args.env} after {model.num_timesteps:,} env steps in {seconds:.1f} s"
    )
    print(f"  final evaluation: {mean_return:.1f} ± {std_return:.1f} over 10 deterministic episodes")
    print(f"  model:            {run_dir / 'model.zip'}   (roboppo.PPO.load(path))")
    print(f"  evaluations:      {run_dir / 'evaluations.npz'}")
    print(f"  scalars:          {run_dir / 'progress.csv'}")
    print(f"  TensorBoard:      tensorboard --logdir {args.log_dir}")
    return float(mean_return)


if __name__ == "__main__":
    try:
        main()
    except (UnknownEnvError, HparamsError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
