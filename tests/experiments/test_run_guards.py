"""What `libero-ll train` refuses, and how it stops: a run folder in use by another process, a run whose saved
state is gone, too few demos, a device or name that cannot be, a config.yaml edited under a run, a damaged
file of a run; SIGTERM taken as Ctrl-C, and what either says is kept; demo files that do not fit, found before
the run's folder is made. Every refusal is an `error: ...` line (exit 2) that leaves the run's files as they were
(a folder the refused call made itself is not left behind)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from libero_ll.cli import main
from libero_ll.experiments import lifelong, run_files

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "configs" / "smoke.yaml")
FAST = ["train.epochs=2", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]


@pytest.fixture(scope="module")
def paused(tmp_path_factory, smoke_data, smoke_envs, make_smoke_config) -> Path:
    """A run paused after its first stage (train --stages 1): its state between stages saved."""
    cfg = make_smoke_config(tmp_path_factory.mktemp("paused"), smoke_data, *FAST)
    return lifelong.run_lifelong(cfg, log=lambda s: None, envs=smoke_envs, max_stages=1)


@pytest.fixture
def run_copy(paused, tmp_path) -> Path:
    """A copy of the paused run of its own for one test."""
    return Path(shutil.copytree(paused, tmp_path / paused.name))


def _files(run_dir: Path) -> dict:
    """Every file of a run directory and its bytes (the lock file aside)."""
    return {p.relative_to(run_dir): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name != ".run.lock"}


def _edit_config(run_dir: Path, **changes) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run_dir / "config.yaml")
    for key, value in changes.items():
        OmegaConf.update(cfg, key.replace("__", "."), value)
    OmegaConf.save(cfg, run_dir / "config.yaml")


def _forget_stored_config(run_dir: Path) -> None:
    """Make resume.pt as a run made before runs kept their config in it wrote it."""
    state = torch.load(run_dir / "resume.pt", weights_only=True)
    state.pop("config")
    torch.save(state, run_dir / "resume.pt")


# --- 1. one process per run folder ---------------------------------------------------------------------------


def test_a_training_run_holds_its_folder(tmp_path, smoke_data, monkeypatch, capsys):
    """While `train` runs, a `train --resume` of its folder is refused at once, writing nothing there."""
    runs = tmp_path / "runs"
    nested = {}
    write_json = lifelong.write_json

    def resume_meanwhile(path, obj):
        write_json(path, obj)
        if path.name == "progress.json" and not nested:
            capsys.readouterr()
            before = _files(path.parent)
            nested["rc"] = main(["train", "--resume", str(path.parent)])
            nested["err"] = capsys.readouterr().err
            nested["unchanged"] = _files(path.parent) == before

    monkeypatch.setattr(lifelong, "write_json", resume_meanwhile)
    assert main(["train", SMOKE, f"output_dir={runs}", f"data.dir={smoke_data}", *FAST]) == 0
    run_dir = next(runs.iterdir())
    assert nested["rc"] == 2, nested["err"]
    assert f"error: {run_dir} is in use by another process (pid {os.getpid()})" in nested["err"]
    assert nested["unchanged"]
    assert (run_dir / "log.txt").read_text().count(" command: ") == 1
    with run_files.hold_run_dir(run_dir):  # released at the end
        pass


def test_a_killed_holder_does_not_block_a_resume(run_copy, capsys):
    """The lock of a process killed with kill -9 is gone with it: the run resumes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from libero_ll.experiments.run_files import hold_run_dir\n"
         "held = hold_run_dir(sys.argv[1])\nheld.__enter__()\nprint('held', flush=True)\ntime.sleep(300)\n", str(run_copy)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = _files(run_copy)
        assert main(["train", "--resume", str(run_copy)]) == 2
        assert f"{run_copy} is in use by another process (pid {holder.pid})" in capsys.readouterr().err
        assert _files(run_copy) == before
    finally:
        holder.kill()  # SIGKILL: no cleanup of its own
        holder.wait()
    assert main(["train", "--resume", str(run_copy)]) == 0
    assert (run_copy / "final_policy.pt").exists()


# --- 2. a run whose saved state is gone -------------------------------------------------------------------------


