"""A run's sampled fixed initial states (tasks without current stored ones) depend on the task, not on where it
sits in the run, and are checked as `libero-ll init-states` checks them."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from libero_ll.errors import LiberoError
from libero_ll.experiments.lifelong import _init_states


def _unstored_copies(envs, folder: Path) -> list[Path]:
    """Copies of the envs' task files without their stored initial states (so a run samples them)."""
    folder.mkdir()
    copies = []
    for env in envs:
        copy = folder / Path(env.spec.path).name
        shutil.copy(env.spec.path, copy)
        copies.append(copy)
    return copies


def test_a_task_gets_the_same_sampled_states_in_any_task_order(smoke_envs, make_smoke_config, tmp_path):
    # They were sampled with eval.init_seed + the task's position: another order gave other starts.
    cfg = make_smoke_config(tmp_path, tmp_path)
    tasks = _unstored_copies(smoke_envs, tmp_path / "suite")
    names = [t.stem for t in tasks]
    got, logged = [], []
    for order in ([0, 1], [1, 0]):
        run_dir = tmp_path / f"run_{order[0]}"
        run_dir.mkdir()
        states = _init_states(cfg, [tasks[k] for k in order], [smoke_envs[k] for k in order],
                              [names[k] for k in order], run_dir, logged.append)
        got.append(dict(zip([names[k] for k in order], states)))
    assert logged == []  # sampled, not read from a stored file
    for name in names:
        assert got[0][name].shape[0] == int(cfg.eval.init_states)
        assert np.array_equal(got[0][name], got[1][name]), name
    assert not np.array_equal(got[0][names[0]], got[0][names[1]])


def test_a_sampled_start_that_already_meets_the_goal_stops_the_run(smoke_envs, make_smoke_config, tmp_path,
                                                                    monkeypatch):
    cfg = make_smoke_config(tmp_path, tmp_path)
    tasks = _unstored_copies(smoke_envs[:1], tmp_path / "suite")
    monkeypatch.setattr(smoke_envs[0], "check_goal", lambda: True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(LiberoError, match=r"initial state 0 \(seed \d+\) already satisfies the goal") as e:
        _init_states(cfg, tasks, smoke_envs[:1], [tasks[0].stem], run_dir, print)
    assert str(smoke_envs[0].spec.path) in str(e.value) and "eval.init_seed" in str(e.value)
    assert not (run_dir / "init_states.npz").exists()


def test_stored_states_are_read_without_building_an_environment(smoke_envs, make_smoke_config, tmp_path):
    # The run's process built every task's environment to read the stored states' size: a second or two per
    # task (a LIBERO-90 run started with 90 of them) in a process whose rollouts run in workers.
    from libero_ll.envs.init_states import has_init_states, load_init_states
    from libero_ll.envs.pool import EnvPool

    cfg = make_smoke_config(tmp_path, tmp_path)
    tasks = [Path(env.spec.path) for env in smoke_envs]
    assert all(has_init_states(t) for t in tasks)
    pool = EnvPool(tasks, smoke_envs[0].config)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    logged = []
    states = _init_states(cfg, tasks, pool, [t.stem for t in tasks], run_dir, logged.append)
    assert pool.built == 0 and logged == []
    for task, got in zip(tasks, states):
        np.testing.assert_array_equal(got, load_init_states(task, int(cfg.eval.init_states)))
    # A state of another size than the simulator's is refused where it is first used.
    with pytest.raises(LiberoError, match="numbers but this task's simulator state has"):
        smoke_envs[0].reset_to(states[0][0][:-1])
