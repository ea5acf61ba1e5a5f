"""``roboppo-zoo eval``, ``enjoy`` and ``envs``: run a trained policy, watch it, list what can be trained."""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.evaluation import evaluate_policy

import roboppo_envs
from roboppo.cli.runs import CHECKPOINTS, RunFolderError, file_name, model_file, read_config
from roboppo.cli.tracking import is_joystick_task, report, track
from roboppo.common.env_util import make_env_from_id
from roboppo.common.errors import UserInputError
from roboppo.common.files import atomic_target
from roboppo.ppo import PPO
from roboppo.zoo.schema import flag_type


def find_run(args: argparse.Namespace) -> pathlib.Path:
    """``--run``, or (rl-zoo3's way) the ``--exp-id``-th run of ``--env`` in ``--folder`` (0: the latest)."""
    if args.run is not None:
        return pathlib.Path(args.run)
    found = (
        p for p in pathlib.Path(args.folder).glob(f"*_{file_name(args.env)}_seed*") if (p / "config.yml").is_file()
    )
    runs = sorted(found, key=lambda p: p.stat().st_mtime)
    if not runs:
        raise RunFolderError(f"{args.folder} holds no run of {args.env}; train one with roboppo-zoo train --env ...")
    if args.exp_id > len(runs):
        raise RunFolderError(f"--exp-id {args.exp_id}: {args.folder} holds {len(runs)} runs of {args.env}.")
    return runs[args.exp_id - 1] if args.exp_id > 0 else runs[-1]


def chosen_model(args: argparse.Namespace, run: pathlib.Path) -> pathlib.Path:
    """The final model, the best (``--best``) or the checkpoint at ``--load-checkpoint`` steps."""
    if args.load_checkpoint is None:
        return model_file(run, best=args.best)
    path = run / CHECKPOINTS / f"ppo_{args.load_checkpoint}_steps.zip"
    if not path.is_file():
        saved = sorted(p.name for p in (run / CHECKPOINTS).glob("*.zip")) if (run / CHECKPOINTS).is_dir() else []
        raise RunFolderError(f"{run} has no checkpoint at {args.load_checkpoint} steps; saved: {saved or 'none'}.")
    return path


def evaluate(args: argparse.Namespace) -> int:
    """Deterministic evaluation of a run's model: mean ± std return over ``--episodes`` episodes; for a joystick
    robot, its velocity tracking over :data:`~roboppo.cli.tracking.COMMAND_GRID` (50 episodes by default)."""
    run = find_run(args)
    config = read_config(run)
    path = chosen_model(args, run)
    model = PPO.load(path)
    if args.sim_to_sim:
        from roboppo.cli import sim_to_sim

        episodes = args.episodes or 50
        print(f"{config['env']} {path}: {episodes} episodes on each simulator, nominal physics, their own commands")
        print(sim_to_sim.report(sim_to_sim.both(model, config["env"], episodes, args.seed)))
        return 0
    if args.robustness is not None:
        from roboppo.cli import robustness

        if not is_joystick_task(config["env"]):
            raise UserInputError(
                f"--robustness sweeps a joystick robot's floor friction and torso mass, not {config['env']}."
            )
        episodes = args.episodes or 10
        print(f"{config['env']} {path}: tracking with one value held fixed, {episodes} episodes per value")
        results = robustness.sweep(model, config["env"], config.get("env_kwargs"), episodes, args.seed)
        robustness.plot(results, args.robustness, f"{config['env']}: {run.name}")
        print(f"wrote {args.robustness}")
        return 0
    if is_joystick_task(config["env"]):
        episodes = args.episodes or 50
        print(f"{config['env']} {path}: tracking over the command grid, the run's env keywords")
        print(report(track(model, config["env"], episodes, args.seed, config.get("env_kwargs"))))
        return 0
    episodes = args.episodes or 10
    env = make_env_from_id(config["env"], n_envs=1, seed=args.seed, env_kwargs=config.get("env_kwargs"))
    mean, std = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True)
    print(f"{config['env']} {path}: {mean:.1f} ± {std:.1f} over {episodes} deterministic episodes")
    return 0


