"""Pretraining: `init_from` starts a run from another run's policy; the LIBERO-90 → LIBERO-10 configs validate."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.experiments.config import learner_options, load_config
from libero_ll.experiments.lifelong import check_components, run_lifelong

REPO = Path(__file__).resolve().parents[2]
FAST = ["eval.max_steps=3", "eval.init_states=1", "language_encoder=task_id"]


@pytest.mark.parametrize("name", ["pretrain_libero90", "finetune_libero10"])
def test_pretraining_configs_load_and_validate(name):
    from libero_ll.learners.registry import LEARNERS
    from libero_ll.policies.base import coerce_config
    from libero_ll.policies.registry import POLICIES

    cfg = load_config(REPO / "configs" / f"{name}.yaml")
    LEARNERS.get(str(cfg.learner.name)).check_options(learner_options(cfg))
    coerce_config(POLICIES.get(str(cfg.policy.name)).config_class, dict(cfg.policy.cfg))
    assert cfg.learner.name == ("mtl" if name.startswith("pretrain") else "er")
    try:
        check_components(cfg)
    except LiberoError as e:
        # Until the LIBERO-90/10 task files ship, only the suite (or the pretrained run) may be missing.
        assert "libero_90" in str(e) or "libero_10" in str(e), str(e)


def test_init_from_starts_from_the_pretrained_policy(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    pre = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "learner.name=mtl", "train.epochs=1")
    pre_dir = run_lifelong(pre, log=lambda s: None, envs=smoke_envs)
    pretrained = torch.load(pre_dir / "final_policy.pt", weights_only=True)["policy"]

    # A glob of run directories picks the newest match; no training epochs keep the weights as loaded.
    pattern = str(pre_dir.parent / "smoke_quickstart_mtl_*")
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, "learner.name=seql", "train.epochs=0",
                             f"init_from={pattern}")
    lines = []
    fine_dir = run_lifelong(fine, log=lines.append, envs=smoke_envs)
    assert any(str(pre_dir / "final_policy.pt") in line for line in lines)
    assert not any("note: the pretrained policy" in line for line in lines)  # the same pictures
    kept = torch.load(fine_dir / "checkpoints" / "task00_best.pt", weights_only=True)["policy"]
    assert kept.keys() == pretrained.keys() and all(torch.equal(kept[k], pretrained[k]) for k in kept)
    # The run's config keeps the glob (a sweep compares it, a report groups by it); the session records the file.
    assert load_config(fine_dir / "config.yaml").init_from == pattern
    sessions = json.loads((fine_dir / "environment.json").read_text())["sessions"]
    assert sessions[0]["init_from"] == str((pre_dir / "final_policy.pt").resolve())


def test_a_run_resumed_before_its_first_save_loads_the_same_pretrained_file(tmp_path, smoke_data, smoke_envs,
                                                                            make_smoke_config, monkeypatch):
    """A run killed before its first save starts over from init_from when resumed: from another folder, and
    after a newer run matching its glob, it still loads the file the first session loaded."""
    monkeypatch.chdir(tmp_path)
    pre = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "learner.name=mtl", "train.epochs=1")
    pre_dir = run_lifelong(pre, log=lambda s: None, envs=smoke_envs)
    pretrained = torch.load(pre_dir / "final_policy.pt", weights_only=True)["policy"]
    pattern = os.path.relpath(pre_dir.parent, tmp_path) + "/smoke_quickstart_mtl_*"
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, "learner.name=seql", "train.epochs=0",
                             f"init_from={pattern}")
    lines = []

    def crash(line: str) -> None:
        lines.append(line)
        if line.startswith("stage 1/"):  # after the epoch-0 evaluation, before the stage's first save
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        run_lifelong(fine, log=crash, envs=smoke_envs)
    run_dir = Path(next(line for line in lines if line.startswith("run directory: ")).split(": ", 1)[1])
    assert not (run_dir / "resume.pt").exists()
    # A newer run that the glob would pick, and a resume from a folder where the relative glob names nothing.
    newer = pre_dir.parent / (pre_dir.name + "-9")
    shutil.copytree(pre_dir, newer)
    weights = torch.load(newer / "final_policy.pt", weights_only=True)
    weights["policy"] = {k: v + 1 if v.is_floating_point() else v for k, v in weights["policy"].items()}
    torch.save(weights, newer / "final_policy.pt")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    resumed = []
    run_lifelong(load_config(run_dir / "config.yaml"), log=resumed.append, resume=run_dir, envs=smoke_envs)
    assert f"policy initialised from {(pre_dir / 'final_policy.pt').resolve()}" in resumed
    kept = torch.load(run_dir / "checkpoints" / "task00_best.pt", weights_only=True)["policy"]
    assert kept.keys() == pretrained.keys() and all(torch.equal(kept[k], pretrained[k]) for k in kept)


def test_init_from_other_architecture_or_missing_file_fails_clearly(tmp_path, smoke_data, smoke_envs,
                                                                    make_smoke_config, capsys):
    pre = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "learner.name=seql", "train.epochs=0")
    pre_dir = run_lifelong(pre, log=lambda s: None, envs=smoke_envs)
    other = make_smoke_config(tmp_path / "other", smoke_data, *FAST, "policy.cfg.embed_size=12",
                              f"init_from={pre_dir / 'checkpoints' / 'task01_best.pt'}")
    with pytest.raises(LiberoError, match="architecture does not match.*embed|architecture does not match"):
        run_lifelong(other, log=lambda s: None, envs=smoke_envs)
    # Task ids of another count: the embeddings' width, said as such (a bare shape mismatch before).
    wider = make_smoke_config(tmp_path / "wider", smoke_data, *FAST, "language_encoder=minilm",
                              f"init_from={pre_dir / 'checkpoints' / 'task01_best.pt'}")
    with pytest.raises(LiberoError, match="the task embeddings are of another width than those of language_encoder "
                                          "'task_id' the checkpoint was trained with"):
        run_lifelong(wider, log=lambda s: None, envs=smoke_envs)

    runs = tmp_path / "cli_runs"
    args = ["train", str(REPO / "configs" / "smoke.yaml"), f"output_dir={runs}", f"init_from={tmp_path / 'nope.pt'}"]
    assert main(args) == 2
    assert "nope.pt" in capsys.readouterr().err
    assert not runs.exists()


def test_a_pretrained_policy_of_other_pictures_is_noted():
    # It started from weights trained at 32 px with the collision hulls, fine-tuned at 64 px on the visual meshes,
    # without a word (evaluate refuses the same mismatch).
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import pretrained_look_notes

    cfg = OmegaConf.create({"env": {"image_size": 64, "robot_mesh": "visual", "shadows": False, "new_key": 1}})
    ckpt = {"policy": {}, "config": {"env": {"image_size": 32, "robot_mesh": "visual", "shadows": True}}}
    notes = pretrained_look_notes(cfg, ckpt, Path("/pre/final_policy.pt"))
    assert notes == [
        "note: the pretrained policy /pre/final_policy.pt was trained with env.image_size=32, this run renders with "
        "env.image_size=64: it starts from weights made for other pictures",
        "note: the pretrained policy /pre/final_policy.pt was trained with env.shadows=true, this run renders with "
        "env.shadows=false: it starts from weights made for other pictures",
    ]
    assert pretrained_look_notes(cfg, {"policy": {}}, Path("x.pt")) == []
    # The language: another encoder (same width, loaded without a word), or task ids that name other tasks.
    cfg = OmegaConf.create({"env": {}, "language_encoder": "task_id:minilm", "suite": "libero_10", "tasks": None})
    [note] = pretrained_look_notes(cfg, {"policy": {}, "config": {"language_encoder": "minilm"}}, Path("p.pt"))
    assert note == ("note: the pretrained policy p.pt was trained with language_encoder minilm, this run embeds its "
                    "instructions with task_id:minilm: its language layers start from weights made for other vectors")
    pre = {"language_encoder": "task_id:minilm", "suite": "libero_90", "tasks": None}
    [note] = pretrained_look_notes(cfg, {"policy": {}, "config": pre}, Path("p"))
    assert "whose ids count each run's own instructions" in note
    # The same tasks in the same order: the same ids, nothing to say.
    assert pretrained_look_notes(cfg, {"policy": {}, "config": {**pre, "suite": "libero_10"}}, Path("p")) == []
    cfg.language_encoder = "minilm"
    assert pretrained_look_notes(cfg, {"policy": {}, "config": {"language_encoder": "minilm"}}, Path("p")) == []


def test_a_pretrained_run_that_kept_its_starting_weights_is_noted(tmp_path):
    """Its evaluations never beat epoch 0, so its final policy is the weights it began with: fine-tuning from it
    starts over, which the run said nowhere."""
    import numpy as np

    from libero_ll.evaluation.success import SuccessTensor
    from libero_ll.experiments.lifelong import untrained_source_notes

    final = tmp_path / "final_policy.pt"
    final.write_bytes(b"")
    for kept, noted in (([0, 0], True), ([0, 5], False), ([None, None], False)):
        SuccessTensor(["a", "b"], [[0, 5], [0, 5]], [[0.0, 0.0], [0.0, 0.0]], [[1.0], [1.0]], np.zeros((2, 2)),
                      kept).save(tmp_path / "success.json")
        notes = untrained_source_notes(final)
        assert bool(notes) == noted, kept
        if noted:
            assert f"the run {tmp_path} kept, in every stage, the weights the stage began with" in notes[0]
            assert "this run starts from untrained weights" in notes[0]
    assert untrained_source_notes(tmp_path / "checkpoints" / "task0_epoch5.pt") == []
    (tmp_path / "success.json").write_text("not json")
    assert untrained_source_notes(final) == []


def test_a_ctrl_c_as_the_run_directory_is_made_still_records_the_pretrained_file(tmp_path, smoke_data, smoke_envs,
                                                                                 make_smoke_config):
    # Stopped just after "run directory:", the run had its config.yaml but no environment.json, so a resume picked
    # the newest file of its init_from glob, not the one it had loaded.
    import signal

    pre = make_smoke_config(tmp_path / "pre", smoke_data, *FAST, "learner.name=mtl", "train.epochs=1")
    pre_dir = run_lifelong(pre, log=lambda s: None, envs=smoke_envs)
    fine = make_smoke_config(tmp_path / "fine", smoke_data, *FAST, "learner.name=seql", "train.epochs=0",
                             f"init_from={pre_dir.parent}/smoke_quickstart_mtl_*")
    lines = []

    def ctrl_c(line: str) -> None:
        lines.append(line)
        if line.startswith("run directory: "):
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        run_lifelong(fine, log=ctrl_c, envs=smoke_envs)
    run_dir = Path(next(line for line in lines if line.startswith("run directory: ")).split(": ", 1)[1])
    sessions = json.loads((run_dir / "environment.json").read_text())["sessions"]
    assert sessions[0]["init_from"] == str((pre_dir / "final_policy.pt").resolve())
