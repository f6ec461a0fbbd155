"""`scripts/warm_imports.py`, the end of `make setup`: it imports every module of libero_ll and what their commands
import lazily, so that Python writes their bytecode once (setup installs without compiling any)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "warm_imports.py"


def _run(tmp_path, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # The bytecode goes to a folder of the test's own, not beside the installed files.
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"), **env_changes)
    return subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)


def test_every_libero_ll_module_imports_and_its_bytecode_is_written(tmp_path):
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "bytecode written for what libero_ll's commands import" in out.stdout
    assert "could not import" not in out.stdout, out.stdout
    assert out.stderr == ""  # robosuite's notes at import are kept off the console
    written = [p.as_posix() for p in (tmp_path / "pycache").rglob("*.pyc")]
    for module in ("libero_ll/experiments/lifelong.", "libero_ll/policies/resnet_t/model.", "robosuite/", "torch/nn/"):
        assert any(module in p for p in written), module


def test_nothing_is_done_where_bytecode_may_not_be_written(tmp_path):
    out = _run(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    assert out.returncode == 0 and "PYTHONDONTWRITEBYTECODE is set" in out.stdout
    assert not (tmp_path / "pycache").exists()
