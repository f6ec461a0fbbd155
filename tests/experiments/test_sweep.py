"""`libero-ll sweep`: expanding a sweep file into runs, running them on a local Ray, and a kill and rerun that
gives the same report as an uninterrupted sweep."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.experiments.sweep import load_sweep

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "smoke.yaml"


# The shipped smoke sweeps with their three seeds (15 runs each) or one (the same runs for seed 100).
SEEDS = [pytest.param(None, marks=pytest.mark.slow, id="three-seeds"), pytest.param([100], id="one-seed")]


def shipped_sweep(tmp_path: Path, name: str, seeds: list[int] | None) -> tuple[Path, int]:
    """configs/sweeps/<name> and its number of seeds; with `seeds`, a copy of it with only those seeds."""
    src = REPO / "configs" / "sweeps" / name
    if seeds is None:
        return src, 3
    text = src.read_text()
    assert "config: ../smoke.yaml" in text and "seeds: [100, 200, 300]" in text
    text = text.replace("config: ../smoke.yaml", f"config: {SMOKE}").replace("seeds: [100, 200, 300]", f"seeds: {seeds}")
    path = tmp_path / name
    path.write_text(text)
    return path, len(seeds)


def write_sweep(tmp_path: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"config: {SMOKE}\n" + text)
    return path


def test_grid_runs_seeds_and_orders_expand_into_named_runs(tmp_path):
    path = write_sweep(tmp_path, """
name: study
overrides: {train.epochs: 1, language_encoder: task_id}
grid:
  learner.name: [seql, er]
  policy.name: [resnet_t]
runs:
  - {train.lr: 0.001}
  - {train.lr: 0.01}
