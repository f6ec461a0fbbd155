"""The accuracy-matrix criteria, CL_score, forgetting, intransigence and Continual World's forward transfer,
against values worked out by hand (including K = 1, a task never learned and all-zero success) and
against the tables of the metrics paper."""

import math

import numpy as np
import pytest

from libero_ll.evaluation import cl_metrics as cl

NAN = float("nan")

MATRIX = np.array(
    [
        [0.8, 0.1, 0.0],
        [0.5, 0.6, 0.2],
        [0.2, 0.4, 1.0],
    ]
)


def test_accuracy_matrix_family_by_hand():
    # A: the six entries on and below the diagonal, 3.5 / 6.
    assert cl.accuracy(MATRIX) == pytest.approx(3.5 / 6)
    # BWT: ((.5 - .8) + (.2 - .8) + (.4 - .6)) / 3.
    bwt = cl.backward_transfer(MATRIX)
    assert bwt == pytest.approx(-1.1 / 3)
    assert cl.remembering(bwt) == pytest.approx(1 - 1.1 / 3)
    assert cl.positive_backward_transfer(bwt) == 0.0
    # FWT': the three entries above the diagonal, (.1 + 0 + .2) / 3.
    assert cl.forward_transfer_zero_shot(MATRIX) == pytest.approx(0.1)


def test_positive_backward_transfer_and_full_remembering():
    R = np.array([[0.2, NAN], [0.6, 0.5]])
    bwt = cl.backward_transfer(R)
    assert bwt == pytest.approx(0.4)
    assert cl.remembering(bwt) == 1.0 and cl.positive_backward_transfer(bwt) == pytest.approx(0.4)


def test_single_task():
    R = np.array([[0.7]])
    assert cl.accuracy(R) == pytest.approx(0.7)
    assert math.isnan(cl.backward_transfer(R))
    assert math.isnan(cl.remembering(cl.backward_transfer(R)))
    assert math.isnan(cl.forward_transfer_zero_shot(R))
    np.testing.assert_allclose(cl.average_success(R), [0.7])
    assert np.isnan(cl.forgetting(R)).all()


def test_all_zero_success():
    R = np.array([[0.0, NAN], [0.0, 0.0]])
    assert cl.accuracy(R) == 0.0
    assert cl.backward_transfer(R) == 0.0
    assert cl.remembering(0.0) == 1.0 and cl.positive_backward_transfer(0.0) == 0.0
    assert math.isnan(cl.forward_transfer_zero_shot(R))  # only past tasks were evaluated
    np.testing.assert_allclose(cl.average_success(R), [0.0, 0.0])
    assert cl.forgetting(R)[1] == 0.0


def test_task_never_learned_is_left_out():
    R = np.array([[0.8, NAN, NAN], [NAN, NAN, NAN], [0.4, NAN, 1.0]])
    assert cl.accuracy(R) == pytest.approx((0.8 + 0.4 + 1.0) / 3)
    assert cl.backward_transfer(R) == pytest.approx(0.4 - 0.8)
    r = cl.average_success(R)
    assert r[0] == pytest.approx(0.8) and math.isnan(r[1]) and r[2] == pytest.approx(0.7)
    f = cl.forgetting(R)
    assert math.isnan(f[0]) and math.isnan(f[1]) and f[2] == pytest.approx(0.4)


def test_average_success_and_forgetting_by_hand():
    np.testing.assert_allclose(cl.average_success(MATRIX), [0.8, 0.55, 1.6 / 3])
    f = cl.forgetting(MATRIX)
    assert math.isnan(f[0])
    # F_1 = max(.8) - .5; F_2 = mean(max(.8, .5) - .2, max(.1, .6) - .4) = mean(.6, .2).
    np.testing.assert_allclose(f[1:], [0.3, 0.4])


def test_intransigence_against_a_reference():
    np.testing.assert_allclose(cl.intransigence(MATRIX, [0.9, 0.5, 1.0]), [0.1, -0.1, 0.0])
    with pytest.raises(ValueError):
        cl.intransigence(MATRIX, [0.9, 0.5])


def test_reference_success_matches_tasks_by_name_and_takes_the_last_evaluation():
    ref = np.array([[0.3, NAN], [0.2, 0.9]])
    got = cl.reference_success(["b", "a"], ref, ["a", "b", "c"])
    assert got[0] == pytest.approx(0.9) and got[1] == pytest.approx(0.2) and math.isnan(got[2])


