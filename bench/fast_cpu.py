"""Training speed on the CPU: the physics limit, roboppo PPO and stock SB3 PPO, side by side.

For each env and minibatch size, one run of this script measures, in a fresh child process each
(so that peak memory is per system):

(a) physics limit: ``gym.make_vec(id, num_envs=N)`` (roboppo's batched MuJoCo env) stepped with
    zero actions, no policy;
(b) roboppo PPO end to end (``PPO("MlpPolicy", id, n_envs=N)``: batched env behind SB3's VecEnv
    interface, every epoch and minibatch of a rollout trained in one compiled JAX call);
(b') the same with ``train_backend="torch"`` (the PyTorch training loop), to show what the
    compiled update contributes;
(c) stock Stable-Baselines3 PPO, ``MlpPolicy`` on the Gymnasium v5 env in a ``DummyVecEnv`` of N
    ``Monitor``-wrapped copies, same hyperparameters;
(d) where (b)'s time goes: env stepping, policy inference and rollout bookkeeping, training.

Every system runs one rollout to warm up, then ``--rollouts`` timed rollouts (collection and
training). Torch uses one thread in every system (faster than two for these small networks).
``--repeats N`` runs each PPO system N times, interleaved, and keeps the best.
``--scaling`` adds (a) and (b) over 1 and 2 threads and 8 to 64 envs; ``--memory-steps`` trains
(b) for that many steps and samples the resident memory after every rollout.

    python bench/fast_cpu.py --repeats 3 --out bench/results/fast_cpu.md      # README table
    python bench/fast_cpu.py --envs RoboHopper-v0 --batch-sizes 64 --rollouts 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import resource
import time
from typing import Any

from _report import publish

TWINS = {"RoboHopper-v0": "Hopper-v5", "RoboInvertedDoublePendulum-v0": "InvertedDoublePendulum-v5"}


def hparams(batch_size: int) -> dict[str, Any]:
    """The PPO settings (b) and (c) share: 128 steps per env and rollout, 10 epochs."""
    return {"n_steps": 128, "batch_size": batch_size, "n_epochs": 10, "learning_rate": 3e-4, "device": "cpu"}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def physics(env_id: str, n_envs: int, threads: int | None, seconds: float = 3.0) -> dict[str, float]:
    """(a): vector steps per second of the batched env under zero actions."""
    import gymnasium as gym
    import numpy as np

    import roboppo_envs  # noqa: F401  (registers the ids)

    envs = gym.make_vec(env_id, num_envs=n_envs, num_threads=threads)
    envs.reset(seed=0)
    actions = np.zeros(envs.action_space.shape, dtype=np.float32)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        envs.step(actions)
        steps += n_envs
    return {"sps": steps / (time.perf_counter() - start), "peak_mb": peak_rss_mb()}


def _timed(obj: Any, name: str, clock: dict[str, float]) -> None:
    """Wrap ``obj.name`` so that its wall time accumulates in ``clock[name]``."""
    original = getattr(obj, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clock[name] += time.perf_counter() - start

    setattr(obj, name, wrapper)


def ppo_run(system: str, env_id: str, n_envs: int, batch_size: int, rollouts: int, threads: int | None = None) -> dict:
    """(b), (b') or (c): steps per second over ``rollouts`` timed rollouts, with the phase breakdown.

    :param system: ``"roboppo"`` (b), ``"roboppo-torch"`` (b') or ``"sb3"`` (c).
    """
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    from roboppo import PPO

    if system.startswith("roboppo"):
        env_kwargs = None if threads is None else {"num_threads": threads}
        backend = "torch" if system == "roboppo-torch" else "auto"
        model = PPO(
            "MlpPolicy", env_id, n_envs=n_envs, env_kwargs=env_kwargs, seed=0, train_backend=backend,
            hyperparams="sb3", **hparams(batch_size),
        )  # fmt: skip
    else:
        model = SB3PPO("MlpPolicy", make_vec_env(TWINS[env_id], n_envs=n_envs, seed=0), seed=0, **hparams(batch_size))
    rollout_steps = n_envs * model.n_steps
    model.learn(rollout_steps)  # warm-up rollout
    clock = {"collect_rollouts": 0.0, "train": 0.0, "step": 0.0}
    _timed(model, "collect_rollouts", clock)
    _timed(model, "train", clock)
    vector_env = getattr(model.get_env().unwrapped, "vector_env", None)
    if vector_env is not None:  # the batched env under SB3's VecEnv adapter and wrappers
        _timed(vector_env, "step", clock)
    start = time.perf_counter()
    model.learn(rollouts * rollout_steps, reset_num_timesteps=False)
    seconds = time.perf_counter() - start
    result = {"sps": rollouts * rollout_steps / seconds, "seconds": seconds, "peak_mb": peak_rss_mb()}
    result["phases"] = {
        "stepping": clock["step"],
        "inference": clock["collect_rollouts"] - clock["step"],
        "training": clock["train"],
    }
    return result


def memory_run(env_id: str, n_envs: int, batch_size: int, steps: int) -> dict:
    """Resident memory of (b) sampled after every rollout of a long run."""
    from stable_baselines3.common.callbacks import BaseCallback

    from roboppo import PPO

    samples: list[tuple[int, float]] = []

    class Sampler(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            samples.append((self.num_timesteps, current_rss_mb()))

    model = PPO("MlpPolicy", env_id, n_envs=n_envs, seed=0, hyperparams="sb3", **hparams(batch_size))
    model.learn(steps, callback=Sampler(), progress_bar=True)
    return {"samples": samples, "peak_mb": peak_rss_mb()}


def in_child(function: Any, *args: Any) -> Any:
    """Run ``function(*args)`` in a fresh process (own peak memory, own thread settings)."""
    with multiprocessing.get_context("spawn").Pool(1, initializer=_one_torch_thread) as pool:
        return pool.apply(function, args)


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)


def main_table(args: argparse.Namespace) -> str:
    lines = [
        f"{args.n_envs} envs, 128 steps per env and rollout, 10 epochs; {args.rollouts} timed rollouts; "
        f"each PPO column is the best of {args.repeats} interleaved runs; "
        "(a) is the faster of two measurements, before and after the PPO runs.",
        "",
        "| env | batch | (a) physics steps/s | (b) roboppo steps/s | (b') torch training steps/s "
        "| (c) stock SB3 steps/s | b/c | b/a | (b) stepping / inference / training s | peak MB (a / b / c) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for env_id in args.envs:
        before = in_child(physics, env_id, args.n_envs, None)
        runs = []
        for batch_size in args.batch_sizes:
            best: dict[str, dict] = {}
            for _ in range(args.repeats):  # interleaved, so that a slow minute hits every system alike
                for system in ("roboppo", "roboppo-torch", "sb3"):
                    result = in_child(ppo_run, system, env_id, args.n_envs, batch_size, args.rollouts)
                    if system not in best or result["sps"] > best[system]["sps"]:
                        best[system] = result
            runs.append((batch_size, best["roboppo"], best["roboppo-torch"], best["sb3"]))
        after = in_child(physics, env_id, args.n_envs, None)
        limit = max(before, after, key=lambda result: result["sps"])  # a slow moment must not flatter b/a
        for batch_size, ours, torch_loop, stock in runs:
            phases = ours["phases"]
            lines.append(
                f"| {env_id} | {batch_size} | {limit['sps']:,.0f} | {ours['sps']:,.0f} | {torch_loop['sps']:,.0f} "
                f"| {stock['sps']:,.0f} "
                f"| {ours['sps'] / stock['sps']:.2f} | {ours['sps'] / limit['sps']:.2f} "
                f"| {phases['stepping']:.2f} / {phases['inference']:.2f} / {phases['training']:.2f} "
                f"| {limit['peak_mb']:.0f} / {ours['peak_mb']:.0f} / {stock['peak_mb']:.0f} |"
            )
            print(lines[-1], flush=True)
    return "\n".join(lines)


def scaling_table(args: argparse.Namespace) -> str:
    env_id, batch_size = args.envs[0], max(args.batch_sizes)
    lines = [
        f"Scaling on {env_id} (batch {batch_size}): steps per second.",
        "",
        "| threads | envs | (a) physics | (b) roboppo PPO |",
        "|---:|---:|---:|---:|",
    ]
    for threads in (1, 2):
        for n_envs in (8, 16, 32, 64):
            limit = in_child(physics, env_id, n_envs, threads)
            ours = in_child(ppo_run, "roboppo", env_id, n_envs, batch_size, max(1, args.rollouts // 2), threads)
            lines.append(f"| {threads} | {n_envs} | {limit['sps']:,.0f} | {ours['sps']:,.0f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def memory_table(args: argparse.Namespace) -> str:
    env_id, batch_size = args.envs[0], max(args.batch_sizes)
    result = in_child(memory_run, env_id, args.n_envs, batch_size, args.memory_steps)
    samples = result["samples"]
    picks = [samples[0], samples[1], samples[len(samples) // 4], samples[len(samples) // 2], samples[-1]]
    lines = [
        f"Resident memory of (b) on {env_id} over {args.memory_steps:,} steps (batch {batch_size}), "
        "sampled at the end of rollouts:",
        "",
        "| steps | resident MB |",
        "|---:|---:|",
        *(f"| {steps:,} | {rss:.0f} |" for steps, rss in picks),
        "",
        f"Growth from the second rollout (the first update has imported JAX and compiled its program) to the "
        f"last: {samples[-1][1] - samples[1][1]:+.1f} MB; peak {result['peak_mb']:.0f} MB.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=list(TWINS), choices=list(TWINS))
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--rollouts", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs per PPO system, interleaved; the best counts")
    parser.add_argument("--scaling", action="store_true", help="add the threads x envs scaling table")
    parser.add_argument("--memory-steps", type=int, default=0, help="train (b) this long, sampling memory")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    tables = [main_table(args)]
    if args.scaling:
        tables.append(scaling_table(args))
    if args.memory_steps:
        tables.append(memory_table(args))
    publish("\n\n".join(tables), args.out)


if __name__ == "__main__":
    main()
