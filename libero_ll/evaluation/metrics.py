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


def metric_text(value: float, spec: str = ".3f", missing: str = "n/a") -> str:
    """A metric as the commands print it: formatted with `spec`, `missing` for NaN (nothing to average, e.g. NBT
    of one task), and no minus on a value that rounds to zero ("-0.000" is "0.000", widths kept)."""
    if value != value:
        return missing
    text = format(value, spec)
    if float(text) == 0:
        text = text.replace("-", " " if text.startswith(" ") else "", 1)
    return text


def libero_metrics(tensor: SuccessTensor) -> dict:
    """FWT, NBT and AUC of a run (LIBERO paper, eq. 3), from its success tensor.

    A partial run is measured on the tasks learned so far: K is one past the last task whose stage has
    ended (its own success after learning it, c[k, k], is recorded), and the matrix is cut to its first K
    rows and columns; the task being learned when the run stopped is left out, its curve so far (its epoch-0
    point at least) being no measure of it. A task inside that range that was never learned (no evaluated
    curve point) gets NaN for all three metrics and is left out of the means; so do NaN (not evaluated)
    entries, as described in the per-task functions.

    Args:
        tensor: the run's success tensor.
    Returns:
        ``{"fwt", "nbt", "auc"}``: means over tasks as floats (NBT over all but the last task, so NaN
        when K = 1; NaN when nothing is learned); ``{"fwt_per_task", "nbt_per_task", "auc_per_task"}``:
        lists of K floats; ``"K"``: the number of tasks measured.
    """
    learned = [k for k, c in enumerate(tensor.curves) if np.any(~np.isnan(np.asarray(c, dtype=np.float64)))]
    full = np.asarray(tensor.matrix, dtype=np.float64)
    ended = [k for k in learned if not np.isnan(full[k, k])]
    K = ended[-1] + 1 if ended else 0
    matrix = full[:K, :K]
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
    reference_tasks: Sequence[str] | None = None,
) -> dict:
    """Every metric of docs/metrics.md for one run, from its saved results.

    The run is measured on the tasks learned so far (K as in ``libero_metrics``). A metric that is NaN
    ("n/a") is named in ``"not_recorded"`` with the reason: its inputs were not recorded, or what was recorded
    leaves it undefined (a reference reaching AUC 1, a resource recorded as 0 that the formula divides by).
    A mean over tasks that leaves some of them out for want of a reference value (I, FT) is named in
    ``"partial"`` with the tasks left out and why. A resource recorded as 0 is a measured value, never
    "not recorded".

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
        reference_tasks: the reference run's task names, to tell in the note on I a task it lacks from
            one it never evaluated (without them, both are "no success recorded").
    Returns:
        A flat dict: the ``libero_metrics`` keys; ``A, BWT, REM, BWT_plus, FWT_prime, MS, SSS, CE``;
        ``CL_score, CL_score_W2, CL_score_W3`` (over the recorded criteria, ``CL_score_criteria``);
        ``R_per_task, F_per_task, R_final, F_final``; ``train_auc_per_task``; ``I_per_task, I``
        (with a reference); ``FT_per_task, FT`` (with single-task references); ``not_recorded``
        (metric → why it is NaN); ``partial`` (metric → the tasks its mean leaves out, and why).
    """
    from libero_ll.evaluation import cl_metrics as cl

    out = libero_metrics(tensor)
    K = out["K"]
    names = [str(n) for n in tensor.task_names[:K]]
    R = np.asarray(tensor.matrix, dtype=np.float64)[:K, :K]
    missing: dict[str, str] = {}
    partial: dict[str, str] = {}

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
    out.update(_resource_criteria(resources, names, replay, data_sizes, epsilon, missing))

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
        r_star = np.asarray(reference, dtype=np.float64)[:K]
        i_k = cl.intransigence(R, r_star)
        out.update(I_per_task=i_k.tolist(), I=_mean(i_k))
        # Tasks the run has its own success on, but not the reference: left out of I's mean.
        gap = np.isnan(r_star) & ~np.isnan(np.diag(R))
        if reference_tasks is None:
            why = [(gap, "the reference has no success for task(s)")]
        else:
            known = {str(n) for n in reference_tasks}
            lacks = gap & np.array([n not in known for n in names], dtype=bool)
            why = [(lacks, "the reference run lacks task(s)"),
                   (gap & ~lacks, "the reference run never evaluated task(s)")]
        why.append((np.isnan(np.diag(R)), "the run has no success of its own just after learning task(s)"))
        reasons = [f"{text} {_names(names, mask)}" for mask, text in why if mask.any()]
        _explain("I", i_k, reasons, "no task has both its own success R[k, k] and the reference's", missing,
                 partial)
    else:
        out.update(I_per_task=[float("nan")] * K, I=float("nan"))
        missing["I"] = "no reference run given"
    if single_task_auc is not None:
        auc_ref = np.asarray(single_task_auc, dtype=np.float64)[:K]
        ft = cl.cw_forward_transfer(auc, auc_ref)
        out.update(FT_per_task=ft.tolist(), FT=_mean(ft))
        learned = ~np.isnan(auc)
        # FT_k's denominator 1 − AUC_ref is 0 where the reference reaches AUC 1 (cw_forward_transfer: NaN).
        why = [
            (learned & (auc_ref >= 1.0),
             "the reference reaches AUC 1 on task(s) {}, so FT is undefined there (1 − AUC_ref is 0)"),
            (learned & np.isnan(auc_ref), "no single-task run learned task(s) {} first"),
            (~learned, "the run recorded no training curve of task(s) {}"),
        ]
        reasons = [text.format(_names(names, mask)) for mask, text in why if mask.any()]
        _explain("FT", ft, reasons, "no task has both a training curve and a single-task reference", missing,
                 partial)
    else:
        out.update(FT_per_task=[float("nan")] * K, FT=float("nan"))
        missing["FT"] = "no single-task reference runs given"
    _explain_the_rest(out, K, missing)
    out["not_recorded"] = missing
    out["partial"] = partial
    return out


