"""A folder of LIBERO's own demo files (`<task>_demo.hdf5`) is read as it is: nothing is collected beside
them."""

import pytest
from omegaconf import OmegaConf

from libero_ll.data.hdf5 import task_demo_file
from libero_ll.errors import LiberoError
from libero_ll.experiments.lifelong import check_demo_images, collect_missing_demos, stale_demo_notes
from tests.experiments.test_stale_demos import TASK_TEXT, write_demos


def config(folder, image_size=8):
    return OmegaConf.create({
        "data": {"dir": str(folder), "demos_per_task": 2, "collect_seed": 0, "expert_max_steps": 10,
                 "collect_workers": 1},
        "env": {"image_size": image_size},
    })


def test_libero_names_are_found_and_ours_come_first(tmp_path):
    assert task_demo_file(tmp_path, "toy") == tmp_path / "toy.hdf5"  # neither: where demos are collected
    write_demos(tmp_path / "toy_demo.hdf5", TASK_TEXT, "teleoperation")
    assert task_demo_file(tmp_path, "toy") == tmp_path / "toy_demo.hdf5"
    write_demos(tmp_path / "toy.hdf5", TASK_TEXT, "teleoperation")
    assert task_demo_file(tmp_path, "toy") == tmp_path / "toy.hdf5"


def test_a_libero_demo_file_is_used_not_collected_beside(tmp_path, monkeypatch):
    import libero_ll.data.collect

    task = tmp_path / "toy.bddl"
    task.write_text(TASK_TEXT)
    data = tmp_path / "libero_object"
    data.mkdir()
    write_demos(data / "toy_demo.hdf5", TASK_TEXT, "teleoperation")

    def no_collect(*args, **kwargs):
        raise AssertionError(f"collected {args[0]}")

    monkeypatch.setattr(libero_ll.data.collect, "collect", no_collect)
    collect_missing_demos(config(data), [task], env_cfg=None, log=lambda s: None)
    assert sorted(p.name for p in data.iterdir()) == ["toy_demo.hdf5"]
    check_demo_images(config(data), [task])
    assert stale_demo_notes(data, [task]) == []
    wrong_size = r"toy_demo\.hdf5: images are 8x8 but env.image_size is 128; set env.image_size=8"
    with pytest.raises(LiberoError, match=wrong_size):
        check_demo_images(config(data, image_size=128), [task])
