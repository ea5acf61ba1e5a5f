"""The layout the code promises: a framework-free env layer and no import circle inside roboppo/ppo."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_env_layer_runs_without_importing_torch() -> None:
    script = (
        "import sys, gymnasium as gym, numpy as np, roboppo_envs\n"
        "envs = gym.make_vec('RoboHopper-v0', num_envs=2)\n"
        "envs.reset(seed=0)\n"
        "envs.step(np.zeros((2, 3), np.float32))\n"
        "assert 'torch' not in sys.modules, 'roboppo_envs imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)
    sources = "".join(path.read_text() for path in (ROOT / "roboppo_envs").rglob("*.py"))
    assert "import torch" not in sources


def ppo_imports() -> dict[str, set[str]]:
    """Module name -> the ``roboppo.ppo`` modules it imports (anywhere in the file, lazy imports included)."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "roboppo" / "ppo").glob("*.py"):
        name = f"roboppo.ppo.{path.stem}" if path.stem != "__init__" else "roboppo.ppo"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("roboppo.ppo"):
                # ``from roboppo.ppo import jax_train`` imports the submodule; the package is its parent
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
                if node.module != "roboppo.ppo":
                    targets.add(node.module)
        graph[name] = targets
    return {name: {t for t in targets if t in graph and t != name} for name, targets in graph.items()}


def test_no_import_circle_inside_roboppo_ppo() -> None:
    graph = ppo_imports()
    assert graph["roboppo.ppo.ppo"] >= {"roboppo.ppo.torch_train", "roboppo.ppo.jax_train", "roboppo.ppo.rollout"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(t == goal or (t not in seen and reaches(t, goal, seen | {t})) for t in graph[start])

    circles = [name for name in graph if reaches(name, name, {name})]
    assert circles == [], f"import circle through {circles}"


def test_the_hparams_ship_inside_the_package_and_stay_at_zoo_hparams() -> None:
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-data"]["roboppo.zoo.hparams"] == ["*.yml"]
    assert (ROOT / "zoo_hparams").resolve() == ROOT / "roboppo" / "zoo" / "hparams"
    assert {p.name for p in (ROOT / "zoo_hparams").glob("*.yml")} == {"ppo.yml", "gail.yml"}


def test_the_shared_layer_imports_nothing_from_the_algorithms() -> None:
    """roboppo/common (envs adapters, hyperparameters, validation) sits below PPO, GAIL and the zoo: no arrow
    runs back up, lazy imports included, so the house has no import circle through it."""
    above = ("roboppo.ppo", "roboppo.gail", "roboppo.zoo", "roboppo.export")
    for path in (ROOT / "roboppo" / "common").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            upward = [name for name in names if name.startswith(above) and not name.startswith("roboppo.zoo.hparams")]
            assert not upward, f"{path.name} imports {upward}"


def test_the_command_line_is_the_top_floor() -> None:
    """Nothing in the package but the quickstart (a command too) imports roboppo.cli, lazy imports included."""
    for path in (ROOT / "roboppo").rglob("*.py"):
        if path.is_relative_to(ROOT / "roboppo" / "cli") or path.name == "quickstart.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            assert not [name for name in names if name.startswith("roboppo.cli")], path
