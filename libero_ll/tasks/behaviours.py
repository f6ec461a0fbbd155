"""Behaviours: what a task asks for, each as a goal builder plus a language template.

A behaviour takes named arguments (instances and regions of a scene) and returns a `Step`: the goal
atoms, the joint states the start must have for the goal to be false (a drawer to close starts
open), goal regions it needs (e.g. "to the right of the plate") and the instruction phrase. A task
is one step or several joined by "and" ("put the bowl in the drawer and close it").
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from libero_ll.bddl.spec import Predicate, Region
from libero_ll.errors import LiberoError
from libero_ll.registry import Registry
from libero_ll.tasks.scenes import SceneTemplate, joint_part

SIDES = ("left", "right", "front", "back")
# Unit direction of each side in the workspace frame, as seen by the robot (it stands at -x).
SIDE_DIRECTION = {"left": (0.0, 1.0), "right": (0.0, -1.0), "front": (-1.0, 0.0), "back": (1.0, 0.0)}
# A side region starts this far from the reference's footprint, reaches this far, and is this wide, metres.
SIDE_GAP = 0.03
SIDE_DEPTH = 0.10
SIDE_HALF_WIDTH = 0.06

# The default surface of a fixture for "put X on <fixture>".
FIXTURE_SURFACE = {
    "flat_stove": "cook_region",
    "wine_rack": "top_region",
    "wooden_cabinet": "top_side",
    "white_cabinet": "top_side",
    "small_wooden_cabinet": "top_side",
    "small_white_cabinet": "top_side",
    "wooden_two_layer_shelf": "top_side",
    "microwave": "top_side",
    "small_microwave": "top_side",
}
# The container region of an instance for "put X in <instance>".
CONTAINER_REGION = {"basket": "contain_region", "wooden_tray": "contain_region", "microwave": "heating_region",
                    "small_microwave": "heating_region"}


@dataclass
class Step:
    """One behaviour instantiated in a scene.

    Args:
        template: the instruction phrase with ``{key}`` slots for noun phrases.
        refs: slot → noun phrase (a slot may be replaced by "it" when an earlier step named it).
        goal: atoms that must all hold at the end.
        needs: drawer region / instance → joint state ("open", "close", "on", "off") at the start.
        effects: joint states this step leaves behind (so that a later step need not ask for them).
        regions: goal regions on the workspace this step introduces.
        interest: instances the step is about, for obj_of_interest.
    """

    template: str
    refs: dict[str, str]
    goal: list[Predicate]
    needs: dict[str, str] = field(default_factory=dict)
    effects: dict[str, str] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    interest: list[str] = field(default_factory=list)


@dataclass
class Behaviour:
    """A registered behaviour: its builder and the argument names it takes (in order)."""

    name: str
    build: Callable[..., Step]
    params: tuple[str, ...]
    doc: str

    def make(self, scene: SceneTemplate, args, where: str = "") -> Step:
        """Build the step from YAML arguments: a mapping of params, or a bare value for a one-argument behaviour."""
        if not isinstance(args, dict):
            if len(self.params) != 1:
                raise LiberoError(f"{where}{self.name}: give the arguments {', '.join(self.params)} as a mapping")
            args = {self.params[0]: args}
        for key in args:
            if key not in self.params:
                raise LiberoError(f"{where}{self.name}: unknown argument {key!r}; known: {', '.join(self.params)}")
        missing = [p for p in self.params if p not in args]
        if missing:
            raise LiberoError(f"{where}{self.name}: missing argument(s) {', '.join(missing)}")
        try:
            return self.build(scene, **args)
        except LiberoError as e:
            raise LiberoError(f"{where}{self.name}: {e}") from None


BEHAVIOURS: Registry[Behaviour] = Registry("behaviour")


def register_behaviour(name: str):
    """Decorator: record a step builder ``fn(scene, **args) -> Step`` as behaviour `name`."""

    def deco(fn):
        params = tuple(list(inspect.signature(fn).parameters)[1:])
        BEHAVIOURS.register(name)(Behaviour(name, fn, params, (fn.__doc__ or "").strip().splitlines()[0]))
        return fn

    return deco


# ---------------------------------------------------------------------- resolving targets


def _object(scene: SceneTemplate, ref: str, what: str = "object") -> str:
    scene.require(ref, what, kinds=("object",))
    return ref


def _owner(scene: SceneTemplate, ref: str) -> str:
    split = scene.split_region(ref)
    return split[0] if split else ref


def _not_onto_itself(scene: SceneTemplate, objects: list[str], where: str, into: str) -> None:
    """LiberoError when one object is named twice, or is the thing (or the owner of the region) it goes `into`."""
    if len(set(objects)) < len(objects):
        raise LiberoError(f"objects: give two different objects, got {objects[0]!r} twice")
    for o in objects:
        if o == _owner(scene, where):
            raise LiberoError(f"an object cannot be put {into} itself: object and target are both {o!r}")


def surface(scene: SceneTemplate, target: str) -> str:
    """The second argument of On for "on <target>": an object, a region, or a fixture's default surface."""
    if target in scene.instances:
        inst = scene.instances[target]
        if inst.kind == "object":
            return target
        region = FIXTURE_SURFACE.get(inst.category)
        if region is None:
            raise LiberoError(f"a {inst.category} has no surface to put things on; name one of its regions")
        return f"{target}_{region}"
    if scene.split_region(target) is None:
        scene.require(target, "target")
    return target


