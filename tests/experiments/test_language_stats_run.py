"""A run with policy.cfg.standardize_language sets the statistics from its instructions before training; a
fine-tune keeps the pretrained policy's, whatever its own setting; a run without it leaves the defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from libero_ll.experiments.lifelong import run_lifelong

FAST = ["train.epochs=1", "eval.max_steps=3", "eval.init_states=1"]
ON, OFF = "policy.cfg.standardize_language=true", "policy.cfg.standardize_language=false"
KEPT = "the task embeddings are read as the pretrained policy read them"


def stats(run_dir, name="final_policy.pt"):
    state = torch.load(run_dir / name, weights_only=True)["policy"]
    return state["language_mean"], float(state["language_scale"])


def test_the_run_centres_and_scales_its_instructions_before_training(tmp_path, smoke_data, smoke_envs,
                                                                     make_smoke_config):
    lines = []
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "language_encoder=task_id", ON, "learner.name=er")
    run_dir = run_lifelong(cfg, log=lines.append, envs=smoke_envs)
    # Two one-hot task ids: centred on (0.5, 0.5), each component then 0.5 from it, so scaled by 2; set before
    # the first stage (its kept weights hold them), not after training.
    for name in ("checkpoints/task00_best.pt", "final_policy.pt"):
        mean, scale = stats(run_dir, name)
        assert torch.equal(mean, torch.tensor([0.5, 0.5])) and scale == pytest.approx(2.0)
    assert any("task embeddings centred on the run's 2 distinct instructions and scaled by 2" in s for s in lines)


def test_a_fine_tune_keeps_the_pretrained_statistics_even_with_the_setting_off(tmp_path, smoke_data, smoke_envs,
                                                                              make_smoke_config):
    from libero_ll.envs.env import load_task
    from libero_ll.experiments.lifelong import suite_tasks
    from libero_ll.policies.language import encode_instructions

    pre_cfg = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, ON, "learner.name=mtl")  # MiniLM, 384 wide
    pre_dir = run_lifelong(pre_cfg, log=lambda s: None, envs=smoke_envs)
    mean, scale = stats(pre_dir)
    embs = encode_instructions([load_task(t).language for t in suite_tasks(pre_cfg.suite, list(pre_cfg.tasks))])
    np.testing.assert_allclose(mean.numpy(), embs.mean(axis=0), atol=1e-6)

    # One task (on its own it would give no statistics), the setting off: the pretrained reading is kept.
    lines = []
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, OFF, "learner.name=seql", "train.epochs=0",
                             "tasks=[put_the_black_bowl_on_the_plate]", f"init_from={pre_dir}")
    fine_dir = run_lifelong(fine, log=lines.append, envs=smoke_envs[1:])  # the bowl's
    kept_mean, kept_scale = stats(fine_dir, "checkpoints/task00_best.pt")
    assert torch.equal(kept_mean, mean) and kept_scale == scale
    assert any(f"{KEPT} (centred on its run's instructions)" in s for s in lines)


def test_without_it_they_are_only_scaled_and_a_fine_tune_with_it_keeps_that(tmp_path, smoke_data, smoke_envs,
                                                                            make_smoke_config):
    lines = []
    pre_cfg = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "language_encoder=task_id", "learner.name=mtl")
    pre_dir = run_lifelong(pre_cfg, log=lines.append, envs=smoke_envs)
    mean, scale = stats(pre_dir)
    assert not mean.any() and scale == pytest.approx(math.sqrt(2))
    assert not any("centred" in s for s in lines)

    # Fine-tuned on the same two tasks with the setting on, which would centre them: the reading is kept.
    lines = []
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, "language_encoder=task_id", ON,
                             "learner.name=seql", "train.epochs=0", f"init_from={pre_dir}")
    fine_dir = run_lifelong(fine, log=lines.append, envs=smoke_envs)
    kept_mean, kept_scale = stats(fine_dir, "checkpoints/task00_best.pt")
    assert not kept_mean.any() and kept_scale == scale
    assert any(f"{KEPT} (as the encoder gives them" in s for s in lines)
