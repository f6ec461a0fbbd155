"""Rollouts stepped in lock-step by several environment processes, with the policy batched in this process.

Each worker (spawned, so that it gets its own simulator and rendering context) builds the task
environments it is asked for and keeps them. Every step the main process gathers one observation per
worker, runs the policy once on the batch, and sends each worker its action. A worker whose episode ended
starts the next rollout number; rollout i always starts from init_states[i % M], so for a policy whose
actions for one env depend only on that env's history the rollouts equal those of `run_rollouts`.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from pathlib import Path

import numpy as np

from libero_ll.errors import LiberoError
from libero_ll.evaluation.rollout import Rollout, StillnessMonitor, position_coordinates, success_rate


def _worker(conn, task_files: list[str], env_cfg) -> None:
    # Runs in a spawned process: nothing from the parent's simulator or GL state is inherited.
    envs: dict = {}
    coords: dict = {}  # task -> its scene's position coordinates (position_coordinates)
    still = StillnessMonitor(0)
    try:
        while True:
            cmd, args = conn.recv()
            try:
                if cmd == "close":
                    break
                if cmd == "reset":
                    task, state, still_steps = args
                    if task not in envs:
                        from libero_ll.envs.env import LiberoEnv

                        envs[task] = LiberoEnv(task_files[task], env_cfg)
                        coords[task] = position_coordinates(envs[task].model)
                    current, where = envs[task], coords[task]
                    obs = current.reset_to(state)
                    still = StillnessMonitor(still_steps)
                    still.reset(current.data.qpos[where])
                    conn.send(("ok", obs))
                elif cmd == "step":
                    obs, _, info = current.step(args)
                    conn.send(("ok", (obs, bool(info["success"]), still.update(current.data.qpos[where]))))
                elif cmd == "state":
                    conn.send(("ok", current.get_state()))
                else:
                    conn.send(("error", f"unknown command {cmd!r}"))
            except Exception as e:  # noqa: BLE001 - reported to the main process, which raises it
                conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        for env in envs.values():
            env.close()
        conn.close()


class ParallelEvaluator:
    """A pool of environment worker processes for evaluating a policy on a suite's tasks.

    Args:
        task_files: the suite's task files; tasks are named by their position in this list.
        env_cfg: the EnvConfig every worker builds its environments with.
        workers: number of processes (each steps one rollout at a time).
    """

    def __init__(self, task_files: list, env_cfg, workers: int):
        if workers < 1:
            raise LiberoError(f"eval.workers must be at least 1, got {workers}")
        ctx = mp.get_context("spawn")
        self._conns = []
        self._procs = []
        files = [str(Path(f)) for f in task_files]
        for _ in range(workers):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(child, files, env_cfg), daemon=True)
            p.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(p)

    @property
    def workers(self) -> int:
        """Number of worker processes."""
        return len(self._conns)

    def _call(self, w: int, cmd: str, args=None):
        self._conns[w].send((cmd, args))

    def _result(self, w: int):
        try:
            status, value = self._conns[w].recv()
        except EOFError:
            raise LiberoError(f"evaluation worker {w} died (exit code {self._procs[w].exitcode})") from None
        if status != "ok":
            raise LiberoError(f"evaluation worker {w} failed: {value}")
        return value

    def rollouts(self, policy, task: int, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int, still_steps: int = 0) -> list[Rollout]:
        """Run `num_rollouts` episodes of task number `task`, spread over the workers.

        Args:
            policy: a BasePolicy; `act` is called with a batch of one observation per worker.
            task: position of the task in `task_files`.
            init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
            task_emb: (D,) language embedding of the task.
            num_rollouts: how many episodes.
            max_steps: episode cap, policy steps.
            still_steps: end a rollout as failed once nothing in its scene has moved for this many steps
                (see StillnessMonitor); 0 runs every failing rollout to the cap.

        Returns:
            The rollouts in order of their number.
        """
        n = min(self.workers, num_rollouts)
        if n == 0:
            return []
        slot_rollout = list(range(n))
        next_rollout = n
        steps = [0] * n
        active = [True] * n
        for w in range(n):
            self._call(w, "reset", (task, init_states[w % len(init_states)], still_steps))
        obs = [self._result(w) for w in range(n)]
        policy.reset(n)
        done: dict[int, Rollout] = {}
        while any(active):
            # Finished slots keep feeding their last observation so the batch keeps its size; their
            # actions are dropped.
            batch = {k: np.stack([o[k] for o in obs]) for k in obs[0]}
            actions = policy.act(batch, task_emb)
            live = [w for w in range(n) if active[w]]
            for w in live:
                self._call(w, "step", actions[w])
            for w in live:
                obs[w], success, stuck = self._result(w)
                steps[w] += 1
                if not success and not stuck and steps[w] < max_steps:
                    continue
                self._call(w, "state")
                done[slot_rollout[w]] = Rollout(slot_rollout[w], success, steps[w], self._result(w))
                if next_rollout < num_rollouts:
                    slot_rollout[w], steps[w] = next_rollout, 0
                    self._call(w, "reset", (task, init_states[next_rollout % len(init_states)], still_steps))
                    obs[w] = self._result(w)
                    policy.reset(n, env_ids=[w])
                    next_rollout += 1
                else:
                    active[w] = False
        return [done[i] for i in range(num_rollouts)]

    def evaluate(self, policy, task: int, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int, still_steps: int = 0) -> float:
        """Success rate over `num_rollouts` episodes (arguments as `rollouts`)."""
        return success_rate(self.rollouts(policy, task, init_states, task_emb, num_rollouts, max_steps, still_steps))

    def close(self) -> None:
        """Stop the workers (their environments are closed first)."""
        for conn in self._conns:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []

    def __enter__(self) -> ParallelEvaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
