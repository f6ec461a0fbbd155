"""Sample where everything starts from a task's init predicates.

Handles regions with ranges and yaw ranges (on the table or relative to another instance), stacking
(On(a, b)), objects in containers, drawers and compartments (In(a, region)), objects on a
fixture's surface regions, and drawers, doors and knobs preset by Open/Close/TurnOn/TurnOff.
Pure geometry on the category models; the environment writes the result into the simulator.

Regions written for other object libraries (LIBERO's) can be too tight for our models' footprints.
When no pose clear of every footprint is found, placement falls back to what LIBERO's sampler
does, a check on horizontal radii, using the shapes' outlines (circles for round things), and takes
the pose that overlaps its neighbours least; `relax` then pushes overlapping outlines apart within
reach of their regions, the simulator settles what still touches (`settle_overlaps`, at reset), and
a `PlacementWarning` says so. Scenes that place without the fallback place exactly as before.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.assets.models import Arena, Model, Region
from libero_ll.bddl.spec import TaskSpec
from libero_ll.envs import thresholds as th
from libero_ll.errors import LiberoError, SceneError

MAX_TRIES = 500
# Objects are released this far above their resting height and settle during the reset's physics steps.
DROP_HEIGHT = 0.002
# An object put in a drawer at the start stands this far from the drawer's front wall, metres.
DRAWER_WALL_GAP = 0.006
# Footprints (rotated bounding rectangles) must stay this far apart, metres; negative allows a small
# overlap where a bounding box is generous (round things).
FOOTPRINT_GAP = -0.005
# The fallback for regions too tight for our footprints accepts a pose whose outline overlaps a
# neighbour's by at most this much, metres: the simulator pushes such overlaps apart at reset.
SETTLE_MAX_OVERLAP = 0.05
# relax() sweeps over all pairs at most this often, and leaves this much room between outlines, metres.
RELAX_SWEEPS = 200
RELAX_CLEARANCE = 0.0005
# relax() keeps an object's centre this far inside the init tolerance of its region, metres.
RELAX_MARGIN = 0.003
# A model is round when its colliding shapes fit in a circle this little larger than its footprint's
# half width (walls built from boxes poke out at their corners by a few per cent).
ROUND_SLACK = 1.05
JOINT_PREDICATES = ("open", "close", "turnon", "turnoff")


class PlacementWarning(UserWarning):
    """A task's start layout needed the fallback: some things overlap and are settled by the simulator."""


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
    # Instances placed by the fallback, each with the neighbour it overlaps most and by how much
    # (metres); the environment lets the simulator push them apart.
    crowded: dict[str, tuple[str, float]] = field(default_factory=dict)


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


@dataclass
class Outline:
    """The horizontal outline of a placed instance, for the fallback: a circle or a rotated rectangle.

    Args:
        name: the instance.
        xy: centre, world frame, metres.
        half: half extents of the rectangle, metres.
        yaw: rotation, radians.
        radius: for round things, the circle that holds their colliding shapes; None otherwise.
        movable: whether relax() may move it (objects; fixtures are welded).
        bounds: where relax() may move it: (origin, yaw, (x_min, y_min, x_max, y_max)) of its region.
    """

    name: str
    xy: np.ndarray
    half: tuple[float, float]
    yaw: float
    radius: float | None
    movable: bool = False
    bounds: tuple | None = None

    def contact(self, other: "Outline") -> tuple[float, np.ndarray]:
        """(depth, n): how deep the outlines overlap (metres; negative: the gap), and the unit vector
        along which moving `other` separates them fastest."""
        d = other.xy - self.xy
        if self.radius is not None and other.radius is not None:
            dist = float(np.hypot(*d))
            n = d / dist if dist > 1e-9 else np.array([1.0, 0.0])
            return self.radius + other.radius - dist, n
        if self.radius is not None or other.radius is not None:
            circle, rect = (self, other) if self.radius is not None else (other, self)
            p = rotate(circle.xy - rect.xy, -rect.yaw)
            half = np.asarray(rect.half, dtype=float)
            q = np.abs(p) - half
            if np.any(q > 0):
                gap = p - np.clip(p, -half, half)
                dist = float(np.hypot(*gap))
                n_local, signed = gap / max(dist, 1e-12), dist
            else:
                i = int(np.argmax(q))
                n_local = np.zeros(2)
                n_local[i] = 1.0 if p[i] >= 0 else -1.0
                signed = float(q[i])
            n = rotate(n_local, rect.yaw)  # from the rectangle towards the circle
            return circle.radius - signed, (n if rect is self else -n)
        depth, best = math.inf, np.array([1.0, 0.0])
        for yaw in (self.yaw, self.yaw + math.pi / 2, other.yaw, other.yaw + math.pi / 2):
            axis = np.array([math.cos(yaw), math.sin(yaw)])
            r = 0.0
            for f in (self, other):
                r += abs(math.cos(f.yaw - yaw)) * f.half[0] + abs(math.sin(f.yaw - yaw)) * f.half[1]
            along = float(d @ axis)
            if r - abs(along) < depth:
                depth, best = r - abs(along), axis * (1.0 if along >= 0 else -1.0)
        return depth, best

    def clamp(self, xy: np.ndarray) -> np.ndarray:
        """``xy`` moved back inside this outline's bounds."""
        if self.bounds is None:
            return xy
        origin, yaw, (x0, y0, x1, y1) = self.bounds
        local = rotate(xy - origin[:2], -yaw)
        local = np.array([min(max(local[0], x0), x1), min(max(local[1], y0), y1)])
        return origin[:2] + rotate(local, yaw)


