"""Demonstration loading: the three formats, and every way a file can be wrong."""

from __future__ import annotations

import pathlib
import pickle
import tracemalloc

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
    obs, acs = rng.normal(size=(4, 20, 11)), rng.uniform(-1, 1, (4, 20, 3))
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
        tmp_path / "flat.npz", obs=rng.normal(size=(24, 11)), acs=rng.uniform(-1, 1, (24, 3)), rews=np.ones(24), **extra
    )
    demos = load_demonstrations(tmp_path / "flat.npz", ENV)
    assert [len(t.acts) for t in demos.trajectories] == [n - 1 for n in lengths]


def test_imitation_pickle(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    with (tmp_path / "trajs.pkl").open("wb") as handle:
        pickle.dump(episodes(rng, [4, 6]), handle)
    with pytest.raises(DemoError, match=r"trajs\.pkl is a pickle.*roboppo's \.npz.*--allow-pickle"):
        load_demonstrations(tmp_path / "trajs.pkl", ENV)
    demos = load_demonstrations(tmp_path / "trajs.pkl", ENV, allow_pickle=True)
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


def test_episode_starts_without_a_first_mark_still_split_at_every_mark(tmp_path: pathlib.Path) -> None:
    starts = np.isin(np.arange(7), [2, 5])  # row 0 is not marked: it starts the first episode anyway
    np.savez(tmp_path / "flat.npz", obs=np.ones((7, 11)), acs=np.zeros((7, 3)), episode_starts=starts)
    demos = load_demonstrations(tmp_path / "flat.npz", ENV)
    assert [len(t.obs) for t in demos.trajectories] == [2, 3, 2]


def padded(rng: np.random.Generator, lengths: list[int], steps: int = 30) -> dict[str, np.ndarray]:
    """A baselines 3-D file whose episodes end early and are zero-padded to ``steps`` rows."""
    obs, acs, rews = (
        np.zeros((len(lengths), steps, 11)),
        np.zeros((len(lengths), steps, 3)),
        np.zeros((len(lengths), steps)),
    )
    for i, n in enumerate(lengths):
        obs[i, :n], acs[i, :n], rews[i, :n] = rng.normal(size=(n, 11)), rng.uniform(-1, 1, (n, 3)), 1.0
    return {"obs": obs, "acs": acs, "rews": rews, "ep_rets": np.array(lengths, float)}


@pytest.mark.parametrize("with_ep_lens", [True, False])
def test_padded_3d_episodes_are_cut_to_their_length(
    tmp_path: pathlib.Path, rng: np.random.Generator, with_ep_lens: bool
) -> None:
    arrays = padded(rng, [30, 12, 25])
    if with_ep_lens:
        arrays["ep_lens"] = np.array([30, 12, 25])
    np.savez(tmp_path / "padded.npz", **arrays)
    demos = load_demonstrations(tmp_path / "padded.npz", ENV)
    assert [len(t.acts) for t in demos.trajectories] == [29, 11, 24]
    assert not any(np.all(t.obs == 0, axis=1).any() for t in demos.trajectories)  # no padding row kept
    np.testing.assert_array_equal(demos.trajectories[1].obs, arrays["obs"][1, :12])


@pytest.mark.parametrize(
    ("ep_lens", "message"),
    [
        ([30, 20, 25], "episode 1 ends with all-zero obs and acs at step 19 of the 20 that ep_lens gives it"),
        ([30, 10, 25], r"episode 1's rews sum to 10\.000 over its 10 kept steps, but ep_rets says 12\.000"),
    ],
)
def test_lengths_that_the_padding_or_ep_rets_contradict_are_refused(
    tmp_path: pathlib.Path, rng: np.random.Generator, ep_lens: list[int], message: str
) -> None:
    arrays = padded(rng, [30, 12, 25])
    np.savez(tmp_path / "padded.npz", **arrays, ep_lens=np.array(ep_lens))
    with pytest.raises(DemoError, match=message):
        load_demonstrations(tmp_path / "padded.npz", ENV)


def test_time_limit_ends_are_truncated_and_early_ends_terminated(
    tmp_path: pathlib.Path, rng: np.random.Generator
) -> None:
    arrays = padded(rng, [1000, 400], steps=1000)  # RoboHopper-v0's time limit is 1000 steps
    np.savez(tmp_path / "padded.npz", **arrays)
    demos = load_demonstrations(tmp_path / "padded.npz", ENV)
    assert [t.terminal for t in demos.trajectories] == [False, True]


def test_out_of_bounds_actions_are_refused_or_clipped(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    arrays = padded(rng, [30, 30])
    arrays["acs"][1, 7, 2] = 12.5
    np.savez(tmp_path / "wide.npz", **arrays)
    with pytest.raises(
        DemoError, match=r"acs in episode 1, step 7, dimension 2 is 12\.5, outside the env's action bounds \[-1, 1\]"
    ):
        load_demonstrations(tmp_path / "wide.npz", ENV)
    clipped = load_demonstrations(tmp_path / "wide.npz", ENV, clip_actions=True)
    assert clipped.trajectories[1].acts[7, 2] == 1.0
    assert np.abs(np.concatenate([t.acts for t in clipped.trajectories])).max() <= 1.0


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"ep_lens": np.array([5, 0, 5])}, "episode 1 has 0 step"),
        ({"ep_lens": np.array([5, 1, 4])}, "episode 1 has 1 step"),
    ],
)
def test_episodes_without_a_transition_are_refused(tmp_path: pathlib.Path, arrays: dict, message: str) -> None:
    np.savez(tmp_path / "short.npz", obs=np.ones((10, 11)), acs=np.zeros((10, 3)), **arrays)
    with pytest.raises(DemoError, match=message):
        load_demonstrations(tmp_path / "short.npz", ENV)


