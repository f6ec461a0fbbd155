"""The doors in: a run trains on LeRobot episodes imported into demo files, and on LIBERO-named demo files,
without collecting anything beside them."""

from __future__ import annotations

import json


def test_a_run_trains_on_an_imported_lerobot_dataset(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    from libero_ll.data.lerobot import export_lerobot
    from libero_ll.data.lerobot_import import import_lerobot
    from libero_ll.experiments.lifelong import run_lifelong, suite_tasks

    export_lerobot(smoke_data, tmp_path / "lerobot")
    data = tmp_path / "imported"
    import_lerobot(tmp_path / "lerobot", data, task_files=suite_tasks("quickstart"))
    names = sorted(p.name for p in data.iterdir())
    assert names == sorted(p.name for p in smoke_data.glob("*.hdf5"))

    lines: list[str] = []
    run = run_lifelong(make_smoke_config(tmp_path, data, "train.epochs=1", "eval.every=5"), log=lines.append,
                       envs=smoke_envs)
    assert not any(line.startswith("collected") for line in lines), lines
    assert sorted(p.name for p in data.iterdir()) == names  # nothing written beside the imported files
    seen = [t["samples_seen"] for t in json.loads((run / "resources.json").read_text())["tasks"]]
    assert len(seen) == 2 and all(s > 0 for s in seen)


def test_a_run_reads_libero_named_demo_files(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    import shutil

    from libero_ll.experiments.lifelong import run_lifelong

    data = tmp_path / "libero"
    data.mkdir()
    for f in smoke_data.glob("*.hdf5"):
        shutil.copy(f, data / f"{f.stem}_demo.hdf5")
    lines: list[str] = []
    run_lifelong(make_smoke_config(tmp_path, data, "train.epochs=1", "eval.every=5"), log=lines.append,
                 envs=smoke_envs)
    assert not any(line.startswith("collected") for line in lines), lines
    assert all(p.name.endswith("_demo.hdf5") for p in data.iterdir())
