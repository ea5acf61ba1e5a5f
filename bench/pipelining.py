"""Would pipelining the rollout help on this machine? The policy on one half-batch while the other simulates.

Three loops over the same 16 Hopper copies and the same NumPy policy sampler (the one roboppo's
rollouts use), each stepping ``frame_skip`` MuJoCo substeps per vector step, with no rewards,
resets or bookkeeping (the work pipelining could overlap, and nothing else):

- **serial**: the policy on all 16 observations, then one ``Batch.step`` on 2 threads (roboppo's
  rollout today);
- **two helpers**: halves A and B (copies of the same 16 start states), each a ``Batch`` of 8
  stepped by its own helper thread; the main thread computes B's actions while A simulates, then
  A's next actions while B simulates;
- **one helper**: A simulates on a helper thread while the main thread computes B's actions and
  then simulates B itself.

Printed: vector steps per second of each (best of ``--repeats`` interleaved runs) and the ratio to
serial. ``bench/results/pipelining.md`` holds a run.

    python bench/pipelining.py --repeats 3 --out bench/results/pipelining.md
"""

from __future__ import annotations

import argparse
import pathlib
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from _report import publish

N_ENVS, HALF = 16, 8


class Half:
    """Copies ``rows`` of ``env`` (their current states) as their own ``Batch``, with the fields the task reads."""

    def __init__(self, env: Any, rows: slice) -> None:
        from mujoco.batch import Batch

        self.batch = Batch(env.model, nsim=HALF, nthread=1, persistent=True)
        self.batch.set_models(env.model)
        self.batch.reset()
        self.batch.state[:] = env._batch.state[rows]
        self.batch.forward()
        self.ctrl = self.batch.bind("ctrl")
        self.state = {name: self.batch.bind(name) for name in env.task.fields}
        self.task, self.frame_skip = env.task, env.frame_skip

    def observe(self) -> np.ndarray:
        return self.task.observe(self.state).astype(np.float32)

    def step(self) -> None:
        self.batch.step(nstep=self.frame_skip)


class Helper(threading.Thread):
    """Steps one :class:`Half` each time it is told to, on its own thread."""

    def __init__(self, half: Half) -> None:
        super().__init__(daemon=True)
        self.half, self.go, self.done, self.stopping = half, threading.Event(), threading.Event(), False
        self.start()

    def run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            if self.stopping:
                return
            self.half.step()
            self.done.set()

    def wait(self) -> None:
        self.done.wait()
        self.done.clear()

    def stop(self) -> None:
        self.stopping = True
        self.go.set()


def serial(env: Any, sampler: Callable, steps: int) -> float:
    batch, ctrl = env._batch, env._ctrl
    obs = env.task.observe(env._state).astype(np.float32)
    start = time.perf_counter()
    for _ in range(steps):
        ctrl[:] = sampler(obs)[1]
        batch.step(nstep=env.frame_skip)
        obs = env.task.observe(env._state).astype(np.float32)
    return steps / (time.perf_counter() - start)


def two_helpers(env: Any, sampler: Callable, steps: int) -> float:
    halves = [Half(env, slice(0, HALF)), Half(env, slice(HALF, N_ENVS))]
    helpers = [Helper(half) for half in halves]
    obs = [half.observe() for half in halves]
    start = time.perf_counter()
    for _ in range(steps):
        for index, (half, helper) in enumerate(zip(halves, helpers, strict=True)):
            half.ctrl[:] = sampler(obs[index])[1]
            helper.go.set()
        for index, (half, helper) in enumerate(zip(halves, helpers, strict=True)):
            helper.wait()
            obs[index] = half.observe()
    rate = steps / (time.perf_counter() - start)
    for helper in helpers:
        helper.stop()
    return rate


def one_helper(env: Any, sampler: Callable, steps: int) -> float:
    first, second = Half(env, slice(0, HALF)), Half(env, slice(HALF, N_ENVS))
    helper = Helper(first)
    obs = [first.observe(), second.observe()]
    start = time.perf_counter()
    for _ in range(steps):
        first.ctrl[:] = sampler(obs[0])[1]
        helper.go.set()
        second.ctrl[:] = sampler(obs[1])[1]
        second.step()
        helper.wait()
        obs = [first.observe(), second.observe()]
    rate = steps / (time.perf_counter() - start)
    helper.stop()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="vector steps per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    th.set_num_threads(1)
    from roboppo import PPO
    from roboppo.ppo.fast_paths import sampler_choice
    from roboppo.ppo.sampler import RolloutSampler

    model = PPO("MlpPolicy", "RoboHopper-v0", n_envs=N_ENVS, n_steps=128, seed=0, hyperparams="sb3", device="cpu")
    model.learn(N_ENVS * 128)  # one update: weights and observation statistics of a trained policy
    graph = sampler_choice(model.policy).graph
    assert graph is not None
    sampler = RolloutSampler(graph)
    env = model.get_env().unwrapped.vector_env  # type: ignore[union-attr]
    loops = {"serial": serial, "two helpers": two_helpers, "one helper": one_helper}
    best = dict.fromkeys(loops, 0.0)
    for _ in range(args.repeats):  # interleaved, so that a slow minute hits every loop alike
        for name, loop in loops.items():
            env.reset(seed=0)  # every loop starts from the same 16 states
            best[name] = max(best[name], loop(env, sampler, args.steps))
    lines = [
        f"**Pipelining probe**: RoboHopper-v0, {N_ENVS} copies, NumPy policy sampler, physics only "
        f"(no rewards, resets or bookkeeping); best of {args.repeats} interleaved runs of {args.steps} vector steps.",
        "",
        "| loop | vector steps/s | env steps/s | vs serial |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {rate:,.0f} | {rate * N_ENVS:,.0f} | {rate / best['serial']:.2f} |"
            for name, rate in best.items()
        ),
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
