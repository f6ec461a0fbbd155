"""Files of a run directory beyond results: its log (log.txt) and its own copies of its task files (tasks/),
which let a run be read, evaluated and continued from any folder or machine."""

from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Callable

from libero_ll.evaluation.runs import LOG_FILE


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


# A run's own copies of its task files (and their stored initial states), with their learning order.
RUN_TASKS_DIR = "tasks"
RUN_TASKS_ORDER = "order.txt"


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