def has_display() -> bool:
    """Whether a window can open: a display server (X11, Wayland) or a desktop OS."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def enjoy(args: argparse.Namespace) -> int:
    """Watch the policy: in a window where there is a display, else as ``<run>/videos/enjoy.mp4``."""
    if args.no_render:
        return evaluate(args)
    run = find_run(args)
    config = read_config(run)
    model = PPO.load(chosen_model(args, run))
    window = has_display()
    env = gym.make(config["env"], render_mode="human" if window else "rgb_array", **(config.get("env_kwargs") or {}))
    out = run / "videos" / "enjoy.mp4"
    with contextlib.ExitStack() as stack:
        video = None if window else stack.enter_context(_video_writer(out, env.metadata.get("render_fps", 30)))
        returns = [_episode(model, env, args.seed + episode, video) for episode in range(args.episodes)]
    env.close()
    print(f"{config['env']}: {np.mean(returns):.1f} ± {np.std(returns):.1f} over {args.episodes} episodes")
    if not window:
        print(f"no display: the episodes are in {out}")
    return 0


def _episode(model: PPO, env: gym.Env, seed: int, video: Any) -> float:
    """One deterministic episode; its frames go to ``video`` when given (a window shows them otherwise)."""
    obs, _ = env.reset(seed=seed)
    done, total = False, 0.0
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        total, done = total + float(reward), terminated or truncated
        if video is not None:
            video.append_data(np.asarray(env.render()))
    return total


@contextlib.contextmanager
def _video_writer(path: pathlib.Path, fps: float) -> Iterator[Any]:
    """An mp4 writer whose file appears, complete, when the block ends (frames are not held in memory)."""
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_target(path) as partial, imageio.get_writer(partial, fps=float(fps), format="FFMPEG") as writer:
        yield writer


def list_envs(args: argparse.Namespace) -> int:
    """Print every registered id: physics (and the Gymnasium id it equals), spaces, solved threshold, extra needed."""
    print(f"{'id':34s} {'physics':8s} {'equals':40s} {'obs':>4s} {'action':>16s} {'solved at':>10s}  needs")
    for env_id in roboppo_envs.roboppo_ids():
        threshold = gym.spec(env_id).reward_threshold
        solved = "-" if threshold is None else f"{threshold:,.0f}"
        if roboppo_envs.is_brax_id(env_id):
            obs_dim, act_dim = roboppo_envs.BRAX_DIMS[env_id]
            brax, bounds = f"Brax {roboppo_envs.BRAX_ENVS[env_id]}", f"{act_dim} in [-1, 1]"
            print(f"{env_id:34s} {'Brax':8s} {brax:40s} {obs_dim:>4d} {bounds:>16s} {solved:>10s}  brax")
            continue
        twin = roboppo_envs.gymnasium_twin(env_id) or "-"
        if env_id in roboppo_envs.ROBO_SUITE_TWINS:
            twin += " (float32 obs)"
        env = gym.make(env_id)
        obs_space, act_space = env.observation_space, env.action_space
        assert isinstance(obs_space, spaces.Box) and isinstance(act_space, spaces.Box)
        bounds = f"{act_space.shape[0]} in [{act_space.low.min():g}, {act_space.high.max():g}]"
        print(f"{env_id:34s} {'MuJoCo':8s} {twin:40s} {obs_space.shape[0]:>4d} {bounds:>16s} {solved:>10s}  core")
        env.close()
    list_robots()
    return 0


def list_robots() -> None:
    """MuJoCo Playground's robots: the EnvPool task each equals, their spaces and the sim-to-real kit's keywords."""
    from roboppo_envs.playground.go1 import GO1_RANDOMIZATION
    from roboppo_envs.pushes import PUSHES

    print("\nrobots (Playground tasks, batched on MuJoCo's threads; observations: Dict of state[/privileged_state])")
    print(f"{'id':48s} {'physics':8s} {'equals (EnvPool port)':56s} {'obs':>8s} {'action':>12s}  needs")
    for env_id in roboppo_envs.playground_ids():
        twin = roboppo_envs.playground_twin(env_id) or "-"
        env = gym.make(env_id)
        obs_space, act_space = env.observation_space, env.action_space
        assert isinstance(obs_space, spaces.Dict) and isinstance(act_space, spaces.Box)
        keys = sorted(obs_space.spaces, key=lambda key: key != "state")  # state first
        dims = "/".join(str(obs_space[key].shape[0]) for key in keys)  # type: ignore[index]
        actions = f"{act_space.shape[0]} in [-1, 1]"
        env.close()
        print(f"{env_id:48s} {'MuJoCo':8s} {twin:56s} {dims:>8s} {actions:>12s}  robots")
    print(
        "kit keywords (env_kwargs; the v5 suite takes them too): randomize=True|{option: (low, high)}, Go1's defaults:"
    )
    for key, ((low, high), _) in GO1_RANDOMIZATION.items():
        print(f"  {key:22s} U({low:g}, {high:g})")
    print("  kp_scale, kd_scale, motor_strength: off unless given (the Panda's defaults: docs/robots.md)")
    kicks = ", ".join(f"{key} {low:g}-{high:g}" for key, (low, high) in PUSHES.items())
    print(
        f"pushes=True|{{...}}: Playground's velocity kicks ({kicks}); noise_level=1.0 (0: none); command=(vx, vy, yaw)"
    )


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``eval``, ``enjoy``, ``envs``; the handler each runs."""
    if command == "eval":
        parser.set_defaults(handler=evaluate, check=_check_model_flags)
        add_model_flags(parser)
        parser.set_defaults(episodes=None)  # 10, or 50 for a joystick robot (5 per command of the grid)
        parser.add_argument("--seed", type=int, default=12_345, help="seed of the evaluation env")
        parser.add_argument(
            "--sim-to-sim", action="store_true",
            help="a Go1 run on roboppo's task and on EnvPool's port of it, nominal physics: reward, tracking, falls",
        )  # fmt: skip
        parser.add_argument(
            "--robustness", type=pathlib.Path, metavar="FIGURE",
            help="a joystick robot's tracking and falls against floor friction and added torso mass, as a PNG",
        )  # fmt: skip

    elif command == "enjoy":
        parser.set_defaults(handler=enjoy, check=_check_model_flags, sim_to_sim=False, robustness=None)
        add_model_flags(parser)
        parser.add_argument("--no-render", action="store_true", help="only print the returns (as eval)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the env")

    elif command == "envs":
        parser.set_defaults(handler=list_envs)


