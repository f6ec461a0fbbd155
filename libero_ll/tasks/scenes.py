"""Scene templates: which fixtures and objects a scene holds and where each may start.

A template is plain data, one YAML file per scene under ``libero_ll/tasks/scenes/`` (see
docs/tasks.md for the format). Positions are metres in the workspace frame (origin at the centre
of the table top or of the floor patch; +x away from the robot, +y to the robot's left); yaws are
degrees in the files and radians here.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path

from libero_ll.errors import LiberoError

SCENE_DIR = Path(__file__).resolve().with_name("scenes")

# Half-width of an init range built from `at` when no `spread` is given, metres.
DEFAULT_SPREAD = {"fixture": 0.005, "object": 0.01}

# Where the robot can work, per scene family: (x_min, y_min, x_max, y_max) in the workspace frame.
TABLE_REACH = (-0.35, -0.35, 0.15, 0.35)
FLOOR_REACH = (-0.3, -0.3, 0.1, 0.3)

# How a category is called in an instruction when the scene gives no name.
DEFAULT_LABELS = {
    "akita_black_bowl": "black bowl",
    "small_akita_black_bowl": "black bowl",
    "small_white_bowl": "white bowl",
    "glazed_rim_porcelain_ramekin": "ramekin",
    "chefmate_8_frypan": "frying pan",
    "porcelain_mug": "white mug",
    "red_coffee_mug": "red mug",
    "white_yellow_mug": "yellow and white mug",
    "cookies": "cookie box",
    "wooden_cabinet": "cabinet",
    "white_cabinet": "cabinet",
    "small_wooden_cabinet": "cabinet",
    "small_white_cabinet": "cabinet",
    "small_plate": "plate",
    "small_microwave": "microwave",
    "flat_stove": "stove",
    "wooden_two_layer_shelf": "shelf",
    "desk_caddy": "caddy",
    "wooden_tray": "tray",
    "new_salad_dressing": "salad dressing",
}

_INSTANCE_KEYS = ("category", "at", "spread", "range", "yaw", "on", "in", "name")
_SCENE_KEYS = ("name", "problem_class", "fixtures", "objects", "joints", "labels", "description")
JOINT_STATES = ("open", "close", "on", "off")


@dataclass
class Placement:
    """Where an instance starts: a range on the workspace, or on / in another instance or region.

    Args:
        ranges: boxes (x_min, y_min, x_max, y_max) on the workspace, metres; empty when `on`/`inside`.
        yaw: (yaw_min, yaw_max) pairs, radians; empty for no rotation.
        on: an instance or region the instance is stacked on.
        inside: a region (drawer, container, compartment) the instance starts in.
    """

    ranges: list[tuple[float, float, float, float]] = field(default_factory=list)
    yaw: list[tuple[float, float]] = field(default_factory=list)
    on: str | None = None
    inside: str | None = None

    def centre(self) -> tuple[float, float] | None:
        """Centre of the first range (where the instance starts on average), or None when not on the workspace."""
        if not self.ranges:
            return None
        x0, y0, x1, y1 = self.ranges[0]
        return ((x0 + x1) / 2, (y0 + y1) / 2)

    def mean_yaw(self) -> float:
        return 0.0 if not self.yaw else (self.yaw[0][0] + self.yaw[0][1]) / 2


@dataclass
class Instance:
    """One fixture or object of a scene: category, start placement and the name an instruction uses."""

    name: str
    category: str
    kind: str
    placement: Placement
    label: str


@dataclass
class SceneTemplate:
    """A scene: its family, its instances (fixtures first, then objects) and its preset joints.

    Args:
        name: e.g. ``KITCHEN_SCENE3``.
        problem_class: the scene family.
        workspace: instance name of the table or floor; workspace_category its category.
        instances: instance name → Instance, in the order the task file lists them.
        joints: drawer region / microwave / stove → "open", "close", "on" or "off" at the start.
        labels: display names of regions, overriding the defaults (e.g. "cabinet shelf").
        task_joints: the joints a task's own changes set (`with_changes`), which its goal may not override as
            it overrides the scene's presets.
    """

    name: str
    problem_class: str
    workspace: str
    workspace_category: str
    instances: dict[str, Instance]
    joints: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    task_joints: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ lookups

    def fixtures(self) -> list[str]:
        return [n for n, i in self.instances.items() if i.kind == "fixture"]

    def objects(self) -> list[str]:
        return [n for n, i in self.instances.items() if i.kind == "object"]

    def model(self, inst: str):
        from libero_ll.assets.categories import get_model

        return get_model(self.instances[inst].category)

    def reach(self) -> tuple[float, float, float, float]:
        return FLOOR_REACH if self.problem_class == "LIBERO_Floor_Manipulation" else TABLE_REACH

    def split_region(self, ref: str) -> tuple[str, str] | None:
        """(owner instance, region name) of an affordance region's full name, or None."""
        best = None
        for inst in self.instances:
            if ref.startswith(inst + "_") and (best is None or len(inst) > len(best)):
                best = inst
        if best is None:
            return None
        region = ref[len(best) + 1 :]
        names = [r.name for r in self.model(best).all_regions]
        return (best, region) if region in names else None

    def require(self, ref: str, what: str, kinds=("object", "fixture")) -> Instance:
        """The instance `ref`, checked to be of one of `kinds`; a LiberoError naming it otherwise."""
        inst = self.instances.get(ref)
        if inst is None:
            known = ", ".join(self.instances)
            raise LiberoError(f"scene {self.name}: {what} {ref!r} is not an instance of the scene; known: {known}")
        if inst.kind not in kinds:
            raise LiberoError(f"scene {self.name}: {what} {ref!r} is a {inst.kind}, expected a {' or '.join(kinds)}")
        return inst

    def phrase(self, ref: str) -> str:
        """The noun phrase an instruction uses for an instance or region ("the black bowl")."""
        if ref in self.labels:
            return self.labels[ref]
        if ref in self.instances:
            return f"the {self.instances[ref].label}"
        split = self.split_region(ref)
        if split is None:
            raise LiberoError(f"scene {self.name}: {ref!r} is neither an instance nor a region of the scene")
        owner, region = split
        owner_phrase = self.phrase(owner)
        category = self.instances[owner].category
        if region == "top_side":
            return f"top of {owner_phrase}"
        if region in ("top_region", "middle_region", "bottom_region"):
            if category == "wooden_two_layer_shelf":
                return f"the {region[:-7]} layer of {owner_phrase}"
            if category == "wine_rack":
                return owner_phrase
            return f"the {region[:-7]} drawer of {owner_phrase}"
        if region.endswith("_contain_region") and category == "desk_caddy":
            return f"the {region[: -len('_contain_region')]} compartment of {owner_phrase}"
        return owner_phrase

    def _require_at(self, ref: str, where: str, what: str) -> Instance:
        """`require`, its message after `where` (the spec file and task), as the behaviours' are."""
        try:
            return self.require(ref, what)
        except LiberoError as e:
            raise LiberoError(f"{where}{e}") from None

    def with_changes(self, place: dict | None = None, remove=None, joints: dict | None = None,
                     where: str = "") -> "SceneTemplate":
        """A copy with some instances placed elsewhere, some removed, and joint presets changed.

        Args:
            place: instance → placement mapping (the keys of an instance entry but `category`).
            remove: instance names to leave out.
            joints: drawer region / instance → "open", "close", "on" or "off".
            where: prefix for error messages (the task being built).
        """
        out = copy.deepcopy(self)
        for name in remove or []:
            self._require_at(name, where, "remove:")
            del out.instances[name]
            # The scene's presets of the removed instance's drawers, door or knob go with it.
            for key in [k for k in out.joints if k == name or (self.split_region(k) or ("",))[0] == name]:
                del out.joints[key]
        for name, entry in (place or {}).items():
            inst = self._require_at(name, where, "place:")
            if not isinstance(entry, dict):
                raise LiberoError(f"{where}place: {name}: expected a mapping such as {{at: [x, y]}}")
            if "category" in entry:
                raise LiberoError(f"{where}place: {name}: a placement cannot change the category")
            out.instances[name] = _parse_instance(
                name, {"category": inst.category, "name": inst.label, **entry}, inst.kind, f"{where}place: "
            )
        for key, state in (joints or {}).items():
            out.joints[key] = out.task_joints[key] = _joint_state(state, f"{where}joints: {key}")
        out.check(where)
        return out

    def check(self, where: str = "") -> None:
        """Check that every reference (on/in targets, joint keys) names something of the scene, and that no
        instance stands on or in itself, directly or through others.

        `where` prefixes the messages (a task's changes to the scene); the scene's name by default.
        """
        where = where or f"scene {self.name}: "
        below: dict[str, str] = {}  # instance -> the instance it stands on or in
        for inst in self.instances.values():
            p = inst.placement
            if p.on is not None and p.on not in self.instances and self.split_region(p.on) is None:
                raise LiberoError(f"{where}{inst.name}: 'on: {p.on}' names nothing in the scene")
            if p.inside is not None and self.split_region(p.inside) is None:
                raise LiberoError(f"{where}{inst.name}: 'in: {p.inside}' is not a region of the scene")
            ref = p.on if p.on is not None else p.inside
            if ref is not None:
                below[inst.name] = ref if ref in self.instances else self.split_region(ref)[0]
        for name in below:
            chain = [name]
            while chain[-1] in below and below[chain[-1]] not in chain:
                chain.append(below[chain[-1]])
            if chain[-1] in below and below[chain[-1]] == name:
                loop = " -> ".join(chain + [name])
                raise LiberoError(f"{where}{name}: it would stand on or in itself ({loop})")
        for key in self.joints:
            if joint_part(self, key) is None:
                raise LiberoError(f"{where}joints: {key!r} has no drawer, door or knob")


