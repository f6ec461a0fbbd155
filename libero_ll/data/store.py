"""The demos of a run's tasks, read from their files when a stage needs them and let go after it.

A run over many tasks need not hold every task's images at once: a sequential learner trains on one task's
demos at a time (ER keeps a few of each earlier task's in its own memory). At the paper's settings (128 px,
two cameras, 50 demos per task) a LIBERO-90 task's images take about 0.8 GiB, the 90 tasks about 72 GiB.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from libero_ll.data.dataset import TaskData, load_task_data
from libero_ll.errors import LiberoError


class DemoStore:
    """Each task's TaskData as a run trains on it: the first `max_demos` demos of `files[j]`, then the demos of
    `extra[j]` (its displaced-object corrections) when that is given.

    `store[j]` reads task j's file the first time and keeps it until `release`; `light[j]` is task j's demos
    with the actions and low-dim observations only (`light_keys`), read for every task when the store is made:
    so that a file whose numbers are bad is refused before any training, and the checks that need every
    task's demos (digests, lengths) do not read the images.
    """

    def __init__(self, files: Sequence[os.PathLike | str], embs: np.ndarray, obs_keys: Sequence[str],
                 max_demos: int | None, light_keys: Sequence[str] = (),
                 extra: Sequence[os.PathLike | str | None] | None = None):
        self.files = list(files)
        self.embs = embs
        self.obs_keys = list(obs_keys)
        self.max_demos = max_demos
        self.extra = list(extra) if extra is not None else [None] * len(self.files)
        if len(self.extra) != len(self.files):
            raise ValueError(f"{len(self.extra)} extra files for {len(self.files)} tasks")
        self._loaded: dict[int, TaskData] = {}
        self._one = False  # within `one_at_a_time`
        self.reads = 0  # tasks read with their images so far (for tests and timings)
        self.own_demos: list[int] = []  # each task's demos from its own file (the rest are `extra`'s)
        self.light: list[TaskData] = []
        keys = [k for k in light_keys if k in self.obs_keys]
        for j in range(len(self.files)):
            data, own = self._read(j, keys)
            self.light.append(data)
            self.own_demos.append(own)

    def _read(self, j: int, keys: list[str]) -> tuple[TaskData, int]:
        """Task j's demos with the observations `keys`, and how many of them come from its own file."""
        data = load_task_data(self.files[j], j, self.embs[j], keys, self.max_demos)
        own = len(data.demos)
        if self.extra[j] is not None:
            data.demos.extend(load_task_data(self.extra[j], j, self.embs[j], keys).demos)
        return data, own

    def _read_whole(self, j: int) -> TaskData:
        """Task j's demos with every observation, which must act as those read when the store was made."""
        data, _ = self._read(j, self.obs_keys)
        if not _same_actions(data, self.light[j]):
            raise LiberoError(
                f"{self.files[j]} has changed since the run read it when it started (its demos' actions differ): "
                "a run trains on the demos it checked; put the file back as it was, or start the run again"
            )
        return data

    def first_demo(self, j: int) -> TaskData:
        """Task j's first demo alone, read anew (not kept): a sample of the inputs without the whole task."""
        return load_task_data(self.files[j], j, self.embs[j], self.obs_keys, 1)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(len(self))[j]]
        j = int(j)
        if not -len(self.files) <= j < len(self.files):
            raise IndexError(f"task {j} is not one of the store's {len(self.files)}")
        j %= len(self.files)
        if j not in self._loaded:
            if self._one:
                self.release()
            self.reads += 1
            self._loaded[j] = self._read_whole(j)
        return self._loaded[j]

    @contextmanager
    def one_at_a_time(self):
        """Within it the store holds one task's demos at most: reading a task lets go of the one before (for a
        learner rebuilding its memory from each task in turn, which keeps its own share of each)."""
        self._one = True
        try:
            yield self
        finally:
            self._one = False
            self.release()

    def __iter__(self):
        return (self[j] for j in range(len(self)))

    def loaded(self) -> list[int]:
        """The tasks whose demos are held now."""
        return sorted(self._loaded)

    def release(self, keep: Sequence[int] = ()) -> None:
        """Let go of every task's demos but those of `keep` (what a learner took of them stays its own)."""
        for j in [j for j in self._loaded if j not in set(keep)]:
            del self._loaded[j]


def _same_actions(a: TaskData, b: TaskData) -> bool:
    return len(a.demos) == len(b.demos) and all(
        np.array_equal(x["actions"], y["actions"]) for x, y in zip(a.demos, b.demos))

