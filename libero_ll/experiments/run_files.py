"""Files of a run directory beyond results: its log (log.txt) and its own copies of its task files (tasks/),
which let a run be read, evaluated and continued from any folder or machine."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Callable

from libero_ll.errors import LiberoError
from libero_ll.evaluation.runs import LOG_FILE, RUN_TASKS_DIR, RUN_TASKS_ORDER

# The lock a run directory's training holds (`libero-ll train`, and each run of a sweep).
RUN_LOCK_FILE = ".run.lock"


class RunLog:
    """A run's log: each line goes to `print_line` (the caller's log) and, with the time it was logged, to
    RUN_DIR/log.txt once the run directory is known; lines logged before that are written then."""

    def __init__(self, print_line: Callable[[str], None]):
        self.print_line = print_line
        self.file = None
        self.early: list[str] = []

    def __call__(self, line: str) -> None:
        self.print_line(line)
        stamped = f"{datetime.now():%Y-%m-%d %H:%M:%S} {line}"
        if self.file is None:
            self.early.append(stamped)
        else:
            self.file.write(stamped + "\n")

    def open(self, run_dir: Path) -> None:
        """Append to RUN_DIR/log.txt from now on: a line with this session's command, then the early lines."""
        self.file = open(Path(run_dir) / LOG_FILE, "a", encoding="utf-8", buffering=1)
        self.file.write(f"{datetime.now():%Y-%m-%d %H:%M:%S} command: {' '.join(sys.argv)}\n")
        self.file.writelines(line + "\n" for line in self.early)
        self.early = []

    def stopped(self, error: BaseException) -> None:
        """Record in the log file (not printed: the caller reports it) why the run stopped early."""
        if self.file is not None:
            what = str(error).strip().splitlines()[0] if str(error).strip() else ""
            self.file.write(f"{datetime.now():%Y-%m-%d %H:%M:%S} stopped: {type(error).__name__}"
                            f"{': ' + what if what else ''}\n")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()




def keep_task_files(run_dir: Path, tasks: list[Path]) -> None:
    """Copy the run's task files, each with its stored initial states, into RUN_DIR/tasks/ with their order,
    so that the run can be evaluated or continued from any folder or machine, and with the task files it was
    trained on even after the suite's own change. A run that already holds them keeps them."""
    from libero_ll.envs.init_states import init_states_path

    folder = Path(run_dir) / RUN_TASKS_DIR
    if (folder / RUN_TASKS_ORDER).exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for src in (Path(task), init_states_path(task)):
            if src.exists():
                tmp = folder / f".{src.name}.tmp"
                shutil.copyfile(src, tmp)
                os.replace(tmp, folder / src.name)
    tmp = folder / f".{RUN_TASKS_ORDER}.tmp"
    tmp.write_text("".join(f"{Path(t).stem}\n" for t in tasks), encoding="utf-8")
    os.replace(tmp, folder / RUN_TASKS_ORDER)


def run_task_files(run_dir: str | Path) -> list[Path] | None:
    """The task files a run was trained on, in its learning order, from its own copies (`keep_task_files`);
    None for a run that has none (made before runs kept them), or whose copies are incomplete."""
    folder = Path(run_dir) / RUN_TASKS_DIR
    try:
        names = [n for n in (folder / RUN_TASKS_ORDER).read_text(encoding="utf-8").splitlines() if n]
    except (OSError, UnicodeDecodeError):
        return None
    files = [folder / f"{n}.bddl" for n in names]
    return files if names and all(f.is_file() for f in files) else None


@contextlib.contextmanager
def file_lock(path: Path, wait: float, busy: str):
    """Hold an exclusive lock on `path` (released when the holder exits, even when killed); LiberoError `busy` when
    another process still holds it after `wait` seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        deadline = time.time() + wait
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() >= deadline:
                    raise LiberoError(busy) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def hold_run_dir(run_dir: str | Path):
    """Hold a run directory's lock (RUN_DIR/.run.lock, the file a sweep's runs lock) while a run trains in it:
    an exclusive flock, which the operating system releases when the process ends, however it ends (kill -9
    included), with this process's id written in the file for the message of another that finds it held.

    Raises:
        LiberoError: another process holds it (naming it when its id is known).
    """
    path = Path(run_dir) / RUN_LOCK_FILE
    holder = _lock_holder(path)
    busy = (f"{run_dir} is in use by another process{f' (pid {holder})' if holder else ''}: a run trains in one "
            f"process at a time; wait for that one to end (or stop it), then resume with libero-ll train "
            f"--resume {run_dir}")
    with file_lock(path, 0.0, busy):
        try:
            with open(path, "r+") as f:
                f.truncate(0)
                f.write(f"{os.getpid()}\n")
        except OSError:
            pass  # the id is only for messages
        try:
            yield
        finally:
            try:
                with open(path, "r+") as f:
                    f.truncate(0)
            except OSError:
                pass


def training_now(run_dir: str | Path) -> int | None:
    """Whether a process trains in the run directory now (holds its lock): its id, 0 when unknown; None when
    none does (the lock is tried, and let go at once)."""
    path = Path(run_dir) / RUN_LOCK_FILE
    try:
        f = open(path, "rb")
    except OSError:
        return None  # never locked (or not readable): nothing says a run trains there
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _lock_holder(path) or 0
        except OSError:
            return None
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


def _lock_holder(path: Path) -> int | None:
    """The id of the live process that wrote itself into a run's lock file; None when unknown or gone (a
    sweep's runs do not write it)."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass  # alive, another user's
    return pid
