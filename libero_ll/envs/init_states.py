"""Fixed initial states of a task: sampled once with a fixed seed, stored next to the task file.

Every method is evaluated from the same starts. A stored file records what it was made from (the
task file's text and the models of its scene), so that a file that no longer matches its task is
refused with a message instead of silently starting rollouts from wrong states. LIBERO's own fixed
initial states (``*.pruned_init``) are read without running code and converted into ours.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
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


def task_init_seed(task_name: str, seed: int) -> int:
    """The seed of a task's sampled initial states: fixed by the task's name and `seed` alone, so that a task
    starts from the same states wherever it sits in a run (another task order, a subset of the tasks), as
    `libero_ll.data.collect.demo_seed` fixes demos. A whole number from 0 to 2**31-1."""
    return zlib.crc32(f"{task_name}|{int(seed)}".encode()) & 0x7FFFFFFF


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
        model = get_model(cat)
        h.update(repr(model).encode())
        # Left out of the repr while 0, so that adding the field changed no other model's fingerprint.
        if model.friction_priority:
            h.update(f"friction_priority={model.friction_priority}".encode())
    if spec.scene_family in ARENAS:
        h.update(repr(ARENAS.get(spec.scene_family)).encode())
    return h.hexdigest()


def sample_init_states(env, n: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> np.ndarray:
    """n initial states of a LiberoEnv's task sampled with a fixed seed, (n, S).

    Raises:
        LiberoError: when a sampled start does not satisfy the task's init predicates (its regions
        cannot be met, e.g. off the table), or already satisfies the goal (the task would be solved
        before the robot moves).
    """
    states = env.sample_init_states(n, seed)
    for i, s in enumerate(states):
        env.reset_to(s)
        failed = [text for text, holds in env.predicate_values(env.spec.init) if not holds]
        if failed:
            raise LiberoError(
                f"{env.spec.path}: in initial state {i} (seed {seed}) the init predicates "
                f"{', '.join(failed)} do not hold; check their regions (`libero-ll check --load`)"
            )
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
    _write_states(out, states, seed, task_file)
    return out


def load_init_states(task_file: str | Path, n: int | None = None, state_size: int | None = None,
                     *, with_seed: bool = False):
    """A task's stored fixed initial states, (n, S); the first n when n is given. With `with_seed`, the pair
    (states, the seed they were sampled with, None when the file does not say), from one read of the file.

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
            seed = int(f["seed"]) if "seed" in f else None
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
    return (states, seed) if with_seed else states


def init_states_current(task_file: str | Path) -> bool:
    """Whether the task's stored initial-states file exists, reads, and was made for this version of the
    task and its models (what `load_init_states` requires)."""
    try:
        load_init_states(task_file)
    except LiberoError:
        return False
    return True


def has_init_states(task_file: str | Path) -> bool:
    """Whether a task has a stored initial-states file (current or not)."""
    return init_states_path(task_file).exists()


# ---------------------------------------------------------------- LIBERO's fixed initial states

#: File name endings of LIBERO's fixed initial states (numpy arrays saved with torch.save).
LIBERO_SUFFIXES = (".pruned_init", ".init")
# Where LIBERO puts the centre of each scene family's workspace (world x, y, metres); the ranges of
# its regions are measured from there, as ours are from our workspace's centre.
LIBERO_WORKSPACE_XY = {"LIBERO_Study_Tabletop_Manipulation": (-0.2, 0.0)}
# LIBERO's state row: time, then qpos of the arm (7) and fingers (2), one free joint (7) per object,
# the joints of the fixtures' moving parts, then the velocities of all of them.
_LIBERO_ROBOT_QPOS = 9
_LIBERO_ROBOT_QVEL = 9


def read_libero_init_states(path: str | Path) -> np.ndarray:
    """LIBERO's fixed initial states of one task, (n, S) float64, read without running code from the file.

    LIBERO stores them with ``torch.save`` (a pickle); this loads them with ``weights_only=True``,
    allowing nothing but numpy's array reconstruction, so a file holding anything else is refused.

    Args:
        path: a LIBERO ``.pruned_init`` or ``.init`` file.

    Raises:
        LiberoError: the file is missing, is not a torch archive, holds something other than a 2-D
        numeric array, or would need code to be run to be read.
    """
    import pickle

    import torch

    path = Path(path)
    if not path.is_file():
        raise LiberoError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise LiberoError(f"{path}: not a LIBERO initial-states file (not an archive written by torch.save)")
    try:
        with torch.serialization.safe_globals(_numpy_globals()):
            data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise LiberoError(
            f"{path}: refused: it holds more than a numeric array ({_unsupported(str(e))}); "
            "reading it would mean running code from the file"
        ) from None
    except Exception as e:  # not a torch archive, truncated, ...
        raise LiberoError(f"{path}: not a LIBERO initial-states file ({type(e).__name__}: {e})") from None
    if isinstance(data, torch.Tensor):
        data = data.numpy()
    if not isinstance(data, np.ndarray) or data.ndim != 2 or not np.issubdtype(data.dtype, np.number):
        what = f"an array of shape {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise LiberoError(f"{path}: expected a 2-D array of states (one row each), found {what}")
    return data.astype(np.float64)


def _unsupported(message: str) -> str:
    """The object a refused pickle asked for, from torch's long message."""
    for line in message.split("\n"):
        if "Unsupported global" in line:
            return line.strip().split(" was not")[0].replace("WeightsUnpickler error: ", "")
    return "content that only a full unpickler reads"


def _numpy_globals() -> list:
    """What pickled numpy arrays refer to: the array reconstructor, ndarray and dtypes, by every name
    numpy has given them (numpy 2 renamed numpy.core to numpy._core)."""
    import importlib

    found: list = [np.ndarray, np.dtype]
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                rebuild = importlib.import_module(module)._reconstruct
        except (ImportError, AttributeError):
            continue
        found.append((rebuild, f"{module}._reconstruct"))
    found += sorted({type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDG"}, key=lambda t: t.__name__)
    return found


@dataclass
class ConvertReport:
    """What `convert_libero_init_states` made: the file, how many states, and which starts failed init."""

    path: Path
    count: int
    init_false: list[int] = field(default_factory=list)
    goal_true: list[int] = field(default_factory=list)
    pushed: list[int] = field(default_factory=list)


def libero_object_order(spec) -> list[str]:
    """The objects of a task in the order of LIBERO's simulator state: grouped by category, categories
    in the order they first appear in :objects, instances in file order within a category."""
    by_category: dict[str, list[str]] = {}
    for inst, category in spec.objects.items():
        by_category.setdefault(category, []).append(inst)
    return [inst for group in by_category.values() for inst in group]


def libero_positions(spec, row: np.ndarray, moving_joints: int) -> dict[str, np.ndarray]:
    """Object (x, y) positions in our world frame from one row of LIBERO's states.

    Args:
        spec: the task.
        row: one LIBERO state: time, qpos, qvel.
        moving_joints: the number of joints of the scene's drawers, doors and knobs.

    Raises:
        LiberoError: the row's length does not fit the task's robot, objects and moving parts.
    """
    order = libero_object_order(spec)
    nq = _LIBERO_ROBOT_QPOS + 7 * len(order) + moving_joints
    nv = _LIBERO_ROBOT_QVEL + 6 * len(order) + moving_joints
    if len(row) != 1 + nq + nv:
        raise LiberoError(
            f"a LIBERO state of this task has {1 + nq + nv} numbers (time, {nq} positions, {nv} velocities "
            f"for the arm, {len(order)} objects and {moving_joints} moving parts), this one has {len(row)}: "
            "is it the initial-states file of another task?"
        )
    dx, dy = LIBERO_WORKSPACE_XY.get(spec.scene_family, (0.0, 0.0))
    out = {}
    for k, inst in enumerate(order):
        adr = 1 + _LIBERO_ROBOT_QPOS + 7 * k
        out[inst] = np.array([row[adr] - dx, row[adr + 1] - dy])
    return out


def convert_libero_init_states(task_file: str | Path, libero_file: str | Path, seed: int = DEFAULT_SEED,
                               overwrite: bool = False, env=None) -> ConvertReport:
    """Turn LIBERO's fixed initial states of a task into ours, stored beside the task file.

    For each LIBERO state the scene is reset with the objects that start in a region of the table
    where LIBERO had them (x and y); everything else (heights and turns, the fixtures, what stands on
    or in something, drawers and doors, the robot's home pose) comes from our own placement, seeded
    per state. Where LIBERO's positions are too close for our models they are pushed apart as at any
    crowded reset.

    Args:
        task_file: the LIBERO task file (.bddl).
        libero_file: its LIBERO ``.pruned_init`` (or ``.init``) file.
        seed: seeds our placement of what LIBERO's states do not fix.
        overwrite: replace an existing ``<task>.init.npz``.
        env: an already built LiberoEnv of this task (None builds one without rendering).

    Returns a ConvertReport: the file written and the indices of the states whose init predicates
    do not all hold or whose goal already holds (kept, and reported, so that indices match LIBERO's).

    Raises:
        LiberoError: unreadable or mismatched LIBERO file, or an existing output without overwrite.
    """
    from libero_ll.assets.categories import get_model
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.placement import PlacementWarning

    out = init_states_path(task_file)
    if out.exists() and not overwrite:
        raise LiberoError(f"{out} exists; pass overwrite to replace it")
    rows = read_libero_init_states(libero_file)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        raise LiberoError(f"{libero_file}: state {int(np.argmin(finite))} holds numbers that are not finite "
                          "(NaN or infinity); nothing was written")
    own = env is None
    env = env or LiberoEnv(task_file, EnvConfig(render=False))
    try:
        spec = env.spec
        moving = sum(len(get_model(c).parts) for c in spec.instances().values())
        on_table = {p.args[0] for p in spec.init if p.name == "on" and p.args[1] in spec.regions
                    and spec.regions[p.args[1]].ranges
                    and get_model(spec.category_of(spec.regions[p.args[1]].target)).kind == "workspace"}
        report = ConvertReport(out, len(rows))
        rng = np.random.default_rng(seed)
        states = []
        for i, row in enumerate(rows):
            try:
                positions = {k: v for k, v in libero_positions(spec, row, moving).items() if k in on_table}
            except LiberoError as e:
                raise LiberoError(f"{libero_file}: state {i}: {e}") from None
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", PlacementWarning)
                env.reset(seed=int(rng.integers(2**31)), positions=positions)
            if any(issubclass(w.category, PlacementWarning) for w in caught) or _moved(env, positions):
                report.pushed.append(i)
            if not all(v for _, v in env.predicate_values(spec.init)):
                report.init_false.append(i)
            if env.check_goal():
                report.goal_true.append(i)
            states.append(env.get_state())
    finally:
        if own:
            env.close()
    _write_states(out, np.stack(states), seed, task_file, source=str(Path(libero_file).name))
    return report


def _moved(env, positions: dict[str, np.ndarray], tolerance: float = 0.005) -> bool:
    """Whether any object ended its reset more than `tolerance` metres from LIBERO's position."""
    return any(float(np.hypot(*(env.geometry.pos(k)[:2] - xy))) > tolerance for k, xy in positions.items())


def _write_states(out: Path, states: np.ndarray, seed: int, task_file, source: str | None = None) -> None:
    buf = io.BytesIO()
    extra = {} if source is None else {"source": np.array(source)}
    np.savez_compressed(
        buf, states=states, seed=np.int64(seed), fingerprint=np.array(scene_fingerprint(task_file)), **extra
    )
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, out)