seeds: [3, 4]
task_orders: 2
order_seed: 5
""")
    sweep = load_sweep(path, tmp_path / "out")
    assert len(sweep.runs) == 2 * 2 * 2 * 2
    keys = [r.key for r in sweep.runs]
    assert keys[0] == "learner.name=seql_train.lr=0.001_seed3_order1"
    assert len(set(keys)) == len(keys)
    first = sweep.runs[0]
    # A grid axis of one value is not part of a run's name; learner and policy are a method, not a variant.
    assert first.variant == "train.lr=0.001"
    assert first.cfg.learner.name == "seql" and first.cfg.train.lr == 0.001 and first.cfg.train.epochs == 1
    assert first.cfg.seed == 3 and first.cfg.output_dir == str(tmp_path / "out")
    assert first.run_dir == tmp_path / "out" / first.key
    # The first order is the config's own; the second a permutation of it, the same for every variant.
    orders = {r.order: tuple(r.cfg.tasks) if r.cfg.tasks else None for r in sweep.runs}
    assert orders[1] == tuple(SmokeTasks.names)
    assert sorted(orders[2]) == sorted(SmokeTasks.names)
    assert {tuple(r.cfg.tasks) for r in sweep.runs if r.order == 2} == {orders[2]}
    assert all(r.state() == "new" for r in sweep.runs)


class SmokeTasks:
    names = ["put_the_alphabet_soup_in_the_basket", "put_the_black_bowl_on_the_plate"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("grid: {learner.name: [seql]}\nseedz: [1]\n", "unknown key 'seedz'"),
        ("grid: {learner.nam: [seql]}\n", "learner.nam"),
        ("grid: {learner.name: [nope]}\n", "nope"),
        ("grid: {seed: [1, 2]}\n", "seed is set by the sweep: use the sweep file's seeds key"),
        ("grid: {learner.name: []}\n", "grid.learner.name: expected a non-empty list"),
        ("seeds: [1, 1]\n", "a seed is listed twice"),
        ("seeds: 3\n", "seeds: expected a list of integers"),
        ("task_orders: 0\n", "task_orders: expected a number of orders"),
        ("task_orders: 3\n", "task_orders: 2 tasks have 2 orders, not 3"),
        ("task_orders: [[put_the_black_bowl_on_the_plate, nope]]\n", "task_orders[0]"),
        # Before, taken: the run keys its demos, states and scores by task name.
        ("task_orders: [[put_the_black_bowl_on_the_plate, put_the_black_bowl_on_the_plate]]\n",
         "task_orders[0]: the order lists put_the_black_bowl_on_the_plate twice"),
        ("overrides: {tasks: [put_the_black_bowl_on_the_plate, put_the_black_bowl_on_the_plate]}\n",
         "tasks lists put_the_black_bowl_on_the_plate twice"),
        ("runs: [{train.epochs: 1}, {train.epochs: 1}]\n", "two runs would share the run directory"),
        # Before: "(the same overrides, seed and order twice)", which they were not.
        ("grid: {name: ['a b', 'a:b']}\n",
         "(name=a b and name=a:b differ only in characters a folder name cannot hold"),
        ("overrides: [train.epochs]\n", "overrides: 'train.epochs': expected key=value"),
        ("resources: {cpus: 0}\n", "resources.cpus: expected a positive number"),
        # Before: taken (NaN is not below 0), and handed to Ray.
        ("resources: {gpus: .nan}\n", "resources.gpus: expected a non-negative number, got nan"),
        ("resources: {cpus: .inf}\n", "resources.cpus: expected a positive number, got inf"),
        ("grid: [1, 2\n", "not valid YAML"),
        # Before, taken: runs/sweeps/../x put the runs beside runs/sweeps/, not in it.
        ("name: ../x\n", "name: '../x' is not a plain folder name"),
        ("name: a/b\n", "name: 'a/b' is not a plain folder name"),
        ("name: '..'\n", "name: '..' is not a plain folder name"),
    ],
)
def test_bad_sweep_files_are_named(tmp_path, text, message):
    with pytest.raises(LiberoError, match=None) as e:
        load_sweep(write_sweep(tmp_path, text))
    assert message in str(e.value)
    assert str(tmp_path / "sweep.yaml") in str(e.value)


def test_a_missing_config_and_file_are_named(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("config: nowhere.yaml\n")
    with pytest.raises(LiberoError, match="config: .*nowhere.yaml does not exist"):
        load_sweep(path)
    assert main(["sweep", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml does not exist" in capsys.readouterr().err
    # Before: "config: ... does not exist" of a folder that does.
    path.write_text(f"config: {tmp_path}\n")
    with pytest.raises(LiberoError, match=f"config: {tmp_path} is a folder, not a config file"):
        load_sweep(path)
    assert main(["sweep", str(tmp_path), "--list"]) == 2
    assert capsys.readouterr().err == f"error: sweep file {tmp_path}: is a folder, not a sweep file\n"


def test_a_sweep_file_that_is_not_text_is_named(tmp_path, capsys):
    # Before: a UnicodeDecodeError traceback.
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: x\n\xff\xfe\n")
    assert main(["sweep", str(path), "--list"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: not a text file (byte 8 is not UTF-8)\n", err


def test_a_run_whose_config_changed_is_an_error_not_overwritten(tmp_path, capsys):
    from omegaconf import OmegaConf

    from libero_ll.experiments.sweep import check_existing

    path = write_sweep(tmp_path, "overrides: {train.epochs: 1}\n")
    run = load_sweep(path, tmp_path / "out").runs[0]
    run.run_dir.mkdir(parents=True)
    changed = OmegaConf.merge(run.cfg, {"train": {"epochs": 3}})
    OmegaConf.save(changed, run.run_dir / "config.yaml")
    assert run.state() == "partial"
    with pytest.raises(LiberoError, match=r"differs from what the sweep asks for at train.epochs \(3 there, 1 now\)"):
        check_existing(run)
    assert main(["sweep", str(path), "-o", str(tmp_path / "out")]) == 2
    assert "move that run directory away" in capsys.readouterr().err
    assert OmegaConf.load(run.run_dir / "config.yaml").train.epochs == 3
    # --list says so too, instead of listing the run as one the sweep would resume.
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--list"]) == 1
    listed = capsys.readouterr().out
    assert listed.startswith(f"differs   {run.run_dir}") and "1 started with another config" in listed


def test_a_run_continued_elsewhere_may_change_its_folders_and_workers(tmp_path, capsys):
    # A sweep continued with another data.dir (another machine), or its -o spelled otherwise, stopped at every
    # run it had started ("restore the sweep file"), though `train --resume` allows these changes.
    from omegaconf import OmegaConf

    from libero_ll.experiments.sweep import _take_free_settings, check_existing

    path = write_sweep(tmp_path, "overrides: {train.epochs: 1}\n")
    run = load_sweep(path, tmp_path / "out").runs[0]
    run.run_dir.mkdir(parents=True)
    started = OmegaConf.merge(run.cfg, {"data": {"dir": "/old/demos"}, "output_dir": "out", "eval": {"workers": 7}})
    OmegaConf.save(started, run.run_dir / "config.yaml")
    check_existing(run)  # no error
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--list"]) == 0
    assert "started with another config" not in capsys.readouterr().out
    # Resumed by the sweep, the run takes the sweep's values of them; what it learns stays as it was.
    _take_free_settings(run.run_dir, OmegaConf.to_container(run.cfg, resolve=True))
    now = OmegaConf.load(run.run_dir / "config.yaml")
    assert now.data.dir == run.cfg.data.dir and now.output_dir == run.cfg.output_dir
    assert now.eval.workers == run.cfg.eval.workers and now.train.epochs == 1
    assert OmegaConf.to_container(now, resolve=True) == OmegaConf.to_container(run.cfg, resolve=True)


def test_a_report_folder_the_sweep_cannot_use_stops_it_before_any_run(tmp_path, capsys):
    # The sweep used to run every run first and fail only when writing its report at the end.
    path = write_sweep(tmp_path, "overrides: {train.epochs: 1}\n")
    out = tmp_path / "out"
    (out / "report").mkdir(parents=True)
    (out / "report" / "mine.txt").write_text("mine")
    assert main(["sweep", str(path), "-o", str(out)]) == 2
    assert "run the sweep with --no-report" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["report"]
    assert (out / "report" / "mine.txt").read_text() == "mine"
    # A report folder holding a file of one's own beside a report: the report at the end would delete it.
    (out / "report" / ".libero_ll_report").write_text("libero_ll report\nreport.html\n")
    assert main(["sweep", str(path), "-o", str(out)]) == 2
    assert "holds mine.txt, which no report wrote there" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["report"]


def _report_tables(report: Path) -> dict:
    """The report's CSV tables without the columns that name run directories."""
    out = {}
    for f in sorted(report.glob("*.csv")):
        with open(f) as fh:
            out[f.name] = [{k: v for k, v in row.items() if k != "run_dir"} for row in csv.DictReader(fh)]
    return out


