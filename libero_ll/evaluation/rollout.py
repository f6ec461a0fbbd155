"""Rollouts of a policy from fixed initial states, giving a task's success rate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# How far (metres for positions, radians or quaternion units otherwise) a joint of the scene may move
# and still count as not moving, for the stillness check.
STILL_TOLERANCE = 1e-3


def position_coordinates(model) -> np.ndarray:
    """Indices of the joint coordinates that place things: every joint's qpos except the orientation
    (quaternion) of free and ball joints. A can at rest may spin about its axis by a fraction of a
    milliradian per step for ever; where things are is what tells a stuck rollout."""
    import mujoco

    keep = np.ones(model.nq, dtype=bool)
    for j in range(model.njnt):
        adr = int(model.jnt_qposadr[j])
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            keep[adr + 3 : adr + 7] = False
        elif model.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            keep[adr : adr + 4] = False
    return np.nonzero(keep)[0]


class StillnessMonitor:
    """Tells when nothing in the scene has moved for a number of steps: a rollout that has clearly failed.

    The position of every joint of the scene (the arm, the fingers, each object's centre, drawers,
    doors, knobs: `position_coordinates`) is compared with where it was when the still spell began; a
    spell ends when any of them has moved more than STILL_TOLERANCE. When nothing moves for longer than
    the policy's window, a policy that acts from what it observes sees the same inputs step after step: a
    deterministic one never leaves that state.

    Args:
        steps: consecutive still steps after which `update` says the rollout is stuck; 0 never does.
    """

    def __init__(self, steps: int):
        self.steps = int(steps)
        self._anchor: np.ndarray | None = None
        self._still = 0

    def reset(self, qpos: np.ndarray) -> None:
        """Start a new rollout from joint positions ``qpos``."""
        self._anchor = np.array(qpos, dtype=np.float64)
        self._still = 0

    def update(self, qpos: np.ndarray) -> bool:
        """Record the joint positions after a step; True when the scene has been still for `steps` steps."""
        if self.steps <= 0:
            return False
        if self._anchor is not None and np.max(np.abs(qpos - self._anchor), initial=0.0) <= STILL_TOLERANCE:
            self._still += 1
        else:
            self._anchor = np.array(qpos, dtype=np.float64)
            self._still = 0
        return self._still >= self.steps


@dataclass
class Rollout:
    """One evaluation episode.

    Attributes:
        index: the rollout's number i; it started from init_states[i % M].
        success: whether the task's goal held before the step cap.
        steps: policy steps taken (the step at which the goal first held, the cap, or the step at which
            the rollout was given up because nothing had moved for `still_steps` steps).
        final_state: the flattened simulator state at the end (LiberoEnv.get_state), for comparisons.
    """

    index: int
    success: bool
    steps: int
    final_state: np.ndarray


def rollout_stream(seed: int, index: int) -> np.random.Generator:
    """The random stream of rollout `index` of an evaluation of one task seeded `seed`: a sampling policy
    draws that rollout's actions from it (`BasePolicy.use_streams`), wherever the rollout runs."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(index)]))


def draw_seed() -> int:
    """A seed for an evaluation that was given none, drawn from torch's stream (isolated by the caller)."""
    import torch

    return int(torch.randint(0, 2**62, (), dtype=torch.int64).item())


def run_rollout(policy, env, init_state: np.ndarray, task_emb: np.ndarray, max_steps: int, still_steps: int,
                stream: np.random.Generator, index: int = 0, recorder=None, task: int = 0) -> Rollout:
    """One episode from `init_state`, the policy's sampled actions drawn from `stream` (arguments as
    `run_rollouts`; `index` is the rollout's number for the recorder and the result)."""
    return run_rollout_group(policy, [env], [init_state], np.asarray(task_emb)[None], max_steps, still_steps,
                             [stream], [index], recorder, [task])[0]


def run_rollout_group(policy, envs: list, init_states: list, task_embs: np.ndarray, max_steps: int,
                      still_steps: int, streams: list, indices: list, recorder=None,
                      tasks: list | None = None) -> list[Rollout]:
    """Episodes in lock-step, one in each of `envs`, the policy acting once per step on all of them.

    Rollout j starts from ``init_states[j]`` in ``envs[j]`` (environments of any tasks), with the embedding
    ``task_embs[j]`` and its sampled actions drawn from ``streams[j]``; ``indices[j]`` is its number (and
    ``tasks[j]`` its task) for the recorder and the result. The batch keeps its size until the last rollout
    ends: an ended rollout feeds its last observation and its actions are dropped, so that each rollout's
    place in the policy's batch stays the same. For a policy whose actions for one env depend only on that
    env's history and embedding, each rollout is the one `run_rollout` gives alone, up to the rounding of a
    batch of another size (none for a group of one).

    Returns:
        The rollouts, in the order of `envs`.
    """
    n = len(envs)
    tasks = [0] * n if tasks is None else list(tasks)
    stills = [StillnessMonitor(still_steps) for _ in range(n)]
    wheres = [position_coordinates(env.model) for env in envs]
    obs = [env.reset_to(state) for env, state in zip(envs, init_states)]
    policy.reset(n)
    use_streams = getattr(policy, "use_streams", None)
    if use_streams is not None:
        use_streams(list(streams))
    for env, where, still in zip(envs, wheres, stills):
        still.reset(env.data.qpos[where])
    success, steps = [False] * n, [0] * n
    if recorder is not None:
        for j in range(n):
            recorder.frame(tasks[j], indices[j], obs[j])
    running = list(range(n))
    try:
        while running and max_steps > 0:
            batch = {k: np.stack([o[k] for o in obs]) for k in obs[0]}
            actions = policy.act(batch, task_embs)
            going = []
            for j in running:
                obs[j], _, info = envs[j].step(actions[j])
                steps[j] += 1
                if recorder is not None:
                    recorder.frame(tasks[j], indices[j], obs[j])
                success[j] = bool(info["success"])
                # A rollout ends on success, once its scene has been still for `still_steps` steps, or at the cap.
                if success[j] or stills[j].update(envs[j].data.qpos[wheres[j]]) or steps[j] >= max_steps:
                    if recorder is not None:
                        recorder.end(tasks[j], indices[j], success[j])
                else:
                    going.append(j)
            running = going
    finally:
        if use_streams is not None:
            use_streams(None)
    if recorder is not None:
        for j in running:  # a cap of no steps
            recorder.end(tasks[j], indices[j], False)
    return [Rollout(indices[j], success[j], steps[j], env.get_state()) for j, env in enumerate(envs)]


def run_rollouts(policy, env, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int, still_steps: int = 0, recorder=None, task: int = 0,
                 seed: int | None = None) -> list[Rollout]:
    """Run `num_rollouts` episodes one after another in `env`.

    Args:
        policy: a BasePolicy (its `act` samples actions for N envs; here N = 1).
        env: the task's LiberoEnv.
        init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
        task_emb: (D,) language embedding of the task.
        num_rollouts: how many episodes.
        max_steps: episode cap, policy steps.
        still_steps: end a rollout as failed once nothing in the scene has moved for this many steps
            (see StillnessMonitor); 0 runs every failing rollout to the cap.
        recorder: when given, ``recorder.frame(task, i, obs)`` receives every observation of rollout i (the
            first after the reset, then one per step) and ``recorder.end(task, i, success)`` its end (e.g.
            `libero_ll.evaluation.video.RolloutVideos`).
        task: the task number passed to the recorder.
        seed: the evaluation's seed: rollout i draws its sampled actions from ``rollout_stream(seed, i)``, as
            it does in a `ParallelEvaluator` given the same seed. None draws one from torch's stream.
    """
    seed = draw_seed() if seed is None else int(seed)
    return [run_rollout(policy, env, init_states[i % len(init_states)], task_emb, max_steps, still_steps,
                        rollout_stream(seed, i), i, recorder, task) for i in range(num_rollouts)]


def success_rate(rollouts: list[Rollout]) -> float:
    """Fraction of the rollouts whose goal held (0 for none)."""
    return sum(r.success for r in rollouts) / max(len(rollouts), 1)


def evaluate_task(policy, env, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int, max_steps: int,
                  still_steps: int = 0, seed: int | None = None) -> float:
    """Fraction of rollouts in which the task's goal held before `max_steps` (arguments as `run_rollouts`)."""
    return success_rate(run_rollouts(policy, env, init_states, task_emb, num_rollouts, max_steps, still_steps,
                                     seed=seed))
