"""scripts/bench/gpu_er_run.sh: a run stopped after its time, handed back in pieces, and carried to an empty work
folder goes on from the epoch it stopped at."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _call(out: Path, work: Path, seconds: int, carried: Path | None = None,
          overrides: str = "train.epochs=100000 eval.every=1000") -> str:
    env = {**os.environ, "WORK_DIR": str(work), "CONFIG": "configs/smoke.yaml", "SUITE": "quickstart",
           "PYTHON": sys.executable, "OVERRIDES": overrides}
    args = ["bash", str(ROOT / "scripts/bench/gpu_er_run.sh"), str(out), str(seconds)]
    subprocess.run(args + ([str(carried)] if carried else []), env=env, check=True, timeout=seconds + 200)
    return (out / "train.log").read_text()


@pytest.mark.slow
def test_a_run_is_stopped_handed_back_and_continued_elsewhere(tmp_path):
    first = _call(tmp_path / "out1", tmp_path / "work1", 25)
    assert (tmp_path / "out1/done").read_text().startswith("train rc=143 run=")
    assert "terminated: the run is saved at its last completed epoch" in first
    stopped = max(int(e) for e in re.findall(r"stage 1 epoch (\d+):", first))
    pieces = sorted((tmp_path / "out1").glob("run.tar.*"))
    assert pieces and all(p.stat().st_size <= 15 * 2**20 for p in pieces)
    assert "unfinished" in (tmp_path / "out1/metrics.txt").read_text()
    carried = tmp_path / "run.tar"
    carried.write_bytes(b"".join(p.read_bytes() for p in pieces))

    second = _call(tmp_path / "out2", tmp_path / "work2", 25, carried)  # a fresh machine: no demos, no run
    assert second.startswith("== continuing ")
    assert re.search(rf"resuming .* at stage 1/2, train epoch {stopped}\n", second)
    assert f"stage 1 epoch {stopped + 1}:" in second
    assert "warning" not in second  # the demos collected again are the same


@pytest.mark.slow
def test_a_call_ends_at_a_stage_and_a_state_too_large_to_carry_is_said(tmp_path):
    """STAGES=1 (the default) ends a call between stages, where the state is smallest; a state over CARRY_MIB is
    not handed back in pieces, and done says why."""
    first = _call(tmp_path / "out1", tmp_path / "work1", 300, overrides="train.epochs=1")
    done = (tmp_path / "out1/done").read_text()
    assert done.startswith("train rc=0 run=") and "can be carried to a fresh machine" in done, done
    assert "stage 1/2" in first and "with stage 2/2 next" in first
    assert "stage 2/2 " not in first.replace("stage 2/2 next", "")
    carried = tmp_path / "run.tar"
    carried.write_bytes(b"".join(p.read_bytes() for p in sorted((tmp_path / "out1").glob("run.tar.*"))))
    second = _call(tmp_path / "out2", tmp_path / "work2", 300, carried, overrides="train.epochs=1")
    assert re.search(r"resuming .* at stage 2/2", second), second
    # The run has ended: its files come back (final policy included), with nothing left to carry.
    assert "the run has ended" in (tmp_path / "out2/done").read_text()
    assert list((tmp_path / "out2").glob("run.tar.*"))
    os.environ["CARRY_MIB"] = "0"  # an unfinished run's state larger than what may be carried
    try:
        _call(tmp_path / "out3", tmp_path / "work3", 300, overrides="train.epochs=1")
    finally:
        del os.environ["CARRY_MIB"]
    assert "too large to carry with .gpu/" in (tmp_path / "out3/done").read_text()
    assert not list((tmp_path / "out3").glob("run.tar.*"))
