"""The command line end to end on the smoke preset: check, collect, train, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from libero_ll.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_check_ok_and_errors(tmp_path, capsys, bowl_task):
    assert main(["check", str(bowl_task)]) == 0
    bad = tmp_path / "bad.bddl"
    bad.write_text(bowl_task.read_text().replace("(On akita_black_bowl_1 plate_1)", "(On akita_black_bowl_9 plate_1)"))
    assert main(["check", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"{bad}:" in out and "akita_black_bowl_9" in out


def test_missing_file_is_a_clean_error(capsys):
    assert main(["metrics", "/nonexistent/run"]) == 2
    assert "error:" in capsys.readouterr().err


def test_train_smoke_writes_run_and_metrics(tmp_path, capsys):
    runs, data = tmp_path / "runs", tmp_path / "data"
    code = main(["train", str(REPO / "configs" / "smoke.yaml"), f"output_dir={runs}", f"data.dir={data}", "train.epochs=1"])
    assert code == 0
    run_dir = next(runs.iterdir())
    assert (run_dir / "config.yaml").exists()
    # Each stage's kept weights; a smoke run succeeds nowhere, so each keeps its epoch-0 weights and saves the
    # weights its training ended with beside them.
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("*.pt")) == [
        "task00_best.pt", "task00_last.pt", "task01_best.pt", "task01_last.pt"]
    # The demo files follow the dataset layout.
    with h5py.File(data / "put_the_black_bowl_on_the_plate.hdf5") as f:
        assert f["data"].attrs["num_demos"] == 2
        assert f["data"].attrs["image_convention"] == "upright"
        assert f["data/demo_0/obs/agentview_rgb"].shape[1:] == (32, 32, 3)
        assert f["data/demo_0/rewards"][-1] == 1
    capsys.readouterr()
    assert main(["metrics", str(run_dir), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert len(m["matrix"]) == 2 and m["matrix"][0][1] is None
    assert 0.0 <= m["fwt"] <= 1.0 and 0.0 <= m["auc"] <= 1.0
    assert np.isfinite(m["nbt"])
    # Every file of the run and of its demos is readable by others, as results meant to be shared are (success.json
    # was written private, 0600, by its temporary file).
    private = [p for p in [*run_dir.rglob("*"), *data.rglob("*")] if p.is_file() and p.stat().st_mode & 0o044 != 0o044]
    assert private == []


def test_unknown_config_key_is_named(capsys):
    assert main(["train", str(REPO / "configs" / "smoke.yaml"), "train.epochz=3"]) == 2
    assert "epochz" in capsys.readouterr().err
    # A value of the wrong type names its key, and a value out of range says what is allowed.
    assert main(["train", str(REPO / "configs" / "smoke.yaml"), "train.grasp_steps=many"]) == 2
    assert "train.grasp_steps: Value 'many'" in capsys.readouterr().err
    assert main(["train", str(REPO / "configs" / "smoke.yaml"), "train.grasp_weight=0"]) == 2
    assert "train.grasp_weight must be a positive number" in capsys.readouterr().err


def test_settings_out_of_range_fail_before_any_work(tmp_path, capsys):
    """Each setting out of its range is refused by name with what it must be, before a run directory or
    a demo exists (before, a batch of 0 or a learning rate of -1 ended in a traceback from deep inside)."""
    smoke = str(REPO / "configs" / "smoke.yaml")
    cases = [
        ("train.batch_size=0", "train.batch_size must be a positive integer, got 0"),
        ("train.epochs=-1", "train.epochs must be a non-negative integer, got -1"),
        ("train.window_stride=0", "train.window_stride must be a positive integer, got 0"),
        ("train.lr=-1", "train.lr must be a positive number, got -1.0"),
        ("train.lr=.nan", "train.lr must be a positive number, got nan"),
        ("train.min_lr=-0.1", "train.min_lr must be a non-negative number, got -0.1"),
        ("train.grad_clip=0", "train.grad_clip must be a positive number, got 0.0"),
        ("data.demos_per_task=0", "data.demos_per_task must be 1 or more, got 0"),
        ("env.image_size=0", "env.image_size must be a positive number of pixels, got 0"),
        ("eval.every=0", "eval.every must be 1 or more (epochs between evaluations), got 0"),
        ("eval.rollouts=0", "eval.rollouts must be 1 or more, got 0"),
        ("eval.max_steps=0", "eval.max_steps must be 1 or more, got 0"),
        ("eval.init_states=0", "eval.init_states must be 1 or more, got 0"),
        ("seed=-3", "seed must be a whole number from 0 to 2**63-1, got -3"),
        ("num_threads=0", "num_threads must be 1 or more, got 0"),
        # Before: torch's "Overflow when unpacking long long" traceback when the run seeded its generators.
        ("seed=18446744073709551616", "seed must be a whole number from 0 to 2**63-1, got 18446744073709551616"),
        ("eval.init_seed=9223372036854775808", "eval.init_seed must be a whole number from 0 to 2**63-1"),
        # Before: a ValueError traceback from int('abc'); the policy was named twice in other policy errors.
        ("policy.cfg.embed_size=abc", "error: policy resnet_t: embed_size must be a whole number of at least 1, "
                                      "got 'abc'"),
        ("policy.cfg.dropout=x", "error: policy resnet_t: dropout must be a number in [0, 1), got 'x'"),
    ]
    for override, message in cases:
        argv = ["train", smoke, override, f"output_dir={tmp_path / 'runs'}", f"data.dir={tmp_path / 'data'}"]
        assert main(argv) == 2, override
        assert message in capsys.readouterr().err, override
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()
    # Zero epochs stays allowed: it evaluates a pretrained policy on the tasks without training it.
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import check_components

    check_components(load_config(smoke, ["train.epochs=0"]))


def test_render_writes_png(tmp_path, bowl_task):
    from PIL import Image

    out = tmp_path / "reset.png"
    assert main(["render", str(bowl_task), "-o", str(out), "--size", "48", "--robot-mesh", "collision"]) == 0
    img = np.asarray(Image.open(out))
    assert img.shape == (48, 96, 3) and img.std() > 10


def test_collect_dry_run_prints_success(capsys, bowl_task):
    assert main(["collect", "--task", str(bowl_task), "--demos", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "put_the_black_bowl_on_the_plate: expert success 100% (2/2)" in out


def test_collect_of_a_suite_folder_writes_under_datasets_by_its_name(tmp_path, monkeypatch, bowl_task):
    """An absolute --suite path put the demos beside the task files, not in datasets/<suite>."""
    import shutil

    import libero_ll.data.collect

    suite = tmp_path / "elsewhere" / "my_suite"
    suite.mkdir(parents=True)
    shutil.copy(bowl_task, suite)
    asked = []
    monkeypatch.setattr(libero_ll.data.collect, "collect", lambda pairs, *a, **k: asked.extend(pairs) or [])
    monkeypatch.chdir(tmp_path)
    main(["collect", "--suite", str(suite), "--demos", "1"])
    assert [out for _, out in asked] == [Path("datasets") / "my_suite" / f"{bowl_task.stem}.hdf5"]


def test_collect_says_once_what_a_ctrl_c_keeps(tmp_path, capsys, bowl_task, monkeypatch):
    """One line for one Ctrl-C, saying what is kept (before: that line, then a bare "interrupted")."""
    import libero_ll.data.collect

    def interrupted(pairs, demos, *args, progress, **kwargs):
        progress(pairs[0][0].stem, 1, demos)
        raise KeyboardInterrupt

    monkeypatch.setattr(libero_ll.data.collect, "collect", interrupted)
    assert main(["collect", "--task", str(bowl_task), "--demos", "2", "--out", str(tmp_path / "d")]) == 130
    out, err = capsys.readouterr()
    assert "interrupted" not in out
    assert err.count("interrupted") == 1
    assert err.splitlines()[-1] == (
        "interrupted: the demos settled so far are kept; run the same command again to continue")
    assert main(["collect", "--task", str(bowl_task), "--demos", "2", "--dry-run"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "interrupted"

    def interrupted_after_the_file(pairs, demos, *args, progress, **kwargs):
        pairs[0][1].parent.mkdir(parents=True, exist_ok=True)
        pairs[0][1].write_bytes(b"written")  # the task's file is complete when the Ctrl-C comes
        raise KeyboardInterrupt

    monkeypatch.setattr(libero_ll.data.collect, "collect", interrupted_after_the_file)
    assert main(["collect", "--task", str(bowl_task), "--demos", "2", "--out", str(tmp_path / "e")]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "interrupted: 1 task file written (put_the_black_bowl_on_the_plate.hdf5); the demos settled so far are "
        "kept; run the same command again to continue")


def test_bad_components_fail_before_any_work(tmp_path, capsys):
    smoke = str(REPO / "configs" / "smoke.yaml")
    for override, word in [("policy.name=vit", "vit"), ("policy.cfg.foo=1", "foo"), ("learner.options.bar=2", "bar"),
                           ("language_encoder=/no/such/model", "language_encoder: language encoder '/no/such/model'")]:
        assert main(["train", smoke, override, f"output_dir={tmp_path / 'runs'}", f"data.dir={tmp_path / 'data'}"]) == 2
        assert word in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()
