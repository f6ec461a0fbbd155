"""scripts/bench/learn_tasks.py: tasks learnt side by side, each run stopped once the epoch asked for is evaluated,
and the verdict on the target read from the runs' success curves."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("learn_tasks", ROOT / "scripts/bench/learn_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_verdict_asks_every_task_to_reach_the_target_by_the_epoch():
    verdict = _script().verdict
    ok, lines = verdict({"a": [(0, 0.0), (5, 0.95), (10, 0.85)], "b": [(0, 0.0), (5, 0.5), (10, 0.9)]}, 10, 0.9)
    assert ok and "best by epoch 10: 0.95; reached" in lines[0] and "0.90; reached" in lines[1]
    ok, lines = verdict({"a": [(0, 0.0), (5, 0.95)], "b": [(0, 0.0), (5, 0.5), (10, 0.85), (15, 1.0)]}, 10, 0.9)
    assert not ok
    assert "reached" in lines[0] and "best by epoch 10: 0.85; not reached" in lines[1]  # epoch 15 is too late
    ok, lines = verdict({"a": [(0, 0.0), (5, 0.5)], "b": []}, 10, 0.9)
    assert not ok and "epoch 10 not evaluated" in lines[0] and "no evaluation" in lines[1]


def test_the_curve_is_read_from_the_runs_success_file(tmp_path):
    read_curve = _script().read_curve
    assert read_curve(tmp_path) == []
    (tmp_path / "success.json").write_text(json.dumps({"eval_epochs": [[0, 5]], "curves": [[0.0, 0.45]]}))
    assert read_curve(tmp_path) == [(0, 0.0), (5, 0.45)]


def test_an_unknown_task_is_named_before_anything_runs(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/learn_tasks.py"), "configs/smoke.yaml", str(tmp_path / "out"),
         "--suite", "quickstart", "--tasks", "put_the_soup_in_the_bowl", "--work", str(tmp_path / "work")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "put_the_soup_in_the_bowl" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "work").exists()


@pytest.mark.slow
def test_two_tasks_are_learnt_at_once_and_stopped_after_the_epoch_asked_for(tmp_path):
    tasks = ["put_the_alphabet_soup_in_the_basket", "put_the_black_bowl_on_the_plate"]
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/learn_tasks.py"), "configs/smoke.yaml", str(out), "--suite",
         "quickstart", "--tasks", *tasks, "--until", "2", "--target", "0.0", "--work", str(tmp_path / "work"),
         "train.epochs=1000", "eval.every=1", "language_encoder=task_id"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every task at 0.0 or more within 2 epochs: yes" in done.stdout
    for task in tasks:
        assert f"{task}: stopped at" in done.stdout and "(epoch 2 evaluated)" in done.stdout
        epochs = json.loads((out / f"{task}.success.json").read_text())["eval_epochs"][0]
        assert epochs[:3] == [0, 1, 2] and max(epochs) < 1000  # stopped long before the schedule's end
        assert "terminated" in (out / f"{task}.log").read_text()
    assert (out / "learn.log").read_text().count("reached") == 2
