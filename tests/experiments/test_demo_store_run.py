"""A run holds the images of the stage it trains (and what its learner keeps), not every task's."""

from __future__ import annotations

import numpy as np
import pytest

from libero_ll.data.store import DemoStore
from libero_ll.experiments.lifelong import run_lifelong

FAST = ["train.epochs=2", "eval.max_steps=4", "eval.init_states=1", "language_encoder=task_id"]


@pytest.fixture
def reads(monkeypatch):
    """Each task read with its images, in order, and the tasks held at each read."""
    seen = []
    get = DemoStore.__getitem__

    def recording(self, j):
        if int(j) not in self._loaded:
            seen.append((int(j), self.loaded()))
        return get(self, j)

    monkeypatch.setattr(DemoStore, "__getitem__", recording)
    return seen


@pytest.mark.parametrize("learner", ["er", "ewc", "mtl"])
def test_a_run_reads_each_stage_when_it_starts_and_lets_it_go(learner, tmp_path, smoke_data, smoke_envs,
                                                              make_smoke_config, reads):
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, f"learner.name={learner}")
    run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    if learner == "mtl":  # one stage of both tasks
        assert reads == [(0, []), (1, [0])]
    else:  # task 1 is read once task 0 has been let go
        assert reads == [(0, []), (1, [])]


def test_a_resumed_er_run_reads_only_what_its_memory_and_stage_need(tmp_path, smoke_data, smoke_envs,
                                                                    make_smoke_config, stop_run, reads):
    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "learner.name=er")
    run_dir = stop_run(cfg, "stage 2 epoch 1", smoke_envs)
    reads.clear()
    run_lifelong(cfg, log=lambda s: None, resume=run_dir, envs=smoke_envs)
    # Task 0 for ER's memory (let go once the memory holds its demos), then task 1 for its stage.
    assert reads == [(0, []), (1, [])]


def test_a_stage_whose_images_do_not_fit_in_memory_is_refused_and_the_run_goes_on_later(
        tmp_path, smoke_data, smoke_envs, make_smoke_config, monkeypatch):
    from libero_ll.errors import LiberoError
    from libero_ll.experiments import lifelong

    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "learner.name=er")
    # Memory free for the first stage's images (2 demos at 32 px, two cameras), then 1 byte for the second's.
    free = iter([1 << 30])
    monkeypatch.setattr(lifelong, "available_memory", lambda: next(free, 1))
    lines = []
    with pytest.raises(LiberoError, match=r"stage 2 \(put_the_black_bowl_on_the_plate\) would hold 0\.0 GiB of demo "
                                          r"images \(\d+ steps, 2 cameras at 32x32\), more than the 0\.0 GiB") as e:
        run_lifelong(cfg, log=lines.append, envs=smoke_envs)
    run_dir = lines[0].split(": ", 1)[1]
    assert f"libero-ll train --resume {run_dir}" in str(e.value)
    monkeypatch.setattr(lifelong, "available_memory", lambda: None)  # more memory: the run goes on
    resumed = []
    run_lifelong(cfg, log=resumed.append, resume=run_dir, envs=smoke_envs)
    assert resumed[0].startswith(f"resuming {run_dir} at stage 2/2") and resumed[-1].startswith("done: 2 tasks")


def test_stage_memory_check_counts_every_camera_of_every_step(tmp_path, make_smoke_config):
    from libero_ll.data.dataset import TaskData
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.lifelong import check_stage_memory

    cfg = make_smoke_config(tmp_path, tmp_path, "env.image_size=128")
    light = [TaskData(j, [{"actions": np.zeros((100, 7))}] * 50, np.ones(4)) for j in range(2)]
    need = 2 * 50 * 100 * 2 * 128 * 128 * 3  # 0.92 GiB
    check_stage_memory(cfg, 0, ["a", "b"], light, 2, tmp_path, available=need)
    check_stage_memory(cfg, 0, ["a", "b"], light, 2, tmp_path, available=None)  # unknown: nothing refused
    (tmp_path / "resume.pt").write_bytes(b"")  # a run saved before: it can be continued
    with pytest.raises(LiberoError, match=r"stage 1 \(all 2 tasks\) would hold 0\.9 GiB .*10000 steps, 2 cameras "
                                          r"at 128x128\), more than the 0\.9 GiB .* --resume "):
        check_stage_memory(cfg, 0, ["a", "b"], light, 2, tmp_path, available=need - 1)
    (tmp_path / "resume.pt").unlink()
    # Before a run's first save (it is then removed), it can only be run again.
    with pytest.raises(LiberoError, match=r"free on this machine; run it where there is more memory, or with "
                                          r"fewer demos \(data.demos_per_task\), smaller images"):
        check_stage_memory(cfg, 0, ["a", "b"], light, 2, tmp_path, available=need - 1)


def test_a_resumed_run_checks_every_files_images_are_there_before_training(tmp_path, smoke_data, smoke_envs,
                                                                           make_smoke_config):
    import shutil

    import h5py

    from libero_ll.errors import LiberoError

    data = tmp_path / "demos"
    shutil.copytree(smoke_data, data)
    cfg = make_smoke_config(tmp_path, data, *FAST, "learner.name=er")
    lines = []
    run_lifelong(cfg, log=lines.append, envs=smoke_envs, max_stages=1)
    run_dir = lines[0].split(": ", 1)[1]
    bowl = data / "put_the_black_bowl_on_the_plate.hdf5"
    with h5py.File(bowl, "r+") as f:  # the file replaced meanwhile by one without the wrist camera
        del f["data/demo_1/obs/eye_in_hand_rgb"]
    resumed = []
    with pytest.raises(LiberoError, match=r"put_the_black_bowl_on_the_plate.hdf5: data/demo_1/obs has no "
                                          r"'eye_in_hand_rgb' dataset"):
        run_lifelong(cfg, log=resumed.append, resume=run_dir, envs=smoke_envs)
    assert not any(line.startswith("stage 2") for line in resumed)
