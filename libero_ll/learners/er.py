"""ER (experience replay): keep some demos of every finished task and mix them into each batch."""

from __future__ import annotations

import numpy as np
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners.base import Learner
from libero_ll.learners.registry import register_learner


@register_learner("er")
class ER(Learner):
    """Experience replay.

    Options:
        memory_demos: demos kept per finished task (the paper keeps up to 1000 trajectories in all).
        replay_batch_size: replay windows added to every batch (32 in the paper).
    """

    options = {"memory_demos": 1000, "replay_batch_size": 32}
    memory_is_samples = True  # the memory is demos kept for replay

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self.memory: list[TaskData] = []
        # (task_id, demo indices) of each memory entry: all a checkpoint needs to rebuild the memory.
        self.chosen: list[tuple[int, list[int]]] = []
        self.replay: SequenceDataset | None = None

    @classmethod
    def check_values(cls, opts: dict) -> None:
        for key in ("memory_demos", "replay_batch_size"):
            if not isinstance(opts[key], int) or opts[key] < 0:
                raise LiberoError(f"learner er: {key} must be a non-negative integer, got {opts[key]!r}")

    def observe(self, batch: dict) -> torch.Tensor:
        if self.replay is None or self.opts["replay_batch_size"] == 0:
            return super().observe(batch)
        pick = self.rng.integers(len(self.replay), size=self.opts["replay_batch_size"])
        mixed = _concat(batch, self.replay.get_batch(pick))
        return super().observe(mixed)

    def end_task(self, k: int, data: TaskData) -> None:
        # Keep a fixed share of each finished task's demos, chosen at random.
        keep = min(len(data.demos), int(self.opts["memory_demos"]))
        if keep == 0:
            return
        chosen = sorted(self.rng.choice(len(data.demos), size=keep, replace=False).tolist())
        self.chosen.append((int(data.task_id), chosen))
        self._remember(data, chosen)

    def _remember(self, data: TaskData, chosen: list[int]) -> None:
        self.memory.append(TaskData(data.task_id, [data.demos[i] for i in chosen], data.task_emb))
        self.replay = self.train_cfg.dataset(self.memory, self.policy)

    def memory_bytes(self) -> int:
        """Size of the replay memory, bytes."""
        return self.replay.nbytes() if self.replay is not None else 0

    def state_dict(self) -> dict:
        return {**super().state_dict(), "chosen": [[tid, list(idx)] for tid, idx in self.chosen]}

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        super().load_state_dict(state, tasks)
        by_id = {t.task_id: t for t in tasks}
        self.memory, self.chosen, self.replay = [], [], None
        for tid, idx in state["chosen"]:
            self.chosen.append((int(tid), [int(i) for i in idx]))
            self._remember(by_id[int(tid)], self.chosen[-1][1])


def _concat(a, b):
    if isinstance(a, dict):
        return {k: _concat(a[k], b[k]) for k in a}
    if isinstance(a, torch.Tensor):
        # The replay memory may sit on the host while the stage's windows are on the GPU, or the other way.
        return torch.cat([a, b.to(a.device)], dim=0)
    return np.concatenate([a, b], axis=0)