# The metrics of one number each that `_explain_the_rest` gives a reason for when they are NaN.
_SCALARS = ("fwt", "nbt", "auc", "A", "BWT", "REM", "BWT_plus", "FWT_prime", "R_final", "F_final", "CL_score",
            "CL_score_W2", "CL_score_W3")
# Those that compare a task's success after later tasks with an earlier one: undefined with one task learned.
_NEED_TWO = ("nbt", "BWT", "REM", "BWT_plus", "F_final")


def _explain_the_rest(out: dict, K: int, missing: dict) -> None:
    """Give each NaN metric of _SCALARS not yet explained in ``missing`` its reason (docs/metrics.md: every
    n/a says why): nothing learned yet, one task learned where a metric needs two, else the evaluations it
    needs were not made."""
    for key in _SCALARS:
        if key in missing or not np.isnan(out[key]):
            continue
        if K == 0:
            missing[key] = "no task's stage has ended yet: nothing learned to measure"
        elif K == 1 and key in _NEED_TWO:
            missing[key] = "it compares tasks learned earlier with later success: needs two or more tasks learned"
        elif key.startswith("CL_score"):
            missing[key] = "none of its criteria could be measured"
        else:
            missing[key] = "the evaluations it needs were not made (not evaluated entries of the success matrix)"


def _names(names: Sequence[str], mask: np.ndarray) -> str:
    """The names where ``mask`` holds, comma-separated."""
    return ", ".join(n for n, m in zip(names, mask) if m)


def _explain(metric: str, per_task: np.ndarray, reasons: list[str], fallback: str, missing: dict,
             partial: dict) -> None:
    """Say why a mean over tasks leaves some out: in ``missing`` when nothing is left (the metric is NaN),
    else in ``partial`` with how many tasks the mean covers."""
    per_task = np.asarray(per_task, dtype=np.float64)
    used = int((~np.isnan(per_task)).sum())
    if used == 0:
        missing[metric] = "; ".join(reasons) or fallback
    elif reasons:
        partial[metric] = f"the mean over {used} of {per_task.size} tasks: " + "; ".join(reasons)


# Bytes per policy parameter (float32 weights).
PARAM_BYTES = 4


def _unrecorded(fields: dict[str, np.ndarray], names: Sequence[str]) -> str:
    """Which of ``fields`` (name → per-task array, NaN where not recorded) miss which tasks; "" if none."""
    gaps = {f: np.isnan(a) for f, a in fields.items()}
    return "; ".join(f"{f} not recorded for task(s) {_names(names, g)}" for f, g in gaps.items() if g.any())


