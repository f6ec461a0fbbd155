"""Which evaluated weights a stage keeps: the best, the earliest on ties, named in the log and the checkpoint."""

from __future__ import annotations

import pytest
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
    assert kept == [f"stage {s}: kept the weights of epoch 1 (success 0.50); the weights training ended with (epoch 2, "
                    f"success 0.50) are in checkpoints/task0{s - 1}_last.pt" for s in (1, 2)]
    ckpt = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)
    assert ckpt["epoch"] == 1 and ckpt["success"] == 0.5
    # The weights the stage's training ended with are not lost: saved beside the kept ones, as evaluated at epoch 2.
    last = torch.load(run_dir / "checkpoints" / "task00_last.pt", weights_only=True)
    assert last["epoch"] == 2 and last["success"] == 0.5 and last["tasks"] == [0]
    assert not all(torch.equal(last["policy"][k], v) for k, v in ckpt["policy"].items())

    monkeypatch.setattr(lifelong, "evaluate_tasks", _scores_by_epoch({}))
    lines.clear()
    run_dir = lifelong.run_lifelong(make_smoke_config(tmp_path / "b", smoke_data, "eval.past_tasks=false"),
                                    log=lines.append, envs=smoke_envs)
    kept = [line for line in lines if "kept the weights" in line]
    assert len(kept) == 2 and all("began with (epoch 0, success 0.00)" in line for line in kept)
    assert kept[0].endswith("the weights training ended with (epoch 2, success 0.00) are in checkpoints/task00_last.pt")
    first = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)
    second = torch.load(run_dir / "checkpoints" / "task01_best.pt", weights_only=True)
    assert second["epoch"] == 0
    # Stage 2 began from stage 1's kept weights (ER changes no weight at a stage's end), and kept them.
    assert all(torch.equal(second["policy"][k], v) for k, v in first["policy"].items())


def test_a_stage_that_keeps_its_last_epoch_saves_no_other_weights(tmp_path, monkeypatch, make_smoke_config, smoke_data,
                                                                   smoke_envs):
    """When the last evaluation is the best, the kept file holds the weights training ended with: no *_last.pt, and
    `evaluate --checkpoint N:last` reads the kept file; a run that saved neither is told so."""
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.evaluate import _weights_file

    monkeypatch.setattr(lifelong, "evaluate_tasks", _scores_by_epoch({1: 0.2, 2: 0.5}))
    lines: list[str] = []
    run_dir = lifelong.run_lifelong(make_smoke_config(tmp_path, smoke_data, "eval.past_tasks=false"),
                                    log=lines.append, envs=smoke_envs)
    assert [line for line in lines if "kept the weights" in line] == [
        "stage 1: kept the weights of epoch 2 (success 0.50)", "stage 2: kept the weights of epoch 2 (success 0.50)"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["task00_best.pt", "task01_best.pt"]
    names = ["a", "b"]
    assert _weights_file(run_dir, "2:last", names) == (run_dir / "checkpoints" / "task01_best.pt", [1])
    # A run that kept an earlier epoch without saving the last (made before the last weights were saved).
    ckpt = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)
    ckpt["epoch"] = 1
    torch.save(ckpt, run_dir / "checkpoints" / "task00_best.pt")
    with pytest.raises(LiberoError, match=r"the stage of task 1 \(a\) kept the weights of epoch 1 .* holds no "
                                          r"checkpoints/task00_last.pt"):
        _weights_file(run_dir, "1:last", names)
    for bad in ("final:last", "latest:last", "3:last", "x:last"):
        with pytest.raises(LiberoError, match="checkpoint"):
            _weights_file(run_dir, bad, names)


class _LateScores:
    """A BackgroundEvaluator stand-in in this process: each job scores table[epoch] per task and is in only
    at the second look, so evaluations stay out while training goes on (eval.overlap's bookkeeping)."""

    table: dict[int, float] = {}

    def __init__(self, *args, **kwargs):
        self.jobs, self.sent, self.seconds = {}, [], 0.0

    def submit(self, tasks, when, state):
        ticket = len(self.sent)
        self.sent.append((tuple(when), {k: v.detach().clone() for k, v in state.items()}))
        self.jobs[ticket] = [list(tasks), int(when[1]), 2]
        return ticket

    def done(self, ticket):
        self.jobs[ticket][2] -= 1
        return self.jobs[ticket][2] <= 0

    def wait(self, ticket):
        tasks, epoch, _ = self.jobs.pop(ticket)
        return [self.table.get(epoch, 0.0) for _ in tasks]

    def close(self):
        pass


