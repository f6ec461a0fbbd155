"""Bad input on the command line: a clear `error:` line naming what is wrong and where, exit 2, no traceback,
and nothing written or lost. Most checks stop before any simulation or training; those of `check --load` and
`render` build one small scene each."""

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
        (["render", str(BOWL), "-o", "x.png", "--size", "20000"], "--size"),
        (["render", "--gallery", "-o", "x.png", "--size", "4097"], "--size"),
        (["init-states", str(BOWL), "--n", "0"], "--n"),
        (["init-states", str(BOWL), "--seed", "-1"], "--seed"),
        # Before: an OverflowError traceback once the states were sampled, when they were written.
        (["init-states", str(BOWL), "--seed", str(2**63)], "--seed"),
        (["collect", "--task", str(BOWL), "--seed", str(2**63)], "--seed"),
        (["generate", "--random", "2", "--seed", "-1", "--out", "g"], "--seed"),
        (["generate", "--random", "1", "--resets", "0", "--out", "g"], "--resets"),
        (["generate", "--random", "1", "--n", "0", "--out", "g"], "--n"),
        (["export", "d", "--out", "o", "--fps", "0"], "--fps"),
        (["export", "d", "--out", "o", "--crf", "-1"], "--crf"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--image-size", "0"], "--image-size"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--seed", "-1"], "--seed"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--demos", "0"], "--demos"),
        (["evaluate", "run", "--init-seed", "-1"], "--init-seed"),
        # Before: refused only once the run was read, as "rollouts must be 1 or more".
        (["evaluate", "run", "--rollouts", "0"], "--rollouts"),
        (["evaluate", "run", "--new-states", "-2"], "--new-states"),
        (["evaluate", "run", "--max-steps", "0"], "--max-steps"),
        (["evaluate", "run", "--workers", "-1"], "--workers"),
        (["evaluate", "run", "--rollouts", "2.5"], "--rollouts"),
        # Before: "the number of demos must be at least 1" (no option named), or for --image-size 0 that the
        # image size must be at least 1 pixel.
        (["collect", "--task", str(BOWL), "--demos", "0"], "--demos"),
        (["collect", "--task", str(BOWL), "--image-size", "0"], "--image-size"),
        (["collect", "--task", str(BOWL), "--max-steps", "-1"], "--max-steps"),
        (["collect", "--task", str(BOWL), "--workers", "0"], "--workers"),
        (["collect", "--task", str(BOWL), "--max-attempts", "0"], "--max-attempts"),
        (["train", "c.yaml", "--stages", "0"], "--stages"),
        (["metrics", "run", "--all", "--epsilon", "-1"], "--epsilon"),
        (["report", "run", "-o", "r", "--confidence", "1.5"], "--confidence"),
        (["report", "run", "-o", "r", "--alpha", "0"], "--alpha"),
        (["report", "run", "-o", "r", "--seed", "-1"], "--seed"),
        (["report", "run", "-o", "r", "--epsilon", "nan"], "--epsilon"),
        # Before: "error: pos_scale must be in (0, 1], got 5.0", the option not named as it is typed.
        (["teleop", str(BOWL), "--out", "t.hdf5", "--pos-scale", "5"], "--pos-scale"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--rot-scale", "0"], "--rot-scale"),
        (["teleop", str(BOWL), "--out", "t.hdf5", "--pos-scale", "nan"], "--pos-scale"),
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


def test_verify_refuses_a_nan_tolerance_and_a_folder_without_demos(tmp_path, capsys):
    # A NaN tolerance passed the `< 0` check and then failed every demo with a divergence of 0.
    err = refused(["verify", str(tmp_path / "x.hdf5"), "--tolerance", "nan"], capsys)
    assert "--tolerance must be a number >= 0, got nan" in err
    err = refused(["verify", str(tmp_path)], capsys)
    assert f"{tmp_path}: no demo files (*.hdf5) in this folder" in err


def test_teleop_checks_its_output_before_asking_for_a_display(tmp_path, capsys):
    err = refused(["teleop", str(BOWL), "--out", str(tmp_path), "--overwrite"], capsys)
    assert f"--out {tmp_path}: is a folder" in err
    there = tmp_path / "t.hdf5"
    there.write_bytes(b"an earlier session")
    err = refused(["teleop", str(BOWL), "--out", str(there)], capsys)
    assert "exists; choose another --out, pass --append to add demos to it, or --overwrite to replace it" in err
    err = refused(["teleop", str(BOWL), "--out", str(there), "--append", "--overwrite"], capsys)
    assert "--append keeps the demos of --out and --overwrite replaces them: give one of them" in err
    err = refused(["teleop", str(BOWL), "--out", str(there), "--append"], capsys)  # checked before the display
    assert f"{there}" in err and "HDF5" in err
    assert there.read_bytes() == b"an earlier session"


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


def test_sweep_refuses_a_run_directory_as_its_output(fake_run, tmp_path, capsys):
    # Before: accepted, and the sweep's runs would have been made inside the run.
    sweep = REPO / "configs" / "sweeps" / "table2_smoke.yaml"
    # A run writes config.yaml and environment.json as it starts.
    (fake_run / "environment.json").write_text("{}")
    before = sorted(p.name for p in fake_run.iterdir())
    err = refused(["sweep", str(sweep), "-o", str(fake_run), "--list"], capsys)
    assert err == (f"error: -o {fake_run}: is a run directory, not a folder for the sweep's runs, which would be put "
                   "inside that run; give a folder of its own (one a sweep wrote its runs in continues that sweep)\n")
    # A folder inside a run is refused too.
    err = refused(["sweep", str(sweep), "-o", str(fake_run / "sweeps"), "--list"], capsys)
    assert err.startswith(f"error: -o {fake_run / 'sweeps'}: is inside the run directory {fake_run}, not a folder")
    assert sorted(p.name for p in fake_run.iterdir()) == before
    # A folder that holds a config of one's own is no run: the sweep's runs may go in it or below it.
    from libero_ll.experiments.sweep import load_sweep

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.yaml").write_text("name: mine\n")
    assert load_sweep(sweep, mine / "sweeps").output_dir == mine / "sweeps"
    assert load_sweep(sweep, mine).output_dir == mine


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


def test_render_names_the_largest_size_it_takes(capsys):
    # Before: --size 20000 built the scene, then "mujoco.FatalError: Offscreen framebuffer is not complete"
    # and an AttributeError from Renderer.__del__.
    from libero_ll.cli.render import MAX_SIZE

    err = usage_error(["render", str(BOWL), "-o", "x.png", "--size", str(MAX_SIZE + 1)], capsys)
    assert f"argument --size: must be {MAX_SIZE} or less (pixels a side), got {MAX_SIZE + 1}" in err


def render_small(output, capsys) -> tuple[int, str]:
    code = main(["render", str(BOWL), "-o", str(output), "--size", "16", "--robot-mesh", "collision"])
    return code, capsys.readouterr().err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_render_names_the_output_it_could_not_write_not_its_temporary(capsys):
    # /proc takes no new files: before, "error: /proc/x.png.tmp.png: No such file or directory".
    code, err = render_small("/proc/x.png", capsys)
    assert code == 2
    assert err == "error: -o /proc/x.png: cannot write it: No such file or directory\n"


def test_render_writes_the_format_its_suffix_names(tmp_path, capsys):
    # Before, x.jpg held PNG data.
    out = tmp_path / "x.jpg"
    code, err = render_small(out, capsys)
    assert code == 0, err
    from PIL import Image

    with Image.open(out) as picture:
        assert picture.format == "JPEG" and picture.size == (32, 16)
    assert [p.name for p in tmp_path.iterdir()] == ["x.jpg"]  # no temporary left beside it


def test_render_refuses_a_suffix_it_cannot_write_before_any_work(tmp_path, capsys):
    err = refused(["render", str(BOWL), "-o", str(tmp_path / "x.txt")], capsys)
    assert f"-o {tmp_path / 'x.txt'}: cannot write a picture as '.txt'; name a file ending in .png, .jpg" in err
    err = refused(["render", "--gallery", "-o", str(tmp_path / "g.gif")], capsys)
    assert "cannot write a picture as '.gif'" in err
    assert list(tmp_path.iterdir()) == []


GOAL = "(And (On akita_black_bowl_1 plate_1))"  # BOWL's goal, at line 83, column 5


def bowl_variant(tmp_path, name: str, old: str, new: str) -> Path:
    text = BOWL.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def test_check_load_reports_a_goal_with_or_and_not(tmp_path, capsys):
    # Before: "error: the goal uses Or at FILE:83:6; only a conjunction of predicates has a list form" (exit 2),
    # though the environment evaluates such goals.
    path = bowl_variant(tmp_path, "or.bddl", GOAL,
                        "(And (Or (On akita_black_bowl_1 plate_1) (In akita_black_bowl_1 basket_1_contain_region))"
                        " (Not (Up plate_1)))")
    assert main(["check", str(path), "--load"]) == 0
    out = capsys.readouterr().out
    assert f"{path}: ok, loaded and reset\n" in out
    assert ("  goal (or (on akita_black_bowl_1 plate_1) (in akita_black_bowl_1 basket_1_contain_region)): false\n"
            "  goal (not (up plate_1)): holds\n") in out


def test_check_load_fails_a_task_broken_at_its_reset(tmp_path, capsys):
    # Before, both printed "ok, loaded and reset" and exited 0 with an init that DOES NOT HOLD or a goal that
    # holds before anything is done.
    done = bowl_variant(tmp_path, "done.bddl", GOAL, "(And (Not (Up plate_1)))")
    # Two things in a region that has room for one: the init cannot hold.
    crowded = bowl_variant(tmp_path, "crowded.bddl", "(On cream_cheese_1 main_table_cream_cheese_init_region)",
                           "(On cream_cheese_1 main_table_alphabet_soup_init_region)")
    assert main(["check", str(done), "--load"]) == 2
    out = capsys.readouterr().out
    assert f"{done}: loaded and reset\n" in out and "ok, loaded" not in out
    assert "  goal (not (up plate_1)): holds\n" in out
    assert f"{done}:83:6: the goal already holds after the reset (seed 0): nothing would have to be done\n" in out
    assert main(["check", str(crowded), "--load"]) == 2
    out = capsys.readouterr().out
    assert f"{crowded}: loaded and reset\n" in out
    assert (f"{crowded}:80:6: init (on cream_cheese_1 main_table_alphabet_soup_init_region) does not hold after "
            "the reset (seed 0)\n") in out


def test_check_finds_open_of_a_thing_without_a_drawer_door_or_knob(tmp_path, capsys):
    # Before, plain `check` said ok; `check --load` said "error: open(plate_1): open(plate_1): plate plate_1 has
    # no drawer, door or knob to act on", the predicate twice and no position.
    path = bowl_variant(tmp_path, "open.bddl", GOAL, "(And (Open plate_1))")
    assert main(["check", str(path)]) == 2
    out = capsys.readouterr().out
    assert out == f"{path}:83:16: Open acts on a drawer, door or knob, but 'plate_1' (plate) has none\n"


def test_check_takes_a_suite_folder(tmp_path, capsys):
    """`check DIR` read the folder as a file: "DIR:1:1: cannot read file: Is a directory"."""
    assert main(["check", str(BOWL.parent)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{f}: ok" for f in sorted(str(p) for p in BOWL.parent.glob("*.bddl"))] and len(out) == 3
    err = refused(["check", str(tmp_path)], capsys)
    assert f"{tmp_path}: a folder with no .bddl task files in it or below it" in err


def test_check_searches_below_a_folder_as_libero_lays_out_its_suites(tmp_path, capsys):
    """LIBERO's `bddl_files/` holds a folder per suite: `check bddl_files/` checks them all (it said "a folder
    with no .bddl task files")."""
    for suite in ("suite_a", "suite_b"):
        (tmp_path / suite).mkdir()
        (tmp_path / suite / BOWL.name).write_text(BOWL.read_text())
    assert main(["check", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{tmp_path / s / BOWL.name}: ok" for s in ("suite_a", "suite_b")]


def test_a_predicate_the_scene_cannot_evaluate_is_named_once_at_its_position(soup_env):
    from libero_ll.bddl import BddlError, Loc, Predicate

    where = Loc("t.bddl", 7, 9)
    with pytest.raises(BddlError) as e:
        soup_env.predicate_values([Predicate("open", ("basket_1",), loc=where)])
    assert str(e.value) == "t.bddl:7:9: open(basket_1): basket basket_1 has no drawer, door or knob to act on"
    with pytest.raises(LiberoError) as e:
        soup_env.predicate_values([Predicate("turnon", ("basket_1",))])
    assert str(e.value) == "turnon(basket_1): basket basket_1 has no drawer, door or knob to act on"


SMOKE = REPO / "configs" / "smoke.yaml"


@pytest.mark.parametrize(
    "text, overrides, says",
    [
        ("- 1\n- 2\n", [], "{file}: a config file is a mapping of settings and sections"),
        ("defaults: 3\n", [], "{file}: defaults takes a list of config names or paths"),
        ("defaults: smoke\n", [], "{file}: defaults takes a list of config names or paths"),
        ("name: x\neval:\n  every: ${nosuch}\n", [], "{file}: eval.every: cannot resolve '${nosuch}'"),
        ("train: {epochs: -1}\n", [], "{file}: train.epochs must be a non-negative integer, got -1"),
        ("name: x\n", ["eval.every=${nosuch}"], "override eval.every=${nosuch}: eval.every: cannot resolve"),
        ("name: x\n", ["learner=er"], "override learner=er: learner is a section (name, options, by_name)"),
        ("name: x\n", ["tasks=foo"], "override tasks=foo: tasks takes a list, e.g. tasks=[a,b]"),
    ],
)
def test_train_names_the_file_or_override_of_a_bad_config(text, overrides, says, tmp_path, capsys):
    # Before: TypeError and InterpolationKeyError tracebacks, "s.yaml: no such config file", "Merge error: str is
    # not a subclass of LearnerSection", and range errors that named no file.
    config = tmp_path / "c.yaml"
    config.write_text(text)
    err = refused(["train", str(config), *overrides, f"output_dir={tmp_path / 'runs'}"], capsys)
    assert says.replace("{file}", str(config)) in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_debug_is_taken_after_the_subcommand_too(tmp_path, capsys):
    # Before: `libero-ll train CONFIG --debug` and `libero-ll metrics RUN --debug` ended in "unrecognized
    # arguments: --debug"; only `libero-ll --debug train ...` worked.
    from libero_ll.cli import build_parser

    bad = [str(SMOKE), "train.epochz=3"]
    for argv in (["train", *bad, "--debug"], ["train", str(SMOKE), "--debug", "train.epochz=3"],
                 ["--debug", "train", *bad], ["metrics", str(tmp_path / "nosuch"), "--debug"]):
        with pytest.raises(LiberoError):
            main(argv)
    assert "epochz" in refused(["train", *bad], capsys)  # and without it, the error line as before
    subcommands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert [name for name, p in subcommands.items() if "--debug" not in p._option_string_actions] == []


def test_metrics_shows_nan_as_n_a_on_its_short_line(tmp_path, capsys):
    # Before: "NBT nan" for a run stopped after its first task, though --all (and docs/metrics.md) say "n/a".
    from libero_ll.evaluation.success import SuccessTensor

    run = tmp_path / "run"
    run.mkdir()
    nan = float("nan")
    SuccessTensor(["a", "b"], [[0, 5], []], [[0.0, 1.0], []], [[], []], [[1.0, nan], [nan, nan]]).save(
        run / "success.json"
    )
    assert main(["metrics", str(run)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "NBT n/a (lower is better)" in last and "nan" not in last, last


def test_metrics_says_a_run_folder_does_not_exist(tmp_path, capsys):
    # Before: "error: success tensor file nosuch/success.json does not exist".
    missing, afile = tmp_path / "nosuch", tmp_path / "notes.txt"
    afile.write_text("x")
    assert refused(["metrics", str(missing)], capsys) == f"error: {missing}: no such folder (give a run directory)\n"
    assert refused(["metrics", str(afile), "--all"], capsys) == f"error: {afile}: is a file, not a run directory\n"
    # A folder that is not a run (before: "success tensor file .../success.json does not exist").
    assert refused(["metrics", str(tmp_path)], capsys) == (
        f"error: {tmp_path}: not a run directory (no config.yaml)\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: x\n")
    err = refused(["metrics", str(run), "--reference", str(missing)], capsys)
    assert err == f"error: --reference {missing}: no such folder (give a run directory)\n"
    err = refused(["metrics", str(run), "--single-task", str(run), str(missing)], capsys)
    assert err == f"error: --single-task {missing}: no such folder (give a run directory)\n"


def test_resume_says_a_run_folder_does_not_exist(tmp_path, capsys):
    # Before: "--resume nosuch: not a run directory (no config.yaml)" for a folder that is not there at all.
    missing, afile = tmp_path / "nosuch", tmp_path / "notes.txt"
    afile.write_text("x")
    assert refused(["train", "--resume", str(missing)], capsys) == (
        f"error: --resume {missing}: no such folder (give a run directory)\n")
    assert refused(["train", "--resume", str(afile)], capsys) == (
        f"error: --resume {afile}: is a file, not a run directory\n")
    assert refused(["train", "--resume", str(tmp_path)], capsys) == (
        f"error: --resume {tmp_path}: not a run directory (no config.yaml)\n")


def test_evaluate_names_its_actions_option(fake_run, capsys):
    # Before: "error: actions must be one of sampled, mode, got 'Mode'".
    assert refused(["evaluate", str(fake_run), "--actions", "Mode"], capsys) == (
        "error: --actions Mode: give sampled or mode\n")


def test_evaluate_says_what_a_run_directory_given_is_instead(fake_run, tmp_path, capsys):
    # Before: "error: X: not a run directory (no config.yaml)" for a folder that is not there, for a file, and
    # for a sweep's folder of runs alike.
    missing, notes = tmp_path / "nosuch", tmp_path / "notes.txt"
    notes.write_text("x")
    assert refused(["evaluate", str(missing)], capsys) == f"error: {missing}: no such folder (give a run directory)\n"
    assert refused(["evaluate", str(notes)], capsys) == f"error: {notes}: is a file, not a run directory\n"
    assert refused(["evaluate", str(tmp_path)], capsys) == (
        f"error: {tmp_path}: not a run directory (no config.yaml); it holds 1 run (run): give them, e.g. "
        f"{tmp_path / '*'}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert refused(["evaluate", str(empty)], capsys) == f"error: {empty}: not a run directory (no config.yaml)\n"


def run_of(folder: Path, n_tasks: int) -> Path:
    """A run directory of `n_tasks` copies of BOWL, finished, with a kept policy per stage (not loadable: no
    test here gets as far as loading weights)."""
    import numpy as np

    (folder / "tasks").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    (folder / "config.yaml").write_text("name: fake\n")
    names = [f"task{k}" for k in range(n_tasks)]
    for k, name in enumerate(names):
        (folder / "tasks" / f"{name}.bddl").write_text(BOWL.read_text())
        (folder / "checkpoints" / f"task{k:02d}_best.pt").write_bytes(b"weights")
    (folder / "tasks" / "order.txt").write_text("".join(f"{n}\n" for n in names))
    (folder / "final_policy.pt").write_bytes(b"weights")
    np.savez(folder / "init_states.npz", **{n: np.zeros((2, 3)) for n in names})
    return folder


@pytest.mark.parametrize(
    "options, says",
    [
        (["--checkpoint", "2"], "{b}: checkpoint 2: the run has tasks 1 to 1"),
        (["--tasks", "task1"], "{b}: task 'task1' is not one of the run's tasks: 1 task0"),
        ([], "{b} has no init_states.npz; give new_states (--new-states N)"),
    ],
)
def test_evaluate_checks_every_run_before_the_first_runs_rollouts(options, says, tmp_path, capsys, monkeypatch):
    # Before: `evaluate A B --checkpoint 2` rolled out all of A's tasks, wrote its results, and only then said
    # that B has no stage 2: hours of rollouts before a typo is found.
    import libero_ll.experiments.evaluate as evaluate

    a, b = run_of(tmp_path / "a", 2), run_of(tmp_path / "b", 1)
    if not options:
        (b / "init_states.npz").unlink()
    rolled = []
    monkeypatch.setattr(evaluate, "evaluate_run", lambda run_dir, **kw: rolled.append(run_dir))
    err = refused(["evaluate", str(a), str(b), *options], capsys)
    assert says.replace("{b}", str(b)) in err, err
    assert rolled == [] and not (a / "evaluations").exists()


def test_a_task_file_given_as_the_config_is_not_echoed_whole(tmp_path, capsys):
    # Before: the whole file, 1.3 kB on one line, after "got the single value".
    err = refused(["train", str(BOWL), f"output_dir={tmp_path / 'runs'}"], capsys)
    assert err.startswith(f"error: {BOWL}: a config file is a mapping of settings and sections")
    assert "got the single value '(define (problem LIBERO_Tabletop_Manipulation) (:... (" in err
    assert len(err) - len(str(BOWL)) < 250, err
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_a_frame_rate_its_encoder_cannot_write_before_any_work(tmp_path, capsys):
    # Before: "Svt[error]: The maximum allowed frame rate is 240 fps", then "demo file D: data/demo_0: encoding
    # camera ... failed: Invalid argument (Error setting encoder parameters: bad parameter (0x80001005))":
    # the demo file blamed for the option.
    err = refused(["export", str(tmp_path / "demos"), "--out", str(tmp_path / "out"), "--fps", "241"], capsys)
    assert err == "error: fps 241: libsvtav1 takes at most 240 frames per second; give a lower fps, or use libx264\n"
    assert list(tmp_path.iterdir()) == []


def test_a_sweeps_folder_given_as_a_run_says_the_runs_it_holds(fake_run, tmp_path, capsys):
    # Before: "X is not a run directory: it has no config.yaml" alone, for the folder a sweep wrote its runs in.
    hint = f"; it holds 1 run (run): give them, e.g. {tmp_path / '*'}\n"
    assert refused(["metrics", str(tmp_path)], capsys).endswith(hint)
    assert refused(["train", "--resume", str(tmp_path)], capsys) == (
        f"error: --resume {tmp_path}: not a run directory (no config.yaml){hint}")
    assert refused(["evaluate", str(tmp_path)], capsys) == (
        f"error: {tmp_path}: not a run directory (no config.yaml){hint}")
    assert refused(["report", str(tmp_path), "-o", str(tmp_path / "report")], capsys).endswith(hint)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "is empty"),
        ("name: x\nseed: [1,\n", "is damaged (not valid YAML: expected the node content, but found '<stream end>' "
                                 "at line 3, column 1)"),
        ("- a\n", "is damaged (not a mapping of settings: it holds a list)"),
    ],
)
def test_a_runs_damaged_config_is_said_to_be_the_runs_with_where_a_copy_is_kept(text, says, tmp_path, capsys):
    # Before: "the config file is empty; start from a preset such as configs/cpu.yaml", advice for a config of
    # one's own, for the config a run wrote itself.
    import shlex

    import torch

    run = run_of(tmp_path / "run", 1)
    (run / "config.yaml").write_text(text)
    head = f"error: {run / 'config.yaml'}: the run's own config {says} (a run writes it whole as it starts); "
    for argv in (["train", "--resume", str(run)], ["evaluate", str(run)]):
        err = refused(argv, capsys)
        assert err.startswith(head) and "preset" not in err, err
        assert "no file of the run holds a copy of it (final_policy.pt or resume.pt" in err, err
    # A run that saved keeps its config in its final policy (and its saved state): the message says how to get
    # it back, and the command it gives does.
    config = {"name": "fake", "seed": 3, "train": {"epochs": 2}}
    torch.save({"policy": {}, "config": config}, run / "final_policy.pt")
    err = refused(["evaluate", str(run)], capsys)
    assert err.startswith(head) and f"keeps a copy of its config in {run / 'final_policy.pt'}" in err, err
    assert (run / "config.yaml").read_text() == text  # nothing written over
    command = shlex.split(err.partition(" with: ")[2])
    assert command[:2] == ["python", "-c"]
    subprocess.run([sys.executable, *command[1:]], check=True)
    from libero_ll.evaluation.runs import read_config_file

    assert read_config_file(run / "config.yaml", run=True)[0] == config
