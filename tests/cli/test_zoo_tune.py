"""roboppo-zoo tune: two worker processes share one SQLite study and write a ready ppo.yml entry."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import optuna

from roboppo.common.hparams import load_ppo_hparams

ENV = "RoboInvertedPendulum-v0"


def test_two_workers_share_one_sqlite_study(tmp_path: pathlib.Path) -> None:
    command = [
        sys.executable, "-m", "roboppo.zoo.cli", "tune", "--env", ENV, "--n-trials", "2", "--n-timesteps", "512",
        "--eval-freq", "256", "--eval-episodes", "2", "--log-folder", str(tmp_path), "--no-progress-bar",
    ]  # fmt: skip
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    study = optuna.load_study(study_name=f"ppo-{ENV}", storage=f"sqlite:///{tmp_path / f'tune_{ENV}.db'}")
    assert len(study.trials) == 4
    assert all(trial.state.is_finished() for trial in study.trials)
    entry = load_ppo_hparams(ENV, tmp_path / f"tune_{ENV}_best.yml")
    assert entry.n_timesteps == 512 and entry.n_envs in (1, 4, 8)
    assert entry.ppo_kwargs["learning_rate"] == study.best_trial.params["learning_rate"]