def joint_part(scene: SceneTemplate, key: str):
    """The moving part (drawer, door, knob) an instance or drawer-region name controls, or None."""
    if key in scene.instances:
        return scene.model(key).control("")
    split = scene.split_region(key)
    if split is None:
        return None
    owner, region = split
    return scene.model(owner).control(region)


def _joint_state(value, where: str) -> str:
    state = str(value).lower()
    if state not in JOINT_STATES:
        raise LiberoError(f"{where}: unknown joint state {value!r}; known: {', '.join(JOINT_STATES)}")
    return state


def _numbers(value, n: int, where: str) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != n or not all(isinstance(v, (int, float)) for v in value):
        raise LiberoError(f"{where}: expected {n} numbers, got {value!r}")
    return tuple(float(v) for v in value)


def _yaw(value, where: str) -> list[tuple[float, float]]:
    """Yaw in degrees (one number or [min, max]) → [(min, max)] in radians."""
    if value is None:
        return []
    if isinstance(value, (int, float)):
        lo = hi = float(value)
    else:
        lo, hi = _numbers(value, 2, where)
    if lo > hi:
        raise LiberoError(f"{where}: yaw range {lo} > {hi}")
    return [(math.radians(lo), math.radians(hi))]


def _parse_instance(name: str, entry, kind: str, where: str) -> Instance:
    from libero_ll.assets.categories import CATEGORIES

    at = f"{where}{name}"
    if not isinstance(entry, dict):
        raise LiberoError(f"{at}: expected a mapping with a category and a placement")
    for key in entry:
        if key not in _INSTANCE_KEYS:
            raise LiberoError(f"{at}: unknown key {key!r}; known: {', '.join(_INSTANCE_KEYS)}")
    category = entry.get("category")
    if category is None:
        raise LiberoError(f"{at}: missing key 'category'")
    if category not in CATEGORIES:
        raise LiberoError(f"{at}: unknown category {category!r}; known: {', '.join(CATEGORIES.names())}")
    model_kind = CATEGORIES.get(category).kind
    if model_kind != kind:
        raise LiberoError(f"{at}: category {category!r} is a {model_kind}, listed under {kind}s")
    given = [k for k in ("at", "range", "on", "in") if k in entry]
    if len(given) != 1:
        raise LiberoError(f"{at}: give exactly one of at, range, on, in (got {', '.join(given) or 'none'})")
    placement = Placement(yaw=_yaw(entry.get("yaw"), f"{at}: yaw"))
    if "at" in entry:
        x, y = _numbers(entry["at"], 2, f"{at}: at")
        s = entry.get("spread", DEFAULT_SPREAD[kind])
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s < math.inf:
            raise LiberoError(f"{at}: spread: expected a number of metres, 0 or more, got {s!r}")
        s = float(s)
        # Rounded so that task files hold short numbers (and stay byte-stable).
        placement.ranges = [tuple(round(v, 4) for v in (x - s, y - s, x + s, y + s))]
    elif "range" in entry:
        r = _numbers(entry["range"], 4, f"{at}: range")
        if r[0] > r[2] or r[1] > r[3]:
            raise LiberoError(f"{at}: range {list(r)} has a minimum above its maximum")
        placement.ranges = [r]
    elif "on" in entry:
        placement.on = str(entry["on"])
    else:
        placement.inside = str(entry["in"])
    from libero_ll.bddl.validate import MAX_RANGE

    if placement.ranges and any(abs(v) > MAX_RANGE for v in placement.ranges[0]):
        # As a task file's reader refuses such a region: said here, before a file is written.
        key = "at" if "at" in entry else "range"
        spread = f" (spread {entry['spread']})" if "spread" in entry else ""
        raise LiberoError(
            f"{at}: {key}: {entry[key]}{spread} reaches past {MAX_RANGE:g} m from the workspace's centre; a place "
            "lies within that (the robot reaches about 0.85 m from its base)"
        )
    if "spread" in entry and "at" not in entry:
        raise LiberoError(f"{at}: 'spread' goes with 'at'")
    if kind == "fixture" and not placement.ranges:
        raise LiberoError(f"{at}: a fixture stands on the workspace: give 'at' or 'range'")
    label = str(entry.get("name") or DEFAULT_LABELS.get(category, category.replace("_", " ")))
    return Instance(name, category, kind, placement, label)


