"""RoboAnt-v0 on Brax: roboppo PPO against a plain PyTorch PPO loop over Brax's own torch wrapper.

The reference loop follows the Brax PyTorch PPO notebook (see DEVELOPERS.md's anchors): Brax's
``VectorGymWrapper`` + ``TorchWrapper`` on the legacy ``gym`` API, a tanh-normal actor with
``softplus + 0.001`` scale, 64x64 SiLU networks, in-agent observation normalization, GAE with
Brax's ``info['truncation']``, reward scaling 0.1, entropy 1e-2, gamma 0.97, lambda 0.95, clip
0.3, Adam 3e-4, no gradient clipping. roboppo runs ``PPO("MlpPolicy", "RoboAnt-v0")`` with the
same batch geometry and coefficients (its policy keeps a state-independent log-std).

Both run side by side in this process on the same device, the same number of env steps and
the same seed; compilation is done before the clock starts. Reported: training env steps per
second, and the mean return of one deterministic 1,000-step episode per env on fresh envs.

    python bench/brax_ant.py --preset cpu    # small batch, minutes on a laptop CPU
    python bench/brax_ant.py --preset gpu    # the notebook's 2048 envs, 30M steps
"""

from __future__ import annotations

import argparse
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch as th
from _report import publish
from torch import nn
from torch.nn.functional import softplus

from roboppo import PPO
from roboppo_envs.brax import BraxVectorEnv


@dataclass(frozen=True)
class Settings:
    num_envs: int
    unroll_length: int
    batch_size: int  # sequences of unroll_length steps per minibatch
    num_minibatches: int
    num_timesteps: int
    epochs: int = 4
    reward_scaling: float = 0.1
    entropy_cost: float = 1e-2
    discounting: float = 0.97
    gae_lambda: float = 0.95
    clip: float = 0.3
    learning_rate: float = 3e-4

    @property
    def steps_per_update(self) -> int:
        return self.batch_size * self.num_minibatches * self.unroll_length


PRESETS = {
    "gpu": Settings(num_envs=2048, unroll_length=5, batch_size=1024, num_minibatches=32, num_timesteps=30_000_000),
    "cpu": Settings(num_envs=256, unroll_length=5, batch_size=256, num_minibatches=8, num_timesteps=204_800),
}

Policy = Callable[[th.Tensor], th.Tensor]


class NotebookAgent(nn.Module):
    """Actor-critic of the Brax PyTorch notebook's design: tanh-normal actions, in-agent normalization."""

    def __init__(self, obs_size: int, action_size: int, settings: Settings, device: th.device) -> None:
        super().__init__()
        self.settings, self.action_size = settings, action_size
        self.policy = mlp(obs_size, 2 * action_size)
        self.value = mlp(obs_size, 1)
        self.register_buffer("obs_sum", th.zeros(obs_size, device=device))
        self.register_buffer("obs_sumsq", th.zeros(obs_size, device=device))
        self.register_buffer("count", th.zeros((), device=device))
        self.to(device)

    @th.no_grad()
    def update_normalization(self, observations: th.Tensor) -> None:
        flat = observations.reshape(-1, observations.shape[-1])
        self.obs_sum += flat.sum(0)
        self.obs_sumsq += (flat**2).sum(0)
        self.count += flat.shape[0]

    def normalize(self, obs: th.Tensor) -> th.Tensor:
        if self.count.item() == 0:
            return obs
        mean = self.obs_sum / self.count
        var = (self.obs_sumsq / self.count - mean**2).clamp(min=1e-6)
        return ((obs - mean) / var.sqrt()).clamp(-5.0, 5.0)

    def distribution(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        loc, scale = self.policy(self.normalize(obs)).chunk(2, dim=-1)
        return loc, softplus(scale) + 0.001

    def log_prob(self, loc: th.Tensor, scale: th.Tensor, pre_tanh: th.Tensor) -> th.Tensor:
        normal = th.distributions.Normal(loc, scale).log_prob(pre_tanh)
        return (normal - 2.0 * (0.6931471805599453 - pre_tanh - softplus(-2.0 * pre_tanh))).sum(-1)

    def act(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        loc, scale = self.distribution(obs)
        pre_tanh = loc + scale * th.randn_like(loc)
        return pre_tanh, self.log_prob(loc, scale, pre_tanh)

    def loss(self, batch: dict[str, th.Tensor]) -> th.Tensor:
        """``batch`` tensors are ``[T, B, ...]`` (observation has T + 1 rows)."""
        s = self.settings
        obs = batch["observation"]
        loc, scale = self.distribution(obs[:-1])
        values = self.value(self.normalize(obs)).squeeze(-1)
        reward = batch["reward"] * s.reward_scaling
        truncation, termination = batch["truncation"], batch["done"] * (1 - batch["truncation"])
        with th.no_grad():
            advantages = gae(reward, values.detach(), termination, truncation, s.discounting, s.gae_lambda)
            targets = advantages + values[:-1].detach()
        log_prob = self.log_prob(loc, scale, batch["action"])
        ratio = th.exp(log_prob - batch["log_prob"])
        normalized = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        policy_loss = -th.min(ratio * normalized, ratio.clamp(1 - s.clip, 1 + s.clip) * normalized).mean()
        value_loss = 0.5 * 0.5 * ((targets - values[:-1]) ** 2).mean()
        noise = loc + scale * th.randn_like(loc)
        entropy = (0.5 + 0.5 * th.log(2 * th.pi * scale**2)).sum(-1) + 2.0 * (
            0.6931471805599453 - noise - softplus(-2.0 * noise)
        ).sum(-1)
        return policy_loss + value_loss - s.entropy_cost * entropy.mean()


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, outputs))


