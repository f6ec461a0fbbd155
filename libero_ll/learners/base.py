"""The one training loop every learner shares; learners change it through three hooks.

`start_task(k, data)` before task k, `observe(batch)` for each batch (one optimisation step), and
`end_task(k, data)` after task k's best checkpoint has been restored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError


@dataclass
class TrainConfig:
    """Optimisation settings, per task (shared/spec/protocol.md).

    Args:
        epochs: epochs per task.
        batch_size: windows per batch.
        lr: AdamW learning rate at the start of each task.
        min_lr: cosine decay floor reached at the end of each task.
        weight_decay: AdamW weight decay.
        grad_clip: gradient norm clip.
        window_stride: an epoch visits one window every `window_stride` steps of each demo (random phase
            per epoch); 1 visits every start index. The causal policy supervises every step of a window,
            so a stride of seq_len still trains on every step once per epoch.
    """

    epochs: int = 50
    batch_size: int = 32
    lr: float = 1e-4
    min_lr: float = 1e-5
    weight_decay: float = 1e-4
    grad_clip: float = 100.0
    window_stride: int = 1


class Learner:
    """Sequential fine-tuning; subclasses override hooks to add replay, regularisation or masks.

    Args:
        policy: the BasePolicy being trained.
        train: TrainConfig.
        options: the learner's own keys from the config (each learner documents them).
    """

    options: dict = {}

    def __init__(self, policy, train: TrainConfig, options: dict):
        self.check_options(options)
        self.policy = policy
        self.train_cfg = train
        self.opts = {**self.options, **options}
        self.optimizer = None
        self.rng = np.random.default_rng(0)

    @classmethod
    def check_options(cls, options: dict) -> None:
        """LiberoError naming any option this learner does not have."""
        unknown = sorted(set(options) - set(cls.options))
        if unknown:
            raise LiberoError(
                f"learner {cls.__name__}: unknown options {unknown}; known: {sorted(cls.options) or 'none'}"
            )

    # ------------------------------------------------------------------ hooks

    def start_task(self, k: int, data: TaskData) -> None:
        """Fresh optimiser and cosine schedule for task k."""
        t = self.train_cfg
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=t.lr, weight_decay=t.weight_decay)
        self._total_steps = None

    def observe(self, batch: dict) -> float:
        """One optimisation step on `batch`; returns the loss."""
        loss = self.policy.compute_loss(batch)
        self._step(loss)
        return float(loss.detach())

    def end_task(self, k: int, data: TaskData) -> None:
        """Called after task k's training, with the kept (best) weights loaded."""

    # ------------------------------------------------------------------ loop

    def _step(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.train_cfg.grad_clip)
        self.optimizer.step()
        self._schedule()

    def _schedule(self) -> None:
        # Cosine decay from lr to min_lr over the task's total number of steps.
        if self._total_steps:
            self._done_steps += 1
            t = self.train_cfg
            frac = min(self._done_steps / self._total_steps, 1.0)
            lr = t.min_lr + 0.5 * (t.lr - t.min_lr) * (1 + math.cos(math.pi * frac))
            for g in self.optimizer.param_groups:
                g["lr"] = lr

    def epoch_indices(self, dataset: SequenceDataset) -> np.ndarray:
        """Window indices of one epoch, shuffled, every `window_stride`-th start with a random phase."""
        stride = max(1, self.train_cfg.window_stride)
        idx = dataset.window_index()
        phase = self.rng.integers(stride)
        keep = np.nonzero((idx[:, 2] % stride) == phase)[0]
        if len(keep) == 0:
            keep = np.arange(len(idx))
        return self.rng.permutation(keep)

    def train_epoch(self, dataset: SequenceDataset) -> float:
        """One pass over the task's windows; returns the mean loss."""
        self.policy.train()
        order = self.epoch_indices(dataset)
        bs = self.train_cfg.batch_size
        batches = [order[i : i + bs] for i in range(0, len(order), bs)]
        if self._total_steps is None:
            self._total_steps = len(batches) * self.train_cfg.epochs
            self._done_steps = 0
        losses = [self.observe(dataset.get_batch(b)) for b in batches]
        return float(np.mean(losses)) if losses else float("nan")

    def state_dict(self) -> dict:
        """What a checkpoint must hold to continue this learner (subclasses add their memories)."""
        return {}
