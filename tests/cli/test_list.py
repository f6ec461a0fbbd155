"""`libero-ll list`: what a config can name, described from the code (with plugins of one's own), and a suite's
tasks; output cut short by its reader (`| head`) ends quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from libero_ll.cli import main
from libero_ll.tasks.registry import get_suite

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_plugins_left(fresh_plugins):
    """The plugin a test imports is gone after it."""


def test_the_overview_names_suites_learners_and_policies(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "  libero_object   benchmark suite, 10 tasks" in out
    assert "  libero_90       benchmark suite, 90 tasks" in out
    assert "  quickstart      task folder, 3 tasks" in out
    for name in ("seql", "er", "ewc", "packnet", "mtl", "resnet_t", "resnet_rnn", "vit_t"):
        assert f"\n  {name} " in out


def test_learners_with_their_options_from_the_code_and_a_plugins_own(capsys):
    plugin = REPO / "examples" / "plugins" / "l2_learner.py"
    assert main(["list", "learners", f"plugins=[{plugin}]"]) == 0
    out = capsys.readouterr().out
    assert "er: Experience replay.  [libero_ll.learners.er]" in out
    assert "  memory_windows = 1000   most windows kept per finished task, one per demo step (1000 in the paper)" in out
    assert "  memory_demos = null     most demos kept per finished task; null: no cap." in out
    assert "l2: L2 regularisation towards the weights after the last task.  [l2_learner]" in out
    assert "  lambda = 1.0  weight of the penalty." in out
    assert "mtl: Multitask learning" in out and "  (no options)" in out


def test_policies_with_every_key_its_default_and_its_comment(capsys):
    assert main(["list", "policies"]) == 0
    out = capsys.readouterr().out
    resnet_t = out[out.index("\nresnet_t: "):out.index("\nvit_t: ")]
    assert "  min_std = 0.05" in resnet_t and "Lower bound on every component's standard deviation" in resnet_t
    assert "  embed_size = 64" in resnet_t and "Width of every token of the temporal transformer" in resnet_t
    assert "  encoder_norm = 'group'" in resnet_t


def test_a_suites_tasks_in_learning_order_and_an_unknown_one(capsys):
    assert main(["list", "libero_object"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("libero_object: 10 tasks in learning order")
    suite = get_suite("libero_object")
    numbered = [line.split()[:2] for line in lines[1:] if line[:5].strip().isdigit()]
    assert numbered == [[str(i), t.name] for i, t in enumerate(suite.tasks, 1)]
    assert suite.tasks[0].instruction.split()[0] in lines[1]
    assert main(["list", "no_such_suite"]) == 2
    assert "error: unknown suite 'no_such_suite'" in capsys.readouterr().err


def test_a_folder_with_a_task_file_that_cannot_be_read_lists_the_others_and_fails(capsys, tmp_path):
    # Before: the file was listed as "cannot be read" and the command exited 0.
    good = REPO / "bddl_tasks" / "quickstart" / "put_the_black_bowl_on_the_plate.bddl"
    (tmp_path / good.name).write_text(good.read_text())
    (tmp_path / "broken.bddl").write_text("(define (problem\n")
    assert main(["list", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "put_the_black_bowl_on_the_plate  Put the black bowl on the plate" in captured.out
    assert "broken" in captured.out and "(cannot be read: " in captured.out
    assert captured.err == f"error: 1 task file of {tmp_path} cannot be read: broken\n"


def test_output_cut_short_by_its_reader_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "libero_ll.cli", "list", "policies"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO)
    first = proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert first.startswith(b"policies and their keys")
    assert proc.returncode in (0, 141) and err == "", err


def test_a_folder_without_task_files_does_not_hide_a_shipped_suite(capsys, tmp_path, monkeypatch):
    # From the checkout's root, its examples/ (plugins) hid bddl_tasks/examples: `list examples` failed with
    # "examples: no .bddl task files", and `list` left the suite out.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "plugin.py").write_text("")
    assert main(["list"]) == 0
    assert "  examples        task folder, 5 tasks" in capsys.readouterr().out
    assert main(["list", "examples"]) == 0
    assert "[" + str(REPO / "bddl_tasks" / "examples") + "]" in capsys.readouterr().out
    # A folder of that name holding task files of its own is the one meant.
    shipped = next((REPO / "bddl_tasks" / "examples").glob("*.bddl"))
    (tmp_path / "examples" / "mine.bddl").write_text(shipped.read_text())
    assert main(["list", "examples"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("examples: 1 task") and "mine" in out


def test_settings_other_than_plugins_are_refused(capsys):
    # `list learners foo=1` and `list train.epochs=5` were accepted and did nothing.
    for argv in (["list", "learners", "foo=1"], ["list", "train.epochs=5"]):
        assert main(argv) == 2
        assert "list takes plugins=[FILE.py] only" in capsys.readouterr().err
