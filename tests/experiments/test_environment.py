"""environment.json: what each session of a run ran on, appended without losing what was there."""

from __future__ import annotations

import json

import torch

from libero_ll.evaluation.runs import Run, load_sessions
from libero_ll.experiments.environment import record_session


def test_sessions_are_appended_and_an_unreadable_file_is_kept(tmp_path):
    assert load_sessions(tmp_path) == []  # a run made before the file existed
    assert record_session(tmp_path, torch.device("cpu"), resumed=False) == []  # nothing before it
    (first,) = load_sessions(tmp_path)
    assert first["device"].startswith("cpu (") and first["versions"]["torch"] == torch.__version__
    assert first["cwd"] and isinstance(first["command"], list) and first["resumed"] is False
    assert record_session(tmp_path, torch.device("cpu"), resumed=True) == [first]
    assert [s["resumed"] for s in load_sessions(tmp_path)] == [False, True]

    (tmp_path / "environment.json").write_text("{broken")
    assert load_sessions(tmp_path) == []
    record_session(tmp_path, torch.device("cpu"), resumed=True)
    assert (tmp_path / "environment.json.unreadable").read_text() == "{broken"  # kept, not overwritten
    assert len(json.loads((tmp_path / "environment.json").read_text())["sessions"]) == 1


def test_ran_on_names_every_device_a_run_used():
    run = Run(path=None, config={}, tensor=None, resources=None)
    assert run.ran_on == {"device": "n/a", "libero_ll": "n/a", "torch": "n/a"}
    sessions = [
        {"device": "cpu (AMD EPYC)", "versions": {"libero_ll": "0.1.0", "torch": "2.13.0"},
         "git": {"commit": "0123456789abcdef", "dirty": True}},
        {"device": "cuda (NVIDIA H100)", "versions": {"libero_ll": "0.1.0", "torch": "2.11.0"}},
    ]
    run = Run(path=None, config={}, tensor=None, resources=None, sessions=sessions)
    assert run.ran_on == {"device": "cpu (AMD EPYC) then cuda (NVIDIA H100)",
                          "libero_ll": "0.1.0 (0123456789, modified)", "torch": "2.13.0"}
