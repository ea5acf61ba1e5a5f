"""The agent learns: RoboInvertedPendulum-v0 is solved within a small step budget."""

from __future__ import annotations

import pytest
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id
from roboppo.zoo import load_ppo_hparams

BUDGET = 20_000


@pytest.mark.parametrize("seed", [1, 2])
def test_inverted_pendulum_reaches_950_within_20k_steps(seed: int) -> None:
    entry = load_ppo_hparams("RoboInvertedPendulum-v0")
    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=entry.n_envs, seed=seed, **entry.ppo_kwargs)
    eval_env = make_env_from_id("RoboInvertedPendulum-v0", seed=1000 + seed)
    stop = StopTrainingOnRewardThreshold(reward_threshold=950)
    evaluation = EvalCallback(eval_env, n_eval_episodes=10, eval_freq=1000 // entry.n_envs, callback_on_new_best=stop)
    model.learn(BUDGET, callback=evaluation)
    assert evaluation.best_mean_reward >= 950, f"best evaluation {evaluation.best_mean_reward} after {BUDGET} steps"
    fresh_env = make_env_from_id("RoboInvertedPendulum-v0", seed=2000 + seed)
    mean_return, _ = evaluate_policy(model, fresh_env, n_eval_episodes=10, deterministic=True)
    assert mean_return >= 950
