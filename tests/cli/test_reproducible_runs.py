"""Same seed, same run folder contents; resuming is exact, extendable and interruptible."""

from __future__ import annotations

import csv
import json
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch as th
import yaml

from roboppo import PPO
from roboppo.cli import main
from roboppo.cli.baselines import RL_ZOO3_PPO, train_stock_sb3
from roboppo.common.env_util import make_env_from_id
from tests.conftest import train_until_interrupted

ENV = "RoboInvertedPendulum-v0"
TINY = ["--n-timesteps", "1024", "--eval-freq", "256", "--save-freq", "512", "--eval-episodes", "2", "--n-envs", "2"]
TINY += ["-p", "n_steps=64", "-p", "batch_size=64", "-p", "policy_kwargs.net_arch=[16]", "--no-progress-bar"]
TRAINING_COLUMNS = ("train/loss", "train/approx_kl", "train/value_loss", "train/std", "rollout/ep_rew_mean")


def train(folder: pathlib.Path, env_id: str = ENV, *extra: str) -> pathlib.Path:
    assert main(["train", "--env", env_id, "--seed", "4", "--log-folder", str(folder), *TINY, *extra]) == 0
    (run_dir,) = folder.iterdir()
    return run_dir


def weights(path: pathlib.Path) -> list[np.ndarray]:
    model = PPO.load(path)
    return [value.numpy() for value in model.policy.state_dict().values()]


def training_columns(path: pathlib.Path) -> dict[str, list[str]]:
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    return {key: [row[key] for row in rows] for key in TRAINING_COLUMNS if key in rows[0]}


def assert_same_model(a: pathlib.Path, b: pathlib.Path) -> None:
    for x, y in zip(weights(a), weights(b), strict=True):
        np.testing.assert_array_equal(x, y)


def assert_same_evaluations(a: pathlib.Path, b: pathlib.Path) -> None:
    with np.load(a / "evaluations.npz") as first, np.load(b / "evaluations.npz") as second:
        for key in ("timesteps", "results", "ep_lengths"):
            np.testing.assert_array_equal(first[key], second[key])


@pytest.mark.parametrize("env_id", [ENV, "RoboBraxInvertedPendulum-v0"])
def test_two_runs_with_one_seed_write_the_same_results(tmp_path: pathlib.Path, env_id: str) -> None:
    if "Brax" in env_id:
        pytest.importorskip("jax")
    first, second = train(tmp_path / "a", env_id), train(tmp_path / "b", env_id)
    assert_same_model(first / "model.zip", second / "model.zip")
    assert_same_model(first / "best_model.zip", second / "best_model.zip")
    assert_same_evaluations(first, second)
    with np.load(first / "evaluations.npz") as history:
        assert len(history["timesteps"]) == 4 and len(set(history["results"].mean(axis=1))) > 1
    columns = training_columns(first / "progress.csv")
    assert len(columns) == len(TRAINING_COLUMNS) and columns == training_columns(second / "progress.csv")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return train(tmp_path_factory.mktemp("finished"))