def test_resource_criteria_by_hand():
    assert cl.model_size_efficiency([100, 100, 200]) == pytest.approx((1 + 1 + 0.5) / 3)
    assert cl.model_size_efficiency([100, 50]) == 1.0  # a shrinking model is capped at 1
    assert math.isnan(cl.model_size_efficiency([100, NAN]))
    assert cl.sample_storage_efficiency([0, 50, 100], 200) == pytest.approx(1 - 0.25)
    assert cl.sample_storage_efficiency([0, 0], 200) == 1.0
    assert cl.sample_storage_efficiency([400, 400], 200) == 0.0
    assert math.isnan(cl.sample_storage_efficiency([10], NAN))
    assert cl.computational_efficiency([10, 10], [100, 50]) == pytest.approx(0.15)
    assert cl.computational_efficiency([10, 10], [100, 50], epsilon=10) == 1.0
    assert math.isnan(cl.computational_efficiency([10, NAN], [100, 50]))


# Table 1 of the metrics paper: A, REM, BWT+, FWT, MS, SSS, CE, then CL_score (equal weights); and
# Table 3: CL_score with the weights W2 and W3.
PAPER_CRITERIA = ("A", "REM", "BWT_plus", "FWT_prime", "MS", "SSS", "CE")
PAPER = {
    "Naive": ((0.3825, 0.6664, 0.0000, 0.1000, 1.0000, 1.0000, 0.4492), 0.5140, 0.5529, 0.5312),
    "Cumulative": ((0.7225, 1.0000, 0.0673, 0.1000, 1.0000, 0.5500, 0.1496), 0.5128, 0.6223, 0.5373),
    "EWC": ((0.5940, 0.9821, 0.0000, 0.1000, 0.4000, 1.0000, 0.3495), 0.4894, 0.6449, 0.5816),
    "LWF": ((0.5278, 0.9667, 0.0000, 0.1000, 1.0000, 1.0000, 0.4429), 0.5768, 0.6554, 0.6030),
    "SI": ((0.5795, 0.9620, 0.0000, 0.1000, 0.4000, 1.0000, 0.3613), 0.4861, 0.6372, 0.5772),
}


@pytest.mark.parametrize("strategy", list(PAPER))
def test_cl_score_reproduces_the_paper(strategy):
    values, equal, w2, w3 = PAPER[strategy]
    criteria = dict(zip(PAPER_CRITERIA, values))
    assert round(cl.cl_score(criteria), 4) == equal
    assert round(cl.cl_score(criteria, "W2"), 4) == w2
    assert round(cl.cl_score(criteria, "W3"), 4) == w3


def test_cl_score_weights_and_missing_criteria():
    criteria = {c: 0.5 for c in cl.CRITERIA}
    assert cl.cl_score(criteria, {"A": 1.0}) == 0.5
    criteria["CE"] = NAN
    assert math.isnan(cl.cl_score(criteria))
    # Renormalised over the six recorded criteria, all 0.5.
    assert cl.cl_score(criteria, skip_missing=True) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="sum to 1"):
        cl.cl_score(criteria, {"A": 0.5})
    with pytest.raises(ValueError, match="unknown criteria"):
        cl.cl_score(criteria, {"speed": 1.0})
    with pytest.raises(ValueError, match="W2"):
        cl.cl_score(criteria, "W9")


def test_cl_stability_over_seeds():
    base = {c: 0.5 for c in cl.CRITERIA}
    runs = [dict(base, A=0.4), dict(base, A=0.6)]
    # Only A varies: sample standard deviation sqrt(0.02), weighted 1/7.
    assert cl.cl_stability(runs) == pytest.approx(1 - math.sqrt(0.02) / 7)
    assert cl.cl_stability(runs, "W2") == pytest.approx(1 - 0.4 * math.sqrt(0.02))
    assert cl.cl_stability([dict(base), dict(base)]) == 1.0
    assert math.isnan(cl.cl_stability([base]))  # one seed has no spread


def test_curve_auc_and_continual_world_forward_transfer():
    assert cl.curve_auc([0, 5, 10], [0.0, 0.5, 1.0]) == pytest.approx(0.5)
    assert cl.curve_auc([0, 5, 10], [0.0, NAN, 1.0]) == pytest.approx(0.5)
    assert cl.curve_auc([0, 5, 10], [0.0, 1.0, 1.0]) == pytest.approx(0.75)
    assert cl.curve_auc([0], [0.3]) == pytest.approx(0.3)
    assert math.isnan(cl.curve_auc([], []))
    ft = cl.cw_forward_transfer([0.6, 0.1, 0.5, NAN], [0.2, 0.2, 1.0, 0.3])
    np.testing.assert_allclose(ft[:2], [0.5, -0.125])
    assert np.isnan(ft[2:]).all()  # the reference reached 1; a missing value
