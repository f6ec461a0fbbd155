"""Continual-learning metrics beyond LIBERO's FWT/NBT/AUC, as pure functions of success rates and resources.

- the accuracy-matrix criteria of Díaz-Rodríguez et al. (cl-metrics-beyond-forgetting): A, BWT, REM,
  BWT+, FWT' (zero-shot success on future tasks), MS, SSS, CE, and their weighted CL_score and
  CL_stability;
- average success R_k, forgetting F_k and intransigence I_k (Chaudhry et al., as used in the StarCraft
  benchmark);
- Continual World's forward transfer against single-task reference runs.

R is the (K, K) success matrix: R[i, j] is the success on task j of the policy kept after learning task
i (0-based). NaN entries (not evaluated) are left out of every sum and of its count, so a task never
learned or a row not yet evaluated does not count; a metric with nothing left to average is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

# The seven criteria of the CL_score, in the order of the paper's weight vectors.
CRITERIA = ("A", "MS", "SSS", "CE", "REM", "BWT_plus", "FWT_prime")

# Weight configurations of the paper's appendix (Table 3): equal weights, W2 and W3.
WEIGHTS: dict[str, dict[str, float]] = {
    "equal": {c: 1.0 / len(CRITERIA) for c in CRITERIA},
    "W2": dict(zip(CRITERIA, (0.4, 0.05, 0.2, 0.1, 0.15, 0.05, 0.05))),
    "W3": dict(zip(CRITERIA, (0.4, 0.05, 0.2, 0.2, 0.05, 0.05, 0.05))),
}


def _square(matrix) -> np.ndarray:
    R = np.asarray(matrix, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError(f"success matrix must be (K, K), got shape {R.shape}")
    return R


def _nanmean(values) -> float:
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else math.nan


# --- accuracy-matrix criteria ---------------------------------------------------------------------------


def accuracy(matrix) -> float:
    """A = Σ_{i ≥ j} R[i, j] / (K(K+1)/2): mean success on the tasks learned so far, after every task.

    Args:
        matrix: (K, K) success fractions.
    Returns:
        A in [0, 1]; NaN when no entry on or below the diagonal was evaluated.
    """
    R = _square(matrix)
    return _nanmean(R[np.tril_indices(R.shape[0])])


def backward_transfer(matrix) -> float:
    """BWT = Σ_{i > j} (R[i, j] − R[j, j]) / (K(K−1)/2): change of success on earlier tasks.

    Negative values are forgetting. Pairs where R[i, j] or R[j, j] is NaN are left out.

    Returns:
        BWT in [−1, 1]; NaN when K = 1 or no pair was evaluated.
    """
    R = _square(matrix)
    i, j = np.tril_indices(R.shape[0], k=-1)
    return _nanmean(R[i, j] - R[j, j])


def remembering(bwt: float) -> float:
    """REM = 1 − |min(BWT, 0)|: 1 when nothing is forgotten (NaN in, NaN out)."""
    return math.nan if math.isnan(bwt) else 1.0 - abs(min(bwt, 0.0))


def positive_backward_transfer(bwt: float) -> float:
    """BWT⁺ = max(BWT, 0): improvement on earlier tasks (NaN in, NaN out)."""
    return math.nan if math.isnan(bwt) else max(bwt, 0.0)


def forward_transfer_zero_shot(matrix) -> float:
    """FWT' = Σ_{i < j} R[i, j] / (K(K−1)/2): zero-shot success on tasks not learned yet.

    This is the metrics paper's FWT; it needs future tasks evaluated after each task.

    Returns:
        FWT' in [0, 1]; NaN when no entry above the diagonal was evaluated (K = 1, or the run evaluated
        only past tasks).
    """
    R = _square(matrix)
    return _nanmean(R[np.triu_indices(R.shape[0], k=1)])


def model_size_efficiency(model_bytes: Sequence[float]) -> float:
    """MS = min(1, (1/K) Σ_i Mem(θ_1) / Mem(θ_i)): how little the model grows after the first task.

    Args:
        model_bytes: (K,) memory of the model kept after each task, bytes (parameters plus masks and
            buffers the learner keeps with them).
    Returns:
        MS in (0, 1]; NaN when any value is missing (NaN), zero, or there is none.
    """
    m = np.asarray(model_bytes, dtype=np.float64).reshape(-1)
    if m.size == 0 or np.isnan(m).any() or (m <= 0).any():
        return math.nan
    return float(min(1.0, np.mean(m[0] / m)))


def sample_storage_efficiency(memory_bytes: Sequence[float], data_bytes: float) -> float:
    """SSS = 1 − min(1, (1/K) Σ_i Mem(M_i) / Mem(D)): how little of the data seen is kept for replay.

    Args:
        memory_bytes: (K,) bytes of stored samples kept after each task, Mem(M_i).
        data_bytes: bytes of all training data of the run (the lifetime dataset D).
    Returns:
        SSS in [0, 1] (1: nothing stored); NaN when a value is missing or ``data_bytes`` is not positive.
    """
    m = np.asarray(memory_bytes, dtype=np.float64).reshape(-1)
    if m.size == 0 or np.isnan(m).any() or not data_bytes > 0:
        return math.nan
    return float(1.0 - min(1.0, np.mean(m / float(data_bytes))))


def computational_efficiency(
    pass_ops: Sequence[float], train_ops: Sequence[float], epsilon: float = 1.0
) -> float:
    """CE = min(1, (1/K) Σ_i ε · Ops↑↓(Tr_i) / Ops(Tr_i)): cost of one pass over the data / cost spent.

    Args:
        pass_ops: (K,) multiply-adds of one forward and backward pass over task i's training set.
        train_ops: (K,) multiply-adds actually spent learning task i.
        epsilon: scaling factor ε ≥ 1 (e.g. the epochs a task needs) that keeps CE away from 0.
    Returns:
        CE in [0, 1]; NaN when a value is missing or a training cost is not positive.
    """
    p = np.asarray(pass_ops, dtype=np.float64).reshape(-1)
    t = np.asarray(train_ops, dtype=np.float64).reshape(-1)
    if p.shape != t.shape:
        raise ValueError(f"pass_ops has {p.size} values, train_ops {t.size}")
    if p.size == 0 or np.isnan(p).any() or np.isnan(t).any() or (t <= 0).any():
        return math.nan
    return float(min(1.0, np.mean(float(epsilon) * p / t)))


def _weights(weights: str | Mapping[str, float]) -> dict[str, float]:
    if isinstance(weights, str):
        if weights not in WEIGHTS:
            raise ValueError(f"unknown weight configuration {weights!r}; known: {', '.join(WEIGHTS)}")
        return dict(WEIGHTS[weights])
    w = {str(k): float(v) for k, v in weights.items()}
    unknown = sorted(set(w) - set(CRITERIA))
    if unknown:
        raise ValueError(f"unknown criteria {unknown} in weights; known: {', '.join(CRITERIA)}")
    if any(not 0.0 <= v <= 1.0 for v in w.values()) or not math.isclose(sum(w.values()), 1.0, abs_tol=1e-9):
        raise ValueError(f"weights must lie in [0, 1] and sum to 1, got {w}")
    return w


def _weighted(values: Mapping[str, float], weights: dict[str, float], skip_missing: bool) -> float:
    used = {c: w for c, w in weights.items() if w > 0}
    missing = [c for c in used if math.isnan(float(values.get(c, math.nan)))]
    if missing and not skip_missing:
        return math.nan
    used = {c: w for c, w in used.items() if c not in missing}
    total = sum(used.values())
    if total == 0:
        return math.nan
    # Renormalising keeps the score a weighted mean in [0, 1] when some criteria were not recorded.
    return sum(w * float(values[c]) for c, w in used.items()) / total


def cl_score(
    criteria: Mapping[str, float], weights: str | Mapping[str, float] = "equal", skip_missing: bool = False
) -> float:
    """CL_score = Σ_c w_c · c over the criteria (higher is better).

    Args:
        criteria: criterion name (see ``CRITERIA``) → value in [0, 1], each averaged over runs.
        weights: "equal", "W2", "W3" (the paper's configurations) or a name → weight mapping summing to 1;
            criteria it leaves out weigh 0.
        skip_missing: leave out criteria that are NaN (not recorded) and renormalise the remaining
            weights; otherwise a missing weighted criterion makes the score NaN.
    """
    return _weighted(criteria, _weights(weights), skip_missing)


def cl_stability(
    runs: Sequence[Mapping[str, float]],
    weights: str | Mapping[str, float] = "equal",
    skip_missing: bool = False,
    ddof: int = 1,
) -> float:
    """CL_stability = 1 − Σ_c w_c · std(c), the standard deviation of each criterion over runs (seeds).

    Args:
        runs: one criteria mapping per run.
        weights, skip_missing: as for ``cl_score``.
        ddof: delta degrees of freedom of the standard deviation (1: sample deviation).
    Returns:
        The stability; NaN with too few runs for a deviation (fewer than ``ddof + 1``).
    """
    w = _weights(weights)
    if len(runs) <= ddof:
        return math.nan
    stds = {}
    for c in CRITERIA:
        values = np.array([float(r.get(c, math.nan)) for r in runs])
        values = values[~np.isnan(values)]
        stds[c] = float(values.std(ddof=ddof)) if values.size > ddof else math.nan
    deviation = _weighted(stds, w, skip_missing)
    return 1.0 - deviation if not math.isnan(deviation) else math.nan


# --- average success, forgetting, intransigence ---------------------------------------------------------


def average_success(matrix) -> np.ndarray:
    """R_k = (1/k) Σ_{j ≤ k} r[k, j]: mean success on the tasks learned so far, after each task.

    Returns:
        (K,) array; NaN for a row with no evaluated entry.
    """
    R = _square(matrix)
    return np.array([_nanmean(R[k, : k + 1]) for k in range(R.shape[0])])


def forgetting(matrix) -> np.ndarray:
    """F_k = mean_{j < k} f_j^k with f_j^k = max_{l < k} r[l, j] − r[k, j] (positive: forgotten).

    The maximum runs over the rows before k that evaluated task j (its own row l = j included).

    Returns:
        (K,) array in [−1, 1]; NaN for the first task and where no pair was evaluated.
    """
    R = _square(matrix)
    K = R.shape[0]
    out = np.full(K, np.nan)
    for k in range(1, K):
        drops = []
        for j in range(k):
            earlier = R[:k, j]
            earlier = earlier[~np.isnan(earlier)]
            if earlier.size and not np.isnan(R[k, j]):
                drops.append(earlier.max() - R[k, j])
        out[k] = _nanmean(drops)
    return out


def intransigence(matrix, reference: Sequence[float]) -> np.ndarray:
    """I_k = r*_k − r[k, k]: how much less the learner reaches on task k than a reference (multitask) run.

    Args:
        matrix: (K, K) success fractions of the run.
        reference: (K,) success r*_k of the reference on the same tasks (NaN where it has none).
    Returns:
        (K,) array in [−1, 1] (lower is better); NaN where either value is missing.
    """
    R = _square(matrix)
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    if ref.shape != (R.shape[0],):
        raise ValueError(f"reference has {ref.size} values for a {R.shape[0]}x{R.shape[0]} matrix")
    return ref - np.diag(R)


def reference_success(ref_names: Sequence[str], ref_matrix, task_names: Sequence[str]) -> np.ndarray:
    """r*: a reference run's success on each named task: the last evaluated entry of that task's column.

    For a multitask run this is the final policy's success; tasks are matched by name, so the reference
    may hold them in another order.

    Args:
        ref_names: the reference run's task names, in its order.
        ref_matrix: its (K', K') success matrix.
        task_names: the tasks wanted.
    Returns:
        (len(task_names),) array; NaN for a task the reference does not have or never evaluated.
    """
    R = _square(ref_matrix)
    where = {n: i for i, n in enumerate(ref_names)}
    out = np.full(len(task_names), np.nan)
    for k, name in enumerate(task_names):
        if name in where:
            column = R[:, where[name]]
            done = np.nonzero(~np.isnan(column))[0]
            if done.size:
                out[k] = column[done[-1]]
    return out


# --- Continual World forward transfer -------------------------------------------------------------------


def curve_auc(epochs: Sequence[float], curve: Sequence[float]) -> float:
    """Normalised area under a success curve while its task is trained (trapezoid rule / epoch span).

    Args:
        epochs: evaluation epochs, increasing.
        curve: success fractions at those epochs; NaN points are left out.
    Returns:
        The area divided by the span of the evaluated epochs, in [0, 1]; the value itself for a single
        point; NaN for none.
    """
    e = np.asarray(epochs, dtype=np.float64).reshape(-1)
    c = np.asarray(curve, dtype=np.float64).reshape(-1)
    if e.shape != c.shape:
        raise ValueError(f"{e.size} epochs for {c.size} curve values")
    keep = ~np.isnan(c)
    e, c = e[keep], c[keep]
    if c.size == 0:
        return math.nan
    if c.size == 1 or e[-1] == e[0]:
        return float(c.mean())
    area = float(np.sum((c[1:] + c[:-1]) * np.diff(e)) / 2.0)
    return area / float(e[-1] - e[0])


def cw_forward_transfer(auc: Sequence[float], auc_ref: Sequence[float]) -> np.ndarray:
    """Continual World's forward transfer FT_k = (AUC_k − AUC_k^ref) / (1 − AUC_k^ref).

    Args:
        auc: (K,) ``curve_auc`` of each task while the lifelong run trained it.
        auc_ref: (K,) the same for a single-task run trained from scratch on that task.
    Returns:
        (K,) array, at most 1 (positive: learning earlier tasks helped); NaN where a value is missing or
        the reference already reached AUC 1 (nothing left to gain).
    """
    a = np.asarray(auc, dtype=np.float64).reshape(-1)
    r = np.asarray(auc_ref, dtype=np.float64).reshape(-1)
    if a.shape != r.shape:
        raise ValueError(f"auc has {a.size} values, auc_ref {r.size}")
    out = np.full(a.shape, np.nan)
    ok = ~np.isnan(a) & ~np.isnan(r) & (r < 1.0)
    out[ok] = (a[ok] - r[ok]) / (1.0 - r[ok])
    return out
