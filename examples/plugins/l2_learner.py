"""L2: after each task, keep the weights as an anchor, and while later tasks are learned add
lambda/2 * sum_i (theta_i - anchor_i)^2 to the behaviour-cloning loss. The simplest regulariser of lifelong
learning (EWC with every weight equally important), written as a plugin of one's own:

    libero-ll train configs/cpu.yaml plugins=[examples/plugins/l2_learner.py] learner.name=l2 \
        learner.options.lambda=100

docs/extending.md walks through it.
"""

from __future__ import annotations

import torch

from libero_ll.errors import LiberoError
from libero_ll.learners import Learner, register_learner


@register_learner("l2")
class L2(Learner):
    """L2 regularisation towards the weights after the last task.

    Options:
        lambda: weight of the penalty.
    """

    # Every option and its default: a config may set only these (learner.options or learner.by_name.l2).
    options = {"lambda": 1.0}

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self.anchor: dict[str, torch.Tensor] = {}

    @classmethod
    def check_values(cls, opts: dict) -> None:
        # Called before any work: a bad value is an error naming the option, not a failure hours later.
        value = opts["lambda"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise LiberoError(f"learner l2: lambda must be a number >= 0, got {value!r}")

    def observe(self, batch: dict) -> torch.Tensor:
        """One optimisation step; returns the behaviour-cloning loss alone, so that losses compare across
        learners."""
        self._count(batch)  # training windows per task, for the run's resources.json
        bc = self.loss(batch)  # the policy's loss, with train.precision and train.compile applied
        penalty = sum(((p - self.anchor[n]) ** 2).sum() for n, p in self.policy.named_parameters()
                      if n in self.anchor)
        self._step(bc + 0.5 * float(self.opts["lambda"]) * penalty if self.anchor else bc)
        return bc.detach().clone()

    def end_task(self, k: int, data) -> None:
        # Called after task k's training, with the weights the run keeps for it loaded.
        self.anchor = {n: p.detach().clone() for n, p in self.policy.named_parameters()}

    def memory_bytes(self) -> int:
        """What the learner keeps besides the policy (reported as the run's memory): the anchor."""
        return sum(t.numel() * t.element_size() for t in self.anchor.values())

    # A run saves its state during training and between tasks; `libero-ll train --resume` restores it.
    # Everything the learner needs to go on must be here, as tensors, numbers, strings, lists and dicts.
    def state_dict(self) -> dict:
        return {**super().state_dict(), "anchor": dict(self.anchor)}

    def load_state_dict(self, state: dict, tasks) -> None:
        super().load_state_dict(state, tasks)
        self.anchor = {n: t.to(self.policy.device) for n, t in state["anchor"].items()}
