"""How much running PPO's update beside the next rollout could gain, on Hopper and 2 cores.

roboppo's PPO collects a rollout (the physics on both cores, the policy and bookkeeping on one),
then trains on it (one compiled JAX call on XLA's thread pool); while one runs, the other waits.
An asynchronous PPO (Sample Factory's design) trains on rollout k while rollout k+1 is collected
with the weights from before that update (a policy lag of one update). This script measures the
speed side of that design without building it, with ``fast_cpu.py``'s settings (16 envs on 2
MuJoCo threads, 128 steps per env and rollout, 10 epochs, 64x64 networks, one torch thread):

- **serial**: ``collect_rollouts`` then ``train``, as today;
- **beside**: the compiled update of the last rollout dispatched (JAX returns at once), the next
  rollout collected, then the update's result awaited; the update's threads at normal priority;
- **beside, update at nice 19** and **beside, update at idle priority** (``SCHED_IDLE``): the same
  with XLA's threads lowered, so that they take the cores only where the rollout leaves one free.

The update here is the same compiled call on the same inputs every time (its result is not written
back), so the rates are those of the loop's timing, not of a different algorithm. Lowering a thread's
priority cannot be undone without privileges, so each batch size's rounds run in this order, in one
process per batch size. Each rate is the median of ``--repeats`` timings of 2,048 steps.

    python bench/overlap.py --out bench/results/overlap.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import numpy as np
from _report import publish
from fast_cpu import hparams, make_model

ROUNDS = ("serial", "beside", "beside, update at nice 19", "beside, update at idle priority")
STEPS = 16 * 128


def lower(threads: list[int], how: str) -> None:
    for tid in threads:
        if how == "nice":
            os.setpriority(os.PRIO_PROCESS, tid, 19)
        else:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))


def measure(batch_size: int, repeats: int) -> dict[str, Any]:
    """Median seconds per rollout, update and each round's 2,048 steps, in a process of its own."""
    import torch as th

    from roboppo.ppo import jax_train
    from roboppo.ppo.fast_paths import update_choice
    from roboppo.ppo.rollout import flat_batch
    from roboppo.ppo.update import random_draws

    th.set_num_threads(1)
    model = make_model("roboppo", "RoboHopper-v0", 16, hparams(batch_size, 10), threads=2)
    model.learn(4 * STEPS)  # compiles the update and fills the observation statistics
    _, callback = model._setup_learn(10**9, None, reset_num_timesteps=False)
    callback.on_training_start(locals(), globals())
    graph = update_choice(model.policy, "auto").graph
    assert graph is not None, "the compiled update does not apply"
    policy, settings = graph.policy, model._update_settings(model.policy)
    batch = flat_batch(model.rollout_buffer, model.device)
    with th.no_grad():
        pi_features, vf_features = policy.actor_critic_features(batch.observations)
    orders, noise = random_draws(STEPS, settings.n_epochs, batch.actions.shape[1])
    params = graph.parameters()
    tensors = (pi_features, vf_features, batch.actions, batch.old_values, batch.old_log_prob, batch.advantages,
               batch.returns)  # fmt: skip
    hyper = {"lr": settings.learning_rate, "clip_range": settings.clip_range, "clip_range_vf": 0.0, "ent_coef": 0.0,
             "vf_coef": 0.5, "max_grad_norm": 0.5, "target_kl": math.inf}  # fmt: skip
    args = (
        [np.array(p.detach()) for p in params], jax_train._adam_state(policy.optimizer, params),
        tuple(np.array(t.detach()) for t in tensors), np.array(orders.int()), np.array(noise), hyper,
    )  # fmt: skip
    update, shape = jax_train._compiled_update(), jax_train._update_shape(graph, settings, STEPS)

    def rollout() -> None:
        model.collect_rollouts(model.env, callback, model.rollout_buffer, 128)

    def train() -> None:
        np.asarray(update(*args, shape=shape)[0][0])

    def beside() -> None:
        pending = update(*args, shape=shape)
        rollout()
        np.asarray(pending[0][0])

    def timed(step: Any) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    result = {"rollout": timed(rollout), "update": timed(train)}
    result["serial"] = result["rollout"] + result["update"]
    result["beside"] = timed(beside)
    lower(jax_train.compute_threads(), "nice")
    result[ROUNDS[2]] = timed(beside)
    lower(jax_train.compute_threads(), "idle")
    result[ROUNDS[3]] = timed(beside)
    result["update at idle priority, alone"] = timed(train)
    return result


def table(results: dict[int, dict[str, Any]]) -> str:
    lines = [
        "Hopper, 16 envs x 128 steps, 10 epochs, 64x64; median over the repeats of one rollout (2,048 steps) and "
        "one update, and of each round's 2,048 steps; steps/s and the rate over serial.",
        "",
        "| minibatch | rollout ms | update ms | " + " | ".join(ROUNDS) + " |",
        "|---:|---:|---:|" + "---:|" * len(ROUNDS),
    ]
    for batch_size, r in results.items():
        cells = [f"{STEPS / r[name]:,.0f} ({r['serial'] / r[name]:.2f})" for name in ROUNDS]
        times = f"{r['rollout'] * 1e3:.1f} | {r['update'] * 1e3:.1f}"
        lines.append(f"| {batch_size} | {times} | " + " | ".join(cells) + " |")
    idle = ", ".join(f"{r['update at idle priority, alone'] * 1e3:.1f} ms at minibatch {b}" for b, r in results.items())
    lines += ["", f"The update alone at idle priority (nothing else running): {idle}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.repeats)))
        return
    if not sys.platform.startswith("linux"):
        sys.exit("bench/overlap.py lowers thread priorities through Linux's /proc and sched_setscheduler.")
    results = {}
    for batch_size in args.batch_sizes:
        command = [sys.executable, __file__, "--child", str(batch_size), "--repeats", str(args.repeats)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        results[batch_size] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"minibatch {batch_size}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in results[batch_size].items()))
    publish(table(results), args.out)


if __name__ == "__main__":
    main()
