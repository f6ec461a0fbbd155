"""Displaced-object corrections: grasp corrections made from demos by moving the grasped object.

A demo of the scripted expert comes straight down over the object it grasps: it never shows the hand a
centimetre or two off to the side, nor what to do there. A policy that ends up there (it always does,
sometimes) has seen no such state. This module makes those states and their labels from the demos
themselves, with no trained policy: each state of a pick's approach and descent is shown again with the
object moved sideways by a few centimetres, and labelled with the expert's rule for the moved object:

- at the approach height (or above it), move toward the point above the moved grasp point;
- lower down, move toward the moved grasp point itself: sideways and down at once, as the expert's
  servo does (the controller closes about a third of the sideways gap a step, so the hand is over the
  object before it is down to the object's top).

States in which the open fingers would be inside the moved object (the hand below its top while off to
the side) are left out; a fragment ends there. The hand's pose, the fingers and every other object are as
in the demo: only the grasped object and the images differ. The fragments hold the demo layout's keys
(obs, actions, states, robot_states) but do not replay: their states are not the physics' own sequence.
They are kept apart from the demos, in ``<demo folder>/corrections/<task>.hdf5``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from libero_ll.data.hdf5 import Demo, DemoWriter, demo_names, iter_demos, new_record, read_info, record_step
from libero_ll.errors import LiberoError
from libero_ll.processes import spawn_context

# What a change here makes different: a file of another version is made again.
CORRECTIONS_VERSION = "displaced-object corrections 3"
SUBFOLDER = "corrections"
# Sideways displacements of the object, metres (uniform in radius, any direction).
MIN_SHIFT, MAX_SHIFT = 0.005, 0.03
# A hand within this distance (metres) of the moved grasp point sideways is over it (the expert's own
# position tolerance): lower than the object's top it is kept, elsewhere the fragment ends.
ALIGNED = 0.008
# Margin (metres) above the object's top under which an open hand off to the side would meet it.
TOP_MARGIN = 0.01
# A hand within this height (metres) below the approach point or above it is still on its approach.
APPROACH_BAND = 0.01
# Steps after the fingers close by which the grasped object has moved with the hand.
LIFT_STEPS = 20
LIFTED = 0.01


@dataclass(frozen=True)
class CorrectionSettings:
    """What fixes a task's corrections: a file made with other settings is made again.

    Args:
        per_demo: displacements per pick of each demo (each gives one fragment).
        seed: seed of the displacements.
        demos: the corrections are made from the first this many demos of the file.
    """

    per_demo: int = 2
    seed: int = 0
    demos: int = 50


def corrections_path(demo_path: str | os.PathLike) -> Path:
    """Where the corrections of a demo file are kept: ``corrections/<name>`` beside it."""
    p = Path(demo_path)
    return p.parent / SUBFOLDER / p.name


def _pick_events(actions: np.ndarray) -> list[tuple[int, int]]:
    """(first open step, closing step) of each grasp: the steps with the fingers commanded open that end
    where the command turns to closing."""
    grip = actions[:, 6]
    out = []
    start = 0
    for t in range(len(grip)):
        if grip[t] > 0 and (t == 0 or grip[t - 1] <= 0):
            if t > start:
                out.append((start, t))
        if grip[t] <= 0 and (t == 0 or grip[t - 1] > 0):
            start = t
    return out


def _label(pos, rot, grasp, approach, hand_rot, speed: float) -> np.ndarray:
    """The expert's action toward a (moved) grasp: see the module's rule."""
    from libero_ll.experts.skills import servo

    target = approach if pos[2] >= approach[2] - APPROACH_BAND else grasp
    return servo(pos, rot, target, hand_rot, -1.0, speed)


def _grasped(env, demo: Demo, close: int) -> str | None:
    """The loose object that the closing fingers take: the one that has moved most a second later, if any
    has moved by LIFTED (a handle or a knob is not a loose object, and its grasps get no corrections)."""
    loose = env.loose_objects()
    if not loose:
        return None
    env.show_state(demo.states[close])
    before = {i: env.geometry.pos(i).copy() for i in loose}
    env.show_state(demo.states[min(close + LIFT_STEPS, demo.num_steps - 1)])
    moved = {i: float(np.linalg.norm(env.geometry.pos(i) - before[i])) for i in loose}
    best = max(moved, key=moved.get)
    return best if moved[best] >= LIFTED else None


def demo_corrections(env, demo: Demo, rng: np.random.Generator, per_demo: int) -> list[Demo]:
    """The fragments of one demo: `per_demo` displacements of the object of each of its picks."""
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import APPROACH_HEIGHT

    out = []
    for start, close in _pick_events(demo.actions):
        inst = _grasped(env, demo, close)
        if inst is None:
            continue
        env.show_state(demo.states[close])
        p = env.robot_proprio()
        grasp, hand_rot = p["ee_pos"].copy(), p["ee_rot"].copy()
        approach = grasp - hand_rot[:, 2] * APPROACH_HEIGHT
        half_z = get_model(env.spec.instances()[inst]).half_size[2]
        # The demo's own speed: the position actions' cap (the expert adds noise of about 0.02).
        motion = np.abs(demo.actions[start:close, :3]).max(axis=1)
        speed = float(np.clip(np.percentile(motion, 90), 0.3, 1.0)) if len(motion) else 0.6
        for _ in range(per_demo):
            angle = rng.uniform(0.0, 2 * math.pi)
            radius = rng.uniform(MIN_SHIFT, MAX_SHIFT)
            d = radius * np.array([math.cos(angle), math.sin(angle)])
            moved_grasp = grasp + np.array([d[0], d[1], 0.0])
            moved_approach = approach + np.array([d[0], d[1], 0.0])
            rec = new_record(None)
            for t in range(start, close):
                env.show_state(demo.states[t], {inst: d})
                q = env.robot_proprio()
                pos, rot = q["ee_pos"], q["ee_rot"]
                top = env.geometry.pos(inst)[2] + half_z
                off = float(np.hypot(*(moved_grasp[:2] - pos[:2])))
                if pos[2] < top + TOP_MARGIN and off > ALIGNED:
                    break
                label = _label(pos, rot, moved_grasp, moved_approach, hand_rot, speed)
                record_step(rec, env, env.observe(), label.astype(np.float32))
            if rec["actions"]:
                rec["init_state"] = rec["states"][0]
                out.append(Demo.from_record(rec, "", demo.seed))
    return out


def _stored_settings(path: Path) -> dict | None:
    try:
        info = read_info(path)
    except LiberoError:
        return None
    keys = ("per_demo", "seed", "source_demos", "source_digest")
    return {"generator": info.generator, **{k: info.stats.get(k) for k in keys}}


def _source_hash(env_args):
    """The running digest of `source_digest`, begun with a demo file's scene settings."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(env_args, sort_keys=True, default=str).encode())


