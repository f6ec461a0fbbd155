"""The replay check: collected demos replay (without rendering) and reach the goal; a tampered action is
caught and the demo named; missing and corrupt files are clean errors."""

from __future__ import annotations

import shutil

import h5py

from libero_ll.cli import main
from libero_ll.data.verify import REPLAY_TOLERANCE, verify_file


def test_collected_demos_replay_exactly_without_rendering(reference_demos, capsys):
    ref, stats = reference_demos
    # The demos were recorded with rendering on; verify replays with it off.
    report = verify_file(ref)
    assert report.ok and [d.name for d in report.demos] == ["demo_0", "demo_1"]
    assert [d.steps for d in report.demos] == stats.lengths
    for d in report.demos:
        assert d.goal and d.error is None
        assert d.max_divergence == 0.0 <= REPLAY_TOLERANCE  # same machine: bit for bit

    assert main(["verify", str(ref)]) == 0
    out = capsys.readouterr().out
    assert "demo_1: ok" in out and "goal reached" in out
    assert "verified 2 demos in 1 file: 2 replay within 0.0001 and reach the goal, 0 failed" in out


def test_tampered_action_fails_and_names_the_demo(reference_demos, tmp_path, capsys):
    ref, _ = reference_demos
    bad = tmp_path / "tampered.hdf5"
    shutil.copy(ref, bad)
    with h5py.File(bad, "r+") as f:
        actions = f["data/demo_1/actions"]
        a = actions[()]
        a[20:40, :3] = 1.0  # the hand is shoved away for a second
        actions[...] = a
    assert main(["verify", str(bad)]) == 1
    out = capsys.readouterr().out
    lines = {line.strip().split(":")[0]: line for line in out.splitlines() if line.startswith("  demo_")}
    assert "ok" in lines["demo_0"] and "FAILED" in lines["demo_1"]
    assert "over the tolerance 0.0001 from step 21" in lines["demo_1"]
    assert "1 replay within 0.0001 and reach the goal, 1 failed" in out
    assert f"failed: {bad}:demo_1" in out
    # A folder stands for its demo files, in name order.
    shutil.copy(ref, tmp_path / "a_reference.hdf5")
    assert main(["verify", str(tmp_path), "--max-demos", "1"]) == 0
    out = capsys.readouterr().out
    assert out.index(str(tmp_path / "a_reference.hdf5")) < out.index(str(bad))
    assert "verified 2 demos in 2 files: 2 replay within 0.0001 and reach the goal, 0 failed" in out


def test_missing_and_corrupt_files_are_clean_errors(tmp_path, capsys):
    missing = tmp_path / "missing.hdf5"
    assert main(["verify", str(missing)]) == 2
    assert f"error: demo file {missing} does not exist" in capsys.readouterr().err

    # A damaged file is a failed file, named with why; before, one stopped the command before any replay.
    corrupt = tmp_path / "corrupt.hdf5"
    corrupt.write_bytes(b"\x89HDF\r\n\x1a\n" + b"garbage" * 100)
    assert main(["verify", str(corrupt)]) == 1
    captured = capsys.readouterr()
    assert f"FAILED: demo file {corrupt} is not a readable HDF5 file" in captured.out
    assert captured.out.strip().splitlines()[-1] == f"failed: {corrupt} (cannot be replayed)"
    assert "Traceback" not in captured.err
    # A missing one beside it still fails at once (a typo), before any replay.
    assert main(["verify", str(corrupt), str(missing)]) == 2
    assert f"error: demo file {missing} does not exist" in capsys.readouterr().err

    no_task = tmp_path / "no_task.hdf5"
    with h5py.File(no_task, "w") as f:
        f.create_group("data/demo_0").create_dataset("actions", data=[[0.0] * 7])
    # A file that cannot be replayed is a failed file among the others, not an error that stops the command.
    assert main(["verify", str(no_task)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED: demo file {no_task}: no task text (bddl_file_content), so its scene cannot be rebuilt" in out
    assert out.strip().splitlines()[-1] == f"failed: {no_task} (cannot be replayed)"
