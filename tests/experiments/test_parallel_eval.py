"""Evaluation with several environment worker processes gives the rollouts of the one-process evaluator, one
task at a time or with the rollouts of several tasks in flight at once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from libero_ll.envs.env import EnvConfig
from libero_ll.errors import LiberoError
from libero_ll.evaluation.rollout import rollout_stream, run_rollout_group, run_rollouts
from libero_ll.evaluation.vector_eval import ParallelEvaluator, RolloutJob, next_group
from libero_ll.experiments.lifelong import run_lifelong, suite_tasks


class ReachPolicy:
    """A scripted closed-loop policy: each env's action depends only on its own observation and step count."""

    def __init__(self):
        self.steps = None

    def reset(self, num_envs, env_ids=None):
        if env_ids is None:
            self.steps = np.zeros(num_envs, dtype=int)
        else:
            self.steps[list(env_ids)] = 0

    def act(self, obs, task_emb):
        self.steps += 1
        target = np.array([0.0, 0.1, 1.0]) + 0.02 * self.steps[:, None]
        move = np.clip(8.0 * (target - obs["ee_states"][:, :3]), -1, 1)
        grip = np.where(self.steps % 4 < 2, -1.0, 1.0)[:, None]
        return np.concatenate([move, np.zeros((len(move), 3)), grip], axis=1).astype(np.float32)


class TargetPolicy(ReachPolicy):
    """Moves each env's hand towards the point its task embedding names (emb[:3]) for emb[3] steps, then keeps
    it still; records the embeddings it is given."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def act(self, obs, task_emb):
        self.steps += 1
        emb = np.broadcast_to(np.asarray(task_emb), (len(self.steps), 4))
        self.seen.append(emb.copy())
        move = np.clip(8.0 * (emb[:, :3] - obs["ee_states"][:, :3]), -1, 1)
        move[self.steps > emb[:, 3]] = 0.0
        grip = -np.ones((len(move), 1))
        return np.concatenate([move, np.zeros((len(move), 3)), grip], axis=1).astype(np.float32)


class LookPolicy(ReachPolicy):
    """Like ReachPolicy, but its sideways motion also follows the brightness of each env's own agentview image:
    a worker whose images were stale, blank or another env's would steer elsewhere."""

    def act(self, obs, task_emb):
        action = super().act(obs, task_emb)
        brightness = obs["agentview_rgb"].reshape(len(action), -1).mean(1) / 255.0
        action[:, 1] = np.clip(action[:, 1] + 4.0 * (brightness - 0.45), -1, 1)
        return action


def _same(a, b) -> None:
    assert [(r.index, r.success, r.steps) for r in a] == [(r.index, r.success, r.steps) for r in b]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.final_state, y.final_state)


@pytest.fixture(scope="module")
def pool(make_smoke_config, tmp_path_factory):
    """Two workers over the smoke preset's two tasks, shared by this module's tests."""
    cfg = make_smoke_config(tmp_path_factory.mktemp("pool"), Path("unused"))
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=50)
    with ParallelEvaluator(tasks, env_cfg, workers=2) as p:
        yield p


def test_two_workers_step_the_same_rollouts_as_one_process(pool, smoke_envs):
    env = smoke_envs[1]
    init_states = env.sample_init_states(2, seed=3)
    emb = np.zeros(4, dtype=np.float32)
    # 3 rollouts on 2 workers: one worker starts a second rollout (from init state 0 again) mid-way.
    for max_steps in (6, 9):
        serial = run_rollouts(ReachPolicy(), env, init_states, emb, 3, max_steps)
        parallel = pool.rollouts(ReachPolicy(), 1, init_states, emb, 3, max_steps)
        _same(parallel, serial)
    assert not np.array_equal(serial[0].final_state, serial[1].final_state)  # different starts, different ends
    # A rollout in which nothing moves is given up at the same step by both.
    serial = run_rollouts(StillPolicy(), env, init_states, emb, 3, 40, still_steps=8)
    parallel = pool.rollouts(StillPolicy(), 1, init_states, emb, 3, 40, still_steps=8)
    assert [r.steps for r in parallel] == [r.steps for r in serial]
    assert max(r.steps for r in serial) < 40


@pytest.fixture(scope="module")
def slot_pool(make_smoke_config, tmp_path_factory):
    """Two workers stepping three rollouts each."""
    cfg = make_smoke_config(tmp_path_factory.mktemp("slot_pool"), Path("unused"))
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=50)
    with ParallelEvaluator(tasks, env_cfg, workers=2, envs_per_worker=3) as p:
        yield p


def test_several_rollouts_per_worker_step_the_same_rollouts_as_one_process(slot_pool, smoke_envs):
    env = smoke_envs[0]
    init_states = env.sample_init_states(4, seed=11)
    emb = np.zeros(4, dtype=np.float32)
    # 8 rollouts in 6 slots: two slots take a second rollout; actions that depend on each env's own images.
    serial = run_rollouts(LookPolicy(), env, init_states, emb, 8, 12)
    parallel = slot_pool.rollouts(LookPolicy(), 0, init_states, emb, 8, 12)
    _same(parallel, serial)
    assert len({r.final_state.tobytes() for r in serial[:4]}) == 4
    # The images matter: the same rollouts without looking end elsewhere.
    blind = run_rollouts(ReachPolicy(), env, init_states, emb, 1, 12)
    assert not np.array_equal(blind[0].final_state, serial[0].final_state)
    # Rollouts of two tasks share the slots and each task's envs are reused by its next rollouts.
    states = [e.sample_init_states(2, seed=5) for e in smoke_envs]
    embs = [np.array([0.0, 0.15, 1.05, 2.0], np.float32), np.array([-0.1, -0.1, 1.15, 6.0], np.float32)]
    for _ in range(2):
        together = slot_pool.rollouts_many(TargetPolicy(), [(0, states[0], embs[0], 5), (1, states[1], embs[1], 4)],
                                           max_steps=16, still_steps=3)
        for k, count in ((0, 5), (1, 4)):
            _same(together[k], run_rollouts(TargetPolicy(), smoke_envs[k], states[k], embs[k], count, 16, 3))


class _Log:
    """A recorder that notes what it is given."""

    def __init__(self):
        self.frames, self.ends = {}, []

    def frame(self, task, i, obs):
        self.frames[(task, i)] = self.frames.get((task, i), 0) + 1

    def end(self, task, i, success):
        self.ends.append((task, i, success))


def test_a_group_of_rollouts_in_lock_step_is_each_rollout_alone(smoke_envs):
    """Rollouts of two tasks stepped together, the policy acting on both at once, end where each ends alone,
    although one ends (its scene still) long before the other; the recorder hears of each end as it comes."""
    states = [env.sample_init_states(1, seed=9)[0] for env in smoke_envs]
    embs = np.array([[0.0, 0.15, 1.05, 3.0], [-0.1, -0.1, 1.15, 30.0]], np.float32)
    alone = [run_rollouts(TargetPolicy(), env, state[None], emb, 1, 25, still_steps=4)[0]
             for env, state, emb in zip(smoke_envs, states, embs)]
    assert alone[0].steps < alone[1].steps == 25
    log = _Log()
    together = run_rollout_group(TargetPolicy(), smoke_envs, states, embs, 25, 4,
                                 [rollout_stream(1, 0), rollout_stream(1, 1)], [0, 3], log, [0, 1])
    assert [r.index for r in together] == [0, 3]
    _same([together[0]], [alone[0]])
    assert (together[1].success, together[1].steps) == (alone[1].success, alone[1].steps)
    np.testing.assert_array_equal(together[1].final_state, alone[1].final_state)
    assert log.frames == {(0, 0): alone[0].steps + 1, (1, 3): 26}
    assert log.ends == [(0, 0, False), (1, 3, False)]


def test_bad_envs_per_worker_is_an_error(make_smoke_config, tmp_path):
    from libero_ll.experiments.lifelong import check_components

    with pytest.raises(LiberoError, match="envs_per_worker"):
        ParallelEvaluator([], EnvConfig(), workers=1, envs_per_worker=0)
    with pytest.raises(LiberoError, match="eval.envs_per_worker"):
        check_components(make_smoke_config(tmp_path, tmp_path, "eval.envs_per_worker=0"))


def test_rollouts_of_two_tasks_at_once_equal_each_task_alone(pool, smoke_envs):
    states = [env.sample_init_states(2, seed=5) for env in smoke_envs]
    # Each task's embedding sends the hand elsewhere and stops it after another number of steps, so that
    # rollouts end (still) at different steps and the workers take the next rollout at different times.
    embs = [np.array([0.0, 0.15, 1.05, 2.0], np.float32), np.array([-0.1, -0.1, 1.15, 6.0], np.float32)]
    jobs = [RolloutJob(0, states[0], embs[0], 3), (1, states[1], embs[1], 2), (1, states[1], embs[1], 0)]
    policy = TargetPolicy()
    reported = []
    together = pool.rollouts_many(policy, jobs, max_steps=16, still_steps=3,
                                  on_done=lambda k, rollouts: reported.append((k, rollouts)))
    assert [len(r) for r in together] == [3, 2, 0]
    # Each job was reported once, with its rollouts; the job of none before any rollout ran.
    assert reported[0] == (2, []) and sorted(k for k, _ in reported) == [0, 1, 2]
    assert all(len(r) == len(together[k]) and all(a is b for a, b in zip(r, together[k])) for k, r in reported)
    for k in (0, 1):
        _same(together[k], run_rollouts(TargetPolicy(), smoke_envs[k], states[k], embs[k], jobs[k][3], 16, 3))
    # The policy saw one embedding per worker, the tasks' mixed in one batch at some step.
    assert all(e.shape == (2, 4) for e in policy.seen)
    assert any({tuple(row) for row in e} == {tuple(embs[0]), tuple(embs[1])} for e in policy.seen)
    # The embedding matters: task 1's first rollout under task 0's embedding ends elsewhere.
    other = run_rollouts(TargetPolicy(), smoke_envs[1], states[1], embs[0], 1, 16, 3)
    assert not np.array_equal(other[0].final_state, together[1][0].final_state)


def test_bad_rollout_jobs_are_clear_errors(pool):
    states, emb = np.zeros((1, 8)), np.zeros(4, np.float32)
    bad = [
        ([(5, states, emb, 1)], "task 5"),
        ([(0, states, emb, -1)], "0 or more"),
        ([(0, states)], "expected"),
        ([("first", states, emb, 1)], "expected"),
        ([(0, np.zeros((0, 8)), emb, 1)], "init_states"),
        ([(0, states, emb, 1), (1, states, np.zeros(3), 1)], "embeddings differ"),
        ([(0, states, emb, 1, -3)], "expected \\(task, init_states, task_emb, num_rollouts\\[, seed\\]\\)"),
        ([(0, states, emb, 1, 2.5)], "num_rollouts\\[, seed\\]"),
        ([(0, states, emb, 1, 3, 4)], "num_rollouts\\[, seed\\]"),
    ]
    for jobs, message in bad:
        with pytest.raises(LiberoError, match=message):
            pool.rollouts_many(ReachPolicy(), jobs, max_steps=4)


def _tiny_policy_spec(env, deterministic: bool) -> tuple[dict, dict]:
    """The config and shapes of a small ResNet-T for the smoke tasks' observations and 4-number embeddings."""
    obs = env.reset(seed=0)
    size = obs["agentview_rgb"].shape[0]
    shape_meta = {"image_shape": (size, size, 3), "action_dim": 7, "task_emb_dim": 4,
                  "lowdim": {k: int(obs[k].shape[0]) for k in ("joint_states", "gripper_states", "ee_states")}}
    cfg = dict(embed_size=16, encoder_width=8, encoder_blocks=1, extra_embedding_size=8, language_proj_size=8,
               transformer_layers=1, heads=2, head_size=8, mlp_size=16, gmm_hidden=[32], seq_len=3,
               action_chunk=2, deterministic_eval=deterministic)
    return cfg, shape_meta


def _tiny_policy(env, deterministic: bool):
    """A small ResNet-T with random weights (`_tiny_policy_spec`)."""
    import torch

    from libero_ll.policies import make_policy

    cfg, shape_meta = _tiny_policy_spec(env, deterministic)
    torch.manual_seed(0)
    return make_policy("resnet_t", cfg, shape_meta).eval()


def test_a_policy_in_the_workers_rolls_out_as_in_one_process(pool, smoke_envs):
    import torch

    env = smoke_envs[1]
    states = env.sample_init_states(2, seed=3)
    emb = np.array([0.3, -0.2, 0.1, 0.5], np.float32)
    policy = _tiny_policy(env, deterministic=True)
    assert pool._runs_in_workers(policy, None) and not pool._runs_in_workers(ReachPolicy(), None)
    assert not pool._runs_in_workers(policy, recorder=object())  # frames are recorded here: lock-step
    with torch.no_grad():
        serial = run_rollouts(policy, env, states, emb, 3, 12)
    _same(pool.rollouts(policy, 1, states, emb, 3, 12), serial)
    assert not np.array_equal(serial[0].final_state, serial[1].final_state)
    # The workers take the weights of each call: other weights, other rollouts, the same as one process's.
    with torch.no_grad():
        for p in policy.head.parameters():
            p.add_(0.5 * torch.randn_like(p))
        changed = run_rollouts(policy, env, states, emb, 1, 12)
    assert not np.array_equal(changed[0].final_state, serial[0].final_state)
    _same(pool.rollouts(policy, 1, states, emb, 1, 12), changed)


def test_a_policy_in_the_workers_steps_groups_of_rollouts_as_one_process(slot_pool, smoke_envs):
    """With envs_per_worker 3 each worker steps three rollouts at once with one batched action: the same
    rollouts as one process up to the rounding of a batch of three, and the same at every call."""
    import torch

    env = smoke_envs[1]
    states = env.sample_init_states(3, seed=4)
    emb = np.array([0.3, -0.2, 0.1, 0.5], np.float32)
    policy = _tiny_policy(env, deterministic=True)
    with torch.no_grad():
        serial = run_rollouts(policy, env, states, emb, 8, 12)
    grouped = slot_pool.rollouts(policy, 1, states, emb, 8, 12)
    assert [(r.index, r.success, r.steps) for r in grouped] == [(r.index, r.success, r.steps) for r in serial]
    for x, y in zip(grouped, serial):
        np.testing.assert_allclose(x.final_state, y.final_state, atol=1e-4)
    _same(slot_pool.rollouts(policy, 1, states, emb, 8, 12), grouped)
    assert len({r.final_state.tobytes() for r in grouped[:3]}) == 3


def test_a_free_worker_takes_a_group_it_holds_environments_for():
    groups = [[0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], [2, 2, 3]]
    nothing = [{}, {}]
    assert next_group(groups, 0, nothing, {}) == 0  # nothing held anywhere: the queue's order
    assert next_group(groups, 1, nothing, {0: [0, 0, 0]}) == 2  # not the task the other worker is running
    assert next_group(groups, 1, [{}, {1: 3}], {0: [0, 0, 0]}) == 2  # its own task's environments
    assert next_group(groups, 0, [{1: 1, 2: 2}, {}], {}) == 2  # some of them, the first in the queue
    assert next_group(groups, 0, [{1: 1, 2: 2, 3: 1}, {}], {}) == 4  # all of a group of two tasks
    assert next_group(groups, 0, [{}, {0: 3, 1: 3}], {}) == 4  # what the other worker holds, last
    assert next_group(groups, 0, [{}, {0: 3, 1: 3, 2: 3, 3: 3}], {}) == 0  # all held elsewhere: the queue's order
    assert next_group([[5]], 1, [{}, {}], {0: [5]}) == 0  # the only group waiting is taken


def test_each_worker_takes_again_the_task_whose_environments_it_built(make_smoke_config, smoke_envs, tmp_path):
    """Two tasks' rollouts, one group each, on two workers: each worker builds the environments of the task it
    took. Asked again with the tasks in the other order, each takes its own task again and builds nothing, where
    taking the queue in order would have had each build the other's. The rollouts are the same either way."""
    cfg = make_smoke_config(tmp_path, Path("unused"))
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=50)
    policy = _tiny_policy(smoke_envs[0], deterministic=True)
    emb = np.array([0.3, -0.2, 0.1, 0.5], np.float32)
    jobs = [(k, env.sample_init_states(3, seed=6), emb, 3) for k, env in enumerate(smoke_envs)]
    reported = []
    with ParallelEvaluator(tasks, env_cfg, workers=2, envs_per_worker=3) as p:
        first = p.rollouts_many(policy, jobs, max_steps=8, on_done=lambda k, rollouts: reported.append((k, rollouts)))
        assert p.built == [3, 3] and p._kept == [{0: 3}, {1: 3}]
        # Each task was reported once, with its rollouts, as it was done.
        assert sorted(k for k, _ in reported) == [0, 1]
        assert all(len(r) == 3 and all(a is b for a, b in zip(r, first[k])) for k, r in reported)
        second = p.rollouts_many(policy, jobs[::-1], max_steps=8)
        assert p.built == [3, 3]
    for a, b in zip(first, second[::-1]):
        _same(a, b)
    assert all(len({r.final_state.tobytes() for r in rollouts}) == 3 for rollouts in first)  # three starts each


def test_sampled_actions_in_the_workers_follow_the_callers_seed(pool, smoke_envs):
    import torch

    policy = _tiny_policy(smoke_envs[0], deterministic=False)
    states = [env.sample_init_states(2, seed=5) for env in smoke_envs]
    jobs = [(0, states[0], np.ones(4, np.float32), 2), (1, states[1], np.zeros(4, np.float32), 2)]
    runs = []
    for seed in (1, 1, 2):
        torch.manual_seed(seed)
        runs.append(pool.rollouts_many(policy, jobs, max_steps=10))
    for k in (0, 1):
        _same(runs[0][k], runs[1][k])
    assert any(not np.array_equal(a.final_state, b.final_state) for a, b in zip(runs[0][0], runs[2][0]))


class _Frames:
    """A recorder that keeps nothing: its presence makes an evaluator step in lock-step (as --video does)."""

    def frame(self, task, i, obs):
        pass

    def end(self, task, i, success):
        pass


def test_sampled_rollouts_are_the_same_wherever_they_run(pool, slot_pool, smoke_envs):
    """Rollout i of an evaluation seeded S draws from its own stream: one process, the policy in two workers,
    and lock-step batches of 2 or 6 rollouts (with a recorder, as --video) sample the same actions. Before, each
    path drew otherwise and the success rates of a sampling policy changed with eval.workers."""
    import torch

    env = smoke_envs[1]
    states = env.sample_init_states(2, seed=3)
    emb = np.array([0.3, -0.2, 0.1, 0.5], np.float32)
    policy = _tiny_policy(env, deterministic=False)
    with torch.no_grad():
        torch.manual_seed(123)  # the torch stream is not what the rollouts draw from
        serial = run_rollouts(policy, env, states, emb, 3, 10, seed=77)
        torch.manual_seed(5)
        again = run_rollouts(policy, env, states, emb, 3, 10, seed=77)
        other = run_rollouts(policy, env, states, emb, 3, 10, seed=78)
    _same(again, serial)
    assert not np.array_equal(other[0].final_state, serial[0].final_state)
    _same(pool.rollouts(policy, 1, states, emb, 3, 10, seed=77), serial)
    # Lock-step batches: the same draws; the batched network's rounding may differ in the last places.
    for evaluator in (pool, slot_pool):
        batched = evaluator.rollouts(policy, 1, states, emb, 3, 10, recorder=_Frames(), seed=77)
        assert [(r.index, r.success, r.steps) for r in batched] == [(r.index, r.success, r.steps) for r in serial]
        for x, y in zip(batched, serial):
            np.testing.assert_allclose(x.final_state, y.final_state, atol=1e-4)
    assert policy._streams is None  # no evaluation leaves its streams behind


def test_a_failing_rollout_in_a_worker_is_a_clear_error_and_the_pool_goes_on(pool, smoke_envs):
    env = smoke_envs[0]
    policy = _tiny_policy(env, deterministic=True)
    with pytest.raises(LiberoError, match="evaluation worker .* failed: .*simulator state"):
        pool.rollouts(policy, 0, np.zeros((1, 5)), np.zeros(4, np.float32), 3, 5)
    states = env.sample_init_states(1, seed=2)
    _same(pool.rollouts(policy, 0, states, np.zeros(4, np.float32), 1, 5),
          run_rollouts(policy, env, states, np.zeros(4, np.float32), 1, 5))


def _ctrl_c_once_rollouts_run(monkeypatch):
    """Ctrl-C in this process as soon as it waits for rollouts running in the workers (it comes in that wait)."""
    from libero_ll.evaluation import vector_eval

    wait = vector_eval.mp.connection.wait

    def interrupted(*args, **kwargs):
        monkeypatch.setattr(vector_eval.mp.connection, "wait", wait)
        raise KeyboardInterrupt

    monkeypatch.setattr(vector_eval.mp.connection, "wait", interrupted)


def _gone(pid: int) -> bool:
    """Whether process `pid` has exited (gone, or a zombie nobody has reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_ctrl_c_during_rollouts_stops_the_workers_at_once(make_smoke_config, smoke_envs, tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, which a run takes as Ctrl-C) while a worker rolls out: the evaluator is closed at
    once, the worker terminated in its rollout. Before, the evaluator waited for every rollout in flight to
    end (here minutes) and then told the worker to close: a run stopped in an evaluation took that long to exit."""
    import signal

    cfg = make_smoke_config(tmp_path, Path("unused"))
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=4000)
    policy = _tiny_policy(smoke_envs[0], deterministic=True)
    states = smoke_envs[0].sample_init_states(2, seed=3)
    emb = np.zeros(4, np.float32)
    p = ParallelEvaluator(tasks, env_cfg, workers=1)
    try:
        p.rollouts(policy, 0, states, emb, 1, 2)  # the worker is up, the policy with it
        procs = list(p._procs)
        _ctrl_c_once_rollouts_run(monkeypatch)
        with pytest.raises(KeyboardInterrupt):
            p.rollouts(policy, 0, states, emb, 2, 4000)  # minutes each
    finally:
        p.close()
    # Terminated in its rollout; a worker that had ended its rollouts and been told to close exits with 0.
    assert [proc.exitcode for proc in procs] == [-signal.SIGTERM], "the worker was waited for, not terminated"


