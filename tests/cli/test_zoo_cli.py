"""roboppo-zoo collect-demos and gail, run in-process into temporary folders."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from roboppo import PPO
from roboppo.gail import load_demonstrations
from roboppo.gail.trainer import GAILTrainer
from roboppo.zoo.cli import main

ENV = "RoboInvertedPendulum-v0"


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("model") / "policy.zip"
    PPO("MlpPolicy", ENV, n_steps=64, batch_size=64, seed=0).learn(128).save(path)
    return path


def test_collect_demos_writes_episodes_and_reports_the_return(
    policy_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "demos.npz"
    code = main(["collect-demos", "--model", str(policy_file), "--env", ENV, "--episodes", "3", "--out", str(out)])
    assert code == 0
    demos = load_demonstrations(out, ENV)
    assert len(demos.trajectories) == 3 and demos.source == "roboppo"
    printed = capsys.readouterr().out
    assert f"return {demos.episode_returns.mean():.1f}" in printed and str(out) in printed


def test_gail_writes_a_run_folder(
    policy_file: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    demos = tmp_path / "demos.npz"
    main(["collect-demos", "--model", str(policy_file), "--env", ENV, "--episodes", "4", "--out", str(demos)])
    runs = tmp_path / "runs"
    argv = ["gail", "--env", ENV, "--demos", str(demos), "--n-timesteps", "1024", "--log-folder", str(runs)]
    assert main([*argv, "--eval-episodes", "2", "--no-progress-bar"]) == 0
    (run_dir,) = runs.iterdir()
    names = {p.name for p in run_dir.iterdir()}
    assert {"generator.zip", "reward_net.pt", "config.yml", "progress.csv"} <= names
    assert any(name.startswith("events.out.tfevents") for name in names)
    header = (run_dir / "progress.csv").read_text().splitlines()[0]
    assert "disc/disc_loss" in header and "gen/rollout/ep_rew_mean" in header
    generator, reward_net = GAILTrainer.load(run_dir)
    assert generator.num_timesteps >= 1024
    assert np.isfinite(reward_net.predict(np.zeros((1, 4)), np.zeros((1, 1)), np.zeros((1, 4)), np.zeros(1))).all()
    out = capsys.readouterr().out
    assert "final evaluation:" in out and "fraction reached" in out
