"""Time to a return of 3,000 on Hopper: roboppo's one-liner beside SB3, SBX and torchrl at their published settings.

Each system trains Hopper (roboppo ``RoboHopper-v0``, the peers its Gymnasium twin ``Hopper-v5``) with
the settings its authors publish for that task, one run per process, torch on one thread:

- **roboppo**: ``PPO("MlpPolicy", "RoboHopper-v0").learn()``, the one-liner: the zoo entry (its
  batched env) and its budget, so its schedules are the entry's whatever ``--max-steps`` says;
- **SB3** and **SBX** (SB3 in JAX, which takes its hyperparameters from rl-baselines3-zoo):
  rl-baselines3-zoo's tuned PPO for Hopper (1 env, ``VecNormalize`` on observations and rewards,
  ``roboppo.cli.baselines.RL_ZOO3_PPO``);
- **torchrl**: its PPO MuJoCo example (``sota-implementations/ppo``, the settings of Schulman et al.
  2017): 1 env with ``VecNorm`` observations clipped to 10, 2,048 frames per batch, minibatches of 64,
  10 epochs, Adam at 3e-4 annealed to 0 over 1M frames, separate actor and critic optimizers, clip 0.2,
  GAE 0.99 / 0.95, critic loss 0.25 x L2, no entropy term, 64x64 tanh networks, a ``TanhNormal`` policy.

Every ``--eval-every`` steps the policy plays ``--eval-episodes`` deterministic episodes of a fresh
``Hopper-v5`` (the same episode seeds for every system), with the clock stopped. A run ends when an
evaluation first reaches ``--target`` or after ``--max-steps``. Reported per run: the env steps and
training seconds to the target (evaluations not counted), the best evaluation, and the wall time of
the whole process (imports, start-up and evaluations included).

    python bench/time_to_target.py --seeds 2 --jobs 2 --max-steps 1000000 --out bench/results/time_to_target.md

roboppo's runs go first, one at a time (its env uses both cores); the peers, single-threaded with one
env each, run ``--jobs`` at a time. SBX and torchrl are optional (``pip install 'roboppo[bench]'``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import logging
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from _report import publish

from roboppo.common.files import write_atomic

SYSTEMS = {
    "roboppo": 'PPO("MlpPolicy", "RoboHopper-v0"): the zoo entry',
    "SB3": "rl-baselines3-zoo's Hopper PPO, 1 env, VecNormalize",
    "SBX": "rl-baselines3-zoo's Hopper PPO, 1 env, VecNormalize",
    "torchrl": "its PPO MuJoCo example (Schulman et al. 2017), 1 env, VecNorm",
}
TWIN = "Hopper-v5"
EVAL_SEED = 10_000  # episode i of every evaluation starts from seed EVAL_SEED + i, for every system


def play(act: Callable[[np.ndarray], np.ndarray], episodes: int) -> float:
    """Mean return of ``episodes`` episodes of a fresh ``Hopper-v5`` driven by ``act`` (observation to action)."""
    import gymnasium as gym

    env, returns = gym.make(TWIN), []
    for episode in range(episodes):
        obs, _ = env.reset(seed=EVAL_SEED + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


class Clock:
    """Training seconds (evaluations excluded) and the evaluation history of one run; decides when it ends."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.next_eval = args, args.eval_every
        self.start, self.paused = time.perf_counter(), 0.0
        self.history: list[tuple[int, float, float]] = []  # (steps, training seconds, mean return)

    def due(self, steps: int) -> bool:
        """Whether an evaluation is due: every ``--eval-every`` steps, and at ``--max-steps`` (which ends the run)."""
        return steps >= min(self.next_eval, self.args.max_steps)

    def evaluate(self, steps: int, act: Callable[[np.ndarray], np.ndarray]) -> bool:
        """Evaluate at ``steps``; whether training goes on (target not reached, budget not spent)."""
        began = time.perf_counter()
        seconds = began - self.start - self.paused
        score = play(act, self.args.eval_episodes)
        self.paused += time.perf_counter() - began
        self.history.append((steps, seconds, score))
        self.next_eval += self.args.eval_every
        return score < self.args.target and steps < self.args.max_steps


