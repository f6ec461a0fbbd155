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


def fwt_per_task(curves: Sequence[Sequence[float]], kept: Sequence[int | None] | None = None) -> np.ndarray:
    """Forward transfer of each task: the mean of its success curve while it was trained.

    FWT_k = (1/n) Σ_e c[k, k, e] over the n evaluation points of task k, where every point from the
    earliest best epoch e*_k on counts as the best value c[k, k] (the learner keeps that checkpoint).

    Args:
        curves: per task, the success fractions c[k, k, e] at its evaluation epochs, in epoch order.
            NaN points (not evaluated) are left out, so n counts only evaluated points.
        kept: per task, the position in its curve of the checkpoint kept for it when that is not the
            earliest best one (a stage of several tasks keeps the best mean: `SuccessTensor.kept_index`);
            None where it is.
    Returns:
        (K,) float64 array; NaN for a task with no evaluated point.
    """
    out = np.full(len(curves), np.nan)
    for k, curve in enumerate(curves):
        c = np.asarray(curve, dtype=np.float64).reshape(-1)
        at = kept[k] if kept is not None else None
        if at is not None:
            at -= int(np.isnan(c[:at]).sum())  # its position once the points not evaluated are left out
        c = c[~np.isnan(c)]
        if c.size == 0:
            continue
        first_best = int(np.argmax(c)) if at is None else at  # argmax returns the first occurrence: e*_k
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
    fwt = fwt_per_task(tensor.curves[:K], [tensor.kept_index(k) for k in range(K)])
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


def all_metrics(
    tensor: SuccessTensor,
    resources=None,
    *,
    replay: bool = False,
    data_sizes: Sequence | None = None,
    reference: Sequence[float] | None = None,
    single_task_auc: Sequence[float] | None = None,
    epsilon: float = 1.0,
) -> dict:
    """Every metric of docs/metrics.md for one run, from its saved results.

    The run is measured on the tasks learned so far (K as in ``libero_metrics``). Metrics whose inputs
    were not recorded are NaN and named in ``"not_recorded"`` with the reason.

    Args:
        tensor: the run's success tensor.
        resources: its ``RunResources`` (``resources.json``), or None when not recorded.
        replay: True when the learner's ``memory_bytes`` are stored samples (experience replay); they
            then count for SSS; otherwise they are kept with the model (Fisher, masks) and count for MS.
        data_sizes: per task a ``TaskDataSize`` of its training set (None where unknown); gives Mem(D)
            for SSS and the windows of one epoch for CE's one-pass cost.
        reference: per task r*_k, the success of a reference (multitask) run, for intransigence.
        single_task_auc: per task the ``curve_auc`` of a single-task run from scratch, for Continual
            World's forward transfer.
        epsilon: CE's scaling factor ε.
    Returns:
        A flat dict: the ``libero_metrics`` keys; ``A, BWT, REM, BWT_plus, FWT_prime, MS, SSS, CE``;
        ``CL_score, CL_score_W2, CL_score_W3`` (over the recorded criteria, ``CL_score_criteria``);
        ``R_per_task, F_per_task, R_final, F_final``; ``train_auc_per_task``; ``I_per_task, I``
        (with a reference); ``FT_per_task, FT`` (with single-task references); ``not_recorded``.
    """
    from libero_ll.evaluation import cl_metrics as cl

    out = libero_metrics(tensor)
    K = out["K"]
    R = np.asarray(tensor.matrix, dtype=np.float64)[:K, :K]
    missing: dict[str, str] = {}

    bwt = cl.backward_transfer(R)
    out.update(
        A=cl.accuracy(R),
        BWT=bwt,
        REM=cl.remembering(bwt),
        BWT_plus=cl.positive_backward_transfer(bwt),
        FWT_prime=cl.forward_transfer_zero_shot(R),
    )
    if np.isnan(out["FWT_prime"]):
        missing["FWT_prime"] = "no task was evaluated before it was learned"
    out.update(_resource_criteria(resources, K, replay, data_sizes, epsilon, missing))

    criteria = {c: out[c] for c in cl.CRITERIA}
    out["CL_score_criteria"] = [c for c in cl.CRITERIA if not np.isnan(criteria[c])]
    for name, weights in (("CL_score", "equal"), ("CL_score_W2", "W2"), ("CL_score_W3", "W3")):
        out[name] = cl.cl_score(criteria, weights, skip_missing=True)

    r_k, f_k = cl.average_success(R), cl.forgetting(R)
    out.update(
        R_per_task=r_k.tolist(),
        F_per_task=f_k.tolist(),
        R_final=float(r_k[-1]) if K else float("nan"),
        F_final=float(f_k[-1]) if K else float("nan"),
    )
    auc = np.array([cl.curve_auc(tensor.eval_epochs[k], tensor.curves[k]) for k in range(K)])
    out["train_auc_per_task"] = auc.tolist()
    if reference is not None:
        i_k = cl.intransigence(R, np.asarray(reference, dtype=np.float64)[:K])
        out.update(I_per_task=i_k.tolist(), I=_mean(i_k))
    else:
        out.update(I_per_task=[float("nan")] * K, I=float("nan"))
        missing["I"] = "no reference run given"
    if single_task_auc is not None:
        ft = cl.cw_forward_transfer(auc, np.asarray(single_task_auc, dtype=np.float64)[:K])
        out.update(FT_per_task=ft.tolist(), FT=_mean(ft))
    else:
        out.update(FT_per_task=[float("nan")] * K, FT=float("nan"))
        missing["FT"] = "no single-task reference runs given"
    out["not_recorded"] = missing
    return out