def interrupted_copy(run: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """The run as if it had been killed after its evaluation at 768 steps, its last checkpoint at 512."""
    copy = pathlib.Path(shutil.copytree(run, folder / run.name))
    for name in ("model.zip", "model.state.npz"):
        (copy / name).unlink()
    assert sorted(path.name for path in (copy / "checkpoints").iterdir()) == [
        "ppo_512_steps.state.npz",
        "ppo_512_steps.zip",
    ]
    with np.load(copy / "evaluations.npz") as history:
        keep = history["timesteps"] <= 768
        np.savez(copy / "evaluations.npz", **{key: history[key][keep] for key in history.files})
    return copy


def test_a_resumed_run_ends_as_the_uninterrupted_run(finished: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """From its last checkpoint (later evaluations dropped and made again), with the same results to the bit."""
    first, second = interrupted_copy(finished, tmp_path / "a"), interrupted_copy(finished, tmp_path / "b")
    for run in (first, second):
        assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
        with np.load(run / "evaluations.npz") as history:
            assert list(history["timesteps"]) == [256, 512, 768, 1024]  # 768 made again once, not twice
        assert_same_model(run / "model.zip", finished / "model.zip")
        assert_same_model(run / "best_model.zip", finished / "best_model.zip")
        assert_same_evaluations(run, finished)
    for key, values in training_columns(first / "progress-from-512.csv").items():
        if key.startswith("train/"):  # the updates after step 512 are the uninterrupted run's last ones
            logged = [value for value in values if value]
            whole = [value for value in training_columns(finished / "progress.csv")[key] if value]
            assert len(logged) >= 3 and logged == whole[-len(logged) :]


def test_a_resumed_run_with_normalized_rewards_ends_as_the_uninterrupted_run(tmp_path: pathlib.Path) -> None:
    """The return statistics and each copy's running return, mid-episode at the checkpoint, resume too
    (with advantages recomputed each epoch, from the observations after each rollout)."""
    finished_run = train(tmp_path / "whole", ENV, "-p", "normalize_reward=true", "-p", "recompute_advantage=true")
    hyperparams = yaml.safe_load((finished_run / "config.yml").read_text())["hyperparams"]
    assert hyperparams["normalize_reward"] is True and hyperparams["recompute_advantage"] is True
    run = interrupted_copy(finished_run, tmp_path / "resumed")
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    assert_same_model(run / "model.zip", finished_run / "model.zip")
    assert_same_evaluations(run, finished_run)
    model, other = PPO.load(run / "model.zip"), PPO.load(finished_run / "model.zip")
    assert model.return_rms.var == other.return_rms.var and model.return_rms.count == 1024 + 1e-4
    np.testing.assert_array_equal(model._discounted_returns, other._discounted_returns)


def test_a_run_resumed_from_its_finished_model_continues_as_one_longer_run(tmp_path: pathlib.Path) -> None:
    longer = train(tmp_path / "long", ENV, "--n-timesteps", "1536")
    shorter = train(tmp_path / "short")  # 1024 steps: its model.zip ends at a rollout boundary, with its state
    assert (shorter / "model.state.npz").is_file()
    assert main(["train", "--resume", str(shorter), "--n-timesteps", "1536", "--no-progress-bar"]) == 0
    assert_same_model(shorter / "model.zip", longer / "model.zip")
    assert_same_evaluations(shorter, longer)


def test_without_a_training_state_a_resume_starts_new_episodes(finished: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The documented continuation: load the checkpoint with an env seeded seed + 1, learn on."""
    run = interrupted_copy(finished, tmp_path)
    (run / "checkpoints" / "ppo_512_steps.state.npz").unlink()
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    model = PPO.load(finished / "checkpoints" / "ppo_512_steps.zip", env=make_env_from_id(ENV, n_envs=2, seed=5))
    model.learn(512, reset_num_timesteps=False)
    resumed = PPO.load(run / "model.zip")
    for x, y in zip(model.policy.state_dict().values(), resumed.policy.state_dict().values(), strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    pairs = zip(weights(run / "model.zip"), weights(finished / "model.zip"), strict=True)
    assert not all(np.array_equal(x, y) for x, y in pairs)  # new episodes: another run than the uninterrupted one


def test_a_finished_run_is_not_retrained_unless_the_budget_grows(
    finished: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    run = pathlib.Path(shutil.copytree(finished, tmp_path / finished.name))
    before = (run / "model.zip").read_bytes()
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    assert "is complete: 1,024 of 1,024 env steps trained" in capsys.readouterr().out
    assert (run / "model.zip").read_bytes() == before
    assert main(["train", "--resume", str(run), "--n-timesteps", "1536", "--no-progress-bar"]) == 0
    assert PPO.load(run / "model.zip").num_timesteps == 1536
    assert yaml.safe_load((run / "config.yml").read_text())["n_timesteps"] == 1536
    with np.load(run / "evaluations.npz") as history:
        assert list(history["timesteps"]) == [256, 512, 768, 1024, 1280, 1536]
    assert (run / "command.txt").read_text().count("\n") == 2  # the first command and the resume that trained


def test_a_damaged_history_is_one_error_line(
    finished: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    run = interrupted_copy(finished, tmp_path)
    (run / "evaluations.npz").write_bytes(b"PK\x03\x04 cut short")
    for argv in (["train", "--resume", str(run)], ["plot", str(run), "--out", str(tmp_path / "c.png")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {run / 'evaluations.npz'} is damaged") and err.count("\n") == 1
        assert "Delete it to continue without the evaluation history" in err
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_train_saves_the_model_and_resumes(tmp_path: pathlib.Path, signum: int) -> None:
    flags = ["--env", ENV, "--n-timesteps", "1000000", "--eval-freq", "off", "--save-freq", "off", "--no-progress-bar"]
    output = train_until_interrupted(tmp_path, *flags, signum=signum)
    (run,) = tmp_path.iterdir()
    assert f"Continue with: roboppo-zoo train --resume {run}" in output
    steps = PPO.load(run / "model.zip").num_timesteps
    assert 0 < steps < 1_000_000
    assert main(["train", "--resume", str(run), "--n-timesteps", str(steps + 512), "--no-progress-bar"]) == 0
    assert PPO.load(run / "model.zip").num_timesteps >= steps + 512


STOCK_ROW = pathlib.Path("sb3") / ENV / "seed0.json"
BENCHMARK = ["-m", "roboppo.cli", "benchmark", "--envs", ENV, "--seeds", "1", "--jobs", "1"]
BENCHMARK += ["--n-timesteps", "4096", "--eval-freq", "2048", "--eval-episodes", "2", "--final-episodes", "3"]


def test_a_killed_stock_sb3_run_continues_from_its_checkpoint(tmp_path: pathlib.Path) -> None:
    """Killed (SIGKILL) after its first checkpoint, the same command continues it to the uninterrupted run's row."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run([sys.executable, *BENCHMARK, "--out", str(whole)], check=True, capture_output=True)
    worker = subprocess.Popen([sys.executable, *BENCHMARK, "--out", str(killed)], stdout=subprocess.DEVNULL)
    checkpoint = killed / "runs" / "sb3" / ENV / "seed0.pkl"
    deadline = time.monotonic() + 300
    while not checkpoint.is_file():
        assert worker.poll() is None and time.monotonic() < deadline, "the stock run ended before its first checkpoint"
        time.sleep(0.05)
    worker.kill()
    worker.wait()
    assert not (killed / STOCK_ROW).exists()
    again = subprocess.run(
        [sys.executable, *BENCHMARK, "--out", str(killed)], check=True, capture_output=True, text=True
    )
    assert re.search(rf"{re.escape(str(checkpoint))}: continuing from [123],[0-9]{{3}} steps", again.stdout)
    first, second = (json.loads((folder / STOCK_ROW).read_text()) for folder in (whole, killed))
    assert second["steps"] == first["steps"] == 4096
    assert second["final_return"] == first["final_return"]
    assert not checkpoint.exists()  # a finished run's checkpoint is removed, its row kept


def test_a_stock_checkpoint_continues_only_its_own_run(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    settings = RL_ZOO3_PPO["RoboHopper-v0"] | {"n_steps": 64, "batch_size": 32, "policy_kwargs": {"net_arch": [16]}}
    checkpoint = tmp_path / "seed3.pkl"
    whole, _, _ = train_stock_sb3("RoboHopper-v0", 3, 512, settings, checkpoint=checkpoint, save_every=256)
    resumed, _, _ = train_stock_sb3("RoboHopper-v0", 3, 512, settings, checkpoint=checkpoint, save_every=256)
    assert f"{checkpoint}: continuing from 256 steps" in capsys.readouterr().out
    other, _, _ = train_stock_sb3("RoboHopper-v0", 4, 512, settings, checkpoint=checkpoint, save_every=256)
    assert "is of another run" in capsys.readouterr().out
    vectors = [th.nn.utils.parameters_to_vector(model.policy.parameters()) for model in (whole, resumed, other)]
    assert th.equal(vectors[0], vectors[1]) and not th.equal(vectors[0], vectors[2])
    checkpoint.write_bytes(b"\x80\x05 cut short")
    train_stock_sb3("RoboHopper-v0", 3, 512, settings, checkpoint=checkpoint, save_every=256)
    assert f"{checkpoint} cannot be read" in capsys.readouterr().out


def test_a_resumed_run_with_overlapped_updates_ends_as_the_uninterrupted_run(
    finished: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Its checkpoints hold the update that was running beside the rollout, so resuming is exact too."""
    overlapped = train(tmp_path / "whole", ENV, "-p", "overlap_update=true")
    assert yaml.safe_load((overlapped / "config.yml").read_text())["hyperparams"]["overlap_update"] is True
    assert not np.array_equal(weights(overlapped / "model.zip")[0], weights(finished / "model.zip")[0])
    run = interrupted_copy(overlapped, tmp_path / "copy")
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    assert_same_model(run / "model.zip", overlapped / "model.zip")
    assert_same_model(run / "best_model.zip", overlapped / "best_model.zip")
    assert_same_evaluations(run, overlapped)


def test_a_resumed_robot_run_with_the_kit_ends_as_the_uninterrupted_run(tmp_path: pathlib.Path) -> None:
    """Go1 with randomization, kicks, latency and history: the drawn physics, kick schedules, delayed actions and
    frame histories are part of the saved state."""
    kit = ["--env-kwargs", "randomize:true", "pushes:true", "action_latency:1", "history:2", "max_episode_steps:60"]
    finished = train(tmp_path / "whole", "roboppo/Go1JoystickFlatTerrain-v1", *kit)
    with (finished / "progress.csv").open() as handle:
        logged = [float(row["randomization/floor_friction_mean"] or "nan") for row in csv.DictReader(handle)]
    logged = [value for value in logged if value == value]  # rows of evaluations alone leave it empty
    assert logged and all(0.4 <= value <= 1.0 for value in logged)  # what was drawn, logged at every update
    run = interrupted_copy(finished, tmp_path / "resumed")
    assert main(["train", "--resume", str(run), "--no-progress-bar"]) == 0
    assert_same_model(run / "model.zip", finished / "model.zip")
    assert_same_evaluations(run, finished)
