"""A model's zip file: found, checked and read before SB3's ``load`` takes it, written whole or not at all.

:func:`checked_model_path` turns a missing or broken file into a clear error; :func:`retired_objects`
lets a file saved by an earlier version name classes this version no longer has;
:func:`saved_observation_space` reads one field without deserializing the rest; :data:`LEGACY_FIELDS`
maps fields that earlier versions saved under other names to their owners now.
"""

from __future__ import annotations

import io
import json
import pathlib
import zipfile
from typing import Any

from stable_baselines3.common.save_util import json_to_data

from roboppo.common.errors import ModelLoadError

#: classes that models saved by earlier roboppo versions name, and what replaces them on load
RETIRED = {"rollout_buffer_class": ("roboppo.ppo.device_rollout", None)}
#: fields of models saved by earlier versions -> the attribute of ``PPO.pairing`` that holds them now
LEGACY_FIELDS = {
    "_trained_statistics": "trained",
    "_next_statistics": "following",
    "_pending": "pending",
    "_sampling_weights": "sampling_weights",
}


def checked_model_path(path: str | pathlib.Path) -> pathlib.Path:
    """``path`` (or ``path + ".zip"``), checked to be an intact model zip.

    :raises FileNotFoundError: neither exists.
    :raises ModelLoadError: the file is not a complete zip with SB3's ``data`` and ``policy.pth``.
    """
    candidate = pathlib.Path(path)
    with_suffix = candidate.with_name(candidate.name + ".zip")
    found = candidate if candidate.is_file() else with_suffix if with_suffix.is_file() else None
    if found is None:
        raise FileNotFoundError(f"model file not found: {candidate} (also tried {with_suffix}).")
    problem = _zip_problem(found)
    if problem is not None:
        raise ModelLoadError(
            f"cannot load a model from {found}: {problem}. "
            "The file is not a complete model zip written by model.save(); re-save or re-train it."
        )
    return found


def _zip_problem(path: pathlib.Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            missing = {"data", "policy.pth"} - set(archive.namelist())
            corrupt = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        return f"{type(error).__name__}: {error}"
    if missing:
        return f"it has no {', '.join(sorted(missing))}"
    return None if corrupt is None else f"its member {corrupt} is corrupt"


def _saved_data(source: pathlib.Path | io.BufferedIOBase) -> str | None:
    """The zip's ``data`` member as text (None if unreadable); a file object is left where it was."""
    position = source.tell() if isinstance(source, io.IOBase) else None
    try:
        with zipfile.ZipFile(source) as archive:
            return archive.read("data").decode()
    except (zipfile.BadZipFile, KeyError, ValueError):
        return None  # SB3's load reports what is wrong with the file
    finally:
        if position is not None:
            source.seek(position)  # type: ignore[union-attr]


def saved_observation_space(source: pathlib.Path | io.BufferedIOBase) -> Any:
    """The observation space a model zip was saved with (nothing else of it deserialized)."""
    text = _saved_data(source)
    if text is None:
        return None
    skipped = {key: None for key in json.loads(text) if key != "observation_space"}
    return json_to_data(text, skipped).get("observation_space")


def retired_objects(source: pathlib.Path | io.BufferedIOBase) -> dict[str, Any]:
    """``custom_objects`` that replace the saved objects this version no longer has (SB3 then picks its own)."""
    try:
        data = json.loads(_saved_data(source) or "{}")
    except ValueError:
        return {}  # SB3's load reports what is wrong with the file
    replacements: dict[str, Any] = {}
    for key, (module, replacement) in RETIRED.items():
        saved = data.get(key)
        if isinstance(saved, dict) and saved.get("__module__") == module:
            replacements[key] = replacement
    return replacements
