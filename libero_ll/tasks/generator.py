"""Turn scene templates and behaviours into task files, and check what was written.

The text of a task file depends only on its scene template and its request (no simulator), so a
suite's files can be regenerated and compared byte for byte. The checks (the file loads, the init
predicates hold after a reset, the goal is false at the start) need the simulator and run apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from libero_ll.bddl.spec import And, Predicate, Region, TaskSpec
from libero_ll.bddl.writer import write_string
from libero_ll.errors import LiberoError
from libero_ll.paths import atomic_write_bytes
from libero_ll.tasks.behaviours import BEHAVIOURS, Step, instruction, side_region
from libero_ll.tasks.scenes import SceneTemplate, joint_part, load_scene, parse_scene, scene_names

_PREDICATE_OF_STATE = {"open": "open", "close": "close", "on": "turnon", "off": "turnoff"}


@dataclass
class TaskRequest:
    """One task to generate.

    Args:
        scene: the scene template, with any per-task changes already applied.
        steps: (behaviour name, arguments) in the order the instruction names them.
        name: the task name (file stem); None derives it from the scene and the instruction.
        language: the instruction; None composes it from the behaviours' templates.
        where: where the request was written, for error messages.
        drawn: whether it was drawn at random (a random task that fails its checks is dropped,
            an explicit one is an error).
    """

    scene: SceneTemplate
    steps: list[tuple[str, object]]
    name: str | None = None
    language: str | None = None
    where: str = ""
    drawn: bool = False


@dataclass
class GeneratedTask:
    """A built task: its name, spec and file text."""

    name: str
    spec: TaskSpec
    text: str


def slug(text: str) -> str:
    """A file-name-safe, lower-case version of an instruction ("put the bowl" → "put_the_bowl")."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def build_task(req: TaskRequest) -> GeneratedTask:
    """Build the TaskSpec and the file text of one request.

    Raises:
        LiberoError: an unknown behaviour or argument, steps that disagree about a joint's start, or steps
            that leave a joint in two states (the goal holds at the end, all of it at once).
    """
    scene = req.scene
    steps: list[Step] = []
    for i, (behaviour, args) in enumerate(req.steps):
        steps.append(BEHAVIOURS.get(behaviour).make(scene, args, where=f"{req.where}goal[{i}]: "))

    # Joints at the start: the scene's presets, then what the steps need (unless an earlier step of
    # the same task already brought the joint there, e.g. "open the drawer and put the bowl in it").
    joints = dict(scene.joints)
    needed: dict[str, str] = {}
    done: dict[str, str] = {}
    for step in steps:
        for key, state in step.needs.items():
            if done.get(key) == state:
                continue
            if needed.get(key, state) != state:
                raise LiberoError(f"{req.where}the steps need {key} both {needed[key]} and {state} at the start")
            if scene.task_joints.get(key, state) != state:
                raise LiberoError(f"{req.where}joints: {key} is set to {scene.task_joints[key]}, but the goal needs it "
                                  f"{state} at the start; leave it out of joints, or set it {state}")
            needed[key] = state
        for key, state in step.effects.items():
            if done.get(key, state) != state:
                raise LiberoError(f"{req.where}the steps leave {key} both {done[key]} and {state}, and the goal "
                                  "holds all at once, at the end")
        done.update(step.effects)
    joints.update(needed)

    regions: dict[str, Region] = {}
    init: list[Predicate] = []
    for inst in scene.instances.values():
        p = inst.placement
        if p.ranges:
            r = Region(f"{inst.name}_init_region", scene.workspace, list(p.ranges), list(p.yaw))
            regions[r.full_name] = r
            init.append(Predicate("on", (inst.name, r.full_name)))
        elif p.on is not None:
            init.append(Predicate("on", (inst.name, p.on)))
        else:
            init.append(Predicate("in", (inst.name, p.inside)))
    for key, state in joints.items():
        init.append(Predicate(_PREDICATE_OF_STATE[state], (key,)))
    for step in steps:
        for r in step.regions:
            regions.setdefault(r.full_name, r)

    goal: list[Predicate] = []
    interest: list[str] = []
    for step in steps:
        goal += [g for g in step.goal if g not in goal]
        interest += [i for i in dict.fromkeys(step.interest) if i not in interest and i != scene.workspace]
    language = req.language or instruction(steps)
    name = req.name or f"{scene.name}_{slug(language)}"
    spec = TaskSpec(
        problem_class=scene.problem_class,
        language=" ".join(language.split()),
        regions=regions,
        fixtures={scene.workspace: scene.workspace_category,
                  **{n: i.category for n, i in scene.instances.items() if i.kind == "fixture"}},
        objects={n: i.category for n, i in scene.instances.items() if i.kind == "object"},
        obj_of_interest=interest,
        init=init,
        goal=And(goal),
    )
    try:
        text = write_string(spec)
    except LiberoError as e:  # an instruction or a number a task file cannot hold: said of the task
        raise LiberoError(f"{req.where}{e}") from None
    return GeneratedTask(name, spec, text)


