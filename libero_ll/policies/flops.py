"""Compute counts of a policy: forward multiply-adds of one batch, counted without running the numbers.

The count runs the policy's loss on a twin built on PyTorch's "meta" device, where operators only
propagate shapes: it costs milliseconds, uses no memory for weights, touches no random stream, and counts
the LSTM and attention too (on CPU their fused kernels escape ``FlopCounterMode``).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch.utils.flop_counter import FlopCounterMode


def meta_twin(policy: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``policy``'s architecture on the meta device (no weights), in eval mode.

    Built as ``type(policy)(policy.cfg, policy.shape_meta)``, so it has the same layers and shapes.
    """
    with torch.device("meta"):
        twin = type(policy)(policy.cfg, policy.shape_meta)
    return twin.eval()


def forward_flops(policy: torch.nn.Module, batch: Mapping[str, Any]) -> dict[str, int]:
    """Floating-point operations of ``policy.compute_loss(batch)``'s forward pass, per operator.

    Matrix products and convolutions count 2 operations per multiply-add; element-wise work (activations,
    norms, the GMM's log-density) is not counted, as is usual for network FLOPs.

    Args:
        policy: a ``BasePolicy``.
        batch: a training batch in the data package's ``get_batch`` format (any device, or numpy).

    Returns:
        {operator name: FLOPs}, with the sum under "total".
    """
    twin = meta_twin(policy)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        twin.compute_loss(batch)
    counts = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    counts["total"] = int(counter.get_total_flops())
    return counts


def policy_flops(policy: torch.nn.Module, batch: Mapping[str, Any]) -> int:
    """Forward multiply-adds of ``policy.compute_loss(batch)`` (half of ``forward_flops``'s total).

    The policy itself is not run: its weights, mode and the random streams stay untouched. A training
    step (forward and backward) costs about three times this.

    Args:
        policy: a ``BasePolicy``.
        batch: a training batch {"obs", "actions", "mask", "task_emb"} of B windows of T steps.

    Returns:
        Multiply-adds for the whole batch (all B×T steps), as an int.
    """
    return forward_flops(policy, batch)["total"] // 2
