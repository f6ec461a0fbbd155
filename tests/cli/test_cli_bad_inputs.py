"""Bad input on the command line: a clear `error:` line naming what is wrong and where, exit 2, no traceback,
and nothing written or lost. Each check stops before any simulation or training."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from libero_ll.cli import main
from libero_ll.errors import LiberoError

REPO = Path(__file__).resolve().parents[2]
BOWL = REPO / "bddl_tasks" / "quickstart" / "put_the_black_bowl_on_the_plate.bddl"


def usage_error(argv: list[str], capsys) -> str:
    """What argparse says about a bad option value (it exits 2 with the option named)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


def refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "argv, option",
    [
        (["check", str(BOWL), "--load", "--seed", "-1"], "--seed"),
        (["render", str(BOWL), "-o", "x.png", "--seed", "-1"], "--seed"),
        (["render", str(BOWL), "-o", "x.png", "--size", "0"], "--size"),
        (["render", str(BOWL), "-o", "x.png", "--size", "-5"], "--size"),
        (["init-states", str(BOWL), "--n", "0"], "--n"),
        (["init-states", str(BOWL), "--seed", "-1"], "--seed"),
        (["generate", "--random", "2", "--seed", "-1", "--out", "g"], "--seed"),
        (["generate", "--random", "1", "--resets", "0", "--out", "g"], "--resets"),
        (["generate", "--random", "1", "--n", "0", "--out", "g"], "--n"),
        (["export", "d", "--out", "o", "--fps", "0"], "--fps"),
        (["export", "d", "--out", "o", "--crf", "-1"], "--crf"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--image-size", "0"], "--image-size"),
        (["evaluate", "run", "--init-seed", "-1"], "--init-seed"),
        (["metrics", "run", "--all", "--epsilon", "-1"], "--epsilon"),
        (["report", "run", "-o", "r", "--confidence", "1.5"], "--confidence"),
        (["report", "run", "-o", "r", "--alpha", "0"], "--alpha"),
        (["report", "run", "-o", "r", "--seed", "-1"], "--seed"),
        (["report", "run", "-o", "r", "--epsilon", "nan"], "--epsilon"),
    ],
)
def test_an_out_of_range_number_is_refused_naming_its_option(argv, option, capsys, tmp_path, monkeypatch):
    # Before: numpy's "expected non-negative integer" traceback, a bootstrap ValueError, a size of 0 silently
    # drawn at 128 px, a negative CE from a negative epsilon.
    monkeypatch.chdir(tmp_path)
    err = usage_error(argv, capsys)
    assert f"argument {option}: " in err
    assert list(tmp_path.iterdir()) == []


def test_render_refuses_a_folder_as_its_output_before_building_the_scene(tmp_path, capsys):
    err = refused(["render", str(BOWL), "-o", str(tmp_path)], capsys)
    assert f"-o {tmp_path}: is a folder" in err
    assert list(tmp_path.iterdir()) == []  # no stray temporary picture beside it


def test_render_refuses_a_file_with_the_gallery(tmp_path, capsys):
    err = refused(["render", str(BOWL), "--gallery", "-o", str(tmp_path / "g.png")], capsys)
    assert "not both" in err