def _resource_criteria(resources, names: Sequence[str], replay: bool, data_sizes, epsilon: float,
                       missing: dict) -> dict:
    """MS, SSS and CE from the recorded resources; NaN, with the reason in ``missing``, when a field they
    need was not recorded (a missing file or field), or when a value recorded as 0 leaves them undefined
    (they would divide by it). A recorded 0 is otherwise used as the value it is."""
    from libero_ll.evaluation import cl_metrics as cl

    nan = float("nan")
    K = len(names)
    if resources is None:
        for c in ("MS", "SSS", "CE"):
            missing[c] = "resources.json not recorded"
        return {"MS": nan, "SSS": nan, "CE": nan}
    if K == 0:
        for c in ("MS", "SSS", "CE"):
            missing[c] = "no task learned yet"
        return {"MS": nan, "SSS": nan, "CE": nan}

    def field(name: str) -> np.ndarray:
        return resources.array(name, K)

    params, memory = field("params"), field("memory_bytes")
    seen, macs = field("samples_seen"), field("train_macs")
    out = {}

    # MS: parameters, plus the memory a learner keeps with the model (a replay memory counts for SSS).
    model_bytes = PARAM_BYTES * params + (0.0 if replay else memory)
    why = _unrecorded({"params": params} if replay else {"params": params, "memory_bytes": memory}, names)
    empty = ~np.isnan(model_bytes) & (model_bytes <= 0)
    if why:
        out["MS"], missing["MS"] = nan, why
    elif empty.any():
        recorded = "params" if replay else "params and memory_bytes"
        out["MS"] = nan
        missing["MS"] = (
            f"the model is 0 bytes after task(s) {_names(names, empty)} ({recorded} recorded as 0), so "
            "Mem(θ_1)/Mem(θ_i) is undefined"
        )
    else:
        out["MS"] = cl.model_size_efficiency(model_bytes)

    # SSS: the stored samples (0 for a learner whose memory is not samples) against the run's training data.
    stored = memory if replay else np.zeros(K)
    sizes = list(data_sizes)[:K] if data_sizes is not None else []
    sizes += [None] * (K - len(sizes))
    unknown = np.array([s is None for s in sizes], dtype=bool)
    data_bytes = float(sum(s.nbytes for s in sizes)) if not unknown.any() else nan
    why = _unrecorded({"memory_bytes": memory}, names) if replay else ""
    if why:
        out["SSS"], missing["SSS"] = nan, why
    elif not stored.any():
        out["SSS"] = 1.0  # nothing stored (memory_bytes 0, or not samples): no need to know the data's size
    elif unknown.any():
        out["SSS"] = nan
        missing["SSS"] = (
            f"the size of the training data is unknown for task(s) {_names(names, unknown)} (not recorded, "
            "and demo files not found)"
        )
    elif data_bytes <= 0:
        out["SSS"] = nan
        missing["SSS"] = (
            "the training data is 0 bytes (data_bytes recorded as 0) while the learner stores samples, so "
            "Mem(M_i)/Mem(D) is undefined"
        )
    else:
        out["SSS"] = cl.sample_storage_efficiency(stored, data_bytes)

    # CE: one pass over a task's own windows, (train_macs / samples_seen) × data_windows, against train_macs.
    windows = np.array([s.windows if s is not None else nan for s in sizes])
    why = [_unrecorded({"train_macs": macs, "samples_seen": seen}, names)]
    if unknown.any():
        why.append(f"the training data's size (data_windows) is unknown for task(s) {_names(names, unknown)} "
                   "(not recorded, and demo files not found)")
    why = "; ".join(w for w in why if w)
    no_seen, no_macs = seen <= 0, macs <= 0
    if why:
        out["CE"], missing["CE"] = nan, why
    elif (no_seen | no_macs).any():
        parts = [
            f"task(s) {_names(names, mask)} {what}"
            for mask, what in (
                (no_seen & no_macs, "trained on no window (samples_seen 0, train_macs 0): Ops(Tr_i) is 0"),
                (~no_seen & no_macs, "counted no multiply-add (train_macs 0): Ops(Tr_i) is 0"),
                (no_seen & ~no_macs,
                 "recorded samples_seen 0 with train_macs above 0: the cost of one window is unknown"),
            )
            if mask.any()
        ]
        out["CE"] = nan
        missing["CE"] = "; ".join(parts) + ", so Ops↑↓(Tr_i)/Ops(Tr_i) and CE are undefined"
    else:
        # Cost of one window (forward and backward) times the windows of one epoch of the task's own data.
        out["CE"] = cl.computational_efficiency(macs / seen * windows, macs, epsilon)
    return out
