"""PPO with a robot's big networks on the CPU: where the time goes when the update costs more than the env.

    python bench/big_network.py --hparams bench/results/go1-search/go1-d.yml --steps 131072 \
        --out bench/results/big_network.md

On the Go1 entry's settings (or a candidate's, ``--hparams``), side by side in one script:

1. the env alone: the task's batch stepped with random actions, steps per second;
2. roboppo's whole run: ``PPO("MultiInputPolicy", id).learn(steps)`` with the entry, steps per second
   after construction, and its ratio to the env alone (goal: at least 0.6);
3. the compiled update's arithmetic: the FLOPs of every epoch's minibatches (forward and backward
   of both networks, ``3 x 2 x samples x weights``) over its measured time, beside a plain JAX matmul
   loop of the same shapes on the same cores (the three products per layer a step needs) (goal: at
   least half of it);
4. stock SB3 on EnvPool's port of the task with the same networks and batch (SB3's policy reads
   both observation keys in both networks; it has no asymmetric critic), and SBX where installed.

Each system runs in its own process, one at a time, on the whole machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pathlib
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _report import publish

ENV_ID = "roboppo/Go1JoystickFlatTerrain-v1"
PORT = "MuJoCoPlayground/Go1JoystickFlatTerrain-v1"
SEED = 0


def entry(path: str | None) -> Any:
    from roboppo.zoo import load_ppo_hparams

    return load_ppo_hparams(ENV_ID, path)


def env_alone(hparams: str | None, steps: int) -> dict[str, float]:
    """The task's batch (the entry's copies and keywords), random actions in [-1, 1]."""
    import gymnasium as gym

    settings = entry(hparams)
    envs = gym.make_vec(ENV_ID, num_envs=settings.n_envs, **settings.env_kwargs)
    envs.reset(seed=SEED)
    actions = np.random.default_rng(SEED).uniform(-1, 1, (64, settings.n_envs, 12))
    rounds = max(steps // settings.n_envs, 1)
    start = time.perf_counter()
    for i in range(rounds):
        envs.step(actions[i % 64])
    return {"steps_per_s": rounds * settings.n_envs / (time.perf_counter() - start)}


def roboppo_run(hparams: str | None, steps: int) -> dict[str, float]:
    """A whole ``learn(steps)`` with the entry, and the compiled update timed again on its last rollout."""
    from roboppo import PPO
    from roboppo.ppo import jax_train
    from roboppo.ppo.fast_paths import update_choice
    from roboppo.ppo.rollout import flat_batch

    model = PPO("MultiInputPolicy", ENV_ID, hyperparams=entry(hparams), seed=SEED)
    model.learn(2 * model.n_steps * model.n_envs)  # compile the update and warm the caches
    start, first = time.perf_counter(), model.num_timesteps
    model.learn(steps, reset_num_timesteps=False)
    rate = (model.num_timesteps - first) / (time.perf_counter() - start)
    choice = update_choice(model.policy, "jax")
    assert choice.graph is not None, choice.reason
    settings, batch = model._update_settings(), flat_batch(model.rollout_buffer, model.device)
    times = []
    for _ in range(5):
        begin = time.perf_counter()
        jax_train.start(choice.graph, batch, settings).wait()
        times.append(time.perf_counter() - begin)
    weights = sum(op.weight.numel() for op in (*choice.graph.actor, *choice.graph.critic) if op.kind == "linear")
    samples = len(batch.actions) * settings.n_epochs
    flops = 3 * 2 * samples * weights
    return {"steps_per_s": rate, "update_s": float(np.median(times)), "update_gflops": flops / np.median(times) / 1e9}


def matmul_loop(hparams: str | None) -> dict[str, float]:
    """The update's matrix products alone, in one jitted JAX loop: for each layer of both networks and each
    minibatch of each epoch, the forward product and the two of its gradient."""
    import jax
    import jax.numpy as jnp

    from roboppo import PPO
    from roboppo.ppo.fast_paths import update_choice

    model = PPO("MultiInputPolicy", ENV_ID, hyperparams=entry(hparams), seed=SEED)
    graph = update_choice(model.policy, "jax").graph
    assert graph is not None
    shapes = [tuple(op.weight.shape) for op in (*graph.actor, *graph.critic) if op.kind == "linear"]  # (out, in)
    n_batches = model.n_steps * model.n_envs // model.batch_size * model.n_epochs
    key = jax.random.PRNGKey(0)
    xs = [jax.random.normal(key, (model.batch_size, fan_in), jnp.float32) for _, fan_in in shapes]
    ws = [jax.random.normal(key, (fan_out, fan_in), jnp.float32) * 0.01 for fan_out, fan_in in shapes]

    @jax.jit
    def loop(xs: list, ws: list) -> Any:
        def body(carry: Any, _: Any) -> tuple[Any, None]:
            total = carry
            for x, w in zip(xs, ws, strict=True):
                x = x + total * 1e-30  # each step reads the last one's result: XLA cannot hoist it out of the loop
                y = x @ w.T  # forward
                total = total + jnp.sum(y @ w) * 1e-30 + jnp.sum(y.T @ x) * 1e-30  # the two gradient products
            return total, None

        return jax.lax.scan(body, jnp.float32(0), None, length=n_batches)[0]

    loop(xs, ws).block_until_ready()
    times = []
    for _ in range(5):
        begin = time.perf_counter()
        loop(xs, ws).block_until_ready()
        times.append(time.perf_counter() - begin)
    flops = 3 * 2 * n_batches * model.batch_size * sum(out * fan_in for out, fan_in in shapes)
    return {"matmul_gflops": flops / float(np.median(times)) / 1e9}


def sb3_run(hparams: str | None, steps: int, system: str) -> dict[str, float]:
    """Stock SB3 (or SBX) over EnvPool's port, the entry's networks (both reading both keys) and batch."""
    from peers import EnvPoolVecEnv
    from stable_baselines3.common.vec_env import VecMonitor

    class DictEnvPool(EnvPoolVecEnv):
        """EnvPool's Dict observations, reordered and reset by key."""

        def reset(self) -> Any:
            obs, info = self.pool.reset()
            return {key: value[np.argsort(info["env_id"])] for key, value in obs.items()}

        def step_wait(self) -> Any:
            obs, rewards, terminated, truncated, _ = self.pool.step(self.actions)
            dones = terminated | truncated
            infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
            finished = np.flatnonzero(dones)
            for i in finished:
                terminal = {key: value[i].copy() for key, value in obs.items()}
                infos[i] = {
                    "terminal_observation": terminal,
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                }
            if finished.size:
                reset_obs, _ = self.pool.reset(finished)
                for key in obs:
                    obs[key][finished] = reset_obs[key]
            return obs, rewards.astype(np.float32), dones, infos

    settings = entry(hparams)
    venv = VecMonitor(DictEnvPool(PORT, settings.n_envs, SEED))
    kwargs = {k: v for k, v in settings.ppo_kwargs.items() if k not in ("policy_kwargs", "learning_rate")}
    arch = settings.ppo_kwargs["policy_kwargs"]["net_arch"]
    policy_kwargs = {"net_arch": arch, "activation_fn": settings.ppo_kwargs["policy_kwargs"]["activation_fn"]}
    if system == "sbx":
        import sbx as peer
    else:
        import stable_baselines3 as peer  # type: ignore[no-redef]
    model = peer.PPO("MultiInputPolicy", venv, seed=SEED, policy_kwargs=policy_kwargs, device="cpu", **kwargs)
    model.learn(2 * model.n_steps * model.n_envs)
    start, first = time.perf_counter(), model.num_timesteps
    model.learn(steps, reset_num_timesteps=False)
    return {"steps_per_s": (model.num_timesteps - first) / (time.perf_counter() - start)}


