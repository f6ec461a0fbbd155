"""Evaluation with several environment worker processes gives the rollouts of the one-process evaluator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from libero_ll.envs.env import EnvConfig
from libero_ll.evaluation.rollout import run_rollouts
from libero_ll.evaluation.vector_eval import ParallelEvaluator
from libero_ll.experiments.lifelong import run_lifelong, suite_tasks


class ReachPolicy:
    """A scripted closed-loop policy: each env's action depends only on its own observation and step count."""

    def __init__(self):
        self.steps = None

    def reset(self, num_envs, env_ids=None):
        if env_ids is None:
            self.steps = np.zeros(num_envs, dtype=int)
        else:
            self.steps[list(env_ids)] = 0

    def act(self, obs, task_emb):
        self.steps += 1
        target = np.array([0.0, 0.1, 1.0]) + 0.02 * self.steps[:, None]
        move = np.clip(8.0 * (target - obs["ee_states"][:, :3]), -1, 1)
        grip = np.where(self.steps % 4 < 2, -1.0, 1.0)[:, None]
        return np.concatenate([move, np.zeros((len(move), 3)), grip], axis=1).astype(np.float32)


def test_two_workers_step_the_same_rollouts_as_one_process(make_smoke_config, smoke_envs, tmp_path):
    cfg = make_smoke_config(tmp_path, tmp_path)
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=50)
    env = smoke_envs[1]
    init_states = env.sample_init_states(2, seed=3)
    emb = np.zeros(4, dtype=np.float32)
    with ParallelEvaluator(tasks, env_cfg, workers=2) as pool:
        # 3 rollouts on 2 workers: one worker starts a second rollout (from init state 0 again) mid-way.
        for max_steps in (6, 9):
            serial = run_rollouts(ReachPolicy(), env, init_states, emb, 3, max_steps)
            parallel = pool.rollouts(ReachPolicy(), 1, init_states, emb, 3, max_steps)
            assert [(r.index, r.success, r.steps) for r in parallel] == [(r.index, r.success, r.steps) for r in serial]
            for a, b in zip(serial, parallel):
                np.testing.assert_array_equal(a.final_state, b.final_state)
        assert not np.array_equal(serial[0].final_state, serial[1].final_state)  # different starts, different ends
        # A rollout in which nothing moves is given up at the same step by both.
        serial = run_rollouts(StillPolicy(), env, init_states, emb, 3, 40, still_steps=8)
        parallel = pool.rollouts(StillPolicy(), 1, init_states, emb, 3, 40, still_steps=8)
        assert [r.steps for r in parallel] == [r.steps for r in serial]
        assert max(r.steps for r in serial) < 40


class StillPolicy(ReachPolicy):
    """Keeps the hand where it is."""

    def act(self, obs, task_emb):
        a = np.zeros((len(obs["ee_states"]), 7), dtype=np.float32)
        a[:, 6] = -1.0
        return a


@pytest.mark.slow
def test_run_with_two_eval_workers_matches_one(make_smoke_config, smoke_data, smoke_envs, tmp_path):
    overrides = ["train.epochs=1", "eval.max_steps=4", "eval.init_states=2", "eval.rollouts=2",
                 "language_encoder=task_id", "policy.cfg.deterministic_eval=true"]
    results = []
    for workers in (1, 2):
        cfg = make_smoke_config(tmp_path / str(workers), smoke_data, *overrides, f"eval.workers={workers}")
        run_dir = run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
        results.append(json.loads((run_dir / "success.json").read_text()))
    assert results[0]["matrix"] == results[1]["matrix"] and results[0]["curves"] == results[1]["curves"]


def test_bad_worker_count_is_an_error(make_smoke_config, tmp_path):
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.lifelong import check_components

    with pytest.raises(LiberoError, match="eval.workers"):
        check_components(make_smoke_config(tmp_path, tmp_path, "eval.workers=-1"))
    with pytest.raises(LiberoError, match="data.collect_workers"):
        check_components(make_smoke_config(tmp_path, tmp_path, "data.collect_workers=-1"))
