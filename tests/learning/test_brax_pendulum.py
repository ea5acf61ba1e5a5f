"""PPO on a Brax env learns on the CPU: the inverted pendulum, through the on-device rollout path."""

from __future__ import annotations

import pytest
from stable_baselines3.common.evaluation import evaluate_policy

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id

pytest.importorskip("jax")

# Over 20 episodes a zero action balances the Brax pendulum for 78 steps on average, random actions for 24.
ZERO_ACTION_RETURN = 78


def test_brax_inverted_pendulum_learns_within_20k_steps() -> None:
    model = PPO(
        "MlpPolicy", "RoboBraxInvertedPendulum-v0", n_envs=16, n_steps=64, batch_size=256, n_epochs=10,
        learning_rate=1e-3, seed=1,
    )  # fmt: skip
    model.learn(20_000)
    eval_env = make_env_from_id("RoboBraxInvertedPendulum-v0", n_envs=4, seed=99)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=8, deterministic=True)
    assert mean_return >= 200 > 2 * ZERO_ACTION_RETURN
