"""Fixed initial states: stored beside the task, replayable, and refused when they no longer match."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from libero_ll.envs.init_states import init_states_path, load_init_states, write_init_states
from libero_ll.errors import LiberoError

REPO = Path(__file__).resolve().parents[2]


def test_write_load_and_replay(tmp_path, soup_env):
    task = tmp_path / "soup.bddl"
    shutil.copy(soup_env.spec.path, task)
    out = write_init_states(task, n=4, seed=7, env=soup_env)
    assert out == init_states_path(task) and out.name == "soup.init.npz"
    states = load_init_states(task, state_size=soup_env.get_state().shape[0])
    assert states.shape[0] == 4
    assert len({s.tobytes() for s in states}) == 4
    for s in states:
        soup_env.reset_to(s)
        assert all(holds for _, holds in soup_env.predicate_values(soup_env.spec.init))
        assert not soup_env.check_goal()
    # The same seed gives the same states.
    write_init_states(task, n=4, seed=7, env=soup_env, overwrite=True)
    np.testing.assert_array_equal(load_init_states(task), states)
    with pytest.raises(LiberoError, match="exists"):
        write_init_states(task, n=4, seed=7, env=soup_env)
    with pytest.raises(LiberoError, match="4 states stored, 5 asked"):
        load_init_states(task, n=5)
    with pytest.raises(LiberoError, match="simulator has 3"):
        load_init_states(task, state_size=3)


def test_stale_missing_and_broken_files_are_refused(tmp_path, soup_env):
    task = tmp_path / "soup.bddl"
    shutil.copy(soup_env.spec.path, task)
    with pytest.raises(LiberoError, match="no stored initial states"):
        load_init_states(task)
    write_init_states(task, n=2, env=soup_env)
    task.write_text(task.read_text().replace("(0.0 -0.05 0.05 0.0)", "(0.0 -0.06 0.05 0.0)"))
    with pytest.raises(LiberoError, match="different version"):
        load_init_states(task)
    init_states_path(task).write_bytes(b"not a numpy file")
    with pytest.raises(LiberoError, match="not a readable"):
        load_init_states(task)


def test_shipped_tasks_have_current_init_states():
    tasks = sorted((REPO / "bddl_tasks").glob("*/*.bddl"))
    assert tasks
    for t in tasks:
        assert load_init_states(t).shape[0] == 50, t