def parse_scene(data, where: str = "scene") -> SceneTemplate:
    """A SceneTemplate from its YAML mapping; LiberoError naming the bad key, category or reference."""
    from libero_ll.assets.categories import ARENAS

    if not isinstance(data, dict):
        raise LiberoError(f"{where}: a scene is a mapping with name, problem_class, fixtures, objects")
    for key in data:
        if key not in _SCENE_KEYS:
            raise LiberoError(f"{where}: unknown key {key!r}; known: {', '.join(_SCENE_KEYS)}")
    for key in ("name", "problem_class"):
        if key not in data:
            raise LiberoError(f"{where}: missing key {key!r}")
    name = str(data["name"])
    where = f"{where} {name}"
    problem_class = data["problem_class"]
    if problem_class not in ARENAS:
        raise LiberoError(f"{where}: unknown problem_class {problem_class!r}; known: {', '.join(ARENAS.names())}")
    arena = ARENAS.get(problem_class)
    instances: dict[str, Instance] = {}
    for kind in ("fixture", "object"):
        section = data.get(kind + "s") or {}
        if not isinstance(section, dict):
            raise LiberoError(f"{where}: {kind}s: expected a mapping instance → entry")
        for inst, entry in section.items():
            if inst in instances or inst == arena.workspace:
                raise LiberoError(f"{where}: instance {inst!r} is declared twice")
            instances[inst] = _parse_instance(str(inst), entry, kind, f"{where}: {kind}s: ")
    joints = {str(k): _joint_state(v, f"{where}: joints: {k}") for k, v in (data.get("joints") or {}).items()}
    labels = {str(k): str(v) for k, v in (data.get("labels") or {}).items()}
    scene = SceneTemplate(name, problem_class, arena.workspace, arena.workspace_category, instances, joints, labels)
    scene.check()
    return scene


