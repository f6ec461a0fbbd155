"""A Ctrl-C or SIGTERM whose handler runs while ctypes converts a GL call's arguments is raised as itself."""

import ctypes

import pytest

from libero_ll.envs.render import _make_current
from libero_ll.signals import Terminated, unwrap_interrupt


class Context:
    def __init__(self, error):
        self.error = error

    def make_current(self):
        raise self.error


def test_an_interrupt_wrapped_by_ctypes_comes_out_as_itself():
    # What ctypes raised in a collection stopped by SIGTERM while OSMesaMakeCurrent's arguments were converted.
    wrapped = ctypes.ArgumentError("argument 1: Terminated: SIGTERM (a termination signal: kill, timeout or a "
                                   "batch scheduler)")
    with pytest.raises(Terminated, match="SIGTERM"):
        _make_current(Context(wrapped))
    with pytest.raises(KeyboardInterrupt) as e:
        _make_current(Context(ctypes.ArgumentError("argument 2: KeyboardInterrupt: ")))
    assert not isinstance(e.value, Terminated)


def test_other_argument_errors_are_left_as_they_are():
    other = ctypes.ArgumentError("argument 1: TypeError: wrong type")
    with pytest.raises(ctypes.ArgumentError, match="wrong type"):
        _make_current(Context(other))
    assert unwrap_interrupt(ValueError("Terminated: no")) is None
    assert unwrap_interrupt(ctypes.ArgumentError("argument 1: Terminated")) is not None


def test_a_real_signal_during_argument_conversion_is_wrapped_by_ctypes():
    """Why the unwrapping is needed: an exception raised in Python code that converts an argument (as a
    signal handler's does when it runs there) reaches the caller as ArgumentError naming it."""

    class Converts:
        @classmethod
        def from_param(cls, value):
            raise Terminated("SIGTERM")

    func = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda x: None)
    func.argtypes = [Converts]
    with pytest.raises(ctypes.ArgumentError) as e:
        func(1)
    assert isinstance(unwrap_interrupt(e.value), Terminated)
