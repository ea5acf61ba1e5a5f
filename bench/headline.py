"""The README's headline line as a user runs it: ``PPO("MlpPolicy", ENV).learn()``, then an evaluation.

    python bench/headline.py RoboAnt-v0 --minutes 30 --episodes 20 --out bench/results/headline_ant.md
    python bench/headline.py RoboInvertedPendulum-v0 --seeds 0-9 --out bench/results/headline_pendulum.md

Each run is the literal line (plus ``seed=`` when ``--seeds`` is given): every setting and the
budget come from the env's zoo entry. ``--minutes`` stops a run after that much wall-clock time,
as Ctrl-C would (an exception raised from a timer signal inside ``learn``); the model as it is
then is evaluated over ``--episodes`` deterministic episodes on one separately seeded env, as
``roboppo-zoo eval`` does, and saved under ``--save-dir`` when given.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import sys
import time
from typing import Any

import numpy as np
from stable_baselines3.common.evaluation import evaluate_policy

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _report import publish

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id


class TimeLimitError(Exception):
    """Raised by the timer signal to stop ``learn`` after ``--minutes``."""


def _stop(signum: int, frame: Any) -> None:
    raise TimeLimitError


def run(
    env_id: str, seed: int | None, minutes: float | None, episodes: int, save_dir: pathlib.Path | None
) -> dict[str, Any]:
    model = PPO("MlpPolicy", env_id) if seed is None else PPO("MlpPolicy", env_id, seed=seed)
    start = time.perf_counter()
    stopped = False
    if minutes is not None:
        signal.signal(signal.SIGALRM, _stop)
        signal.setitimer(signal.ITIMER_REAL, minutes * 60)
    try:
        model.learn()
    except TimeLimitError:
        stopped = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds = time.perf_counter() - start
    if save_dir is not None:
        model.save(save_dir / f"{env_id}_seed{'none' if seed is None else seed}.zip")
    eval_env = make_env_from_id(env_id, n_envs=1, seed=10_000 + (seed or 0))
    returns, _ = evaluate_policy(
        model, eval_env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return {
        "seed": "unseeded" if seed is None else seed, "steps": model.num_timesteps, "seconds": seconds,
        "stopped": stopped, "mean": float(np.mean(returns)), "std": float(np.std(returns)),
        "source": model.hyperparams_source,
    }  # fmt: skip


def seeds_from(text: str | None) -> list[int | None]:
    if text is None:
        return [None]
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env")
    parser.add_argument("--seeds", default=None, help="a seed or a range (0-9); default: unseeded, as the line is")
    parser.add_argument("--minutes", type=float, default=None, help="stop each run after this long")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--save-dir", type=pathlib.Path, default=None, help="save each final model here")
    args = parser.parse_args()
    rows = [run(args.env, seed, args.minutes, args.episodes, args.save_dir) for seed in seeds_from(args.seeds)]
    means = np.array([row["mean"] for row in rows])
    lines = [
        f'`PPO("MlpPolicy", "{args.env}").learn()` with {rows[0]["source"]}; '
        f"{args.episodes} deterministic episodes of the final model per run.",
        "",
        "| seed | env steps | seconds | stopped by --minutes | return |",
        "|---:|---:|---:|:---:|---:|",
        *(
            f"| {r['seed']} | {r['steps']:,} | {r['seconds']:.0f} | {'yes' if r['stopped'] else 'no'} "
            f"| {r['mean']:,.1f} ± {r['std']:,.1f} |"
            for r in rows
        ),
        "",
        f"Over {len(rows)} run(s): mean {means.mean():,.1f}, worst {means.min():,.1f}, best {means.max():,.1f}.",
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