# -- one run per system ---------------------------------------------------------------------------


def sb3_api_run(system: str, seed: int, clock: Clock) -> None:
    """roboppo, SB3 or SBX: ``learn`` with a callback that evaluates on schedule and stops at the target."""
    from stable_baselines3.common.callbacks import BaseCallback

    model, act = sb3_api_model(system, seed)

    class Evaluations(BaseCallback):
        def _on_step(self) -> bool:
            return not clock.due(self.num_timesteps) or clock.evaluate(self.num_timesteps, act)

    budget = {} if system == "roboppo" else {"total_timesteps": clock.args.max_steps}  # roboppo: the entry's own
    model.learn(callback=Evaluations(), **budget)  # the callback ends a run at the target or at --max-steps


def sb3_api_model(system: str, seed: int) -> tuple[Any, Callable[[np.ndarray], np.ndarray]]:
    """The model of ``system`` and its deterministic action for one raw ``Hopper-v5`` observation."""
    model: Any
    if system == "roboppo":
        from roboppo import PPO

        model = PPO("MlpPolicy", "RoboHopper-v0", seed=seed)
        return model, lambda obs: model.predict(obs, deterministic=True)[0]
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from roboppo.cli.baselines import RL_ZOO3_PPO

    settings = dict(RL_ZOO3_PPO["RoboHopper-v0"])
    env = VecNormalize(make_vec_env(TWIN, n_envs=1, seed=seed), gamma=settings["gamma"])
    if system == "SBX":
        import flax.linen
        from sbx import PPO as SBXPPO

        settings["policy_kwargs"] = {**settings["policy_kwargs"], "activation_fn": flax.linen.relu}
        model = SBXPPO("MlpPolicy", env, seed=seed, **settings)
    else:
        from stable_baselines3 import PPO as SB3PPO

        model = SB3PPO("MlpPolicy", env, seed=seed, device="cpu", **settings)
    return model, lambda obs: model.predict(env.normalize_obs(obs), deterministic=True)[0]


def torchrl_run(seed: int, clock: Clock) -> None:
    """torchrl's PPO MuJoCo example, its loop as written there, evaluated on schedule."""
    loop = torchrl_ppo(seed, clock.args.max_steps)
    act = next(loop)
    for steps in loop:
        if clock.due(steps) and not clock.evaluate(steps, act):
            break


