"""Sample where everything starts from a task's init predicates.

Handles regions with ranges and yaw ranges (on the table or relative to another instance), stacking
(On(a, b)), objects in containers, drawers and compartments (In(a, region)), objects on a
fixture's surface regions, and drawers, doors and knobs preset by Open/Close/TurnOn/TurnOff.
Pure geometry on the category models; the environment writes the result into the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.assets.models import Arena, Model, Region
from libero_ll.bddl.spec import TaskSpec
from libero_ll.envs import thresholds as th
from libero_ll.errors import LiberoError

MAX_TRIES = 500
# Objects are released this far above their resting height and settle during the reset's physics steps.
DROP_HEIGHT = 0.002
# An object put in a drawer at the start stands this far from the drawer's front wall, metres.
DRAWER_WALL_GAP = 0.006
# Footprints (rotated bounding rectangles) must stay this far apart, metres; negative allows a small
# overlap where a bounding box is generous (round things).
FOOTPRINT_GAP = -0.005
JOINT_PREDICATES = ("open", "close", "turnon", "turnoff")


@dataclass
class Pose:
    """Where an instance starts: world position of its origin (metres) and yaw (radians)."""

    pos: np.ndarray
    yaw: float

    def quat_wxyz(self) -> np.ndarray:
        return np.array([math.cos(self.yaw / 2), 0.0, 0.0, math.sin(self.yaw / 2)])


@dataclass
class Layout:
    """A sampled start: instance → Pose, and (instance, part) → joint value for preset parts."""

    poses: dict[str, Pose] = field(default_factory=dict)
    joints: dict[tuple[str, str], float] = field(default_factory=dict)


def rotate(xy, yaw: float) -> np.ndarray:
    """A horizontal vector turned by yaw radians."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([c * xy[0] - s * xy[1], s * xy[0] + c * xy[1]])


@dataclass
class Footprint:
    """The rectangle an instance covers on its support: centre, half extents, yaw."""

    xy: np.ndarray
    half: tuple[float, float]
    yaw: float

    def overlaps(self, other: "Footprint", gap: float = FOOTPRINT_GAP) -> bool:
        """Separating-axis test of two rotated rectangles grown by gap/2 each."""
        d = other.xy - self.xy
        for yaw in (self.yaw, self.yaw + math.pi / 2, other.yaw, other.yaw + math.pi / 2):
            axis = np.array([math.cos(yaw), math.sin(yaw)])
            r = gap
            for f in (self, other):
                r += abs(math.cos(f.yaw - yaw)) * f.half[0] + abs(math.sin(f.yaw - yaw)) * f.half[1]
            if abs(float(d @ axis)) >= r:
                return False
        return True


def owner_of(name: str, instances: dict[str, str]) -> tuple[str, str] | None:
    """Split a full region name ``<instance>_<region>`` into (instance, region); the longest match wins."""
    best = None
    for inst in instances:
        if name.startswith(inst + "_") and (best is None or len(inst) > len(best)):
            best = inst
    return None if best is None else (best, name[len(best) + 1 :])


def joint_target(p, instances: dict[str, str]) -> tuple[str, str, str]:
    """(instance, part, joint kind) that Open/Close/TurnOn/TurnOff of p's argument act on.

    Raises:
        LiberoError: the argument has no drawer, door or knob.
    """
    (x,) = p.args
    if x in instances:
        inst, region = x, ""
    else:
        split = owner_of(x, instances)
        if split is None:
            raise LiberoError(f"{p.name}({x}): {x!r} is neither an instance nor a region of one")
        inst, region = split
    part = get_model(instances[inst]).control(region)
    if part is None:
        what = f"{instances[inst]} {inst}" + (f" region {region!r}" if region else "")
        raise LiberoError(f"{p.name}({x}): {what} has no drawer, door or knob to act on")
    return inst, part.name, part.joint.kind


def preset_value(name: str, kind: str) -> float:
    """The joint value an init predicate sets: open/on well past its threshold, closed/off at 0."""
    if name in ("close", "turnoff"):
        return 0.0
    return {"drawer": th.DRAWER_INIT_OPEN, "door": th.DOOR_INIT_OPEN, "knob": th.KNOB_INIT_ON}[kind]


def region_in_model(model: Model, region_name: str, joints: dict[str, float]) -> tuple[np.ndarray, Region]:
    """A region's centre in its model's frame, with moving parts at the given joint values."""
    for r in model.regions:
        if r.name == region_name:
            return np.array(r.pos, dtype=float), r
    for part in model.parts:
        for r in part.regions:
            if r.name == region_name:
                q = joints.get(part.name, 0.0)
                shift = np.array(part.joint.axis) * q if part.joint.type == "slide" else np.zeros(3)
                return np.array(part.pos) + shift + np.array(r.pos), r
    raise KeyError(region_name)


