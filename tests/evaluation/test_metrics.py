"""FWT, NBT and AUC against values worked out by hand, including K = 1, zero success and partial runs."""

import math

import numpy as np
import pytest

from libero_ll.evaluation.metrics import auc_per_task, fwt_per_task, libero_metrics, nbt_per_task
from libero_ll.evaluation.success import SuccessTensor

NAN = float("nan")


def tensor(curves, matrix, names=None):
    K = len(matrix)
    names = names or [f"task{k}" for k in range(K)]
    return SuccessTensor(
        task_names=names,
        eval_epochs=[[5 * i for i in range(len(c))] for c in curves],
        curves=[list(c) for c in curves],
        losses=[[] for _ in range(K)],
        matrix=np.array(matrix, dtype=float),
    )


# Three tasks, four evaluation points each.
CURVES = [
    [0.0, 0.4, 0.8, 0.6],  # best 0.8 at the third point; counted [0, .4, .8, .8] -> 2.0 / 4 = 0.5
    [0.2, 0.2, 0.6, 0.6],  # best 0.6 -> [.2, .2, .6, .6] -> 1.6 / 4 = 0.4
    [0.0, 1.0, 0.5, 0.0],  # best 1.0 at the second point -> [0, 1, 1, 1] -> 3 / 4 = 0.75
]
MATRIX = [
    [0.8, 0.1, 0.0],
    [0.5, 0.6, 0.2],
    [0.2, 0.4, 1.0],
]


def test_three_tasks_by_hand():
    m = libero_metrics(tensor(CURVES, MATRIX))
    assert m["K"] == 3
    np.testing.assert_allclose(m["fwt_per_task"], [0.5, 0.4, 0.75])
    # NBT_0 = ((0.8 - 0.5) + (0.8 - 0.2)) / 2 = 0.45; NBT_1 = (0.6 - 0.4) / 1 = 0.2; NBT_2 undefined.
    np.testing.assert_allclose(m["nbt_per_task"][:2], [0.45, 0.2])
    assert math.isnan(m["nbt_per_task"][2])
    # AUC_0 = (0.5 + 0.5 + 0.2) / 3 = 0.4; AUC_1 = (0.4 + 0.4) / 2 = 0.4; AUC_2 = 0.75 / 1.
    np.testing.assert_allclose(m["auc_per_task"], [0.4, 0.4, 0.75])
    assert m["fwt"] == pytest.approx(1.65 / 3)
    assert m["nbt"] == pytest.approx(0.325)
    assert m["auc"] == pytest.approx(1.55 / 3)


def test_per_task_functions_directly():
    np.testing.assert_allclose(fwt_per_task(CURVES), [0.5, 0.4, 0.75])
    nbt = nbt_per_task(np.array(MATRIX), [0.8, 0.6, 1.0])
    np.testing.assert_allclose(nbt[:2], [0.45, 0.2])
    np.testing.assert_allclose(auc_per_task([0.5, 0.4, 0.75], np.array(MATRIX)), [0.4, 0.4, 0.75])
    with pytest.raises(ValueError):
        nbt_per_task(np.zeros((2, 3)), [0, 0])
    with pytest.raises(ValueError):
        auc_per_task([0.1], np.zeros((2, 2)))


def test_peak_then_drop_counts_the_peak_from_its_epoch_on():
    # Plain mean would be 1.4 / 5 = 0.28; with the e* rule [.2, .9, .9, .9, .9] -> 3.8 / 5 = 0.76.
    assert fwt_per_task([[0.2, 0.9, 0.1, 0.1, 0.1]])[0] == pytest.approx(0.76)
    # Eleven points as in the paper: [0, .1, ..., .5, then .5 x 5] -> (1.5 + 2.5) / 11.
    curve = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.3, 0.2, 0.1, 0.0, 0.0]
    assert fwt_per_task([curve])[0] == pytest.approx(4.0 / 11)


def test_single_task():
    m = libero_metrics(tensor([[0.0, 0.5, 1.0]], [[1.0]]))
    assert m["K"] == 1
    assert m["fwt"] == pytest.approx(0.5)  # (0 + 0.5 + 1) / 3
    assert m["auc"] == pytest.approx(0.5)
    assert math.isnan(m["nbt"]) and math.isnan(m["nbt_per_task"][0])


def test_task_with_all_zero_success():
    curves = [[0.0, 0.0, 0.0], [0.0, 0.5, 0.5]]
    m = libero_metrics(tensor(curves, [[0.0, 0.0], [0.0, 0.5]]))
    np.testing.assert_allclose(m["fwt_per_task"], [0.0, 1.0 / 3])  # (0 + .5 + .5) / 3
    assert m["nbt_per_task"][0] == 0.0  # 0 - 0: nothing to forget
    np.testing.assert_allclose(m["auc_per_task"], [0.0, 1.0 / 3])


