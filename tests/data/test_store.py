"""DemoStore: a run's demos read when a stage needs them and let go after; SequenceDataset holds images once."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.data.hdf5 import Demo, DemoWriter
from libero_ll.data.store import DemoStore
from libero_ll.errors import LiberoError

KEYS = ["agentview_rgb", "joint_states"]


def write_task(path, lengths, seed, bad_action_at=None):
    rng = np.random.default_rng(seed)
    with DemoWriter(path, env_name="E", problem_info={}, bddl_file_name="t.bddl", bddl_file_content="",
                    env_args={}, generator="test") as w:
        for number, T in enumerate(lengths):
            actions = rng.normal(size=(T, 7))
            if number == bad_action_at:
                actions[T - 1, 2] = np.nan
            obs = {"agentview_rgb": rng.integers(0, 256, (T, 8, 8, 3), dtype=np.uint8),
                   "joint_states": rng.normal(size=(T, 7))}
            w.add(Demo(actions=actions, states=np.zeros((T, 3)), robot_states=np.zeros((T, 9)), obs=obs,
                       init_state=np.zeros(3)))
    return path


@pytest.fixture
def three_tasks(tmp_path):
    return [write_task(tmp_path / f"t{j}.hdf5", [4 + j, 6, 5], seed=j) for j in range(3)]


def test_reads_a_task_when_asked_for_and_lets_it_go(three_tasks):
    embs = np.eye(3, dtype=np.float32)
    store = DemoStore(three_tasks, embs, KEYS, max_demos=2, light_keys=["joint_states"])
    # Every task's actions and low-dim observations are read at once, without images; no images yet.
    assert store.reads == 0 and store.loaded() == []
    assert [len(d.demos) for d in store.light] == [2, 2, 2] and store.own_demos == [2, 2, 2]
    assert set(store.light[1].demos[0]) == {"joint_states", "actions"}
    task = store[1]
    assert task.task_id == 1 and set(task.demos[0]) == set(KEYS) | {"actions"} and len(task.demos) == 2
    np.testing.assert_array_equal(task.demos[0]["actions"], store.light[1].demos[0]["actions"])
    np.testing.assert_array_equal(task.task_emb, embs[1])
    assert store[1] is task and store.reads == 1 and store.loaded() == [1]
    store[2]
    store.release(keep=[2])
    assert store.loaded() == [2]
    store.release()
    assert store.loaded() == [] and store[1] is not task and store.reads == 3
    assert len(store.first_demo(0).demos) == 1 and store.loaded() == [1]
    with pytest.raises(IndexError, match="task 3 is not one of the store's 3"):
        store[3]


def test_extra_demos_follow_the_tasks_own(three_tasks, tmp_path):
    extra = write_task(tmp_path / "corrections.hdf5", [3], seed=9)
    store = DemoStore(three_tasks, np.eye(3), KEYS, max_demos=2, light_keys=["joint_states"],
                      extra=[None, extra, None])
    assert store.own_demos == [2, 2, 2] and [len(d.demos) for d in store.light] == [2, 3, 2]
    assert [len(d["actions"]) for d in store[1].demos] == [5, 6, 3]


def test_bad_numbers_in_a_later_task_are_refused_when_the_store_is_made(three_tasks, tmp_path):
    bad = write_task(tmp_path / "bad.hdf5", [4, 5], seed=3, bad_action_at=1)
    with pytest.raises(LiberoError, match=r"bad.hdf5: demo 1 .* NaN or infinite 'actions' at step 4"):
        DemoStore([*three_tasks, bad], np.eye(4), KEYS, max_demos=2, light_keys=["joint_states"])


def _images(T, seed):
    return np.random.default_rng(seed).integers(0, 256, (T, 64, 64, 3), dtype=np.uint8)


def test_a_dataset_holds_the_images_once():
    """The demos' images become views into the dataset's array, each copied in and let go in turn: once built,
    the dataset and the demos hold them once (demos that kept their own arrays held them twice)."""
    tracemalloc.start()  # before the demos are made: their arrays' freeing is counted too
    try:
        tasks = [TaskData(j, [{"agentview_rgb": _images(40, 10 * j + d), "actions": np.zeros((40, 7))}
                              for d in range(5)], np.ones(4)) for j in range(2)]
        want = [d["agentview_rgb"].copy() for t in tasks for d in t.demos]
        size = sum(w.nbytes for w in want)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        ds = SequenceDataset(tasks, seq_len=3, obs_keys=["agentview_rgb"])
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    images = ds._arrays["agentview_rgb"]
    for d, w in zip((d for t in tasks for d in t.demos), want):
        assert np.shares_memory(d["agentview_rgb"], images)
        np.testing.assert_array_equal(d["agentview_rgb"], w)
    # The demos' own arrays were let go as they were copied in: the memory held did not grow by the images' size.
    assert held - before < 0.15 * size, (held - before, size)
    batch = ds.get_batch([0, 41, 399])
    np.testing.assert_array_equal(batch["obs"]["agentview_rgb"][1, 0].numpy(), want[1][1])
    np.testing.assert_array_equal(batch["obs"]["agentview_rgb"][2, 0].numpy(), want[9][39])


def test_one_at_a_time_holds_a_single_task(three_tasks):
    store = DemoStore(three_tasks, np.eye(3), KEYS, max_demos=2)
    store[2]
    with store.one_at_a_time():
        first = store[0]
        assert store.loaded() == [0]  # task 2 let go
        kept = [first.demos[1]]  # what a learner takes of a task stays its own
        store[1]
        assert store.loaded() == [1]
    assert store.loaded() == [] and kept[0]["agentview_rgb"].shape == (6, 8, 8, 3)
    # Indexed as a list is: from the end, and by slices.
    assert store[-1].task_id == 2 and [t.task_id for t in store[0:2]] == [0, 1]
    with pytest.raises(IndexError, match="task -4 is not one of the store's 3"):
        store[-4]


def test_a_file_changed_after_the_run_read_it_is_refused_at_its_stage(three_tasks):
    store = DemoStore(three_tasks, np.eye(3), KEYS, max_demos=2)
    write_task(three_tasks[1], [5, 6, 5], seed=7)  # another collection, in place
    store[0]
    with pytest.raises(LiberoError, match=r"t1.hdf5 has changed since the run read it when it started"):
        store[1]


def test_images_of_other_shapes_are_refused():
    tasks = [TaskData(0, [{"agentview_rgb": np.zeros((5, 16, 16, 3), np.uint8), "actions": np.zeros((5, 7))},
                          {"agentview_rgb": np.zeros((5, 16, 16, 1), np.uint8), "actions": np.zeros((5, 7))}],
                      np.ones(4))]
    with pytest.raises(ValueError, match=r"'agentview_rgb' arrays of \(16, 16, 3\) and \(16, 16, 1\) per step"):
        SequenceDataset(tasks, seq_len=2, obs_keys=["agentview_rgb"])
