"""Rollouts: a rollout in which nothing moves any more is given up; the training log's success curve; the
report's loss curves; worker counts."""

from __future__ import annotations

import numpy as np
import pytest

from libero_ll.evaluation.rollout import STILL_TOLERANCE, StillnessMonitor, run_rollouts


def test_stillness_monitor_counts_consecutive_still_steps():
    m = StillnessMonitor(3)
    m.reset(np.zeros(4))
    small = np.full(4, STILL_TOLERANCE / 2)
    assert [m.update(small) for _ in range(3)] == [False, False, True]
    # A slow drift that stays within the tolerance of where the spell began for a few steps, then leaves it.
    m.reset(np.zeros(4))
    assert not m.update(np.full(4, 0.6 * STILL_TOLERANCE))
    assert not m.update(np.full(4, 1.2 * STILL_TOLERANCE))  # moved: a new spell starts here
    assert not m.update(np.full(4, 1.2 * STILL_TOLERANCE))
    assert not m.update(np.full(4, 1.2 * STILL_TOLERANCE))
    assert m.update(np.full(4, 1.2 * STILL_TOLERANCE))
    off = StillnessMonitor(0)
    off.reset(np.zeros(4))
    assert not any(off.update(np.zeros(4)) for _ in range(50))


class ConstantPolicy:
    def __init__(self, action):
        self.action = np.asarray(action, dtype=np.float32)

    def reset(self, num_envs, env_ids=None):
        pass

    def act(self, obs, task_emb):
        return self.action[None].repeat(len(next(iter(obs.values()))), 0)


class WavingPolicy(ConstantPolicy):
    """Moves the hand back and forth: never still."""

    def __init__(self):
        self.t = 0

    def act(self, obs, task_emb):
        self.t += 1
        a = np.zeros(7, dtype=np.float32)
        a[1] = 0.5 if (self.t // 5) % 2 else -0.5
        a[6] = -1.0
        return a[None]


def test_a_rollout_in_which_nothing_moves_is_given_up(soup_env):
    init = soup_env.sample_init_states(1, seed=0)
    emb = np.zeros(4, dtype=np.float32)
    still = ConstantPolicy([0, 0, 0, 0, 0, 0, -1])
    early = run_rollouts(still, soup_env, init, emb, 1, max_steps=60, still_steps=10)[0]
    assert not early.success and early.steps < 30
    assert run_rollouts(still, soup_env, init, emb, 1, max_steps=40, still_steps=0)[0].steps == 40
    moving = run_rollouts(WavingPolicy(), soup_env, init, emb, 1, max_steps=40, still_steps=10)[0]
    assert moving.steps == 40


def test_training_log_prints_the_success_curve_so_far():
    from libero_ll.evaluation.success import SuccessTensor
    from libero_ll.experiments.lifelong import _curve

    t = SuccessTensor.empty(["a", "b"])
    t.eval_epochs[0] += [0, 5, 10]
    t.curves[0] += [0.0, 0.4, 0.9]
    assert _curve(t, [0]) == "0:0.00 5:0.40 10:0.90"
    t.eval_epochs[1] += [0, 5, 10]
    t.curves[1] += [0.2, 0.2, 0.5]
    assert _curve(t, [0, 1]) == "0:0.10 5:0.30 10:0.70"  # a stage of several tasks: their mean


def test_report_puts_each_task_loss_on_its_own_stage():
    from libero_ll.evaluation.report.plots import lifelong_curve, stage_losses
    from libero_ll.evaluation.success import SuccessTensor

    t = SuccessTensor.empty(["a", "b"])
    for k in range(2):
        t.eval_epochs[k] += [0, 2, 4]
        t.curves[k] += [0.0, 0.5, 1.0]
        t.losses[k] += [-1.0, -2.0, float("nan"), -4.0]
    x, y = stage_losses(t, 1)
    np.testing.assert_array_equal(x, [5.0, 6.0, 8.0])  # task 2's stage starts after task 1's 4 epochs
    np.testing.assert_array_equal(y, [-1.0, -2.0, -4.0])
    cx, _ = lifelong_curve(t, 1)
    assert cx.min() <= x.min() and x.max() <= cx.max()


@pytest.mark.parametrize("workers, jobs, expected", [(1, 20, 1), (3, 2, 2), (4, 0, 1)])
def test_worker_counts(workers, jobs, expected):
    from libero_ll.experiments.lifelong import resolve_workers

    assert resolve_workers(workers, jobs) == expected


def test_zero_workers_means_one_per_core():
    import os

    from libero_ll.experiments.lifelong import resolve_workers

    cores = len(os.sched_getaffinity(0))
    assert resolve_workers(0, 1000) == cores
    assert resolve_workers(0, 1) == 1
