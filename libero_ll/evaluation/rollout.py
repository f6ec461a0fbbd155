"""Rollouts of a policy from fixed initial states, giving a task's success rate."""

from __future__ import annotations

import numpy as np


def evaluate_task(policy, env, init_states: np.ndarray, task_emb: np.ndarray, num_rollouts: int, max_steps: int) -> float:
    """Fraction of rollouts in which the task's goal held before `max_steps`.

    Args:
        policy: a BasePolicy (its `act` samples actions for N envs; here N = 1).
        env: the task's LiberoEnv.
        init_states: (M, S) fixed initial states; rollout i starts from init_states[i % M].
        task_emb: (D,) language embedding of the task.
        num_rollouts: how many episodes.
        max_steps: episode cap, policy steps.
    """
    successes = 0
    for i in range(num_rollouts):
        obs = env.reset_to(init_states[i % len(init_states)])
        policy.reset(1)
        for _ in range(max_steps):
            action = policy.act({k: v[None] for k, v in obs.items()}, task_emb)[0]
            obs, _, info = env.step(action)
            if info["success"]:
                successes += 1
                break
    return successes / max(num_rollouts, 1)
