"""The worker processes of every layer (collection, evaluation, corrections) start from here (like errors.py,
it imports nothing of ours)."""

from __future__ import annotations

import multiprocessing as mp
import sys
import warnings

MAIN_GUARD = (
    "a script that collects demos, trains or evaluates with worker processes must start its work under "
    "`if __name__ == '__main__':`, since each worker process imports the script again"
)


def not_in_a_worker_starting() -> None:
    """Exit with what to change when this is a worker process importing an unguarded script that started it
    (see `spawn_context`): called where a command's work begins, before it writes anything, so that such a
    worker does not make a run directory or a demo file of its own on its way to its first worker."""
    if getattr(mp.current_process(), "_inheriting", False):
        raise SystemExit(f"libero-ll: {MAIN_GUARD}")


def spawn_context():
    """The multiprocessing context of our worker processes: spawned (a fresh interpreter: MuJoCo's OpenGL
    context and torch's threads do not survive a fork).

    A spawned process imports the script that started it again. A script whose work is not under a main guard
    would so start workers of its own from inside a worker: Python refuses that with a traceback of its
    own. Here the worker exits with one line that says what to change, and its parent reports the worker gone."""
    not_in_a_worker_starting()
    return mp.get_context("spawn")


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for a person at a terminal: our own warnings as `warning: message`, without the
    source line that raised them; others as Python shows them. The command line and the worker processes
    (`plain_warnings`) show them so."""
    if category.__module__.startswith("libero_ll."):
        print(f"warning: {message}", file=file or sys.stderr)
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=file or sys.stderr)


def plain_warnings() -> None:
    """In a worker process: show warnings as the command line does (a spawned process starts with Python's
    own way, which adds the line of our code that raised each)."""
    warnings.showwarning = show_warning
