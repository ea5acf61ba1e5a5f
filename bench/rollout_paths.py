"""The same PPO on two vector envs: one env per copy (DummyVecEnv) against the batched MuJoCo env,
both behind SB3's VecEnv interface, at the double pendulum's zoo settings.

Prints the deterministic return (5 episodes on a separate env) every 20,480 steps, per path and seed.

    python bench/rollout_paths.py PATH SEED STEPS      # PATH: old (DummyVecEnv) or new (batched)
    for s in 3 4 5; do python bench/rollout_paths.py old $s 160000; python bench/rollout_paths.py new $s 160000; done
"""

from __future__ import annotations

import sys

import torch as th
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id

ENV = "RoboInvertedDoublePendulum-v0"


def main() -> None:
    path, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    th.set_num_threads(1)
    settings = {"n_steps": 64, "batch_size": 128, "n_epochs": 10, "gamma": 0.99, "gae_lambda": 0.95}
    settings |= {"clip_range": 0.2, "learning_rate": 5e-4, "seed": seed}
    vec_env_cls = DummyVecEnv if path == "old" else None
    model = PPO("MlpPolicy", make_env_from_id(ENV, n_envs=8, seed=seed, vec_env_cls=vec_env_cls), **settings)
    for _ in range(steps // 20_000):
        model.learn(20_000, reset_num_timesteps=False)
        mean_return, _ = evaluate_policy(model, make_env_from_id(ENV, n_envs=1, seed=99), n_eval_episodes=5)
        print(path, seed, model.num_timesteps, round(mean_return), flush=True)


if __name__ == "__main__":
    main()
