"""The wheel: what it ships, and roboppo and its command line working from it rather than from the checkout."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the build writes build/ and roboppo.egg-info/ in the checkout: one pytest-xdist worker builds, once
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """Build the wheel and install it (without dependencies: they are this venv's) into a target folder."""
    folder = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(folder)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    (wheel,) = folder.glob("roboppo-*.whl")
    target = folder / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)]
    subprocess.run(install, capture_output=True, text=True, timeout=600, check=True)
    return wheel, target


def run_from(target: pathlib.Path, code: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(target), "ROBOPPO_MAX_TIMESTEPS": "1"}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_wheel_ships_the_hyperparameters_inside_the_package(installed: tuple[pathlib.Path, pathlib.Path]) -> None:
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {"roboppo/zoo/hparams/ppo.yml", "roboppo/zoo/hparams/gail.yml"} <= set(names)
    assert {name.split("/")[0] for name in names} == {"roboppo", "roboppo_envs", "roboppo-0.1.0.dist-info"}


def test_the_installed_package_trains_and_its_cli_answers(
    installed: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, target = installed
    code = (
        "import roboppo, roboppo.zoo.hparams, sys\n"
        f"assert roboppo.__file__.startswith({str(target)!r}), roboppo.__file__\n"
        "from roboppo import PPO\n"
        "model = PPO('MlpPolicy', 'RoboInvertedPendulum-v0', seed=0)\n"
        "print(model.hyperparams_source)\n"
        "from roboppo.cli import main\n"
        "sys.exit(main(['envs']))\n"
    )
    done = run_from(target, code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "zoo_hparams/ppo.yml [RoboInvertedPendulum-v0]" in done.stdout and "RoboHopper-v0" in done.stdout
