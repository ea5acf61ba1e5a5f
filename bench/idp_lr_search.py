"""Learning-rate settings for the double pendulum's zoo entry: 3 seeds each, 150k steps unless BUDGETS says.

Every setting keeps the rest of the entry (8 envs x 64 steps, minibatch 128, 10 epochs) and is
scored by 10 deterministic episodes on a separate env after training.

    python bench/idp_lr_search.py lr1e-3 lr1e-3lin 16env_lr1e-3 lr2e-3lin lr2e-3lin_rs0.1 \
        lr2e-3lin_clip-lin lr2e-3lin_clip-lin_rs0.1 100k_lr2e-3lin_clip-lin_rs0.1
"""

from __future__ import annotations

import sys
from typing import Any

import torch as th
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.common.hparams import LinearSchedule

ENV = "RoboInvertedDoublePendulum-v0"
BASE: dict[str, Any] = {
    "n_steps": 64, "batch_size": 128, "n_epochs": 10, "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2,
}  # fmt: skip
SETTINGS: dict[str, dict[str, Any]] = {
    "lr5e-4": {"learning_rate": 5e-4},
    "lr1e-3": {"learning_rate": 1e-3},
    "lr1e-3lin": {"learning_rate": LinearSchedule(1e-3)},
    "16env_lr1e-3": {"learning_rate": 1e-3, "n_steps": 32},
    "lr2e-3lin": {"learning_rate": LinearSchedule(2e-3)},
    "lr2e-3lin_rs0.1": {"learning_rate": LinearSchedule(2e-3), "reward_scale": 0.1},
    "lr2e-3lin_clip-lin": {"learning_rate": LinearSchedule(2e-3), "clip_range": LinearSchedule(0.2)},
    "lr2e-3lin_clip-lin_rs0.1": {
        "learning_rate": LinearSchedule(2e-3),
        "clip_range": LinearSchedule(0.2),
        "reward_scale": 0.1,
    },
}
SETTINGS["100k_lr2e-3lin_clip-lin_rs0.1"] = SETTINGS["lr2e-3lin_clip-lin_rs0.1"]
BUDGETS: dict[str, int] = {"100k_lr2e-3lin_clip-lin_rs0.1": 100_000}


def main() -> None:
    th.set_num_threads(1)
    for name in sys.argv[1:] or list(SETTINGS):
        n_envs = 16 if name.startswith("16env") else 8
        for seed in (0, 1, 2):
            env = make_env_from_id(ENV, n_envs=n_envs, seed=seed, env_kwargs={"num_threads": 1})
            model = PPO("MlpPolicy", env, seed=seed, **(BASE | SETTINGS[name]))
            model.learn(BUDGETS.get(name, 150_000))
            mean_return, _ = evaluate_policy(model, make_env_from_id(ENV, n_envs=1, seed=99), n_eval_episodes=10)
            print(name, seed, round(mean_return), flush=True)


if __name__ == "__main__":
    main()
