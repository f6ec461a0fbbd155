"""What a run ran on, written to RUN_DIR/environment.json: one entry per session of the run (its start, then
each resume), each with the command, the folder it ran from, the machine and device, and the versions of
the software that shapes results (libero_ll and its git commit when run from a checkout, torch, numpy,
MuJoCo, robosuite), the pretrained file a session loaded (`init_from`), and the code of its own a run imported
(`plugins`: each file and its SHA-256). Results differ between versions
and devices; this file says which gave a run's.

    {"version": 1, "sessions": [{"started": "2026-11-26T21:50:02+00:00", "resumed": false,
                                 "command": [...], "cwd": "...", "host": "...", "device": "cpu (...)",
                                 "python": "3.11.2", "versions": {"torch": "2.13.0", ...},
                                 "git": {"commit": "...", "dirty": false}, ...}, ...]}
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime
from importlib import metadata
from pathlib import Path

from libero_ll.evaluation.runs import ENVIRONMENT_FILE, REPO_ROOT, load_sessions

VERSION = 1
# Distributions whose versions are recorded (None where one is not installed as a distribution).
PACKAGES = ("libero_ll", "torch", "numpy", "mujoco", "robosuite", "h5py")


def _git(root: Path) -> dict | None:
    """The commit of a git checkout at `root` and whether tracked files differ from it; None elsewhere."""
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device) -> str:
    """`device` (a torch.device) in words: the GPU's name, or the CPU's model."""
    import torch

    if getattr(device, "type", str(device)) == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({_cpu_name()})"


def describe(device, resumed: bool, init_from: str | None = None, plugins: list[dict] | None = None) -> dict:
    """This session's entry of environment.json; `init_from`, the pretrained file the session loaded, is
    recorded when it loaded one, and `plugins` (`libero_ll.experiments.plugins.plugin_files`) when the run
    imports any."""
    import torch

    import libero_ll

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    if versions["libero_ll"] is None:  # run from a checkout on the path, not installed
        versions["libero_ll"] = libero_ll.__version__
    return {
        "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        "resumed": bool(resumed),
        "command": list(sys.argv),
        "cwd": os.getcwd(),
        "host": platform.node(),
        "device": device_name(device),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "git": _git(REPO_ROOT),
        **({"init_from": str(init_from)} if init_from else {}),
        **({"plugins": list(plugins)} if plugins else {}),
    }


def record_session(run_dir: Path, device, resumed: bool, init_from: str | None = None,
                   plugins: list[dict] | None = None) -> list[dict]:
    """Append this session's entry to RUN_DIR/environment.json (written atomically) and return the sessions
    recorded before it, oldest first. A file that cannot be read as one is kept beside it as
    environment.json.unreadable, not overwritten. `init_from`: the pretrained file the session loaded;
    `plugins`: the run's own code (`plugin_files`)."""
    from libero_ll.experiments.lifelong import write_json

    from libero_ll.evaluation.runs import config_digest

    path = Path(run_dir) / ENVIRONMENT_FILE
    sessions = load_sessions(run_dir)
    if not sessions and path.exists():
        os.replace(path, path.with_name(ENVIRONMENT_FILE + ".unreadable"))
    entry = describe(device, resumed, init_from, plugins)
    # The config.yaml the session ran with, for reports to see one edited after the run (`config_edited`).
    entry["config_sha256"] = config_digest(run_dir)
    write_json(path, {"version": VERSION, "sessions": [*sessions, entry]})
    return sessions
