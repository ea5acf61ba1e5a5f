"""``roboppo-zoo record`` and ``plot``: videos of a policy and learning curves as pictures."""

from __future__ import annotations

import argparse
import math
import pathlib
from collections import defaultdict

import gymnasium as gym
import numpy as np

from roboppo.cli.runs import model_file, read_config
from roboppo.common.callbacks import read_evaluations
from roboppo.common.files import atomic_target
from roboppo.ppo import PPO
from roboppo.zoo.schema import flag_type


def record(args: argparse.Namespace) -> int:
    """Render ``--episodes`` deterministic episodes off-screen into a video file (mp4 or gif)."""
    config = read_config(args.run)
    model = PPO.load(model_file(args.run, best=args.best))
    env = gym.make(config["env"], render_mode="rgb_array")
    frames: list[np.ndarray] = []
    for episode in range(args.episodes):
        obs, _ = env.reset(seed=args.seed + episode)
        frames.append(np.asarray(env.render()))
        for _ in range(args.max_steps):
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, _ = env.step(action)
            frames.append(np.asarray(env.render()))
            if terminated or truncated:
                break
    env.close()
    count, fps = write_video(args.out, frames, float(args.fps or int(env.metadata.get("render_fps", 30))))
    print(f"{count} frames of {config['env']} at {fps:g} fps written to {args.out}")
    return 0


def write_video(path: pathlib.Path, frames: list[np.ndarray], fps: float) -> tuple[int, float]:
    """Write ``frames`` as an mp4 or (by the suffix) a looping GIF that plays at real time; atomically.

    :return: the frames written and their rate (a GIF keeps every n-th frame, see :func:`gif_frame_step`).
    """
    import imageio.v2 as imageio

    with atomic_target(path) as partial:
        if path.suffix.lower() == ".gif":
            step = gif_frame_step(fps)
            frames, fps = frames[::step], fps / step
            imageio.mimwrite(partial, frames, duration=round(1000 / fps), loop=0)  # type: ignore[arg-type]
        else:
            imageio.mimwrite(partial, frames, fps=fps)  # type: ignore[arg-type]
    return len(frames), fps


def gif_frame_step(fps: float, max_fps: float = 50.0, tolerance: float = 0.12) -> int:
    """Keep every ``step``-th frame of a GIF. Its delays are whole centiseconds, and browsers play
    delays under 2 cs slowly, so the frame period must be at least 20 ms and, within ``tolerance``,
    a multiple of 10 ms. Hopper's 125 fps (8 ms) becomes every 4th frame at 30 ms (32 ms exactly)."""
    first = max(1, math.ceil(fps / max_fps - 1e-9))
    for step in range(first, first + 10):
        period = 1000.0 * step / fps
        if abs(period - 10 * round(period / 10)) <= tolerance * period:
            return step
    return first


def run_curve(run_dir: pathlib.Path) -> tuple[np.ndarray, np.ndarray, str]:
    """A run's learning curve: its periodic evaluations, or for runs without them (GAIL, ``bc``) the
    training episodes' mean return from ``progress.csv`` (GAIL logs the generator's under ``gen/``)."""
    path = run_dir / "evaluations.npz"
    if path.is_file():
        history = read_evaluations(path)
        return history["timesteps"], history["results"].mean(axis=1), "evaluation return"
    progress = run_dir / "progress.csv"
    if progress.is_file():
        import csv

        with progress.open() as handle:
            rows = list(csv.DictReader(handle))
        columns = list(rows[0]) if rows else []
        ret = next((c for c in columns if c.endswith("rollout/ep_rew_mean")), "")
        step = next((c for c in columns if c.endswith("time/total_timesteps")), "")
        kept = [(float(row[step]), float(row[ret])) for row in rows if ret and step and row[ret] and row[step]]
        if kept:
            steps, returns = np.array(kept).T
            return steps, returns, "training episode return"
    raise FileNotFoundError(f"{run_dir} has neither evaluations.npz nor episode returns in progress.csv yet.")


def plot(args: argparse.Namespace) -> int:
    """Evaluation return against env steps, mean ± std over the runs of each env, as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    kinds = set()
    for run_dir in args.runs:
        env_id = read_config(run_dir)["env"]
        steps, returns, kind = run_curve(run_dir)
        curves[env_id].append((steps, returns))
        kinds.add(kind)
    figure, axes = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 4), squeeze=False)
    for axis, (env_id, runs) in zip(axes[0], sorted(curves.items()), strict=True):
        length = min(len(steps) for steps, _ in runs)
        steps = runs[0][0][:length]
        returns = np.stack([values[:length] for _, values in runs])
        mean, std = returns.mean(axis=0), returns.std(axis=0)
        axis.plot(steps, mean, label=f"mean of {len(runs)} run(s)")
        axis.fill_between(steps, mean - std, mean + std, alpha=0.25, label="± std")
        axis.set(title=env_id, xlabel="env steps", ylabel=" / ".join(sorted(kinds)))
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    with atomic_target(args.out) as partial:
        figure.savefig(partial, dpi=120)
    plt.close(figure)
    print(f"learning curves of {len(args.runs)} run(s) written to {args.out}")
    return 0


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """The flags of ``record``, ``plot``; the handler each runs."""
    if command == "record":
        parser.set_defaults(handler=record)
        parser.add_argument("--run", type=pathlib.Path, required=True, metavar="RUN_DIR", help="a run folder")
        parser.add_argument("--out", type=pathlib.Path, required=True, help="video file (.mp4 or .gif)")
        parser.add_argument("--episodes", type=flag_type("episodes"), default=1, help="episodes to record")
        parser.add_argument("--max-steps", type=flag_type("max_steps"), default=1000, help="steps per episode at most")
        parser.add_argument("--fps", type=flag_type("fps"), default=None, help="default: the env's render_fps")
        parser.add_argument("--best", action="store_true", help="the best model by evaluation instead of the final")
        parser.add_argument("--seed", type=int, default=0, help="seed of the env")

    elif command == "plot":
        parser.set_defaults(handler=plot)
        parser.add_argument("runs", type=pathlib.Path, nargs="+", metavar="RUN_DIR")
        parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("parser.png"), help="the PNG to write")
