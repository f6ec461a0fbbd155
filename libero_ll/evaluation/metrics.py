"""Lifelong-learning metrics of the LIBERO paper (FWT, NBT, AUC; eq. 3), as pure functions of success rates.

Task indices are 0-based in code: task k here is task k+1 of the paper, so the paper's K−k tasks after
task k are the K−1−k rows below row k of the success matrix. All values are success fractions in [0, 1].
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from libero_ll.evaluation.success import SuccessTensor


def _mean(values: np.ndarray) -> float:
    """Mean of the non-NaN values; NaN when there are none (without numpy's empty-slice warning)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")


def _check_square(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"success matrix must be (K, K), got shape {matrix.shape}")
    return matrix


def fwt_per_task(curves: Sequence[Sequence[float]]) -> np.ndarray:
    """Forward transfer of each task: the mean of its success curve while it was trained.

    FWT_k = (1/n) Σ_e c[k, k, e] over the n evaluation points of task k, where every point from the
    earliest best epoch e*_k on counts as the best value c[k, k] (the learner keeps that checkpoint).

    Args:
        curves: per task, the success fractions c[k, k, e] at its evaluation epochs, in epoch order.
            NaN points (not evaluated) are left out, so n counts only evaluated points.
    Returns:
        (K,) float64 array; NaN for a task with no evaluated point.
    """
    out = np.full(len(curves), np.nan)
    for k, curve in enumerate(curves):
        c = np.asarray(curve, dtype=np.float64).reshape(-1)
        c = c[~np.isnan(c)]
        if c.size == 0:
            continue
        first_best = int(np.argmax(c))  # argmax returns the first occurrence: e*_k
        c[first_best:] = c[first_best]
        out[k] = c.mean()
    return out


def nbt_per_task(matrix: np.ndarray, best: Sequence[float]) -> np.ndarray:
    """Negative backward transfer of each task: how much its success dropped while later tasks were learned.

    NBT_k = 1/(K−k) Σ_{τ>k} (c[k, k] − c[τ, k])  (lower is better).

    Args:
        matrix: (K, K) success fractions; matrix[tau, j] is success on task j after learning task tau.
            NaN entries (not evaluated) are left out of the sum and of the count.
        best: (K,) c[k, k], each task's best success while trained on it.
    Returns:
        (K,) float64 array; NaN for the last task (no later task) and wherever no later row of
        column k was evaluated or best[k] is NaN.
    """
    matrix = _check_square(matrix)
    best = np.asarray(best, dtype=np.float64).reshape(-1)
    K = matrix.shape[0]
    if best.shape != (K,):
        raise ValueError(f"best has {best.size} values for a {K}x{K} matrix")
    out = np.full(K, np.nan)
    for k in range(K):
        later = matrix[k + 1 :, k]
        later = later[~np.isnan(later)]
        if later.size and not np.isnan(best[k]):
            out[k] = np.mean(best[k] - later)
    return out


def auc_per_task(fwt: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    """Area under each task's success curve over the rest of the run.

    AUC_k = 1/(K−k+1) (FWT_k + Σ_{τ>k} c[τ, k])  (higher is better).

    Args:
        fwt: (K,) FWT_k from ``fwt_per_task``.
        matrix: (K, K) success fractions as in ``nbt_per_task``; NaN entries (not evaluated) are left
            out of the sum and of the count.
    Returns:
        (K,) float64 array; NaN where FWT_k is NaN. For the last task AUC_K = FWT_K.
    """
    matrix = _check_square(matrix)
    fwt = np.asarray(fwt, dtype=np.float64).reshape(-1)
    K = matrix.shape[0]
    if fwt.shape != (K,):
        raise ValueError(f"fwt has {fwt.size} values for a {K}x{K} matrix")
    out = np.full(K, np.nan)
    for k in range(K):
        if np.isnan(fwt[k]):
            continue
        later = matrix[k + 1 :, k]
        later = later[~np.isnan(later)]
        out[k] = (fwt[k] + later.sum()) / (1 + later.size)
    return out


def libero_metrics(tensor: SuccessTensor) -> dict:
    """FWT, NBT and AUC of a run (LIBERO paper, eq. 3), from its success tensor.

    A partial run is measured on the tasks learned so far: K is one past the last task whose curve
    has an evaluated point, and the matrix is cut to its first K rows and columns. A task inside that
    range that was never learned (no evaluated curve point) gets NaN for all three metrics and is left
    out of the means; so do NaN (not evaluated) entries, as described in the per-task functions.

    Args:
        tensor: the run's success tensor.
    Returns:
        ``{"fwt", "nbt", "auc"}``: means over tasks as floats (NBT over all but the last task, so NaN
        when K = 1; NaN when nothing is learned); ``{"fwt_per_task", "nbt_per_task", "auc_per_task"}``:
        lists of K floats; ``"K"``: the number of tasks measured.
    """
    learned = [k for k, c in enumerate(tensor.curves) if np.any(~np.isnan(np.asarray(c, dtype=np.float64)))]
    K = learned[-1] + 1 if learned else 0
    matrix = np.asarray(tensor.matrix, dtype=np.float64)[:K, :K]
    fwt = fwt_per_task(tensor.curves[:K])
    best = np.array([tensor.best(k)[0] if k in learned else np.nan for k in range(K)])
    nbt = nbt_per_task(matrix, best)
    auc = auc_per_task(fwt, matrix)
    return {
        "fwt": _mean(fwt),
        "nbt": _mean(nbt[: max(K - 1, 0)]),
        "auc": _mean(auc),
        "fwt_per_task": fwt.tolist(),
        "nbt_per_task": nbt.tolist(),
        "auc_per_task": auc.tolist(),
        "K": K,
    }
