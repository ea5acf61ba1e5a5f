"""Demonstration loading: the three formats, and every way a file can be wrong."""

from __future__ import annotations

import pathlib
import pickle

import numpy as np
import pytest
from imitation.data.types import TrajectoryWithRew

from roboppo.gail import DemoError, load_demonstrations, save_demonstrations

ENV = "RoboHopper-v0"  # 11 observation values, 3 actions


def episodes(rng: np.random.Generator, lengths: list[int]) -> list[TrajectoryWithRew]:
    return [
        TrajectoryWithRew(
            rng.normal(size=(n + 1, 11)).astype(np.float32),
            rng.uniform(-1, 1, (n, 3)).astype(np.float32),
            None,
            i % 2 == 0,
            np.full(n, 2.0, np.float32),
        )
        for i, n in enumerate(lengths)
    ]


def test_roboppo_format_round_trip(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    original = episodes(rng, [5, 9, 3])
    save_demonstrations(tmp_path / "demos.npz", original, ENV)
    assert [p.name for p in tmp_path.iterdir()] == ["demos.npz"]
    demos = load_demonstrations(tmp_path / "demos.npz", ENV)
    assert demos.source == "roboppo" and demos.n_transitions == 17
    for a, b in zip(demos.trajectories, original, strict=True):
        np.testing.assert_array_equal(a.obs, b.obs)
        np.testing.assert_array_equal(a.acts, b.acts)
        assert a.terminal == b.terminal
    np.testing.assert_allclose(demos.episode_returns, [10.0, 18.0, 6.0])


def test_openai_baselines_3d_file(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    obs, acs = rng.normal(size=(4, 20, 11)), rng.normal(size=(4, 20, 3))
    np.savez(
        tmp_path / "deterministic.trpo.Hopper.0.00.npz",
        obs=obs,
        acs=acs,
        rews=np.ones((4, 20)),
        ep_rets=np.full(4, 20.0),
    )
    demos = load_demonstrations(tmp_path / "deterministic.trpo.Hopper.0.00.npz", ENV)
    assert demos.source == "openai-baselines"
    assert len(demos.trajectories) == 4 and demos.n_transitions == 4 * 19  # last step lacks its next observation
    np.testing.assert_array_equal(demos.trajectories[2].obs, obs[2])
    np.testing.assert_array_equal(demos.trajectories[2].acts, acs[2, :-1])


@pytest.mark.parametrize("boundaries", ["episode_starts", "ep_lens"])
def test_openai_baselines_flattened_file(tmp_path: pathlib.Path, rng: np.random.Generator, boundaries: str) -> None:
    lengths = [7, 12, 5]
    extra = (
        {"episode_starts": np.isin(np.arange(24), [0, 7, 19])} if boundaries == "episode_starts"
        else {"ep_lens": np.array(lengths)}
    )  # fmt: skip
    np.savez(
        tmp_path / "flat.npz", obs=rng.normal(size=(24, 11)), acs=rng.normal(size=(24, 3)), rews=np.ones(24), **extra
    )
    demos = load_demonstrations(tmp_path / "flat.npz", ENV)
    assert [len(t.acts) for t in demos.trajectories] == [n - 1 for n in lengths]


def test_imitation_pickle(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    with (tmp_path / "trajs.pkl").open("wb") as handle:
        pickle.dump(episodes(rng, [4, 6]), handle)
    demos = load_demonstrations(tmp_path / "trajs.pkl", ENV)
    assert demos.source == "imitation" and demos.n_transitions == 10


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({}, "holds no arrays"),
        ({"obs": np.zeros((3, 5, 11))}, r"missing array\(s\) acs"),
        ({"obs": np.zeros((3, 5, 11)), "acs": np.zeros((2, 5, 3))}, "obs has 3, acs has 2"),
        ({"obs": np.zeros((2, 5, 12)), "acs": np.zeros((2, 5, 3))}, r"array obs has 12 values per step .* expects 11"),
        ({"obs": np.zeros((2, 5, 11)), "acs": np.zeros((2, 5, 2))}, r"array acs has 2 values per step .* expects 3"),
        ({"obs": np.full((2, 5, 11), np.nan), "acs": np.zeros((2, 5, 3))}, "array obs contains NaN"),
        ({"obs": np.zeros((10, 11)), "acs": np.zeros((10, 3))}, "need an 'episode_starts' or 'ep_lens'"),
        ({"obs": np.zeros((0, 5, 11)), "acs": np.zeros((0, 5, 3))}, "empty demonstrations"),
    ],
)
def test_bad_files_name_the_file_and_the_array(tmp_path: pathlib.Path, arrays: dict, message: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(DemoError, match=message) as error:
        load_demonstrations(path, ENV)
    assert str(path) in str(error.value)


def test_missing_and_unreadable_files(tmp_path: pathlib.Path) -> None:
    with pytest.raises(DemoError, match="demonstration file not found"):
        load_demonstrations(tmp_path / "none.npz", ENV)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DemoError, match=r"junk\.npz: not a readable \.npz"):
        load_demonstrations(tmp_path / "junk.npz", ENV)