def container(scene: SceneTemplate, target: str) -> str:
    """The region for "in <target>": a region as given, or an instance's container region."""
    if target in scene.instances:
        inst = scene.instances[target]
        region = CONTAINER_REGION.get(inst.category)
        if region is None:
            raise LiberoError(f"{target!r} ({inst.category}) is not a container; name one of its regions")
        return f"{target}_{region}"
    if scene.split_region(target) is None:
        raise LiberoError(f"{target!r} is neither a container instance nor a region of the scene")
    return target


def _door_key(scene: SceneTemplate, region: str) -> tuple[str, str] | None:
    """(joint key, kind) that must be open for things to go into `region`, or None (always open)."""
    split = scene.split_region(region)
    if split is None:
        return None
    owner, name = split
    part = scene.model(owner).control(name)
    if part is None:
        return None
    if part.joint.kind == "drawer":
        return region, "drawer"
    if part.joint.kind == "door":
        return owner, "door"
    return None


def _articulated(scene: SceneTemplate, target: str, kinds: tuple[str, ...]) -> str:
    if target not in scene.instances and scene.split_region(target) is None:
        scene.require(target, "target")  # not in the scene at all: said so, with what is
    part = joint_part(scene, target)
    if part is None or part.joint.kind not in kinds:
        raise LiberoError(f"{target!r} has no {' or '.join(kinds)} to act on")
    return target


def side_region(scene: SceneTemplate, reference: str, side: str) -> Region:
    """A goal region on the workspace next to where `reference` starts, on `side` as the robot sees it.

    Raises:
        LiberoError: unknown side, or the reference does not start on the workspace.
    """
    if side not in SIDES:
        raise LiberoError(f"unknown side {side!r}; known: {', '.join(SIDES)}")
    inst = scene.require(reference, "reference")
    centre = inst.placement.centre()
    if centre is None:
        raise LiberoError(f"reference {reference!r} does not start on the {scene.workspace}; it has no fixed spot")
    import math

    hx, hy = scene.model(reference).half_size[:2]
    yaw = inst.placement.mean_yaw()
    ext_x = abs(math.cos(yaw)) * hx + abs(math.sin(yaw)) * hy
    ext_y = abs(math.sin(yaw)) * hx + abs(math.cos(yaw)) * hy
    dx, dy = SIDE_DIRECTION[side]
    cx, cy = centre
    if dx:
        near = ext_x + SIDE_GAP
        a, b = cx + dx * near, cx + dx * (near + SIDE_DEPTH)
        box = (min(a, b), cy - SIDE_HALF_WIDTH, max(a, b), cy + SIDE_HALF_WIDTH)
    else:
        near = ext_y + SIDE_GAP
        a, b = cy + dy * near, cy + dy * (near + SIDE_DEPTH)
        box = (cx - SIDE_HALF_WIDTH, min(a, b), cx + SIDE_HALF_WIDTH, max(a, b))
    box = tuple(round(v, 4) for v in box)
    return Region(f"{reference}_{side}_region", scene.workspace, [box])


# ---------------------------------------------------------------------- the behaviours


@register_behaviour("put_on")
def put_on(scene: SceneTemplate, object: str, target: str) -> Step:
    """Put an object on another object, a fixture's surface or a region."""
    _object(scene, object)
    where = surface(scene, target)
    _not_onto_itself(scene, [object], where, "on")
    # "on the cabinet" means its top: name the surface the goal uses ("top of the cabinet").
    return Step("put {object} on {target}", {"object": scene.phrase(object), "target": scene.phrase(where)},
                [Predicate("on", (object, where))], interest=[object, _owner(scene, where)])


@register_behaviour("put_in")
def put_in(scene: SceneTemplate, object: str, target: str) -> Step:
    """Put an object into a container, a drawer, the microwave or a compartment (which starts open)."""
    _object(scene, object)
    region = container(scene, target)
    _not_onto_itself(scene, [object], region, "in")
    door = _door_key(scene, region)
    needs = {door[0]: "open"} if door else {}
    return Step("put {object} in {target}", {"object": scene.phrase(object), "target": scene.phrase(target)},
                [Predicate("in", (object, region))], needs=needs, interest=[object, _owner(scene, region)])


