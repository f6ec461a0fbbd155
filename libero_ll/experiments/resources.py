"""What each task of a run cost: parameters, learner memory, training windows and multiply-adds, written to
RUN_DIR/resources.json (read by the metrics code for MS, SSS and CE)."""

from __future__ import annotations

import json
from pathlib import Path

from libero_ll.paths import atomic_write_bytes

VERSION = 1


def forward_macs_per_window(policy, batch: dict) -> float:
    """Multiply-adds of one forward pass (loss included) per training window, counted on `batch`.

    Args:
        policy: a BasePolicy (not run: the count uses a shape-only twin, see libero_ll.policies.flops).
        batch: a training batch (SequenceDataset.get_batch format) of at least one window.
    """
    from libero_ll.policies.flops import policy_flops

    return float(policy_flops(policy, batch)) / max(len(batch["task_id"]), 1)


def task_entry(task: str, index: int, params: int, params_used: int, memory_bytes: int, samples_seen: int,
               train_macs: float, data_size=None) -> dict:
    """One entry of resources.json (see `write_resources`); `data_size` is the task's training data as
    `libero_ll.evaluation.resources.task_data_size` measures it, or None when its file cannot be read."""
    entry = {
        "task": str(task),
        "index": int(index),
        "params": int(params),
        "params_used": int(params_used),
        "memory_bytes": int(memory_bytes),
        "samples_seen": int(samples_seen),
        "train_macs": float(train_macs),
    }
    if data_size is not None:
        entry["data_bytes"] = int(data_size.nbytes)
        entry["data_windows"] = int(data_size.windows)
    return entry


def write_resources(path: Path, entries: list[dict], memory_is_samples: bool | None = None) -> None:
    """Write {"version": 1, "tasks": entries, "memory_is_samples": ...} atomically.

    `memory_is_samples` (the learner's own `memory_is_samples`; left out when None): whether the learner's
    memory is stored training samples, counted by SSS rather than MS.

    Each entry: task (name), index (0-based learning order), params (parameters of the policy),
    params_used (parameters in use for this task), memory_bytes (bytes the learner keeps after this task),
    samples_seen (training windows seen while learning it), train_macs (multiply-adds spent training it:
    forward MACs per window × windows × 3 for forward and backward), data_bytes and data_windows (the
    task's training data: bytes of its demos' arrays, windows in one epoch of them).
    """
    data = {"version": VERSION, "tasks": entries}
    if memory_is_samples is not None:
        data["memory_is_samples"] = bool(memory_is_samples)
    atomic_write_bytes(path, json.dumps(data, indent=1).encode("utf-8"))