def add_model_flags(command: argparse.ArgumentParser) -> None:
    """Which model ``eval`` and ``enjoy`` load: ``--run`` or, as rl-zoo3 does, ``--folder --env --exp-id``."""
    command.add_argument("--run", type=pathlib.Path, metavar="RUN_DIR", help="a run folder (train, gail or quickstart)")
    command.add_argument("-f", "--folder", type=pathlib.Path, help="rl-zoo3 style: the log folder holding the runs")
    command.add_argument("--env", help="with --folder: the env id of the run")
    command.add_argument(
        "--exp-id", type=int, default=0, help="with --folder: the N-th run of --env, oldest first (0: the latest)"
    )
    command.add_argument("-n", "--episodes", type=flag_type("episodes"), default=10, help="episodes to run")
    command.add_argument("--eval-episodes", type=flag_type("episodes"), dest="episodes", help="same as --episodes")
    command.add_argument("--best", "--load-best", action="store_true", help="the best model by evaluation")
    command.add_argument("--load-checkpoint", type=int, metavar="STEPS", help="the checkpoint saved at STEPS steps")


def _check_model_flags(args: argparse.Namespace) -> str | None:
    if (args.run is None) == (args.folder is None or args.env is None):
        return f"{args.command} needs --run RUN_DIR, or --folder FOLDER --env ID [--exp-id N]"
    return None