def torchrl_ppo(seed: int, total_frames: int) -> Iterator[Any]:
    """Yields the deterministic action function once, then the frames collected after each batch's update."""
    import torch
    from tensordict import TensorDict
    from tensordict.nn import AddStateIndependentNormalScale, TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
    from torchrl.envs import (
        ClipTransform,
        DoubleToFloat,
        ExplorationType,
        GymEnv,
        RewardSum,
        StepCounter,
        TransformedEnv,
        VecNormV2,
        set_exploration_type,
    )
    from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    logging.getLogger("torchrl").setLevel(logging.WARNING)
    torch.manual_seed(seed)
    frames_per_batch, minibatch, epochs, lr = 2048, 64, 10, 3e-4
    vecnorm = VecNormV2(in_keys=["observation"], decay=0.99999, eps=1e-2)
    env = TransformedEnv(GymEnv(TWIN))
    for transform in (vecnorm, ClipTransform(in_keys=["observation"], low=-10, high=10), RewardSum(), StepCounter(),
                      DoubleToFloat(in_keys=["observation"])):  # fmt: skip
        env.append_transform(transform)
    n_obs, n_actions = env.observation_spec["observation"].shape[-1], env.action_spec_unbatched.shape[-1]

    def mlp(n_out: int, gain: float) -> Any:
        net = MLP(in_features=n_obs, out_features=n_out, num_cells=[64, 64], activation_class=torch.nn.Tanh)
        for layer in net.modules():
            if isinstance(layer, torch.nn.Linear):
                torch.nn.init.orthogonal_(layer.weight, gain)
                layer.bias.data.zero_()
        return net

    space = env.action_spec_unbatched.space
    actor = ProbabilisticActor(
        TensorDictModule(torch.nn.Sequential(mlp(n_actions, 1.0), AddStateIndependentNormalScale(n_actions,
                         scale_lb=1e-8)), in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], spec=env.full_action_spec_unbatched, distribution_class=TanhNormal,
        distribution_kwargs={"low": space.low, "high": space.high, "tanh_loc": False}, return_log_prob=True,
        default_interaction_type=ExplorationType.RANDOM,
    )  # fmt: skip
    critic = ValueOperator(mlp(1, 0.01), in_keys=["observation"])
    collector = Collector(
        env, actor, frames_per_batch=frames_per_batch, total_frames=total_frames,
        auto_register_policy_transforms=False,  # the policy keeps no state: nothing to register
    )  # fmt: skip
    collector.set_seed(seed)
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(frames_per_batch), sampler=SamplerWithoutReplacement(), batch_size=minibatch
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    loss_module = ClipPPOLoss(
        actor, critic, clip_epsilon=0.2, loss_critic_type="l2", entropy_bonus=False, critic_coeff=0.25,
        normalize_advantage=True,
    )  # fmt: skip
    optimizers = [torch.optim.Adam(net.parameters(), lr=lr, eps=1e-5) for net in (actor, critic)]
    total_updates = (total_frames // frames_per_batch) * epochs * (frames_per_batch // minibatch)

    def act(obs: np.ndarray) -> np.ndarray:
        normalize = vecnorm.to_observation_norm()  # the training statistics as they are now
        td = normalize(TensorDict({"observation": torch.as_tensor(obs)}, []))
        td["observation"] = td["observation"].clamp(-10, 10).float()
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            return actor(td)["action"].numpy()

    yield act
    updates, frames = 0, 0
    for data in collector:
        frames += data.numel()
        for _ in range(epochs):
            with torch.no_grad():
                data = advantage(data)
            buffer.extend(data.reshape(-1))
            for batch in buffer:
                for optimizer in optimizers:
                    optimizer.param_groups[0]["lr"] = lr * (1 - updates / total_updates)
                updates += 1
                losses = loss_module(batch)
                (losses["loss_objective"] + losses["loss_critic"]).backward()
                for optimizer in optimizers:
                    optimizer.step()
                    optimizer.zero_grad()
        collector.update_policy_weights_()
        yield frames
    collector.shutdown()


# -- the sweep ------------------------------------------------------------------------------------


def child(system: str, seed: int, args: argparse.Namespace) -> None:
    """One run in this process; prints its evaluation history as JSON."""
    import torch

    torch.set_num_threads(1)
    clock = Clock(args)
    if system == "torchrl":
        torchrl_run(seed, clock)
    else:
        sb3_api_run(system, seed, clock)
    print(json.dumps({"history": clock.history}))


def run(system: str, seed: int, args: argparse.Namespace, rows: pathlib.Path) -> dict[str, Any]:
    """One run as a whole ``python`` process; its row is kept in ``rows`` (a finished run is not run again)."""
    path = rows / f"{system}-seed{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    flags = [f"--{name.replace('_', '-')}={getattr(args, name)}" for name in CHILD_FLAGS]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", system, str(seed), *flags], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{system} seed {seed} failed:\n{done.stderr[-3000:]}")
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith('{"history"'))
    row = {"system": system, "seed": seed, "wall": wall, "history": json.loads(line)["history"]}
    write_atomic(path, json.dumps(row))
    print(f"{system} seed {seed}: {summary(row, args.target)}", flush=True)
    return row


def reached(row: dict[str, Any], target: float) -> tuple[int, float] | None:
    """Env steps and training seconds at the first evaluation at or above ``target``; None when none was."""
    return next(((steps, seconds) for steps, seconds, score in row["history"] if score >= target), None)