def _same_weights(a: Path, b: Path) -> bool:
    sa = torch.load(a, weights_only=True)["policy"]
    sb = torch.load(b, weights_only=True)["policy"]
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _sweep_cmd(sweep_file: Path, out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "libero_ll.cli", "sweep", str(sweep_file), "-o", str(out), *args]


def test_shipped_sweeps_expand(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths (init_from, output_dir) resolve where nothing has run
    sizes = {"table2": 15, "task_orders": 30, "table2_smoke": 15, "task_orders_smoke": 15, "table2_cpu": 15}
    for name, n in sizes.items():
        sweep = load_sweep(REPO / "configs" / "sweeps" / f"{name}.yaml")
        assert len(sweep.runs) == n, name
        assert sweep.output_dir == Path("runs/sweeps") / name
    orders = {tuple(r.cfg.tasks or ()) for r in load_sweep(REPO / "configs/sweeps/task_orders.yaml").runs}
    assert len(orders) == 5 and all(len(o) == 10 for o in orders if o)
    # The pretraining study starts from a pretraining run: until there is one, the sweep says so.
    with pytest.raises(LiberoError, match="init_from=.*pretrain_libero90_cpu.*no file or run directory matches"):
        load_sweep(REPO / "configs" / "sweeps" / "pretraining_cpu.yaml")


def test_list_works_before_the_run_init_from_names_exists(tmp_path, monkeypatch, capsys):
    """The pretraining study lists its runs before its pretraining run exists, saying so; the sweep itself
    refuses to start, naming init_from, and writes nothing."""
    from libero_ll.experiments.sweep import run_sweep

    monkeypatch.chdir(tmp_path)
    sweep_file = REPO / "configs" / "sweeps" / "pretraining_cpu.yaml"
    assert main(["sweep", str(sweep_file), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == ("6 runs; 3 start from an init_from that is not there yet: the sweep refuses to start "
                         "until it is")
    assert [line.split()[0] for line in lines[:-1] if not line.startswith(" ")] == ["new"] * 6
    notes = [line.strip() for line in lines if line.startswith(" ")]
    assert notes == ["init_from='runs/pretrain_libero90_cpu_libero_90_mtl_resnet_t_seed100_*': no file or run "
                     "directory matches"] * 3
    assert list(tmp_path.iterdir()) == []
    assert main(["sweep", str(sweep_file)]) == 2
    assert "init_from='runs/pretrain_libero90_cpu_libero_90_mtl_resnet_t_seed100_*': no file or run directory " \
           "matches" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    # A sweep loaded without the check is refused by run_sweep, before any run or Ray starts.
    sweep = load_sweep(sweep_file, check_init=False)
    with pytest.raises(LiberoError, match=r"run init_from=runs-pretrain.*_seed100: init_from=.*no file or run "
                                          r"directory matches"):
        run_sweep(sweep, report=False)
    assert not sweep.output_dir.exists()
    # Once the pretraining run has finished, nothing is said.
    pretrained = tmp_path / "runs" / "pretrain_libero90_cpu_libero_90_mtl_resnet_t_seed100_20260101-000000"
    pretrained.mkdir(parents=True)
    (pretrained / "final_policy.pt").write_bytes(b"")
    assert main(["sweep", str(sweep_file), "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "6 runs"


def test_a_sigterm_while_ray_starts_stops_as_the_process_says():
    """ray.init puts its own SIGTERM handler in place (a sys.exit while it connects): the sweep puts the command
    line's back, and a SIGTERM taken by Ray's meanwhile stops the sweep as the command line's handler would."""
    from libero_ll.experiments.sweep import _keep_sigterm_handler

    class Stop(Exception):
        pass

    def ours(signum, frame):
        raise Stop

    def like_ray_init(signal_comes: bool):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        if signal_comes:
            raise SystemExit(signal.SIGTERM)

    before = signal.signal(signal.SIGTERM, ours)
    try:
        with _keep_sigterm_handler():
            like_ray_init(False)
        assert signal.getsignal(signal.SIGTERM) is ours
        with pytest.raises(Stop):
            with _keep_sigterm_handler():
                like_ray_init(True)
        assert signal.getsignal(signal.SIGTERM) is ours
        # Another exit is left alone.
        with pytest.raises(SystemExit):
            with _keep_sigterm_handler():
                sys.exit(3)
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.slow  # about a minute: a local Ray started, a run begun, stopped and continued
def test_a_sweep_stopped_by_sigterm_says_so_and_its_runs_resume(tmp_path, smoke_data, signal_once):
    """`kill` or `timeout` stop a sweep as Ctrl-C does: a short message naming the command that continues it,
    exit status 143 (128 + SIGTERM), not Ray's signal dump; the runs it started are left to resume."""
    sweep_file = write_sweep(tmp_path, "grid: {learner.name: [seql, er]}\nseeds: [5]\nresources: {cpus: 1}\n")
    out = tmp_path / "out"
    overrides = [f"data.dir={smoke_data}", "train.epochs=200", "eval.max_steps=4", "eval.init_states=1",
                 "language_encoder=task_id", "tasks=[put_the_alphabet_soup_in_the_basket]"]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    rc, text = signal_once(_sweep_cmd(sweep_file, out, *overrides), env, lambda: list(out.glob("*/progress.json")),
                           signal.SIGTERM)
    assert rc == 143, text[-3000:]
    command = shlex.join(["libero-ll", "sweep", str(sweep_file), "-o", str(out), *overrides])
    assert text.splitlines()[-1] == (
        f"terminated: each run is saved at its last completed epoch; continue the sweep with {command}")
    assert "SIGTERM received" not in text and "Traceback" not in text
    listed = subprocess.run(_sweep_cmd(sweep_file, out, *overrides, "--list"), cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "partial" in [line.split()[0] for line in listed.stdout.splitlines()[:-1]], listed.stdout


# About 160 s with one seed on 2 cores: behind -m slow with the task-order study below, to keep the default run
# under 15 minutes (a single run's kill and resume is in test_resume.py; a whole sweep on Ray below).
@pytest.mark.slow
@pytest.mark.parametrize("seeds", SEEDS)
def test_the_smoke_table2_sweep_killed_and_rerun_gives_the_uninterrupted_report(tmp_path, smoke_data, seeds):
    """The shipped smoke-scale Table-2 sweep (5 learners x its seeds), whole; then killed with one run finished
    and another in the middle of its second task, and run again: the same report and the same weights."""
    sweep_file, n_seeds = shipped_sweep(tmp_path, "table2_smoke.yaml", seeds)
    runs = 5 * n_seeds
    overrides = [f"data.dir={smoke_data}", "train.epochs=4", "eval.max_steps=4", "eval.init_states=1"]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    whole = tmp_path / "whole"
    done = subprocess.run(_sweep_cmd(sweep_file, whole, *overrides), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(": FWT ") == runs and f"{runs} of {runs} runs done, 0 failed" in done.stdout
    assert (whole / "report" / "report.html").exists()
    with open(whole / "report" / "libero_table.csv") as f:
        assert {row["learner"] for row in csv.DictReader(f)} == {"seql", "er", "ewc", "packnet", "mtl"}

    cut = tmp_path / "cut"
    errors = tmp_path / "stderr.txt"
    with open(errors, "wb") as err:
        proc = subprocess.Popen(_sweep_cmd(sweep_file, cut, *overrides), cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            finished = list(cut.glob("*/final_policy.pt"))
            middle = []
            for p in cut.glob("*/progress.json"):
                try:
                    pos = json.loads(p.read_text())
                except (OSError, ValueError):
                    continue
                if pos["stage"] == 1 and pos["phase"] == "train" and not (p.parent / "final_policy.pt").exists():
                    middle.append(p)
            if finished and middle:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, errors.read_text()[-3000:]
    listed = subprocess.run(_sweep_cmd(sweep_file, cut, *overrides, "--list"), cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    states = [line.split()[0] for line in listed.stdout.splitlines()[:-1]]
    assert "finished" in states and "partial" in states, listed.stdout

    rerun = subprocess.run(_sweep_cmd(sweep_file, cut, *overrides), cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "resumed in" in rerun.stdout and "finished before" in rerun.stdout
    assert _report_tables(cut / "report") == _report_tables(whole / "report")
    for run in whole.glob("*/final_policy.pt"):
        assert _same_weights(run, cut / run.parent.name / "final_policy.pt"), run.parent.name
    # Each run's output is in its own log, a resumed run's after its killed part.
    resumed = [d for d in cut.iterdir() if (d / "log.txt").exists() and "resuming" in (d / "log.txt").read_text()]
    assert resumed
    assert json.loads((resumed[0] / "sweep.json").read_text())["sweep"] == "table2_smoke"
    # The command a run records is the sweep's, not the Ray worker's.
    for run in whole.glob("*/final_policy.pt"):
        sessions = json.loads((run.parent / "environment.json").read_text())["sessions"]
        assert sessions[0]["command"][1:3] == ["sweep", str(sweep_file)], sessions[0]["command"]
        assert " sweep " in (run.parent / "log.txt").read_text().splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("seeds", SEEDS)
def test_the_smoke_task_order_sweep_reports_five_orders(tmp_path, smoke_data, seeds):
    """The shipped smoke-scale task-order study: its third task's demos are collected once, before the runs."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(smoke_data, data)
    sweep_file, n_seeds = shipped_sweep(tmp_path, "task_orders_smoke.yaml", seeds)
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run(_sweep_cmd(sweep_file, tmp_path / "out", f"data.dir={data}", "eval.max_steps=4"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("collected 2 demos of put_the_cream_cheese_in_the_basket") == 1
    assert f"{5 * n_seeds} of {5 * n_seeds} runs done" in done.stdout
    with open(tmp_path / "out" / "report" / "task_orders.csv") as f:
        rows = list(csv.DictReader(f))
    assert len({r["task_order"] for r in rows}) == 5
    assert {r["n"] for r in rows} == {str(n_seeds)}


def test_demo_files_of_another_image_size_stop_the_sweep_before_any_run(tmp_path, smoke_data, capsys):
    """Demos at 32 px for runs at 48 px: one message naming the run, the file and both sizes, before Ray
    starts and before any run directory exists (not the same failure in every run)."""
    sweep_file = write_sweep(tmp_path, "grid: {learner.name: [seql, er]}\n")
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file), "-o", str(out), f"data.dir={smoke_data}", "env.image_size=48"]) == 2
    err = capsys.readouterr().err
    assert "run learner.name=seql_seed100:" in err
    assert f"{smoke_data}/put_the_alphabet_soup_in_the_basket.hdf5: images are 32x32 but env.image_size is 48" in err
    assert not out.exists()  # nothing began: the sweep's folder (it held only its lock) is not left behind


def test_overrides_may_follow_options_on_the_command_line(tmp_path, capsys):
    sweep_file = write_sweep(tmp_path, "grid: {learner.name: [seql, er]}\n")
    assert main(["sweep", str(sweep_file), "-o", str(tmp_path / "out"), "train.epochs=1", "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 runs"
    assert main(["sweep", str(sweep_file), "-o", str(tmp_path / "out"), "train.epochz=1", "--list"]) == 2
    assert "train.epochz" in capsys.readouterr().err
    assert main(["sweep", str(sweep_file), "--cpus", "0"]) == 2
    assert "--cpus must be 1 or more, got 0" in capsys.readouterr().err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster(tmp_path, descendants):
    """A Ray cluster of the test's own (`ray start --head` with 3 CPUs and token authentication with a token
    of its own), killed with every process it started at the end; `ray stop` would stop every Ray on the
    machine. Yields its address and the environment a driver needs to connect."""
    import secrets
    import shutil
    import socket
    import tempfile

    port = _free_port()
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths have a length limit
    # Not ~/.ray/auth_token: `ray start` with token authentication does not create it where it is missing.
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, **token}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    ray = Path(sys.executable).parent / "ray"
    with open(tmp_path / "ray_head.txt", "wb") as out:
        head = subprocess.Popen(
            [str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=3", "--num-gpus=0",
             f"--temp-dir={temp}", "--include-dashboard=false", "--disable-usage-stats"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        deadline = time.time() + 90
        while True:
            assert head.poll() is None and time.time() < deadline, (tmp_path / "ray_head.txt").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"127.0.0.1:{port}", token
    finally:
        for pid in [head.pid, *descendants(head.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def _cluster_sweep(tmp_path: Path, smoke_data: Path) -> tuple[Path, list[str], dict]:
    """A two-run sweep file for a cluster, its overrides and a driver environment without Ray's token."""
    sweep_file = write_sweep(tmp_path, "grid: {learner.name: [seql, er]}\nseeds: [5]\nresources: {cpus: 1}\n")
    overrides = [f"data.dir={smoke_data}", "train.epochs=1", "eval.max_steps=4", "eval.init_states=1",
                 "language_encoder=task_id", "tasks=[put_the_alphabet_soup_in_the_basket]"]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"), "OMP_WAIT_POLICY": "PASSIVE"}
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(key, None)
    return sweep_file, overrides, env


def test_a_dead_cluster_address_and_cpus_with_an_address_are_named(tmp_path, smoke_data):
    sweep_file, overrides, env = _cluster_sweep(tmp_path, smoke_data)
    out = tmp_path / "out"
    dead = subprocess.run(_sweep_cmd(sweep_file, out, *overrides, "--address", f"127.0.0.1:{_free_port()}"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert dead.returncode == 2 and "no Ray cluster answers there" in dead.stderr, dead.stderr[-2000:]
    assert "Traceback" not in dead.stderr
    both = subprocess.run(_sweep_cmd(sweep_file, out, "--address", f"127.0.0.1:{_free_port()}", "--cpus", "2"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert both.returncode == 2 and "a cluster (--address) has its own" in both.stderr, both.stderr[-2000:]
    assert not out.exists() or not any(out.glob("*/final_policy.pt"))


@pytest.mark.slow  # about a minute on 2 cores: a Ray cluster started, four sweeps against it, two runs done
def test_a_sweep_runs_on_a_ray_cluster_given_by_address(tmp_path, smoke_data, ray_cluster):
    """--address: the runs go to a running cluster (3 CPUs here, the machine has fewer or other counts); a
    missing token is a clear error (a dead address and --cpus with --address: the test above)."""
    address, token = ray_cluster
    sweep_file, overrides, env = _cluster_sweep(tmp_path, smoke_data)
    out = tmp_path / "out"

    no_token = subprocess.run(_sweep_cmd(sweep_file, out, *overrides, "--address", address), cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
    assert no_token.returncode == 2 and "RAY_AUTH_MODE=token" in no_token.stderr, no_token.stderr[-2000:]
    assert "Traceback" not in no_token.stderr
    # Asked once, not for 20 s with a warning a second (Ray's own connect).
    assert no_token.stderr.count("InvalidAuthToken") <= 2, no_token.stderr[-2000:]

    done = subprocess.run(_sweep_cmd(sweep_file, out, *overrides, "--address", address), cwd=tmp_path,
                          env={**env, **token}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on the Ray cluster at {address}: 3 CPUs, 0 GPUs" in done.stdout
    assert "2 of 2 runs done, 0 failed" in done.stdout
    assert sorted(p.parent.name for p in out.glob("*/final_policy.pt")) == [
        f"learner.name={n}_seed5" for n in ("er", "seql")]
    assert (out / "report" / "report.html").exists()
    # Each run's log holds its lines once, with their times (the run writes them; nothing printed twice).
    for run in out.glob("learner.name=*"):
        lines = (run / "log.txt").read_text().splitlines()
        assert sum(" done: 1 task, " in line for line in lines) == 1, lines
        assert lines[0].split(" ")[2] == "command:" and lines[1].split(" ")[2:4] == ["run", "directory:"]
