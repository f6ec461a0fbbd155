"""EWC (online elastic weight consolidation): a quadratic penalty keeps weights important to past tasks near
their values after those tasks (LIBERO appendix B.1).

After task k the empirical Fisher F_k (mean squared gradient of the demos' log-likelihood, taken batch by
batch on the task's own windows, the batches drawn at random) is folded into a running estimate,
F ← γ F + (1 − γ) F_k (F = F_1 after the first task), and the weights θ* are kept as the anchor. While later
tasks are learned every step adds λ/2 Σ_i F_i (θ_i − θ*_i)² to the behaviour-cloning loss.

These are the appendix's formulas. LIBERO's released code adds λ Σ_i F_i (θ_i − θ*_i)² (no ½) and sums the
estimates, F ← γ F + F_k: with the same λ its penalty is twice this one's after the first task and about
2/(1 − γ) = 20 times after many tasks of alike Fishers; it also takes the Fisher's gradients in training mode
(augmentation and dropout on). `form: libero_code` and `fisher_mode: train` run EWC that way. A squared batch
gradient is about B times smaller than a squared per-window one (its noise averages out), so the Fisher's
scale, and λ's effect, depends on the batch size B, as in LIBERO's code (whose batches are the training batch
size, 32).
"""

from __future__ import annotations

import torch

from libero_ll.data.dataset import TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners.base import Learner, is_number, is_whole
from libero_ll.learners.registry import register_learner


@register_learner("ewc")
class EWC(Learner):
    """Online EWC.

    Options:
        lambda: penalty weight λ (5e4 in the paper).
        gamma: decay γ of the running Fisher estimate (0.9 in the paper).
        fisher_batch_size: windows per gradient when estimating the Fisher (the training batch size by default).
        form: "paper" (the appendix's λ/2 and F ← γ F + (1 − γ) F_k) or "libero_code" (LIBERO's released code:
            λ without the ½, and F ← γ F + F_k).
        fisher_mode: "eval" (the policy in evaluation mode while the Fisher is estimated: no augmentation or
            dropout) or "train" (as LIBERO's code: augmentation and dropout on, batch-norm statistics updated).
    """

    options = {"lambda": 5e4, "gamma": 0.9, "fisher_batch_size": None, "form": "paper", "fisher_mode": "eval"}

    def __init__(self, policy, train, options):
        super().__init__(policy, train, options)
        self.fisher: dict[str, torch.Tensor] = {}
        self.anchor: dict[str, torch.Tensor] = {}
        self._fisher_windows = 0

    @classmethod
    def check_values(cls, opts: dict) -> None:
        if not is_number(opts["lambda"]) or opts["lambda"] < 0:
            raise LiberoError(f"learner ewc: lambda must be a number ≥ 0, got {opts['lambda']!r}")
        if not is_number(opts["gamma"]) or not 0.0 <= opts["gamma"] <= 1.0:
            raise LiberoError(f"learner ewc: gamma must be in [0, 1], got {opts['gamma']!r}")
        fb = opts["fisher_batch_size"]
        if fb is not None and (not is_whole(fb) or fb < 1):
            raise LiberoError(f"learner ewc: fisher_batch_size must be a positive integer or null, got {fb!r}")
        for key, known in (("form", ("paper", "libero_code")), ("fisher_mode", ("eval", "train"))):
            if opts[key] not in known:
                raise LiberoError(f"learner ewc: {key} must be one of {', '.join(known)}, got {opts[key]!r}")

    def start_task(self, k: int, data) -> None:
        super().start_task(k, data)
        self._fisher_windows = 0

    def penalty(self) -> torch.Tensor:
        """λ/2 Σ_i F_i (θ_i − θ*_i)² over the anchored parameters (λ Σ with `form: libero_code`; zero before the
        first task ends)."""
        total = torch.zeros((), device=self.policy.device)
        for name, p in self.policy.named_parameters():
            if name in self.fisher:
                total = total + (self.fisher[name] * (p - self.anchor[name]) ** 2).sum()
        half = 0.5 if self.opts["form"] == "paper" else 1.0
        return half * float(self.opts["lambda"]) * total

    def observe(self, batch: dict) -> torch.Tensor:
        """One step on the behaviour-cloning loss plus the penalty; returns the behaviour-cloning loss alone,
        so that losses compare across learners."""
        self._count(batch)
        bc = self.loss(batch)
        self._step(bc + self.penalty() if self.fisher else bc)
        return bc.detach().clone()

    def end_task(self, k: int, data: TaskData) -> None:
        new = self.estimate_fisher(data)
        g = float(self.opts["gamma"])
        weight = 1.0 - g if self.opts["form"] == "paper" else 1.0
        for name, f in new.items():
            self.fisher[name] = f if name not in self.fisher else g * self.fisher[name] + weight * f
        self.anchor = {n: p.detach().clone() for n, p in self.policy.named_parameters() if n in self.fisher}

    def estimate_fisher(self, data: TaskData) -> dict[str, torch.Tensor]:
        """Empirical diagonal Fisher of one task: the mean over batches of squared log-likelihood gradients.

        Batches cover every window of the task once, in a random order drawn from the learner's stream (the
        windows of one batch would otherwise be overlapping windows of one demo, whose squared mean gradient
        is larger than that of windows drawn across the task), with the policy in evaluation mode (no
        augmentation or dropout) or, with `fisher_mode: train`, in training mode.
        """
        # The likelihood training maximised: the fingers' commands as train.gripper_lead taught them.
        dataset = self.policy.windows([data], gripper_lead=self.train_cfg.gripper_lead)
        bs = int(self.opts["fisher_batch_size"] or self.train_cfg.batch_size)
        params = {n: p for n, p in self.policy.named_parameters() if p.requires_grad}
        fisher = {n: torch.zeros_like(p) for n, p in params.items()}
        was_training = self.policy.training
        if self.opts["fisher_mode"] == "train":
            self.train_mode()
        else:
            self.policy.eval()
        batches = 0
        order = self.rng.permutation(len(dataset))
        for start in range(0, len(dataset), bs):
            batch = dataset.get_batch(order[start : start + bs])
            self.policy.zero_grad(set_to_none=True)
            self.policy.compute_loss(batch).backward()  # the NLL's gradient: the log-likelihood's, negated
            for n, p in params.items():
                if p.grad is not None:
                    fisher[n] += p.grad.detach() ** 2
            batches += 1
            self._fisher_windows += len(batch["task_id"])
        self.policy.zero_grad(set_to_none=True)
        self.policy.train(was_training)
        return {n: f / max(batches, 1) for n, f in fisher.items()}

    def extra_windows(self) -> int:
        """Windows passed forward and backward to estimate this stage's Fisher."""
        return self._fisher_windows

    def memory_bytes(self) -> int:
        """Bytes of the Fisher values and the anchor weights."""
        return int(sum(t.numel() * t.element_size() for d in (self.fisher, self.anchor) for t in d.values()))

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "fisher": dict(self.fisher),
            "anchor": dict(self.anchor),
            "fisher_windows": self._fisher_windows,
        }

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        super().load_state_dict(state, tasks)
        device = self.policy.device
        self.fisher = {n: t.to(device) for n, t in state["fisher"].items()}
        self.anchor = {n: t.to(device) for n, t in state["anchor"].items()}
        self._fisher_windows = int(state["fisher_windows"])
