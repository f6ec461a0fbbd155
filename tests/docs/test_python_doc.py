"""docs/python.md runs as written: its Python blocks, in order, in one namespace, from a folder that has the
checkout's configs/ (where the page says to run them)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_python_page_runs_as_written(tmp_path, monkeypatch, capsys):
    text = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 7
    (tmp_path / "configs").symlink_to(REPO / "configs")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    # What the comments on the page say the lines print.
    assert "['libero_spatial', 'libero_object', 'libero_goal', 'libero_90', 'libero_10']" in out
    assert "Put the black bowl on the plate" in out
    assert "'agentview_rgb': (64, 64, 3)" in out
    assert "success: True" in out  # the expert solves the task
    assert namespace["stats"].kept == 2 and namespace["demo"].actions.shape[1] == 7
    assert (Path(namespace["run_dir"]) / "final_policy.pt").exists()
    assert namespace["finished"].tensor.matrix.shape == (1, 1)
    assert namespace["step"] >= 0 and namespace["action"].shape == (7,)
