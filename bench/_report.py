"""Printing and saving a benchmark's markdown table, with the command and the commit that produced it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from roboppo.common.files import write_atomic

CHECKOUT = pathlib.Path(__file__).resolve().parent.parent


def commit() -> str | None:
    """The checkout's short commit hash, marked when the tree has local changes; ``None`` without git."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True, check=True, timeout=30)
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = bool(git("status", "--porcelain"))
    except (OSError, subprocess.SubprocessError):
        return None
    return head + (" (with local changes)" if changed else "") if head else None


def publish(table: str, out: pathlib.Path | None) -> None:
    """Print ``table``; when ``out`` is given, also write it there (atomically) under the command line and commit."""
    print("\n" + table)
    if out is None:
        return
    command = " ".join(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    made_at = commit()
    header = f"`{command}`\n\n" + (f"Made at commit {made_at}.\n\n" if made_at else "")
    write_atomic(out, f"{header}{table}\n")
