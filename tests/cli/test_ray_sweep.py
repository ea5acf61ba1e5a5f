"""``roboppo-zoo benchmark --ray-address`` against a real Ray cluster started here (``-m ray``; CI runs it)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from roboppo.common.errors import UserInputError
from tests.cli.conftest import QUIET, task_pids

ENVS = ["RoboInvertedPendulum-v0", "roboppo/InvertedPendulum-v5"]
SWEEP = ["benchmark", "--envs", *ENVS, "--seeds", "2", "--n-timesteps", "2048", "--no-sb3", "--eval-freq", "1024",
         "--eval-episodes", "2", "--final-episodes", "3"]  # fmt: skip


def zoo(*args: str, **kwargs: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "roboppo.cli", *args], env=QUIET, text=True, **kwargs)  # type: ignore[call-overload]


def kill_a_task_mid_run(runs: pathlib.Path, sweep: subprocess.Popen, timeout: float = 600) -> bool:
    """SIGKILL one task's worker once some run has written a checkpoint (so that run is mid-way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and sweep.poll() is None:
        if any(runs.glob("*/seed*/*/checkpoints/*.zip")) and (pids := task_pids("run_task")):
            os.kill(pids[0], signal.SIGKILL)
            return True
        time.sleep(0.05)
    return False


def kept(out: pathlib.Path) -> dict[tuple[str, int], tuple[dict, dict[str, np.ndarray]]]:
    """Every kept row with its periodic evaluations, by (env file name, seed)."""
    table = {}
    for path in out.glob("rows/*/seed*.json"):
        row = json.loads(path.read_text())
        with np.load(path.with_suffix(".npz")) as evaluations:
            table[(path.parent.name, row["seed"])] = (row, {k: evaluations[k] for k in ("timesteps", "results")})
    return table


@pytest.mark.ray
def test_a_sweep_on_a_ray_cluster_survives_a_killed_worker_and_equals_the_local_one(
    ray_cluster: str, tmp_path: pathlib.Path
) -> None:
    sweep = zoo(*SWEEP, "--ray-address", ray_cluster, "--out", str(tmp_path / "ray"),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    killed = kill_a_task_mid_run(tmp_path / "ray" / "runs", sweep)
    output, _ = sweep.communicate(timeout=900)
    assert sweep.returncode == 0, output
    assert killed, "no task was running after a checkpoint to kill"
    assert "Ray at 127.0.0.1" in output and output.count(" roboppo seed ") == 4  # one line per finished run
    local = zoo(*SWEEP, "--jobs", "2", "--out", str(tmp_path / "local"), stdout=subprocess.DEVNULL)
    assert local.wait(timeout=900) == 0
    on_ray, here = kept(tmp_path / "ray"), kept(tmp_path / "local")
    assert sorted(on_ray) == sorted(here) and len(here) == 4
    for key, (row, evaluations) in here.items():
        ray_row, ray_evaluations = on_ray[key]
        assert {k: ray_row[k] for k in ("steps", "final_return", "early_ends")} == {
            k: row[k] for k in ("steps", "final_return", "early_ends")
        }, key
        for name in ("timesteps", "results"):  # every evaluation once, with the same returns
            np.testing.assert_array_equal(ray_evaluations[name], evaluations[name], err_msg=f"{key} {name}")
    assert (tmp_path / "ray" / "benchmark.md").read_text().count("| roboppo |") == 4 + 2


def test_without_ray_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from roboppo.cli.ray_sweep import connect

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(UserInputError, match=r"pip install 'roboppo\[ray\]'"):
        connect("local")
