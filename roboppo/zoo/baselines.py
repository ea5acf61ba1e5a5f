"""Stock Stable-Baselines3 PPO with rl-baselines3-zoo's tuned hyperparameters: the public anchor.

rl-baselines3-zoo (``hyperparams/ppo.yml``) tunes PPO per MuJoCo env with ``normalize: true``
(``VecNormalize`` on observations and rewards); these are its values for the Gymnasium twins of
roboppo's MuJoCo envs. Used by ``roboppo-zoo benchmark`` and the scripts in ``bench/``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecNormalize

import roboppo_envs
from roboppo.zoo.stats import early_ends

GYMNASIUM_TWIN = {
    "RoboInvertedPendulum-v0": "InvertedPendulum-v5",
    "RoboInvertedDoublePendulum-v0": "InvertedDoublePendulum-v5",
    "RoboHopper-v0": "Hopper-v5",
} | {f"roboppo/{name}-v5": f"{name}-v5" for name in roboppo_envs.SUITE_NAMES}

_BIG_RELU = {
    "log_std_init": -2.0, "ortho_init": False, "activation_fn": th.nn.ReLU,
    "net_arch": {"pi": [256, 256], "vf": [256, 256]},
}  # fmt: skip

RL_ZOO3_PPO: dict[str, dict[str, Any]] = {
    "RoboInvertedPendulum-v0": {
        "n_steps": 32, "batch_size": 64, "gamma": 0.999, "learning_rate": 0.000222425, "ent_coef": 1.37976e-07,
        "clip_range": 0.4, "n_epochs": 5, "gae_lambda": 0.9, "max_grad_norm": 0.3, "vf_coef": 0.19816,
    },
    "RoboInvertedDoublePendulum-v0": {
        "n_steps": 128, "batch_size": 512, "gamma": 0.98, "learning_rate": 0.000155454, "ent_coef": 1.05057e-06,
        "clip_range": 0.4, "n_epochs": 10, "gae_lambda": 0.8, "max_grad_norm": 0.5, "vf_coef": 0.695929,
    },
    "RoboHopper-v0": {
        "n_steps": 512, "batch_size": 32, "gamma": 0.999, "learning_rate": 9.80828e-05, "ent_coef": 0.00229519,
        "clip_range": 0.2, "n_epochs": 5, "gae_lambda": 0.99, "max_grad_norm": 0.7, "vf_coef": 0.835671,
        "policy_kwargs": _BIG_RELU,
    },
    "roboppo/HalfCheetah-v5": {
        "n_steps": 512, "batch_size": 64, "gamma": 0.98, "learning_rate": 2.0633e-05, "ent_coef": 0.000401762,
        "clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.92, "max_grad_norm": 0.8, "vf_coef": 0.58096,
        "policy_kwargs": _BIG_RELU,
    },
    "roboppo/Walker2d-v5": {
        "n_steps": 512, "batch_size": 32, "gamma": 0.99, "learning_rate": 5.05041e-05, "ent_coef": 0.000585045,
        "clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.95, "max_grad_norm": 1.0, "vf_coef": 0.871923,
    },
}  # fmt: skip
# the suite ids of the three tasks above share their settings
RL_ZOO3_PPO |= {roboppo_envs.ROBO_SUITE_TWINS[robo]: RL_ZOO3_PPO[robo] for robo in roboppo_envs.ROBO_SUITE_TWINS}


def rl_zoo3_cartpole() -> dict[str, Any]:
    """rl-baselines3-zoo's PPO settings for ``CartPole-v1`` (with ``n_envs=8``, 100k steps): the discrete check."""
    return {
        "n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "ent_coef": 0.0,
        "learning_rate": LinearSchedule(1e-3, 0.0, 1.0), "clip_range": LinearSchedule(0.2, 0.0, 1.0),
    }  # fmt: skip


def train_stock_sb3(
    env_id: str, seed: int, n_timesteps: int, ppo_kwargs: dict[str, Any] | None = None, n_envs: int = 1
) -> tuple[SB3PPO, VecNormalize, float]:
    """Stock SB3 PPO + ``VecNormalize`` on ``env_id``'s Gymnasium twin; returns (model, env, training seconds)."""
    kwargs = RL_ZOO3_PPO[env_id] if ppo_kwargs is None else ppo_kwargs
    env = VecNormalize(make_vec_env(GYMNASIUM_TWIN[env_id], n_envs=n_envs, seed=seed), gamma=kwargs.get("gamma", 0.99))
    model = SB3PPO("MlpPolicy", env, seed=seed, **kwargs)
    start = time.perf_counter()
    model.learn(n_timesteps)
    return model, env, time.perf_counter() - start


def evaluate_stock_sb3(
    model: SB3PPO, train_env: VecNormalize, env_id: str, seed: int, episodes: int = 10
) -> tuple[float, int]:
    """Deterministic mean return on a fresh twin env sharing the training observation statistics, and how many
    of the ``episodes`` terminated before the time limit (a fall)."""
    twin = GYMNASIUM_TWIN[env_id]
    eval_env = VecNormalize(make_vec_env(twin, n_envs=1, seed=seed), training=False, norm_reward=False)
    eval_env.obs_rms = train_env.obs_rms
    returns, lengths = evaluate_policy(
        model, eval_env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return float(np.mean(returns)), early_ends(lengths, twin)
