"""Fixed initial states: stored beside the task, replayable, and refused when they no longer match."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from libero_ll.envs.init_states import init_states_path, load_init_states, task_init_seed, write_init_states
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


def test_task_init_seed_depends_on_the_task_and_the_seed_only():
    # A run's sampled states are seeded by this; it must not be the task's position (the same in any order).
    a = task_init_seed("put_the_black_bowl_on_the_plate", 7)
    assert a == task_init_seed("put_the_black_bowl_on_the_plate", 7) and 0 <= a < 2**31
    assert a != task_init_seed("put_the_black_bowl_on_the_plate", 8)
    assert a != task_init_seed("put_the_alphabet_soup_in_the_basket", 7)


def test_stale_missing_and_broken_files_are_refused(tmp_path, soup_env):
    task = tmp_path / "soup.bddl"
    shutil.copy(soup_env.spec.path, task)
    with pytest.raises(LiberoError, match="no stored initial states"):
        load_init_states(task)
    write_init_states(task, n=2, env=soup_env)
    task.write_text(task.read_text().replace("(0.015 -0.035 0.035 -0.015)", "(0.015 -0.045 0.035 -0.015)"))
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


# ---------------------------------------------------------------- LIBERO's fixed initial states


class _NotAnArray:
    """Pickled by reference to this module: reading it back would mean importing and running code."""


@pytest.fixture(scope="module")
def libero_task(tmp_path_factory):
    """A LIBERO-style task (a cabinet with three drawers, a bowl and a plate on the table) and a file
    of LIBERO states for it: time, arm and fingers (9), bowl and plate (7 each), drawers (3), velocities."""
    import libero_files
    import torch

    folder = tmp_path_factory.mktemp("libero")
    task = folder / "open_the_top_drawer_of_the_cabinet.bddl"
    task.write_text(libero_files.DANGLING_REGION)
    rows = np.zeros((3, 1 + 26 + 24))
    for i in range(3):
        rows[i, 1:10] = [0.0, -0.16, 0.0, -2.44, 0.0, 2.22, 0.79, 0.02, -0.02]
        rows[i, 10:17] = [-0.055 + 0.005 * i, 0.055, 0.97, 0.707, 0.0, 0.0, 0.707]  # the bowl
        rows[i, 17:24] = [0.11, 0.23 - 0.005 * i, 0.97, 0.707, 0.0, 0.0, 0.707]  # the plate
    source = folder / "open_the_top_drawer_of_the_cabinet.pruned_init"
    torch.save(rows, source)
    return task, source, rows


def test_libero_states_are_read_without_running_code(tmp_path, libero_task):
    import torch

    from libero_ll.envs.init_states import read_libero_init_states

    _, source, rows = libero_task
    np.testing.assert_array_equal(read_libero_init_states(source), rows)
    unsafe = tmp_path / "unsafe.pruned_init"
    torch.save({"states": _NotAnArray()}, unsafe)
    with pytest.raises(LiberoError, match="refused.*running code"):
        read_libero_init_states(unsafe)
    text = tmp_path / "text.pruned_init"
    text.write_text("not a torch file")
    with pytest.raises(LiberoError, match="text.pruned_init: not a LIBERO initial-states file"):
        read_libero_init_states(text)
    flat = tmp_path / "flat.pruned_init"
    torch.save(np.zeros(5), flat)
    with pytest.raises(LiberoError, match="2-D array"):
        read_libero_init_states(flat)
    with pytest.raises(LiberoError, match="no such file"):
        read_libero_init_states(tmp_path / "missing.pruned_init")


def test_libero_states_convert_to_ours(libero_task):
    from libero_ll.bddl.validate import BddlWarning
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.init_states import convert_libero_init_states

    task, source, rows = libero_task
    with pytest.warns(BddlWarning, match="bowl_drainer_1"):
        env = LiberoEnv(task, EnvConfig(render=False))
    try:
        report = convert_libero_init_states(task, source, env=env, overwrite=True)
        assert (report.count, report.init_false, report.goal_true) == (3, [], [])
        states = load_init_states(task, state_size=env.get_state().shape[0])
        assert states.shape[0] == 3
        for row, state in zip(rows, states):
            env.reset_to(state)
            # Where LIBERO had them (LIBERO's tabletop workspace is centred where ours is).
            np.testing.assert_allclose(env.geometry.pos("akita_black_bowl_1")[:2], row[10:12], atol=0.003)
            np.testing.assert_allclose(env.geometry.pos("plate_1")[:2], row[17:19], atol=0.003)
            assert all(holds for _, holds in env.predicate_values(env.spec.init))
        with pytest.raises(LiberoError, match="exists"):
            convert_libero_init_states(task, source, env=env)
        other = source.with_name("other.pruned_init")
        import torch

        torch.save(rows[:, :-2], other)
        with pytest.raises(LiberoError, match="other.pruned_init: state 0: .*has 51 numbers.*this one has 49"):
            convert_libero_init_states(task, other, env=env, overwrite=True)
        # A state with NaN in it is refused before anything is written (it used to be stored).
        broken = rows.copy()
        broken[1, 12] = np.nan
        torch.save(broken, other)
        stored = init_states_path(task).read_bytes()
        with pytest.raises(LiberoError, match="other.pruned_init: state 1 holds numbers that are not finite"):
            convert_libero_init_states(task, other, env=env, overwrite=True)
        assert init_states_path(task).read_bytes() == stored
    finally:
        env.close()


def test_init_states_cli_converts_a_folder_of_libero_files(libero_task, capsys):
    from libero_ll.cli import main

    task, source, _ = libero_task
    assert main(["init-states", str(task), "--libero", str(source.parent), "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert "3 initial states from open_the_top_drawer_of_the_cabinet.pruned_init; init holds in 3" in out
    assert main(["init-states", str(task), "--libero", str(source)]) == 0
    assert "exists, skipped" in capsys.readouterr().out


def test_cli_refuses_states_where_init_fails_and_names_a_stale_file(tmp_path, capsys):
    # Stored states used to be checked only against the goal: a region off the table gave states in which
    # the task's init does not hold, stored with exit 0.
    from libero_ll.cli import main

    soup = REPO / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    far = tmp_path / "far.bddl"
    # A region that reaches over the table's edge passes validation with a warning, and the bowl falls off.
    far.write_text(soup.read_text().replace("(-0.185 -0.05 -0.165 -0.03)", "(0.39 -0.05 4.82 -0.03)"))
    assert main(["init-states", str(far), "--n", "1"]) == 2
    err = capsys.readouterr().err
    assert "init predicates (on akita_black_bowl_1 main_table_akita_black_bowl_init_region) do not hold" in err
    assert not init_states_path(far).exists()
    # An existing file is kept without --overwrite; one that no longer matches its task says so.
    task = tmp_path / "soup.bddl"
    shutil.copy(soup, task)
    assert main(["init-states", str(task), "--n", "1"]) == 0
    assert main(["init-states", str(task), "--n", "1"]) == 0
    assert "exists, skipped" in capsys.readouterr().out
    task.write_text(task.read_text() + "; edited\n")
    assert main(["init-states", str(task), "--n", "1"]) == 0
    assert "exists but runs will not use it: made for a different version of soup.bddl" in capsys.readouterr().out
    # Kept states that are not the ones asked for say so (before: "exists, skipped", and a later run wanting 2
    # failed with "1 states stored, 2 asked for").
    shutil.copy(soup, task)
    assert main(["init-states", str(task), "--n", "2"]) == 0
    assert "exists with 1 state of seed 0, not the 2 of seed 0 asked for; skipped" in capsys.readouterr().out
    assert main(["init-states", str(task), "--n", "1", "--seed", "5"]) == 0
    assert "exists with 1 state of seed 0, not the 1 of seed 5 asked for; skipped" in capsys.readouterr().out
    states, seed = load_init_states(task, with_seed=True)
    assert seed == 0 and np.array_equal(states, load_init_states(task))
    # An unreadable file is named as such (before: "no longer matches").
    init_states_path(task).write_text("junk")
    assert main(["init-states", str(task), "--n", "1"]) == 0
    assert "exists but runs will not use it: not a readable initial-states file" in capsys.readouterr().out
    # A task that cannot be set up does not stop the others, and is named with its file.
    init_states_path(task).unlink()
    assert main(["init-states", str(far), str(task), "--n", "1"]) == 2
    out, err = capsys.readouterr()
    assert f"{far}: in initial state 0 (seed 0) the init predicates" in err and init_states_path(task).is_file()
    assert "error: 1 of 2 tasks have no initial states (above): far.bddl" in err
    # A folder where the states would go is refused before any work (before: an error after sampling, and a
    # stray .tmp file beside it).
    init_states_path(far).mkdir()
    assert main(["init-states", str(far), "--overwrite", "--n", "1"]) == 2
    assert "far.init.npz: a folder where the initial states of far.bddl go" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("far")) == ["far.bddl", "far.init.npz"]
    for bad, message in ((tmp_path, "a folder, not a task file"), (tmp_path / "nope.bddl", "no such task file")):
        assert main(["init-states", str(bad)]) == 2
        assert message in capsys.readouterr().err
    assert main(["init-states", str(task), "--suite", "quickstart"]) == 2
    assert "not both" in capsys.readouterr().err


def test_a_models_friction_priority_is_part_of_its_scenes_fingerprint(monkeypatch):
    """The priority is left out of a model's repr while 0 (adding it changed no other scene's fingerprint), so
    the fingerprint adds it itself: a plate that stops governing its contacts makes its scenes' states stale."""
    from dataclasses import replace

    import libero_ll.assets.categories as categories
    from libero_ll.envs.init_states import scene_fingerprint

    bowl = REPO / "bddl_tasks/quickstart/put_the_black_bowl_on_the_plate.bddl"
    before = scene_fingerprint(bowl)
    plate = categories.get_model("plate")
    assert plate.friction_priority == 1
    real = categories.get_model
    monkeypatch.setattr(
        categories, "get_model", lambda cat: replace(plate, friction_priority=0) if cat == "plate" else real(cat)
    )
    assert scene_fingerprint(bowl) != before