def _add_demo(h, demo: Demo) -> None:
    """Add one demo's actions and states to the running digest `h`."""
    for arr in (demo.actions, demo.states):
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())


def source_digest(demo_path: str | os.PathLike, demos: int) -> str:
    """A digest of what the corrections of a demo file are made from: its scene settings (image size, meshes)
    and the first `demos` demos' actions and states. A demo file collected or recorded again gets another."""
    h = _source_hash(read_info(demo_path).env_args)
    for demo in iter_demos(demo_path, obs_keys=[], max_demos=demos):
        _add_demo(h, demo)
    return h.hexdigest()


def is_current(demo_path: str | os.PathLike, settings: CorrectionSettings) -> bool:
    """Whether the corrections file of `demo_path` exists and was made with `settings` from its demos as they
    are now."""
    path = corrections_path(demo_path)
    if not path.exists():
        return False
    stored = _stored_settings(path)
    used = min(settings.demos, len(demo_names(demo_path)))
    expected = {"per_demo": settings.per_demo, "seed": settings.seed, "source_demos": used}
    if stored is None or {k: stored[k] for k in ("generator", *expected)} != {"generator": CORRECTIONS_VERSION,
                                                                             **expected}:
        return False
    return stored["source_digest"] == source_digest(demo_path, used)