def in_child(function: Any, *args: Any) -> Any:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hparams", default=None, help="a ppo.yml with the Go1 entry (default: zoo_hparams/)")
    parser.add_argument("--steps", type=int, default=131_072, help="timed env steps of each run")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    env = in_child(env_alone, args.hparams, args.steps)
    ours = in_child(roboppo_run, args.hparams, args.steps)
    matmul = in_child(matmul_loop, args.hparams)
    peers = {}
    for system in ("sb3", "sbx"):
        try:
            peers[system] = in_child(sb3_run, args.hparams, args.steps, system)
        except ModuleNotFoundError as error:
            peers[system] = {"missing": str(error.name)}
    settings = entry(args.hparams)
    lines = [
        f"**{ENV_ID}** on {cores} cores, the settings of {settings.source}: {settings.n_envs} copies x "
        f"{settings.ppo_kwargs['n_steps']} steps, minibatches of {settings.ppo_kwargs['batch_size']}, "
        f"{settings.ppo_kwargs['n_epochs']} epochs; {args.steps:,} timed steps per run, each system in its own "
        "process.",
        "",
        "| what | steps/s | ratio |",
        "|---|---:|---:|",
        f"| the env alone (random actions) | {env['steps_per_s']:,.0f} | 1.00 |",
        f"| roboppo, whole run | {ours['steps_per_s']:,.0f} | {ours['steps_per_s'] / env['steps_per_s']:.2f} |",
    ]
    for system, result in peers.items():
        name = {"sb3": "stock SB3 on EnvPool's port", "sbx": "SBX on EnvPool's port"}[system]
        if "missing" in result:
            lines.append(f"| {name} | not installed ({result['missing']}) | |")
        else:
            ratio = result["steps_per_s"] / ours["steps_per_s"]
            lines.append(f"| {name} | {result['steps_per_s']:,.0f} | roboppo {1 / ratio:.2f}x |")
    lines += [
        "",
        f"The compiled update: {ours['update_s'] * 1e3:.0f} ms per rollout, {ours['update_gflops']:.1f} GFLOP/s; "
        f"a JAX loop of the same matrix products: {matmul['matmul_gflops']:.1f} GFLOP/s "
        f"(the update at {ours['update_gflops'] / matmul['matmul_gflops']:.0%} of it).",
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
