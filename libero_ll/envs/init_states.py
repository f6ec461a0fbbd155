"""Fixed initial states of a task: sampled once with a fixed seed, stored next to the task file.

Every method is evaluated from the same starts. A stored file records what it was made from (the
task file's text and the models of its scene), so that a file that no longer matches its task is
refused with a message instead of silently starting rollouts from wrong states.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import numpy as np

from libero_ll.errors import LiberoError

SUFFIX = ".init.npz"
DEFAULT_COUNT = 50
DEFAULT_SEED = 0


def init_states_path(task_file: str | Path) -> Path:
    """Where a task's fixed initial states live: ``<task>.init.npz`` beside ``<task>.bddl``."""
    p = Path(task_file)
    return p.with_name(p.stem + SUFFIX)


def scene_fingerprint(task_file: str | Path) -> str:
    """A hash of the task file and of every model and the arena its scene is built from.

    Machine-independent (no file paths); changes whenever a category's geometry, joints or regions
    change, or the task file does.
    """
    from libero_ll.assets.categories import ARENAS, get_model
    from libero_ll.bddl.parser import parse_file

    text = Path(task_file).read_text()
    spec = parse_file(str(task_file))
    h = hashlib.sha256(text.encode())
    for cat in sorted(set(spec.instances().values())):
        h.update(repr(get_model(cat)).encode())
    if spec.problem_class in ARENAS:
        h.update(repr(ARENAS.get(spec.problem_class)).encode())
    return h.hexdigest()


def sample_init_states(env, n: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> np.ndarray:
    """n initial states of a LiberoEnv's task sampled with a fixed seed, (n, S).

    Raises:
        LiberoError: when a sampled start already satisfies the goal (the task would be solved
        before the robot moves).
    """
    states = env.sample_init_states(n, seed)
    for i, s in enumerate(states):
        env.reset_to(s)
        if env.check_goal():
            raise LiberoError(f"{env.spec.path}: initial state {i} (seed {seed}) already satisfies the goal")
    return states


def write_init_states(task_file: str | Path, n: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED,
                      env=None, overwrite: bool = False) -> Path:
    """Sample and store a task's fixed initial states; returns the file written.

    Args:
        task_file: the .bddl file.
        n: how many states.
        seed: the sampling seed.
        env: an already built LiberoEnv of this task (None builds one without rendering).
        overwrite: replace an existing file.
    """
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    out = init_states_path(task_file)
    if out.exists() and not overwrite:
        raise LiberoError(f"{out} exists; pass overwrite to replace it")
    own = env is None
    env = env or LiberoEnv(task_file, EnvConfig(render=False))
    try:
        states = sample_init_states(env, n, seed)
    finally:
        if own:
            env.close()
    buf = io.BytesIO()
    np.savez_compressed(
        buf, states=states, seed=np.int64(seed), fingerprint=np.array(scene_fingerprint(task_file))
    )
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, out)
    return out


def load_init_states(task_file: str | Path, n: int | None = None, state_size: int | None = None) -> np.ndarray:
    """A task's stored fixed initial states, (n, S); the first n when n is given.

    Raises:
        LiberoError: the file is missing, unreadable, made for a different version of the task or
        its models, holds fewer than n states, or its states do not have state_size numbers.
    """
    path = init_states_path(task_file)
    if not path.exists():
        raise LiberoError(f"{path}: no stored initial states; make them with `libero-ll init-states {task_file}`")
    try:
        with np.load(path) as f:
            states, fingerprint = f["states"], str(f["fingerprint"])
    except Exception as e:  # a truncated or foreign file
        raise LiberoError(f"{path}: not a readable initial-states file ({e})") from None
    if fingerprint != scene_fingerprint(task_file):
        raise LiberoError(
            f"{path}: made for a different version of {Path(task_file).name} or of its models; "
            f"remake it with `libero-ll init-states --overwrite {task_file}`"
        )
    if state_size is not None and states.shape[1] != state_size:
        raise LiberoError(f"{path}: states have {states.shape[1]} numbers, the simulator has {state_size}")
    if n is not None:
        if n > len(states):
            raise LiberoError(f"{path}: {len(states)} states stored, {n} asked for")
        states = states[:n]
    return states


def has_init_states(task_file: str | Path) -> bool:
    """Whether a task has a stored initial-states file (current or not)."""
    return init_states_path(task_file).exists()