def make_corrections(demo_path: str | os.PathLike, settings: CorrectionSettings) -> tuple[Path, int, int]:
    """Make (or make again) the corrections file of one demo file.

    A demo file with no grasp of a loose object (a task that only opens a drawer or turns a knob) gets a
    corrections file holding no fragment, so that it is not looked at again.

    Returns:
        (path of the corrections file, fragments, steps).
    Raises:
        LiberoError: the demo file is not one whose scene can be rebuilt from its states.
    """
    from libero_ll.bddl.parser import parse_string
    from libero_ll.data.verify import env_config_of
    from libero_ll.envs.env import LiberoEnv

    demo_path = Path(demo_path)
    info = read_info(demo_path)
    if not info.bddl_file_content:
        raise LiberoError(
            f"demo file {demo_path}: no bddl_file_content attribute, so its scene cannot be rebuilt"
        )
    spec = parse_string(info.bddl_file_content, info.bddl_file_name or str(demo_path))
    cfg = env_config_of(info.env_args, render=True)
    env = LiberoEnv(spec, cfg)
    rng = np.random.default_rng(settings.seed)
    fragments: list[Demo] = []
    used = 0
    digest = _source_hash(info.env_args)  # of the demos as they are read here (source_digest), not read again
    try:
        state_size = env.get_state().shape[0]
        for demo in iter_demos(demo_path, obs_keys=[], max_demos=settings.demos):
            if demo.states.ndim != 2 or demo.states.shape[1] != state_size:
                got = "no simulator states" if demo.states.size == 0 else (
                    f"states of {demo.states.shape[-1]} numbers where the task's scene has {state_size}")
                raise LiberoError(
                    f"demo file {demo_path}: demo {used} (counting from 0) holds {got} (a file imported from "
                    "elsewhere?), so its states cannot be shown again to make corrections from; set "
                    "data.corrections_per_demo=0, or collect the task's demos with libero-ll collect"
                )
            used += 1
            _add_demo(digest, demo)
            fragments += demo_corrections(env, demo, rng, settings.per_demo)
    finally:
        env.close()
    out = corrections_path(demo_path)
    with DemoWriter(
        out,
        env_name=info.env_name or spec.problem_name,
        problem_info=info.problem_info,
        bddl_file_name=info.bddl_file_name,
        bddl_file_content=info.bddl_file_content,
        env_args=info.env_args,
        generator=CORRECTIONS_VERSION,
    ) as w:
        for f in fragments:
            w.add(f)
        w.set_attrs({"per_demo": settings.per_demo, "seed": settings.seed, "source_demos": used,
                     "source": demo_path.name, "source_digest": digest.hexdigest()})
    return out, len(fragments), int(sum(f.num_steps for f in fragments))


def _make_one(args: tuple[str, CorrectionSettings]) -> tuple[str, int, int]:
    path, settings = args
    out, fragments, steps = make_corrections(path, settings)
    return str(out), fragments, steps


def ensure_corrections(
    demo_paths: list[str | os.PathLike], settings: CorrectionSettings, workers: int = 1
) -> list[tuple[Path, int, int] | None]:
    """Make the corrections files of `demo_paths` that are missing or were made with other settings.

    Each file is made in a process of its own (at most `workers` at once), so that no scene is built in
    the caller's process. Returns, per demo file, (corrections file, fragments, steps) when it was made
    now and None when it was current already.
    """
    import concurrent.futures as cf

    todo = [i for i, p in enumerate(demo_paths) if not is_current(p, settings)]
    out: list[tuple[Path, int, int] | None] = [None] * len(demo_paths)
    if not todo:
        return out
    ctx = spawn_context()
    with cf.ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))), mp_context=ctx) as pool:
        futures = {pool.submit(_make_one, (str(demo_paths[i]), settings)): i for i in todo}
        for f in cf.as_completed(futures):
            path, fragments, steps = f.result()
            out[futures[f]] = (Path(path), fragments, steps)
    return out