def test_evaluations_alongside_training_keep_the_same_weights(tmp_path, monkeypatch, make_smoke_config, smoke_data,
                                                              smoke_envs):
    """With scores that arrive late, the stage keeps the weights the best evaluation was given (epoch 2 of 4
    here), the same as evaluating in the training process, and saves its state after every epoch with the
    evaluations still out."""
    import libero_ll.experiments.background_eval as background_eval

    table = {2: 0.5, 4: 0.25}
    overrides = ["eval.past_tasks=false", "train.epochs=4", "eval.every=2"]
    monkeypatch.setattr(lifelong, "evaluate_tasks", _scores_by_epoch(table))
    plain = lifelong.run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None,
                                  envs=smoke_envs)

    monkeypatch.setattr(_LateScores, "table", table)
    fakes = []
    monkeypatch.setattr(background_eval, "BackgroundEvaluator", lambda *a, **k: fakes.append(_LateScores()) or fakes[-1])
    saves = []
    real_save = lifelong.atomic_torch_save
    monkeypatch.setattr(lifelong, "atomic_torch_save", lambda obj, path: (
        saves.append((path.name, obj.get("position"), [p["epoch"] for p in obj.get("pending", [])])),
        real_save(obj, path))[1])
    lines: list[str] = []
    along = lifelong.run_lifelong(make_smoke_config(tmp_path / "b", smoke_data, *overrides, "eval.overlap=true"),
                                  log=lines.append, envs=smoke_envs)
    assert [line for line in lines if "kept the weights" in line] == [
        f"stage {s}: kept the weights of epoch 2 (success 0.50); the weights training ended with (epoch 4, success "
        f"0.25) are in checkpoints/task0{s - 1}_last.pt" for s in (1, 2)]
    # The weights training ended with are those sent for evaluation at epoch 4, the same as without overlap.
    last = torch.load(along / "checkpoints" / "task00_last.pt", weights_only=True)
    assert all(torch.equal(v, last["policy"][k]) for k, v in dict(fakes[0].sent)[(0, 4)].items())
    plain_last = torch.load(plain / "checkpoints" / "task00_last.pt", weights_only=True)
    assert all(torch.equal(plain_last["policy"][k], v) for k, v in last["policy"].items())
    for name in ("task00_best.pt", "task01_best.pt"):
        a = torch.load(plain / "checkpoints" / name, weights_only=True)
        b = torch.load(along / "checkpoints" / name, weights_only=True)
        assert a["epoch"] == b["epoch"] == 2 and all(torch.equal(a["policy"][k], v) for k, v in b["policy"].items())
    # The kept weights are the ones sent for evaluation at stage 1, epoch 2.
    sent = dict(fakes[0].sent)[(0, 2)]
    kept = torch.load(along / "checkpoints" / "task00_best.pt", weights_only=True)["policy"]
    assert all(torch.equal(sent[k], v) for k, v in kept.items())
    # Each evaluation is in one epoch late: epoch 0's at epoch 2, epoch 2's at epoch 3, epoch 4's at the
    # stage's end. Every epoch's state is saved, with the evaluations out then.
    out = {p["epoch"]: pending for name, p, pending in saves
           if name == "resume.pt" and p["stage"] == 0 and p["phase"] == "train"}
    assert out == {0: [0], 1: [0], 2: [2], 3: [], 4: [4]}


def test_a_multitask_stage_records_its_one_kept_epoch_and_measures_no_backward_transfer(
        tmp_path, monkeypatch, make_smoke_config, smoke_data, smoke_envs):
    """MTL keeps the epoch of the best mean success (epoch 1 here: means .6, .55 at epochs 1, 2), where task 0
    alone peaks at epoch 2: success.json records epoch 1 for both, and NBT measures the kept policy (0, where
    each task's own best would give 1.0 - 0.6)."""
    from libero_ll.evaluation.metrics import libero_metrics
    from libero_ll.evaluation.success import SuccessTensor

    table = {1: [0.6, 0.6], 2: [1.0, 0.1]}
    monkeypatch.setattr(lifelong, "evaluate_tasks", lambda tasks, when, *a, **k: [
        table.get(int(when[1]), [0.0, 0.0])[j] for j in tasks])
    cfg = make_smoke_config(tmp_path, smoke_data, "eval.past_tasks=false", "learner.name=mtl")
    run_dir = lifelong.run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    tensor = SuccessTensor.load(run_dir / "success.json")
    assert tensor.kept_epochs == [1, 1] and tensor.matrix[1].tolist() == [0.6, 0.6]
    m = libero_metrics(tensor)
    assert m["nbt_per_task"][0] == 0.0
    assert m["fwt_per_task"] == [(0 + 0.6 + 0.6) / 3] * 2
    # Its one stage sees every task: the low-dim inputs are standardised with all their demos' statistics.
    import numpy as np

    from libero_ll.data.hdf5 import read_demos

    kept = torch.load(run_dir / "checkpoints" / "all_tasks_best.pt", weights_only=True)["policy"]
    last = torch.load(run_dir / "checkpoints" / "all_tasks_last.pt", weights_only=True)
    assert last["epoch"] == 2 and last["tasks"] == [0, 1] and abs(last["success"] - 0.55) < 1e-9
    means = [key for key in kept if key.startswith("lowdim_mean_")]
    assert means
    for key in means:
        obs = key.removeprefix("lowdim_mean_")
        values = np.concatenate([d.obs[obs] for t in lifelong.suite_tasks(cfg.suite, list(cfg.tasks))
                                 for d in read_demos(smoke_data / f"{t.stem}.hdf5", [obs])])
        np.testing.assert_allclose(kept[key].numpy(), values.mean(0), rtol=1e-5, atol=1e-6)
