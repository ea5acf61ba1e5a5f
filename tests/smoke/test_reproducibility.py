"""Same seed, same run: weights and evaluations repeat exactly on the CPU, across repeated ``learn()`` calls."""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np
import pytest
from stable_baselines3.common.callbacks import EvalCallback

from roboppo import PPO
from roboppo.common.env_util import make_env_from_id

SETTINGS: dict[str, Any] = {"n_steps": 32, "batch_size": 64, "n_epochs": 2, "policy_kwargs": {"net_arch": [16]}}


def twice_learned(env_id: str, seed: int) -> tuple[list[np.ndarray], list[list[float]]]:
    """Train with two ``learn()`` calls (each resets the env), evaluating every 64 steps; weights and returns."""
    if "Brax" in env_id:
        pytest.importorskip("jax")
    model = PPO("MlpPolicy", env_id, n_envs=4, seed=seed, **SETTINGS)
    eval_env = make_env_from_id(env_id, seed=seed + 100)
    with tempfile.TemporaryDirectory() as log_path:  # EvalCallback keeps its history only with a log path
        evaluation = EvalCallback(eval_env, n_eval_episodes=2, eval_freq=16, log_path=log_path, verbose=0)
        model.learn(256, callback=evaluation)
        model.learn(256, callback=evaluation)
    weights = [p.detach().numpy().copy() for p in model.policy.parameters()]
    weights += [model.policy.features_extractor.obs_rms.mean.numpy().copy()]
    return weights, evaluation.evaluations_results


@pytest.mark.parametrize("env_id", ["RoboInvertedPendulum-v0", "RoboBraxInvertedPendulum-v0"])
def test_same_seed_repeats_weights_and_every_evaluation(env_id: str) -> None:
    (weights_a, evals_a), (weights_b, evals_b) = twice_learned(env_id, 5), twice_learned(env_id, 5)
    assert len(evals_a) == 8  # four evaluations per learn() call, the later ones after unseeded resets
    assert evals_a == evals_b
    for a, b in zip(weights_a, weights_b, strict=True):
        np.testing.assert_array_equal(a, b)


def test_another_seed_gives_another_run() -> None:
    (weights_a, evals_a), (weights_b, evals_b) = (
        twice_learned("RoboInvertedPendulum-v0", 5),
        twice_learned("RoboInvertedPendulum-v0", 6),
    )
    assert evals_a != evals_b
    assert not np.array_equal(weights_a[0], weights_b[0])
