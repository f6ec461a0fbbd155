"""resources.json: reading, validation, "not recorded" fields, and the size of a run's training data."""

import json
import math

import h5py
import numpy as np
import pytest

from libero_ll.errors import LiberoError
from libero_ll.evaluation.resources import load_resources, run_data_sizes, task_data_size, validate_resources


def entry(index, **fields):
    base = {
        "task": f"task{index}",
        "index": index,
        "params": 1000,
        "params_used": 1000,
        "memory_bytes": 0,
        "samples_seen": 10,
        "train_macs": 1.5e6,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def write(run_dir, data):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "resources.json").write_text(json.dumps(data))


def test_missing_file_means_not_recorded(tmp_path):
    assert load_resources(tmp_path) is None


def test_reads_tasks_in_index_order(tmp_path):
    write(tmp_path, {"version": 1, "tasks": [entry(1, memory_bytes=800), entry(0, memory_bytes=400)]})
    res = load_resources(tmp_path)
    assert [t.index for t in res.tasks] == [0, 1]
    np.testing.assert_array_equal(res.array("memory_bytes"), [400, 800])
    np.testing.assert_array_equal(res.array("train_macs", 3)[:2], [1.5e6, 1.5e6])
    assert math.isnan(res.array("train_macs", 3)[2])  # a task not recorded yet


def test_missing_field_is_nan(tmp_path):
    write(tmp_path, {"version": 1, "tasks": [entry(0), entry(1, train_macs=None)]})
    res = load_resources(tmp_path)
    assert res.tasks[1].train_macs is None
    macs = res.array("train_macs")
    assert macs[0] == 1.5e6 and math.isnan(macs[1])
    with pytest.raises(KeyError):
        res.array("flops")


def test_malformed_files_name_the_file_and_the_problem(tmp_path):
    (tmp_path / "resources.json").write_text("{not json")
    with pytest.raises(LiberoError, match="resources.json is not valid JSON"):
        load_resources(tmp_path)
    (tmp_path / "resources.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LiberoError, match="resources.json is not UTF-8 text"):
        load_resources(tmp_path)
    write(tmp_path, {"version": 2, "tasks": [entry(0, params=-1), entry(0), {"index": "x"}]})
    with pytest.raises(LiberoError, match="resources.json is malformed") as e:
        load_resources(tmp_path)
    message = str(e.value)
    assert "version is 2" in message and "tasks[0].params" in message and "appears twice" in message
    assert "tasks[2].task" in message and "tasks[2].index" in message


def test_validator_accepts_the_schema():
    assert validate_resources({"version": 1, "tasks": [entry(0), entry(1, train_macs=3)]}) == []
    assert validate_resources([]) == ["the file does not hold a JSON object"]
    assert "'tasks' is missing or not a list" in validate_resources({"version": 1})
    assert any(
        "samples_seen" in p for p in validate_resources({"version": 1, "tasks": [entry(0, samples_seen=1.5)]})
    )


def _demo_file(path):
    with h5py.File(path, "w") as f:
        d0 = f.create_group("data/demo_0")
        d0["actions"] = np.zeros((12, 7))
        d0["obs/agentview_rgb"] = np.zeros((12, 4, 4, 3), dtype=np.uint8)
        d0["obs/joint_states"] = np.zeros((12, 7))
        d1 = f.create_group("data/demo_1")
        d1["actions"] = np.zeros((5, 7))


def test_task_data_size_counts_bytes_as_held_in_memory(tmp_path):
    _demo_file(tmp_path / "t.hdf5")
    # demo_0: actions 12*7*4 + images 12*48 + joints 12*7*4 = 1248; demo_1: actions 5*7*4 = 140.
    size = task_data_size(tmp_path / "t.hdf5", window_stride=10)
    assert size.nbytes == 1248 + 140 and size.windows == 2 + 1
    first = task_data_size(tmp_path / "t.hdf5", max_demos=1, window_stride=1)
    assert first.nbytes == 1248 and first.windows == 12
    with pytest.raises(LiberoError, match="does not exist"):
        task_data_size(tmp_path / "missing.hdf5")


def test_run_data_sizes_follow_the_config(tmp_path):
    _demo_file(tmp_path / "t.hdf5")
    cfg = {"data": {"dir": str(tmp_path), "demos_per_task": 1}, "train": {"window_stride": 10}}
    sizes = run_data_sizes(cfg, ["t", "missing"])
    assert sizes[0].nbytes == 1248 and sizes[0].windows == 2 and sizes[1] is None


def test_recorded_data_sizes_need_no_demo_files(tmp_path):
    write(tmp_path, {"version": 1, "tasks": [entry(1, data_bytes=900, data_windows=7),
                                            entry(0, data_bytes=1248, data_windows=12)]})
    sizes = load_resources(tmp_path).data_sizes(3)
    assert [(s.nbytes, s.windows) for s in sizes[:2]] == [(1248, 12), (900, 7)]
    assert sizes[2] is None  # a task not learned yet
    write(tmp_path, {"version": 1, "tasks": [entry(0), entry(1, data_bytes=5, data_windows=1)]})
    assert load_resources(tmp_path).data_sizes(2)[0] is None  # a run from before the fields existed
    problems = validate_resources({"version": 1, "tasks": [entry(0, data_bytes=-1, data_windows=2.5)]})
    assert any("data_bytes" in p for p in problems) and any("data_windows" in p for p in problems)
