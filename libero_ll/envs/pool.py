"""The environments of many tasks in one process, built when first needed and closed when not used for a while.

An environment holds its whole scene, its physics and its renderer: about 40 MB at the `cpu` preset's
settings (48 px, the robot's hulls, once reset), about 160 MB with the robot's detailed meshes at 128 px. A run
over LIBERO-90's 90 tasks that kept one of each in the training process and in every evaluation worker would
hold some 4 to 14 GB in each. A pool keeps
the environments of the `keep_tasks` tasks used last and closes the others; building one again takes about
a second, beside rollouts of hundreds of steps. An environment's rollouts do not depend on whether
it was built anew or used before: each starts from a full initial state (`LiberoEnv.reset_to`).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

# Tasks whose environments a pool keeps when no rollout is using them: a suite of ten tasks (four of the five
# benchmarks) never builds one twice, and LIBERO-90 keeps about 0.4 to 1.6 GB per process. Fewer would be rebuilt at
# every evaluation point: the earlier tasks are evaluated in turn, which a pool of the tasks used last misses.
KEEP_TASKS = 10
# Environments a pool keeps when no rollout is using them, all tasks together: where a process steps several
# rollouts of a task at once (eval.envs_per_worker), it keeps fewer tasks' environments rather than several of
# each of ten tasks (16 take about 0.6 GB at the cpu preset's settings).
KEEP_ENVS = 16


class EnvPool:
    """Environments of the tasks `task_files` (numbered by their position), built with `env_cfg` when asked for.

    `take(j)` hands out an environment of task j that nobody is using (building one if there is none) and
    `give(j, env)` takes it back; several of one task can be out at once. Of the environments not out, those
    of the `keep_tasks` tasks given back last are kept, and of those no more than `keep_envs` (the task given
    back last keeps all of its own); the others are closed. `pool[j]` is an environment of task j
    for use until the next `pool[k]` of another task: the serial use of one environment at a time.
    """

    def __init__(self, task_files, env_cfg, keep_tasks: int = KEEP_TASKS, keep_envs: int = KEEP_ENVS):
        if int(keep_tasks) < 1:
            raise ValueError(f"keep_tasks must be at least 1, got {keep_tasks}")
        if int(keep_envs) < 1:
            raise ValueError(f"keep_envs must be at least 1, got {keep_envs}")
        self.task_files = [Path(f) for f in task_files]
        self.env_cfg = env_cfg
        self.keep_tasks = int(keep_tasks)
        self.keep_envs = int(keep_envs)
        self._idle: OrderedDict[int, list] = OrderedDict()  # task -> its environments not out, oldest task first
        self.built = 0  # environments built so far (for tests and timings)

    def __len__(self) -> int:
        return len(self.task_files)

    def _check(self, task: int) -> int:
        if not 0 <= int(task) < len(self.task_files):
            raise IndexError(f"task {task} is not one of the pool's {len(self.task_files)}")
        return int(task)

    def take(self, task: int):
        """An environment of task `task` that is not out, built if there is none; out until `give`."""
        from libero_ll.envs.env import LiberoEnv

        task = self._check(task)
        free = self._idle.get(task)
        if free:
            env = free.pop()
            if not free:
                del self._idle[task]  # a task counts against keep_tasks by the environments it has there
            return env
        self.built += 1
        return LiberoEnv(self.task_files[task], self.env_cfg)

    def give(self, task: int, env) -> None:
        """Take back an environment of task `task`; close those of the tasks used longest ago beyond `keep_tasks`
        tasks or `keep_envs` environments."""
        task = self._check(task)
        self._idle.setdefault(task, []).append(env)
        self._idle.move_to_end(task)
        while len(self._idle) > self.keep_tasks or (
            len(self._idle) > 1 and sum(map(len, self._idle.values())) > self.keep_envs
        ):
            _, old = self._idle.popitem(last=False)
            for e in old:
                e.close()

    def __getitem__(self, task: int):
        env = self.take(task)
        self.give(task, env)
        return env

    def __iter__(self):
        return (self[j] for j in range(len(self)))

    def kept(self) -> dict[int, int]:
        """Task -> how many of its environments the pool holds (not out), oldest task first."""
        return {task: len(envs) for task, envs in self._idle.items()}

    def close(self) -> None:
        """Close every environment the pool holds (those out are their takers' to close)."""
        while self._idle:
            _, envs = self._idle.popitem(last=False)
            for env in envs:
                env.close()
