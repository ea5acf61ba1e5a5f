"""Files written whole or not at all: every file roboppo writes goes through :func:`atomic_target`.

The content is written to a hidden temporary file in the target's folder, named uniquely per
writer (process id and a random token) and ending in the target's suffix (writers such as
``np.savez`` and ``imageio`` choose the format from it), then renamed over the target, which
POSIX makes atomic. A kill during the write leaves the old file, or none, and at most a hidden
temporary file; two processes writing the same target never share a temporary name.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
from collections.abc import Iterator

PARTIAL_MARK = ".partial-"


def temporary_name(target: pathlib.Path) -> pathlib.Path:
    """A unique hidden name next to ``target`` with its suffix: ``.<stem>.partial-<pid>-<token><suffix>``."""
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    return target.with_name(f".{target.stem}{PARTIAL_MARK}{token}{target.suffix}")


@contextlib.contextmanager
def atomic_target(target: str | os.PathLike[str]) -> Iterator[pathlib.Path]:
    """Yield a temporary path to write; on success it replaces ``target``, on error it is removed.

    A writer that wrote nothing leaves ``target`` as it was.

    >>> with atomic_target("out/table.md") as partial:  # doctest: +SKIP
    ...     partial.write_text("| a |")
    """
    final = pathlib.Path(target)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = temporary_name(final)
    try:
        yield partial
        if partial.exists():
            os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_target`."""
    with atomic_target(path) as partial:
        partial.write_text(text)


def remove_partials(folder: pathlib.Path) -> list[pathlib.Path]:
    """Delete temporary files a killed writer left in ``folder``; returns what was removed."""
    found = [path for path in folder.glob(f".*{PARTIAL_MARK}*") if path.is_file()]
    for path in found:
        path.unlink(missing_ok=True)
    return found
