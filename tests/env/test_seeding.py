"""Gymnasium's seeding contract on roboppo's batched envs: unseeded resets continue the seeded stream."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import roboppo_envs  # noqa: F401  (registers the ids)

BATCHED = ["RoboInvertedPendulum-v0", "RoboHopper-v0", "RoboBraxInvertedPendulum-v0"]


def reset_sequence(env_id: str, first_seed: int | None, later_resets: int = 3) -> list[np.ndarray]:
    """The observations of a seeded (or not) reset followed by ``later_resets`` unseeded ones."""
    if env_id.startswith("RoboBrax"):
        pytest.importorskip("jax")
    env = gym.make_vec(env_id, num_envs=3)
    try:
        observations = [env.reset(seed=first_seed)[0]]
        observations += [env.reset()[0] for _ in range(later_resets)]
    finally:
        env.close()
    return observations


@pytest.mark.parametrize("env_id", BATCHED)
def test_unseeded_resets_after_a_seeded_one_repeat_across_envs(env_id: str) -> None:
    first, second = reset_sequence(env_id, 7), reset_sequence(env_id, 7)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[1], first[2])  # the stream moves on: each reset draws new initial states


@pytest.mark.parametrize("env_id", BATCHED)
def test_other_seeds_and_no_seed_draw_other_states(env_id: str) -> None:
    seeded = reset_sequence(env_id, 7, later_resets=1)
    assert not np.array_equal(seeded[1], reset_sequence(env_id, 8, later_resets=1)[1])
    unseeded = reset_sequence(env_id, None, later_resets=1), reset_sequence(env_id, None, later_resets=1)
    assert not np.array_equal(unseeded[0][1], unseeded[1][1])


def test_mujoco_list_seed_reseeds_only_the_named_copies() -> None:
    env = gym.make_vec("RoboHopper-v0", num_envs=2)
    env.reset(seed=3)
    after = env.reset(seed=[None, 11])[0]
    reference = gym.make_vec("RoboHopper-v0", num_envs=2)
    reference.reset(seed=3)
    continued = reference.reset()[0]
    np.testing.assert_array_equal(after[0], continued[0])  # copy 0 continued its stream
    single = gym.make("RoboHopper-v0")
    np.testing.assert_allclose(after[1], single.reset(seed=11)[0], rtol=1e-6)  # copy 1 as a single env seeded 11
