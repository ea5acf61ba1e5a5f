"""Shared fixtures: tiny PPO budgets (SB3's test habit) and a seeded numpy generator."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; read when mujoco is imported

from typing import Any

import numpy as np
import pytest
import torch as th

ROBO_IDS = ["RoboInvertedPendulum-v0", "RoboInvertedDoublePendulum-v0", "RoboHopper-v0"]


@pytest.fixture(autouse=True)
def _one_torch_thread() -> None:
    th.set_num_threads(1)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def tiny() -> dict[str, Any]:
    """PPO keyword arguments for runs that take a second."""
    return {"n_steps": 64, "batch_size": 32, "n_epochs": 2, "policy_kwargs": {"net_arch": [16]}}


@pytest.fixture(scope="session", autouse=True)
def _jax_compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Brax envs built alike compile alike: reuse XLA compilations across the session's env instances, its
    pytest-xdist workers and the ``roboppo-zoo`` processes the CLI tests start (``ROBOPPO_JAX_CACHE``), never in
    the user's own cache. With a size cap JAX reads and writes the folder under a file lock, so processes share it."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' temporary folders share one parent, this run's
        folder = tmp_path_factory.getbasetemp().parent / "jax-cache"
        folder.mkdir(exist_ok=True)
    else:
        folder = tmp_path_factory.mktemp("jax-cache")
    os.environ["ROBOPPO_JAX_CACHE"] = str(folder)
    try:
        import jax
    except ImportError:
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_compilation_cache_max_size", 2**31)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def train_until_interrupted(folder: pathlib.Path, *flags: str, signum: int = signal.SIGINT) -> str:
    """Run ``roboppo-zoo train`` into ``folder`` in a subprocess, send ``signum`` once a first rollout is logged,
    and return its output (it must exit with 130, as an interrupted train does)."""
    command = [sys.executable, "-m", "roboppo.cli", "train", "--log-folder", str(folder), *flags]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not any(path.stat().st_size for path in folder.glob("*/progress.csv")):  # a first rollout was logged
        assert worker.poll() is None and time.monotonic() < deadline, worker.communicate()[0]
        time.sleep(0.2)
    worker.send_signal(signum)
    output = worker.communicate(timeout=60)[0]
    assert worker.returncode == 130, output
    return output
