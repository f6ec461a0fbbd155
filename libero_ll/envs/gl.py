"""Choose a headless OpenGL backend for MuJoCo before the simulator is first imported."""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys
import warnings

from libero_ll.errors import LiberoError

# Without an NVIDIA GPU, OSMesa first: it renders as fast as EGL's software path, and it keeps working
# when several environments are created and closed in one process. With one, NVIDIA's EGL renders on
# the GPU, many times faster.
_LIBS = {"osmesa": ("OSMesa",), "egl": ("EGL",)}
_DEBIAN = "libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6"
_NVIDIA_DRIVER = "/proc/driver/nvidia"
_NVIDIA_EGL = "EGL_nvidia"
# What MuJoCo's MUJOCO_GL takes.
MUJOCO_BACKENDS = ("egl", "osmesa", "glfw", "glx", "enable", "enabled", "on", "true", "1", "disable", "disabled", "off",
                   "false", "0")
# Set when mujoco was imported before a backend could be chosen (a script importing mujoco or robosuite first).
IMPORTED_BEFORE = False
# The backend chosen here or set by the user (robosuite may change MUJOCO_GL later), for error messages.
CHOSEN: str | None = None


def nvidia_egl_available() -> bool:
    """Whether an NVIDIA GPU with its driver's EGL library is present (looked up without importing torch or CUDA)."""
    return os.path.isdir(_NVIDIA_DRIVER) and ctypes.util.find_library(_NVIDIA_EGL) is not None


def ensure_gl_backend() -> str:
    """Set MUJOCO_GL (and PyOpenGL's platform) to a headless backend that is installed.

    Respects a MUJOCO_GL the user has set. Picks EGL when an NVIDIA GPU can render through it, else
    OSMesa, else EGL (Mesa's software path). Must run before mujoco or robosuite is imported.

    Returns:
        The backend name ("osmesa", "egl", or the user's choice).
    """
    global IMPORTED_BEFORE, CHOSEN
    chosen = os.environ.get("MUJOCO_GL")
    CHOSEN = chosen
    if "mujoco" in sys.modules and not chosen:
        # MuJoCo picked its backend as it was imported (GLFW, which needs a display): too late to choose one.
        IMPORTED_BEFORE = True
    if chosen:
        if chosen.lower() not in MUJOCO_BACKENDS:
            raise LiberoError(f"MUJOCO_GL={chosen} is not a backend MuJoCo knows (egl, osmesa, glfw, glx, or off); "
                              "without a display use egl or osmesa, or unset it to let libero_ll choose")
        if chosen in _LIBS:
            os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
        return chosen
    order = ("egl", "osmesa") if nvidia_egl_available() else ("osmesa", "egl")
    for name in order:
        if all(ctypes.util.find_library(lib) for lib in _LIBS[name]):
            os.environ["MUJOCO_GL"] = name
            os.environ.setdefault("PYOPENGL_PLATFORM", name)
            CHOSEN = name
            return name
    raise LiberoError(
        "no headless OpenGL library found (need OSMesa or EGL); on Debian/Ubuntu install: "
        f"apt-get install {_DEBIAN}  (or run `make setup`)"
    )


def quiet_simulator_logs() -> None:
    """Keep robosuite's start-up chatter (private macro files, unused controller parts) off the console.

    Its errors still show. Must run before robosuite is imported to silence the import-time messages, among
    them Python 3.12's warnings about invalid escape sequences in robosuite's own source, printed once per
    process where its files were installed without compiling them.
    """
    for category in (SyntaxWarning, DeprecationWarning):  # 3.12 and later; 3.11 and earlier
        warnings.filterwarnings("ignore", "invalid escape sequence", category, r".*[/\\]robosuite[/\\]")
    logger = logging.getLogger("robosuite_logs")
    if _errors_only not in logger.filters:
        logger.addFilter(_errors_only)


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR
