"""Rollouts of a policy from fixed initial states, giving a task's success rate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Rollout:
    """One evaluation episode.

    Attributes:
        index: the rollout's number i; it started from init_states[i % M].
        success: whether the task's goal held before the step cap.
        steps: policy steps taken (the step at which the goal first held, or the cap).
        final_state: the flattened simulator state at the end (LiberoEnv.get_state), for comparisons.
    """

    index: int
    success: bool
    steps: int
    final_state: np.ndarray


def run_rollouts(policy, env, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int,
                 max_steps: int) -> list[Rollout]:
    """Run `num_rollouts` episodes one after another in `env`.

    Args:
        policy: a BasePolicy (its `act` samples actions for N envs; here N = 1).
        env: the task's LiberoEnv.
        init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
        task_emb: (D,) language embedding of the task.
        num_rollouts: how many episodes.
        max_steps: episode cap, policy steps.
    """
    out = []
    for i in range(num_rollouts):
        obs = env.reset_to(init_states[i % len(init_states)])
        policy.reset(1)
        success, steps = False, 0
        while steps < max_steps:
            action = policy.act({k: v[None] for k, v in obs.items()}, task_emb)[0]
            obs, _, info = env.step(action)
            steps += 1
            if info["success"]:
                success = True
                break
        out.append(Rollout(i, success, steps, env.get_state()))
    return out


def success_rate(rollouts: list[Rollout]) -> float:
    """Fraction of the rollouts whose goal held (0 for none)."""
    return sum(r.success for r in rollouts) / max(len(rollouts), 1)


def evaluate_task(policy, env, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int, max_steps: int) -> float:
    """Fraction of rollouts in which the task's goal held before `max_steps` (arguments as `run_rollouts`)."""
    return success_rate(run_rollouts(policy, env, init_states, task_emb, num_rollouts, max_steps))
