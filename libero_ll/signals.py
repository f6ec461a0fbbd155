"""Holding Ctrl-C and termination signals while work that must not be cut in half finishes."""

from __future__ import annotations

import contextlib
import signal
import threading

HELD = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM (from `kill`, `timeout` or a batch scheduler), taken as Ctrl-C is: the run stops where it is, its
    state saved at its last completed epoch, and its log says why it stopped."""


def unwrap_interrupt(error: Exception) -> BaseException | None:
    """The Ctrl-C or SIGTERM that `error` stands for, or None. ctypes reports an exception raised while it
    converts a foreign call's arguments as ArgumentError("argument 1: Terminated: ..."): a signal whose handler
    ran at that moment (PyOpenGL converts in Python) arrives so instead of as itself."""
    parts = str(error).split(": ", 2)
    if len(parts) < 2 or not parts[0].startswith("argument "):
        return None
    if parts[1] == "Terminated":
        return Terminated(parts[2] if len(parts) > 2 else "SIGTERM")
    if parts[1] == "KeyboardInterrupt":
        return KeyboardInterrupt()
    return None


@contextlib.contextmanager
def interrupts_held(signums: tuple[int, ...] = HELD):
    """Hold `signums` (Ctrl-C and SIGTERM) inside the block and deliver them, in the order they came and as the
    handlers before would have, when the block ends. Outside the main thread (where signals are not Python's to
    handle), the block runs as it is; a signal whose handler was not set from Python (it could not be put back)
    is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {}
    for signum in signums:
        if signal.getsignal(signum) is not None:
            previous[signum] = signal.signal(signum, lambda number, frame: came.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in came:
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