def load_yaml(text: str):
    """Parse YAML text where only true/false are booleans: `on`, `off`, `yes` and `no` stay words
    (scenes say ``on: plate_1`` and ``flat_stove_1: on``)."""
    import re

    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))

    def mapping(loader, node, deep=False):
        # A key written twice is an error (PyYAML keeps the last silently: a second `scene:` changed the task).
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    _Loader.construct_mapping = mapping
    return yaml.load(text, Loader=_Loader)


def scene_names() -> list[str]:
    """Names of the scene templates shipped under libero_ll/tasks/scenes/, sorted."""
    return sorted(_scene_files())


def _scene_files() -> dict[str, Path]:
    out = {}
    for path in sorted(SCENE_DIR.glob("*.yaml")):
        data = load_yaml(path.read_text(encoding="utf-8"))
        out[str(data.get("name", path.stem))] = path
    return out


_CACHE: dict[str, SceneTemplate] = {}


def load_scene(name: str, where: str = "") -> SceneTemplate:
    """The shipped scene template `name` (e.g. ``KITCHEN_SCENE3``); LiberoError listing the known ones.

    `where` prefixes the error for an unknown name (the spec file and the key that names the scene).
    """
    if name not in _CACHE:
        files = _scene_files()
        if name not in files:
            raise LiberoError(f"{where}unknown scene {name!r}; known: {', '.join(sorted(files))}")
        _CACHE[name] = parse_scene(load_yaml(files[name].read_text(encoding="utf-8")), where=str(files[name].name))
    return copy.deepcopy(_CACHE[name])
