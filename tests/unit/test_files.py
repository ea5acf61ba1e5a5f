"""Atomic writes: unique temporary names, the old file kept on failure, evaluations.npz included."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from roboppo.common.callbacks import EvalCallback, EvaluationHistoryError, read_evaluations
from roboppo.common.files import atomic_target, remove_partials, temporary_name, write_atomic


def test_every_writer_gets_its_own_hidden_temporary_name(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "evaluations.npz"
    names = {temporary_name(target) for _ in range(50)}
    assert len(names) == 50
    assert all(name.parent == tmp_path and name.name.startswith(".") and name.suffix == ".npz" for name in names)


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "config.yml"
    write_atomic(target, "old: 1\n")
    with pytest.raises(RuntimeError), atomic_target(target) as partial:
        partial.write_text("new: half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old: 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.yml"]


def test_two_open_writers_do_not_collide(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "table.md"
    with atomic_target(target) as first, atomic_target(target) as second:
        first.write_text("first")
        second.write_text("second")
    assert target.read_text() == "first"  # the outer writer finished last and replaced the inner one's file
    assert [p.name for p in tmp_path.iterdir()] == ["table.md"]


def test_leftovers_of_killed_writers_are_removed(tmp_path: pathlib.Path) -> None:
    (tmp_path / "model.zip").write_text("a model")
    leftover = temporary_name(tmp_path / "evaluations.npz")
    leftover.write_text("half")
    assert remove_partials(tmp_path) == [leftover]
    assert [p.name for p in tmp_path.iterdir()] == ["model.zip"]


def test_evaluations_npz_is_written_atomically(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash inside SB3's np.savez leaves the previous history readable."""
    from roboppo import PPO
    from roboppo.common.env_util import make_env_from_id

    model = PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=1, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    evaluation = EvalCallback(make_env_from_id("RoboInvertedPendulum-v0", seed=1), n_eval_episodes=1, eval_freq=16,
                              log_path=str(tmp_path), verbose=0)  # fmt: skip
    model.learn(32, callback=evaluation)
    before = read_evaluations(tmp_path / "evaluations.npz")
    assert list(before["timesteps"]) == [16, 32]

    def crash(file: object, **arrays: object) -> None:
        pathlib.Path(str(file)).write_bytes(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        model.learn(32, callback=evaluation, reset_num_timesteps=False)
    assert list(read_evaluations(tmp_path / "evaluations.npz")["timesteps"]) == [16, 32]
    assert [p.name for p in tmp_path.iterdir()] == ["evaluations.npz"]


def test_a_damaged_history_names_the_file_and_the_way_out(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "evaluations.npz"
    path.write_bytes(b"PK\x03\x04 half a zip")
    with pytest.raises(EvaluationHistoryError, match=r"evaluations.npz is damaged \(BadZipFile.*Delete it to continue"):
        read_evaluations(path)
