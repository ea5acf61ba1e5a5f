"""Printing and saving a benchmark's markdown table, with the command that produced it."""

from __future__ import annotations

import os
import pathlib
import sys

from roboppo.common.files import write_atomic


def publish(table: str, out: pathlib.Path | None) -> None:
    """Print ``table``; when ``out`` is given, also write it there (atomically) under the command line."""
    print("\n" + table)
    if out is None:
        return
    command = " ".join(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    write_atomic(out, f"`{command}`\n\n{table}\n")
