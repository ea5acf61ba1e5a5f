"""PPO's compiled update is kept on disk, so the next process loads it instead of compiling it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("jax")

SCRIPT = """
from roboppo import PPO
PPO("MlpPolicy", "RoboInvertedPendulum-v0", n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
    hyperparams="sb3", train_backend="jax", seed=0).learn(64)
"""


def test_a_run_leaves_its_compiled_update_in_the_cache_folder(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "ROBOPPO_JAX_CACHE": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, capture_output=True, timeout=300)
    assert [p.name for p in (tmp_path / "cache").glob("jit_update-*")], "no compiled update was written"
