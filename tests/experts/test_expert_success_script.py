"""scripts/expert_success.py: its cache resumes by (task, seed index) and its table sums per suite."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "expert_success.py"


def _script():
    spec = importlib.util.spec_from_file_location("expert_success", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(task, index, success, expert="abc", max_steps=600, suite="s1", task_file="f1"):
    return {
        "suite": suite,
        "task": task,
        "index": index,
        "seed": index,
        "max_steps": max_steps,
        "expert": expert,
        "task_file": task_file,
        "success": success,
        "length": 100 + index,
        "seconds": 1.0,
        "unmet": [],
        "error": "",
    }


def test_cache_keeps_only_results_of_this_code_cap_and_task_file(tmp_path):
    mod = _script()
    cache = tmp_path / "c.jsonl"
    rows = [
        _row("t", 0, True),
        _row("t", 1, False, expert="old"),
        _row("t", 2, True, max_steps=300),
        _row("t", 3, True, task_file="changed"),
        _row("gone", 0, True),
    ]
    cache.write_text("\n".join(json.dumps(r) for r in rows) + '\n{"torn": ')
    got = mod.load_cache(cache, "abc", 600, {"t": "f1"})
    assert list(got) == [("t", 0)]


def test_fingerprints_change_with_the_code_and_the_task_files(tmp_path):
    mod = _script()
    task = tmp_path / "a.bddl"
    task.write_text("(define (problem x))")
    before = mod.task_fingerprint(str(task))
    (tmp_path / "a.init.npz").write_bytes(b"states")
    assert mod.task_fingerprint(str(task)) != before
    assert "libero_ll/assets" in mod.FINGERPRINTED and "libero_ll/envs" in mod.FINGERPRINTED
    assert len(mod.expert_fingerprint()) == 12


def test_the_fingerprint_covers_the_episode_functions_of_collect_and_not_the_rest(tmp_path, monkeypatch):
    import shutil

    mod = _script()
    for entry in mod.FINGERPRINTED:
        shutil.copytree(mod.REPO / entry, tmp_path / entry)
    (tmp_path / "libero_ll" / "data").mkdir(parents=True)
    collect = tmp_path / "libero_ll" / "data" / "collect.py"
    original = (mod.REPO / "libero_ll" / "data" / "collect.py").read_text()
    collect.write_text(original)
    monkeypatch.setattr(mod, "REPO", tmp_path)
    before = mod.expert_fingerprint()
    assert before == _script().expert_fingerprint()  # the copy is the repository's code
    collect.write_text(original + "\n\ndef _workers_only():\n    return 1\n")
    assert mod.expert_fingerprint() == before
    collect.write_text(original.replace("& 0x7FFFFFFF", "& 0x7FFFFFFE"))
    assert mod.expert_fingerprint() != before
    collect.write_text(original.replace("def run_expert_episode(", "def run_episode("))
    with pytest.raises(SystemExit, match="run_expert_episode"):
        mod.expert_fingerprint()


def test_table_counts_successes_per_task_and_suite():
    mod = _script()
    results = {("a", i): _row("a", i, i < 2) for i in range(3)}
    results |= {("b", i): _row("b", i, True, suite="s2") for i in range(3)}
    command = "python scripts/expert_success.py --seeds 3"
    text = mod.table([("s1", "a"), ("s2", "b")], results, 3, command, "abc", 600)
    assert "| s1 | a | 2/3 | 67% | 100 |" in text
    assert "| s2 | b | 3/3 | 100% | 101 |" in text
    assert "| **all** | 6 | 83.3% | 1/2 |" in text
    assert "python scripts/expert_success.py --seeds 3" in text
    assert "Tasks below 90%: a (67%)." in text


def test_folders_of_task_files_are_measured_once_per_name_and_not_written_to_the_docs(tmp_path, capsys):
    import shutil

    mod = _script()
    quick = Path(__file__).resolve().parents[2] / "bddl_tasks" / "quickstart"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    soup = "put_the_alphabet_soup_in_the_basket.bddl"
    shutil.copy(quick / soup, a / soup)
    shutil.copy(quick / soup, b / soup)  # drawn again with another seed: measured once
    shutil.copy(quick / "put_the_black_bowl_on_the_plate.bddl", b)
    docs = Path(mod.__file__).resolve().parents[1] / "docs" / "expert_success.md"
    before = docs.read_bytes()
    cache = tmp_path / "cache.jsonl"
    assert mod.main(["--folder", str(a), "--folder", str(b), "--seeds", "1", "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "2 tasks, 2 episodes to run" in out
    assert "| a | 1 |" in out and "| b | 1 |" in out  # one row per folder in the summary
    assert docs.read_bytes() == before
    assert len(cache.read_text().splitlines()) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit):
        mod.main(["--folder", str(empty)])
    err = capsys.readouterr().err
    assert f"--folder {empty}: no .bddl files in it" in err
