"""Discrete actions learn: CartPole-v1 with rl-baselines3-zoo's PPO settings, the budget stock SB3 needs."""

from __future__ import annotations

from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.cli.baselines import rl_zoo3_cartpole

BUDGET = 100_000  # rl-zoo3's budget for CartPole-v1; bench/results/cartpole_dropin.md has stock SB3 beside it


def test_cartpole_reaches_475_within_rl_zoo3_budget() -> None:
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=0), seed=0, **rl_zoo3_cartpole())
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=10_000)
    stop = StopTrainingOnRewardThreshold(reward_threshold=475)
    evaluation = EvalCallback(eval_env, n_eval_episodes=10, eval_freq=10_000 // 8, callback_on_new_best=stop)
    model.learn(BUDGET, callback=evaluation)
    assert evaluation.best_mean_reward >= 475, f"best evaluation {evaluation.best_mean_reward} after {BUDGET} steps"
    mean_return, _ = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=20_000), n_eval_episodes=10)
    assert mean_return >= 475