def test_partial_run_uses_only_tasks_learned_so_far():
    curves = [[0.0, 1.0], [0.5, 0.5], [], []]
    matrix = np.full((4, 4), NAN)
    matrix[0, 0], matrix[1, 0], matrix[1, 1] = 1.0, 0.25, 0.5
    m = libero_metrics(tensor(curves, matrix))
    assert m["K"] == 2
    np.testing.assert_allclose(m["fwt_per_task"], [0.5, 0.5])  # (0 + 1) / 2; (.5 + .5) / 2
    assert m["nbt"] == pytest.approx(0.75)  # 1.0 - 0.25
    np.testing.assert_allclose(m["auc_per_task"], [0.375, 0.5])  # (0.5 + 0.25) / 2; 0.5 / 1
    assert m["auc"] == pytest.approx(0.4375)


def test_the_task_being_learned_is_left_out():
    # Task 2's curve exists (the run stopped during its stage) but its stage has not ended: its row, its own
    # success after learning it included, is not filled in yet. Its curve so far measures nothing learnt.
    matrix = [row[:] for row in MATRIX]
    matrix[2] = [NAN, NAN, NAN]
    m = libero_metrics(tensor(CURVES, matrix))
    assert m["K"] == 2
    np.testing.assert_allclose(m["fwt_per_task"], [0.5, 0.4])
    # NBT_0 = 0.8 - 0.5 (only row 1 counts); NBT_1 has no later row evaluated.
    assert m["nbt_per_task"][0] == pytest.approx(0.3) and math.isnan(m["nbt_per_task"][1])
    assert m["nbt"] == pytest.approx(0.3)
    # AUC_0 = (0.5 + 0.5) / 2; AUC_1 = 0.4 / 1.
    np.testing.assert_allclose(m["auc_per_task"], [0.5, 0.4])
    assert m["auc"] == pytest.approx(0.45) and m["fwt"] == pytest.approx(0.45)
    # Stopped during the first stage, nothing is measured yet.
    m = libero_metrics(tensor([[0.0, 0.5], [], []], np.full((3, 3), NAN)))
    assert m["K"] == 0 and math.isnan(m["fwt"]) and math.isnan(m["auc"])


def test_unevaluated_curve_points_are_left_out():
    assert fwt_per_task([[0.2, NAN, 0.4]])[0] == pytest.approx(0.3)
    assert np.isnan(fwt_per_task([[], [NAN]])).all()


def test_task_never_learned_does_not_crash():
    curves = [[0.0, 0.4], [], [1.0]]
    matrix = [[0.4, NAN, NAN], [0.2, NAN, NAN], [0.0, NAN, 1.0]]
    m = libero_metrics(tensor(curves, matrix))
    assert m["K"] == 3
    assert all(math.isnan(m[key][1]) for key in ("fwt_per_task", "nbt_per_task", "auc_per_task"))
    assert m["fwt"] == pytest.approx((0.2 + 1.0) / 2)  # task 0: (0 + .4) / 2
    assert m["nbt"] == pytest.approx(0.3)  # task 0: ((.4 - .2) + (.4 - 0)) / 2


def test_nothing_learned_yet():
    m = libero_metrics(SuccessTensor.empty(["a", "b"]))
    assert m["K"] == 0 and m["fwt_per_task"] == []
    assert all(math.isnan(m[key]) for key in ("fwt", "nbt", "auc"))


def test_a_stage_of_several_tasks_measures_each_task_at_its_one_kept_checkpoint():
    # MTL keeps the epoch of the best mean (epoch 5: means .5, .6, .55); task 0's own best is at epoch 10.
    t = tensor([[0.0, 0.6, 0.8], [1.0, 0.6, 0.3]], [[0.6, NAN], [0.6, 0.6]])
    t.kept_epochs = [5, 5]
    m = libero_metrics(t)
    # Every point from the kept one on counts as its value: [0, .6, .6] and [1, .6, .6].
    np.testing.assert_allclose(m["fwt_per_task"], [1.2 / 3, 2.2 / 3])
    assert m["nbt_per_task"][0] == 0.0  # the kept policy is the one measured after the stage
    np.testing.assert_allclose(m["auc_per_task"], [(0.4 + 0.6) / 2, 2.2 / 3])
    assert t.best(0) == (0.6, 5)
    # Without the record (files of version 1), each task's earliest best point is taken, as before.
    t.kept_epochs = [None, None]
    m = libero_metrics(t)
    np.testing.assert_allclose(m["fwt_per_task"], [1.4 / 3, 1.0])
    assert m["nbt_per_task"][0] == pytest.approx(0.2)
    # A kept point after one that was not evaluated: its position among the evaluated ones.
    np.testing.assert_allclose(fwt_per_task([[NAN, 0.2, 0.9, 0.4]], kept=[3]), [(0.2 + 0.9 + 0.4) / 3])
