"""The success curve in `libero-ll train`'s epoch lines: whole while short, bounded when long."""

import math

import numpy as np

from libero_ll.evaluation.success import SuccessTensor
from libero_ll.experiments.lifelong import _curve


def _tensor(epochs, *curves):
    K = len(curves)
    return SuccessTensor(
        task_names=[f"t{k}" for k in range(K)],
        eval_epochs=[list(epochs) for _ in range(K)],
        curves=[list(c) for c in curves],
        losses=[[] for _ in range(K)],
        matrix=np.full((K, K), np.nan),
    )


def test_a_short_curve_is_given_whole():
    tensor = _tensor([0, 5, 10], [0.0, 0.5, 0.25])
    assert _curve(tensor, [0]) == "0:0.00 5:0.50 10:0.25"


def test_a_stage_of_several_tasks_gives_their_mean():
    tensor = _tensor([0, 1], [0.0, 1.0], [0.5, 0.0])
    assert _curve(tensor, [0, 1]) == "0:0.25 1:0.50"


def test_a_long_curve_keeps_its_first_and_last_points_and_names_its_best():
    epochs = list(range(51))
    curve = [min(1.0, e / 40) for e in epochs]
    curve[30] = 1.0  # the best point, before the last six
    curve[45:] = [0.5] * 6
    line = _curve(_tensor(epochs, curve), [0])
    assert line == "0:0.00 ... 45:0.50 46:0.50 47:0.50 48:0.50 49:0.50 50:0.50 (best 1.00 at epoch 30)"
    # The line no longer grows with the number of evaluations.
    assert len(_curve(_tensor(range(501), [0.0] * 501), [0])) < 100


def test_a_long_curve_with_unevaluated_points_names_the_best_it_has():
    epochs = list(range(10))
    curve = [math.nan] * 10
    curve[2] = 0.75
    assert _curve(_tensor(epochs, curve), [0]).endswith("(best 0.75 at epoch 2)")
    assert "best" not in _curve(_tensor(epochs, [math.nan] * 10), [0])