def relax(outlines: list[Outline], sweeps: int = RELAX_SWEEPS) -> float:
    """Push overlapping outlines apart, each movable one staying within its bounds; returns the deepest
    overlap left, metres (0 when none overlap).

    Two movable outlines each move half of their overlap, a movable one next to a fixed one all of it.
    """
    worst = 0.0
    for _ in range(sweeps):
        worst = 0.0
        for i, a in enumerate(outlines):
            for b in outlines[i + 1 :]:
                if not (a.movable or b.movable):
                    continue
                depth, n = a.contact(b)
                if depth <= 0.0:
                    continue
                worst = max(worst, depth)
                step = depth + RELAX_CLEARANCE
                share = 0.5 if a.movable and b.movable else 1.0
                if a.movable:
                    a.xy = a.clamp(a.xy - n * step * share)
                if b.movable:
                    b.xy = b.clamp(b.xy + n * step * share)
        if worst <= 0.0:
            break
    return max(0.0, max((a.contact(b)[0] for i, a in enumerate(outlines) for b in outlines[i + 1 :]
                         if a.movable or b.movable), default=0.0))


def round_radius(model: Model) -> float | None:
    """Radius of the circle around the origin that holds a round object's colliding shapes; None if not round.

    Fixtures and things whose footprint is not square, or whose shapes reach into the footprint's
    corners (boxes, cartons), are not round.
    """
    hx, hy = model.half_size[:2]
    if model.kind != "object" or abs(hx - hy) > 0.05 * max(hx, hy):
        return None
    far = 0.0
    for g in model.geoms:
        if not g.collide:
            continue
        if g.type == "box":
            c, s = math.cos(g.yaw), math.sin(g.yaw)
            for sx in (-1, 1):
                for sy in (-1, 1):
                    x = g.pos[0] + c * sx * g.size[0] - s * sy * g.size[1]
                    y = g.pos[1] + s * sx * g.size[0] + c * sy * g.size[1]
                    far = max(far, math.hypot(x, y))
        else:
            far = max(far, math.hypot(g.pos[0], g.pos[1]) + g.size[0])
    return far if 0.0 < far <= ROUND_SLACK * max(hx, hy) else None


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


def preset_value(name: str, kind: str, upper: float | None = None) -> float:
    """The joint value an init predicate sets: open/on well past its threshold, closed/off at 0. A drawer that
    slides out less than `DRAWER_INIT_OPEN` (its joint's `upper` limit) is set 1 cm short of its stop."""
    if name in ("close", "turnoff"):
        return 0.0
    if kind == "drawer" and upper is not None:
        return min(th.DRAWER_INIT_OPEN, upper - 0.01)
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


