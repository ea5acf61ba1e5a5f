"""roboppo-zoo tune on a throwaway PostgreSQL server: a worker killed mid-trial has its trial failed by heartbeat
and retried, with the same parameters, by the next worker; the password in the URL is never shown."""

from __future__ import annotations

import contextlib
import glob
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import optuna
import pytest

from roboppo.cli.tune import STORAGE_ENV
from roboppo.zoo.loader import load_ppo_hparams
from tests.cli.conftest import QUIET, task_pids

psycopg2 = pytest.importorskip("psycopg2", reason="the PostgreSQL driver psycopg2 is not installed (dev extra)")

ENV = "RoboInvertedPendulum-v0"
ADMIN, ROLE, PASSWORD, DATABASE = "admin", "tuner", "s3cret", "tuning"
HEARTBEAT = 1  # seconds; a trial is stale after 3 heartbeats (tune's GRACE_FACTOR)
PARAMS = {"n_envs", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef",
          "learning_rate", "net_arch", "log_std_init"}  # fmt: skip
HBA = f"local all all trust\nhost all {ADMIN} 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"


@dataclass
class Server:
    port: int

    def url(self, user: str = ROLE, password: str = PASSWORD, driver: str = "postgresql+psycopg2") -> str:
        return f"{driver}://{user}:{password}@127.0.0.1:{self.port}/{DATABASE}"

    def admin(self) -> Any:
        connection = psycopg2.connect(host="127.0.0.1", port=self.port, user=ADMIN, dbname="postgres")
        connection.autocommit = True
        return connection