def test_resume_refuses_a_run_that_lost_its_state(run_copy, tmp_path, smoke_data, smoke_envs, make_smoke_config,
                                                  stop_run, capsys):
    (run_copy / "resume.pt").unlink()
    before = _files(run_copy)
    assert main(["train", "--resume", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"error: {run_copy / 'resume.pt'} is missing, but the run had got past its first save" in err
    assert "progress.json says 1 of 2 stages had ended" in err and "cannot be continued" in err
    assert _files(run_copy) == before  # success.json and the rest as they were

    (run_copy / "progress.json").unlink()
    assert main(["train", "--resume", str(run_copy)]) == 2
    assert "checkpoints/task00_best.pt" in capsys.readouterr().err
    (run_copy / "final_policy.pt").write_bytes(b"")
    assert main(["train", "--resume", str(run_copy)]) == 2
    assert "from a run that has finished" in capsys.readouterr().err

    # A run killed before its first save starts over in its folder, as before.
    cfg = make_smoke_config(tmp_path / "b", smoke_data, *FAST)
    early = stop_run(cfg, "stage 1/2", smoke_envs)
    assert not (early / "resume.pt").exists()
    lines = []
    lifelong.run_lifelong(cfg, log=lines.append, resume=early, envs=smoke_envs)
    assert lines[-1].startswith("done: 2 tasks")


# --- 3. too few demos ------------------------------------------------------------------------------------------


def test_too_few_demos_is_an_error_before_any_work(tmp_path, smoke_data, capsys):
    import h5py

    data = Path(shutil.copytree(smoke_data, tmp_path / "data"))
    runs = tmp_path / "runs"
    first = data / "put_the_alphabet_soup_in_the_basket.hdf5"
    args = ["train", SMOKE, f"output_dir={runs}", f"data.dir={data}", *FAST, "data.demos_per_task=3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"error: {first} holds 2 demos of put_the_alphabet_soup_in_the_basket, but data.demos_per_task is 3" in err
    assert (f"libero-ll collect --task {REPO / 'bddl_tasks' / 'quickstart' / first.stem}.bddl --demos 3 --out {data} "
            f"--seed 0 --image-size 32 --robot-mesh collision --max-steps 300 --overwrite") in err
    assert "delete the file" in err and "set data.demos_per_task=2" in err
    assert not runs.exists()  # no run folder, nothing built

    # A collection that left out a demo the expert failed: more attempts, not the same collection again.
    with h5py.File(first, "r+") as f:
        f["data"].attrs["demos_requested"] = 3
        f["data"].attrs["failed_demo_indices"] = np.array([2])
        f["data"].attrs["max_attempts"] = 5
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "left out demo 2, whose 5 attempts by the expert all failed" in err
    assert "--max-attempts 10 --overwrite" in err and "would fail the same demos again" in err
    # Demos imported from a LeRobot dataset.
    with h5py.File(first, "r+") as f:
        f["data"].attrs["generator"] = "lerobot import (v3.0)"
        f["data"].attrs["lerobot_episodes"] = 2
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "imported from a LeRobot dataset with 2 episodes" in err and "import a dataset with more episodes" in err


def test_a_run_whose_own_collection_came_short_stops_before_training(tmp_path, smoke_data, smoke_envs,
                                                                      make_smoke_config, monkeypatch):
    """The run collects the files it lacks; when that collection comes short (the expert failed some demos), the
    run stops there, before training."""
    from libero_ll.errors import LiberoError

    def collect_short(cfg, tasks, env_cfg, log):  # the expert kept 2 of the 3 demos asked of each task
        Path(cfg.data.dir).mkdir(parents=True, exist_ok=True)
        for t in tasks:
            shutil.copyfile(smoke_data / f"{t.stem}.hdf5", Path(cfg.data.dir) / f"{t.stem}.hdf5")

    monkeypatch.setattr(lifelong, "collect_missing_demos", collect_short)
    lines = []
    cfg = make_smoke_config(tmp_path, tmp_path / "data", *FAST, "data.demos_per_task=3")
    with pytest.raises(LiberoError, match=r"holds 2 demos of put_the_alphabet_soup_in_the_basket, but "
                                          r"data.demos_per_task is 3 .*set data.demos_per_task=2"):
        lifelong.run_lifelong(cfg, log=lines.append, envs=smoke_envs)
    assert not any(" epoch " in line for line in lines)


# --- 4. a device, a name, weights and files that cannot be --------------------------------------------------


@pytest.mark.parametrize("setting, message", [
    ("device=tpu", "device must be auto (a CUDA GPU when there is one, else the CPU), cpu, cuda or cuda:N"),
    ("device=cuda:64", "device=cuda:64 but "),
    ("name=../../escaped", "name '../../escaped': a run's name begins the name of its folder under output_dir, "
                           "so it cannot hold a path separator or '..'"),
    ("name=a/b", "cannot hold a path separator"),
])
def test_a_bad_device_or_name_is_named_before_any_work(setting, message, tmp_path, capsys):
    out = tmp_path / "out" / "runs"
    assert main(["train", SMOKE, f"output_dir={out}", f"data.dir={tmp_path / 'data'}", setting]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "data").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_resume_with_policy_sizes_changed_says_the_config_no_longer_fits(run_copy, capsys):
    _forget_stored_config(run_copy)  # a run from before runs kept their config: the weights tell
    _edit_config(run_copy, policy__cfg__embed_size=32)
    before = _files(run_copy)
    assert main(["train", "--resume", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"error: {run_copy / 'config.yaml'} no longer matches the run's saved weights (" in err
    assert "in resume.pt but" in err and "restore them to continue the run" in err
    assert _files(run_copy) == before


def test_a_damaged_init_states_file_is_named(run_copy, capsys):
    (run_copy / "init_states.npz").write_bytes(b"not an npz file")
    assert main(["train", "--resume", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"error: {run_copy / 'init_states.npz'} is damaged and cannot be read" in err and "delete it" in err
    (run_copy / "init_states.npz").unlink()  # as the message says: made again, and the run goes on
    assert main(["train", "--resume", str(run_copy)]) == 0


# --- 5. config.yaml edited under a run -------------------------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    ({"learner__name": "seql"}, "learner.name was 'er', it is 'seql' now"),
    ({"train__epochs": 3}, "train.epochs was 2, it is 3 now"),
    ({"data__demos_per_task": 1}, "data.demos_per_task was 2, it is 1 now"),
    ({"tasks": ["put_the_black_bowl_on_the_plate", "put_the_alphabet_soup_in_the_basket"]}, "tasks is ["),
])
def test_resume_refuses_a_config_changed_since_the_run_started(change, message, run_copy, capsys):
    _edit_config(run_copy, **change)
    before = _files(run_copy)
    assert main(["train", "--resume", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"error: {run_copy / 'config.yaml'}" in err and message in err
    assert _files(run_copy) == before


def test_resume_allows_what_another_machine_changes(run_copy, capsys):
    """Where and how fast the run goes on may change (another machine), nothing else."""
    _edit_config(run_copy, num_threads=2, device="cpu", data__collect_workers=2, output_dir="elsewhere",
                 train__data_on_device=False, eval__overlap=None, seed=7)
    assert main(["train", "--resume", str(run_copy)]) == 2
    assert "seed was 100, it is 7 now" in capsys.readouterr().err
    _edit_config(run_copy, seed=100)
    assert main(["train", "--resume", str(run_copy)]) == 0
    assert (run_copy / "final_policy.pt").exists()


def test_a_resume_on_another_device_or_compiled_says_it_is_not_bit_for_bit():
    """Compared as each session resolved them: `device: auto` and `train.compile: null` read the same in the
    config whether the run trains on a CPU or a GPU."""
    before = {"device": "cpu", "precision": "fp32", "compile": False}
    assert lifelong._stream_changes(before, dict(before)) == []
    notes = lifelong._stream_changes(before, {"device": "cuda", "precision": "bf16", "compile": "reduce-overhead"})
    assert [n.split(" and this")[0] for n in notes] == [
        "note: the run trained with device cpu", "note: the run trained with train.precision fp32",
        "note: the run trained with train.compile false"]
    assert "this session with reduce-overhead" in notes[2] and "bit for bit" in notes[2]
    assert lifelong._stream_changes(None, before) == []  # a state saved before runs recorded it


def test_a_saved_state_records_how_its_session_trained(run_copy, capsys):
    state = torch.load(run_copy / "resume.pt", weights_only=True)
    assert state["training"] == {"device": "cpu", "precision": "fp32", "compile": False}
    state["training"]["device"] = "cuda"  # as if the run had begun on a GPU
    torch.save(state, run_copy / "resume.pt")
    assert main(["train", "--resume", str(run_copy)]) == 0
    assert "note: the run trained with device cuda and this session with cpu" in capsys.readouterr().out


# --- 6. SIGTERM and Ctrl-C --------------------------------------------------------------------------------------


class _Killed(Exception):
    """What SIGTERM raises in this test when `train` does not handle it (the test process must not die)."""


@contextlib.contextmanager
def _sigterm_raises_killed():
    """SIGTERM raises _Killed in this process meanwhile (unless `train` handles it); the handler it had after."""

    def killed(signum, frame):
        raise _Killed()

    previous = signal.signal(signal.SIGTERM, killed)
    try:
        yield killed
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path, smoke_data, monkeypatch, capsys):
    runs = tmp_path / "runs"
    write_json = lifelong.write_json

    def terminate_after_epoch_1(path, obj):
        write_json(path, obj)
        if path.name == "progress.json" and obj["phase"] == "train" and obj["epoch"] == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(lifelong, "write_json", terminate_after_epoch_1)
    with _sigterm_raises_killed() as killed:
        rc = main(["train", SMOKE, f"output_dir={runs}", f"data.dir={smoke_data}", *FAST])
        assert signal.getsignal(signal.SIGTERM) is killed  # train's own handler is gone again
    assert rc == 143
    run_dir = next(runs.iterdir())
    assert "terminated: the run is saved at its last completed epoch" in capsys.readouterr().err
    last = (run_dir / "log.txt").read_text().rstrip().splitlines()[-1]
    assert " stopped: Terminated: SIGTERM" in last
    assert json.loads((run_dir / "progress.json").read_text())["epoch"] == 1
    monkeypatch.setattr(lifelong, "write_json", write_json)
    assert main(["train", "--resume", str(run_dir)]) == 0


def test_ctrl_c_says_the_run_is_kept_and_the_command_that_continues_it(tmp_path, smoke_data, signal_once):
    """A real Ctrl-C (SIGINT) in mid-run: the state is saved, and the message says so with the exact command that
    goes on (before: a bare "interrupted")."""
    runs = tmp_path / "runs"
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [sys.executable, "-m", "libero_ll.cli", "train", SMOKE, f"output_dir={runs}", f"data.dir={smoke_data}",
           "train.epochs=500", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]
    rc, text = signal_once(cmd, env, lambda: _trained_an_epoch(runs))
    assert rc == 130, text[-3000:]
    run_dir = next(runs.iterdir())
    assert text.splitlines()[-1] == (f"interrupted: the run is saved at its last completed epoch; continue it with "
                                     f"libero-ll train --resume {run_dir}")
    assert "Traceback" not in text
    assert (run_dir / "resume.pt").exists()
    assert (run_dir / "log.txt").read_text().rstrip().splitlines()[-1].endswith(" stopped: KeyboardInterrupt")


def _trained_an_epoch(runs: Path) -> bool:
    for progress in runs.glob("*/progress.json"):
        try:
            return json.loads(progress.read_text())["epoch"] >= 1
        except (OSError, ValueError, KeyError):
            return False
    return False


def test_sigterm_after_the_run_has_ended_says_it_has_ended(run_copy, monkeypatch, capsys):
    """A signal that comes once the final policy is written (a scheduler's time limit, say) does not send the
    user to resume a run that has ended."""
    save = lifelong.atomic_torch_save

    def terminate_after_the_final_policy(obj, path):
        save(obj, path)
        if Path(path).name == "final_policy.pt":
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(lifelong, "atomic_torch_save", terminate_after_the_final_policy)
    with _sigterm_raises_killed():
        assert main(["train", "--resume", str(run_copy)]) == 143
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"terminated after the run had ended: its results are in {run_copy} (libero-ll metrics {run_copy}); "
        f"there is nothing to resume")


def test_what_a_stopped_run_is_told_follows_what_its_folder_holds(tmp_path):
    from libero_ll.cli.train import stopped_line

    began = "interrupted before the run began; run the same command again to start it"
    assert stopped_line("interrupted", None) == began
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("{}")
    assert stopped_line("interrupted", run_dir) == (
        f"interrupted before the run's first save: nothing it trained is kept (demos it collected are); start it "
        f"again with libero-ll train --resume {run_dir}")
    (run_dir / "resume.pt").write_bytes(b"")
    (run_dir / "progress.json").write_text('{"stage": 1, "phase": "train", "epoch": 3, "stages": 2}')
    assert stopped_line("terminated", run_dir) == (
        f"terminated: the run is saved at its last completed epoch; continue it with libero-ll train --resume "
        f"{run_dir}")
    (run_dir / "progress.json").write_text('{"stage": 2, "phase": "start", "epoch": 0, "stages": 2}')
    assert stopped_line("interrupted", run_dir) == (
        f"interrupted as the run ended, before its final policy was written; libero-ll train --resume {run_dir} "
        f"writes it, training nothing again")
    (run_dir / "final_policy.pt").write_bytes(b"")
    ended = stopped_line("interrupted", run_dir)
    assert ended.startswith(f"interrupted after the run had ended: its results are in {run_dir}")


# --- 7. demo files that do not fit, and errors found once the run folder is made --------------------------------


def _unfit_demos(smoke_data: Path, folder: Path, problem: str) -> Path:
    """A copy of the smoke demos with one problem: images of 64 px (the preset wants 32), or a dataset missing."""
    import h5py

    data = Path(shutil.copytree(smoke_data, folder))
    second = data / "put_the_black_bowl_on_the_plate.hdf5"
    for path in sorted(data.glob("*.hdf5")):
        with h5py.File(path, "r+") as f:
            for demo in f["data"].values():
                if problem == "64 px":
                    for key in ("agentview_rgb", "eye_in_hand_rgb"):
                        images = demo["obs"][key][()]
                        del demo["obs"][key]
                        demo["obs"][key] = images.repeat(2, axis=1).repeat(2, axis=2)
            if path == second and problem == "no agentview":
                del f["data/demo_1/obs/agentview_rgb"]
            if path == second and problem == "no actions":
                del f["data/demo_0/actions"]
    return data


@pytest.mark.parametrize("problem, message", [
    ("64 px", "put_the_alphabet_soup_in_the_basket.hdf5: images are 64x64 but env.image_size is 32; set "
              "env.image_size=64"),
    ("no agentview", "put_the_black_bowl_on_the_plate.hdf5: data/demo_1/obs has no 'agentview_rgb' dataset"),
    ("no actions", "put_the_black_bowl_on_the_plate.hdf5: data/demo_0 has no 'actions' dataset"),
])
def test_demo_files_that_do_not_fit_leave_no_run_folder(problem, message, tmp_path, smoke_data, capsys):
    """Found before the run's folder is made (before: a folder with config.yaml, log.txt and an empty
    checkpoints/ was left, which report listed as an unfinished run and --resume failed on again)."""
    data = _unfit_demos(smoke_data, tmp_path / "data", problem)
    runs = tmp_path / "runs"
    assert main(["train", SMOKE, f"output_dir={runs}", f"data.dir={data}", *FAST]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err
    assert "run directory:" not in out
    assert not runs.exists()


def test_an_error_found_once_the_run_folder_is_made_removes_that_folder_only(
        tmp_path, smoke_data, smoke_envs, make_smoke_config, stop_run, monkeypatch, capsys):
    """A problem that shows only once the run has its folder removes the folder this call made while it holds no
    saved state, and says so; a folder an earlier session made (continued with --resume) is kept."""
    from libero_ll.errors import LiberoError

    earlier = stop_run(make_smoke_config(tmp_path / "b", smoke_data, *FAST), "stage 1/2", smoke_envs)

    def no_states(*args):
        raise LiberoError("no initial states")

    monkeypatch.setattr(lifelong, "_init_states", no_states)
    runs = tmp_path / "runs"
    assert main(["train", SMOKE, f"output_dir={runs}", f"data.dir={smoke_data}", *FAST]) == 2
    out, err = capsys.readouterr()
    made = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run directory: "))
    assert err.splitlines()[-1] == f"error: no initial states (nothing of the run is kept: {made} is removed)"
    assert list(runs.iterdir()) == []

    assert main(["train", "--resume", str(earlier)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "error: no initial states"
    assert (earlier / "config.yaml").exists() and (earlier / "log.txt").exists()


# --- 8. a run whose training diverges --------------------------------------------------------------------------


def test_a_loss_that_is_no_longer_a_number_stops_the_run_with_what_it_kept(
        tmp_path, smoke_data, monkeypatch, capsys):
    """NaN weights would waste every later epoch and evaluation: the run stops at the first epoch whose loss is
    NaN, says so, and keeps its files as saved after the epoch before."""
    from libero_ll.learners.base import Learner

    real, calls = Learner.train_epoch, []

    def diverges_second(self, dataset):
        calls.append(real(self, dataset))
        return float("nan") if len(calls) == 2 else calls[-1]

    monkeypatch.setattr(Learner, "train_epoch", diverges_second)
    runs = tmp_path / "runs"
    assert main(["train", SMOKE, f"output_dir={runs}", f"data.dir={smoke_data}", *FAST]) == 2
    out, err = capsys.readouterr()
    assert "stage 1 epoch 1: loss" in out and "stage 1 epoch 2" not in out
    assert err.splitlines()[-1].startswith("error: stage 1 epoch 2: the training loss is nan (the policy's weights "
                                           "diverged at a learning rate of ")
    assert "start a new run with a lower train.lr" in err
    (run,) = runs.iterdir()
    progress = json.loads((run / "progress.json").read_text())
    assert (progress["stage"], progress["phase"], progress["epoch"]) == (0, "train", 1)


def test_a_run_says_when_it_trains_in_bf16_or_compiled(tmp_path, smoke_data, smoke_envs, make_smoke_config,
                                                     stop_run):
    # The paper preset leaves both to the machine (null): on a GPU the run says what it chose.
    lines = []
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "train.precision=bf16")
    with pytest.raises(_Stop):
        lifelong.run_lifelong(cfg, log=lambda line: lines.append(line) or _stop_at(line, "training on"),
                              envs=smoke_envs)
    assert lines[-1] == "training on cpu: bf16 autocast"
    lines.clear()
    cfg = make_smoke_config(tmp_path / "auto", smoke_data, *FAST, "train.precision=null", "train.compile=null")
    with pytest.raises(_Stop):
        lifelong.run_lifelong(cfg, log=lambda line: lines.append(line) or _stop_at(line, "stage 1 epoch 1"),
                              envs=smoke_envs)
    assert not any(line.startswith("training on") for line in lines)  # float32 and eager on a CPU: no line


class _Stop(Exception):
    """Stops a run at a given log line."""


def _stop_at(line: str, start: str) -> None:
    if line.startswith(start):
        raise _Stop(line)


def test_ctrl_c_while_the_libraries_load_says_the_run_had_not_begun(monkeypatch, capsys):
    # The first second of `libero-ll train` loads torch and the library; a Ctrl-C there printed a bare
    # "interrupted".
    import types

    class Loading(types.ModuleType):
        def __getattr__(self, name):
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "libero_ll.experiments.lifelong", Loading("libero_ll.experiments.lifelong"))
    assert main(["train", SMOKE]) == 130
    assert capsys.readouterr().err.strip() == "interrupted before the run began; run the same command again to start it"


def test_a_stop_during_a_save_leaves_the_state_and_progress_together(tmp_path, smoke_data, smoke_envs,
                                                                     make_smoke_config, monkeypatch):
    """A Ctrl-C that came while resume.pt was written was delivered before progress.json was: the run's folder
    then showed no progress (or an older one), and `metrics` and `report` took the stopped run for a finished
    one. Now both are written before the interrupt is raised."""
    real_save = lifelong.atomic_torch_save
    calls = []

    def save_then_ctrl_c(obj, path):
        real_save(obj, path)
        if Path(path).name == "resume.pt":
            calls.append(obj["position"])
            if len(calls) == 2:
                signal.raise_signal(signal.SIGINT)  # as if Ctrl-C came during the save

    monkeypatch.setattr(lifelong, "atomic_torch_save", save_then_ctrl_c)
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST)
    with pytest.raises(KeyboardInterrupt) as stopped:
        lifelong.run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    run_dir = stopped.value.run_dir
    progress = json.loads((run_dir / "progress.json").read_text())
    assert {k: progress[k] for k in ("stage", "phase", "epoch")} == calls[-1]
    assert torch.load(run_dir / "resume.pt", weights_only=True)["position"] == calls[-1]


def test_a_run_without_progress_or_final_policy_is_unfinished(run_copy, capsys):
    """A run stopped before its first save (with evaluations alongside training, after its epoch-0 evaluation)
    has success.json but no progress.json: it is unfinished, not a run that has ended."""
    from libero_ll.evaluation.runs import unfinished_stages

    assert unfinished_stages(run_copy) == (1, 2)
    (run_copy / "progress.json").unlink()
    assert unfinished_stages(run_copy) == (0, 2)
    assert main(["metrics", str(run_copy)]) == 0
    assert "unfinished: 0 of 2 stages ended" in capsys.readouterr().out
    _edit_config(run_copy, learner__name="mtl")
    assert unfinished_stages(run_copy) == (0, 1)
    (run_copy / "resume.pt").unlink()
    assert unfinished_stages(run_copy) == (0, 1)  # its task files say that `libero-ll train` made it
    shutil.rmtree(run_copy / "tasks")
    assert unfinished_stages(run_copy) is None  # made by hand: nothing says it is a run that stopped
    (run_copy / "final_policy.pt").write_bytes(b"")
    (run_copy / "resume.pt").write_bytes(b"")
    assert unfinished_stages(run_copy) is None


def test_a_damaged_state_says_the_run_cannot_go_on_and_what_is_kept(run_copy, capsys):
    state = run_copy / "resume.pt"
    state.write_bytes(state.read_bytes()[:5000])  # cut short, as by a full disk
    before = _files(run_copy)
    assert main(["train", "--resume", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"{state}: not a readable checkpoint (damaged or not written by libero_ll; " in err
    assert "the run cannot be continued without a whole resume.pt" in err
    assert f"libero-ll train {run_copy / 'config.yaml'}" in err and "checkpoints/task00_best.pt" in err
    assert "Traceback" not in err and _files(run_copy) == before


def test_metrics_of_a_run_training_now_says_so(run_copy, capsys):
    # It said "libero-ll train --resume RUN goes on", a command refused while the run trains.
    with run_files.hold_run_dir(run_copy):
        assert main(["metrics", str(run_copy)]) == 0
        assert f"learnt so far (training now (pid {os.getpid()}))" in capsys.readouterr().out
    assert main(["metrics", str(run_copy)]) == 0
    assert f"learnt so far (libero-ll train --resume {run_copy} goes on)" in capsys.readouterr().out


def test_a_config_edited_after_the_run_is_named_by_metrics_and_report(run_copy, tmp_path, capsys):
    # A finished ER run's config.yaml set to another learner was reported as that learner without a word.
    assert main(["metrics", str(run_copy)]) == 0
    assert "warning" not in capsys.readouterr().err
    _edit_config(run_copy, learner__name="ewc")
    assert main(["metrics", str(run_copy)]) == 0
    said = f"{run_copy / 'config.yaml'} differs from the one the run's last session ran with (edited after the run?)"
    assert f"warning: {said}" in capsys.readouterr().err
    assert main(["report", str(run_copy), "-o", str(tmp_path / "report"), "--unfinished"]) == 0
    assert said in capsys.readouterr().out


def test_a_lost_success_json_says_how_to_get_it_back(run_copy, capsys):
    saved = (run_copy / "success.json").read_bytes()
    (run_copy / "success.json").unlink()
    assert main(["metrics", str(run_copy)]) == 2
    err = capsys.readouterr().err
    assert f"libero-ll train --resume {run_copy} writes it again" in err and "Traceback" not in err
    lifelong._load_state(run_copy)  # the state it is written from is whole
    from libero_ll.evaluation.success import SuccessTensor

    state = torch.load(run_copy / "resume.pt", weights_only=True)
    SuccessTensor.from_dict(state["tensor"]).save(run_copy / "success.json")  # what a resume writes first
    assert (run_copy / "success.json").read_bytes() == saved
