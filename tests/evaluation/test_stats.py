"""Statistics over seeds: standard error, bootstrap intervals, the t distribution and Welch's t-test."""

import math

import numpy as np
import pytest

from libero_ll.evaluation.stats import bootstrap_ci, mean, sem, summarize, t_cdf, welch_t_test

NAN = float("nan")


def test_mean_and_standard_error_skip_nan():
    assert mean([0.1, 0.2, 0.6, NAN]) == pytest.approx(0.3)
    # Sample deviation of (.1, .2, .6) is sqrt(0.07); s.e. = sqrt(0.07 / 3).
    assert sem([0.1, 0.2, 0.6]) == pytest.approx(math.sqrt(0.07 / 3))
    assert math.isnan(sem([0.5])) and math.isnan(mean([]))


def test_t_distribution_against_table_values():
    assert t_cdf(0.0, 7) == 0.5
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi
    assert t_cdf(2.228, 10) == pytest.approx(0.975, abs=1e-4)  # two-tailed 5% critical value
    assert t_cdf(1.812, 10) == pytest.approx(0.95, abs=1e-4)
    assert t_cdf(-4.303, 2) == pytest.approx(0.025, abs=1e-4)
    assert t_cdf(1.96, 1e6) == pytest.approx(0.975, abs=1e-4)  # tends to the normal
    assert t_cdf(math.inf, 3) == 1.0


def test_welch_by_hand():
    a, b = [0.2, 0.4, 0.6], [0.5, 0.7, 0.9, 1.1]
    # Means .4 and .8; variances .04 and 0.0666...; s.e.^2 .04/3 + .0667/4 = 0.03.
    r = welch_t_test(a, b)
    assert r.t == pytest.approx(-0.4 / math.sqrt(0.03))
    vx, vy = 0.04 / 3, (0.2 / 3) / 4
    assert r.df == pytest.approx((vx + vy) ** 2 / (vx**2 / 2 + vy**2 / 3))
    assert r.p == pytest.approx(2 * t_cdf(-abs(r.t), r.df))
    assert not r.significant()


def test_welch_matches_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(5):
        a, b = rng.normal(0, 1, 3), rng.normal(1.5, 2, 5)
        ours, ref = welch_t_test(a, b), stats.ttest_ind(a, b, equal_var=False)
        assert ours.t == pytest.approx(ref.statistic)
        assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)


def test_welch_edge_cases():
    assert math.isnan(welch_t_test([0.5], [0.1, 0.2]).p)  # one seed: no test
    assert welch_t_test([0.5, 0.5], [0.5, 0.5]).p == 1.0
    assert welch_t_test([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]).p == 0.0
    assert welch_t_test([0.9, 0.91, 0.92], [0.1, 0.12, 0.11]).significant()


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = [0.1, 0.2, 0.6, 0.4, 0.3]
    low, high = bootstrap_ci(values, seed=1)
    assert (low, high) == bootstrap_ci(values, seed=1)
    assert min(values) <= low < mean(values) < high <= max(values)
    wide = bootstrap_ci(values, confidence=0.99, seed=1)
    assert wide[0] <= low and wide[1] >= high
    assert bootstrap_ci([0.4]) == (0.4, 0.4)
    assert all(math.isnan(v) for v in bootstrap_ci([NAN]))
    with pytest.raises(ValueError):
        bootstrap_ci(values, confidence=1.5)
    with pytest.raises(ValueError, match="n_resamples must be 1 or more, got 0"):
        bootstrap_ci(values, n_resamples=0)


def test_summarize():
    s = summarize([0.1, 0.2, 0.6], confidence=0.9, seed=0)
    assert s.n == 3 and s.mean == pytest.approx(0.3) and s.sem == pytest.approx(sem([0.1, 0.2, 0.6]))
    assert (s.ci_low, s.ci_high) == bootstrap_ci([0.1, 0.2, 0.6], 0.9, seed=0)
