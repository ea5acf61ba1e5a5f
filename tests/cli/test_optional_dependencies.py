"""The command line and ``import roboppo`` without the optional packages (imitation, JAX, Brax); a light ``--help``."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

# Run in a fresh interpreter where importing the named packages fails, as on a machine without them.
WITHOUT = "import sys\nfor name in {names}:\n    sys.modules[name] = None\n"


def run(code: str, *missing: str) -> subprocess.CompletedProcess[str]:
    script = WITHOUT.format(names=list(missing)) + code
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


def test_help_loads_no_sub_command_and_neither_torch_nor_sb3() -> None:
    done = run(
        "from roboppo.cli import build_parser\n"
        "build_parser().format_help()\n"
        "heavy = [m for m in ('torch', 'stable_baselines3', 'jax', 'imitation') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", ["gail", "bc"])
def test_imitation_commands_name_the_install_when_imitation_is_missing(command: str) -> None:
    argv = [command, "--env", "RoboInvertedPendulum-v0", "--demos", "demos.npz"]
    done = run(f"from roboppo.cli import main\nsys.exit(main({argv!r}))\n", "imitation")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: roboppo-zoo {command} needs the imitation package")
    assert "pip install --no-deps imitation==1.0.1" in done.stderr and "Traceback" not in done.stderr


def test_ppo_trains_without_jax_brax_or_imitation() -> None:
    done = run(
        "from roboppo import PPO\n"
        "model = PPO('MlpPolicy', 'RoboInvertedPendulum-v0', n_steps=32, batch_size=32, n_epochs=1, seed=0)\n"
        "model.learn(64)\n"
        "assert model.num_timesteps >= 64, model.num_timesteps\n"
        "assert sys.modules.get('jax') is None and sys.modules.get('imitation') is None\n"
        "print(model.policy.__class__.__name__)\n",
        "jax", "brax", "imitation",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("TanhGaussianPolicy")


def test_importing_the_brax_envs_prints_nothing() -> None:
    pytest.importorskip("brax")
    done = run("import roboppo_envs.brax.vector_env\n")
    assert done.returncode == 0, done.stderr
    assert "Failed to import" not in done.stdout + done.stderr


def test_no_third_party_notice_at_start_with_the_legacy_gym_installed(tmp_path: pathlib.Path) -> None:
    """The legacy `gym` (which the bench extra brings) prints its `gym_notices` notice when Stable-Baselines3
    imports it, as gym 0.26 does; roboppo stays quiet."""
    for package in ("gym", "gym_notices"):
        (tmp_path / package).mkdir()
    (tmp_path / "gym_notices" / "__init__.py").write_text("")
    (tmp_path / "gym_notices" / "notices.py").write_text(
        "notices = {'0.26.2': 'Gym has been unmaintained since 2022 and does not support NumPy 2.0.',\n"
        "           '0.1.0': 'another notice, kept'}\n"
    )
    (tmp_path / "gym" / "__init__.py").write_text(
        "import sys\n"
        "import gym_notices.notices as notices\n"
        "notice = notices.notices.get('0.26.2')\n"
        "if notice:\n"
        "    print(notice, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = (
        "import roboppo, stable_baselines3.common.vec_env.patch_gym as p, gym_notices.notices as n\n"
        "assert p.gym_installed and roboppo.PPO and list(n.notices) == ['0.1.0'], n.notices\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "unmaintained" not in done.stderr
    loud = subprocess.run([sys.executable, "-c", "import stable_baselines3"], env=env, capture_output=True, text=True)
    assert "Gym has been unmaintained" in loud.stderr  # what it would print without roboppo