# Bytes per policy parameter (float32 weights).
PARAM_BYTES = 4


def _resource_criteria(resources, K: int, replay: bool, data_sizes, epsilon: float, missing: dict) -> dict:
    """MS, SSS and CE from the recorded resources; NaN (and a reason in ``missing``) when not recorded."""
    from libero_ll.evaluation import cl_metrics as cl

    nan = float("nan")
    if resources is None:
        for c in ("MS", "SSS", "CE"):
            missing[c] = "resources.json not recorded"
        return {"MS": nan, "SSS": nan, "CE": nan}

    def field(name: str) -> np.ndarray:
        return resources.array(name, K)

    params, memory = field("params"), field("memory_bytes")
    seen, macs = field("samples_seen"), field("train_macs")
    out = {}

    model_bytes = PARAM_BYTES * params + (0.0 if replay else memory)
    out["MS"] = cl.model_size_efficiency(model_bytes)
    if np.isnan(out["MS"]):
        missing["MS"] = "params or memory_bytes not recorded for every task"

    stored = memory if replay else np.zeros(K)
    sizes = list(data_sizes) if data_sizes is not None else [None] * K
    data_bytes = (
        sum(s.nbytes for s in sizes[:K]) if len(sizes) >= K and all(s is not None for s in sizes[:K]) else nan
    )
    if np.isnan(stored).any():
        out["SSS"] = nan
        missing["SSS"] = "memory_bytes not recorded for every task"
    elif K and not stored.any():
        out["SSS"] = 1.0  # nothing stored: no need to know the data's size
    else:
        out["SSS"] = cl.sample_storage_efficiency(stored, data_bytes)
        if np.isnan(out["SSS"]):
            missing["SSS"] = "the size of the training data is unknown (demo files not found)"

    windows = np.array([s.windows if s is not None else nan for s in sizes[:K]] + [nan] * (K - len(sizes)))
    with np.errstate(divide="ignore", invalid="ignore"):
        # Cost of one window (forward and backward) times the windows of one epoch of the task's own data.
        pass_ops = np.where(seen > 0, macs / seen * windows, nan)
    out["CE"] = cl.computational_efficiency(pass_ops, macs, epsilon) if K else nan
    if np.isnan(out["CE"]):
        missing["CE"] = "train_macs, samples_seen or the training data's size not recorded for every task"
    return out
