"""Import what libero_ll's commands import, once, so that Python writes the bytecode of those modules.

`make setup` installs without compiling bytecode (most of the 20,000-odd files installed are never imported by
a run) and ends with this script, run with bytecode writing on: later processes, the spawned rollout and
collection workers among them, then load the compiled modules instead of compiling theirs again, even where
PYTHONDONTWRITEBYTECODE is set. A third-party package that cannot be imported is left for the command that
needs it to report; a module of libero_ll's own that cannot be imported is named.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import warnings

# Imported inside functions by libero_ll, so that importing libero_ll's own modules does not reach them: what
# every training run, collection and evaluation imports (the simulator, the network, its logs). The language
# model (transformers, about 20 s of compiling), the report's plots and the LeRobot export are compiled by the
# first command that imports them.
LAZY = (
    "torch",
    "torch.utils.tensorboard",
    "mujoco",
    "robosuite",
    "numba",
    "h5py",
    "OpenGL.GL",
    "PIL.Image",
)


def _import(name: str) -> str | None:
    """Import `name`; None when it imported, else why not (one line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(name)
        return None
    except Exception as e:  # noqa: BLE001 - said after the imports, for whoever runs the module to see
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def main() -> int:
    if sys.dont_write_bytecode:
        print("warm_imports: PYTHONDONTWRITEBYTECODE is set, so nothing would be written; skipped")
        return 0
    t = time.time()
    import libero_ll
    from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs

    # As a command does before the simulator is imported: a headless GL backend, and robosuite's notes about
    # its optional parts kept off the console.
    ensure_gl_backend()
    quiet_simulator_logs()
    # A third-party package that cannot be imported is optional here (the command that needs it says so).
    done = sum(_import(name) is None for name in LAZY)
    names = [m.name for m in pkgutil.walk_packages(libero_ll.__path__, "libero_ll.")
             if not m.name.endswith("__main__")]  # that one would run the CLI
    failed = {name: why for name in names if (why := _import(name)) is not None}
    print(f"bytecode written for what libero_ll's commands import ({done + len(names) - len(failed)} packages and "
          f"modules imported, {len(sys.modules)} in all, {time.time() - t:.0f} s)")
    for name, why in failed.items():
        print(f"warm_imports: could not import {name} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
