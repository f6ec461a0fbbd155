"""The success tensor of a lifelong run: per-task success curves while training, the success matrix of
the kept policies, and training losses, saved as JSON after every evaluation."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from libero_ll.errors import LiberoError
from libero_ll.paths import atomic_write_bytes

FORMAT = "libero_ll.success_tensor"
# Version 2 adds kept_epochs; files of version 1 read with none recorded.
VERSION = 2


def version_problem(version) -> str | None:
    """What is wrong with a success tensor's `version` (newer than this code knows, or not a version number),
    said of the file ("is of version 3, ..."), or None when this code reads it (1 to VERSION; a file
    without one is of version 1)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return f"has the version {version!r}, not a version number (this code reads versions 1 to {VERSION})"
    if version > VERSION:
        return (f"is of version {version}, newer than this code reads (versions 1 to {VERSION}); read it with the "
                "newer libero_ll that wrote it")
    return None


def _nan_to_none(values: Sequence[float]) -> list[float | None]:
    return [None if v is None or math.isnan(float(v)) else float(v) for v in values]


def _none_to_nan(values: Sequence[Any]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


@dataclass
class SuccessTensor:
    """What a lifelong run measured, for K tasks learned in order.

    Attributes:
        task_names: the K task names, in learning order.
        eval_epochs: per task k, the epochs at which task k was evaluated while trained on it
            (e.g. [0, 5, 10, ...]; 0 is before the first update).
        curves: per task k, the success rate c[k, k, e] (fraction of rollouts whose goal held) at
            those epochs; NaN marks a point that was not evaluated.
        losses: per task k, the mean training loss of each epoch (index 0 is epoch 1).
        matrix: (K, K) float; matrix[tau, j] is the success rate on task j of the policy kept after
            learning task tau; NaN where not evaluated (yet).
        kept_epochs: per task k, the epoch of the checkpoint kept for it once its stage has ended, or None
            (its stage still running, or a file written before runs recorded it). It is the earliest best
            epoch of task k's own curve except in a stage of several tasks (MTL), whose one kept checkpoint
            has the best mean success over them.
    """

    task_names: list[str]
    eval_epochs: list[list[int]]
    curves: list[list[float]]
    losses: list[list[float]]
    matrix: np.ndarray
    kept_epochs: list[int | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.matrix = np.asarray(self.matrix, dtype=np.float64)
        if not self.kept_epochs:
            self.kept_epochs = [None] * len(self.task_names)
        self._check()

    def _check(self) -> None:
        K = len(self.task_names)
        for name in ("eval_epochs", "curves", "losses"):
            if len(getattr(self, name)) != K:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {K} tasks")
        if self.matrix.shape != (K, K):
            raise ValueError(f"matrix has shape {self.matrix.shape}, expected ({K}, {K})")
        if len(self.kept_epochs) != K:
            raise ValueError(f"kept_epochs has {len(self.kept_epochs)} entries for {K} tasks")
        for k, (epochs, curve) in enumerate(zip(self.eval_epochs, self.curves)):
            if len(epochs) != len(curve):
                raise ValueError(f"task {k}: {len(epochs)} eval epochs but {len(curve)} curve values")
            if any(not 0.0 <= v <= 1.0 for v in curve if not math.isnan(float(v))):
                raise ValueError(f"task {k}: curve values must be success fractions in [0, 1], got {list(curve)}")
        outside = (self.matrix < 0) | (self.matrix > 1)
        if outside.any():
            row, col = (int(i) for i in np.argwhere(outside)[0])
            raise ValueError(f"matrix[{row}][{col}] is {self.matrix[row, col]}; success fractions are in [0, 1]")

    @property
    def num_tasks(self) -> int:
        """K, the number of tasks in the run."""
        return len(self.task_names)

    @classmethod
    def empty(cls, task_names: Sequence[str]) -> SuccessTensor:
        """A tensor for a run that has evaluated nothing yet: empty curves, an all-NaN matrix."""
        K = len(task_names)
        return cls(
            task_names=list(task_names),
            eval_epochs=[[] for _ in range(K)],
            curves=[[] for _ in range(K)],
            losses=[[] for _ in range(K)],
            matrix=np.full((K, K), np.nan),
        )

    def best(self, k: int) -> tuple[float, int]:
        """Task k's success at its kept checkpoint and that checkpoint's epoch: (c[k, k], e*_k).

        That is its best success while trained and the earliest epoch reaching it (NaN points of the curve
        skipped), except where the run recorded another kept epoch: a stage of several tasks keeps one
        checkpoint for all of them (`kept_epochs`). Raises ValueError if task k has no evaluated point.
        """
        curve = np.asarray(self.curves[k], dtype=np.float64)
        if curve.size == 0 or np.all(np.isnan(curve)):
            raise ValueError(f"task {k} ({self.task_names[k]}) has no evaluated success point")
        i = self.kept_index(k)
        if i is None:
            i = int(np.nanargmax(curve))  # first occurrence of the maximum
        return float(curve[i]), int(self.eval_epochs[k][i])

    def kept_index(self, k: int) -> int | None:
        """The position in task k's curve of its kept checkpoint, where the run recorded one that was
        evaluated (else None: the earliest best point is the kept one)."""
        kept = self.kept_epochs[k]
        if kept is None or kept not in self.eval_epochs[k]:
            return None
        i = self.eval_epochs[k].index(kept)
        return None if math.isnan(float(self.curves[k][i])) else i

    def to_dict(self) -> dict:
        """A JSON-ready dict; NaN becomes None (null)."""
        self._check()
        return {
            "format": FORMAT,
            "version": VERSION,
            "task_names": list(self.task_names),
            "eval_epochs": [[int(e) for e in epochs] for epochs in self.eval_epochs],
            "curves": [_nan_to_none(c) for c in self.curves],
            "losses": [_nan_to_none(c) for c in self.losses],
            "matrix": [_nan_to_none(row) for row in self.matrix.tolist()],
            "kept_epochs": [None if e is None else int(e) for e in self.kept_epochs],
        }

    @classmethod
    def from_dict(cls, data: dict) -> SuccessTensor:
        """Inverse of ``to_dict``: None (null) becomes NaN.

        Raises:
            KeyError, ValueError, TypeError: ``data`` is not a dict made by ``to_dict``.
        """
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        problem = version_problem(data.get("version", 1))
        if problem:
            raise ValueError(f"the success tensor {problem}")
        K = len(data["task_names"])
        rows = [_none_to_nan(row) for row in data["matrix"]]
        return cls(
            task_names=[str(n) for n in data["task_names"]],
            eval_epochs=[[int(e) for e in epochs] for epochs in data["eval_epochs"]],
            curves=[_none_to_nan(c) for c in data["curves"]],
            losses=[_none_to_nan(c) for c in data["losses"]],
            matrix=np.asarray(rows, dtype=np.float64).reshape(K, K) if K else np.zeros((0, 0)),
            kept_epochs=[None if e is None else int(e) for e in data.get("kept_epochs") or [None] * K],
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write the tensor as JSON to ``path`` atomically (temporary file, then rename)."""
        atomic_write_bytes(path, json.dumps(self.to_dict(), indent=1, allow_nan=False).encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> SuccessTensor:
        """Read a tensor written by ``save``.

        Raises:
            LiberoError: naming ``path``, when the file is missing, not JSON, or not a success tensor.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise LiberoError(f"success tensor file {path} does not exist") from None
        except OSError as e:
            raise LiberoError(f"success tensor file {path} cannot be read ({e})") from None
        except UnicodeDecodeError:
            raise LiberoError(
                f"success tensor file {path} is not UTF-8 text: damaged, or another kind of file"
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise LiberoError(f"success tensor file {path} is not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise LiberoError(f"success tensor file {path} does not hold a JSON object")
        problem = version_problem(data.get("version", 1)) if data.get("format") == FORMAT else None
        if problem:
            raise LiberoError(f"success tensor file {path} {problem}")
        try:
            tensor = cls.from_dict(data)
        except KeyError as e:
            raise LiberoError(f"success tensor file {path} lacks the key {e}") from None
        except (ValueError, TypeError) as e:
            raise LiberoError(f"success tensor file {path} is malformed: {e}") from None
        if not tensor.task_names:
            raise LiberoError(f"success tensor file {path} holds no tasks (a run has one or more)")
        return tensor
