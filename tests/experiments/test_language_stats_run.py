"""A run with policy.cfg.standardize_language sets the statistics from its instructions; a fine-tune keeps the
pretrained policy's; a run without it leaves the defaults."""

from __future__ import annotations

import math

import pytest
import torch

from libero_ll.experiments.lifelong import run_lifelong

FAST = ["train.epochs=1", "eval.max_steps=3", "eval.init_states=1", "language_encoder=task_id"]
ON = "policy.cfg.standardize_language=true"


def stats(run_dir, name="final_policy.pt"):
    state = torch.load(run_dir / name, weights_only=True)["policy"]
    return state["language_mean"], float(state["language_scale"])


def test_the_run_centres_and_scales_its_instructions(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    lines = []
    run_dir = run_lifelong(make_smoke_config(tmp_path, smoke_data, *FAST, ON, "learner.name=mtl"),
                           log=lines.append, envs=smoke_envs)
    # Two one-hot task ids: centred on (0.5, 0.5), each component then 0.5 from it, so scaled by 2.
    mean, scale = stats(run_dir)
    assert torch.equal(mean, torch.tensor([0.5, 0.5])) and scale == pytest.approx(2.0)
    assert any("task embeddings centred on the run's 2 distinct instructions and scaled by 2" in s for s in lines)


def test_without_it_they_are_only_scaled_and_a_fine_tune_keeps_what_it_starts_from(
        tmp_path, smoke_data, smoke_envs, make_smoke_config):
    lines = []
    pre_dir = run_lifelong(make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "learner.name=mtl"),
                           log=lines.append, envs=smoke_envs)
    mean, scale = stats(pre_dir)
    assert not mean.any() and scale == pytest.approx(math.sqrt(2))
    assert not any("centred" in s for s in lines)

    # Fine-tuned with the setting on: the pretrained policy's reading is kept, not set from the run's tasks.
    lines = []
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, ON, "learner.name=seql", "train.epochs=0",
                             f"init_from={pre_dir}")
    fine_dir = run_lifelong(fine, log=lines.append, envs=smoke_envs)
    kept_mean, kept_scale = stats(fine_dir, "checkpoints/task00_best.pt")
    assert not kept_mean.any() and kept_scale == scale
    assert any("read as the pretrained policy read them (as the encoder gives them" in s for s in lines)
