"""JAX's persistent compilation cache, shared by the Brax envs and PPO's compiled update.

XLA compiles a Brax env in 10-40 s on a CPU and PPO's update in about a second; a compiled
program kept on disk loads in a fraction of that, so every run after the first starts
sooner. The folder is ``$ROBOPPO_JAX_CACHE`` (set but empty: no cache), else
``~/.cache/roboppo/jax``. It holds at most ``$ROBOPPO_JAX_CACHE_MB`` megabytes (default 512):
JAX evicts the programs used least recently beyond that. A cache folder configured through JAX
itself is left alone.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from typing import Any

# JAX writes only programs that took at least this long to compile (its default is 1 s, which
# PPO's update on a small network can fall under, then compile anew in every process).
MIN_COMPILE_SECONDS = 0.1
#: the cache's default size cap, in megabytes (a Brax env's program is 1-20 MB, PPO's update well under 1 MB)
DEFAULT_CACHE_MB = 512


def cache_megabytes() -> int:
    """The cache's size cap: ``$ROBOPPO_JAX_CACHE_MB`` or :data:`DEFAULT_CACHE_MB`."""
    text = os.environ.get("ROBOPPO_JAX_CACHE_MB", "").strip()
    try:
        megabytes = int(text) if text else DEFAULT_CACHE_MB
    except ValueError:
        raise ValueError(f"ROBOPPO_JAX_CACHE_MB={text!r} is not a whole number of megabytes, e.g. 512.") from None
    if megabytes < 1:
        raise ValueError(f"ROBOPPO_JAX_CACHE_MB={text!r} must be at least 1 (ROBOPPO_JAX_CACHE= turns the cache off).")
    return megabytes


def cache_folder() -> str | None:
    """Where roboppo keeps compiled programs (None: the cache is off)."""
    folder = os.environ.get("ROBOPPO_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "roboppo", "jax"))
    return folder or None


def enable_compilation_cache(jax: Any) -> None:
    """Point JAX's persistent cache at :func:`cache_folder` unless JAX already has one.

    :param jax: the imported ``jax`` module (passed in so that importing this module costs nothing).
    """
    if getattr(jax.config, "jax_compilation_cache_dir", None):
        return
    folder = cache_folder()
    if folder:
        jax.config.update("jax_compilation_cache_dir", folder)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
        jax.config.update("jax_compilation_cache_max_size", cache_megabytes() * 2**20)  # least recently used go
        add_missing_access_times(folder)


def add_missing_access_times(folder: str) -> None:
    """Give every cached program without one an access time of 0 (evicted first).

    JAX records access times only when the cache has a size cap; programs cached without one (by an
    earlier roboppo) have none, and JAX's eviction then fails on them, warning at every new program.
    """
    root = pathlib.Path(folder)
    if not root.is_dir():
        return
    for program in root.glob("*-cache"):
        access_time = program.with_name(program.name.removesuffix("-cache") + "-atime")
        if not access_time.exists():
            with contextlib.suppress(OSError):  # another process may be doing the same
                access_time.write_bytes((0).to_bytes(8, "little"))
