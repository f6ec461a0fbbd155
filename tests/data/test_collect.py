"""Expert collection: the same files with any number of workers, resuming after an interruption or a kill,
dataset statistics, demo indices that fail, and the command's errors."""

from __future__ import annotations

import contextlib

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from libero_ll.cli import main
from libero_ll.data.collect import PARTIAL_SUFFIX, collect
from libero_ll.data.hdf5 import read_demos, read_info
from libero_ll.errors import LiberoError

NUM_DEMOS = 2
MAX_STEPS = 250


def test_two_workers_write_the_same_file_as_one(reference_demos, small_env_config, assert_same_contents,
                                                tmp_path):
    ref, ref_stats = reference_demos
    path = tmp_path / ref.name
    [stats] = collect([(_task(ref), path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS,
                      workers=2)
    assert (stats.kept, stats.attempts, stats.lengths) == (ref_stats.kept, ref_stats.attempts,
                                                           ref_stats.lengths)
    assert_same_contents(ref, path)
    assert path.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [ref.name]


def test_interrupted_collection_resumes_to_the_same_file(reference_demos, small_env_config,
                                                         assert_same_contents, tmp_path):
    ref, _ = reference_demos
    path = tmp_path / ref.name

    def stop_after_first(name, settled, requested):
        raise KeyboardInterrupt  # Ctrl-C right after demo 0 is settled

    with pytest.raises(KeyboardInterrupt):
        collect([(_task(ref), path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS,
                progress=stop_after_first)
    partial = Path(str(path) + PARTIAL_SUFFIX)
    assert not path.exists() and (partial / "demo_0.hdf5").exists()

    calls = []
    [stats] = collect([(_task(ref), path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS,
                      progress=lambda *a: calls.append(a))
    assert stats.resumed == 1 and calls[0] == (_task(ref).stem, 1, NUM_DEMOS)
    assert_same_contents(ref, path)
    assert path.read_bytes() == ref.read_bytes()
    assert not partial.exists()


def test_fewer_demos_than_an_unfinished_collection_settled_are_refused(reference_demos, small_env_config,
                                                                       assert_same_contents, tmp_path):
    """Writing the file of the first demos would delete the settled ones after them: refused, naming them."""
    ref, _ = reference_demos
    path = tmp_path / ref.name

    def stop_when_all_settled(name, settled, requested):
        if settled == requested:
            raise KeyboardInterrupt  # Ctrl-C before the file is written

    with pytest.raises(KeyboardInterrupt):
        collect([(_task(ref), path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS,
                progress=stop_when_all_settled)
    partial = Path(str(path) + PARTIAL_SUFFIX)
    with pytest.raises(LiberoError, match=r"holds 1 demo\(s\) beyond the 1 asked for now \(indices 1\).*ask "
                                          r"for 2 or more demos"):
        collect([(_task(ref), path)], 1, env_config=small_env_config, max_steps=MAX_STEPS)
    assert sorted(p.name for p in partial.iterdir()) == ["collection.json", "demo_0.hdf5", "demo_1.hdf5"]
    [stats] = collect([(_task(ref), path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS)
    assert stats.resumed == NUM_DEMOS
    assert_same_contents(ref, path)


def test_killed_collection_resumes_with_the_same_command(reference_demos, collect_args, assert_same_contents,
                                                         tmp_path, capsys):
    ref, _ = reference_demos
    args = [*collect_args, "--out", str(tmp_path)]
    partial = tmp_path / (ref.name + PARTIAL_SUFFIX)
    proc = subprocess.Popen([sys.executable, "-m", "libero_ll.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        deadline = time.time() + 120
        while not (partial / "demo_0.hdf5").exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the collection ended before it could be killed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (tmp_path / ref.name).exists()

    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2/2 demos kept, 1 resumed" in out
    assert_same_contents(ref, tmp_path / ref.name)
    assert sorted(p.name for p in tmp_path.iterdir()) == [ref.name]


def test_a_collection_that_fails_before_any_demo_leaves_nothing(bowl_task, collect_args, monkeypatch, tmp_path,
                                                                 capsys):
    """An image size the GL library refuses (here its error, raised where the scene is built) ends with the
    message alone: no partial folder holding only its settings, no output folder the collection made."""
    import libero_ll.data.collect as collect_module

    def refused(*args, **kwargs):
        raise LiberoError("cannot draw 20000x20000 pixel pictures: the GL library refused the offscreen buffer")

    monkeypatch.setattr(collect_module, "LiberoEnv", refused)
    out = tmp_path / "new" / "demos"
    assert main([*collect_args, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "error: task put_the_black_bowl_on_the_plate, demo 0: cannot draw 20000x20000 pixel pictures: the GL "
        "library refused the offscreen buffer\n")
    assert list(tmp_path.iterdir()) == []
    # A folder that was there before stays, empty.
    (tmp_path / "mine").mkdir()
    assert main([*collect_args, "--out", str(tmp_path / "mine")]) == 2
    assert list((tmp_path / "mine").iterdir()) == []


def test_a_collection_that_fails_after_a_demo_keeps_it(bowl_task, small_env_config, monkeypatch, tmp_path):
    """Demo 0 settled, demo 1 fails: the partial folder stays with demo 0, and the next run resumes it."""
    from libero_ll.data.collect import _Collector

    run = _Collector.run

    def fail_on_second(self, job, index):
        if index == 1:
            raise LiberoError("the disk is full")
        return run(self, job, index)

    monkeypatch.setattr(_Collector, "run", fail_on_second)
    path = tmp_path / "out" / f"{bowl_task.stem}.hdf5"
    with pytest.raises(LiberoError, match="the disk is full"):
        collect([(bowl_task, path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS)
    partial = Path(str(path) + PARTIAL_SUFFIX)
    assert sorted(p.name for p in partial.iterdir()) == ["collection.json", "demo_0.hdf5"]
    monkeypatch.setattr(_Collector, "run", run)
    [stats] = collect([(bowl_task, path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS)
    assert stats.resumed == 1 and stats.kept == NUM_DEMOS and path.exists() and not partial.exists()


def test_file_holds_collection_statistics(reference_demos):
    from libero_ll.experts.expert import EXPERT_VERSION

    ref, stats = reference_demos
    info = read_info(ref)
    lengths = [len(d.actions) for d in read_demos(ref, obs_keys=["agentview_rgb"])]
    assert info.stats["demo_lengths"] == lengths == stats.lengths
    assert info.stats["length_mean"] == pytest.approx(np.mean(lengths)) == stats.mean_length
    assert (info.stats["length_min"], info.stats["length_max"]) == (min(lengths), max(lengths))
    assert info.stats["attempts"] == stats.attempts >= NUM_DEMOS
    assert info.stats["expert_success_rate"] == pytest.approx(NUM_DEMOS / stats.attempts)
    assert info.stats["demos_requested"] == NUM_DEMOS and info.stats["failed_demo_indices"] == []
    assert (info.stats["collect_seed"], info.stats["image_size"]) == (0, 32)
    assert info.stats["max_steps"] == MAX_STEPS
    assert info.generator == EXPERT_VERSION and info.num_demos == NUM_DEMOS
    with h5py.File(ref) as f:
        assert f["data/demo_0/obs/agentview_rgb"].shape[1:] == (32, 32, 3)
        # states[t] is the state before action t; the first is the initial state.
        np.testing.assert_array_equal(f["data/demo_0/states"][0], f["data/demo_0"].attrs["init_state"])


def test_demo_that_fails_every_attempt_is_reported_and_no_empty_file_is_written(bowl_task, tmp_path, capsys):
    args = ["collect", "--task", str(bowl_task), "--demos", "1", "--image-size", "16", "--robot-mesh",
            "collision", "--max-steps", "3", "--max-attempts", "2", "--out", str(tmp_path)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "expert success 0% (0/2), 0/1 demos kept" in out
    assert f"warning: {bowl_task.stem}: demo indices 0 failed all 2 attempts" in out
    assert f"error: no demo kept for {bowl_task.stem}" in out
    assert not (tmp_path / f"{bowl_task.stem}.hdf5").exists()
    # Nothing is left to resume: the folder of its failed indices went with it, and the same command tries again
    # (it said "1 resumed" and tried nothing, and a larger cap was refused as "other settings").
    assert list(tmp_path.iterdir()) == []
    assert main(args) == 1
    again = capsys.readouterr().out
    assert "0/1 demos kept" in again and "resumed" not in again


def test_existing_file_is_kept_unless_overwrite(reference_demos, collect_args, tmp_path, capsys):
    ref, _ = reference_demos
    shutil.copy(ref, tmp_path / ref.name)
    before = (tmp_path / ref.name).read_bytes()
    assert main([*collect_args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "exists, skipped (--overwrite to redo)" in out
    assert "nothing collected: the file exists (--overwrite to redo)" in out  # before: "all 1 files exist"
    assert (tmp_path / ref.name).read_bytes() == before
    # Kept although it is not what was asked for: said (before, the same "exists, skipped").
    other = [*collect_args, "--out", str(tmp_path)]
    other[other.index("--image-size") + 1] = "24"
    other[other.index("--demos") + 1] = str(NUM_DEMOS + 1)
    assert main(other) == 0
    assert (f"exists with {NUM_DEMOS} demos at 32 px, not the {NUM_DEMOS + 1} at 24 px asked for; "
            "skipped (--overwrite to redo)") in capsys.readouterr().out
    assert (tmp_path / ref.name).read_bytes() == before


def test_collect_task_keeps_an_existing_file_unless_told(reference_demos, bowl_task, tmp_path):
    # The Python call replaced a file already there without a word (a notebook cell run again lost its demos).
    from libero_ll.data.collect import collect_task

    ref, _ = reference_demos
    path = tmp_path / ref.name
    shutil.copy(ref, path)
    before = path.read_bytes()
    with pytest.raises(LiberoError, match="exists; pass overwrite=True to replace it"):
        collect_task(bowl_task, path, 1, seed=5)
    assert path.read_bytes() == before


def test_collect_task_keeps_an_unfinished_collection_with_other_settings_unless_told(bowl_task, small_env_config,
                                                                                     tmp_path):
    # The Python call discarded it without a word, where `libero-ll collect` refuses without --overwrite.
    from libero_ll.data.collect import collect_task

    path = tmp_path / f"{bowl_task.stem}.hdf5"
    partial = Path(str(path) + PARTIAL_SUFFIX)
    partial.mkdir()
    (partial / "collection.json").write_text('{"seed": 7}')
    (partial / "demo_7.failed").write_text('{"attempts": 5}')  # a settled index of that collection
    with pytest.raises(LiberoError, match=r"an unfinished collection made with other settings \(.*seed.*\).*"
                                          r"overwrite=True"):
        collect_task(bowl_task, path, 1, seed=0, env_config=small_env_config, max_steps=MAX_STEPS)
    assert sorted(p.name for p in partial.iterdir()) == ["collection.json", "demo_7.failed"]
    assert not path.exists()
    stats = collect_task(bowl_task, path, 1, seed=0, env_config=small_env_config, max_steps=MAX_STEPS,
                         overwrite=True)
    assert stats.kept == 1 and path.exists() and not partial.exists()


def test_unfinished_collection_with_other_settings_is_not_mixed_in(reference_demos, collect_args, tmp_path,
                                                                   capsys):
    ref, _ = reference_demos
    partial = tmp_path / (ref.name + PARTIAL_SUFFIX)
    partial.mkdir()
    (partial / "collection.json").write_text('{"seed": 7}')
    assert main([*collect_args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {partial}: an unfinished collection made with other settings" in err and "seed" in err
    assert (partial / "collection.json").read_text() == '{"seed": 7}'
    # A damaged settings file is named as such, not as other settings; it stays for --overwrite to discard.
    (partial / "collection.json").write_text('{"seed": ')
    assert main([*collect_args, "--out", str(tmp_path)]) == 2
    assert "collection.json: the settings of an unfinished collection cannot be read" in capsys.readouterr().err
    assert (partial / "collection.json").read_text() == '{"seed": '
    # An empty --tasks list and a negative seed are refused before any work.
    for args, message in ((["collect", "--suite", "quickstart", "--tasks"], "--tasks names no task"),
                          ([*collect_args, "--seed", "-1"], "--seed")):
        with pytest.raises(SystemExit) if message == "--seed" else contextlib.nullcontext():
            assert main([*args, "--out", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err


def test_dry_run_with_workers(bowl_task, capsys):
    assert main(["collect", "--task", str(bowl_task), "--demos", "2", "--dry-run", "--workers", "2",
                 "--max-steps", str(MAX_STEPS)]) == 0
    out = capsys.readouterr().out
    assert f"{bowl_task.stem}: expert success 100% (2/2)" in out and "[dry run]" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--task", "nowhere.bddl"], "task file nowhere.bddl does not exist"),
        (["--suite", "no_such_suite"], "unknown suite 'no_such_suite'"),
        (["--suite", "quickstart", "--tasks", "no_such_task"], "unknown tasks ['no_such_task']"),
        (["--task", "{task}", "--tasks", "x"], "--tasks names tasks within a suite"),
        ([], "give either --suite NAME or --task FILE"),
    ],
)
def test_bad_input_is_a_clean_error(extra, message, bowl_task, tmp_path, capsys):
    args = ["collect", *[a.replace("{task}", str(bowl_task)) for a in extra], "--out", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_library_rejects_bad_arguments(bowl_task, tmp_path):
    with pytest.raises(LiberoError, match="workers"):
        collect([(bowl_task, tmp_path / "x.hdf5")], 1, workers=0)


def _task(ref: Path) -> Path:
    """The task file of the reference collection."""
    return Path(read_info(ref).bddl_file_name)


def test_the_experts_default_cap_is_the_evaluation_cap():
    # The expert's longest benchmark task needs close to 600 steps (docs/expert_success.md): a lower
    # default cap loses its demos.
    from libero_ll.data.collect import EXPERT_MAX_STEPS
    from libero_ll.experiments.config import DataConfig, EvalConfig

    assert EXPERT_MAX_STEPS == DataConfig().expert_max_steps == EvalConfig().max_steps == 600


def test_two_collections_of_one_task_into_one_file_cannot_run_at_once(bowl_task, small_env_config, tmp_path):
    # They took each other's demos and removed the folder under each other: one failed, and a later run adopted
    # a demo of the other's settings (32 px pictures in a file of 64).
    import fcntl

    path = tmp_path / f"{bowl_task.stem}.hdf5"
    partial = Path(str(path) + PARTIAL_SUFFIX)
    partial.mkdir()
    fd = os.open(partial, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running collection holds it
        with pytest.raises(LiberoError, match="another collection of this task into the same file is running"):
            collect([(bowl_task, path)], 1, env_config=small_env_config, max_steps=MAX_STEPS)
    finally:
        os.close(fd)
    assert not path.exists()


def test_a_demo_of_other_settings_in_the_folder_is_collected_again(reference_demos, bowl_task, tmp_path):
    # A per-demo file whose folder had lost its collection.json was adopted whatever it held.
    from libero_ll.data.hdf5 import DemoWriter
    from libero_ll.envs.env import EnvConfig

    ref, _ = reference_demos
    info = read_info(ref)
    path = tmp_path / ref.name
    partial = Path(str(path) + PARTIAL_SUFFIX)
    with DemoWriter(partial / "demo_0.hdf5", env_name=info.env_name, problem_info=info.problem_info,
                    bddl_file_name=info.bddl_file_name, bddl_file_content=info.bddl_file_content,
                    env_args=info.env_args, generator=info.generator) as w:
        w.copy_demo(ref)  # a demo of 32 px
        w.set_attrs({"demo_index": 0, "attempts": 1})
    [stats] = collect([(bowl_task, path)], 1, env_config=EnvConfig(image_size=24, robot_mesh="collision"),
                      max_steps=MAX_STEPS)
    assert stats.kept == 1 and stats.resumed == 0
    assert read_demos(path)[0].obs["agentview_rgb"].shape[1:3] == (24, 24)


def test_an_unreadable_file_is_named_and_the_other_tasks_collected(bowl_task, tmp_path, capsys):
    # Collecting a suite stopped at the first unreadable file, before any task, without a word of --overwrite.
    soup = bowl_task.parent / "put_the_alphabet_soup_in_the_basket.bddl"
    (tmp_path / f"{bowl_task.stem}.hdf5").write_text("junk")
    args = ["collect", "--suite", "quickstart", "--tasks", bowl_task.stem, soup.stem, "--demos", "1",
            "--image-size", "16", "--robot-mesh", "collision", "--max-steps", "300", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "exists but cannot be read" in out and "skipped (--overwrite to redo)" in out
    assert read_info(tmp_path / f"{soup.stem}.hdf5").num_demos == 1
    assert (tmp_path / f"{bowl_task.stem}.hdf5").read_text() == "junk"


def test_a_task_whose_goal_holds_at_the_start_is_refused(bowl_task, tmp_path, capsys):
    # It wrote one-step "demos" that replayed as successes.
    text = bowl_task.read_text()
    goal = text[text.index("(:goal"):]
    broken = tmp_path / "already.bddl"
    broken.write_text(text.replace(goal, "(:goal (And (On plate_1 main_table_plate_init_region)))\n)\n"))
    args = ["collect", "--task", str(broken), "--demos", "1", "--image-size", "16", "--robot-mesh", "collision",
            "--out", str(tmp_path / "out")]
    # The task is given up (a collection of a suite goes on with its other tasks), and the command fails.
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "error: already: the goal already holds when the scene is reset" in err and "no file written" in err
    assert not (tmp_path / "out" / "already.hdf5").exists()


def test_a_write_that_fails_is_named_and_leaves_no_temporary_file(bowl_task, tmp_path):
    # A full disk (here a file size limit) gave two chained RuntimeError tracebacks and left the .tmp file.
    code = f"""
import resource
from libero_ll.cli import main
resource.setrlimit(resource.RLIMIT_FSIZE, (600_000, 600_000))
print("rc", main(["collect", "--task", {str(bowl_task)!r}, "--demos", "3", "--image-size", "32", "--max-steps", "300",
                  "--robot-mesh", "collision", "--out", {str(tmp_path)!r}]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "rc 2" in out.stdout and "Traceback" not in out.stderr, out
    assert (f"error: cannot write the demo file {tmp_path / bowl_task.stem}.hdf5 (File too large): a full disk or a "
            "file size limit? The file is not written") in out.stderr
    # The settled demos stay for the next run; no temporary file is left beside them.
    assert [p.name for p in tmp_path.iterdir()] == [f"{bowl_task.stem}.hdf5{PARTIAL_SUFFIX}"]
    assert sorted(p.name for p in (tmp_path / f"{bowl_task.stem}.hdf5{PARTIAL_SUFFIX}").iterdir()) == [
        "collection.json", "demo_0.hdf5", "demo_1.hdf5", "demo_2.hdf5"]


def test_a_run_waits_for_another_collecting_the_same_task_and_takes_its_file(reference_demos, bowl_task,
                                                                             small_env_config, tmp_path):
    # What `train` does when another run on the same data folder is collecting the same task.
    import fcntl
    import threading

    ref, _ = reference_demos
    path = tmp_path / ref.name
    partial = Path(str(path) + PARTIAL_SUFFIX)
    partial.mkdir()
    fd = os.open(partial, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the other collection
    waiting, result = threading.Event(), {}

    def run():
        result["stats"] = collect([(bowl_task, path)], NUM_DEMOS, env_config=small_env_config, max_steps=MAX_STEPS,
                                  wait=lambda folder: waiting.set())

    thread = threading.Thread(target=run)
    thread.start()
    assert waiting.wait(60)
    shutil.copy(ref, path)  # the other one finishes: its file in place, its folder removed
    shutil.rmtree(partial)
    os.close(fd)
    thread.join(60)
    [stats] = result["stats"]
    assert stats.skipped and stats.kept == NUM_DEMOS and stats.path == path
    assert path.read_bytes() == ref.read_bytes() and not partial.exists()


def test_a_script_without_a_main_guard_is_told_not_left_waiting(bowl_task, tmp_path):
    # Its worker processes ran the script again and waited for the folder their own parent held: a hang.
    script = tmp_path / "unguarded.py"
    script.write_text(f"""
from libero_ll.data.collect import collect
from libero_ll.envs.env import EnvConfig
collect([({str(bowl_task)!r}, {str(tmp_path / 'demos' / 'bowl.hdf5')!r})], 2,
        env_config=EnvConfig(image_size=16, robot_mesh="collision"), max_steps=300, workers=2,
        wait=lambda folder: print("waiting", flush=True))
print("done")
""")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert "waiting" not in out.stdout, out
    assert "must start its work under `if __name__ == '__main__':`" in out.stdout + out.stderr, out