def _bin_dir() -> pathlib.Path:
    """The folder with initdb and pg_ctl: PATH, else Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return pathlib.Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major_version)
    if not candidates:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: not on PATH nor in /usr/lib/postgresql/*/bin")
    return pathlib.Path(candidates[-1]).parent


def _major_version(initdb: str) -> int:
    """15 for /usr/lib/postgresql/15/bin/initdb."""
    name = pathlib.Path(initdb).parent.parent.name
    return int(name) if name.isdigit() else 0


def _as_server_user(folder: str) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as `postgres` (or `nobody`) owning ``folder``."""
    if os.geteuid() != 0:
        return []
    user = next((name for name in ("postgres", "nobody") if _user_exists(name)), None)
    runuser = shutil.which("runuser", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if user is None or runuser is None:
        pytest.skip("running as root without a `postgres`/`nobody` user and runuser to start PostgreSQL")
    record = pwd.getpwnam(user)
    os.chown(folder, record.pw_uid, record.pw_gid)
    return [runuser, "-u", user, "--"]


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_cluster(bin_dir: pathlib.Path, folder: str, run_as: list[str], port: int) -> None:
    """initdb into ``folder``/data (password auth on TCP but for the admin), then start it on ``port``."""
    data = os.path.join(folder, "data")
    initdb = [str(bin_dir / "initdb"), "-D", data, "-U", ADMIN, "--no-sync", "--no-locale", "-E", "UTF8"]
    subprocess.run([*run_as, *initdb], cwd=folder, check=True, capture_output=True, text=True, timeout=120)
    pathlib.Path(data, "pg_hba.conf").write_text(HBA)  # only the admin connects without a password
    options = f"-F -c fsync=off -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p {port}"
    start = [str(bin_dir / "pg_ctl"), "-D", data, "-w", "-t", "60", "-o", options, "-l", f"{folder}/log", "start"]
    subprocess.run([*run_as, *start], cwd=folder, check=True, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """A PostgreSQL cluster on a free localhost port with a password-protected role owning the database."""
    bin_dir = _bin_dir()
    folder = tempfile.mkdtemp(prefix="roboppo-pg-")
    run_as: list[str] = []
    try:
        run_as = _as_server_user(folder)
        server = Server(_free_port())
        _start_cluster(bin_dir, folder, run_as, server.port)
        with contextlib.closing(server.admin()) as connection, connection.cursor() as cursor:
            cursor.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
            cursor.execute(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
        yield server
    except subprocess.CalledProcessError as error:
        pytest.fail(f"could not start PostgreSQL ({error.cmd}): {error.stdout}{error.stderr}")
    finally:
        stop = [*run_as, str(bin_dir / "pg_ctl"), "-D", os.path.join(folder, "data"), "-m", "immediate", "stop"]
        subprocess.run(stop, cwd=folder, capture_output=True, timeout=60, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _worker(log_folder: pathlib.Path, n_trials: int) -> list[str]:
    return [
        sys.executable, "-m", "roboppo.cli", "tune", "--env", ENV, "--n-trials", str(n_trials),
        "--n-timesteps", "512", "--eval-freq", "256", "--eval-episodes", "2", "--heartbeat", str(HEARTBEAT),
        "--torch-threads", "1", "--env-threads", "1", "--log-folder", str(log_folder), "--no-progress-bar",
    ]  # fmt: skip


def _wait_for_running_trial(server: Server, study_name: str, worker: subprocess.Popen[str], count: int = 1) -> int:
    """The number of a trial that has all its parameters and a heartbeat (so it is mid-training), once ``count``
    trials are so."""
    deadline = time.monotonic() + 120
    storage = optuna.storages.RDBStorage(server.url())
    while time.monotonic() < deadline:
        assert worker.poll() is None, worker.communicate()[0]
        try:
            trials = optuna.load_study(study_name=study_name, storage=storage).trials
        except KeyError:  # the worker has not created the study yet
            trials = []
        running = [
            trial.number
            for trial in trials
            if trial.state == optuna.trial.TrialState.RUNNING and set(trial.params) >= PARAMS and _beats(server, trial)
        ]
        if len(running) >= count:
            return running[0]
        time.sleep(0.2)
    raise AssertionError(f"{count} trials did not start within 120 s")


def _beats(server: Server, trial: optuna.trial.FrozenTrial) -> bool:
    connect = contextlib.closing(psycopg2.connect(server.url(driver="postgresql")))
    with connect as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM trial_heartbeats WHERE trial_id = %s", (trial._trial_id,))
        row = cursor.fetchone()
    return row is not None and row[0] == 1


def _retried_from(trial: optuna.trial.FrozenTrial) -> int | None:
    """The trial that ``trial`` re-runs, as Optuna's retry callback recorded it (its pre-4.9 name as fallback)."""
    storages = optuna.storages
    callback = getattr(storages, "RetryHeartbeatStaleTrialCallback", storages.RetryFailedTrialCallback)
    number: int | None = callback.retried_trial_number(trial)
    return number


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_killed_worker_trial_is_failed_and_retried(server: Server, tmp_path: pathlib.Path) -> None:
    study_name = f"ppo-{ENV}"
    first = subprocess.Popen(
        _worker(tmp_path, n_trials=3), env={**os.environ, STORAGE_ENV: server.url()},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    killed_number = _wait_for_running_trial(server, study_name, first)
    first.send_signal(signal.SIGKILL)
    first_output = first.communicate(timeout=30)[0]
    time.sleep(3 * HEARTBEAT + 1.5)  # past the grace period: the next worker to ask for a trial fails it
    second = subprocess.run(
        [*_worker(tmp_path, n_trials=2), "--storage", server.url()], capture_output=True, text=True, timeout=300,
        check=False, env={key: value for key, value in os.environ.items() if key != STORAGE_ENV},
    )  # fmt: skip
    assert second.returncode == 0, second.stdout + second.stderr

    trials = optuna.load_study(study_name=study_name, storage=server.url()).trials
    states = {trial.number: trial.state for trial in trials}
    assert len(trials) == 3 and states[killed_number] == optuna.trial.TrialState.FAIL, states
    assert not any(
        state in (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING) for state in states.values()
    )
    retries = [t for t in trials if _retried_from(t) == killed_number]
    assert len(retries) == 1 and retries[0].params == trials[killed_number].params
    finished = [t for t in trials if t.number != killed_number]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in finished), states
    assert all(0 < t.user_attrs["num_timesteps"] <= 512 for t in finished)

    entry = load_ppo_hparams(ENV, tmp_path / f"tune_{ENV}_best.yml")
    best = optuna.load_study(study_name=study_name, storage=server.url()).best_trial
    assert entry.n_timesteps == load_ppo_hparams(ENV).n_timesteps  # the zoo budget; the trials trained 512
    assert entry.ppo_kwargs["learning_rate"] == best.params["learning_rate"]
    shown = server.url().replace(PASSWORD, "***")
    assert f"study {study_name} ({shown}): 3 trials, best" in second.stdout
    everything = (
        first_output
        + second.stdout
        + second.stderr
        + "".join(path.read_bytes().decode("latin-1") for path in tmp_path.rglob("*") if path.is_file())
    )
    assert PASSWORD not in everything


def test_wrong_password_is_one_masked_error_line(server: Server, tmp_path: pathlib.Path) -> None:
    url = server.url(password="wr0ng-s3cret")
    done = subprocess.run(
        [*_worker(tmp_path, n_trials=1), "--storage", url], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "wr0ng-s3cret" not in done.stdout + done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: cannot use the study database {url.replace('wr0ng-s3cret', '***')}: ")
    )
    assert "password authentication failed" in done.stderr


@pytest.mark.ray
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_ray_workers_share_the_study_and_a_killed_workers_trial_is_retried(
    server: Server, ray_cluster: str, tmp_path: pathlib.Path
) -> None:
    """``tune --ray-address``: two workers as Ray tasks on one PostgreSQL study, killed while a trial runs; Ray
    starts them again, and every trial they were running is failed by heartbeat and re-run with its parameters."""
    study_name = f"ppo-{ENV}-ray"
    driver = subprocess.Popen(
        [*_worker(tmp_path, 2), "--study-name", study_name, "--ray-address", ray_cluster, "--ray-workers", "2",
         "--heartbeat", str(2 * HEARTBEAT)],  # a busy machine delays heartbeats: a live trial must not look stale
        env={**QUIET, STORAGE_ENV: server.url()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    _wait_for_running_trial(server, study_name, driver, count=2)
    (victim, *_) = task_pids("tune_worker")  # both workers are mid-trial: kill one
    os.kill(victim, signal.SIGKILL)
    output = driver.communicate(timeout=600)[0]
    assert driver.returncode == 0, output

    trials = optuna.load_study(study_name=study_name, storage=server.url()).trials
    states = [trial.state for trial in trials]
    failed = [trial for trial in trials if trial.state == optuna.trial.TrialState.FAIL]
    unfinished = (optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)
    assert failed and not any(state in unfinished for state in states), states
    for trial in failed:  # each re-run once, to the end (or pruned by its evaluations), with the parameters it had
        (retry,) = [other for other in trials if _retried_from(other) == trial.number]  # drawn (killed mid-draw: some)
        assert retry.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        assert retry.params.items() >= trial.params.items() and set(retry.params) >= PARAMS
    assert f"study {study_name}" in output and PASSWORD not in output
    assert load_ppo_hparams(ENV, tmp_path / f"tune_{ENV}_best.yml").n_timesteps == load_ppo_hparams(ENV).n_timesteps
