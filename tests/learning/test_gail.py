"""GAIL learns: RoboInvertedPendulum-v0 from 10 expert episodes, with the zoo GAIL entry."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.gail import GAILTrainer, collect_demonstrations, load_demonstrations, save_demonstrations
from roboppo.zoo import load_ppo_hparams
from roboppo.zoo.hparams import load_gail_hparams

ENV = "RoboInvertedPendulum-v0"


@pytest.fixture(scope="module")
def expert_demos(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    entry = load_ppo_hparams(ENV)
    expert = PPO("MlpPolicy", ENV, n_envs=entry.n_envs, seed=0, **entry.ppo_kwargs)
    stop = StopTrainingOnRewardThreshold(reward_threshold=990)
    expert.learn(30_000, callback=EvalCallback(make_env_from_id(ENV, seed=5), eval_freq=250, callback_on_new_best=stop))
    path = tmp_path_factory.mktemp("demos") / "pendulum.npz"
    save_demonstrations(path, collect_demonstrations(expert, ENV, n_episodes=10), ENV)
    return path


@pytest.mark.parametrize("seed", [0, 1])
def test_gail_pendulum_reaches_950_within_30k_steps(expert_demos: pathlib.Path, seed: int) -> None:
    demos = load_demonstrations(expert_demos, ENV)
    assert demos.episode_returns is not None and demos.episode_returns.mean() >= 990
    entry = load_gail_hparams(ENV)
    trainer = GAILTrainer(
        ENV, demos, n_envs=entry.n_envs, seed=seed, ppo_kwargs=entry.ppo_kwargs, **entry.trainer_kwargs
    )
    eval_env = make_env_from_id(ENV, seed=77)
    best = -np.inf
    while trainer.generator.num_timesteps < 30_000 and best < 950:
        trainer.train(trainer.steps_per_round * 10)
        best = max(best, evaluate_policy(trainer.generator, eval_env, n_eval_episodes=5)[0])
    assert best >= 950, f"GAIL reached {best} after {trainer.generator.num_timesteps} steps"