def test_zero_length_episodes_in_roboppo_and_imitation_files_are_demo_errors(
    tmp_path: pathlib.Path, rng: np.random.Generator
) -> None:
    save_demonstrations(tmp_path / "demos.npz", episodes(rng, [3, 4]), ENV)
    with np.load(tmp_path / "demos.npz") as data:
        arrays = dict(data)
    arrays["episode_lengths"] = np.array([7, 0])
    np.savez(tmp_path / "zero.npz", **arrays)
    with pytest.raises(DemoError, match="episode_lengths 1 has 0 step"):
        load_demonstrations(tmp_path / "zero.npz", ENV)
    (tmp_path / "bad.pkl").write_bytes(pickle.dumps(["not a trajectory"]))
    with pytest.raises(DemoError, match=r"bad\.pkl: not readable as imitation trajectories"):
        load_demonstrations(tmp_path / "bad.pkl", ENV, allow_pickle=True)


def test_n_demos_keeps_the_first_episodes(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    arrays = padded(rng, [30, 12, 25, 18])
    np.savez(tmp_path / "padded.npz", **arrays)
    demos = load_demonstrations(tmp_path / "padded.npz", ENV, n_demos=2)
    assert [len(t.acts) for t in demos.trajectories] == [29, 11]
    np.testing.assert_array_equal(demos.trajectories[1].obs, arrays["obs"][1, :12])
    with pytest.raises(DemoError, match="n_demos=5, but the file holds 4 episodes"):
        load_demonstrations(tmp_path / "padded.npz", ENV, n_demos=5)


def test_a_large_baselines_file_is_held_once(tmp_path: pathlib.Path, rng: np.random.Generator) -> None:
    """The arrays are read once; episodes are views into them, not copies."""
    episodes_, steps = 150, 1000  # a tenth of the published Hopper expert file
    obs = rng.normal(size=(episodes_, steps, 11)).astype(np.float32)
    acs = rng.uniform(-1, 1, (episodes_, steps, 3)).astype(np.float32)
    np.savez(tmp_path / "big.npz", obs=obs, acs=acs, rews=np.ones((episodes_, steps), np.float32))
    size = obs.nbytes + acs.nbytes + episodes_ * steps * 4
    del obs, acs
    tracemalloc.start()
    demos = load_demonstrations(tmp_path / "big.npz", ENV)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert demos.n_transitions == episodes_ * (steps - 1)
    assert peak < 1.25 * size, f"peak {peak / 2**20:.0f} MiB for {size / 2**20:.0f} MiB of arrays"
