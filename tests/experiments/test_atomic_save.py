"""A checkpoint's save is not cut in half by Ctrl-C or SIGTERM: the signal comes once the file is in place."""

from __future__ import annotations

import signal

import pytest
import torch

from libero_ll.experiments import checkpoint
from libero_ll.experiments.checkpoint import atomic_torch_save, load_checkpoint


class Stop(Exception):
    """Raised by the test's SIGTERM handler."""


def _save_with_a_signal_midway(monkeypatch, signum):
    """torch.save as checkpoint calls it, with `signum` arriving after its first bytes."""
    real = torch.save

    def save(obj, f):
        f.write(b"")  # the writer has begun
        signal.raise_signal(signum)
        real(obj, f)

    monkeypatch.setattr(checkpoint.torch, "save", save)


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Stop)])
def test_a_signal_during_a_save_comes_after_the_file_is_written(tmp_path, monkeypatch, signum, raised):
    def on_term(number, frame):
        raise Stop(number)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        _save_with_a_signal_midway(monkeypatch, signum)
        path = tmp_path / "resume.pt"
        state = {"weights": torch.arange(1000.0), "epoch": 3}
        with pytest.raises(raised):
            atomic_torch_save(state, path)
        monkeypatch.undo()
        back = load_checkpoint(path)
        assert back["epoch"] == 3 and torch.equal(back["weights"], state["weights"])
        assert [p.name for p in tmp_path.iterdir()] == ["resume.pt"]  # no temporary file left
        # The handlers are back as they were.
        assert signal.getsignal(signal.SIGTERM) is on_term
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)
