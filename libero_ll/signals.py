"""Holding Ctrl-C and termination signals while work that must not be cut in half finishes."""

from __future__ import annotations

import contextlib
import signal
import threading

HELD = (signal.SIGINT, signal.SIGTERM)


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
