"""roboppo-zoo tune: two worker processes share one SQLite study and write a ready ppo.yml entry; trial budgets,
flag checks, and storage URLs whose password is never shown."""

from __future__ import annotations

import itertools
import os
import pathlib
import socket
import subprocess
import sys

import optuna
import pytest

from roboppo.cli import build_parser, main
from roboppo.cli.tune import STORAGE_ENV, _fail_dead_trials, _open_study, fit_budget, scrub, storage_url
from roboppo.zoo.loader import load_ppo_hparams

ENV = "RoboInvertedPendulum-v0"
SECRET = "s3cret"


def _files_text(folder: pathlib.Path) -> str:
    return "".join(path.read_bytes().decode("latin-1") for path in folder.rglob("*") if path.is_file())


def test_two_workers_share_one_sqlite_study(tmp_path: pathlib.Path) -> None:
    command = [
        sys.executable, "-m", "roboppo.cli", "tune", "--env", ENV, "--n-trials", "2", "--n-timesteps", "512",
        "--eval-freq", "256", "--eval-episodes", "2", "--log-folder", str(tmp_path), "--no-progress-bar",
        "--torch-threads", "1", "--env-threads", "1",
    ]  # fmt: skip
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    study = optuna.load_study(study_name=f"ppo-{ENV}", storage=f"sqlite:///{tmp_path / f'tune_{ENV}.db'}")
    assert len(study.trials) == 4
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    assert all(trial.state in finished for trial in study.trials), [trial.state for trial in study.trials]
    trained = [trial.user_attrs["num_timesteps"] for trial in study.trials]
    assert all(0 < steps <= 512 for steps in trained), trained
    best_file = tmp_path / f"tune_{ENV}_best.yml"
    entry, zoo = load_ppo_hparams(ENV, best_file), load_ppo_hparams(ENV)
    assert entry.n_timesteps == zoo.n_timesteps and "after 512 env steps per trial" in best_file.read_text()
    assert entry.n_envs in (1, 4, 8) and set(zoo.values) <= set(entry.values)  # reward_scale, schedules, ... kept
    assert entry.values["policy_kwargs"]["net_arch"] in ([64, 64], [128, 128], [256, 256])
    assert entry.ppo_kwargs["learning_rate"] == study.best_trial.params["learning_rate"]
    assert entry.ppo_kwargs["n_steps"] * entry.n_envs <= 512


@pytest.mark.parametrize("budget", [64, 300, 512, 1000, 50_000])
def test_trials_train_whole_rollouts_within_the_budget(budget: int) -> None:
    for n_envs, n_steps, batch in itertools.product([1, 4, 8], [64, 128, 256, 512, 1024], [64, 128, 256, 512]):
        settings = {"n_envs": n_envs, "n_steps": n_steps, "batch_size": min(batch, n_steps * n_envs)}
        fitted, steps = fit_budget(settings, budget)
        rollout = fitted["n_steps"] * fitted["n_envs"]
        assert rollout <= steps <= budget and steps % rollout == 0
        assert fitted["batch_size"] <= rollout and fitted["n_envs"] == n_envs
        if n_steps * n_envs <= budget:  # settings that fit are left alone
            assert fitted == settings
    assert fit_budget({"n_envs": 8, "n_steps": 1024, "batch_size": 512}, 300) == (
        {"n_envs": 8, "n_steps": 37, "batch_size": 296},
        296,
    )
    assert fit_budget({"n_envs": 4, "n_steps": 64, "batch_size": 64}, 1000)[1] == 768  # 3 rollouts of 256


@pytest.mark.parametrize("flag", ["--n-trials", "--n-timesteps", "--eval-freq", "--eval-episodes", "--heartbeat"])
def test_numeric_flags_must_be_positive(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["tune", "--env", ENV, flag, "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and ("at least 1" in err or ">= 1" in err), err  # flag_type("threads")'s words


def test_bad_budget_and_env_threads_end_before_anything_is_written(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tune", "--env", ENV, "--n-timesteps", "10", "--log-folder", str(tmp_path)]) == 2
    assert "--n-timesteps 10 is too short for a trial; give at least 64" in capsys.readouterr().err
    assert main(["tune", "--env", "Pendulum-v1", "--env-threads", "2", "--log-folder", str(tmp_path)]) == 2
    assert "--env-threads applies to roboppo's MuJoCo ids, not to Pendulum-v1" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_storage_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    parse = build_parser("tune").parse_args
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert storage_url(parse(["tune", "--env", ENV, "--log-folder", str(tmp_path)])) == (
        f"sqlite:///{tmp_path / f'tune_{ENV}.db'}"
    )
    monkeypatch.setenv(STORAGE_ENV, "postgresql://tuner:pw@db/tuning")
    assert storage_url(parse(["tune", "--env", ENV])) == "postgresql://tuner:pw@db/tuning"
    assert storage_url(parse(["tune", "--env", ENV, "--storage", "sqlite:///x.db"])) == "sqlite:///x.db"


def test_scrub_hides_plain_and_percent_encoded_passwords() -> None:
    url = "postgresql+psycopg2://tuner:p%40ss%2Fw0rd@db:5432/tuning"
    text = scrub(f"failed: {url} (password p@ss/w0rd, encoded p%40ss%2Fw0rd)", url)
    assert text == "failed: postgresql+psycopg2://tuner:***@db:5432/tuning (password ***, encoded ***)"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_password_never_shown_when_the_database_is_unreachable(tmp_path: pathlib.Path) -> None:
    url = f"postgresql+psycopg2://tuner:{SECRET}@127.0.0.1:{_closed_port()}/tuning"
    command = [sys.executable, "-m", "roboppo.cli", "tune", "--env", ENV, "--log-folder", str(tmp_path)]
    done = subprocess.run(
        command, env={**os.environ, STORAGE_ENV: url}, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stderr
    assert SECRET not in done.stdout + done.stderr + _files_text(tmp_path)
    error_lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1, done.stderr
    assert error_lines[0].startswith(f"error: cannot use the study database {url.replace(SECRET, '***')}: ")
    assert "Connection refused" in error_lines[0]


def test_unparsable_url_is_not_echoed(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--env", ENV, "--storage", f"tuner {SECRET} db", "--log-folder", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert SECRET not in err and "is not a database URL" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
@pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")  # trials made by ask(), as a worker would
def test_a_trial_left_running_by_a_dead_worker_is_failed_and_queued_again(tmp_path: pathlib.Path) -> None:
    """The Ray driver's last step: a trial still running once every worker has returned stops beating; after
    the grace period it is failed and its parameters are queued again, where no later worker would ask."""
    study = _open_study("dead-worker", f"sqlite:///{tmp_path / 'study.db'}", heartbeat=1)
    done = study.ask()
    done.suggest_float("learning_rate", 1e-4, 1e-3, log=True)
    study.tell(done, 1.0)
    dead = study.ask()
    learning_rate = dead.suggest_float("learning_rate", 1e-4, 1e-3, log=True)
    study._storage.record_heartbeat(dead._trial_id)  # its worker beat once, then died

    assert _fail_dead_trials(study, heartbeat=1) == 1
    states = {trial.number: trial.state for trial in study.trials}
    assert states == {0: optuna.trial.TrialState.COMPLETE, 1: optuna.trial.TrialState.FAIL,
                      2: optuna.trial.TrialState.WAITING}  # fmt: skip
    assert study.trials[2].params == {"learning_rate": learning_rate}
    assert study.trials[2].system_attrs["failed_trial"] == dead.number
