"""SIGTERM (kill, timeout, a batch scheduler) stops every command as Ctrl-C does: a word on stderr and exit 143,
not a silent death (`train` says what its run kept: tests/experiments/test_run_guards.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dry_run, workers", [(True, 1), (False, 1), (False, 2)])
def test_sigterm_during_a_collection_says_terminated(dry_run, workers, tmp_path):
    # With workers, the demos still queued for them (1000 here, more than the queue's pipe holds) once kept the
    # stopped process from exiting: it waited for ever to hand them to workers that were gone.
    cmd = [sys.executable, "-m", "libero_ll.cli", "collect", "--suite", "quickstart",
           "--tasks", "put_the_alphabet_soup_in_the_basket", "--demos", "1000", "--image-size", "16",
           "--robot-mesh", "collision", "--out", str(tmp_path / "demos"), "--workers", str(workers),
           *(["--dry-run"] if dry_run else [])]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa")}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    try:
        while b"demo/s" not in seen:  # the progress bar has counted a demo: the collection is under way
            chunk = os.read(proc.stderr.fileno(), 256)
            assert chunk, f"collect ended before its first demo: {seen[-500:]!r}"  # (1000 take minutes)
            seen += chunk
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    last = err.decode().strip().splitlines()[-1]
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()[-2000:]
    if dry_run:
        assert last == "terminated"
    else:
        assert last == "terminated: the demos settled so far are kept; run the same command again to continue"
    assert "Traceback" not in err.decode()
