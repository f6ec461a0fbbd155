"""Shared fixtures: one simulated quickstart task per test session (building a scene takes seconds)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests never write into the user's cache folder: instruction embeddings go to a folder of this run.
if "LIBERO_LL_CACHE" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["LIBERO_LL_CACHE"] = tempfile.mkdtemp(prefix="libero_ll_test_cache_")
    # Removed when the test run ends (worker processes the tests spawn inherit the variable, not the hook).
    atexit.register(shutil.rmtree, os.environ["LIBERO_LL_CACHE"], ignore_errors=True)

# The tests of Ctrl-C need Python's own SIGINT handler. A shell starts a background job (`make test &`, nohup)
# with SIGINT ignored, which Python then keeps, as do the processes the tests start; here it is put back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "bddl_tasks" / "quickstart"


@pytest.fixture(scope="session")
def bowl_task() -> Path:
    return QUICKSTART / "put_the_black_bowl_on_the_plate.bddl"


@pytest.fixture(scope="session")
def soup_env():
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(QUICKSTART / "put_the_alphabet_soup_in_the_basket.bddl", EnvConfig(image_size=64, robot_mesh="collision"))
    yield env
    env.close()


@pytest.fixture
def signal_once(tmp_path):
    """A function that runs a command in `tmp_path` (stdout dropped, stderr kept), sends it signal `sig` once
    `ready()` holds (within 300 s; the command must still be running then), and returns its exit status and
    what it wrote to stderr. The process is killed if the test fails first."""
    import signal
    import subprocess
    import time

    def run(cmd: list[str], env: dict, ready, sig: int = signal.SIGINT) -> tuple[int, str]:
        errors = tmp_path / "stderr.txt"
        with open(errors, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.time() + 300
            while time.time() < deadline and proc.poll() is None and not ready():
                time.sleep(0.2)
            assert proc.poll() is None, errors.read_text()[-3000:]
            proc.send_signal(sig)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return proc.returncode, errors.read_text()

    return run


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    # Tiny test models gain nothing from a second thread, and with the simulator on the other core a
    # spinning second thread can stall them.
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def fresh_plugins(tmp_path_factory):
    """A test that imports plugins (a config's `plugins`) leaves no trace: the learner and policy registries,
    the plugin modules (those under the tests' temporary folders) and the module path are put back after it."""
    import sys

    from libero_ll.learners.registry import LEARNERS
    from libero_ll.policies.registry import POLICIES

    learners, policies = dict(LEARNERS._entries), dict(POLICIES._entries)
    path = list(sys.path)
    base = str(tmp_path_factory.getbasetemp().resolve())
    yield
    for registry, entries in ((LEARNERS, learners), (POLICIES, policies)):
        registry._entries.clear()
        registry._entries.update(entries)
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith((base, str(REPO / "examples"))):
            del sys.modules[name]
    sys.path[:] = path