def test_an_evaluator_stopped_in_mid_rollout_gives_the_next_call_its_own_rollouts(pool, smoke_envs, monkeypatch):
    """What the workers still owed from the stopped call is read before the next call starts: its answers are
    its own."""
    import torch

    env = smoke_envs[1]
    states = env.sample_init_states(2, seed=3)
    emb = np.array([0.3, -0.2, 0.1, 0.5], np.float32)
    policy = _tiny_policy(env, deterministic=True)
    _ctrl_c_once_rollouts_run(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        pool.rollouts(policy, 0, smoke_envs[0].sample_init_states(2, seed=4), emb, 2, 40)
    assert any(pool._asked)  # the rollouts of the stopped call were still running
    with torch.no_grad():
        serial = run_rollouts(policy, env, states, emb, 3, 12)
    _same(pool.rollouts(policy, 1, states, emb, 3, 12), serial)


def test_a_run_stopped_while_evaluating_alongside_stops_the_evaluation_and_its_workers(make_smoke_config, smoke_envs,
                                                                                      descendants, tmp_path):
    """Closing the evaluation process alongside training (eval.overlap) while it rolls out: it is terminated at
    once and terminates its own workers. Before, it was waited for 10 s and then terminated alone, its workers
    left to run their rollouts to the end with nobody reading them (the close also waited 10 s first)."""
    import time

    from omegaconf import OmegaConf

    from libero_ll.experiments.background_eval import BackgroundEvaluator
    from libero_ll.policies import make_policy

    cfg = make_smoke_config(tmp_path, Path("unused"), "eval.rollouts=4", "eval.max_steps=4000", "eval.still_steps=0")
    tasks = suite_tasks(cfg.suite, list(cfg.tasks))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh), max_steps=4000)
    policy_cfg, shape_meta = _tiny_policy_spec(smoke_envs[0], deterministic=True)
    state = make_policy("resnet_t", policy_cfg, shape_meta).state_dict()
    init_states = [env.sample_init_states(2, seed=3) for env in smoke_envs]
    background = BackgroundEvaluator(OmegaConf.to_container(cfg, resolve=True), tasks, env_cfg, "resnet_t",
                                     policy_cfg, shape_meta, init_states, np.zeros((2, 4), np.float32), "cpu",
                                     workers=2, envs_per_worker=1)
    try:
        background.submit([0], (0,), state)
        # The evaluation process's two environment workers (not its resource tracker), once it has started them.
        deadline = time.time() + 120
        while len(workers := [w for w in descendants(background._proc.pid) if _spawned_worker(w)]) < 2:
            assert time.time() < deadline, "the evaluation process started no workers in 120 s"
            time.sleep(0.2)
        assert not background.done(0)  # 4 rollouts of 4000 steps: minutes
    finally:
        background.close()
    # Gone when the close returns: the evaluation process stopped its workers before it ended. Before, they were
    # left running when it was terminated.
    assert _gone(background._proc.pid)
    running = [w for w in workers if not _gone(w)]
    assert running == [], f"the evaluation process's workers {running} still run after it was closed"


def _spawned_worker(pid: int) -> bool:
    """Whether process `pid` is a multiprocessing worker (spawn_main), not another helper process."""
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_failing_rollout_in_lock_step_leaves_the_next_call_its_own_answers(pool, smoke_envs):
    """Stepped in lock-step (a policy that is not a BasePolicy, or --video), a worker's failure used to leave the
    other worker's answer unread, and the next call took it for its own: observations of the failed call."""
    env = smoke_envs[0]
    emb = np.zeros(4, np.float32)
    with pytest.raises(LiberoError, match="evaluation worker .* failed: state has 5 numbers") as caught:
        pool.rollouts(ReachPolicy(), 0, np.zeros((1, 5)), emb, 3, 5)
    assert "Traceback" not in str(caught.value)  # a worker's LiberoError is said as it is
    states = env.sample_init_states(1, seed=2)
    _same(pool.rollouts(ReachPolicy(), 0, states, emb, 2, 5), run_rollouts(ReachPolicy(), env, states, emb, 2, 5))


class StillPolicy(ReachPolicy):
    """Keeps the hand where it is."""

    def act(self, obs, task_emb):
        a = np.zeros((len(obs["ee_states"]), 7), dtype=np.float32)
        a[:, 6] = -1.0
        return a