@register_behaviour("put_both_in")
def put_both_in(scene: SceneTemplate, objects: list, target: str) -> Step:
    """Put two objects into the same container."""
    if not isinstance(objects, list) or len(objects) != 2:
        raise LiberoError("objects: give a list of two objects")
    a, b = (_object(scene, o) for o in objects)
    region = container(scene, target)
    _not_onto_itself(scene, [a, b], region, "in")
    door = _door_key(scene, region)
    return Step("put both {a} and {b} in {target}",
                {"a": scene.phrase(a), "b": scene.phrase(b), "target": scene.phrase(target)},
                [Predicate("in", (a, region)), Predicate("in", (b, region))],
                needs={door[0]: "open"} if door else {}, interest=[a, b, _owner(scene, region)])


@register_behaviour("put_both_on")
def put_both_on(scene: SceneTemplate, objects: list, target: str) -> Step:
    """Put two objects on the same surface."""
    if not isinstance(objects, list) or len(objects) != 2:
        raise LiberoError("objects: give a list of two objects")
    a, b = (_object(scene, o) for o in objects)
    where = surface(scene, target)
    _not_onto_itself(scene, [a, b], where, "on")
    return Step("put both {a} and {b} on {target}",
                {"a": scene.phrase(a), "b": scene.phrase(b), "target": scene.phrase(where)},
                [Predicate("on", (a, where)), Predicate("on", (b, where))], interest=[a, b, _owner(scene, where)])


@register_behaviour("stack")
def stack(scene: SceneTemplate, object: str, target: str) -> Step:
    """Stack one object on another (bowls on bowls)."""
    _object(scene, object)
    _object(scene, target, "target")
    if object == target:
        raise LiberoError("an object cannot be stacked on itself")
    return Step("stack {object} on {target}", {"object": scene.phrase(object), "target": scene.phrase(target)},
                [Predicate("on", (object, target))], interest=[object, target])


def _beside(scene: SceneTemplate, verb: str, object: str, side: str, reference: str) -> Step:
    _object(scene, object)
    if object == reference:
        raise LiberoError("the reference must be another instance")
    region = side_region(scene, reference, side)
    return Step(verb + " {object} to the " + side + " of {reference}",
                {"object": scene.phrase(object), "reference": scene.phrase(reference)},
                [Predicate("on", (object, region.full_name))], regions=[region], interest=[object, reference])


@register_behaviour("place_next_to")
def place_next_to(scene: SceneTemplate, object: str, side: str, reference: str) -> Step:
    """Pick an object up and put it to the left / right / front / back of another instance."""
    return _beside(scene, "put", object, side, reference)


@register_behaviour("push")
def push(scene: SceneTemplate, object: str, side: str, reference: str) -> Step:
    """Push an object to the left / right / front / back of another instance."""
    return _beside(scene, "push", object, side, reference)


@register_behaviour("pick_up")
def pick_up(scene: SceneTemplate, object: str) -> Step:
    """Lift an object off its support."""
    _object(scene, object)
    return Step("pick up {object}", {"object": scene.phrase(object)}, [Predicate("up", (object,))], interest=[object])


def _switch(scene, target, verb, state, opposite, kinds) -> Step:
    _articulated(scene, target, kinds)
    pred = {"open": "open", "close": "close", "on": "turnon", "off": "turnoff"}[state]
    return Step(verb + " {target}", {"target": scene.phrase(target)}, [Predicate(pred, (target,))],
                needs={target: opposite}, effects={target: state}, interest=[_owner(scene, target)])


@register_behaviour("open")
def open_(scene: SceneTemplate, target: str) -> Step:
    """Open a drawer (named by its region) or the microwave (which start closed)."""
    return _switch(scene, target, "open", "open", "close", ("drawer", "door"))


@register_behaviour("close")
def close(scene: SceneTemplate, target: str) -> Step:
    """Close a drawer or the microwave (which start open)."""
    return _switch(scene, target, "close", "close", "open", ("drawer", "door"))


@register_behaviour("turn_on")
def turn_on(scene: SceneTemplate, target: str) -> Step:
    """Turn a stove on (it starts off)."""
    return _switch(scene, target, "turn on", "on", "off", ("knob",))


@register_behaviour("turn_off")
def turn_off(scene: SceneTemplate, target: str) -> Step:
    """Turn a stove off (it starts on)."""
    return _switch(scene, target, "turn off", "off", "on", ("knob",))


def instruction(steps: list[Step]) -> str:
    """The instruction of a task: the steps' phrases joined by "and".

    A noun phrase an earlier step already named becomes "it" ("turn on the stove and put the moka
    pot on it").
    """
    said: set[str] = set()
    parts = []
    for step in steps:
        refs = {}
        for key, phrase in step.refs.items():
            refs[key] = "it" if phrase in said else phrase
        parts.append(step.template.format(**refs))
        said.update(step.refs.values())
    return " and ".join(parts)