def test_the_gallery_chooses_a_headless_gl_backend_itself(tmp_path):
    # `render --gallery` imported MuJoCo before a backend was chosen: without MUJOCO_GL set, on a machine
    # without a display it failed with "gladLoadGL error".
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    code = (
        "import sys; from libero_ll.envs.gallery import render_gallery; "
        "render_gallery(sys.argv[1], tile=32, columns=1, categories=['plate'], families=False)"
    )
    out = tmp_path / "g.png"
    r = subprocess.run(
        [sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.is_file()


@pytest.mark.parametrize("command", ["generate", "collect"])
def test_an_output_folder_that_is_a_file_is_refused(command, tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    argv = {
        "generate": ["generate", "--random", "1", "--no-check", "--no-init-states", "--out", str(target)],
        "collect": ["collect", "--task", str(BOWL), "--demos", "1", "--out", str(target)],
    }[command]
    err = refused(argv, capsys)
    assert f"--out {target}: {target} is a file, not a folder" in err
    assert target.read_text() == "keep me"


def test_collect_says_a_folder_given_as_the_task_is_a_folder(tmp_path, capsys):
    err = refused(["collect", "--task", str(tmp_path), "--out", str(tmp_path / "o")], capsys)
    assert "is a folder, not a task file" in err


def test_verify_refuses_a_nan_tolerance_and_names_a_folder(tmp_path, capsys):
    # A NaN tolerance passed the `< 0` check and then failed every demo with a divergence of 0.
    err = refused(["verify", str(tmp_path / "x.hdf5"), "--tolerance", "nan"], capsys)
    assert "--tolerance must be a number >= 0, got nan" in err
    err = refused(["verify", str(tmp_path)], capsys)
    assert f"demo file {tmp_path} is a folder" in err


def test_teleop_checks_its_output_before_asking_for_a_display(tmp_path, capsys):
    err = refused(["teleop", str(BOWL), "--out", str(tmp_path), "--overwrite"], capsys)
    assert f"--out {tmp_path}: is a folder" in err


@pytest.fixture
def fake_run(tmp_path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: fake\n")
    (run / "success.json").write_text("{}")
    return run


def test_evaluate_checks_where_it_writes_before_any_rollout(fake_run, tmp_path, capsys):
    # Before, a bad --out or --video failed with a traceback after the rollouts, losing them.
    err = refused(["evaluate", str(fake_run), "--out", str(tmp_path)], capsys)
    assert f"--out {tmp_path}: is a folder" in err
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    err = refused(["evaluate", str(fake_run), "--video", str(notes)], capsys)
    assert f"--video {notes}: {notes} is a file, not a folder" in err
    err = refused(["evaluate", str(fake_run), "--out", str(fake_run / "success.json")], capsys)
    assert "is a file of the run itself" in err
    assert (fake_run / "success.json").read_text() == "{}"
    (fake_run / "checkpoints").mkdir()
    (fake_run / "checkpoints" / "task00_best.pt").write_bytes(b"weights")
    err = refused(["evaluate", str(fake_run), "--out", str(fake_run / "checkpoints" / "task00_best.pt")], capsys)
    assert "is a file of the run itself" in err
    # An earlier evaluation written into the run may be written again.
    earlier = fake_run / "eval50.json"
    earlier.write_text(json.dumps({"run_dir": str(fake_run), "tasks": []}))
    err = refused(["evaluate", str(fake_run), "--out", str(earlier)], capsys)
    assert "is a file of the run itself" not in err


def test_evaluate_run_refuses_a_negative_init_seed(fake_run):
    from libero_ll.experiments.evaluate import evaluate_run

    with pytest.raises(LiberoError, match="init_seed must be 0 or more"):
        evaluate_run(fake_run, new_states=2, init_seed=-1)


def test_report_checks_its_output_folder(fake_run, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    err = refused(["report", str(fake_run), "-o", str(notes / "report")], capsys)
    assert f"-o {notes / 'report'}: {notes} is a file, not a folder" in err


def test_sweep_refuses_an_output_that_is_a_file(tmp_path):
    from libero_ll.experiments.sweep import load_sweep

    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    with pytest.raises(LiberoError, match="is a file, not a folder"):
        load_sweep(REPO / "configs" / "sweeps" / "table2_smoke.yaml", notes)


def test_an_os_error_is_one_line_naming_the_path(monkeypatch, capsys):
    import libero_ll.cli.metrics as metrics

    def denied(args):
        raise PermissionError(13, "Permission denied", "/data/runs/x/success.json")

    monkeypatch.setattr(metrics, "cmd_metrics", denied)
    err = refused(["metrics", "somewhere"], capsys)
    assert err == "error: /data/runs/x/success.json: Permission denied\n"


def test_a_negative_reset_seed_is_a_clear_error(soup_env):
    with pytest.raises(LiberoError, match="reset seed must be 0 or more, got -1"):
        soup_env.reset(seed=-1)
