"""Benchmark statistics: rliable's interval estimates and the time a run took to reach its target."""

from __future__ import annotations

import pathlib

import numpy as np

import roboppo_envs  # noqa: F401  registers the suite ids
from roboppo.cli.stats import Interval, early_ends, iqm_intervals, performance_profile, score, time_to_target


def test_iqm_is_the_mean_of_the_middle_half_with_an_interval_around_it() -> None:
    scores = {"a": np.arange(1.0, 9.0), "b": np.array([1.0, 1.0, 1.0, 1.0, 100.0, 100.0, 100.0, 1000.0])}
    intervals = iqm_intervals(scores)
    assert intervals["a"].value == 4.5  # mean of 3, 4, 5, 6
    assert intervals["b"].value == 50.5  # the one outlier seed (1000) does not move it
    for interval in intervals.values():
        assert interval.low <= interval.value <= interval.high
    assert intervals["a"].high < 8.0 and intervals == iqm_intervals(scores)  # repeatable


def test_a_systems_interval_does_not_depend_on_the_other_systems_in_the_table() -> None:
    stock = np.array([5050.0, 6231.0, 6524.0, 5702.0, 5512.0, 5192.0, 6529.0, 5496.0, 5662.0, 6162.0])
    mine = np.array([5446.0, 5541.0, 6236.0, 6371.0, 5182.0, 6046.0, 6141.0, 5874.0, 5513.0, 5524.0])
    alone = iqm_intervals({"sb3": stock})["sb3"]
    assert iqm_intervals({"roboppo": mine, "sb3": stock})["sb3"] == alone  # the suite page and the table agree
    assert iqm_intervals({"roboppo": mine, "sb3": stock})["roboppo"] == iqm_intervals({"roboppo": mine})["roboppo"]


def test_small_returns_keep_two_decimals_in_tables() -> None:
    assert str(Interval(-3.874, -4.012, -3.7)) == "-3.87 [-4.01, -3.70]"  # Reacher: -4 [-4, -4] would hide it
    assert str(Interval(5736.4, 5324.2, 6084.9)) == "5,736 [5,324, 6,085]"
    assert (score(-3.874, 1), score(412.36, 1), score(-250.4)) == ("-3.87", "412.4", "-250")
    assert (score(85.16, like=825.0), score(0.171, like=-3.72)) == ("85", "0.17")  # a spread as its mean


def test_time_to_target_reads_the_first_evaluation_that_reached_it(tmp_path: pathlib.Path) -> None:
    np.savez(
        tmp_path / "evaluations.npz", timesteps=np.array([100, 200, 300]),
        results=np.array([[10.0, 20.0], [40.0, 60.0], [90.0, 90.0]]), ep_lengths=np.ones((3, 2)),
    )  # fmt: skip
    rows = ["time/total_timesteps,time/time_elapsed"] + [f"{s},{s // 10}" for s in (64, 128, 192, 256, 320)]
    rows.insert(4, "200,")  # SB3 writes a row of evaluation scalars only, without the time columns
    (tmp_path / "progress.csv").write_text("\n".join(rows) + "\n")
    assert time_to_target(tmp_path, 50.0) == (200, 25.0)  # mean 50 at step 200; the rollout ending at 256
    assert time_to_target(tmp_path, 95.0) is None


def test_performance_profile_is_a_png(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "profile.png"
    performance_profile({"roboppo": np.array([900.0, 1000.0, 950.0]), "sb3": np.array([300.0, 700.0])}, "env", out)
    assert out.read_bytes()[:4] == b"\x89PNG" and [p.name for p in tmp_path.iterdir()] == ["profile.png"]


def test_early_ends_counts_episodes_shorter_than_the_time_limit() -> None:
    assert early_ends([1000, 12, 999, 1000], "roboppo/Hopper-v5") == 2  # Hopper-v5 truncates at 1,000 steps
    assert early_ends(np.array([50, 49]), "roboppo/Reacher-v5") == 1  # Reacher-v5 at 50
