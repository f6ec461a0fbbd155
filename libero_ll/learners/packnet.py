"""PackNet: after each task keep its most important free weights, prune the rest, fine-tune and freeze the
kept ones; evaluating task k uses only the weights of tasks ≤ k (LIBERO appendix B.1; Mallya & Lazebnik 2018).

Every weight tensor (two or more dimensions) has an owner mask: 0 for a free weight, t + 1 for a weight
kept by task t. Task k trains only free weights. After its best checkpoint is restored, the top
`keep_fraction` of the free weights by magnitude become task k's, the other free weights are set to zero,
and `finetune_epochs` epochs train task k's weights alone; from then on they are frozen. Biases, norm
layers and other one-dimensional parameters are trained on the first task only, then frozen (norm layers
also stop updating running statistics). Frozen values are copied back after every optimiser step, so
weight decay cannot move them and earlier tasks' outputs stay exactly the same.

The fine-tune is not evaluated: the weights of its last epoch are the ones frozen (the paper computes every
metric before the fine-tune and says nothing of choosing among its epochs; LIBERO's code evaluates it every
5 epochs and keeps the best). It trains the raw weights, without the moving average of `train.ema_decay`.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from libero_ll.data.dataset import TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners.base import Learner, is_number, is_whole
from libero_ll.learners.registry import register_learner


@register_learner("packnet")
class PackNet(Learner):
    """PackNet.

    Options:
        keep_fraction: share of the still-free weights of each tensor kept by a task (0.25 in the paper).
        finetune_epochs: epochs of fine-tuning after pruning; null means as many as training (train.epochs).
    """

    options = {"keep_fraction": 0.25, "finetune_epochs": None}
    per_task_networks = True

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self.owner: dict[str, torch.Tensor] = {
            n: torch.zeros(p.shape, dtype=torch.uint8, device=p.device)
            for n, p in policy.named_parameters()
            if p.dim() >= 2
        }
        self.num_packed = 0  # tasks whose weights are pruned and frozen
        self.phase = "train"  # "train": free weights learn task k; "finetune": task k's kept weights do
        self._trainable: dict[str, torch.Tensor] = {}
        self._frozen_values: dict[str, torch.Tensor] = {}

    @classmethod
    def check_values(cls, opts: dict) -> None:
        f = opts["keep_fraction"]
        if not is_number(f) or not 0.0 < f <= 1.0:
            raise LiberoError(f"learner packnet: keep_fraction must be in (0, 1], got {f!r}")
        e = opts["finetune_epochs"]
        if e is not None and (not is_whole(e) or e < 0):
            raise LiberoError(f"learner packnet: finetune_epochs must be an integer ≥ 0 or null, got {e!r}")

    # ------------------------------------------------------------------ hooks

    def start_task(self, k: int, data) -> None:
        super().start_task(k, data)
        if self.num_packed >= 254:
            raise LiberoError("learner packnet: at most 254 tasks fit in its masks")
        self.phase = "train"
        self._freeze_all_but(lambda owner: owner == 0)

    def end_task(self, k: int, data: TaskData) -> None:
        """Prune: task k keeps the top `keep_fraction` of the free weights of each tensor, the rest become 0."""
        params = dict(self.policy.named_parameters())
        tag = self.num_packed + 1
        with torch.no_grad():
            for name, owner in self.owner.items():
                p = params[name]
                free = owner == 0
                n_free = int(free.sum())
                if n_free == 0:
                    continue
                n_keep = max(1, int(round(float(self.opts["keep_fraction"]) * n_free)))
                magnitude = torch.where(free, p.abs(), torch.full_like(p, -1.0))
                top = torch.topk(magnitude.flatten(), n_keep).indices
                kept = torch.zeros(p.numel(), dtype=torch.bool, device=p.device)
                kept[top] = True
                kept = kept.view_as(p) & free
                owner[kept] = tag
                p[free & ~kept] = 0.0
        self.num_packed += 1
        self.phase = "finetune"
        self.optimizer = self._new_optimizer()
        self._begin_schedule(self.post_task_epochs())
        self._freeze_all_but(lambda owner: owner == tag)

    def post_task_epochs(self) -> int:
        """Fine-tune epochs after pruning (the training epochs unless `finetune_epochs` is set)."""
        e = self.opts["finetune_epochs"]
        return int(self.train_cfg.epochs if e is None else e)

    def eval_context(self, j: int):
        """Task j's network: weights of tasks ≤ j only; the current weights while task j is still unpruned."""
        if j >= self.num_packed:
            return contextlib.nullcontext()
        return self._masked(j)

    def shares_eval_context(self, tasks: list[int]) -> bool:
        """Only tasks not yet pruned share a network (the current weights); each pruned task has its own."""
        return all(j >= self.num_packed for j in tasks)

    @contextlib.contextmanager
    def _masked(self, j: int):
        params = dict(self.policy.named_parameters())
        saved = {}
        with torch.no_grad():
            for name, owner in self.owner.items():
                drop = (owner == 0) | (owner > j + 1)
                if bool(drop.any()):
                    saved[name] = params[name].detach().clone()
                    params[name][drop] = 0.0
        try:
            yield
        finally:
            with torch.no_grad():
                for name, value in saved.items():
                    params[name].copy_(value)

    def memory_bytes(self) -> int:
        """Bytes of the owner masks (one byte per weight)."""
        return int(sum(m.numel() * m.element_size() for m in self.owner.values()))

    def params_used(self, k: int) -> int:
        """Weights kept by tasks ≤ k plus the shared one-dimensional parameters."""
        shared = sum(p.numel() for n, p in self.policy.named_parameters() if n not in self.owner)
        kept = sum(int(((m > 0) & (m <= k + 1)).sum()) for m in self.owner.values())
        return int(shared + kept)

    # ------------------------------------------------------------------ masking the updates

    def _freeze_all_but(self, trainable_owner) -> None:
        # Shared (one-dimensional) parameters learn only while the first task is being learned.
        shared_trainable = self.num_packed == 0 or (self.num_packed == 1 and self.phase == "finetune")
        self._trainable, self._frozen_values = {}, {}
        for name, p in self.policy.named_parameters():
            if name in self.owner:
                mask = trainable_owner(self.owner[name])
            else:
                mask = torch.full(p.shape, shared_trainable, dtype=torch.bool, device=p.device)
            self._trainable[name] = mask
            self._frozen_values[name] = p.detach().clone()

    def train_mode(self) -> None:
        super().train_mode()
        if self.num_packed > 0 and not (self.num_packed == 1 and self.phase == "finetune"):
            for m in self.policy.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()

    def adjust_gradients(self) -> None:
        for name, p in self.policy.named_parameters():
            if p.grad is not None:
                p.grad.mul_(self._trainable[name])

    def after_update(self) -> None:
        with torch.no_grad():
            for name, p in self.policy.named_parameters():
                mask = self._trainable[name]
                p.copy_(torch.where(mask, p, self._frozen_values[name]))

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "owner": dict(self.owner),
            "num_packed": self.num_packed,
            "phase": self.phase,
        }

    def load_eval_state(self, state: dict) -> None:
        """Which task owns each weight and how many tasks are packed: each task's network for `eval_context`."""
        device = self.policy.device
        self.owner = {n: m.to(device) for n, m in state["owner"].items()}
        self.num_packed = int(state["num_packed"])

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        super().load_state_dict(state, tasks)
        self.load_eval_state(state)
        self.phase = str(state["phase"])
        # Frozen values are the current ones: they were copied back after every step before the save.
        if self.phase == "finetune":
            tag = self.num_packed
            self._freeze_all_but(lambda owner: owner == tag)
        else:
            self._freeze_all_but(lambda owner: owner == 0)
