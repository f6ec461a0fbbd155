"""The tasks of an evaluation point are evaluated together when the learner's context allows it, each under
its own context otherwise, with random streams fixed by the point."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from libero_ll.data.dataset import TaskData
from libero_ll.experiments.checkpoint import derive_seed, isolated_rng
from libero_ll.experiments.lifelong import ALL_TASKS, PAST_TASKS_EPOCH, evaluate_tasks
from libero_ll.learners import TrainConfig, make_learner
from libero_ll.policies import make_policy

TINY = {
    "image_keys": ["agentview_rgb"], "lowdim_keys": ["gripper_states"], "embed_size": 8, "encoder_width": 4,
    "encoder_blocks": 1, "extra_embedding_size": 8, "language_proj_size": 8, "transformer_layers": 1,
    "heads": 1, "head_size": 8, "mlp_size": 8, "gmm_hidden": [16], "num_keypoints": 4, "seq_len": 4,
}
META = {"image_shape": (16, 16, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": 5}
CFG = OmegaConf.create({"seed": 3, "eval": {"rollouts": 2, "max_steps": 5, "still_steps": 0}})


class RecordingEvaluator:
    """Stands for ParallelEvaluator: records each call, the policy's weights during it, and scores with a
    draw from torch's global stream (so the stream each call runs under shows)."""

    def __init__(self):
        self.calls = []

    def _weights(self, policy):
        return torch.cat([p.detach().flatten() for p in policy.parameters()]).clone()

    def evaluate(self, policy, task, init_states, task_emb, num_rollouts, max_steps, still_steps=0, seed=None):
        self.calls.append(("one", [task], self._weights(policy), num_rollouts, [seed]))
        return float(torch.rand(()))

    def evaluate_many(self, policy, jobs, max_steps, still_steps=0):
        self.calls.append(("many", [job[0] for job in jobs], self._weights(policy), [job[3] for job in jobs],
                           [job[4] for job in jobs]))
        return [float(torch.rand(())) for _ in jobs]


def _learner(name: str, pruned: int):
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner(name, policy, TrainConfig(epochs=1, batch_size=4), {})
    for k in range(pruned):
        data = TaskData(k, [], np.eye(5, dtype=np.float32)[k])
        learner.start_task(k, data)
        with torch.no_grad():  # stands for training: the free weights change
            owner = getattr(learner, "owner", {})
            for key, p in policy.named_parameters():
                free = owner[key] == 0 if key in owner else torch.ones_like(p, dtype=torch.bool)
                p[free] = torch.randn(int(free.sum()))
        learner.end_task(k, data)
    return policy, learner


def _args(n: int):
    return [np.zeros((1, 3))] * n, np.eye(5, dtype=np.float32)[:n], [None] * n


def test_tasks_sharing_the_learner_context_are_evaluated_together():
    policy, learner = _learner("seql", 2)
    pool = RecordingEvaluator()
    when = (2, PAST_TASKS_EPOCH)
    scores = evaluate_tasks([0, 1], when, CFG, policy, learner, *_args(2), evaluator=pool)
    assert [(c[0], c[1], c[3]) for c in pool.calls] == [("many", [0, 1], [2, 2])]
    # One stream for the point, not task 0's: results are reproducible and independent of the tasks' streams.
    with isolated_rng(derive_seed(3, *when, ALL_TASKS)):
        assert scores == [float(torch.rand(())), float(torch.rand(()))]
    with isolated_rng(derive_seed(3, *when, 0)):
        assert scores[0] != float(torch.rand(()))
    assert evaluate_tasks([0, 1], when, CFG, policy, learner, *_args(2), evaluator=pool) == scores
    # A single task keeps its own stream and the one-task call.
    one = evaluate_tasks([1], (1, 4), CFG, policy, learner, *_args(2), evaluator=pool)
    assert pool.calls[-1][:2] == ("one", [1])
    with isolated_rng(derive_seed(3, 1, 4, 1)):
        assert one == [float(torch.rand(()))]
    # The rollouts' own streams (sampled actions) are the task's at the point, evaluated together or alone.
    assert pool.calls[0][4] == [derive_seed(3, *when, 0), derive_seed(3, *when, 1)]
    evaluate_tasks([0], when, CFG, policy, learner, *_args(2), evaluator=pool)
    assert pool.calls[-1][4] == [derive_seed(3, *when, 0)]


@pytest.mark.parametrize("pruned", [2, 3])
def test_task_dependent_contexts_fall_back_to_one_task_at_a_time(pruned):
    policy, learner = _learner("packnet", pruned)
    assert not learner.shares_eval_context([0, 1]) and learner.shares_eval_context([pruned, pruned + 1])
    pool = RecordingEvaluator()
    when = (pruned, PAST_TASKS_EPOCH)
    scores = evaluate_tasks([0, 1], when, CFG, policy, learner, *_args(pruned), evaluator=pool)
    assert [(c[0], c[1]) for c in pool.calls] == [("one", [0]), ("one", [1])]
    # Each task was evaluated with its own masks applied, under its own stream as before.
    for j, call in enumerate(pool.calls):
        with learner.eval_context(j):
            assert torch.equal(call[2], pool._weights(policy))
    assert not torch.equal(pool.calls[0][2], pool.calls[1][2])
    for j in (0, 1):
        with isolated_rng(derive_seed(3, *when, j)):
            assert scores[j] == float(torch.rand(()))
