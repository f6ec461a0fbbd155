"""`data.corrections_per_demo`: a run makes each task's displaced-object corrections once and trains on them."""

from __future__ import annotations

import json
import shutil

import pytest


def _windows(run_dir) -> list[int]:
    tasks = json.loads((run_dir / "resources.json").read_text())["tasks"]
    return [t["samples_seen"] for t in tasks]


def test_a_run_trains_on_its_corrections(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    from libero_ll.data.hdf5 import read_demos
    from libero_ll.experiments.lifelong import run_lifelong

    data = tmp_path / "data"
    shutil.copytree(smoke_data, data)
    overrides = ("train.epochs=1", "eval.every=5")
    plain = run_lifelong(make_smoke_config(tmp_path / "a", data, *overrides), log=lambda s: None, envs=smoke_envs)
    assert not (data / "corrections").exists()

    lines: list[str] = []
    cfg = make_smoke_config(tmp_path / "b", data, *overrides, "data.corrections_per_demo=1")
    run = run_lifelong(cfg, log=lines.append, envs=smoke_envs)
    made = [s for s in lines if "displaced-object corrections" in s]
    assert len(made) == 2, lines  # one line per task
    files = sorted((data / "corrections").glob("*.hdf5"))
    assert [f.name for f in files] == sorted(p.name for p in data.glob("*.hdf5"))
    # Two demos of one pick each, one displacement: two fragments per task, trained on beside the demos.
    assert all(len(read_demos(f, obs_keys=[])) == 2 for f in files)
    assert all(w > p for w, p in zip(_windows(run), _windows(plain)))

    # Another run with the same settings finds them current and makes none.
    from libero_ll.data.corrections import CorrectionSettings, ensure_corrections

    settings = CorrectionSettings(1, int(cfg.data.collect_seed), int(cfg.data.demos_per_task))
    assert ensure_corrections(sorted(data.glob("*.hdf5")), settings) == [None, None]


@pytest.mark.parametrize("value", ["-1"])
def test_a_negative_count_is_named(tmp_path, capsys, value):
    from pathlib import Path

    from libero_ll.cli import main

    repo = Path(__file__).resolve().parents[2]
    code = main(["train", str(repo / "configs" / "smoke.yaml"), f"output_dir={tmp_path}", f"data.dir={tmp_path}",
                 f"data.corrections_per_demo={value}"])
    assert code == 2
    assert "data.corrections_per_demo must be 0 (none) or more" in capsys.readouterr().err
