"""PPO speed against every peer at its best: roboppo beside SB3, SBX and torchrl, on Hopper.

Every system runs the same PPO (16 envs x 128 steps per rollout, ``--epochs`` epochs, 64x64 tanh
actor and critic, Adam at 3e-4, minibatch 64 and 512, SB3's other defaults, torch on one thread),
each in its own process, interleaved, on roboppo's ``RoboHopper-v0`` or its Gymnasium twin
``Hopper-v5``. A peer is measured with each way of feeding it 16 envs, and its fastest counts:

- **SB3** and **SBX** (SB3 in JAX): ``DummyVecEnv`` (the 16 envs in the learner's process, as
  ``make_vec_env`` makes them), ``SubprocVecEnv`` (one process per env, started by forkserver) and
  EnvPool (its C++ thread pool, 2 threads, under :class:`EnvPoolVecEnv`);
- **torchrl**: its own ``Collector``, ``ClipPPOLoss`` and ``GAE``, its update loop as torchrl's PPO
  tutorial writes it, over Gymnasium's ``SyncVectorEnv`` (``GymWrapper``, in the learner's process)
  or its ``AsyncVectorEnv`` (``GymEnv(num_envs=16)``, one process per env);
- **roboppo**: ``PPO("MlpPolicy", "RoboHopper-v0")``, its batched env on 2 threads; and
  **roboppo-overlap**, the same with ``overlap_update=True`` (each rollout's update runs beside the
  next rollout: a policy lag of one update).

Tables:

1. **Steady state**: steps per second over ``--rollouts`` rollouts after one warm-up rollout (JAX's
   compilation and torch's first calls fall there), best of ``--repeats`` interleaved runs; each
   family's fastest is marked, and roboppo's rate is divided by it. roboppo's env alone (random
   actions, no policy) bounds what its PPO could reach.
   Every round's rate follows, with roboppo over each family's fastest taken as medians of the rounds.
   Then each system's work: the CPU time its process spent per step (all its threads; systems with
   envs in other processes left out) and the rate that work allows on 2 cores, roboppo's over each
   family's fastest measured rate.
2. ``--whole-run``: ``--whole-run-steps`` (1M) steps as a whole ``python`` process per system, wall
   seconds from its start (imports, model, JAX's compilation with an empty cache) to its end, for
   roboppo and each family's fastest variant of table 1; a **floor** process imports torch and SB3
   and only steps roboppo's 16 envs as often, with random actions.

    python bench/peers.py --repeats 3 --rollouts 8 --batch-sizes 64 512 --whole-run --out bench/results/peers.md

SBX, EnvPool and torchrl are optional (``pip install 'roboppo[bench]'``); a missing one is reported as such.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import multiprocessing
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import fast_cpu
import numpy as np
from _report import publish
from fast_cpu import TWINS, cpu_seconds, env_rates, hparams, peak_rss_mb, ppo_run
from fast_cpu import make_model as fast_cpu_model
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

# system: (family, how its 16 envs are stepped)
SYSTEMS = {
    "roboppo": ("roboppo", "its batched env, 2 threads"),
    "roboppo-overlap": ("roboppo", "its batched env, 2 threads; overlap_update=True"),
    "sb3-dummy": ("SB3", "DummyVecEnv"),
    "sb3-subproc": ("SB3", "SubprocVecEnv"),
    "sb3-envpool": ("SB3", "EnvPool, 2 threads"),
    "sbx-dummy": ("SBX", "DummyVecEnv"),
    "sbx-subproc": ("SBX", "SubprocVecEnv"),
    "sbx-envpool": ("SBX", "EnvPool, 2 threads"),
    "torchrl-sync": ("torchrl", "GymWrapper(SyncVectorEnv)"),
    "torchrl-async": ("torchrl", "GymEnv(num_envs=16): AsyncVectorEnv"),
}
FAMILIES = ("SB3", "SBX", "torchrl")
OURS = ("roboppo", "roboppo-overlap")
SEED = 0


def missing(system: str) -> str | None:
    """Why ``system`` cannot run here, or None."""
    for module in ("sbx", "envpool", "torchrl"):
        if module in system and importlib.util.find_spec(module) is None:  # found without importing it
            return f"{module} not installed"
    return None


# -- SB3 and SBX over their vector envs -----------------------------------------------------------


class EnvPoolVecEnv(VecEnv):
    """SB3's ``VecEnv`` over an EnvPool batch. EnvPool resets a finished env on the next step (its action ignored,
    reward 0); SB3 expects the reset observation in the same step, the final one in ``infos``: finished envs are
    reset here at once, by id."""

    def __init__(self, env_id: str, n_envs: int, seed: int) -> None:
        import envpool

        self.pool = envpool.make(env_id, env_type="gymnasium", num_envs=n_envs, num_threads=2, seed=seed)
        self.actions = np.zeros((n_envs, *self.pool.action_space.shape), dtype=np.float32)
        super().__init__(n_envs, self.pool.observation_space, self.pool.action_space)

    def reset(self) -> np.ndarray:
        obs, info = self.pool.reset()
        return obs[np.argsort(info["env_id"])]

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.pool.step(self.actions)
        order = np.argsort(info["env_id"])  # in env order already when all envs step at once; made sure
        obs, rewards, terminated, truncated = obs[order], rewards[order], terminated[order], truncated[order]
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = np.flatnonzero(dones)
        for i in finished:
            truncation = bool(truncated[i] and not terminated[i])
            infos[i] = {"terminal_observation": obs[i].copy(), "TimeLimit.truncated": truncation}
        if finished.size:
            reset_obs, reset_info = self.pool.reset(finished)
            obs[finished] = reset_obs[np.argsort(reset_info["env_id"])]
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.pool.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name != "render_mode":
            raise AttributeError(attr_name)
        return [None] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise NotImplementedError

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        raise NotImplementedError

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))


def make_model(system: str, env_id: str, n_envs: int, settings: dict[str, Any], threads: int | None = None) -> Any:
    """One PPO model of ``system`` (roboppo, or SB3 or SBX over one kind of vector env) with ``settings``."""
    if system in (*OURS, "sb3-dummy", "sbx-dummy"):  # fast_cpu's systems: roboppo, and peers over DummyVecEnv
        return fast_cpu_model(system.removesuffix("-dummy"), env_id, n_envs, settings, threads)
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv, VecMonitor

    if system.endswith("-envpool"):
        venv = VecMonitor(EnvPoolVecEnv(TWINS[env_id], n_envs, SEED))
    else:
        kwargs = {"start_method": "forkserver"}
        venv = make_vec_env(TWINS[env_id], n_envs=n_envs, seed=SEED, vec_env_cls=SubprocVecEnv, vec_env_kwargs=kwargs)
    if system.startswith("sbx"):
        from sbx import PPO as SBXPPO

        return SBXPPO("MlpPolicy", venv, seed=SEED, **settings)
    from stable_baselines3 import PPO as SB3PPO

    return SB3PPO("MlpPolicy", venv, seed=SEED, device="cpu", **settings)


# -- torchrl --------------------------------------------------------------------------------------


def torchrl_ppo(system: str, env_id: str, n_envs: int, settings: dict[str, Any], frames: int) -> Iterator[None]:
    """torchrl's PPO as its tutorial ("Reinforcement Learning (PPO) with TorchRL") builds and runs it, at the
    settings every system here shares (clip 0.2, GAE 0.99 / 0.95, value loss 0.5 x MSE, no entropy term,
    advantages normalized per minibatch, gradient norm 0.5, Adam's eps 1e-5); 64x64 tanh networks, a
    ``TanhNormal`` policy. Yields once when built, then after each rollout's update, ``frames`` steps in all."""
    import gymnasium as gym
    import torch
    from tensordict.nn import TensorDictModule
    from tensordict.nn.distributions import NormalParamExtractor
    from torch import nn
    from torchrl.collectors import Collector
    from torchrl.data.replay_buffers import ReplayBuffer
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
    from torchrl.data.replay_buffers.storages import LazyTensorStorage
    from torchrl.envs import Compose, DoubleToFloat, GymEnv, GymWrapper, StepCounter, TransformedEnv
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    logging.getLogger("torchrl").setLevel(logging.WARNING)
    torch.manual_seed(SEED)
    if system == "torchrl-sync":  # torchrl resets finished envs itself: Gymnasium's autoreset off
        autoreset = {"autoreset_mode": gym.vector.AutoresetMode.DISABLED}
        vector = gym.make_vec(TWINS[env_id], n_envs, "sync", vector_kwargs=autoreset)
        base_env = GymWrapper(vector)
    else:
        base_env = GymEnv(TWINS[env_id], num_envs=n_envs)
    env = TransformedEnv(base_env, Compose(DoubleToFloat(), StepCounter()))
    n_obs, n_actions = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]

    def mlp(n_out: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_out))

    policy = ProbabilisticActor(
        TensorDictModule(nn.Sequential(mlp(2 * n_actions), NormalParamExtractor()), ["observation"], ["loc", "scale"]),
        spec=env.action_spec, in_keys=["loc", "scale"], distribution_class=TanhNormal,
        distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
        return_log_prob=True,
    )  # fmt: skip
    value = ValueOperator(mlp(1), in_keys=["observation"])
    frames_per_batch, batch_size = n_envs * settings["n_steps"], settings["batch_size"]
    collector = Collector(
        env, policy, frames_per_batch=frames_per_batch, total_frames=frames, split_trajs=False,
        auto_register_policy_transforms=False,  # the policy keeps no state: nothing to register
    )  # fmt: skip
    collector.set_seed(SEED)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames_per_batch), sampler=SamplerWithoutReplacement())
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=value)
    loss_module = ClipPPOLoss(
        policy, value, clip_epsilon=0.2, entropy_bonus=False, critic_coeff=0.5, loss_critic_type="l2",
        normalize_advantage=True,
    )  # fmt: skip
    optim = torch.optim.Adam(loss_module.parameters(), settings["learning_rate"], eps=1e-5)
    yield
    for data in collector:
        for _ in range(settings["n_epochs"]):
            advantage(data)
            buffer.extend(data.reshape(-1))
            for _ in range(frames_per_batch // batch_size):
                losses = loss_module(buffer.sample(batch_size))
                loss = losses["loss_objective"] + losses["loss_critic"]
                loss.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
                optim.step()
                optim.zero_grad()
        collector.update_policy_weights_()
        yield
    collector.shutdown()


def torchrl_run(system: str, env_id: str, n_envs: int, settings: dict[str, Any], rollouts: int) -> dict:
    """Steps per second of torchrl's PPO over ``rollouts`` rollouts after a warm-up one."""
    rollout = n_envs * settings["n_steps"]
    loop = torchrl_ppo(system, env_id, n_envs, settings, (rollouts + 1) * rollout)
    next(loop)  # built
    next(loop)  # warm-up rollout and update
    start, cpu = time.perf_counter(), cpu_seconds()
    for _ in loop:
        pass
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"sps": rollouts * rollout / seconds, "seconds": seconds, "peak_mb": peak_rss_mb(), "cpu": cpu}


