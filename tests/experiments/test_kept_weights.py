"""Which evaluated weights a stage keeps: the best, the earliest on ties, named in the log and the checkpoint."""

from __future__ import annotations

import torch

import libero_ll.experiments.lifelong as lifelong


def _scores_by_epoch(table: dict[int, float]):
    """An evaluate_tasks stand-in: every task of an evaluation point scores table[epoch] (0 for others)."""

    def fake(tasks, when, *args, **kwargs):
        return [table.get(int(when[1]), 0.0) for _ in tasks]

    return fake


def test_the_best_epoch_is_kept_and_named_and_epoch_zero_is_called_out(
    tmp_path, monkeypatch, make_smoke_config, smoke_data, smoke_envs
):
    # Stage 1 scores 0.5 at epochs 1 and 2: the tie keeps epoch 1. Stage 2's scores come from the same table,
    # so it keeps epoch 1 as well; with everything at 0, a stage keeps the weights it began with.
    monkeypatch.setattr(lifelong, "evaluate_tasks", _scores_by_epoch({1: 0.5, 2: 0.5}))
    lines: list[str] = []
    cfg = make_smoke_config(tmp_path / "a", smoke_data, "eval.past_tasks=false")
    run_dir = lifelong.run_lifelong(cfg, log=lines.append, envs=smoke_envs)
    kept = [line for line in lines if "kept the weights" in line]
    assert kept == ["stage 1: kept the weights of epoch 1 (success 0.50)",
                    "stage 2: kept the weights of epoch 1 (success 0.50)"]
    ckpt = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)
    assert ckpt["epoch"] == 1 and ckpt["success"] == 0.5

    monkeypatch.setattr(lifelong, "evaluate_tasks", _scores_by_epoch({}))
    lines.clear()
    run_dir = lifelong.run_lifelong(make_smoke_config(tmp_path / "b", smoke_data, "eval.past_tasks=false"),
                                    log=lines.append, envs=smoke_envs)
    kept = [line for line in lines if "kept the weights" in line]
    assert len(kept) == 2 and all("began with (epoch 0, success 0.00)" in line for line in kept)
    first = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)
    second = torch.load(run_dir / "checkpoints" / "task01_best.pt", weights_only=True)
    assert second["epoch"] == 0
    # Stage 2 began from stage 1's kept weights (ER changes no weight at a stage's end), and kept them.
    assert all(torch.equal(second["policy"][k], v) for k, v in first["policy"].items())
