"""NumPy's BLAS threads during roboppo's rollouts, on idle cores and beside a busy one.

roboppo's rollout sampler (``roboppo/ppo/sampler.py``) computes the policy in NumPy: products of a few
rows by a few hundred columns. OpenBLAS, which NumPy's wheels bundle, splits a product over its threads
once it is large enough: here from 8 x 256 x 256 on (4 rows stay on one thread). This script times, with
256x256 ReLU networks (the size of the HalfCheetah, Walker2d and Humanoid entries) on ``roboppo/Ant-v5``:

- one sampler call for 4, 16 and 64 copies, NumPy's BLAS at its own thread count and at one thread
  (what roboppo's rollouts use: ``roboppo.ppo.sampler.one_blas_thread``);
- ``learn`` over 16 copies x 128 steps (8 rollouts; minibatch 64, 10 epochs), one MuJoCo and one torch
  thread, the same two ways;

each on idle cores and beside a process that keeps one core busy, as the second run of
``roboppo-zoo benchmark --jobs 2`` does. Medians of ``--repeats`` timings.

    python bench/blas_threads.py --out bench/results/blas_threads.md
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import pathlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from _report import publish

ENV = "roboppo/Ant-v5"
BLAS = Callable[[], contextlib.AbstractContextManager[Any]]  # the rollouts' BLAS: at its own threads or at one


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_core(busy: bool) -> Iterator[None]:
    """A process spinning on one core inside the block (nothing when ``busy`` is False)."""
    if not busy:
        yield
        return
    spinner = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
    spinner.start()
    time.sleep(0.5)
    try:
        yield
    finally:
        spinner.terminate()
        spinner.join()


def model(n_envs: int, n_steps: int = 128) -> Any:
    import torch as th

    from roboppo import PPO

    th.set_num_threads(1)
    networks = {"net_arch": {"pi": [256, 256], "vf": [256, 256]}, "activation_fn": th.nn.ReLU}
    return PPO(
        "MlpPolicy",
        ENV,
        n_envs=n_envs,
        n_steps=n_steps,
        batch_size=64,
        n_epochs=10,
        policy_kwargs=networks,
        env_kwargs={"num_threads": 1},
        seed=0,
    )


def call_seconds(n_envs: int, blas: BLAS, repeats: int) -> float:
    """Median seconds of one sampler call for ``n_envs`` observations."""
    from roboppo.ppo.fast_paths import sampler_choice
    from roboppo.ppo.sampler import RolloutSampler

    ppo = model(n_envs)
    graph = sampler_choice(ppo.policy).graph
    assert graph is not None, "the policy takes the NumPy sampler"
    sampler = RolloutSampler(graph)
    obs = np.random.default_rng(0).standard_normal((n_envs, *ppo.observation_space.shape)).astype(np.float32)
    timings = []
    with blas():
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(200):
                sampler(obs)
            timings.append((time.perf_counter() - start) / 200)
    return statistics.median(timings)


def learn_rate(blas: BLAS, repeats: int) -> float:
    """Median env steps per second of ``learn`` over 8 rollouts of 16 copies x 128 steps."""
    import roboppo.ppo.ppo as ppo_module

    ppo = model(16)
    steps = 8 * 16 * 128
    ppo.learn(16 * 128)  # compiles the update (or loads it from JAX's cache)
    rates = []
    saved = ppo_module.one_blas_thread
    ppo_module.one_blas_thread = blas  # the rollouts' BLAS as this round asks
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            ppo.learn(steps, reset_num_timesteps=False)
            rates.append(steps / (time.perf_counter() - start))
    finally:
        ppo_module.one_blas_thread = saved
    return statistics.median(rates)


def table(rows: list[tuple[str, str, float, float]]) -> str:
    lines = [
        f"`{ENV}`, 256x256 ReLU networks, NumPy's BLAS at its own thread count against one "
        "thread during rollouts (roboppo's default); medians. Idle: nothing else running. "
        "Beside a busy core: a process spinning on one of the 2 cores.",
        "",
        "| measure | cores | BLAS at its own threads | BLAS on one thread | speed-up on one thread |",
        "|---|---|---:|---:|---:|",
    ]
    for measure, cores, own, one in rows:
        faster = own / one if measure.startswith("sampler") else one / own
        unit = "µs" if measure.startswith("sampler") else "steps/s"
        scale = 1e6 if unit == "µs" else 1.0
        lines.append(f"| {measure} | {cores} | {own * scale:,.0f} {unit} | {one * scale:,.0f} {unit} | {faster:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="timings per cell; the median counts")
    parser.add_argument("--envs", type=int, nargs="+", default=[4, 16, 64], help="copies per sampler call")
    parser.add_argument("--no-learn", action="store_true", help="only the sampler calls")
    parser.add_argument("--out", type=pathlib.Path, help="also write the table here")
    args = parser.parse_args()
    from roboppo.ppo.sampler import one_blas_thread

    ways: tuple[BLAS, BLAS] = (contextlib.nullcontext, one_blas_thread)
    rows = []
    for busy in (False, True):
        cores = "beside a busy core" if busy else "idle"
        with busy_core(busy):
            for n_envs in args.envs:
                own, one = (call_seconds(n_envs, blas, args.repeats) for blas in ways)
                rows.append((f"sampler call, {n_envs} copies", cores, own, one))
                print(rows[-1], flush=True)
            if not args.no_learn:
                own, one = (learn_rate(blas, args.repeats) for blas in ways)
                rows.append(("`learn`, 16 copies x 128 steps", cores, own, one))
                print(rows[-1], flush=True)
    publish(table(rows), args.out)


if __name__ == "__main__":
    main()