# ---------------------------------------------------------------------- the generator YAML

_SPEC_KEYS = ("suite", "description", "scene", "scenes", "tasks", "count", "behaviours", "objects", "seed")
_TASK_KEYS = ("name", "scene", "language", "goal", "place", "remove", "joints")


@dataclass
class SuitePlan:
    """What a generator YAML asks for: explicit tasks and/or random ones, in the order they are written."""

    suite: str
    requests: list[TaskRequest] = field(default_factory=list)


def _scene_ref(value, where: str, key: str = "scene") -> SceneTemplate:
    """The scene `value` names or describes; its errors start with `where` and `key` (the spec and task, and the
    key the scene is written under)."""
    if isinstance(value, dict):
        return parse_scene(value, where=f"{where}{key}")
    if not isinstance(value, str):
        raise LiberoError(f"{where}{key}: give a scene name or a scene mapping")
    return load_scene(value, where=f"{where}{key}: ")


def _steps(goal, where: str) -> list[tuple[str, object]]:
    if isinstance(goal, dict):
        goal = [goal]
    if not isinstance(goal, list) or not goal:
        raise LiberoError(f"{where}goal: give a list of behaviours, e.g. [{{put_on: {{object: a, target: b}}}}]")
    out = []
    for i, item in enumerate(goal):
        if not isinstance(item, dict) or len(item) != 1:
            raise LiberoError(f"{where}goal[{i}]: each entry is one behaviour: {{name: arguments}}")
        ((behaviour, args),) = item.items()
        if behaviour not in BEHAVIOURS:
            raise LiberoError(f"{where}goal[{i}]: unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS.names())}")
        out.append((behaviour, args))
    return out


def _list(data: dict, key: str, where: str, example: str) -> list:
    """The list under `key` (empty when absent); a LiberoError naming the key when it is something else."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise LiberoError(f"{where}{key}: expected a list such as {example}, got {value!r}")
    return value


def _mapping(data: dict, key: str, where: str, example: str) -> dict | None:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise LiberoError(f"{where}{key}: expected a mapping such as {example}, got {value!r}")
    return value


def _task_name(value, where: str) -> str | None:
    """A task name as given in a spec: it names the task's file, so it is one plain file name."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or value.startswith(".") or any(c in value for c in "/\\"):
        raise LiberoError(
            f"{where}name: expected a plain name (the file <name>.bddl, no folders), got {value!r}"
        )
    return value