# -- steady state ---------------------------------------------------------------------------------


def steady_run(system: str, env_id: str, n_envs: int, settings: dict[str, Any], rollouts: int) -> dict:
    """Steps per second of ``system`` over ``rollouts`` rollouts after a warm-up one (fast_cpu's ``ppo_run``)."""
    if system.startswith("torchrl"):
        return torchrl_run(system, env_id, n_envs, settings, rollouts)
    fast_cpu.make_model = make_model  # ppo_run builds its model through fast_cpu.make_model; this child's own
    return ppo_run(system, env_id, n_envs, settings, rollouts)


def in_process(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a fresh process with torch on one thread, as fast_cpu's ``in_child``; but not a pool's
    worker, which is a daemon and may not start the processes of ``SubprocVecEnv`` and ``AsyncVectorEnv``."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, function, args))
    child.start()
    sender.close()
    try:
        result = receiver.recv()
    except EOFError:
        result = RuntimeError(f"{function.__name__}{args} died")
    child.join()
    if isinstance(result, BaseException):
        raise result
    return result


def _child(sender: Any, function: Callable[..., Any], args: tuple) -> None:
    import torch

    torch.set_num_threads(1)
    try:
        sender.send(function(*args))
    except Exception as error:
        sender.send(RuntimeError(f"{function.__name__}{args}: {error!r}"))
        raise


def steady_tables(args: argparse.Namespace, systems: list[str]) -> tuple[str, dict[str, dict[int, dict[str, str]]]]:
    """The steady-state tables of every env; and, per env and batch size, the fastest system of each family."""
    texts, fastest = [], {}
    for env_id in args.envs:
        rounds: dict[int, dict[str, list[float]]] = {}
        work: dict[int, dict[str, list[tuple[float, float]]]] = {}  # (CPU seconds per step, cores busy) per round
        for batch_size in args.batch_sizes:
            settings, rounds[batch_size] = hparams(batch_size, args.epochs), {system: [] for system in systems}
            work[batch_size] = {system: [] for system in systems}
            for _ in range(args.repeats):  # interleaved, so that a slow minute hits every system alike
                for system in systems:
                    run = in_process(steady_run, system, env_id, args.n_envs, settings, args.rollouts)
                    rate = run["sps"]
                    print(f"{env_id} batch {batch_size} {system}: {rate:,.0f} steps/s", flush=True)
                    rounds[batch_size][system].append(rate)
                    work[batch_size][system].append((run["cpu"] / (rate * run["seconds"]), run["cpu"] / run["seconds"]))
        env_alone = in_process(env_rates, env_id, args.n_envs, 2, ("roboppo",), args.repeats)["roboppo"]
        best = {size: {system: max(rates) for system, rates in by_system.items()} for size, by_system in rounds.items()}
        fastest[env_id] = {size: _fastest(rates) for size, rates in best.items()}
        texts.append(_steady_text(args, env_id, systems, best, fastest[env_id], env_alone))
        texts.append(_rounds_text(rounds, fastest[env_id]))
        texts.append(_work_text(work, best, fastest[env_id]))
    return "\n\n".join(texts), fastest


def _fastest(rates: dict[str, float]) -> dict[str, str]:
    """Each family's fastest system among ``rates``."""
    return {
        family: max((s for s in rates if SYSTEMS[s][0] == family), key=rates.__getitem__)
        for family in FAMILIES
        if any(SYSTEMS[s][0] == family for s in rates)
    }


def _steady_text(
    args: argparse.Namespace,
    env_id: str,
    systems: list[str],
    best: dict[int, dict[str, float]],
    fastest: dict[int, dict[str, str]],
    env_alone: float,
) -> str:
    sizes, ratio_heads = args.batch_sizes, " | ".join(f"roboppo / {family}" for family in FAMILIES)
    lines = [
        f"**Steady state** on {env_id} (peers on {TWINS[env_id]}): {args.n_envs} envs x 128 steps per rollout, "
        f"{args.epochs} epochs, 64x64 tanh, {args.rollouts} timed rollouts after a warm-up one; steps per second, "
        f"best of {args.repeats} interleaved runs, each system in its own process; **bold**: the family's fastest.",
        "",
        "| system | envs stepped by | " + " | ".join(f"batch {size} steps/s | roboppo / it" for size in sizes) + " |",
        "|---|---|" + "---:|---:|" * len(sizes),
    ]
    for system in SYSTEMS:
        cells = []
        for size in sizes:
            if system not in systems:
                cells += [str(missing(system) or "not run"), "-"]
                continue
            rate = best[size][system]
            shown = f"{rate:,.0f}"
            if fastest[size].get(SYSTEMS[system][0]) == system:
                shown = f"**{shown}**"
            cells += [shown, f"{best[size]['roboppo'] / rate:.2f}"]
        lines.append(f"| {system} | {SYSTEMS[system][1]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"roboppo against each family's fastest; its env alone: {env_alone:,.0f} steps/s (random actions, no policy).",
        "",
        f"| batch | system | steps/s | over its env alone | {ratio_heads} |",
        "|---:|---|---:|---:|" + "---:|" * len(FAMILIES),
    ]
    for size in sizes:
        for system in (s for s in OURS if s in systems):
            ours = best[size][system]
            ratios = [
                f"{ours / best[size][fastest[size][f]]:.2f} ({fastest[size][f]})" if f in fastest[size] else "-"
                for f in FAMILIES
            ]
            lines.append(f"| {size} | {system} | {ours:,.0f} | {ours / env_alone:.2f} | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def _rounds_text(rounds: dict[int, dict[str, list[float]]], fastest: dict[int, dict[str, str]]) -> str:
    """Every round's rate, in the order run, and roboppo over each family's fastest taken as medians."""
    sizes = list(rounds)
    lines = [
        "Every round, in the order run (steps per second):",
        "",
        "| system | " + " | ".join(f"batch {size}" for size in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for system in rounds[sizes[0]]:
        lines.append(
            f"| {system} | "
            + " | ".join(" / ".join(f"{r:,.0f}" for r in rounds[size][system]) for size in sizes)
            + " |"
        )
    medians = {size: {system: float(np.median(rates)) for system, rates in rounds[size].items()} for size in sizes}
    ratios = _ratios(medians, medians, fastest)
    lines += ["", "Over each family's fastest, both as medians of their rounds: " + "; ".join(ratios) + "."]
    return "\n".join(lines)


def _ratios(
    ours: dict[int, dict[str, float]], peers: dict[int, dict[str, float]], fastest: dict[int, dict[str, str]]
) -> list[str]:
    """Each of roboppo's systems in ``ours`` over each family's fastest in ``peers``, per batch size, as phrases."""
    sizes = list(ours)
    return [
        f"{system} {ours[size][system] / peers[size][peer]:.2f}x {peer} at batch {size}"
        for system in OURS
        if system in ours[sizes[0]]
        for size in sizes
        for peer in (fastest[size][family] for family in FAMILIES if family in fastest[size])
    ]


def _work_text(
    work: dict[int, dict[str, list[tuple[float, float]]]],
    best: dict[int, dict[str, float]],
    fastest: dict[int, dict[str, str]],
) -> str:
    """CPU seconds per step of each system, the rate that work allows on 2 cores, and roboppo's allowed rate over
    each family's fastest measured rate."""
    sizes = list(work)
    lines = [
        "**Work per step**: CPU time the system's process used (all its threads) per 1,000 steps of the timed "
        "rollouts, the cores it kept busy on average, and the rate its work would allow if it kept both cores busy "
        "all the time (2 cores over the CPU time per step); medians of the rounds. Systems stepping their envs in "
        "other processes are left out: their workers' time is not counted.",
        "",
        "| system | " + " | ".join(f"batch {n}: CPU ms / 1k steps | cores busy | 2-core bound" for n in sizes) + " |",
        "|---|" + "---:|---:|---:|" * len(sizes),
    ]
    bound: dict[int, dict[str, float]] = {size: {} for size in sizes}
    for system in work[sizes[0]]:
        if SYSTEMS[system][1].startswith(("SubprocVecEnv", "GymEnv(num_envs")):
            continue
        cells = []
        for size in sizes:
            per_step = float(np.median([cpu for cpu, _ in work[size][system]]))
            busy = float(np.median([cores for _, cores in work[size][system]]))
            bound[size][system] = 2 / per_step
            cells += [f"{per_step * 1e6:,.0f}", f"{busy:.2f}", f"{2 / per_step:,.0f}"]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    ratios = _ratios(bound, best, fastest)
    lines += [
        "",
        "roboppo's 2-core bound over each peer family's fastest measured rate, the most any packing of roboppo's "
        "work onto these 2 cores could show: " + "; ".join(ratios) + ".",
    ]
    return "\n".join(lines)


# -- whole runs -----------------------------------------------------------------------------------


def whole_run_child(system: str, env_id: str, n_envs: int, batch_size: int, steps: int, epochs: int) -> None:
    """``steps`` steps of ``system`` in this process; print when the first env step happened (epoch seconds)."""
    import torch

    torch.set_num_threads(1)
    if system == "floor":
        fast_cpu.WHOLE_RUN_STEPS = steps  # the floor steps its env this often
        fast_cpu.floor_child(env_id)
        return
    settings = hparams(batch_size, epochs)
    if system.startswith("torchrl"):
        loop = torchrl_ppo(system, env_id, n_envs, settings, steps)
        next(loop)
        first_step = time.time()  # the collector's first step follows
        for _ in loop:
            pass
    else:
        from stable_baselines3.common.callbacks import BaseCallback

        started: list[float] = []

        class FirstStep(BaseCallback):
            def _on_step(self) -> bool:
                if not started:
                    started.append(time.time())
                return True

        make_model(system, env_id, n_envs, settings).learn(steps, callback=FirstStep())
        first_step = started[0]
    print(json.dumps({"first_step": first_step}))


def whole_run(system: str, env_id: str, *numbers: int) -> dict[str, float]:
    """Wall time of one whole ``python`` process running :func:`whole_run_child`, and its time to the first step."""
    command = [sys.executable, __file__, "--whole-run-child", system, env_id, *map(str, numbers)]
    with tempfile.TemporaryDirectory(prefix="roboppo-jax-cache-") as cache:  # roboppo compiles from scratch
        start_epoch, start = time.time(), time.perf_counter()
        done = subprocess.run(command, env={**os.environ, "ROBOPPO_JAX_CACHE": cache}, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith('{"first_step"'))
    return {"wall": wall, "first_step": json.loads(line)["first_step"] - start_epoch}


def whole_run_table(args: argparse.Namespace, fastest: dict[int, dict[str, str]], ours: list[str]) -> str:
    env_id = args.envs[0]
    rollout = args.n_envs * 128
    steps = -(-args.whole_run_steps // rollout) * rollout  # whole rollouts, as every system collects them
    rounds = f"fastest of {args.whole_run_repeats} interleaved rounds" if args.whole_run_repeats > 1 else "one round"
    lines = [
        f"**Whole runs**: {steps:,} steps on {env_id} (peers on {TWINS[env_id]}) as a whole `python` process "
        f"per system, at table 1's settings: seconds to the first env step / wall seconds, imports, model "
        "construction and roboppo's JAX compilation (empty cache) included; each family's fastest variant of "
        f"table 1, {rounds}; ratios are a peer's wall time over "
        f"{ours[-1]}'s. **Floor**: a process that imports torch and SB3, makes roboppo's 16 envs and steps them as "
        "often with random actions (no policy, no training).",
        "",
        f"| batch | {' | '.join(ours)} | " + " | ".join(FAMILIES) + " | floor | "
        + " | ".join(f"{f} / {ours[-1]}" for f in FAMILIES) + f" | {ours[-1]} / floor |",
        "|---:|" + "---:|" * (2 * len(FAMILIES) + 2 + len(ours)),
    ]  # fmt: skip
    for batch_size in args.batch_sizes:
        systems = {**{name: name for name in ours}, **fastest[batch_size], "floor": "floor"}
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.whole_run_repeats):  # interleaved rounds; each system's fastest counts
            for name, system in systems.items():
                run = whole_run(system, env_id, args.n_envs, batch_size, steps, args.epochs)
                print(f"whole run, batch {batch_size} {system}: {run['wall']:,.1f} s", flush=True)
                if name not in best or run["wall"] < best[name]["wall"]:
                    best[name] = run

        lines.append(_whole_run_row(batch_size, systems, best, ours))
        print(lines[-1], flush=True)
    return "\n".join(lines)


def _whole_run_row(batch_size: int, systems: dict[str, str], best: dict[str, dict[str, float]], ours: list[str]) -> str:
    def cell(name: str) -> str:
        if name not in best:
            return "-"
        shown = f"{best[name]['first_step']:.1f} / {best[name]['wall']:,.1f}"
        return f"{shown} ({systems[name]})" if name in FAMILIES else shown

    wall = best[ours[-1]]["wall"]
    ratios = [f"{best[f]['wall'] / wall:.2f}" if f in best else "-" for f in FAMILIES]
    cells = [cell(name) for name in (*ours, *FAMILIES, "floor")] + ratios
    return f"| {batch_size} | " + " | ".join(cells) + f" | {wall / best['floor']['wall']:.2f} |"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--whole-run-child":
        whole_run_child(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:8]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["RoboHopper-v0"], choices=list(TWINS))
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--rollouts", type=int, default=4, help="timed rollouts per steady-state run")
    parser.add_argument("--repeats", type=int, default=1, help="steady-state runs per system, interleaved; best counts")
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS), help="roboppo always")
    parser.add_argument("--whole-run", action="store_true", help="add the whole-process table (first env listed)")
    parser.add_argument("--whole-run-steps", type=int, default=1_000_000)
    parser.add_argument("--whole-run-repeats", type=int, default=1, help="rounds of the whole-run table")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    systems = [s for s in SYSTEMS if (s == "roboppo" or s in args.systems) and missing(s) is None]
    steady, fastest = steady_tables(args, systems)
    tables = [steady]
    if args.whole_run:
        tables.append(whole_run_table(args, fastest[args.envs[0]], [s for s in OURS if s in systems]))
    publish("\n\n".join(tables), args.out)


if __name__ == "__main__":
    main()
