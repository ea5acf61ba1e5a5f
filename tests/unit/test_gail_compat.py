"""The imitation-on-new-stack fixes of roboppo.gail.compat, and the absorbing-state wrapper."""

from __future__ import annotations

import pathlib
import pickle

import gymnasium as gym
import numpy as np
import pytest
from imitation.data import rollout
from imitation.data.types import Trajectory, TrajectoryWithRew

from roboppo.gail.compat import FloatReward, load_imitation_trajectories
from roboppo.gail.horizon import generator_terminations
from roboppo.gail.trainer import make_gail_venv


def test_gymnasium_pendulum_rewards_are_ints_that_imitation_rejects() -> None:
    """The incompatibility itself: if this starts failing, the fix may no longer be needed."""
    env = gym.make("InvertedPendulum-v5")
    env.reset(seed=0)
    reward = env.step(env.action_space.sample())[1]
    assert isinstance(reward, int)
    with pytest.raises(ValueError, match="not a float"):
        TrajectoryWithRew(np.zeros((2, 4)), np.zeros((1, 1)), None, True, np.array([reward]))
    wrapped = FloatReward(gym.make("InvertedPendulum-v5"))
    wrapped.reset(seed=0)
    assert isinstance(wrapped.step(wrapped.action_space.sample())[1], float)


def test_gail_envs_yield_trajectories_imitation_accepts(rng: np.random.Generator) -> None:
    venv = make_gail_venv("InvertedPendulum-v5", n_envs=2, seed=0)
    trajectories = rollout.generate_trajectories(None, venv, rollout.make_sample_until(min_episodes=3), rng=rng)
    assert len(trajectories) >= 3
    assert all(t.rews.dtype.kind == "f" for t in trajectories)
    terminated = generator_terminations(rollout.flatten_trajectories(trajectories))
    assert terminated.sum() == len(trajectories)  # random play falls: every episode ends in the absorbing state


def test_imitation_pickle_and_legacy_npz_load_without_datasets(tmp_path: pathlib.Path) -> None:
    trajectories = [
        TrajectoryWithRew(np.arange(8.0).reshape(4, 2), np.ones((3, 1)), None, True, np.ones(3, np.float32)),
        TrajectoryWithRew(np.arange(6.0).reshape(3, 2), np.zeros((2, 1)), None, False, np.zeros(2, np.float32)),
    ]
    with (tmp_path / "trajs.pkl").open("wb") as handle:
        pickle.dump(trajectories, handle)
    np.savez(
        tmp_path / "trajs.npz",
        obs=np.concatenate([t.obs for t in trajectories]), acts=np.concatenate([t.acts for t in trajectories]),
        infos=np.array([None] * 5, dtype=object), terminal=np.array([True, False]), indices=np.array([3]),
        rews=np.concatenate([t.rews for t in trajectories]),
    )  # fmt: skip
    for name in ("trajs.pkl", "trajs.npz"):
        loaded = load_imitation_trajectories(tmp_path / name, allow_pickle=True)
        assert [len(t.acts) for t in loaded] == [3, 2]
        np.testing.assert_array_equal(loaded[1].obs, trajectories[1].obs)
        assert isinstance(loaded[0], Trajectory) and loaded[0].terminal


def test_imitation_legacy_npz_loads_without_pickle_leaving_its_infos_out(tmp_path: pathlib.Path) -> None:
    """imitation's legacy ``.npz`` keeps infos as an object array (pickled); the numeric arrays load without it."""
    infos = np.array([{"x_position": float(i)} for i in range(5)], dtype=object)
    np.savez(
        tmp_path / "trajs.npz", obs=np.arange(14.0).reshape(7, 2), acts=np.ones((5, 1)), infos=infos,
        terminal=np.array([True, False]), indices=np.array([3]), rews=np.ones(5, np.float32),
    )  # fmt: skip
    safe = load_imitation_trajectories(tmp_path / "trajs.npz")
    assert [len(t.acts) for t in safe] == [3, 2] and all(t.infos is None for t in safe)
    trusted = load_imitation_trajectories(tmp_path / "trajs.npz", allow_pickle=True)
    assert trusted[1].infos is not None and trusted[1].infos[0] == {"x_position": 3.0}
    with pytest.raises(ValueError, match=r"trajs\.pkl is a pickle: reading it runs pickle.*allow_pickle=True"):
        load_imitation_trajectories(tmp_path / "trajs.pkl")
