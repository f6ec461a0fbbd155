"""Evaluation alongside training (`eval.overlap`): a process of its own rolls out copies of the policy's
weights while the training process goes on.

The training process sends a job (the tasks, the evaluation point and the weights to roll out, taken in the
learner's evaluation context) and keeps training; the evaluation process loads the weights into its own copy
of the policy and runs `evaluate_tasks` exactly as the training process would, with its own environment
workers and its own random streams, so the scores are those of an evaluation in the training process. On a
GPU machine the rollouts' simulation runs on the CPU cores while the GPU trains; on a machine whose cores the
training already takes, the two only share them.
"""

from __future__ import annotations

import signal
import time
import traceback
import warnings
from contextlib import nullcontext

from libero_ll.bddl.validate import BddlWarning
from libero_ll.errors import LiberoError
from libero_ll.processes import plain_warnings, spawn_context


class _AnyTask:
    """The learner's side of an evaluation in the evaluation process: the weights arrive already in the
    learner's context for the job's tasks (the training process groups tasks by context)."""

    @staticmethod
    def eval_context(j: int):
        return nullcontext()

    @staticmethod
    def shares_eval_context(tasks: list[int]) -> bool:
        return True


def _serve(conn, cfg: dict, task_files: list[str], env_cfg, policy_name: str, policy_cfg: dict,
           shape_meta: dict, init_states: list, embs, device: str, workers: int, envs_per_worker: int) -> None:
    """The evaluation process: build the policy and the environments, then answer jobs until told to stop
    (or until the training process is gone). SIGTERM (the training process stopping it in mid-job) is taken as
    Ctrl-C: its environment workers are stopped too rather than left to finish their rollouts."""
    signal.signal(signal.SIGTERM, _as_ctrl_c)
    # The training process said each task file's warnings; this process, and the workers it starts, would say
    # them again.
    warnings.simplefilter("ignore", BddlWarning)
    plain_warnings()
    evaluator = envs = None
    try:
        import torch
        from omegaconf import OmegaConf

        from libero_ll.envs.pool import EnvPool
        from libero_ll.experiments.lifelong import evaluate_tasks
        from libero_ll.experiments.plugins import import_plugins
        from libero_ll.policies import make_policy

        torch.set_num_threads(1)  # the simulator needs the cores, as in an evaluation in the training process
        import_plugins(cfg.get("plugins"))  # a policy of the run's own code is built here by name too
        cfg = OmegaConf.create(cfg)
        policy = make_policy(policy_name, policy_cfg, shape_meta).to(torch.device(device))
        if workers > 1:
            from libero_ll.evaluation.vector_eval import ParallelEvaluator

            evaluator = ParallelEvaluator(task_files, env_cfg, workers, envs_per_worker)
        # Each task's environment, built when a rollout first needs it (without workers only).
        envs = EnvPool(task_files, env_cfg)
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return  # the training process has gone
            if msg[0] == "close":
                return
            _, ticket, tasks, when, state = msg
            t0 = time.time()
            try:
                policy.load_state_dict(state)
                scores = evaluate_tasks(tasks, when, cfg, policy, _AnyTask(), init_states, embs, envs, evaluator)
                reply = ("done", ticket, [float(s) for s in scores], time.time() - t0)
            except Exception as e:  # noqa: BLE001 - reported to the training process, which stops the run
                reply = ("error", ticket, traceback.format_exception_only(type(e), e)[-1].strip(), time.time() - t0)
            try:
                conn.send(reply)
            except (BrokenPipeError, OSError):
                return  # the training process has gone
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches this process too; the training process stops the run
    finally:
        if evaluator is not None:
            evaluator.close()  # workers still in a rollout are terminated
        if envs is not None:
            envs.close()


def _as_ctrl_c(signum, frame):
    raise KeyboardInterrupt


class BackgroundEvaluator:
    """A process that evaluates weights sent to it while the caller goes on.

    Args:
        cfg: the run's config (a plain dict: seed and the eval section are read).
        task_files: the run's task files, in the run's order.
        env_cfg: the EnvConfig of the run's environments.
        policy_name, policy_cfg, shape_meta: how the run builds its policy (`make_policy`).
        init_states: each task's fixed initial states.
        embs: (T, D) task embeddings.
        device: where the evaluation process puts its policy ("cuda" or "cpu").
        workers: environment worker processes of the evaluation process (1: it steps the rollouts itself).
        envs_per_worker: as eval.envs_per_worker.
    """

    def __init__(self, cfg: dict, task_files: list, env_cfg, policy_name: str, policy_cfg: dict, shape_meta: dict,
                 init_states: list, embs, device: str, workers: int, envs_per_worker: int):
        ctx = spawn_context()
        self._conn, child = ctx.Pipe()
        # Not a daemon: it starts environment workers of its own. It ends when this process closes the pipe.
        self._proc = ctx.Process(
            target=_serve,
            args=(child, cfg, [str(f) for f in task_files], env_cfg, policy_name, policy_cfg, shape_meta,
                  init_states, embs, device, int(workers), int(envs_per_worker)),
        )
        self._proc.start()
        child.close()
        self._next = 0
        self._out: set[int] = set()  # tickets sent whose scores (or error) have not arrived
        self._results: dict[int, list[float]] = {}  # scores in, not yet taken
        self.seconds = 0.0  # time the evaluation process spent on jobs

    def submit(self, tasks: list[int], when: tuple[int, ...], state: dict) -> int:
        """Send a job: roll out `state` (a policy state dict, copied to the CPU) on `tasks` at evaluation point
        `when`; returns its ticket."""
        ticket, self._next = self._next, self._next + 1
        cpu = {k: v.detach().to("cpu", copy=True) for k, v in state.items()}
        self._out.add(ticket)
        try:
            self._conn.send(("eval", ticket, list(tasks), tuple(when), cpu))
        except (BrokenPipeError, OSError):
            self._gone()
        return ticket

    def done(self, ticket: int) -> bool:
        """Whether job `ticket`'s scores have arrived (reads what has, without waiting)."""
        while ticket not in self._results and self._conn.poll():
            self._receive()
        return ticket in self._results

    def wait(self, ticket: int) -> list[float]:
        """Job `ticket`'s scores, waiting for them."""
        while ticket not in self._results:
            if not self._conn.poll(1.0):
                if not self._proc.is_alive():
                    self._gone()
                continue
            self._receive()
        return self._results.pop(ticket)

    def _receive(self) -> None:
        try:
            kind, ticket, payload, seconds = self._conn.recv()
        except (EOFError, OSError):
            self._gone()
        self.seconds += seconds
        self._out.discard(ticket)
        if kind == "error":
            raise LiberoError(f"the evaluation alongside training failed: {payload}")
        self._results[ticket] = payload

    def _gone(self):
        self._proc.join(timeout=5)
        raise LiberoError(
            f"the evaluation process alongside training stopped (exit code {self._proc.exitcode})") from None

    def close(self) -> None:
        """Stop the evaluation process and its workers. With no job out it is told to and closes its
        environments; with one out (the run stopped: nobody waits for its scores any more) it is terminated at
        once, and it terminates its workers in turn, rather than finishing rollouts that may run for minutes."""
        if self._out:
            self._proc.terminate()
        else:
            try:
                self._conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._conn.close()
