"""Choosing the headless GL backend: NVIDIA's EGL when there is a GPU, else OSMesa, and the user's choice first."""

from __future__ import annotations

import os
import sys

import pytest

from libero_ll.envs import gl
from libero_ll.errors import LiberoError


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A pretend machine: which libraries exist and whether the NVIDIA driver is loaded."""
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)

    def make(libs: set[str], nvidia_driver: bool):
        monkeypatch.setattr(gl.ctypes.util, "find_library", lambda name: f"lib{name}.so" if name in libs else None)
        monkeypatch.setattr(gl, "_NVIDIA_DRIVER", str(tmp_path if nvidia_driver else tmp_path / "absent"))

    return make


def test_nvidia_gpu_renders_through_egl(machine):
    machine({"OSMesa", "EGL", "EGL_nvidia"}, nvidia_driver=True)
    assert gl.ensure_gl_backend() == "egl"
    assert os.environ["MUJOCO_GL"] == "egl" and os.environ["PYOPENGL_PLATFORM"] == "egl"


@pytest.mark.parametrize("libs, driver", [({"OSMesa", "EGL"}, False), ({"OSMesa", "EGL", "EGL_nvidia"}, False),
                                          ({"OSMesa", "EGL"}, True)])
def test_without_an_nvidia_egl_osmesa_comes_first(machine, libs, driver):
    machine(libs, nvidia_driver=driver)
    assert gl.ensure_gl_backend() == "osmesa"


def test_software_egl_when_osmesa_is_missing(machine):
    machine({"EGL"}, nvidia_driver=False)
    assert gl.ensure_gl_backend() == "egl"


def test_users_choice_wins_and_nothing_found_is_explained(machine, monkeypatch):
    machine({"OSMesa", "EGL", "EGL_nvidia"}, nvidia_driver=True)
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert gl.ensure_gl_backend() == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    machine(set(), nvidia_driver=False)
    with pytest.raises(LiberoError, match="apt-get install"):
        gl.ensure_gl_backend()


def test_robosuite_source_warnings_are_kept_off_the_console(tmp_path):
    """Python 3.12 warns about invalid escape sequences in robosuite's source whenever it compiles it (once per
    process where it was installed without compiled files); those warnings are silenced, and only those."""
    import warnings

    source = 'x = "\\ "\n'
    category = SyntaxWarning if sys.version_info >= (3, 12) else DeprecationWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gl.quiet_simulator_logs()
        compile(source, str(tmp_path / "site" / "robosuite" / "__init__.py"), "exec")
        compile(source, str(tmp_path / "site" / "ours" / "__init__.py"), "exec")
    assert [(w.category, os.path.basename(os.path.dirname(w.filename))) for w in caught] == [(category, "ours")]


def test_an_unknown_backend_is_named(machine, monkeypatch):
    # It was a RuntimeError traceback from MuJoCo's import.
    monkeypatch.setenv("MUJOCO_GL", "bogus")
    with pytest.raises(LiberoError, match="MUJOCO_GL=bogus is not a backend MuJoCo knows"):
        gl.ensure_gl_backend()
    for known in ("glx", "egl", "off"):  # what MuJoCo takes is taken
        monkeypatch.setenv("MUJOCO_GL", known)
        assert gl.ensure_gl_backend() == known


@pytest.mark.parametrize("setting, said", [
    # A script that imports mujoco first: MuJoCo took GLFW as it was imported.
    ("import mujoco", "mujoco (or robosuite) was imported before libero_ll could choose a headless backend"),
    ("os.environ['MUJOCO_GL'] = 'glfw'", "the OpenGL backend glfw could not start"),
])
def test_a_backend_that_cannot_start_says_why_not_to_shrink_the_images(setting, said):
    # Both said "the GL library refused the 640x480 offscreen buffer ...; use a smaller image size".
    import subprocess
    from pathlib import Path

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_black_bowl_on_the_plate.bddl"
    code = (f"import os\n{setting}\nfrom libero_ll.envs.env import EnvConfig, LiberoEnv\n"
            "from libero_ll.errors import LiberoError\n"
            "try:\n"
            f"    LiberoEnv({str(task)!r}, EnvConfig(image_size=16)).reset(seed=0)\n"
            "except LiberoError as e:\n"
            "    print('ERROR', e)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert "ERROR" in out and said in out and "smaller image size" not in out, out
