"""ER (experience replay): keep some demos of every finished task and mix them into each batch.

The memory follows LIBERO's: a finished task keeps up to 1000 windows of its data, one window per demo step
(the paper's "up to 1000 trajectories", the unit of its 32-"trajectory" replay batch; LIBERO's code keeps the
first 1000 windows of each task). Here the windows are those of whole demos drawn at random: demos join the
memory in a random order while their steps fit in `memory_windows` (at least one demo is kept), so a task
whose demos take 150 steps keeps 6 of its 50. The cpu preset keeps every demo (`memory_windows: null`).
"""

from __future__ import annotations

import numpy as np
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners.base import Learner, is_whole
from libero_ll.learners.registry import register_learner


@register_learner("er")
class ER(Learner):
    """Experience replay.

    Options:
        memory_windows: most windows kept per finished task, one per demo step (1000 in the paper); null: no cap.
        memory_demos: most demos kept per finished task; null: no cap.
        replay_batch_size: replay windows added to every batch (32 in the paper).
    """

    options = {"memory_windows": 1000, "memory_demos": None, "replay_batch_size": 32}
    memory_is_samples = True  # the memory is demos kept for replay

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self.memory: list[TaskData] = []
        # (task_id, demo indices) of each memory entry: all a checkpoint needs to rebuild the memory.
        self.chosen: list[tuple[int, list[int]]] = []
        self.replay: SequenceDataset | None = None

    @classmethod
    def check_values(cls, opts: dict) -> None:
        for key in ("memory_windows", "memory_demos", "replay_batch_size"):
            value = opts[key]
            if key != "replay_batch_size" and value is None:
                continue
            if not is_whole(value) or value < 0:
                what = "a non-negative integer" + (" or null" if key != "replay_batch_size" else "")
                raise LiberoError(f"learner er: {key} must be {what}, got {value!r}")

    def observe(self, batch: dict) -> torch.Tensor:
        if self.replay is None or self.opts["replay_batch_size"] == 0:
            return super().observe(batch)
        pick = self.rng.integers(len(self.replay), size=self.opts["replay_batch_size"])
        mixed = _concat(batch, self.replay.get_batch(pick))
        return super().observe(mixed)

    def end_task(self, k: int, data: TaskData) -> None:
        chosen = self.choose(data)
        if not chosen:
            return
        self.chosen.append((int(data.task_id), chosen))
        self._remember(data, chosen)

    def choose(self, data: TaskData) -> list[int]:
        """The demos a finished task keeps, in file order: drawn in a random order while they fit in
        memory_windows steps and memory_demos demos (the first one drawn always, unless a cap is 0)."""
        windows, demos = self.opts["memory_windows"], self.opts["memory_demos"]
        if windows == 0 or demos == 0:
            return []
        chosen, steps = [], 0
        n = len(data.demos)
        # A random order of all the demos (drawn as choice, not permutation: a memory of every demo then draws
        # the same numbers as runs made before the window budget, and trains the same).
        for i in self.rng.choice(n, size=n, replace=False).tolist():
            length = len(data.demos[i]["actions"])
            if chosen and windows is not None and steps + length > windows:
                break
            chosen.append(i)
            steps += length
            if demos is not None and len(chosen) >= demos:
                break
        return sorted(chosen)

    def _remember(self, data: TaskData, chosen: list[int]) -> None:
        self.memory.append(TaskData(data.task_id, [data.demos[i] for i in chosen], data.task_emb))
        self.replay = self.train_cfg.dataset(self.memory, self.policy)

    def memory_bytes(self) -> int:
        """Size of the replay memory, bytes."""
        return self.replay.nbytes() if self.replay is not None else 0

    def state_dict(self) -> dict:
        return {**super().state_dict(), "chosen": [[tid, list(idx)] for tid, idx in self.chosen],
                "window_budget": True}

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        super().load_state_dict(state, tasks)
        if "window_budget" not in state:
            # A run saved before memory_windows existed goes on as it began: up to memory_demos (then 1000)
            # demos of each task, whatever their windows.
            demos = self.opts["memory_demos"]
            self.opts = {**self.opts, "memory_windows": None, "memory_demos": 1000 if demos is None else demos}
        self.memory, self.chosen, self.replay = [], [], None
        for tid, idx in state["chosen"]:
            self.chosen.append((int(tid), [int(i) for i in idx]))
            self._remember(_task(tasks, int(tid)), self.chosen[-1][1])


def _task(tasks, tid: int) -> TaskData:
    """The task of id `tid`: a run's tasks are in the order of their ids, so only that one is read from a
    store that reads them when asked for (DemoStore); any other order is searched."""
    if 0 <= tid < len(tasks) and tasks[tid].task_id == tid:
        return tasks[tid]
    for t in tasks:
        if t.task_id == tid:
            return t
    raise KeyError(f"no task of id {tid} among the {len(tasks)} given")


def _concat(a, b):
    if isinstance(a, dict):
        return {k: _concat(a[k], b[k]) for k in a}
    if isinstance(a, torch.Tensor):
        # The replay memory may sit on the host while the stage's windows are on the GPU, or the other way.
        return torch.cat([a, b.to(a.device)], dim=0)
    return np.concatenate([a, b], axis=0)
