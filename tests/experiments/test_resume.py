"""Crash safety: a run killed at any point and continued with `--resume` ends exactly like an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.experiments.lifelong import run_lifelong

REPO = Path(__file__).resolve().parents[2]
FAST = ["train.epochs=2", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]


def _results(run_dir: Path) -> dict:
    success = json.loads((run_dir / "success.json").read_text())
    return {
        "success": {k: success[k] for k in ("task_names", "eval_epochs", "curves", "losses", "matrix")},
        "resources": json.loads((run_dir / "resources.json").read_text()),
    }


def _same_weights(a: Path, b: Path) -> bool:
    wa = torch.load(a, weights_only=True)["policy"]
    wb = torch.load(b, weights_only=True)["policy"]
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.mark.parametrize(
    "learner, crash_at, workers",
    [
        ("er", "stage 2 epoch 1", 1),  # mid-task, with a replay memory and its random draws
        ("ewc", "stage 2/2", 1),  # after the epoch-0 evaluation of a task, before its first save
        ("er", "stage 2/2", 1),  # the same with a replay memory: the state kept between stages
        ("packnet", "stage 1 fine-tune epoch 1", 1),  # inside the post-prune fine-tune
        ("mtl", "stage 1 epoch 2", 1),  # the single stage of all tasks, at its last epoch
        # The same, its tasks' rollouts in flight together in two workers (three worker pools start: slow).
        pytest.param("mtl", "stage 1 epoch 2", 2, marks=pytest.mark.slow),
    ],
)
def test_crash_and_resume_matches_uninterrupted(learner, crash_at, workers, tmp_path, smoke_data, smoke_envs,
                                                make_smoke_config, stop_run):
    overrides = [*FAST, f"learner.name={learner}", "learner.by_name.packnet.finetune_epochs=2",
                 f"eval.workers={workers}", f"eval.rollouts={workers}"]
    whole = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None, envs=smoke_envs)

    cfg = make_smoke_config(tmp_path / "b", smoke_data, *overrides)
    run_dir = stop_run(cfg, crash_at, smoke_envs)
    saved = torch.load(run_dir / "resume.pt", weights_only=True)
    if saved["position"]["phase"] == "start":
        # Between stages neither the optimiser's moments nor the last stage's best weights are kept.
        assert saved["learner"]["optimizer"] is None and saved["best_state"] is None
    else:
        assert saved["learner"]["optimizer"] is not None and saved["best_state"] is not None
    resumed_lines = []
    run_lifelong(cfg, log=resumed_lines.append, resume=run_dir, envs=smoke_envs)

    assert resumed_lines[0].startswith(f"resuming {run_dir}")
    # The resumed call's times count from the resume, and its lines say so.
    done = [line for line in resumed_lines if line.startswith("done: ")]
    assert len(done) == 1 and " since resuming (evaluation " in done[0]
    assert sum("since resuming" in line for line in resumed_lines if " done in " in line) == 1
    assert _results(run_dir) == _results(whole)
    assert _same_weights(run_dir / "final_policy.pt", whole / "final_policy.pt")


def test_resume_uses_the_runs_own_task_files(tmp_path, smoke_data, smoke_envs, make_smoke_config, monkeypatch,
                                             stop_run):
    """A run of a suite in a folder (a generated one, say) continues from its own copies of the task files
    when that folder is gone or the run is continued from elsewhere, reads a relative data.dir from the folder
    it was started in, and ends as an uninterrupted run."""
    import shutil

    whole = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *FAST), log=lambda s: None, envs=smoke_envs)
    suite = tmp_path / "work" / "my_suite"
    shutil.copytree(REPO / "bddl_tasks" / "quickstart", suite)
    shutil.copytree(smoke_data, tmp_path / "work" / "demos")
    monkeypatch.chdir(tmp_path / "work")
    cfg = make_smoke_config(tmp_path / "b", Path("demos"), *FAST, "suite=my_suite")
    run_dir = stop_run(cfg, "stage 2 epoch 1", smoke_envs)
    shutil.rmtree(suite)
    monkeypatch.chdir(tmp_path)
    resumed = []
    run_lifelong(cfg, log=resumed.append, resume=run_dir, envs=smoke_envs)
    assert f"data.dir demos is read from {tmp_path / 'work' / 'demos'}, the folder the run was started from" in resumed
    assert not (tmp_path / "demos").exists()  # nothing collected anew here
    assert _results(run_dir) == _results(whole)
    assert _same_weights(run_dir / "final_policy.pt", whole / "final_policy.pt")
    # The run's log holds both sessions: why the first stopped, and the second's lines with their times.
    log = (run_dir / "log.txt").read_text()
    assert log.count(" command: ") == 2 and log.count(" run directory: ") == 1
    assert "stopped: Crash: stage 2 epoch 1" in log and log.index("stopped: Crash") < log.index(f" resuming {run_dir}")
    assert "data.dir demos is read from" in log and log.rstrip().splitlines()[-1].split(" ", 2)[2].startswith("done: ")
    # Each session of the run is recorded: where it ran, on what, with which versions.
    sessions = json.loads((run_dir / "environment.json").read_text())["sessions"]
    assert [s["resumed"] for s in sessions] == [False, True]
    assert [s["cwd"] for s in sessions] == [str(tmp_path / "work"), str(tmp_path)]
    assert sessions[0]["versions"]["torch"] == torch.__version__ and sessions[0]["device"].startswith("cpu")


@pytest.mark.parametrize("demos", ["same", "changed"])
def test_a_run_copied_without_its_checkpoints_goes_on_elsewhere(demos, tmp_path, smoke_data, smoke_envs,
                                                                make_smoke_config, stop_run):
    """What a run needs to go on is its state and small files: a copy without checkpoints/ and tensorboard/,
    continued on demos collected anew (a copy here), ends as the uninterrupted run and writes the stage's
    checkpoint again; demos that act otherwise than those the run began with are named in a warning."""
    import shutil

    import h5py

    whole = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *FAST), log=lambda s: None, envs=smoke_envs)
    first = tmp_path / "first"
    shutil.copytree(smoke_data, first)
    cfg = make_smoke_config(tmp_path / "b", first, *FAST)
    run_dir = stop_run(cfg, "stage 2 epoch 1", smoke_envs)
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(run_dir, moved, ignore=shutil.ignore_patterns("checkpoints", "tensorboard", ".run.lock"))
    shutil.rmtree(first)
    shutil.copytree(smoke_data, first)  # the same demos, collected again
    if demos == "changed":
        with h5py.File(first / f"{cfg.tasks[1]}.hdf5", "r+") as f:
            f["data/demo_1/actions"][0, 0] += 0.01
    began = torch.load(moved / "resume.pt", weights_only=True)["demos"]
    assert sorted(began) == sorted(cfg.tasks)
    resumed = []
    run_lifelong(cfg, log=resumed.append, resume=moved, envs=smoke_envs)
    warned = [line for line in resumed if line.startswith("warning: the demos of")]
    assert (moved / "checkpoints" / "task01_best.pt").exists()
    if demos == "same":
        assert warned == []
        assert _results(moved) == _results(whole)
        assert _same_weights(moved / "final_policy.pt", whole / "final_policy.pt")
    else:
        assert len(warned) == 1 and warned[0].startswith(f"warning: the demos of {cfg.tasks[1]} (")
        assert "are not those the run began with" in warned[0]
        # The run keeps the demos it began with as its reference: a later resume warns again.
        assert torch.load(moved / "resume.pt", weights_only=True)["demos"] == began


def test_kill_9_and_resume_from_the_command_line(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    overrides = ["train.epochs=4", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]
    whole = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None, envs=smoke_envs)

    runs = tmp_path / "b" / "runs"
    cmd = [sys.executable, "-m", "libero_ll.cli", "train", str(REPO / "configs" / "smoke.yaml"),
           f"output_dir={runs}", f"data.dir={smoke_data}", *overrides]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    errors = tmp_path / "stderr.txt"
    with open(errors, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 240
    position = None
    try:
        # Kill as soon as epoch 1 of the second task is saved: mid-task, with epochs still to run.
        while time.time() < deadline and proc.poll() is None:
            progress = list(runs.glob("*/progress.json"))
            if progress:
                try:
                    position = json.loads(progress[0].read_text())
                except (OSError, json.JSONDecodeError):
                    position = None
                if position and position["stage"] == 1 and position["phase"] == "train" and position["epoch"] >= 1:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()  # the deadline passed, or the kill above has not landed yet (then this is a no-op)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, errors.read_text()[-2000:]
    run_dir = next(runs.iterdir())
    assert not (run_dir / "final_policy.pt").exists()

    assert main(["train", "--resume", str(run_dir)]) == 0
    assert _results(run_dir) == _results(whole)
    assert _same_weights(run_dir / "final_policy.pt", whole / "final_policy.pt")


def test_resume_errors_are_clear(tmp_path, capsys):
    assert main(["train", "--resume", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["train", str(REPO / "configs" / "smoke.yaml"), "--resume", str(tmp_path)]) == 2
    assert "no config" in capsys.readouterr().err


def test_a_run_paused_between_stages_ends_like_an_uninterrupted_one(tmp_path, smoke_data, smoke_envs,
                                                                    make_smoke_config, capsys):
    overrides = [*FAST, "learner.name=er"]
    whole = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None, envs=smoke_envs)

    cfg = make_smoke_config(tmp_path / "b", smoke_data, *overrides)
    lines = []
    run_dir = run_lifelong(cfg, log=lines.append, envs=smoke_envs, max_stages=1)
    assert lines[-1] == f"paused after 1 stage as asked, with stage 2/2 next; continue with: libero-ll train --resume {run_dir}"
    assert not (run_dir / "final_policy.pt").exists()
    saved = torch.load(run_dir / "resume.pt", weights_only=True)
    assert saved["position"] == {"stage": 1, "phase": "start", "epoch": 0}
    assert saved["learner"]["optimizer"] is None and saved["best_state"] is None

    # Asked for more stages than are left, the run ends as usual.
    lines = []
    run_lifelong(cfg, log=lines.append, resume=run_dir, envs=smoke_envs, max_stages=5)
    assert lines[-1].startswith("done: 2 tasks")
    assert _results(run_dir) == _results(whole)
    assert _same_weights(run_dir / "final_policy.pt", whole / "final_policy.pt")

    # The command line refuses --stages 0 itself (tests/cli/test_cli_bad_inputs.py); the library does too.
    with pytest.raises(LiberoError, match="number of stages to train in one call must be at least 1, got 0"):
        run_lifelong(cfg, log=lines.append, resume=run_dir, envs=smoke_envs, max_stages=0)


def test_evaluating_alongside_training_gives_the_same_run(tmp_path, smoke_data, smoke_envs, make_smoke_config,
                                                          stop_run):
    """eval.overlap rolls the weights out in a process of its own while training goes on: the same scores,
    kept weights and final policy as evaluating in the training process, also for a run killed while an
    evaluation was out and resumed (PackNet: its earlier tasks' own networks are sent one by one)."""
    overrides = [*FAST, "train.epochs=4", "eval.every=2", "learner.name=packnet",
                 "learner.by_name.packnet.finetune_epochs=1"]
    plain = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None, envs=smoke_envs)

    lines = []
    along = run_lifelong(make_smoke_config(tmp_path / "b", smoke_data, *overrides, "eval.overlap=true"),
                         log=lines.append, envs=smoke_envs)
    assert _results(along) == _results(plain)
    assert _same_weights(along / "final_policy.pt", plain / "final_policy.pt")
    assert "evaluating alongside training (eval.overlap) in a process of its own with 1 environment worker" in lines
    assert "stage 2 epoch 4: success 0.00, curve 0:0.00 2:0.00 4:0.00" in lines
    assert lines[-1].startswith("done: 2 tasks, 10 epochs in ") and "alongside training" in lines[-1]

    cfg = make_smoke_config(tmp_path / "c", smoke_data, *overrides, "eval.overlap=true")
    run_dir = stop_run(cfg, "stage 2 epoch 3", smoke_envs)
    run_lifelong(cfg, log=lambda s: None, resume=run_dir, envs=smoke_envs)
    assert _results(run_dir) == _results(plain)
    assert _same_weights(run_dir / "final_policy.pt", plain / "final_policy.pt")


