"""Statistics over seeds and runs: mean, standard error, bootstrap confidence intervals, Welch's t-test.

Plain numpy and the standard library: the Student t distribution is computed here from the regularised
incomplete beta function, so no statistics package is needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _finite(values: Sequence[float]) -> np.ndarray:
    """The values as a 1-D float64 array with NaN left out (a seed that did not record a metric)."""
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    return a[~np.isnan(a)]


def mean(values: Sequence[float]) -> float:
    """Mean of the non-NaN values; NaN when there are none."""
    a = _finite(values)
    return float(a.mean()) if a.size else math.nan


def std(values: Sequence[float], ddof: int = 1) -> float:
    """Standard deviation of the non-NaN values (sample deviation, ddof=1, by default).

    NaN when fewer than ``ddof + 1`` values are left.
    """
    a = _finite(values)
    return float(a.std(ddof=ddof)) if a.size > ddof else math.nan


def sem(values: Sequence[float]) -> float:
    """Standard error of the mean: sample standard deviation / sqrt(n), over the non-NaN values.

    NaN with fewer than two values (one seed says nothing about the spread).
    """
    a = _finite(values)
    return float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan


def bootstrap_ci(
    values: Sequence[float], confidence: float = 0.9, n_resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Non-parametric bootstrap confidence interval of the mean (percentile method).

    Resamples the non-NaN values with replacement ``n_resamples`` times and takes the
    (1 − confidence)/2 and (1 + confidence)/2 quantiles of the resampled means.

    Args:
        values: one value per seed or run.
        confidence: coverage of the interval in (0, 1); 0.9 gives a 90% interval.
        n_resamples: number of bootstrap resamples.
        seed: seeds the resampling, so a report is reproducible.
    Returns:
        (low, high); (NaN, NaN) when there is no value; (v, v) for a single value v.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be 1 or more, got {n_resamples}")
    a = _finite(values)
    if a.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = a[rng.integers(a.size, size=(int(n_resamples), a.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Summary:
    """A metric over seeds: how many values, their mean, standard error and bootstrap interval."""

    n: int
    mean: float
    sem: float
    ci_low: float
    ci_high: float
    confidence: float


def summarize(values: Sequence[float], confidence: float = 0.9, seed: int = 0) -> Summary:
    """Mean, standard error and bootstrap interval of the non-NaN values (see ``bootstrap_ci``)."""
    low, high = bootstrap_ci(values, confidence=confidence, seed=seed)
    return Summary(int(_finite(values).size), mean(values), sem(values), low, high, confidence)


# --- Student's t distribution ------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1]."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be in [0, 1], got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t distribution with ``df`` (> 0, may be fractional) degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@dataclass(frozen=True)
class WelchResult:
    """Welch's two-tailed t-test: the statistic, Welch–Satterthwaite degrees of freedom and p-value."""

    t: float
    df: float
    p: float

    def significant(self, alpha: float = 0.05) -> bool:
        """True when p < alpha (False when the test could not be made, p NaN)."""
        return bool(self.p < alpha)


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Welch's two-tailed t-test of equal means with unequal variances.

    Args:
        a, b: the values of two methods (one per seed); NaN values are left out.
    Returns:
        WelchResult; all NaN when either side has fewer than two values. When both variances are zero
        the test is degenerate: p is 1 for equal means and 0 otherwise.
    """
    x, y = _finite(a), _finite(b)
    if x.size < 2 or y.size < 2:
        return WelchResult(math.nan, math.nan, math.nan)
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    diff = float(x.mean() - y.mean())
    if vx + vy == 0.0:
        same = math.isclose(float(x.mean()), float(y.mean()), rel_tol=0.0, abs_tol=1e-12)
        return WelchResult(0.0 if same else math.copysign(math.inf, diff), math.nan, 1.0 if same else 0.0)
    t = diff / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    p = 2.0 * t_cdf(-abs(t), df)
    return WelchResult(float(t), float(df), float(min(1.0, p)))
