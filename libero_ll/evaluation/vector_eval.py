"""Rollouts run by several environment processes, the policy in each of them or batched in this process.

Each worker is spawned, so that it gets its own simulator and rendering context; it builds the environments
it is asked for and keeps them for the next rollouts of the same task. Rollout i of a task always starts from
its init_states[i % M], and a free worker takes a rollout waiting, of the same task or, with
`rollouts_many`, of any task of the evaluation. The policy acts in one of two ways:

- In the workers (a policy on the CPU): each worker gets a copy of the policy with the caller's current
  weights and runs whole rollouts, a group of `envs_per_worker` at a time (`run_rollout_group`, the policy
  acting once per step on the group; a free worker takes a group of a task whose environments it holds where
  there is one, `next_group`); with one per worker, one observation at a time as one process would:
  a deterministic policy's rollouts are then those of `run_rollouts` in a process with one torch thread. On
  2 CPU cores no process then waits for another at every step; the three quickstart tasks' 30 rollouts of a
  cpu-preset network took 78 s against 92 s in lock-step, and groups of five took a third off again
  (docs/speed.md).
- In lock-step (a policy on a GPU, or rollouts recorded): every step this process gathers the observations
  of every rollout in flight, runs the policy once on the batch, and sends each worker the actions of its
  rollouts; a worker steps a few rollouts at once, each in an environment of its own, and a rollout's
  place in the batch (its slot) that ends takes the next rollout waiting. For a policy whose actions for
  one env depend only on that env's history (and task embedding) the rollouts equal those of
  `run_rollouts` up to the rounding of a batch of another size. With several rollouts per worker the
  policy acts on larger batches, less often: on 2 CPU cores, ten rollouts of a cpu-preset network took
  15.0 s with three per worker against 16.8 s with one (docs/speed.md).

Either way a sampling policy draws rollout i of a job from that rollout's own stream
(`libero_ll.evaluation.rollout.rollout_stream`), so its rollouts do not depend on where they run.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from libero_ll.bddl.validate import BddlWarning
from libero_ll.envs.env import load_task, say_task_warnings
from libero_ll.errors import LiberoError
from libero_ll.evaluation.rollout import (
    Rollout,
    StillnessMonitor,
    draw_seed,
    position_coordinates,
    rollout_stream,
    run_rollout_group,
    success_rate,
)
from libero_ll.processes import plain_warnings, spawn_context


def _worker(conn, task_files: list[str], env_cfg) -> None:
    # Runs in a spawned process: nothing from the parent's simulator or GL state is inherited.
    from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs
    from libero_ll.envs.pool import EnvPool

    # The simulator is imported before the first command (a few seconds): a run starts its pool before the rest
    # of its set-up, which goes on meanwhile. (torch comes with the first policy sent; lock-step rollouts,
    # the policy batched in the parent, never import it here.)
    ensure_gl_backend()
    quiet_simulator_logs()
    # The evaluator's own process said each task file's warnings once (ParallelEvaluator); each worker would
    # say them again.
    warnings.simplefilter("ignore", BddlWarning)
    plain_warnings()
    import libero_ll.envs.scene  # noqa: F401 - robosuite and MuJoCo

    # The environments not stepping a rollout: those of the few tasks used last are kept (see EnvPool).
    idle = EnvPool(task_files, env_cfg)
    busy: dict[int, tuple] = {}  # slot -> (task, env, position coordinates, StillnessMonitor)
    policy = None  # the policy sent for whole rollouts run here ("policy", "rollouts")

    def take_env(task: int) -> tuple:
        env = idle.take(task)
        return env, position_coordinates(env.model)

    try:
        while True:
            cmd, args = conn.recv()
            try:
                if cmd == "close":
                    break
                if cmd == "policy":  # args: the bytes of `_policy_message`
                    policy = _load_policy(args, policy)
                    conn.send(("ok", None))
                elif cmd == "rollouts":
                    # args: ([(task, initial state, task_emb, seed, rollout number)], max_steps, still_steps)
                    import torch

                    group, max_steps, still_steps = args
                    tasks, states, embs, seeds, indices = zip(*group)
                    envs = []
                    try:
                        for task in tasks:
                            envs.append(idle.take(task))
                        streams = [rollout_stream(seed, i) for seed, i in zip(seeds, indices)]
                        # Inference mode: a tenth off the policy's step; the rollouts' history starts inside it.
                        with torch.inference_mode():
                            done = run_rollout_group(policy, envs, states, np.stack(embs), max_steps, still_steps,
                                                     streams, indices)
                    finally:
                        for task, env in zip(tasks, envs):
                            idle.give(task, env)
                    # With the environments kept now, and how many were built so far, for the next group's choice.
                    conn.send(("ok", ([(r.success, r.steps, r.final_state) for r in done], idle.kept(), idle.built)))
                elif cmd == "reset":  # args: [(slot, task, initial state, still_steps)]
                    out = []
                    for slot, task, state, still_steps in args:
                        env, where = take_env(task)
                        obs = env.reset_to(state)
                        still = StillnessMonitor(still_steps)
                        still.reset(env.data.qpos[where])
                        busy[slot] = (task, env, where, still)
                        out.append(obs)
                    conn.send(("ok", out))
                elif cmd == "step":  # args: [(slot, action)]
                    out = []
                    for slot, action in args:
                        _, env, where, still = busy[slot]
                        obs, _, info = env.step(action)
                        out.append((obs, bool(info["success"]), still.update(env.data.qpos[where])))
                    conn.send(("ok", out))
                elif cmd == "finish":  # args: [(slot,)]; the final states, and the envs free for other rollouts
                    out = []
                    for (slot,) in args:
                        task, env, where, _ = busy.pop(slot)
                        out.append(env.get_state())
                        idle.give(task, env)
                    conn.send(("ok", out))
                else:
                    conn.send(("error", f"unknown command {cmd!r}"))
            except LiberoError as e:  # a message for the user: it is said as it is
                conn.send(("error", str(e)))
            except Exception as e:  # noqa: BLE001 - reported to the main process, which raises it
                conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        idle.close()
        for b in busy.values():
            b[1].close()
        conn.close()


def _policy_message(policy) -> bytes:
    """What a worker needs to run `policy` on its own: its class, config, shapes and weights (as they are
    now, inside any learner's evaluation context), serialised with torch.save."""
    import io

    import torch

    buffer = io.BytesIO()
    weights = {k: v.detach().cpu() for k, v in policy.state_dict().items()}
    torch.save({"class": type(policy), "cfg": policy.cfg, "shape_meta": policy.shape_meta, "weights": weights},
               buffer)
    return buffer.getvalue()


def _load_policy(message: bytes, current):
    """The policy of a `_policy_message`, on this process's CPU with one thread; `current` is reused when it
    is of the same class, config and shapes."""
    import io

    import torch

    torch.set_num_threads(1)
    sent = torch.load(io.BytesIO(message), map_location="cpu", weights_only=False)
    same = (current is not None and type(current) is sent["class"] and current.cfg == sent["cfg"]
            and current.shape_meta == sent["shape_meta"])
    policy = current if same else sent["class"](sent["cfg"], sent["shape_meta"])
    policy.load_state_dict(sent["weights"])
    policy.eval()
    return policy


def next_group(groups: list[list[int]], worker: int, kept: list[dict], running: dict) -> int:
    """Which of the groups waiting (each the task of each of its rollouts) a free `worker` takes: one whose
    environments it holds, all of them, else some of them, else one of tasks that no other worker holds or is
    running, else the first waiting; among equals the first in the queue.

    A group steps its rollouts in environments of their tasks, and building one takes about a second (at the cpu
    preset's settings; five for a group of five): a worker that takes both groups of a task one after the other
    builds its environments once, where taking the queue in order made both workers build every task's.
    `kept`: per worker, task -> environments it keeps (`EnvPool.kept`); `running`: worker -> the tasks of the
    group it is running.
    """
    mine = kept[worker]
    others = set()
    for w, held in enumerate(kept):
        if w != worker:
            others.update(held)
    for w, tasks in running.items():
        if w != worker:
            others.update(tasks)

    def cost(i: int) -> tuple[int, int]:
        need = Counter(groups[i])
        if all(mine.get(task, 0) >= n for task, n in need.items()):
            return 0, i
        if any(task in mine for task in need):
            return 1, i
        return (2 if others.isdisjoint(need) else 3), i

    return min(range(len(groups)), key=cost)


class RolloutJob(NamedTuple):
    """The rollouts of one task asked of `ParallelEvaluator.rollouts_many`.

    Attributes:
        task: position of the task in the evaluator's `task_files`.
        init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
        task_emb: (D,) language embedding of the task.
        num_rollouts: how many episodes.
        seed: rollout i draws its sampled actions from ``rollout_stream(seed, i)``
            (`libero_ll.evaluation.rollout`), wherever it runs; None: a seed drawn from torch's stream.
    """

    task: int
    init_states: np.ndarray
    task_emb: np.ndarray
    num_rollouts: int
    seed: int | None = None


class ParallelEvaluator:
    """A pool of environment worker processes for evaluating a policy on a suite's tasks.

    Args:
        task_files: the suite's task files; tasks are named by their position in this list.
        env_cfg: the EnvConfig every worker builds its environments with.
        workers: number of processes.
        envs_per_worker: rollouts each process steps at once, each in an environment of its own (with the
            policy in the workers, the size of the groups each runs). A worker keeps up to this many
            environments of each of the few tasks it evaluated last (each holds its whole scene, about 265 MB
            at the cpu preset's settings; `libero_ll.envs.pool.EnvPool`).
        policy_in_workers: run whole rollouts in the workers, each with its own copy of the policy, instead
            of stepping them in lock-step with the policy batched here, where that is possible: for a
            BasePolicy on the CPU and no recorder. False always steps in lock-step. See `rollouts_many`.
    """

    def __init__(self, task_files: list, env_cfg, workers: int, envs_per_worker: int = 1,
                 policy_in_workers: bool = True):
        if workers < 1:
            raise LiberoError(f"eval.workers must be at least 1, got {workers}")
        if envs_per_worker < 1:
            raise LiberoError(f"eval.envs_per_worker must be at least 1, got {envs_per_worker}")
        self.envs_per_worker = int(envs_per_worker)
        self.policy_in_workers = bool(policy_in_workers)
        ctx = spawn_context()
        self._conns = []
        self._procs = []
        self._asked = []  # per worker: messages sent whose answer has not been read
        # Per worker, as it last said: task -> environments it keeps, and how many it has built (with the policy
        # in the workers; `next_group`).
        self._kept: list[dict] = [{} for _ in range(workers)]
        self.built = [0] * workers
        files = [str(Path(f)) for f in task_files]
        self._num_tasks = len(files)
        # A task file's warnings are said here, once (the workers do not repeat them); a broken file stops the
        # evaluation before any worker starts.
        say_task_warnings(files)
        for f in files:
            load_task(f)
        for _ in range(workers):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(child, files, env_cfg), daemon=True)
            p.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(p)
            self._asked.append(0)

    @property
    def workers(self) -> int:
        """Number of worker processes."""
        return len(self._conns)

    def _call(self, w: int, cmd: str, args=None):
        self._asked[w] += 1  # before the send: one cut short leaves the worker busy with half a message
        try:
            self._conns[w].send((cmd, args))
        except (BrokenPipeError, ConnectionResetError):
            self._died(w)

    def _died(self, w: int):
        """Raise the LiberoError of worker `w` gone (its pipe closed): nothing more comes from it."""
        self._asked[w] = 0
        self._procs[w].join(timeout=5)  # its exit code is known once it is reaped
        raise LiberoError(f"evaluation worker {w} died (exit code {self._procs[w].exitcode})") from None

    def _send(self, cmd: str, items: list) -> dict[int, list]:
        """Send each worker its share of `items` ((slot, *args) tuples; slot s is worker s % workers's) in
        one message; the slots asked of each worker, for `_gather`."""
        asked: dict[int, list] = {}
        for item in items:
            asked.setdefault(item[0] % self.workers, []).append(item)
        for w, share in asked.items():
            self._call(w, cmd, share)
        return {w: [item[0] for item in share] for w, share in asked.items()}

    def _gather(self, asked: dict[int, list]) -> dict:
        """slot -> the worker's answer for it, for the messages of one `_send`."""
        out = {}
        for w, slots in asked.items():
            out.update(zip(slots, self._result(w)))
        return out

    def _result(self, w: int):
        try:
            status, value = self._conns[w].recv()
        except EOFError:
            self._died(w)
        self._asked[w] -= 1
        if status != "ok":
            raise LiberoError(f"evaluation worker {w} failed: {value}")
        return value

    def rollouts(self, policy, task: int, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int, still_steps: int = 0, recorder=None, seed: int | None = None) -> list[Rollout]:
        """Run `num_rollouts` episodes of task number `task`, spread over the workers.

        Args:
            policy: a BasePolicy; `act` is called with a batch of one observation per rollout in flight.
            task: position of the task in `task_files`.
            init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
            task_emb: (D,) language embedding of the task.
            num_rollouts: how many episodes.
            max_steps: episode cap, policy steps.
            still_steps: end a rollout as failed once nothing in its scene has moved for this many steps
                (see StillnessMonitor); 0 runs every failing rollout to the cap.
            recorder: receives the rollouts' observations and ends, as in `rollouts_many`.
            seed: the seed of the rollouts' random streams (see RolloutJob).

        Returns:
            The rollouts in order of their number.
        """
        job = RolloutJob(task, init_states, task_emb, num_rollouts, seed)
        return self.rollouts_many(policy, [job], max_steps, still_steps, recorder)[0]

    def rollouts_many(self, policy, jobs: list, max_steps: int, still_steps: int = 0,
                      recorder=None, on_done: Callable[[int, list[Rollout]], None] | None = None
                      ) -> list[list[Rollout]]:
        """Run the rollouts of several tasks at once: a free slot takes the next rollout of any job.

        The rollouts wait in one queue, job after job and in order of their number within a job. With the
        policy in the workers (see `policy_in_workers`), each worker runs one rollout after another with its
        copy of the policy; in lock-step, each step the policy acts once for all the rollouts in flight, each
        with its own task's embedding, so the workers stay busy until the queue is empty and the batch mixes
        tasks. A rollout ends on success,
        when its scene has been still for `still_steps` steps, or at `max_steps`, as in `rollouts`; rollout
        i of a job starts from that job's init_states[i % M], so a policy whose actions for one env depend
        only on that env's history (and its embedding) gives each job the rollouts it gets alone. A sampling
        policy draws rollout i of a job from that job's stream i (RolloutJob's seed), on either path, so
        neither the number of workers, nor envs_per_worker, nor a recorder changes what it draws.

        Args:
            policy: a BasePolicy (or, in lock-step, anything with its `reset` and `act`); in lock-step,
                `act` is called with a batch of one observation per slot (rollout in
                flight, at most workers x envs_per_worker) and task embeddings (N, D), and
                `reset(N, env_ids=[s, ...])` when slots start new rollouts.
            jobs: RolloutJob (or (task, init_states, task_emb, num_rollouts[, seed])) tuples; see RolloutJob.
            max_steps: episode cap, policy steps.
            still_steps: end a rollout as failed once nothing in its scene has moved for this many steps
                (see StillnessMonitor); 0 runs every failing rollout to the cap.
            recorder: when given, ``recorder.frame(task, i, obs)`` receives every observation of rollout i of
                a job of task number ``task`` (the first after the reset, then one per step) and
                ``recorder.end(task, i, success)`` its end, as in `run_rollouts`.
            on_done: when given, ``on_done(k, rollouts)`` as soon as the last rollout of job k has ended (its
                rollouts in order of their number; a job of no rollouts before any rollout starts), while the
                other jobs' rollouts go on: e.g. to report each task as it is done. What it raises stops the
                call (the workers' rollouts still out are read by the next call, or ended by `close`).

        Returns:
            For each job, its rollouts in order of their number.

        Raises:
            LiberoError: a job names an unknown task, has no initial states, a negative rollout count, or
                an embedding of another size than the other jobs'.
        """
        jobs = [self._check_job(k, job) for k, job in enumerate(jobs)]
        dims = {job.task_emb.shape for job in jobs if job.num_rollouts > 0}
        if len(dims) > 1:
            raise LiberoError(f"the jobs' task embeddings differ in shape: {sorted(dims)}")
        jobs = [job if job.seed is not None else job._replace(seed=draw_seed()) for job in jobs]
        self._drain()
        done: list[dict[int, Rollout]] = [{} for _ in jobs]

        def keep(k: int, rollout: Rollout) -> None:
            done[k][rollout.index] = rollout
            if on_done is not None and len(done[k]) == jobs[k].num_rollouts:
                on_done(k, [done[k][i] for i in range(jobs[k].num_rollouts)])

        if on_done is not None:
            for k, job in enumerate(jobs):
                if job.num_rollouts == 0:
                    on_done(k, [])
        if self._runs_in_workers(policy, recorder):
            return self._rollouts_in_workers(policy, jobs, max_steps, still_steps, done, keep)
        queue = [(k, i) for k, job in enumerate(jobs) for i in range(job.num_rollouts)]
        # Slot s (a place in the policy's batch) is stepped by worker s % workers: the workers' shares
        # differ by one rollout at most.
        n = min(self.workers * self.envs_per_worker, len(queue))
        if n == 0:
            return [[] for _ in jobs]
        queue.reverse()  # popped from the end: the first job's first rollout goes first
        slot: list[tuple[int, int]] = [(0, 0)] * n  # (job, rollout number) each slot is stepping
        streams: list = [None] * n  # the random stream of each slot's rollout

        def start(slots: list[int]) -> dict[int, list]:
            items = []
            for s in slots:
                k, i = slot[s] = queue.pop()
                job = jobs[k]
                streams[s] = rollout_stream(job.seed, i)
                items.append((s, job.task, job.init_states[i % len(job.init_states)], still_steps))
            return self._send("reset", items)

        def record(s: int) -> None:
            if recorder is not None:
                k, i = slot[s]
                recorder.frame(jobs[k].task, i, obs[s])

        first = self._gather(start(list(range(n))))
        obs = [first[s] for s in range(n)]
        for s in range(n):
            record(s)
        embs = np.stack([jobs[k].task_emb for k, _ in slot])
        steps = [0] * n
        active = [True] * n
        policy.reset(n)
        use_streams = getattr(policy, "use_streams", None)
        if use_streams is not None:
            use_streams(streams)  # the list itself: a slot's entry is replaced when it starts another rollout
        try:
            while any(active):
                # The batch keeps its size so that each slot keeps its place in the policy's history: finished
                # slots feed their last observation and their actions are dropped.
                batch = {key: np.stack([o[key] for o in obs]) for key in obs[0]}
                actions = policy.act(batch, embs)
                stepped = self._gather(self._send("step", [(s, actions[s]) for s in range(n) if active[s]]))
                ended = []
                for s in sorted(stepped):
                    obs[s], success, stuck = stepped[s]
                    steps[s] += 1
                    record(s)
                    if success or stuck or steps[s] >= max_steps:
                        ended.append((s, success))
                if not ended:
                    continue
                # Ask for every ended rollout's final state and send the next starts before waiting for any of
                # them; a worker frees an ended rollout's env before it starts the next.
                finishing = self._send("finish", [(s,) for s, _ in ended])
                finished = {s: slot[s] for s, _ in ended}
                restarted = [s for s, _ in ended][: len(queue)]
                starting = start(restarted)
                final = self._gather(finishing)
                following = self._gather(starting)
                for s, success in ended:
                    k, i = finished[s]
                    if recorder is not None:
                        recorder.end(jobs[k].task, i, success)
                    keep(k, Rollout(i, success, steps[s], final[s]))
                    if s in following:
                        obs[s], steps[s] = following[s], 0
                        embs[s] = jobs[slot[s][0]].task_emb
                        record(s)
                    else:
                        active[s] = False
                if restarted:
                    policy.reset(n, env_ids=restarted)
        finally:
            if use_streams is not None:
                use_streams(None)
        return [[d[i] for i in range(job.num_rollouts)] for d, job in zip(done, jobs)]

    def _runs_in_workers(self, policy, recorder) -> bool:
        """Whether `rollouts_many` runs whole rollouts in the workers (see `policy_in_workers`)."""
        from libero_ll.policies.base import BasePolicy

        return (self.policy_in_workers and recorder is None and isinstance(policy, BasePolicy)
                and policy.device.type == "cpu")

    def _rollouts_in_workers(self, policy, jobs: list[RolloutJob], max_steps: int, still_steps: int,
                             done: list[dict[int, Rollout]], keep: Callable[[int, Rollout], None]
                             ) -> list[list[Rollout]]:
        """`rollouts_many` with each worker running whole rollouts with a copy of the policy.

        The rollouts waiting are cut into groups of consecutive ones, `envs_per_worker` at most and fewer where
        that keeps every worker busy; a free worker takes a group, of a task it holds environments for where
        there is one (`next_group`), and steps its rollouts in lock-step,
        each in an environment of its own, the policy acting once per step on all of them
        (`run_rollout_group`): on one core the cpu preset's policy takes 8.97 ms to act for five rollouts and
        6.56 ms for one. A group of one acts as `run_rollouts` does in one process. Each rollout draws
        its sampled actions from its own stream (its job's seed and its number); which worker runs a group
        does not matter, and the groups are the same at every call, so a deterministic policy's rollouts
        are the same at every call with the same workers and envs_per_worker (and up to the rounding of a
        batch of another size with other ones). Each rollout that ends goes to `keep` (job, rollout), which
        puts it in `done`.
        """
        queue = [(k, i) for k, job in enumerate(jobs) for i in range(job.num_rollouts)]
        if not queue:
            return [[] for _ in jobs]
        message = _policy_message(policy)
        for w in range(self.workers):
            self._call(w, "policy", message)
        self._settle(range(self.workers))
        size = max(1, min(self.envs_per_worker, -(-len(queue) // self.workers)))
        groups = [queue[g : g + size] for g in range(0, len(queue), size)]
        running: dict[int, list[tuple[int, int]]] = {}  # worker -> its group's (job, rollout number)s

        def give(w: int) -> None:
            # The groups are the same whichever worker runs them: only the environments built differ.
            tasks = [[jobs[k].task for k, _ in g] for g in groups]
            now = {v: [jobs[k].task for k, _ in g] for v, g in running.items()}
            group = running[w] = groups.pop(next_group(tasks, w, self._kept, now))
            rollouts = []
            for k, i in group:
                job = jobs[k]
                rollouts.append((job.task, job.init_states[i % len(job.init_states)], job.task_emb, job.seed, i))
            self._call(w, "rollouts", (rollouts, max_steps, still_steps))

        for w in range(min(self.workers, len(groups))):
            give(w)
        # A worker's failure (or Ctrl-C) leaves the others' rollouts running: the next call reads what they owe
        # before it starts (`_drain`), and `close` terminates them.
        while running:
            ready = mp.connection.wait([self._conns[w] for w in running])
            for w in [w for w in list(running) if self._conns[w] in ready]:
                group = running.pop(w)
                results, self._kept[w], self.built[w] = self._result(w)
                if groups:  # the next group first: the worker rolls it out while `keep` reports
                    give(w)
                for (k, i), (success, steps, final) in zip(group, results):
                    keep(k, Rollout(i, bool(success), int(steps), final))
        return [[d[i] for i in range(job.num_rollouts)] for d, job in zip(done, jobs)]

    def _drain(self) -> None:
        """Read the answers the workers still owe from a call cut short (a worker's failure, Ctrl-C), so that
        this call reads its own."""
        while any(self._asked):
            self._settle([w for w in range(self.workers) if self._asked[w]], quiet=True)

    def _settle(self, workers, quiet: bool = False) -> None:
        """Read one answer from each of `workers`; the first failure is raised after all are read, unless
        `quiet`."""
        error = None
        for w in workers:
            try:
                self._result(w)
            except LiberoError as e:
                error = error or e
        if error is not None and not quiet:
            raise error

    def _check_job(self, k: int, job) -> RolloutJob:
        """The job as a RolloutJob of arrays, or a LiberoError saying what is wrong with it."""
        try:
            task, init_states, task_emb, num_rollouts, *more = job
            if len(more) > 1:
                raise ValueError("too many items")
            seed = more[0] if more else None
            if seed is not None and (isinstance(seed, bool) or int(seed) != seed or seed < 0):
                raise ValueError("a seed must be a whole number of at least 0")
            seed = None if seed is None else int(seed)
            task, num_rollouts = int(task), int(num_rollouts)
            init_states, task_emb = np.asarray(init_states), np.asarray(task_emb, dtype=np.float32)
        except (TypeError, ValueError):
            raise LiberoError(
                f"evaluation job {k}: expected (task, init_states, task_emb, num_rollouts[, seed]), got {job!r}"
            ) from None
        if not 0 <= task < self._num_tasks:
            raise LiberoError(f"evaluation job {k}: task {task} is not one of the {self._num_tasks} tasks")
        if num_rollouts < 0:
            raise LiberoError(
                f"evaluation job {k}: the number of rollouts must be 0 or more, got {num_rollouts}"
            )
        if num_rollouts > 0 and (init_states.ndim != 2 or len(init_states) == 0):
            raise LiberoError(
                f"evaluation job {k}: init_states must be (M, S) with M >= 1, got shape {init_states.shape}"
            )
        if task_emb.ndim != 1:
            raise LiberoError(f"evaluation job {k}: task_emb must be (D,), got shape {task_emb.shape}")
        return RolloutJob(task, init_states, task_emb, num_rollouts, seed)

    def evaluate(self, policy, task: int, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int, still_steps: int = 0, seed: int | None = None) -> float:
        """Success rate over `num_rollouts` episodes (arguments as `rollouts`)."""
        return success_rate(self.rollouts(policy, task, init_states, task_emb, num_rollouts, max_steps, still_steps,
                                          seed=seed))

    def evaluate_many(self, policy, jobs: list, max_steps: int, still_steps: int = 0) -> list[float]:
        """Success rate of each job, its rollouts run alongside the others' (arguments as `rollouts_many`)."""
        return [success_rate(r) for r in self.rollouts_many(policy, jobs, max_steps, still_steps)]

    def close(self) -> None:
        """Stop the workers. A worker with nothing asked of it closes its environments and exits; one still at
        work on what it was asked (an evaluation stopped by Ctrl-C, SIGTERM or an error) is terminated at once
        rather than waited for: a rollout may run for a minute."""
        for w, conn in enumerate(self._conns):
            if not self._asked[w]:
                try:
                    conn.send(("close", None))
                except (BrokenPipeError, OSError):
                    pass
        for w, p in enumerate(self._procs):
            if self._asked[w]:
                p.terminate()
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
        for conn in self._conns:
            conn.close()
        self._conns, self._procs, self._asked = [], [], []

    def __enter__(self) -> ParallelEvaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