def sample_placements(spec: TaskSpec, arena: Arena, rng: np.random.Generator,
                      positions: dict[str, np.ndarray] | None = None) -> Layout:
    """Sample a start pose for every fixture and object placed by the task's init predicates.

    Args:
        spec: the task.
        arena: its scene family's arena (table size and height).
        rng: the random generator (seeded by the caller for reproducible starts).
        positions: instance -> world (x, y), metres, for instances placed in a region with ranges
            that must start there rather than at a sampled point (a state converted from elsewhere);
            where such a position overlaps a neighbour, it is pushed apart like a crowded pose.

    Returns:
        The Layout: a Pose for each instance an init predicate places, and the preset joint values.
        When a region is too tight for a collision-free pose, the fallback's poses are listed in
        ``Layout.crowded`` and a PlacementWarning is issued.

    Raises:
        LiberoError: an init predicate this library cannot realise, or a region in which no pose
        was found in MAX_TRIES tries that overlaps its neighbours by at most SETTLE_MAX_OVERLAP
        (the message names the region).
    """
    table_top = np.array([0.0, 0.0, arena.table_top_z])
    instances = spec.instances()
    layout = Layout()
    poses = layout.poses
    # What stands in a region with ranges, by the instance the region is on (the table, or a plate or cabinet
    # whose frame the ranges are in): a thing is kept clear only of the things that stand on the same support.
    footprints: list[tuple[str, Footprint]] = []
    outlines: list[Outline] = []
    support: dict[str, str] = {}
    # What stands on, in or relative to each instance: it moves along when relax() moves its support.
    children: dict[str, list[str]] = {}
    pending = []
    for p in spec.init:
        if p.name in JOINT_PREDICATES:
            inst, part, kind = joint_target(p, instances)
            upper = get_model(instances[inst]).part(part).joint.range[1]
            layout.joints[(inst, part)] = preset_value(p.name, kind, upper)
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
            beside = [o for o in outlines if support[o.name] == region.target]

            def draw() -> tuple[np.ndarray, float, tuple]:
                box = region.ranges[rng.integers(len(region.ranges))]
                lo, hi = yaws[rng.integers(len(yaws))]
                local = (rng.uniform(box[0], box[2]), rng.uniform(box[1], box[3]))
                xy = origin[:2] + rotate(local, frame_yaw)
                return xy, float(rng.uniform(lo, hi)) + frame_yaw, box

            def outline(xy: np.ndarray, yaw: float, box: tuple) -> Outline:
                # relax() may move an object within its range, short of the init check's tolerance.
                grow = th.ON_RANGE_TOLERANCE - RELAX_MARGIN
                bounds = (origin, frame_yaw, (box[0] - grow, box[1] - grow, box[2] + grow, box[3] + grow))
                return Outline(a, xy, model.half_size[:2], yaw, round_radius(model),
                               movable=model.kind == "object", bounds=bounds)

            def put(xy: np.ndarray, yaw: float, box: tuple) -> None:
                footprints.append((region.target, Footprint(xy, model.half_size[:2], yaw)))
                outlines.append(outline(xy, yaw, box))
                support[a] = region.target
                if get_model(instances[region.target]).kind != "workspace":
                    children.setdefault(region.target, []).append(a)
                # Fixtures are welded where they are put and never settle: no drop for them.
                drop = 0.0 if model.kind == "fixture" else DROP_HEIGHT
                poses[a] = Pose(np.array([xy[0], xy[1], origin[2] + model.half_size[2] + drop]), yaw)

            if positions is not None and a in positions:
                xy, yaw, box = draw()
                xy = np.asarray(positions[a], dtype=float)[:2].copy()
                depth, other = max(((outline(xy, yaw, box).contact(o)[0], o.name) for o in beside),
                                   default=(-math.inf, ""))
                put(xy, yaw, box)
                if depth > 0.0:
                    layout.crowded[a] = (other, depth)
                return True
            for _ in range(MAX_TRIES):
                xy, yaw, box = draw()
                mine = Footprint(xy, model.half_size[:2], yaw)
                if not any(mine.overlaps(f) for on, f in footprints if on == region.target):
                    put(xy, yaw, box)
                    return True
            # The region is too tight for our footprints. Like LIBERO's sampler, keep centres apart by
            # the outlines' radii; failing that, take the pose that overlaps its neighbours least.
            best = None
            for _ in range(MAX_TRIES):
                xy, yaw, box = draw()
                mine = outline(xy, yaw, box)
                worst = max(((mine.contact(o)[0], o.name) for o in beside), default=(-math.inf, ""))
                if best is None or worst[0] < best[3][0]:
                    best = (xy, yaw, box, worst)
                if worst[0] <= 0.0:
                    break
            xy, yaw, box, (depth, other) = best
            if depth > SETTLE_MAX_OVERLAP:
                raise SceneError(
                    f"could not place {a} in region {where} without touching another object "
                    f"after {MAX_TRIES} tries, nor with less than {SETTLE_MAX_OVERLAP * 100:.0f} cm of "
                    f"overlap ({other} overlaps it by {depth * 100:.1f} cm at best); widen the region "
                    "or move its neighbours"
                )
            put(xy, yaw, box)
            if depth > 0.0:
                layout.crowded[a] = (other, depth)
            warnings.warn(
                f"{spec.path or '<task>'}: region {where} is too tight for the footprint of {a} "
                f"({instances[a]}) beside {other}: placed as LIBERO does, on horizontal radii"
                + (", and the two are pushed apart before the start" if depth > 0.0 else ""),
                PlacementWarning,
                stacklevel=3,
            )
            return True
        if p.name == "on" and where in instances:
            if where not in poses:
                return False
            base = poses[where]
            below = get_model(instances[where])
            pos = base.pos + np.array([0.0, 0.0, below.half_size[2] + model.half_size[2] + DROP_HEIGHT])
            poses[a] = Pose(pos, base.yaw)
            children.setdefault(where, []).append(a)
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
        children.setdefault(owner, []).append(a)
        return True

    # Stacks, containers and regions on other instances need their support placed first.
    while pending:
        progressed = [p for p in pending if place(p)]
        if not progressed:
            names = ", ".join(f"{p.name}({' '.join(p.args)})" for p in pending)
            raise LiberoError(f"init predicates form a cycle or lean on an unplaced instance: {names}")
        pending = [p for p in pending if p not in progressed]
    if layout.crowded:
        # Each support's things apart from each other (a thing on the cabinet does not push one on the table).
        for target in dict.fromkeys(support.values()):
            _relax_layout(layout, [o for o in outlines if support[o.name] == target], children)
    return layout


