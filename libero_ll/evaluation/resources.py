"""What a lifelong run spent: the reader and validator of a run's ``resources.json``, and the size of its
training data, for the resource criteria (MS, SSS, CE) of the metrics.

``resources.json`` is written by the training loop after each task::

    {"version": 1, "tasks": [{"task": <name>, "index": <0-based>, "params": <int>, "params_used": <int>,
                              "memory_bytes": <int>, "samples_seen": <int>, "train_macs": <float>,
                              "data_bytes": <int>, "data_windows": <int>}, ...]}

A top-level ``"memory_is_samples": <bool>`` says whether ``memory_bytes`` are stored training samples (the
learner's replay memory; counted by SSS rather than MS). A missing file or field means "not recorded": readers
return None / NaN for it instead of failing.
``data_bytes`` and ``data_windows`` (the task's training data as `task_data_size` measures it) are recorded
by runs since they were added, so that SSS and CE do not depend on finding the demo files again; for older
runs the metrics read the files the config names (`run_data_sizes`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from libero_ll.data.hdf5 import task_demo_file
from libero_ll.errors import LiberoError

FILENAME = "resources.json"
VERSION = 1
# Field name → whether it must be an integer (train_macs may be fractional).
FIELDS = {
    "params": True,
    "params_used": True,
    "memory_bytes": True,
    "samples_seen": True,
    "train_macs": False,
    "data_bytes": True,
    "data_windows": True,
}


@dataclass
class TaskResources:
    """Resources of one task of a run; None marks a field that was not recorded.

    Attributes:
        task: the task's name.
        index: its 0-based position in the learning order.
        params: parameters of the policy (count).
        params_used: parameters in use for this task (PackNet: its masked-in count; else ``params``).
        memory_bytes: bytes the learner keeps after this task (replay data, Fisher and anchor, masks).
        samples_seen: training windows seen while learning this task.
        train_macs: multiply-adds spent training this task.
        data_bytes: bytes of the task's training data (`TaskDataSize.nbytes`).
        data_windows: training windows in one epoch of the task's own data (`TaskDataSize.windows`).
    """

    task: str
    index: int
    params: int | None = None
    params_used: int | None = None
    memory_bytes: int | None = None
    samples_seen: int | None = None
    train_macs: float | None = None
    data_bytes: int | None = None
    data_windows: int | None = None


@dataclass
class RunResources:
    """The resources of a run, one entry per task learned so far (in learning order)."""

    tasks: list[TaskResources] = field(default_factory=list)
    # Whether the learner's memory is stored training samples; None: not recorded (older runs).
    memory_is_samples: bool | None = None

    def data_sizes(self, num_tasks: int) -> list[TaskDataSize | None]:
        """The training-data size of each of the first `num_tasks` tasks as the run recorded it; None for a
        task not recorded (not learned yet, or a run from before the fields existed)."""
        by_index = {t.index: t for t in self.tasks}
        sizes: list[TaskDataSize | None] = []
        for k in range(num_tasks):
            t = by_index.get(k)
            recorded = t is not None and t.data_bytes is not None and t.data_windows is not None
            sizes.append(TaskDataSize(nbytes=int(t.data_bytes), windows=int(t.data_windows)) if recorded else None)
        return sizes

    def array(self, name: str, num_tasks: int | None = None) -> np.ndarray:
        """One field over the tasks as a float array indexed by task position; NaN where not recorded.

        Args:
            name: one of ``FIELDS``.
            num_tasks: length of the array (default: one past the largest recorded index).
        """
        if name not in FIELDS:
            raise KeyError(f"unknown resource field {name!r}; known: {', '.join(FIELDS)}")
        size = num_tasks if num_tasks is not None else max((t.index + 1 for t in self.tasks), default=0)
        out = np.full(size, np.nan)
        for t in self.tasks:
            value = getattr(t, name)
            if value is not None and 0 <= t.index < size:
                out[t.index] = float(value)
        return out


def validate_resources(data: Any) -> list[str]:
    """Problems with a parsed ``resources.json`` (an empty list when it follows the schema).

    Missing per-task fields are allowed (not recorded) and not listed; wrong types, a wrong version or
    repeated indices are.
    """
    problems: list[str] = []
    if not isinstance(data, dict):
        return ["the file does not hold a JSON object"]
    if data.get("version") != VERSION:
        problems.append(f"version is {data.get('version')!r}, expected {VERSION}")
    if data.get("memory_is_samples") is not None and not isinstance(data["memory_is_samples"], bool):
        problems.append(f"memory_is_samples is {data['memory_is_samples']!r}, not true or false")
    tasks = data.get("tasks")
    if not isinstance(tasks, list):
        return problems + ["'tasks' is missing or not a list"]
    seen: set[int] = set()
    for i, entry in enumerate(tasks):
        where = f"tasks[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(entry.get("task"), str):
            problems.append(f"{where}.task is missing or not a string")
        index = entry.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            problems.append(f"{where}.index is missing or not a non-negative integer")
        elif index in seen:
            problems.append(f"{where}.index {index} appears twice")
        else:
            seen.add(index)
        for name, integral in FIELDS.items():
            value = entry.get(name)
            if value is None:
                continue
            ok = isinstance(value, int) if integral else isinstance(value, (int, float))
            if (
                isinstance(value, bool)
                or not ok
                or value < 0
                or (isinstance(value, float) and math.isnan(value))
            ):
                kind = "a non-negative integer" if integral else "a non-negative number"
                problems.append(f"{where}.{name} is {value!r}, not {kind}")
    return problems


def parse_resources(data: dict) -> RunResources:
    """A ``RunResources`` from a parsed file that passed ``validate_resources``, sorted by index."""
    tasks = []
    for entry in data["tasks"]:
        values = {name: entry.get(name) for name in FIELDS}
        tasks.append(TaskResources(task=entry["task"], index=int(entry["index"]), **values))
    return RunResources(sorted(tasks, key=lambda t: t.index), data.get("memory_is_samples"))


def load_resources(run_dir: str | os.PathLike) -> RunResources | None:
    """Read ``RUN_DIR/resources.json``.

    Args:
        run_dir: a run directory.
    Returns:
        The resources, or None when the file does not exist (nothing recorded).
    Raises:
        LiberoError: naming the file, when it exists but is not valid JSON or does not follow the schema.
    """
    path = Path(run_dir) / FILENAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise LiberoError(f"resources file {path} cannot be read ({e})") from None
    except UnicodeDecodeError:
        raise LiberoError(f"resources file {path} is not UTF-8 text: damaged, or another kind of file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise LiberoError(f"resources file {path} is not valid JSON ({e})") from None
    problems = validate_resources(data)
    if problems:
        raise LiberoError(f"resources file {path} is malformed: {'; '.join(problems)}")
    return parse_resources(data)


# --- the training data a run saw ------------------------------------------------------------------------

_DEMO = re.compile(r"^demo_(\d+)$")


@dataclass(frozen=True)
class TaskDataSize:
    """The size of one task's training set Tr_k as a learner holds it in memory.

    Attributes:
        nbytes: bytes of its demos' observations and actions (images as uint8, everything else float32,
            as the sequence dataset stores them).
        windows: training windows in one epoch (one every ``window_stride`` steps of each demo).
    """

    nbytes: int
    windows: int


def task_data_size(
    path: str | os.PathLike, max_demos: int | None = None, window_stride: int = 1
) -> TaskDataSize:
    """Size of a task's demo file as training data, reading only the array shapes.

    Args:
        path: the task's HDF5 demo file (``data/demo_<i>/obs/...``, ``data/demo_<i>/actions``).
        max_demos: count only the first this many demos (the run's ``data.demos_per_task``).
        window_stride: the run's ``train.window_stride``; windows per epoch are ceil(T / stride) per demo.
    Raises:
        LiberoError: naming the file when it is missing or not a demo file.
    """
    import h5py

    path = Path(path)
    stride = max(1, int(window_stride))
    try:
        with h5py.File(path, "r") as f:
            demos = sorted((int(m.group(1)), name) for name in f["data"] if (m := _DEMO.match(name)))
            if max_demos is not None:
                demos = demos[: int(max_demos)]
            nbytes = windows = 0
            for _, name in demos:
                grp = f["data"][name]
                arrays = (
                    [grp["actions"], *(grp["obs"][k] for k in grp["obs"])]
                    if "obs" in grp
                    else [grp["actions"]]
                )
                for a in arrays:
                    item = 1 if a.dtype == np.uint8 else 4
                    nbytes += int(np.prod(a.shape)) * item
                windows += -(-int(grp["actions"].shape[0]) // stride)
    except FileNotFoundError:
        raise LiberoError(f"demo file {path} does not exist") from None
    except (OSError, KeyError) as e:
        raise LiberoError(f"demo file {path} is not a demo file ({e})") from None
    return TaskDataSize(nbytes=nbytes, windows=windows)


def run_data_sizes(
    config: dict, task_names: Sequence[str], base: Path | None = None
) -> list[TaskDataSize | None]:
    """The training-data size of each task of a run, from the demo files its config names.

    Args:
        config: the run's resolved config (keys ``data.dir``, ``data.demos_per_task``,
            ``train.window_stride``).
        task_names: the run's tasks in learning order.
        base: folder that a relative ``data.dir`` is taken from when it does not exist as given (the
            current directory is tried first).
    Returns:
        Per task its ``TaskDataSize``, or None where the demo file cannot be found or read.
    """
    data = config.get("data") or {}
    train = config.get("train") or {}
    folder = Path(str(data.get("dir", "")))
    if not folder.is_absolute() and not folder.is_dir() and base is not None:
        folder = base / folder
    out: list[TaskDataSize | None] = []
    for name in task_names:
        try:
            out.append(
                task_data_size(
                    task_demo_file(folder, name), data.get("demos_per_task"), train.get("window_stride", 1)
                )
            )
        except LiberoError:
            out.append(None)
    return out
