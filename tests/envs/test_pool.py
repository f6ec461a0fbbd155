"""EnvPool: each task's environments built when needed, those of the few tasks used last kept, the rest closed."""

from __future__ import annotations

import numpy as np
import pytest

import libero_ll.envs.env as env_module
from libero_ll.envs.env import EnvConfig
from libero_ll.envs.pool import EnvPool
from tests.conftest import QUICKSTART


class FakeEnv:
    """Stands for a LiberoEnv: records its task and whether it was closed."""

    made: list = []

    def __init__(self, task, config):
        self.task, self.closed = task, False
        FakeEnv.made.append(self)

    def close(self):
        assert not self.closed, "closed twice"
        self.closed = True


@pytest.fixture
def fake_envs(monkeypatch):
    FakeEnv.made = []
    monkeypatch.setattr(env_module, "LiberoEnv", FakeEnv)
    return FakeEnv.made


def test_keeps_the_tasks_used_last_and_closes_the_others(fake_envs):
    pool = EnvPool([f"t{j}.bddl" for j in range(10)], EnvConfig(), keep_tasks=3)
    for j in range(10):
        env = pool[j]
        assert env.task.name == f"t{j}.bddl" and not env.closed
    # Tasks 7, 8 and 9 were used last; every other task's environment has been closed.
    assert list(pool.kept()) == [7, 8, 9]
    assert [e.closed for e in fake_envs] == [True] * 7 + [False] * 3
    # Using task 7 again takes its kept environment and makes it the newest; task 0 is built anew.
    again = pool[7]
    assert again is fake_envs[7] and pool.built == 10
    pool[0]
    assert pool.built == 11 and list(pool.kept()) == [9, 7, 0] and fake_envs[8].closed
    pool.close()
    assert all(e.closed for e in fake_envs) and pool.kept() == {}


def test_environments_out_are_never_closed_and_come_back(fake_envs):
    pool = EnvPool(["a.bddl", "b.bddl", "c.bddl"], EnvConfig(), keep_tasks=1)
    a1, a2 = pool.take(0), pool.take(0)  # two rollouts of task 0 at once
    assert a1 is not a2 and pool.kept() == {}
    b = pool.take(1)
    pool.give(1, b)
    pool.give(0, a1)  # task 0 is now the newest: task 1's environment goes
    assert b.closed and not a1.closed and not a2.closed and pool.kept() == {0: 1}
    pool.give(0, a2)
    assert pool.kept() == {0: 2}
    assert pool.take(0) in (a1, a2) and pool.kept() == {0: 1}
    with pytest.raises(IndexError, match="task 3 is not one of the pool's 3"):
        pool.take(3)
    with pytest.raises(ValueError, match="keep_tasks must be at least 1"):
        EnvPool(["a.bddl"], EnvConfig(), keep_tasks=0)


def test_several_environments_of_each_task_are_kept_within_the_budget(fake_envs):
    """A process stepping three rollouts of a task at once keeps the environments of fewer tasks: no more than
    keep_envs in all, the task given back last keeping all of its own."""
    pool = EnvPool([f"t{j}.bddl" for j in range(4)], EnvConfig(), keep_tasks=10, keep_envs=7)
    for j in range(4):
        envs = [pool.take(j) for _ in range(3)]
        for env in envs:
            pool.give(j, env)
    assert pool.kept() == {2: 3, 3: 3} and pool.built == 12
    assert [e.closed for e in fake_envs] == [True] * 6 + [False] * 6
    out = [pool.take(0) for _ in range(8)]  # more than the budget of one task, out at once
    for env in out:
        pool.give(0, env)
    assert pool.kept() == {0: 8}
    with pytest.raises(ValueError, match="keep_envs must be at least 1"):
        EnvPool(["a.bddl"], EnvConfig(), keep_envs=0)


def test_an_environment_built_again_steps_and_draws_as_the_first_did():
    """Closing one task's environment and building it again (another task's drawn in between) gives the same
    observations from the same state, and pictures that change as the arm moves."""
    tasks = [QUICKSTART / "put_the_alphabet_soup_in_the_basket.bddl", QUICKSTART / "put_the_black_bowl_on_the_plate.bddl"]
    pool = EnvPool(tasks, EnvConfig(image_size=32, robot_mesh="collision"), keep_tasks=1)
    actions = np.tile([0.6, -0.4, 0.3, 0.0, 0.0, 0.2, -1.0], (6, 1))
    try:
        runs = []
        for _ in range(2):
            env = pool[0]
            env.reset(seed=5)
            state = env.get_state()
            frames = [env.reset_to(state)]
            frames += [env.step(a)[0] for a in actions]
            runs.append(frames)
            other = pool[1]  # builds task 1, closing task 0's environment
            other.reset(seed=1)
        assert pool.built == 4
        for a, b in zip(*runs):
            for key in a:
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        for key in ("agentview_rgb", "eye_in_hand_rgb"):
            assert (runs[1][0][key] != runs[1][-1][key]).any(), f"{key} did not change while the arm moved"
    finally:
        pool.close()
