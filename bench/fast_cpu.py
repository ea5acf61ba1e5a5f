"""Training speed on the CPU: roboppo beside EnvPool, SBX and stock SB3, in one script.

Tables (16 envs, 2 env threads, torch on one thread in every system):

1. **Env stepping**, random actions, no policy: EnvPool's ``Hopper-v5`` (C++ thread pool),
   roboppo's batched ``RoboHopper-v0`` (and the rate of its time inside MuJoCo alone) and
   Gymnasium's ``SyncVectorEnv`` of ``Hopper-v5``, all in one child process, interleaved; each the
   best of ``--repeats``.
2. **PPO end to end** at each minibatch size, each system in a fresh child process (own peak
   memory), interleaved repeats, best kept: roboppo (every epoch and minibatch of a rollout in
   one compiled JAX call), roboppo with ``train_backend="torch"``, SBX (SB3 in JAX) and stock
   SB3 (``DummyVecEnv`` of ``Monitor``-wrapped Gymnasium v5 envs), same hyperparameters (SB3's
   defaults with 128 steps per env, ``--epochs`` epochs). One rollout warms up, ``--rollouts``
   are timed; roboppo's time is split into env stepping, inference and bookkeeping, training.
3. ``--whole-run``: ``learn(32_768)`` as whole processes (imports, model construction, JAX's
   import and compilation included) at minibatch 64, 256 and 512, 5 epochs: roboppo with an
   empty compilation cache, then again with the cache the first run filled, SBX and stock SB3;
   time to the first env step and wall time. A **floor** process (imports, env, random steps; no
   policy, no training) bounds what any system could reach.
``--suite`` makes table 1 alone for the eleven ``roboppo/<Name>-v5`` envs against EnvPool's ``<Name>-v5``
(Humanoid, Ant and HumanoidStandup include roboppo's contact forces, ``mj_rnePostConstraint`` per copy);
``--policy MODEL`` drives one of them with a trained model instead of random actions; ``--robots`` makes it for
MuJoCo Playground's robot tasks against EnvPool's port:

    python bench/fast_cpu.py --suite --repeats 3 --out bench/results/suite_env_speed.md
    python bench/fast_cpu.py --suite --envs roboppo/Humanoid-v5 --policy RUN/model.zip --repeats 3
    python bench/fast_cpu.py --robots --repeats 3 --out bench/results/robot_env_speed.md

4. ``--scaling``: env and roboppo PPO over 1 and 2 threads and 8 to 64 envs;
   ``--memory-steps N``: roboppo's resident memory sampled after every rollout of an N-step run.

EnvPool and SBX are optional (``pip install 'roboppo[bench]'``); a missing one is reported as such.

    python bench/fast_cpu.py --repeats 3 --whole-run --whole-run-repeats 3 --out bench/results/fast_cpu.md
    python bench/fast_cpu.py --envs RoboHopper-v0 --batch-sizes 64 --rollouts 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

from _report import publish

SUITE = ["Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum", "InvertedPendulum",
         "Pusher", "Reacher", "Swimmer", "Walker2d"]  # fmt: skip
TWINS = {"RoboHopper-v0": "Hopper-v5", "RoboInvertedDoublePendulum-v0": "InvertedDoublePendulum-v5"} | {
    f"roboppo/{name}-v5": f"{name}-v5" for name in SUITE
}
#: MuJoCo Playground's robots and EnvPool's port of each (no Gymnasium twin: that column shows "-")
ROBOTS = {
    f"roboppo/{name}-v1": f"MuJoCoPlayground/{name}-v1"
    for name in (
        "Go1JoystickFlatTerrain",
        "Go1JoystickRoughTerrain",
        "BerkeleyHumanoidJoystickFlatTerrain",
        "PandaPickCube",
    )
}
TWINS |= ROBOTS
PPO_SYSTEMS = ("roboppo", "roboppo-torch", "sbx", "sb3")
ENV_SYSTEMS = ("envpool", "roboppo", "gymnasium")
WHOLE_RUN_STEPS = 32_768


def hparams(batch_size: int, n_epochs: int) -> dict[str, Any]:
    """The PPO settings every system shares: 128 steps per env and rollout, SB3's other defaults."""
    return {"n_steps": 128, "batch_size": batch_size, "n_epochs": n_epochs, "learning_rate": 3e-4}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU seconds this process has used so far, all its threads (not its child processes)."""
    times = os.times()
    return times.user + times.system


def current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def missing(system: str) -> str | None:
    """Why an optional peer cannot run here, or None."""
    module = {"envpool": "envpool", "sbx": "sbx"}.get(system)
    if module is None or importlib.util.find_spec(module) is not None:  # found without importing JAX here
        return None
    return "not installed"


# -- env stepping ---------------------------------------------------------------------------------


def make_env(system: str, env_id: str, n_envs: int, threads: int) -> Any:
    import gymnasium as gym

    import roboppo_envs  # noqa: F401  (registers the ids)

    if system == "envpool":
        import envpool

        return envpool.make(TWINS[env_id], env_type="gymnasium", num_envs=n_envs, num_threads=threads, seed=0)
    if system == "gymnasium":
        return gym.make_vec(TWINS[env_id], num_envs=n_envs, vectorization_mode="sync")
    return gym.make_vec(env_id, num_envs=n_envs, num_threads=threads)


def env_rates(
    env_id: str, n_envs: int, threads: int, systems: tuple[str, ...], repeats: int, policy: str | None = None
) -> dict[str, float]:
    """Env steps per second of each system under uniform random actions, best of ``repeats`` interleaved runs.

    ``policy``: a saved roboppo model whose deterministic actions drive every system instead (each on its own
    observations, 3 s runs, the model's inference not timed), so the physics is that of the states a trained
    robot visits."""
    import warnings

    import numpy as np

    warnings.filterwarnings("ignore", message=".*EnvPool seeds.*")
    envs = {system: make_env(system, env_id, n_envs, threads) for system in systems}
    rng = np.random.default_rng(0)
    first = next(iter(envs.values()))
    space = first.single_action_space if hasattr(first, "single_action_space") else first.action_space
    actions = [rng.uniform(space.low, space.high, (n_envs, *space.shape)).astype(np.float32) for _ in range(64)]
    model = None if policy is None else load_policy(policy)
    seconds = 1.5 if model is None else 3.0
    best = dict.fromkeys(systems, 0.0)
    physics = _physics_clock(envs.get("roboppo"))
    obs = {system: env.reset()[0] for system, env in envs.items()}
    for _ in range(repeats):
        for system, env in envs.items():
            steps, inference, physics["seconds"], start = 0, 0.0, 0.0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                if model is None:
                    chosen = actions[(steps // n_envs) % 64]
                else:  # the model's time is not the env's
                    before = time.perf_counter()
                    chosen = model.predict(obs[system], deterministic=True)[0]
                    inference += time.perf_counter() - before
                obs[system] = env.step(chosen)[0]
                steps += n_envs
            best[system] = max(best[system], steps / (time.perf_counter() - start - inference))
            if system == "roboppo":  # the same steps at the rate of their time in MuJoCo alone
                best["roboppo-physics"] = max(best.get("roboppo-physics", 0.0), steps / physics["seconds"])
    return best


def load_policy(path: str) -> Any:
    from roboppo import PPO

    return PPO.load(path, device="cpu")


def _physics_clock(env: Any) -> dict[str, float]:
    """Time spent in roboppo's ``Batch.step`` (MuJoCo's physics, no Python around it), summed into the result."""
    clock = {"seconds": 0.0}
    if env is not None:
        _timed(env._batch, "step", clock, key="seconds")
    return clock


# -- PPO end to end -------------------------------------------------------------------------------


def make_model(system: str, env_id: str, n_envs: int, settings: dict[str, Any], threads: int | None = None) -> Any:
    """One PPO model of ``system`` on ``env_id`` (or its Gymnasium twin) with ``settings``."""
    from stable_baselines3.common.env_util import make_vec_env

    if system.startswith("roboppo"):
        from roboppo import PPO

        env_kwargs = None if threads is None else {"num_threads": threads}
        backend = "torch" if system == "roboppo-torch" else "auto"
        return PPO(
            "MlpPolicy", env_id, n_envs=n_envs, env_kwargs=env_kwargs, seed=0, train_backend=backend,
            overlap_update=system == "roboppo-overlap", hyperparams="sb3", device="cpu", **settings,
        )  # fmt: skip
    venv = make_vec_env(TWINS[env_id], n_envs=n_envs, seed=0)
    if system == "sbx":
        from sbx import PPO as SBXPPO

        return SBXPPO("MlpPolicy", venv, seed=0, **settings)
    from stable_baselines3 import PPO as SB3PPO

    return SB3PPO("MlpPolicy", venv, seed=0, device="cpu", **settings)


def _timed(obj: Any, name: str, clock: dict[str, float], key: str | None = None) -> None:
    """Wrap ``obj.name`` so that its wall time accumulates in ``clock[key or name]``."""
    original = getattr(obj, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clock[key or name] += time.perf_counter() - start

    setattr(obj, name, wrapper)


def ppo_run(
    system: str, env_id: str, n_envs: int, settings: dict[str, Any], rollouts: int, threads: int | None = None
) -> dict:
    """Steps per second of one PPO system over ``rollouts`` timed rollouts, with roboppo's phase breakdown."""
    model = make_model(system, env_id, n_envs, settings, threads)
    rollout_steps = n_envs * model.n_steps
    model.learn(rollout_steps)  # warm-up rollout (roboppo and SBX compile their update here)
    clock = {"collect_rollouts": 0.0, "train": 0.0, "step": 0.0}
    _timed(model, "collect_rollouts", clock)
    _timed(model, "train", clock)
    vector_env = getattr(model.get_env().unwrapped, "vector_env", None)
    if vector_env is not None:  # roboppo's batched env under SB3's VecEnv adapter
        _timed(vector_env, "step", clock)
    start, cpu = time.perf_counter(), cpu_seconds()
    model.learn(rollouts * rollout_steps, reset_num_timesteps=False)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    result = {"sps": rollouts * rollout_steps / seconds, "seconds": seconds, "peak_mb": peak_rss_mb(), "cpu": cpu}
    result["phases"] = {
        "stepping": clock["step"],
        "inference": clock["collect_rollouts"] - clock["step"],
        "training": clock["train"],
    }
    return result