@pytest.mark.slow
@pytest.mark.parametrize("learner, acting", [("er", "true"), ("mtl", "true"), ("er", "false")])
def test_run_with_two_eval_workers_matches_one(learner, acting, make_smoke_config, smoke_data, smoke_envs, tmp_path):
    """MTL evaluates both tasks of its stage together; sampled actions (deterministic_eval=false) too."""
    overrides = ["train.epochs=1", "eval.max_steps=4", "eval.init_states=2", "eval.rollouts=2",
                 "language_encoder=task_id", f"policy.cfg.deterministic_eval={acting}", f"learner.name={learner}"]
    results = []
    for workers in (1, 2):
        cfg = make_smoke_config(tmp_path / str(workers), smoke_data, *overrides, f"eval.workers={workers}")
        run_dir = run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
        results.append(json.loads((run_dir / "success.json").read_text()))
    assert results[0]["matrix"] == results[1]["matrix"] and results[0]["curves"] == results[1]["curves"]


def test_bad_worker_count_is_an_error(make_smoke_config, tmp_path):
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.lifelong import check_components

    with pytest.raises(LiberoError, match="eval.workers"):
        check_components(make_smoke_config(tmp_path, tmp_path, "eval.workers=-1"))
    with pytest.raises(LiberoError, match="data.collect_workers"):
        check_components(make_smoke_config(tmp_path, tmp_path, "data.collect_workers=-1"))


def test_a_script_without_a_main_guard_is_told_what_to_change(tmp_path):
    """A worker imports the script that started it again: without a main guard it started workers of its own,
    and Python refused that with a traceback. The worker now says in one line what to change; its parent says
    that it is gone."""
    import subprocess
    import sys

    task = suite_tasks("quickstart", ["put_the_black_bowl_on_the_plate"])[0]
    script = tmp_path / "unguarded.py"
    script.write_text(f"""
import numpy as np
from libero_ll.envs.env import EnvConfig
from libero_ll.evaluation.vector_eval import ParallelEvaluator
evaluator = ParallelEvaluator([{str(task)!r}], EnvConfig(image_size=16, robot_mesh="collision"), 1)
try:
    evaluator.evaluate(lambda obs, emb: np.zeros((1, 7)), 0, np.zeros((1, 1)), np.zeros(4), 1, max_steps=2)
finally:
    evaluator.close()
""")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 1, out
    err = out.stderr
    assert ("libero-ll: a script that collects demos, trains or evaluates with worker processes must start its work "
            "under `if __name__ == '__main__':`") in err, err
    assert "LiberoError: evaluation worker 0 died (exit code 1)" in err, err
    assert "RuntimeError" not in err and "bootstrapping" not in err, err


def test_a_worker_importing_an_unguarded_script_neither_trains_nor_collects(make_smoke_config, tmp_path, monkeypatch):
    """Such a worker ran the script's training (a run directory of its own, its demos collected) or evaluation
    (with `overwrite`, removing the videos of the evaluation that started it) on its way to starting workers; it
    now stops before any of that."""
    import multiprocessing as mp

    from libero_ll.data.collect import collect
    from libero_ll.experiments.evaluate import evaluate_run

    monkeypatch.setattr(mp.current_process(), "_inheriting", True, raising=False)
    cfg = make_smoke_config(tmp_path, tmp_path / "data")
    for work in (lambda: run_lifelong(cfg, log=lambda s: None),
                 lambda: collect([(suite_tasks(cfg.suite, list(cfg.tasks))[0], tmp_path / "data" / "a.hdf5")], 1),
                 lambda: evaluate_run(tmp_path / "no_run", video_dir=tmp_path / "videos", overwrite=True)):
        with pytest.raises(SystemExit, match="must start its work under `if __name__ == '__main__':`"):
            work()
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()