def sample_placements(spec: TaskSpec, arena: Arena, rng: np.random.Generator) -> Layout:
    """Sample a start pose for every fixture and object placed by the task's init predicates.

    Args:
        spec: the task.
        arena: its scene family's arena (table size and height).
        rng: the random generator (seeded by the caller for reproducible starts).

    Returns:
        The Layout: a Pose for each instance an init predicate places, and the preset joint values.

    Raises:
        LiberoError: an init predicate this library cannot realise, or a region in which no
        collision-free pose was found in MAX_TRIES tries (the message names the region).
    """
    table_top = np.array([0.0, 0.0, arena.table_top_z])
    instances = spec.instances()
    layout = Layout()
    poses = layout.poses
    footprints: list[Footprint] = []
    pending = []
    for p in spec.init:
        if p.name in JOINT_PREDICATES:
            inst, part, kind = joint_target(p, instances)
            layout.joints[(inst, part)] = preset_value(p.name, kind)
        elif p.name in ("on", "in"):
            pending.append(p)
        else:
            raise LiberoError(f"init predicate {p.name}({', '.join(p.args)}) cannot set up a start state")

    def joints_of(inst: str) -> dict[str, float]:
        return {part: q for (i, part), q in layout.joints.items() if i == inst}

    def frame_of(target: str) -> tuple[np.ndarray, float] | None:
        """Origin (on the target's top surface) and yaw of the frame a region's ranges are in."""
        if get_model(instances[target]).kind == "workspace":
            return table_top, 0.0
        if target not in poses:
            return None
        pose = poses[target]
        return pose.pos + np.array([0.0, 0.0, get_model(instances[target]).half_size[2]]), pose.yaw

    def place(p) -> bool:
        a, where = p.args
        model = get_model(instances[a])
        region = spec.regions.get(where)
        if p.name == "on" and region is not None and region.ranges:
            frame = frame_of(region.target)
            if frame is None:
                return False
            origin, frame_yaw = frame
            yaws = region.yaw_rotation or [(0.0, 0.0)]
            for _ in range(MAX_TRIES):
                x0, y0, x1, y1 = region.ranges[rng.integers(len(region.ranges))]
                lo, hi = yaws[rng.integers(len(yaws))]
                xy = origin[:2] + rotate((rng.uniform(x0, x1), rng.uniform(y0, y1)), frame_yaw)
                yaw = float(rng.uniform(lo, hi)) + frame_yaw
                mine = Footprint(xy, model.half_size[:2], yaw)
                if not any(mine.overlaps(f) for f in footprints):
                    footprints.append(mine)
                    # Fixtures are welded where they are put and never settle: no drop for them.
                    drop = 0.0 if model.kind == "fixture" else DROP_HEIGHT
                    pos = np.array([xy[0], xy[1], origin[2] + model.half_size[2] + drop])
                    poses[a] = Pose(pos, yaw)
                    return True
            raise LiberoError(
                f"could not place {a} in region {where} without touching another object "
                f"after {MAX_TRIES} tries; widen the region or move its neighbours"
            )
        if p.name == "on" and where in instances:
            if where not in poses:
                return False
            base = poses[where]
            below = get_model(instances[where])
            pos = base.pos + np.array([0.0, 0.0, below.half_size[2] + model.half_size[2] + DROP_HEIGHT])
            poses[a] = Pose(pos, base.yaw)
            return True
        # In(a, <owner>_<region>) or On(a, <owner>_<surface>): an affordance region of a placed instance.
        split = owner_of(where, instances)
        if split is None:
            raise LiberoError(f"init: cannot place {a}: {where!r} is neither a region nor an instance")
        owner, rname = split
        if owner not in poses:
            return False
        omodel = get_model(instances[owner])
        try:
            centre_local, reg = region_in_model(omodel, rname, joints_of(owner))
        except KeyError:
            raise LiberoError(f"init: {instances[owner]} has no region {rname!r}") from None
        base = poses[owner]
        part = omodel.control(rname)
        if part is not None and part.joint.kind == "drawer" and abs(part.joint.axis[2]) < 1e-9:
            # In a drawer: as far out as the object fits, where the cabinet above does not hang over it.
            out = np.array(part.joint.axis[:2], dtype=float)
            extent = float(np.abs(out) @ np.asarray(model.half_size[:2]))
            room = float(np.abs(out) @ np.asarray(reg.half_size[:2])) - extent - DRAWER_WALL_GAP
            centre_local = centre_local + np.array([*(out * max(room, 0.0)), 0.0])
        centre = base.pos + np.array([*rotate(centre_local[:2], base.yaw), centre_local[2]])
        z = centre[2] - reg.half_size[2] + model.half_size[2] + DROP_HEIGHT
        poses[a] = Pose(np.array([centre[0], centre[1], z]), base.yaw)
        return True

    # Stacks, containers and regions on other instances need their support placed first.
    while pending:
        progressed = [p for p in pending if place(p)]
        if not progressed:
            names = ", ".join(f"{p.name}({' '.join(p.args)})" for p in pending)
            raise LiberoError(f"init predicates form a cycle or lean on an unplaced instance: {names}")
        pending = [p for p in pending if p not in progressed]
    return layout
