"""A real Ray cluster for the ``-m ray`` tests: a head node with two worker CPUs, stopped afterwards."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

QUIET = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.fixture
def ray_cluster() -> Iterator[str]:
    """``ray start --head --num-cpus 2`` on a free port; yields its address, and ``ray stop`` after the test."""
    pytest.importorskip("ray")
    if not pathlib.Path("/proc").is_dir():
        pytest.skip("the Ray tests find worker processes through /proc")
    ray_cli = str(pathlib.Path(sys.executable).with_name("ray"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    start = ["--head", "--num-cpus", "2", "--port", str(port), "--include-dashboard=false", "--temp-dir", temp]
    subprocess.run([ray_cli, "start", *start, "--disable-usage-stats"], env=QUIET, check=True, capture_output=True)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=QUIET, capture_output=True, check=False)


def task_pids(function: str) -> list[int]:
    """Processes running a Ray task of ``function`` (Ray names a busy worker ``ray::<function>``)."""
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(f"ray::{function}".encode()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids
