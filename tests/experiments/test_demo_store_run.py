"""A run holds the images of the stage it trains (and what its learner keeps), not every task's."""

from __future__ import annotations

import pytest

from libero_ll.data.store import DemoStore
from libero_ll.experiments.lifelong import run_lifelong

FAST = ["train.epochs=2", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]


@pytest.fixture
def reads(monkeypatch):
    """Each task read with its images, in order, and the tasks held at each read."""
    seen = []
    get = DemoStore.__getitem__

    def recording(self, j):
        if int(j) not in self._loaded:
            seen.append((int(j), self.loaded()))
        return get(self, j)

    monkeypatch.setattr(DemoStore, "__getitem__", recording)
    return seen


@pytest.mark.parametrize("learner", ["er", "ewc", "mtl"])
def test_a_run_reads_each_stage_when_it_starts_and_lets_it_go(learner, tmp_path, smoke_data, smoke_envs,
                                                              make_smoke_config, reads):
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, f"learner.name={learner}")
    run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    if learner == "mtl":  # one stage of both tasks
        assert reads == [(0, []), (1, [0])]
    else:  # task 1 is read once task 0 has been let go
        assert reads == [(0, []), (1, [])]


def test_a_resumed_er_run_reads_only_what_its_memory_and_stage_need(tmp_path, smoke_data, smoke_envs,
                                                                    make_smoke_config, stop_run, reads):
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "learner.name=er")
    run_dir = stop_run(cfg, "stage 2 epoch 1", smoke_envs)
    reads.clear()
    run_lifelong(cfg, log=lambda s: None, resume=run_dir, envs=smoke_envs)
    # Task 0 for ER's memory (let go once the memory holds its demos), then task 1 for its stage.
    assert reads == [(0, []), (1, [])]
