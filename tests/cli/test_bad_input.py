"""Bad input to roboppo-zoo, as one table: input, exit code 2, the one ``error:`` line, nothing written."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import numpy as np
import pytest
from imitation.data.types import TrajectoryWithRew

from roboppo.cli import main
from roboppo.gail import save_demonstrations

ENV = "RoboInvertedPendulum-v0"
TRAIN = ["train", "--env", ENV]

CASES: list[tuple[list[str], str]] = [
    # env ids, run folders, files
    (["train", "--env", "Nope-v0"], "unknown environment id 'Nope-v0'"),
    (["train"], "train needs --env ID, or --resume RUN_DIR"),
    (["train", "--resume", "."], "is not a roboppo run folder"),
    (["eval", "--run", "."], "is not a roboppo run folder"),
    (["gail", "--env", "Nope-v0", "--demos", "x.npz"], "unknown environment id 'Nope-v0'"),
    (["gail", "--env", ENV, "--demos", "missing.npz"], "missing.npz: demonstration file not found"),
    (["bc", "--env", "Nope-v0", "--demos", "x.npz"], "unknown environment id 'Nope-v0'"),
    (["bc", "--env", ENV, "--demos", "missing.npz"], "missing.npz: demonstration file not found"),
    (["bc", "--env", ENV, "--demos", "d.npz", "--n-demos", "0"], "argument --n-demos: 0 is out of range"),
    (["gail", "--env", ENV, "--demos", "d.npz", "--bc-batches", "0"], "argument --bc-batches: 0 is out of range"),
    (["collect-demos", "--model", "nothing.zip", "--env", ENV, "--out", "d.npz"], "model file not found"),
    (["fly"], "invalid choice: 'fly'"),
    # -p overrides: syntax, names, types
    ([*TRAIN, "-p", "n_steps"], "-p 'n_steps' is not key=value"),
    ([*TRAIN, "-p", "n_stepz=64"], "unknown key 'n_stepz'; did you mean 'n_steps'?"),
    ([*TRAIN, "-p", "clip_rnage=0.2"], "did you mean 'clip_range'?"),
    ([*TRAIN, "-p", "n_steps=many"], "key 'n_steps' must be int"),
    ([*TRAIN, "-p", "policy_kwargs.net_arc=[8]"], "unknown key 'net_arc'; did you mean 'net_arch'?"),
    ([*TRAIN, "-p", "use_sde=maybe"], "key 'use_sde' must be bool"),
    # numbers out of range, from -p
    ([*TRAIN, "-p", "n_envs=0"], "n_envs = 0 is out of range; it must be an integer >= 1"),
    ([*TRAIN, "-p", "n_steps=0"], "n_steps = 0 is out of range; it must be an integer >= 1"),
    ([*TRAIN, "-p", "batch_size=0"], "batch_size = 0 is out of range; it must be an integer >= 2"),
    ([*TRAIN, "-p", "n_steps=1", "-p", "n_envs=1"], "n_steps * n_envs = 1 * 1 = 1 is out of range"),
    ([*TRAIN, "-p", "n_steps=1", "--n-envs", "1"], "--n-envs 1: n_steps * n_envs = 1 * 1 = 1 is out of range"),
    ([*TRAIN, "-p", "gamma=5"], "gamma = 5 is out of range; it must be a number in (0, 1]"),
    ([*TRAIN, "-p", "gamma=0"], "gamma = 0 is out of range"),
    ([*TRAIN, "-p", "gae_lambda=1.5"], "gae_lambda = 1.5 is out of range; it must be a number in [0, 1]"),
    ([*TRAIN, "-p", "learning_rate=0"], "learning_rate = 0 is out of range; it must be a number > 0"),
    ([*TRAIN, "-p", "learning_rate={type: linear, initial: -1e-4}"], "learning_rate initial:: learning_rate = -0.0001"),
    ([*TRAIN, "-p", "clip_range=-0.2"], "clip_range = -0.2 is out of range; it must be a number > 0"),
    ([*TRAIN, "-p", "n_epochs=0"], "n_epochs = 0 is out of range"),
    ([*TRAIN, "-p", "ent_coef=-1"], "ent_coef = -1 is out of range; it must be a number >= 0"),
    ([*TRAIN, "-p", "n_timesteps=0"], "n_timesteps = 0 is out of range"),
    # numbers out of range, from flags
    ([*TRAIN, "--n-timesteps", "0"], "argument -n/--n-timesteps: 0 is out of range; it must be an integer >= 1"),
    ([*TRAIN, "--n-timesteps", "-5"], "argument -n/--n-timesteps: -5 is out of range"),
    ([*TRAIN, "--n-timesteps", "1e6"], "argument -n/--n-timesteps: expected an integer >= 1, got '1e6'"),
    ([*TRAIN, "--n-envs", "0"], "argument --n-envs: 0 is out of range; it must be an integer >= 1"),
    ([*TRAIN, "--save-freq", "0"], 'argument --save-freq: 0 is out of range; it must be an integer >= 1 (or "off")'),
    ([*TRAIN, "--eval-freq", "0"], "argument --eval-freq: 0 is out of range"),
    ([*TRAIN, "--eval-freq", "never"], "argument --eval-freq: expected an integer >= 1 or \"off\", got 'never'"),
    ([*TRAIN, "--eval-episodes", "0"], "argument --eval-episodes: 0 is out of range"),
    ([*TRAIN, "--env-threads", "0"], "argument --env-threads: 0 is out of range"),
    ([*TRAIN, "--torch-threads", "-1"], "argument --torch-threads: -1 is out of range"),
    (["train", "--env", "RoboAnt-v0", "--env-threads", "2"], "--env-threads applies to roboppo's MuJoCo ids"),
    (["eval", "--run", ".", "--episodes", "0"], "argument -n/--episodes: 0 is out of range"),
    (["record", "--run", ".", "--out", "v.mp4", "--fps", "0"], "argument --fps: 0 is out of range"),
    (["benchmark", "--seeds", "0"], "argument --seeds: 0 is out of range"),
    (["collect-demos", "--model", "m.zip", "--env", ENV, "--out", "d.npz", "--episodes", "0"], "--episodes: 0 is"),
    (["gail", "--env", ENV, "--demos", "d.npz", "--n-timesteps", "0"], "argument --n-timesteps: 0 is out of range"),
    (["tune", "--env", ENV, "--n-trials", "0"], "argument --n-trials: 0 is out of range"),
    # --resume takes its settings from the run
    (["train", "--resume", "somewhere", "--seed", "3"], "--seed cannot change a run being resumed"),
    (["train", "--resume", "somewhere", "-p", "gamma=0.9", "--n-envs", "2"], "--n-envs, -p cannot change a run"),
    # log folders
    ([*TRAIN, "--log-folder", "a-file"], "--log-folder a-file is a file; pass a folder"),
    ([*TRAIN, "--log-folder", "a-file/runs"], "--log-folder a-file/runs cannot be created: a-file is a file"),
]


def run(argv: Sequence[str]) -> int:
    """``main``'s exit code, whether it returned it or argparse exited."""
    try:
        return main(list(argv))
    except SystemExit as exit_info:
        return int(exit_info.code or 0)


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(argv) for argv, _ in CASES])
def test_bad_input_exits_2_with_one_error_line_and_writes_nothing(
    argv: list[str],
    message: str,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    assert run(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert message in captured.err
    assert captured.out == ""
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_a_read_only_log_folder_is_refused_before_anything_is_built(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root every permission check passes, so the read-only file system is what ``os.access`` reports."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: False if pathlib.Path(path) == folder else real_access(path, mode)
    )
    assert run([*TRAIN, "--log-folder", str(folder / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"--log-folder {folder / 'runs'} is not writable (its parent {folder} is not writable)" in err
    assert list(folder.iterdir()) == []


def demos_file(folder: pathlib.Path, recorded_on: str) -> pathlib.Path:
    """Two short pendulum-shaped episodes (4-D observations, 1-D actions) labelled as recorded on ``recorded_on``."""
    rng = np.random.default_rng(0)
    obs, acts = rng.normal(size=(2, 11, 4)).astype(np.float32), rng.uniform(-1, 1, (2, 10, 1)).astype(np.float32)
    episodes = [TrajectoryWithRew(obs[i], acts[i], None, True, np.ones(10, np.float32)) for i in range(2)]
    path = folder / "demos.npz"
    save_demonstrations(path, episodes, recorded_on)
    return path


def test_more_demonstrations_than_the_file_holds_are_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    path = demos_file(tmp_path, ENV)
    argv = ["bc", "--env", ENV, "--demos", str(path), "--n-demos", "3", "--log-folder", str(tmp_path / "runs")]
    assert run(argv) == 2
    assert "n_demos=3, but the file holds 2 episodes" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_demonstrations_of_another_env_are_refused_unless_allowed(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = demos_file(tmp_path, "InvertedPendulum-v5")  # Gymnasium's pendulum: the same dimensions
    argv = ["gail", "--env", ENV, "--demos", str(path), "--log-folder", str(tmp_path / "runs")]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert "recorded on InvertedPendulum-v5, not RoboInvertedPendulum-v0" in err and "--allow-env-mismatch" in err
    assert not (tmp_path / "runs").exists()

    from roboppo.gail import load_demonstrations

    allowed = load_demonstrations(path, ENV, allow_env_mismatch=True)
    assert allowed.env_id == "InvertedPendulum-v5" and len(allowed.trajectories) == 2
    assert load_demonstrations(demos_file(tmp_path, ENV), ENV).env_id == ENV