def summary(row: dict[str, Any], target: float) -> str:
    hit, best = reached(row, target), max(score for _, _, score in row["history"])
    steps = row["history"][-1][0]
    shown = f"not reached in {steps:,} steps" if hit is None else f"{hit[0]:,} steps, {hit[1]:,.0f} s"
    return f"{shown} (best evaluation {best:,.0f}; process {row['wall']:,.0f} s)"


def table(found: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"**Time to {args.target:,.0f}** on Hopper: env steps and training seconds (evaluations not counted) until "
        f"a {args.eval_episodes}-episode deterministic evaluation, every {args.eval_every:,} steps, first reached "
        f"{args.target:,.0f}; at most {args.max_steps:,} steps. Each system at its published settings, one run per "
        "process, torch on one thread.",
        "",
        "| system | settings | seed | steps to target | seconds to target | best evaluation | process wall time |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in found:
        hit = reached(row, args.target)
        best = max(score for _, _, score in row["history"])
        to = ("not reached", "-") if hit is None else (f"{hit[0]:,}", f"{hit[1]:,.0f}")
        lines.append(
            f"| {row['system']} | {SYSTEMS[row['system']]} | {row['seed']} | {to[0]} | {to[1]} | {best:,.0f} | "
            f"{row['wall']:,.0f} s |"
        )
    lines += ["", ratios(found, args)]
    return "\n".join(lines)


def ratios(found: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """roboppo's median seconds to the target, and each peer's against it (a lower bound where none reached it)."""
    ours = [hit[1] for row in found if row["system"] == "roboppo" and (hit := reached(row, args.target))]
    if not ours:
        return "roboppo reached the target in no run."
    median = statistics.median(ours)
    parts = [f"roboppo's median time to {args.target:,.0f}: {median:,.0f} s"]
    for system in [s for s in SYSTEMS if s != "roboppo"]:
        rows = [row for row in found if row["system"] == system]
        if not rows:
            continue
        hits = [reached(row, args.target) for row in rows]
        if all(hit is not None for hit in hits):
            seconds = statistics.median(hit[1] for hit in hits if hit is not None)
            parts.append(f"{system} {seconds:,.0f} s, {seconds / median:.1f}x roboppo's")
        else:
            spent = min(row["history"][-1][1] for row, hit in zip(rows, hits, strict=True) if hit is None)
            parts.append(
                f"{system} did not reach it in {sum(h is None for h in hits)} of {len(rows)} runs: more than "
                f"{spent:,.0f} s, over {spent / median:.1f}x roboppo's"
            )
    return "; ".join(parts) + "."


CHILD_FLAGS = ("target", "eval_every", "eval_episodes", "max_steps")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="peer runs at once (roboppo's run alone)")
    parser.add_argument("--target", type=float, default=3000.0)
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=1_000_000)
    parser.add_argument("--out", type=pathlib.Path, default=None, help="the table; runs are kept in OUT without .md")
    return parser


def missing(system: str) -> str | None:
    module = {"SBX": "sbx", "torchrl": "torchrl"}.get(system)
    return None if module is None or importlib.util.find_spec(module) else f"{module} not installed"


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), parser().parse_args(sys.argv[4:]))
        return
    args = parser().parse_args()
    rows = args.out.with_suffix("") if args.out else pathlib.Path(tempfile.mkdtemp(prefix="time-to-target-"))
    rows.mkdir(parents=True, exist_ok=True)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    for system in args.systems:
        if missing(system):
            print(f"{system}: {missing(system)}, skipped", flush=True)
    found = [run("roboppo", seed, args, rows) for seed in seeds if "roboppo" in args.systems]
    peers = [(s, seed) for s in args.systems if s != "roboppo" and not missing(s) for seed in seeds]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:  # each run is its own process
        found += list(pool.map(lambda job: run(job[0], job[1], args, rows), peers))
    publish(table(found, args), args.out)


if __name__ == "__main__":
    main()
