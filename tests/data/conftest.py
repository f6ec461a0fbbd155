"""Fixtures of the data tests: a small expert collection of the bowl task, made once per session."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

# Small and fast: 32-pixel images, the robot's simple meshes, two demos.
IMAGE_SIZE = 32
NUM_DEMOS = 2
MAX_STEPS = 250


@pytest.fixture(scope="session")
def small_env_config():
    from libero_ll.envs.env import EnvConfig

    return EnvConfig(image_size=IMAGE_SIZE, robot_mesh="collision")


@pytest.fixture(scope="session")
def collect_args(bowl_task):
    """The CLI arguments of the reference collection (without --out)."""
    return ["collect", "--task", str(bowl_task), "--demos", str(NUM_DEMOS), "--image-size", str(IMAGE_SIZE),
            "--robot-mesh", "collision", "--max-steps", str(MAX_STEPS)]


@pytest.fixture(scope="session")
def reference_demos(bowl_task, small_env_config, tmp_path_factory):
    """The bowl task's demos collected in one process without interruption: (file, CollectStats)."""
    from libero_ll.data.collect import collect

    path = tmp_path_factory.mktemp("reference") / f"{bowl_task.stem}.hdf5"
    [stats] = collect([(bowl_task, path)], NUM_DEMOS, seed=0, env_config=small_env_config,
                      max_steps=MAX_STEPS)
    assert stats.kept == NUM_DEMOS and path.exists()
    return path, stats


def _contents(path) -> dict:
    """Every attribute and dataset of an HDF5 file, by path."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for key, value in obj.attrs.items():
                out[f"{name}@{key}"] = value
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]

        visit("/", f)
        f.visititems(visit)
    return out


@pytest.fixture(scope="session")
def assert_same_contents():
    """assert_same_contents(a, b): the two HDF5 files hold the same groups, attributes and arrays."""

    def check(a, b):
        ca, cb = _contents(a), _contents(b)
        assert sorted(ca) == sorted(cb)
        for key in ca:
            va, vb = ca[key], cb[key]
            if isinstance(va, np.ndarray):
                assert va.dtype == vb.dtype and va.shape == vb.shape, key
                np.testing.assert_array_equal(va, vb, err_msg=key)
            else:
                assert va == vb, key

    return check
