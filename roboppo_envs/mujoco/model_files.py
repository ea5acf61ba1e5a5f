"""Gymnasium's v5 model files, compiled without the compiler attribute MuJoCo 4 deprecates.

Gymnasium's ``half_cheetah.xml`` sets ``<compiler settotalmass="14"/>``, which MuJoCo 4 compiles
with a deprecation warning. The batched twin compiles the same file without the attribute and
then does what the attribute did, as the warning advises: :func:`set_total_mass` scales the
masses and inertias to the total (``mj_setTotalmass``), recomputes the constants that depend on
them (``mj_setConst``) and the two statistics the compiler derives from them (``stat.meanmass``,
``stat.meaninertia``, which the solver's tolerance reads). The model is then equal, field for
field, to the one compiled with the attribute (``tests/env/test_mujoco_suite.py`` holds it).
"""

from __future__ import annotations

import inspect
import os
import pathlib
import re
import tempfile
from typing import Any

import mujoco
import numpy as np

TOTAL_MASS = re.compile(r'\s+settotalmass="([^"]+)"')


def model_path(env_class: type, env_kwargs: dict[str, Any]) -> pathlib.Path:
    """The model file ``env_class(**env_kwargs)`` loads, resolved as Gymnasium's ``MujocoEnv`` resolves it."""
    path = str(env_kwargs.get("xml_file", inspect.signature(env_class).parameters["xml_file"].default))
    if path.startswith((".", "/")):
        return pathlib.Path(path)
    if path.startswith("~"):
        return pathlib.Path(path).expanduser()
    import gymnasium.envs.mujoco as gymnasium_mujoco

    return pathlib.Path(gymnasium_mujoco.__file__).parent / "assets" / path


def without_total_mass(env_class: type, env_kwargs: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """``env_kwargs`` naming a copy of the model file without ``settotalmass``, and the total it set.

    Unchanged (and None) when the file has no such attribute, or names other files (meshes,
    includes) that a copy elsewhere would not find.
    """
    if "xml_file" not in inspect.signature(env_class).parameters:
        return env_kwargs, None
    path = model_path(env_class, env_kwargs)
    text = path.read_text()
    found = TOTAL_MASS.search(text)
    if found is None or re.search(r'\bfile="', text):
        return env_kwargs, None
    folder = pathlib.Path(tempfile.gettempdir()) / f"roboppo-models-{os.getuid() if hasattr(os, 'getuid') else 0}"
    folder.mkdir(exist_ok=True)
    copy = folder / path.name
    stripped = TOTAL_MASS.sub("", text, count=1)
    if not copy.is_file() or copy.read_text() != stripped:
        partial = copy.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(stripped)
        partial.replace(copy)  # whole or not at all, should two processes write it at once
    return {**env_kwargs, "xml_file": str(copy)}, float(found.group(1))


def set_total_mass(model: mujoco.MjModel, data: mujoco.MjData, total: float) -> None:
    """What ``settotalmass`` does at compile time, on a compiled ``model`` (``data``: a scratch of it)."""
    mujoco.mj_setTotalmass(model, total)
    mujoco.mj_setConst(model, data)
    data.qpos[:] = model.qpos0
    mujoco.mj_forward(model, data)
    inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, inertia)
    model.stat.meaninertia = float(np.trace(inertia) / model.nv)
    model.stat.meanmass = float(model.body_mass[1:].mean())
    mujoco.mj_resetData(model, data)
