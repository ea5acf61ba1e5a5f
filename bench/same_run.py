"""Train a zoo entry's settings for a few rollouts and save the final parameters, to compare two versions of roboppo.

Run it in two checkouts (or with two ``PYTHONPATH`` settings) and compare the files: equal
parameters mean the two versions train identically, step for step.

    python bench/same_run.py train RoboHopper-v0 20480 new.npz          # in this checkout
    PYTHONPATH=/path/to/other/checkout python bench/same_run.py train RoboHopper-v0 20480 old.npz
    python bench/same_run.py compare old.npz new.npz
"""

from __future__ import annotations

import sys

import numpy as np
import torch as th

SETTINGS = {  # the zoo entries of zoo_hparams/ppo.yml (Ant with 64 envs instead of 256)
    "RoboHopper-v0": {
        "n_envs": 4, "n_steps": 512, "batch_size": 64, "n_epochs": 10, "reward_scale": 0.1,
        "policy_kwargs": {"log_std_init": -1.0},
    },
    "RoboAnt-v0": {
        "n_envs": 64, "n_steps": 40, "batch_size": 1280, "n_epochs": 4, "gamma": 0.97, "clip_range": 0.3,
        "ent_coef": 0.01, "max_grad_norm": 1e9, "reward_scale": 0.1,
        "policy_kwargs": {"net_arch": [64, 64], "activation_fn": th.nn.SiLU, "obs_clip": 5.0},
    },
}  # fmt: skip


def train(env_id: str, steps: int, out: str) -> None:
    from stable_baselines3.common.utils import LinearSchedule

    from roboppo import PPO

    th.set_num_threads(1)
    settings = dict(SETTINGS[env_id])
    if env_id == "RoboHopper-v0":
        settings |= {"learning_rate": LinearSchedule(3e-4, 0.0, 1.0), "clip_range": LinearSchedule(0.2, 0.0, 1.0)}
    model = PPO("MlpPolicy", env_id, seed=3, device="cpu", **settings).learn(steps)
    params = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach().numpy()
    np.savez(out, params=params)
    print(f"{env_id}: {model.num_timesteps:,} steps, parameters saved to {out}")


def compare(first: str, second: str) -> None:
    a, b = np.load(first)["params"], np.load(second)["params"]
    print(f"max |difference| {np.abs(a - b).max():.3g}; identical: {np.array_equal(a, b)}")


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        compare(sys.argv[2], sys.argv[3])
