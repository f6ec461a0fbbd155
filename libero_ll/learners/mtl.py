"""MTL (multitask learning): all tasks' data at once, the upper bound of lifelong learning (no sequence).

How it fits the lifelong loop and the success tensor: MTL has a single stage holding every task. Its
epochs run over the windows of all tasks together (`train.epochs` epochs, one cosine schedule). At each
evaluation point every task is evaluated, so curves[j] holds task j's success at the stage's evaluation
epochs; the kept checkpoint is the one with the best mean success over the tasks (earliest on ties).
There is one kept policy, so every row τ ≥ j of the matrix holds its success on task j, measured at the
kept evaluation point (the upper triangle stays empty: no task comes after another). Per-task
backward transfer is therefore zero by construction. The loss of each epoch (over all tasks' windows) is
recorded for every task, and resources.json splits the training windows by the task they came from.
"""

from __future__ import annotations

from libero_ll.data.dataset import TaskData
from libero_ll.learners.base import Learner
from libero_ll.learners.registry import register_learner


@register_learner("mtl")
class MTL(Learner):
    """Multitask learning on the shared loop: one stage of all tasks, plain optimisation steps.

    The data of every task is kept in memory for the whole run; `memory_bytes` counts it, as stored samples
    (SSS counts all of them: joint training stores every task's data).
    """

    memory_is_samples = True

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self._data_bytes = 0

    @classmethod
    def stages(cls, num_tasks: int) -> list[list[int]]:
        """A single stage of all tasks."""
        return [list(range(num_tasks))]

    def start_task(self, k: int, data: list[TaskData]) -> None:
        super().start_task(k, data)
        self._data_bytes = int(sum(arr.nbytes for t in data for demo in t.demos for arr in demo.values()))

    def memory_bytes(self) -> int:
        """Bytes of the demos of all tasks, all of which the learner trains on."""
        return self._data_bytes

    def state_dict(self) -> dict:
        return {**super().state_dict(), "data_bytes": self._data_bytes}

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        super().load_state_dict(state, tasks)
        self._data_bytes = int(state["data_bytes"])
