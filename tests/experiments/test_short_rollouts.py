"""A run names the tasks whose demos are longer than its rollouts may run, and the cpu preset's expert cap fits
every benchmark task."""

from pathlib import Path

import numpy as np

from libero_ll.data.collect import EXPERT_MAX_STEPS
from libero_ll.data.dataset import TaskData
from libero_ll.experiments.config import load_config
from libero_ll.experiments.lifelong import short_rollout_notes

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _task(lengths: list[int]) -> TaskData:
    return TaskData(task_id=0, demos=[{"actions": np.zeros((n, 7))} for n in lengths], task_emb=np.zeros(4))


def test_a_task_whose_longest_demo_outlasts_the_rollouts_is_named():
    cfg = load_config(CONFIGS / "cpu.yaml")
    assert cfg.eval.max_steps == 300
    tasks = [Path("quick.bddl"), Path("slow.bddl"), Path("slower.bddl")]
    notes = short_rollout_notes(cfg, tasks, [_task([120, 163]), _task([250, 365, 280]), _task([700])])
    assert len(notes) == 2
    assert "slow takes 365 steps" in notes[0] and "eval.max_steps=600" in notes[0]
    # Longer than the protocol's 600 steps: the longest demo is what the rollouts need.
    assert "slower takes 700 steps" in notes[1] and "eval.max_steps=700" in notes[1]
    cfg = load_config(CONFIGS / "cpu.yaml", ["eval.max_steps=365"])
    assert short_rollout_notes(cfg, tasks[:2], [_task([120, 163]), _task([250, 365])]) == []


def test_the_cpu_preset_collects_demos_as_long_as_the_longest_benchmark_task_needs():
    # With a 300-step cap, no episode of libero_spatial's bowl on the wooden cabinet fit (its demos take 340
    # to 410 steps), nor many of libero_goal's, libero_90's and libero_10's long tasks.
    assert load_config(CONFIGS / "cpu.yaml").data.expert_max_steps >= EXPERT_MAX_STEPS