def parse_plan(data, where: str = "") -> SuitePlan:
    """A SuitePlan from a generator YAML mapping; LiberoError naming any unknown key, scene or behaviour."""
    from libero_ll.assets.categories import CATEGORIES

    if not isinstance(data, dict):
        raise LiberoError(f"{where}a generator spec is a mapping (keys: {', '.join(_SPEC_KEYS)})")
    for key in data:
        if key not in _SPEC_KEYS:
            raise LiberoError(f"{where}unknown key {key!r}; known: {', '.join(_SPEC_KEYS)}")
    if "scene" in data and "scenes" in data:
        raise LiberoError(f"{where}give 'scene' or 'scenes', not both")
    listed = _list(data, "scenes", where, "[KITCHEN_SCENE1, KITCHEN_SCENE2]")
    if listed:
        scenes = [_scene_ref(s, where, f"scenes[{i}]") for i, s in enumerate(listed)]
    else:
        scenes = [_scene_ref(data["scene"], where)] if "scene" in data else []
    suite = data.get("suite", "generated")
    if not isinstance(suite, str) or not suite.strip():
        raise LiberoError(f"{where}suite: expected a name, got {suite!r}")
    plan = SuitePlan(suite)
    for i, task in enumerate(_list(data, "tasks", where, "[{goal: [{turn_on: flat_stove_1}]}]")):
        at = f"{where}tasks[{i}]: "
        if not isinstance(task, dict):
            raise LiberoError(f"{at}a task is a mapping (keys: {', '.join(_TASK_KEYS)})")
        for key in task:
            if key not in _TASK_KEYS:
                raise LiberoError(f"{at}unknown key {key!r}; known: {', '.join(_TASK_KEYS)}")
        if "goal" not in task:
            raise LiberoError(f"{at}missing key 'goal'")
        name = _task_name(task.get("name"), at)
        language = task.get("language")
        if language is not None and (not isinstance(language, str) or not language.strip()):
            raise LiberoError(f"{at}language: expected a sentence (or no language: the templates' words), "
                              f"got {language!r}")
        if language is not None and ("(" in language or ")" in language):
            raise LiberoError(f"{at}language: {language!r} holds parentheses, which LIBERO's reader cannot read in "
                              ":language; write it without them")
        if "scene" in task:
            scene = _scene_ref(task["scene"], at)
        else:
            # A task named <SCENE>_... uses that scene, as the LIBERO-90 names do.
            prefixed = [s for s in scene_names() if name and str(name).startswith(s + "_")]
            if prefixed:
                scene = load_scene(max(prefixed, key=len))
            elif len(scenes) == 1:
                scene = scenes[0]
            else:
                raise LiberoError(f"{at}say which scene the task uses ('scene' here or one 'scene' for the file)")
        scene = scene.with_changes(
            _mapping(task, "place", at, "{moka_pot_1: {at: [0.0, -0.2]}}"),
            _list(task, "remove", at, "[moka_pot_1]"),
            _mapping(task, "joints", at, "{flat_stove_1: off}"),
            where=at,
        )
        req = TaskRequest(scene, _steps(task["goal"], at), name, task.get("language"), at)
        build_task(req)  # a bad argument or instance is reported now, naming the task
        plan.requests.append(req)
    count = data.get("count", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise LiberoError(f"{where}count: expected a whole number >= 0, got {count!r}")
    if count:
        # None (absent): every behaviour, every category.
        behaviours = (
            None if data.get("behaviours") is None else _list(data, "behaviours", where, "[put_on, turn_on]")
        )
        for b in behaviours or []:
            if b not in BEHAVIOURS:
                raise LiberoError(f"{where}behaviours: unknown behaviour {b!r}; known: {', '.join(BEHAVIOURS.names())}")
        categories = None if data.get("objects") is None else _list(data, "objects", where, "[moka_pot]")
        for c in categories or []:
            if c not in CATEGORIES:
                raise LiberoError(f"{where}objects: unknown category {c!r}; known: {', '.join(CATEGORIES.names())}")
        seed = data.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise LiberoError(f"{where}seed: expected a whole number >= 0, got {seed!r}")
        # Drawn without repetition: not the spec's own tasks either.
        explicit = {_identity(r) for r in plan.requests}
        try:
            plan.requests += random_requests(count, seed, scenes or None, behaviours, categories, exclude=explicit)
        except LiberoError as e:
            left_out = " (the spec's own tasks left out)" if explicit else ""
            raise LiberoError(f"{where}count: {e}{left_out}") from None
    elif "behaviours" in data or "objects" in data:
        raise LiberoError(f"{where}'behaviours' and 'objects' choose random tasks: give 'count' too")
    if not plan.requests:
        raise LiberoError(f"{where}nothing to generate: give 'tasks' or 'count'")
    return plan


def load_plan(path: str | Path) -> SuitePlan:
    """Read a generator YAML file (see docs/tasks.md)."""
    import yaml

    from libero_ll.tasks.scenes import load_yaml

    path = Path(path)
    if path.is_dir():
        raise LiberoError(f"{path}: a folder, not a generator YAML file")
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LiberoError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise LiberoError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise LiberoError(f"{where}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    return parse_plan(data, where=f"{path}: ")


# ---------------------------------------------------------------------- random tasks

# Categories that are moved around but never picked up and put somewhere by a random task.
_NOT_CARRIED = ("basket", "wooden_tray", "plate", "small_plate")
# Too tall to lie in a drawer or stand in a compartment of a random task.
_TALL = ("wine_bottle", "ketchup", "bbq_sauce", "salad_dressing", "new_salad_dressing", "milk", "orange_juice",
         "chefmate_8_frypan", "moka_pot", "black_book", "yellow_book")
_FLAT_SUPPORTS = ("plate", "small_plate")
_BOWLS = ("akita_black_bowl", "white_bowl", "small_akita_black_bowl", "small_white_bowl")
_CABINETS = ("wooden_cabinet", "white_cabinet", "small_wooden_cabinet", "small_white_cabinet")
_SMALL = ("butter", "cream_cheese", "chocolate_pudding", "alphabet_soup", "tomato_sauce", "cookies")
_MUGS = ("porcelain_mug", "red_coffee_mug", "white_yellow_mug")


def _candidates(scene: SceneTemplate, behaviours, categories) -> list[list[tuple[str, object]]]:
    """Every task (as steps) a random draw may pick in a scene, in a fixed order."""
    cat = {n: i.category for n, i in scene.instances.items()}
    on_table = [n for n, i in scene.instances.items() if i.placement.ranges]
    carried = [n for n in scene.objects() if cat[n] not in _NOT_CARRIED and n in on_table
               and (categories is None or cat[n] in categories)]
    labels = [i.label for i in scene.instances.values()]
    # Two instances with the same name cannot be told apart by an instruction.
    carried = [n for n in carried if labels.count(scene.instances[n].label) == 1]
    out: list[list[tuple[str, object]]] = []
    for o in carried:
        c = cat[o]
        for t in scene.objects():
            if t == o or labels.count(scene.instances[t].label) > 1:
                continue
            if cat[t] in _FLAT_SUPPORTS and (c in _BOWLS or c in _MUGS or c in _SMALL):
                out.append([("put_on", {"object": o, "target": t})])
            if cat[t] in _BOWLS and c in ("butter", "cream_cheese", "chocolate_pudding") and t in on_table:
                out.append([("put_on", {"object": o, "target": t})])
            if cat[t] in ("basket", "wooden_tray") and c not in ("chefmate_8_frypan",):
                out.append([("put_in", {"object": o, "target": t})])
        for f in scene.fixtures():
            fc = cat[f]
            if fc == "flat_stove" and c in ("moka_pot", "chefmate_8_frypan", *_BOWLS):
                out.append([("put_on", {"object": o, "target": f})])
                if scene.joints.get(f) != "on":
                    out.append([("turn_on", f), ("put_on", {"object": o, "target": f})])
            if fc in _CABINETS and c not in _TALL:
                out.append([("put_on", {"object": o, "target": f})])
                for d in ("top", "middle", "bottom"):
                    region = f"{f}_{d}_region"
                    if scene.joints.get(region) == "open":
                        out.append([("put_in", {"object": o, "target": region}), ("close", region)])
                    elif d == "top":
                        out.append([("open", region), ("put_in", {"object": o, "target": region})])
            if fc in ("microwave", "small_microwave") and c in _MUGS + _BOWLS:
                out.append([("put_in", {"object": o, "target": f})])
            # A bowl is held by its wall: the scripted expert cannot yet slide one into a shelf's layer
            # (its hand's housing meets the board above; KITCHEN_SCENE9 white bowl: 0/5). Until it can,
            # random tasks do not ask for it.
            if fc == "wooden_two_layer_shelf" and c not in ("wine_bottle", *_BOWLS):
                out.append([("put_on", {"object": o, "target": f"{f}_top_region"})])
            if fc == "wine_rack" and c == "wine_bottle":
                out.append([("put_on", {"object": o, "target": f})])
            if fc == "desk_caddy" and c in _SMALL + ("black_book", "yellow_book"):
                for comp in ("front", "back", "left", "right"):
                    out.append([("put_in", {"object": o, "target": f"{f}_{comp}_contain_region"})])
        for ref in on_table:
            if ref == o or labels.count(scene.instances[ref].label) > 1:
                continue
            for side in ("left", "right", "front", "back"):
                if _side_is_free(scene, o, ref, side):
                    out.append([("place_next_to", {"object": o, "side": side, "reference": ref})])
    for f in scene.fixtures():
        for key in [f] + [f"{f}_{d}_region" for d in ("top", "middle", "bottom")]:
            if key != f and scene.split_region(key) is None:
                continue
            part = joint_part(scene, key)
            if part is None:
                continue
            now = scene.joints.get(key)
            if part.joint.kind == "knob":
                out.append([("turn_off", f)] if now == "on" else [("turn_on", f)])
            else:
                out.append([("close", key)] if now == "open" else [("open", key)])
    bowls = [n for n in carried if cat[n] in _BOWLS]
    for a in bowls:
        for b in bowls:
            if a != b:
                out.append([("stack", {"object": a, "target": b})])
    if behaviours is not None:
        out = [c for c in out if all(b in behaviours for b, _ in c)]
    if categories is not None:
        out = [c for c in out if any(isinstance(a, dict) and a.get("object") in carried for _, a in c)]
    return out


def _footprint(scene: SceneTemplate, inst: str) -> tuple[float, float, float, float] | None:
    p = scene.instances[inst].placement
    if not p.ranges:
        return None
    import math

    hx, hy = scene.model(inst).half_size[:2]
    yaw = p.mean_yaw()
    ex = abs(math.cos(yaw)) * hx + abs(math.sin(yaw)) * hy
    ey = abs(math.sin(yaw)) * hx + abs(math.cos(yaw)) * hy
    x0, y0, x1, y1 = p.ranges[0]
    return (x0 - ex, y0 - ey, x1 + ex, y1 + ey)


def _side_is_free(scene: SceneTemplate, obj: str, ref: str, side: str) -> bool:
    """Whether a side region of `ref` is in reach, clear of every other start, and not where `obj` starts."""
    try:
        (x0, y0, x1, y1) = side_region(scene, ref, side).ranges[0]
    except LiberoError:
        return False
    rx0, ry0, rx1, ry1 = scene.reach()
    if x0 < rx0 - 0.05 or x1 > rx1 + 0.05 or y0 < ry0 - 0.05 or y1 > ry1 + 0.05:
        return False
    # The object needs room around its centre: grow the region by its half size.
    ohx, ohy = scene.model(obj).half_size[:2]
    gx0, gy0, gx1, gy1 = x0 - ohx, y0 - ohy, x1 + ohx, y1 + ohy
    for other in scene.instances:
        fp = _footprint(scene, other)
        if fp is None:
            continue
        if other == obj:
            cx, cy = scene.instances[obj].placement.centre()
            if x0 - 0.02 <= cx <= x1 + 0.02 and y0 - 0.02 <= cy <= y1 + 0.02:
                return False
            continue
        # Open drawers and doors sweep in front of their fixture: keep that strip clear as well.
        if scene.instances[other].kind == "fixture" and scene.model(other).parts:
            fp = (fp[0] - 0.2, fp[1], fp[2], fp[3])
        if gx0 < fp[2] and fp[0] < gx1 and gy0 < fp[3] and fp[1] < gy1:
            return False
    return True


def _identity(req: TaskRequest) -> str:
    """What makes two tasks the same task: the scene template and the goal, whatever their names and starts."""
    return f"{req.scene.name}: {build_task(req).spec.goal!r}"


def random_requests(count: int, seed: int = 0, scenes: list[SceneTemplate] | None = None,
                    behaviours=None, categories=None, exclude=frozenset()) -> list[TaskRequest]:
    """`count` distinct random tasks drawn from the scenes (all shipped templates when None).

    Args:
        count: how many tasks.
        seed: the draw's seed; the same seed gives the same tasks.
        scenes: the scene templates to draw from.
        behaviours: behaviour names allowed (None: all).
        categories: object categories allowed as the thing moved (None: all).
        exclude: tasks not to draw (`_identity` of each): a spec's explicit tasks.

    Raises:
        LiberoError: fewer distinct tasks exist than asked for.
    """
    if not isinstance(seed, int) or seed < 0:
        raise LiberoError(f"the seed of random tasks must be a whole number >= 0, got {seed!r}")
    if scenes is None:
        scenes = [load_scene(n) for n in scene_names()]
    pool: list[tuple[SceneTemplate, list]] = []
    for scene in scenes:
        pool += [(scene, steps) for steps in _candidates(scene, behaviours, categories)]
    if exclude:
        pool = [(scene, steps) for scene, steps in pool
                if _identity(TaskRequest(scene, steps)) not in exclude]
    if count > len(pool):
        raise LiberoError(f"only {len(pool)} distinct tasks can be drawn from these scenes and behaviours; {count} asked for")
    rng = np.random.default_rng(seed)
    picks = sorted(rng.choice(len(pool), size=count, replace=False).tolist())
    out, names = [], set()
    for k in picks:
        scene, steps = pool[k]
        req = TaskRequest(scene, steps, where=f"random task {k}: ", drawn=True)
        name = build_task(req).name
        # Two scenes can word two tasks alike; keep names unique.
        base, n = name, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.add(name)
        req.name = name
        out.append(req)
    return out


# ---------------------------------------------------------------------- writing and checking


def crowded_starts(spec: TaskSpec, margin: float = 0.005) -> list[str]:
    """Pairs of instances whose init ranges on the workspace could put them on top of each other.

    Each start is bounded by its range grown by the instance's half extents at the range's yaws;
    two bounds that overlap by more than `margin` (metres) on both axes are reported. The sampler
    would retry such starts and can fail, so shipped scenes keep this list empty.
    """
    import math

    from libero_ll.assets.categories import get_model

    instances = spec.instances()
    boxes = {}
    for p in spec.init:
        region = spec.regions.get(p.args[-1]) if p.name == "on" else None
        if region is None or not region.ranges:
            continue
        hx, hy = get_model(instances[p.args[0]]).half_size[:2]
        yaws = [a for lo, hi in (region.yaw_rotation or [(0.0, 0.0)]) for a in (lo, hi, (lo + hi) / 2)]
        ex = max(abs(math.cos(a)) * hx + abs(math.sin(a)) * hy for a in yaws)
        ey = max(abs(math.sin(a)) * hx + abs(math.cos(a)) * hy for a in yaws)
        x0 = min(r[0] for r in region.ranges) - ex
        y0 = min(r[1] for r in region.ranges) - ey
        x1 = max(r[2] for r in region.ranges) + ex
        y1 = max(r[3] for r in region.ranges) + ey
        boxes[p.args[0]] = (x0, y0, x1, y1)
    out = []
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            A, B = boxes[a], boxes[b]
            ox = min(A[2], B[2]) - max(A[0], B[0])
            oy = min(A[3], B[3]) - max(A[1], B[1])
            if ox > margin and oy > margin:
                out.append(f"{a} and {b} may overlap by {ox:.3f} x {oy:.3f} m")
    return out


def build_plan(plan: SuitePlan) -> list[GeneratedTask]:
    """Build every task of a plan; LiberoError on a duplicate task name."""
    tasks = [build_task(r) for r in plan.requests]
    seen: dict[str, TaskRequest] = {}
    for t, r in zip(tasks, plan.requests):
        if t.name in seen:
            first = seen[t.name].where.rstrip(": ") or "one"
            raise LiberoError(f"{r.where}suite {plan.suite}: this task and {first} are both named {t.name!r}; "
                              "give one of them a name")
        seen[t.name] = r
    return tasks


def write_text(path: Path, text: str) -> None:
    """Write a file atomically (a temporary name in the same folder, then renamed into place)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def write_tasks(tasks: list[GeneratedTask], out_dir: str | Path) -> list[Path]:
    """Write each task as ``<out_dir>/<name>.bddl``; files whose text is unchanged are left alone."""
    out_dir = Path(out_dir)
    paths = []
    for t in tasks:
        path = out_dir / f"{t.name}.bddl"
        if not path.exists() or path.read_text(encoding="utf-8") != t.text:
            write_text(path, t.text)
        paths.append(path)
    return paths


def check_task(task_file: str | Path, seeds=(0, 1, 2)) -> list[str]:
    """Problems of a written task in the simulator: it must load, its init predicates must hold after
    each reset, and its goal must be false there. An empty list means the task passes.

    A start that needed placement's fallback for regions too tight for our footprints is a problem
    too: generated tasks are made for our models and must fit them.

    Args:
        task_file: the .bddl file.
        seeds: reset seeds to try.
    """
    import warnings

    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.placement import PlacementWarning

    try:
        env = LiberoEnv(task_file, EnvConfig(render=False))
    except LiberoError as e:
        return [f"does not load: {e}"]
    problems = []
    try:
        for seed in seeds:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", PlacementWarning)
                    env.reset(seed=seed)
            except LiberoError as e:
                problems.append(f"reset(seed={seed}) failed: {e}")
                continue
            problems += [f"seed {seed}: {w.message}" for w in caught if issubclass(w.category, PlacementWarning)]
            bad = [text for text, holds in env.predicate_values(env.spec.init) if not holds]
            if bad:
                problems.append(f"seed {seed}: init predicates do not hold: {', '.join(bad)}")
            if env.check_goal():
                problems.append(f"seed {seed}: the goal already holds at the start")
    finally:
        env.close()
    return problems
