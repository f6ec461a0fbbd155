"""Checks on paths a command will write, shared by every layer (like errors.py, it imports nothing of ours)."""

from __future__ import annotations

import os
from pathlib import Path


def holds_a_path(name: str) -> bool:
    """Whether `name`, meant as one folder's name (or its start), holds a path separator or '..', so that the
    folder made from it would land somewhere else than where it is put."""
    return ".." in name or any(sep in name for sep in {"/", "\\", os.sep, os.altsep} - {None})


def file_in_the_way(folder: str | os.PathLike) -> Path | None:
    """The file that stops `folder` from being made (the folder itself, or the nearest existing path above
    it, when that is a file); None when the folder exists or can be made."""
    path = Path(folder)
    for above in (path, *path.parents):
        if above.exists():
            return None if above.is_dir() else above
    return None


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder, flushed to disk and renamed into
    place: the path holds its old or its new contents, never a part, even after a crash of the machine. The
    folders it needs are made. The file is readable by all (0644), like any other file a command writes."""
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