@pytest.mark.parametrize("resume_overlap", ["true", "false"])
def test_a_run_evaluating_alongside_at_every_epoch_saves_every_epoch(resume_overlap, tmp_path, smoke_data,
                                                                     smoke_envs, make_smoke_config, stop_run):
    """With an evaluation alongside training at every epoch one was always out, and no state was saved within a
    stage: a run killed late in a stage went back to its start. The state now holds the evaluations still out
    (the weights each evaluates), and a resume sends them again, or runs them itself when it evaluates in the
    training process: the same run as one never stopped."""
    from omegaconf import OmegaConf

    from libero_ll.experiments.background_eval import BackgroundEvaluator

    overrides = [*FAST, "train.epochs=3", "eval.every=1"]
    plain = run_lifelong(make_smoke_config(tmp_path / "a", smoke_data, *overrides), log=lambda s: None, envs=smoke_envs)
    cfg = make_smoke_config(tmp_path / "b", smoke_data, *overrides, "eval.overlap=true")
    # Evaluations slower than epochs: none is in before the stage waits for them all at its end.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BackgroundEvaluator, "done", lambda self, ticket: False)
        run_dir = stop_run(cfg, "stage 2 epoch 3", smoke_envs)
    saved = torch.load(run_dir / "resume.pt", weights_only=True)
    assert saved["position"] == {"stage": 1, "phase": "train", "epoch": 2}
    assert [p["epoch"] for p in saved["pending"]] == [0, 1, 2]
    cfg.eval.overlap = OmegaConf.create({"v": resume_overlap == "true"}).v  # another machine may change it
    OmegaConf.save(cfg, run_dir / "config.yaml")
    run_lifelong(cfg, log=lambda s: None, resume=run_dir, envs=smoke_envs)
    assert _results(run_dir) == _results(plain)
    assert _same_weights(run_dir / "final_policy.pt", plain / "final_policy.pt")
