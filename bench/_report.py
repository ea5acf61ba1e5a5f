"""Printing and saving a benchmark's markdown table, with the command that produced it."""

from __future__ import annotations

import os
import pathlib
import sys


def publish(table: str, out: pathlib.Path | None) -> None:
    """Print ``table``; when ``out`` is given, also write it there (atomically) under the command line."""
    print("\n" + table)
    if out is None:
        return
    command = " ".join(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text(f"`{command}`\n\n{table}\n")
    os.replace(partial, out)
