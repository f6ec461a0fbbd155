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


def _warning_text(message, category, filename, lineno, line=None) -> str:
    if category.__module__.startswith("libero_ll."):
        return f"warning: {message}\n"
    return warnings.formatwarning(message, category, filename, lineno, line)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for a person at a terminal: our own warnings as `warning: message`, without the
    source line that raised them; others as Python shows them. The command line and the worker processes
    (`plain_warnings`) show them so."""
    print(_warning_text(message, category, filename, lineno, line), end="", file=file or sys.stderr)


def plain_warnings() -> None:
    """In a worker process: show warnings as the command line does (a spawned process starts with Python's
    own way, which adds the line of our code that raised each)."""
    warnings.showwarning = show_warning


def pass_warnings(queue) -> None:
    """In a worker process: put each warning on `queue` as ``{"warning": text}`` (shown as `show_warning` shows
    it), for the parent to say once (`WarningsOnce`). Workers that meet the same thing (a region too tight in a
    task they all collect) would each say it."""

    def send(message, category, filename, lineno, file=None, line=None) -> None:
        queue.put({"warning": _warning_text(message, category, filename, lineno, line)})

    warnings.showwarning = send


class WarningsOnce:
    """The parent's side of `pass_warnings`: says each warning its workers pass up once, on stderr."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            sys.stderr.write(text)
            sys.stderr.flush()
