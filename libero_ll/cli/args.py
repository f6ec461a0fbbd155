"""Argument types shared by the subcommands: a bad number is refused by argparse, naming its option."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from libero_ll import MAX_SEED
from libero_ll.paths import file_in_the_way


def at_least(minimum: int, maximum: int | None = None):
    """An argparse type: a whole number >= minimum, and <= maximum when given (counts, sizes, seeds)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be {maximum} or less, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    value = _float(text)
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


def open_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a coverage or a significance level)."""
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (both excluded), got {text!r}")
    return value


def fraction(text: str) -> float:
    """An argparse type: a number above 0 and at most 1 (a share of a full action)."""
    value = _float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text!r}")
    return value


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


SEED = at_least(0, MAX_SEED)


def about(path, error: Exception) -> str:
    """An error's message as said of a file, `path: message`, the path written once (parse errors have it)."""
    text = str(error)
    return text if text.startswith(f"{path}:") else f"{path}: {text}"


def output_file(path, option: str) -> Path:
    """Check, before any work, that a file can be written at `path`; LiberoError naming `option` if not.

    Nothing is created: the folders it needs are made when it is written. Returns the path.
    """
    from libero_ll.errors import LiberoError

    p = Path(path)
    if p.is_dir():
        raise LiberoError(f"{option} {p}: is a folder; give the name of a file to write")
    _writable_folder(p.parent, option, p)
    return p


def output_folder(path, option: str, shown=None) -> Path:
    """Check, before any work, that `path` is a folder that can be written to, or can be made there.

    Nothing is created. `shown` is the path the user gave, named in messages (default `path`).
    Returns the path.
    """
    from libero_ll.errors import LiberoError

    p = Path(path)
    shown = p if shown is None else shown
    if p.exists() and not p.is_dir():
        raise LiberoError(f"{option} {shown}: {p} is a file, not a folder")
    _writable_folder(p, option, shown)
    return p


def _writable_folder(folder: Path, option: str, target) -> None:
    """The folder, or the nearest one above it that exists, must be a folder that can be written to."""
    from libero_ll.errors import LiberoError

    blocking = file_in_the_way(folder)
    if blocking is not None:
        raise LiberoError(f"{option} {target}: {blocking} is a file, not a folder")
    existing = next(above for above in (folder, *folder.parents) if above.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise LiberoError(f"{option} {target}: the folder {existing} is not writable")
