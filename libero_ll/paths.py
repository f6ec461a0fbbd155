"""Checks on paths a command will write, shared by every layer (like errors.py, it imports nothing of ours)."""

from __future__ import annotations

import os
from pathlib import Path


def file_in_the_way(folder: str | os.PathLike) -> Path | None:
    """The file that stops `folder` from being made (the folder itself, or the nearest existing path above
    it, when that is a file); None when the folder exists or can be made."""
    path = Path(folder)
    for above in (path, *path.parents):
        if above.exists():
            return None if above.is_dir() else above
    return None