def memory_run(env_id: str, n_envs: int, settings: dict[str, Any], steps: int) -> dict:
    """Resident memory of roboppo PPO sampled after every rollout of a long run."""
    from stable_baselines3.common.callbacks import BaseCallback

    samples: list[tuple[int, float]] = []

    class Sampler(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            samples.append((self.num_timesteps, current_rss_mb()))

    model = make_model("roboppo", env_id, n_envs, settings)
    model.learn(steps, callback=Sampler(), progress_bar=True)
    return {"samples": samples, "peak_mb": peak_rss_mb()}


def in_child(function: Any, *args: Any) -> Any:
    """Run ``function(*args)`` in a fresh process (own peak memory, own thread settings)."""
    with multiprocessing.get_context("spawn").Pool(1, initializer=_one_torch_thread) as pool:
        return pool.apply(function, args)


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)


def env_table(args: argparse.Namespace) -> tuple[str, dict[str, dict[str, float]]]:
    systems = tuple(s for s in ENV_SYSTEMS if missing(s) is None)
    actions = (
        "uniform random actions, no policy, 1.5 s runs; "
        if args.policy is None
        else (
            f"the deterministic actions of `{args.policy.name}` (a trained roboppo model) on each system's own "
            "observations, 3 s runs, the model's inference not timed; "
        )
    )
    lines = [
        f"**Env stepping**: {args.n_envs} envs, 2 threads, {actions}"
        f"best of {args.repeats} interleaved runs in one process. roboppo's physics alone: the same steps "
        "at the rate of their time inside MuJoCo's `Batch.step`, what roboppo's env would reach if the Python "
        "around the physics (observations, rewards, resets) cost nothing.",
        "",
        "| env | EnvPool steps/s | roboppo env steps/s | Gymnasium SyncVectorEnv steps/s | roboppo / EnvPool "
        "| roboppo's physics alone / EnvPool |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rates = {}
    for env_id in args.envs:
        policy = None if args.policy is None else str(args.policy)
        present = tuple(s for s in systems if not (s == "gymnasium" and env_id in ROBOTS))
        rate = in_child(env_rates, env_id, args.n_envs, 2, present, args.repeats, policy)
        rates[env_id] = rate
        envpool = rate.get("envpool")
        shown = [f"{rate[s]:,.0f}" if s in rate else (missing(s) or "-") for s in ENV_SYSTEMS]
        ratio = f"{rate['roboppo'] / envpool:.2f}" if envpool else "-"
        bound = f"{rate['roboppo-physics'] / envpool:.2f}" if envpool else "-"
        lines.append(f"| {env_id} | {' | '.join(shown)} | {ratio} | {bound} |")
        print(lines[-1], flush=True)
    return "\n".join(lines), rates


def ppo_table(args: argparse.Namespace, env_rate: dict[str, dict[str, float]]) -> str:
    systems = tuple(s for s in PPO_SYSTEMS if missing(s) is None)
    lines = [
        f"**PPO end to end**: {args.n_envs} envs x 128 steps per rollout, {args.epochs} epochs, 64x64 tanh, "
        f"{args.rollouts} timed rollouts; best of {args.repeats} interleaved runs, each system in its own process.",
        "",
        "| env | batch | roboppo steps/s | roboppo torch loop | SBX | stock SB3 | roboppo / SB3 | roboppo / SBX "
        "| roboppo / its env | roboppo / EnvPool | roboppo stepping / inference / training s | peak MB roboppo / SB3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for env_id in args.envs:
        for batch_size in args.batch_sizes:
            settings = hparams(batch_size, args.epochs)
            best: dict[str, dict] = {}
            for _ in range(args.repeats):  # interleaved, so that a slow minute hits every system alike
                for system in systems:
                    result = in_child(ppo_run, system, env_id, args.n_envs, settings, args.rollouts)
                    if system not in best or result["sps"] > best[system]["sps"]:
                        best[system] = result
            lines.append(_ppo_row(env_id, batch_size, best, env_rate.get(env_id, {})))
            print(lines[-1], flush=True)
    return "\n".join(lines)


def _ppo_row(env_id: str, batch_size: int, best: dict[str, dict], rate: dict[str, float]) -> str:
    ours = best["roboppo"]

    def sps(system: str) -> str:
        return f"{best[system]['sps']:,.0f}" if system in best else str(missing(system))

    def ratio(other: float | None) -> str:
        return f"{ours['sps'] / other:.2f}" if other else "-"

    phases = ours["phases"]
    return (
        f"| {env_id} | {batch_size} | {sps('roboppo')} | {sps('roboppo-torch')} | {sps('sbx')} | {sps('sb3')} "
        f"| {ratio(best['sb3']['sps'])} | {ratio(best.get('sbx', {}).get('sps'))} "
        f"| {ratio(rate.get('roboppo'))} | {ratio(rate.get('envpool'))} "
        f"| {phases['stepping']:.2f} / {phases['inference']:.2f} / {phases['training']:.2f} "
        f"| {ours['peak_mb']:.0f} / {best['sb3']['peak_mb']:.0f} |"
    )


# -- whole runs -----------------------------------------------------------------------------------


def whole_run_child(system: str, env_id: str, batch_size: int) -> None:
    """``learn(WHOLE_RUN_STEPS)`` in this process; print when the first env step happened (epoch seconds)."""
    import torch

    torch.set_num_threads(1)
    if system == "floor":
        floor_child(env_id)
        return
    first_step: list[float] = []
    from stable_baselines3.common.callbacks import BaseCallback

    class FirstStep(BaseCallback):
        def _on_step(self) -> bool:
            if not first_step:
                first_step.append(time.time())
            return True

    model = make_model(system, env_id, 16, hparams(batch_size, 5))
    model.learn(WHOLE_RUN_STEPS, callback=FirstStep())
    print(json.dumps({"first_step": first_step[0]}))


def floor_child(env_id: str) -> None:
    """What every PPO process on ``env_id`` does at least: import torch and SB3, make the 16 envs and step
    them ``WHOLE_RUN_STEPS`` times (random actions, no policy, no training); print the first step's time."""
    import gymnasium as gym
    import numpy as np
    import stable_baselines3.ppo  # noqa: F401  (roboppo's PPO subclasses it)

    import roboppo_envs  # noqa: F401

    env = gym.make_vec(env_id, num_envs=16)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    space = env.action_space
    actions = [rng.uniform(space.low, space.high).astype(np.float32) for _ in range(64)]
    first_step = time.time()
    for step in range(WHOLE_RUN_STEPS // 16):
        env.step(actions[step % 64])
    print(json.dumps({"first_step": first_step}))


def whole_run(system: str, env_id: str, batch_size: int, cache: str) -> dict[str, float]:
    """Wall time of one whole ``python`` process running :func:`whole_run_child`, and its time to the first step."""
    command = [sys.executable, __file__, "--whole-run-child", system, env_id, str(batch_size)]
    env = {**os.environ, "ROBOPPO_JAX_CACHE": cache}
    start_epoch, start = time.time(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    first_step = json.loads(done.stdout.strip().splitlines()[-1])["first_step"] - start_epoch
    return {"wall": wall, "first_step": first_step}


def whole_run_table(args: argparse.Namespace) -> str:
    env_id = args.envs[0]
    peers = [s for s in ("sbx", "sb3") if missing(s) is None]
    lines = [
        f"**Whole runs**: `learn({WHOLE_RUN_STEPS:_})` on {env_id} as a whole `python` process (imports, model, "
        "JAX's import and compilation included), 16 envs x 128 steps, 5 epochs, SB3's other defaults; "
        "roboppo first with an empty compilation cache (cold), then with the cache that run filled (warm); "
        f"each system's fastest of {args.whole_run_repeats} interleaved rounds. Seconds to the first env step / "
        "wall seconds; ratios are stock SB3's wall time over each system's. "
        "**Floor**: a process that only imports torch and SB3, makes roboppo's 16 envs and steps them "
        f"{WHOLE_RUN_STEPS:_} times with random actions (no policy, no training): SB3 / floor is the most "
        "any PPO on these libraries and this env could reach.",
        "",
        "| batch | roboppo cold | roboppo warm | SBX | stock SB3 | floor "
        "| SB3 / roboppo cold | SB3 / roboppo warm | SB3 / SBX | SB3 / floor |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for batch_size in (64, 256, 512):
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.whole_run_repeats):  # interleaved rounds; each system's fastest counts
            for name, run in whole_run_round(env_id, batch_size, peers).items():
                if name not in best or run["wall"] < best[name]["wall"]:
                    best[name] = run
        lines.append(_whole_run_row(batch_size, best))
        print(lines[-1], flush=True)
    return "\n".join(lines)


def whole_run_round(env_id: str, batch_size: int, peers: list[str]) -> dict[str, dict[str, float]]:
    """roboppo cold, then warm on the cache it filled; each peer; the floor."""
    with tempfile.TemporaryDirectory(prefix="roboppo-jax-cache-") as cache:
        runs = {"cold": whole_run("roboppo", env_id, batch_size, cache)}
        runs["warm"] = whole_run("roboppo", env_id, batch_size, cache)
    for peer in (*peers, "floor"):
        runs[peer] = whole_run(peer, env_id, batch_size, "")
    return runs


def _whole_run_row(batch_size: int, runs: dict[str, dict[str, float]]) -> str:
    stock = runs["sb3"]["wall"]

    def cell(name: str) -> str:
        run = runs.get(name)
        return f"{run['first_step']:.1f} / {run['wall']:.1f}" if run else str(missing(name))

    def ratio(name: str) -> str:
        return f"{stock / runs[name]['wall']:.2f}" if name in runs else "-"

    return (
        f"| {batch_size} | {cell('cold')} | {cell('warm')} | {cell('sbx')} | {cell('sb3')} | {cell('floor')} "
        f"| {ratio('cold')} | {ratio('warm')} | {ratio('sbx')} | {ratio('floor')} |"
    )


# -- scaling and memory ---------------------------------------------------------------------------


def scaling_table(args: argparse.Namespace) -> str:
    env_id, batch_size = args.envs[0], max(args.batch_sizes)
    lines = [
        f"Scaling on {env_id} (batch {batch_size}): steps per second.",
        "",
        "| threads | envs | roboppo env | roboppo PPO |",
        "|---:|---:|---:|---:|",
    ]
    settings = hparams(batch_size, args.epochs)
    for threads in (1, 2):
        for n_envs in (8, 16, 32, 64):
            limit = in_child(env_rates, env_id, n_envs, threads, ("roboppo",), 1)["roboppo"]
            ours = in_child(ppo_run, "roboppo", env_id, n_envs, settings, max(1, args.rollouts // 2), threads)
            lines.append(f"| {threads} | {n_envs} | {limit:,.0f} | {ours['sps']:,.0f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def memory_table(args: argparse.Namespace) -> str:
    env_id, batch_size = args.envs[0], max(args.batch_sizes)
    result = in_child(memory_run, env_id, args.n_envs, hparams(batch_size, args.epochs), args.memory_steps)
    samples = result["samples"]
    picks = [samples[0], samples[1], samples[len(samples) // 4], samples[len(samples) // 2], samples[-1]]
    lines = [
        f"Resident memory of roboppo PPO on {env_id} over {args.memory_steps:,} steps (batch {batch_size}), "
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
    if len(sys.argv) > 1 and sys.argv[1] == "--whole-run-child":
        whole_run_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", choices=list(TWINS), help="default: every env (with --suite, the eleven)")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--epochs", type=int, default=10, help="PPO epochs per rollout in the end-to-end table")
    parser.add_argument("--rollouts", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1, help="runs per system, interleaved; the best counts")
    parser.add_argument("--whole-run", action="store_true", help="add the whole-process table (first env listed)")
    parser.add_argument("--whole-run-repeats", type=int, default=1, help="rounds of the whole-run table")
    parser.add_argument("--scaling", action="store_true", help="add the threads x envs scaling table")
    parser.add_argument("--memory-steps", type=int, default=0, help="train roboppo this long, sampling memory")
    parser.add_argument("--suite", action="store_true", help="only the env table, over the roboppo/*-v5 envs")
    parser.add_argument("--robots", action="store_true", help="only the env table, over the Playground robots")
    parser.add_argument("--policy", type=pathlib.Path, help="with --suite: drive the envs with this saved model")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    if args.policy is not None and not (args.suite and args.envs and len(args.envs) == 1):
        parser.error("--policy needs --suite and the one env the model was trained on (--envs ID)")
    if args.suite or args.robots:
        args.envs = args.envs or (list(ROBOTS) if args.robots else [f"roboppo/{name}-v5" for name in SUITE])
        publish(env_table(args)[0], args.out)
        return
    args.envs = args.envs or list(TWINS)
    env_text, rates = env_table(args)
    tables = [env_text, ppo_table(args, rates)]
    if args.whole_run:
        tables.append(whole_run_table(args))
    if args.scaling:
        tables.append(scaling_table(args))
    if args.memory_steps:
        tables.append(memory_table(args))
    publish("\n\n".join(tables), args.out)


if __name__ == "__main__":
    main()