def _relax_layout(layout: Layout, outlines: list[Outline], children: dict[str, list[str]]) -> None:
    """Push the outlines of a crowded layout apart and move what stands on each moved thing along."""
    start = {o.name: o.xy.copy() for o in outlines}
    relax(outlines)

    def shift(inst: str, d: np.ndarray) -> None:
        layout.poses[inst].pos[:2] += d
        for child in children.get(inst, ()):
            shift(child, d)

    for o in outlines:
        d = o.xy - start[o.name]
        if np.any(d != 0.0):
            shift(o.name, d)


# The most physics steps settle_overlaps takes, and the penetration (metres) it settles down to.
SETTLE_STEPS = 3000
SETTLE_TOLERANCE = 0.002
# settle_overlaps stops after this many steps without the deepest penetration shrinking by 0.1 mm.
SETTLE_PATIENCE = 200


def settle_overlaps(model, data, free_qpos, geom_owner, ignore: int, max_steps: int = SETTLE_STEPS,
                    tolerance: float = SETTLE_TOLERANCE) -> float:
    """Let the simulator push apart objects that start inside each other or inside a fixture.

    Quasi-static: after every physics step all velocities are zeroed and everything but the free
    objects is put back, so the contact forces move overlapping objects only as far as it takes to
    separate them, without throwing them across the table.

    Args:
        model, data: the raw ``mujoco.MjModel`` / ``mujoco.MjData`` of the scene, with the start
            layout written in.
        free_qpos: qpos address of each object's free joint (7 numbers each).
        geom_owner: per geom, the index of the instance that owns it (-1: robot or arena).
        ignore: owner index whose contacts do not count (the table, which objects rest on).
        max_steps: most physics steps taken.
        tolerance: stop once no two instances interpenetrate deeper than this, metres.

    Returns the deepest penetration left between two instances, metres (0 when none touch).
    """
    import mujoco

    keep = data.qpos.copy()
    fixed = np.ones(model.nq, dtype=bool)
    for adr in free_qpos:
        fixed[adr : adr + 7] = False

    def deepest() -> float:
        n = data.ncon
        if n == 0:
            return 0.0
        con = data.contact[:n]
        o1, o2 = geom_owner[con.geom1], geom_owner[con.geom2]
        between = (o1 >= 0) & (o2 >= 0) & (o1 != o2) & (o1 != ignore) & (o2 != ignore)
        return float(max(0.0, -con.dist[between].min())) if between.any() else 0.0

    mujoco.mj_forward(model, data)
    depth = best = deepest()
    since = 0
    for step in range(max_steps):
        if depth <= tolerance or since >= SETTLE_PATIENCE:
            break
        mujoco.mj_step(model, data)
        data.qpos[fixed] = keep[fixed]
        data.qvel[:] = 0.0
        if step % 10 == 9:
            mujoco.mj_forward(model, data)
            depth = deepest()
            # Things wedged against each other stop moving: no use stepping on.
            since = 0 if depth < best - 1e-4 else since + 10
            best = min(best, depth)
    return depth