def gae(
    reward: th.Tensor, values: th.Tensor, termination: th.Tensor, truncation: th.Tensor, gamma: float, lam: float
) -> th.Tensor:
    """Advantages ``[T, B]``; truncated steps neither bootstrap nor propagate (Brax's convention)."""
    advantages = th.zeros_like(reward)
    running = th.zeros_like(reward[0])
    for t in reversed(range(reward.shape[0])):
        delta = reward[t] + gamma * (1 - termination[t]) * values[t + 1] - values[t]
        running = (delta + gamma * lam * (1 - termination[t]) * running) * (1 - truncation[t])
        advantages[t] = running
    return advantages


def train_notebook_loop(settings: Settings, device: th.device, seed: int) -> tuple[float, Policy]:
    """The reference loop; returns (training env steps per second, deterministic policy)."""
    from brax import envs
    from brax.envs.wrappers import gym as gym_wrapper
    from brax.envs.wrappers import torch as torch_wrapper

    th.manual_seed(seed)
    env = envs.create("ant", batch_size=settings.num_envs, episode_length=1000, backend="spring")
    env = torch_wrapper.TorchWrapper(gym_wrapper.VectorGymWrapper(env, seed=seed), device=device)
    observation = env.reset()
    env.step(th.zeros(env.action_space.shape, device=device))  # compile before timing
    agent = NotebookAgent(env.observation_space.shape[-1], env.action_space.shape[-1], settings, device)
    optimizer = th.optim.Adam(agent.parameters(), lr=settings.learning_rate)
    unrolls = settings.batch_size * settings.num_minibatches // settings.num_envs
    updates = max(settings.num_timesteps // settings.steps_per_update, 1)
    start = time.perf_counter()
    for _ in range(updates):
        observation, data = notebook_unrolls(agent, env, observation, unrolls, settings.unroll_length)
        agent.update_normalization(data["observation"])
        for _ in range(settings.epochs):
            order = th.randperm(data["reward"].shape[1], device=device)
            for chunk in order.chunk(settings.num_minibatches):
                loss = agent.loss({key: value[:, chunk] for key, value in data.items()})
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    th.cuda.synchronize() if device.type == "cuda" else None
    seconds = time.perf_counter() - start

    def deterministic(obs: th.Tensor) -> th.Tensor:
        return th.tanh(agent.distribution(obs)[0])

    return updates * settings.steps_per_update / seconds, deterministic


def notebook_unrolls(
    agent: NotebookAgent, env: object, observation: th.Tensor, unrolls: int, length: int
) -> tuple[th.Tensor, dict[str, th.Tensor]]:
    """``unrolls`` unrolls of ``length`` steps, returned as ``[length, unrolls * num_envs, ...]``."""
    pieces: dict[str, list[th.Tensor]] = {
        k: [] for k in ("observation", "action", "log_prob", "reward", "done", "truncation")
    }
    for _ in range(unrolls):
        steps: dict[str, list[th.Tensor]] = {k: [] for k in pieces}
        steps["observation"].append(observation)
        for _ in range(length):
            with th.no_grad():
                pre_tanh, log_prob = agent.act(observation)
            observation, reward, done, info = env.step(th.tanh(pre_tanh))  # type: ignore[attr-defined]
            for key, value in (("observation", observation), ("action", pre_tanh), ("log_prob", log_prob),
                               ("reward", reward), ("done", done), ("truncation", info["truncation"])):  # fmt: skip
                steps[key].append(value)
        for key, values in steps.items():
            pieces[key].append(th.stack(values))
    return observation, {key: th.cat(values, dim=1) for key, values in pieces.items()}


def train_roboppo(settings: Settings, device: th.device, seed: int) -> tuple[float, Policy]:
    samples_per_update = settings.steps_per_update
    model = PPO(
        "MlpPolicy",
        "RoboAnt-v0",
        hyperparams="sb3",  # every setting below is the reference loop's
        n_envs=settings.num_envs,
        n_steps=samples_per_update // settings.num_envs,
        batch_size=samples_per_update // settings.num_minibatches,
        n_epochs=settings.epochs,
        gamma=settings.discounting,
        gae_lambda=settings.gae_lambda,
        clip_range=settings.clip,
        ent_coef=settings.entropy_cost,
        learning_rate=settings.learning_rate,
        max_grad_norm=1e9,  # the reference loop does not clip gradients
        reward_scale=settings.reward_scaling,
        policy_kwargs={"net_arch": [64, 64], "activation_fn": nn.SiLU, "obs_clip": 5.0},
        device=device,
        seed=seed,
    )
    model.env.reset()
    model.env.step(th.zeros(settings.num_envs, 8).numpy())  # compile before timing
    updates = max(settings.num_timesteps // samples_per_update, 1)
    start = time.perf_counter()
    model.learn(updates * samples_per_update)
    seconds = time.perf_counter() - start

    def deterministic(obs: th.Tensor) -> th.Tensor:
        with th.no_grad():
            return model.policy.get_distribution(obs.to(model.device)).mode()  # env-space actions

    return model.num_timesteps / seconds, deterministic


def evaluate(policy: Policy, num_envs: int, seed: int) -> float:
    """Mean return of each env's first episode (at most 1,000 steps), deterministic actions."""
    envs = BraxVectorEnv("ant", num_envs=num_envs, max_episode_steps=1000)
    obs = th.tensor(envs.reset(seed=seed)[0])
    returns, alive = th.zeros(num_envs), th.ones(num_envs, dtype=th.bool)
    for _ in range(1000):
        next_obs, reward, terminated, truncated, _ = envs.step(policy(obs).cpu().numpy())
        returns += th.as_tensor(reward, dtype=th.float32) * alive
        alive &= ~th.as_tensor(terminated | truncated)
        obs = th.as_tensor(next_obs)
        if not alive.any():
            break
    return float(returns.mean())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="gpu" if th.cuda.is_available() else "cpu")
    parser.add_argument("--timesteps", type=int, default=None, help="override the preset's env steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-envs", type=int, default=128)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    settings = PRESETS[args.preset]
    if args.timesteps:
        settings = Settings(**{**settings.__dict__, "num_timesteps": args.timesteps})
    device = th.device("cuda" if th.cuda.is_available() else "cpu")
    if device.type == "cpu":
        th.set_num_threads(1)
    rows = []
    for name, trainer in (("brax notebook loop", train_notebook_loop), ("roboppo", train_roboppo)):
        steps_per_second, policy = trainer(settings, device, args.seed)
        episode_return = evaluate(policy, args.eval_envs, seed=1000 + args.seed)
        rows.append((name, steps_per_second, episode_return))
        print(f"{name}: {steps_per_second:,.0f} train steps/s, return {episode_return:,.1f}", flush=True)
    reference = rows[0][1]
    total = max(settings.num_timesteps // settings.steps_per_update, 1) * settings.steps_per_update
    header = (
        f"RoboAnt-v0 (Brax ant, spring), device {device}, preset {args.preset}: {settings.num_envs} envs, "
        f"{settings.steps_per_update:,} steps per update, {total:,} steps, seed {args.seed}"
    )
    table = "\n".join(
        [
            header,
            "",
            "| system | train steps/s | ratio | eval return (mean over envs, 1 episode each) |",
            "|---|---:|---:|---:|",
            *(f"| {name} | {sps:,.0f} | {sps / reference:.2f}x | {ret:,.1f} |" for name, sps, ret in rows),
        ]
    )
    publish(table, args.out)


if __name__ == "__main__":
    main()
