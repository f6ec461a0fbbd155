"""Simulator-neutral descriptions of our objects and fixtures: primitive geoms, affordance sites, grasp hints.

A category is described once here as plain data; `libero_ll.assets.build` turns a description into
MJCF for robosuite. Keeping the description free of simulator types lets the expert and the
predicates read sizes and regions without parsing XML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Geom:
    """One primitive shape of a model, in the model's own frame (origin at the centre of its bounding box).

    Args:
        type: MuJoCo primitive: "box", "cylinder", "sphere" or "capsule".
        size: MuJoCo size parameters (half extents for a box; radius, half height for a cylinder), metres.
        pos: position of the geom's centre, metres.
        yaw: rotation about the model's z axis, radians.
        rgba: colour.
        collide: whether the geom takes part in contacts (decorations like labels do not).
        axis: the axis ("x", "y" or "z", before the yaw) along which a cylinder or capsule runs, or
            along which a box's third size lies; "z" keeps MuJoCo's own orientation.
        name: optional name, so that code can find the geom (e.g. a burner that glows when on).
    """

    type: str
    size: tuple[float, ...]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    rgba: tuple[float, float, float, float] = (0.5, 0.5, 0.5, 1.0)
    collide: bool = True
    axis: str = "z"
    name: str = ""

    def quat(self) -> tuple[float, float, float, float]:
        """Orientation (w, x, y, z): first turn the z axis onto `axis`, then the yaw about z."""
        h = math.sqrt(0.5)
        tilt = {"z": (1.0, 0.0, 0.0, 0.0), "x": (h, 0.0, h, 0.0), "y": (h, -h, 0.0, 0.0)}[self.axis]
        c, s = math.cos(self.yaw / 2), math.sin(self.yaw / 2)
        w2, x2, y2, z2 = tilt
        # yaw quaternion (c, 0, 0, s) times tilt
        return (c * w2 - s * z2, c * x2 - s * y2, c * y2 + s * x2, c * z2 + s * w2)

    def half_extent(self) -> tuple[float, float, float]:
        """Half extents (metres) of the box around the geom along its model's x, y and z axes."""
        sz = self.size
        local = {
            "box": (sz[0], sz[1], sz[2]) if len(sz) == 3 else None,
            "cylinder": (sz[0], sz[0], sz[1]) if len(sz) > 1 else None,
            "capsule": (sz[0], sz[0], sz[1] + sz[0]) if len(sz) > 1 else None,
            "sphere": (sz[0],) * 3,
            "ellipsoid": tuple(sz[:3]) if len(sz) == 3 else None,
        }.get(self.type)
        if local is None:
            raise ValueError(f"no extent for a {self.type} geom of size {sz}")
        w, x, y, z = self.quat()
        rot = (
            (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
            (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
            (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
        )
        return tuple(sum(abs(r[k]) * local[k] for k in range(3)) for r in rot)

    def volume(self) -> float:
        """Volume in m^3 (used to spread a model's mass over its colliding geoms)."""
        sz = self.size
        if self.type == "box":
            return 8 * sz[0] * sz[1] * sz[2]
        if self.type == "cylinder":
            return math.pi * sz[0] ** 2 * 2 * sz[1]
        if self.type == "sphere":
            return 4 / 3 * math.pi * sz[0] ** 3
        if self.type == "capsule":
            return math.pi * sz[0] ** 2 * 2 * sz[1] + 4 / 3 * math.pi * sz[0] ** 3
        if self.type == "ellipsoid":
            return 4 / 3 * math.pi * sz[0] * sz[1] * sz[2]
        raise ValueError(f"unknown geom type {self.type!r}")


@dataclass(frozen=True)
class Region:
    """An affordance region of a model: an axis-aligned box in the model's frame.

    Args:
        name: the region name used in task files (e.g. "contain_region").
        pos: centre of the box, metres, model frame.
        half_size: half extents of the box, metres.
        relations: the predicates that put a thing at the region: ("on",) for a surface things stand On (a
            cabinet's top, a burner, a wine rack's slots), ("in",) for the inside of a container that things go
            In (a drawer, a basket, the microwave, a caddy's compartment), ("in", "on") for a shelf's layer (a
            thing stands on its board, inside the shelf) and, by default, for a region that says neither. The
            task-file validator reports In of a surface and warns of On of a container's inside.
    """

    name: str
    pos: tuple[float, float, float]
    half_size: tuple[float, float, float]
    # Left out of the repr, which the scene's fingerprint hashes (envs/init_states.py): which predicates a
    # task file may use of a region changes nothing of the simulated scene, so stored initial states and
    # demos stay current.
    relations: tuple[str, ...] = field(default=("in", "on"), repr=False)


@dataclass(frozen=True)
class Grasp:
    """How a scripted hand takes hold of an object.

    Args:
        kind: "body" (close the fingers across the object's centre) or "rim" (pinch a wall at `offset`).
        height: height of the finger tips above the object's bottom, metres.
        offset: horizontal offset of the pinch point from the object's centre (model frame), metres.
        across_yaw: direction in which the fingers close, as an angle from the model's x axis, radians.
        close_until_still: the fingers, having closed for the hand's usual number of steps, go on closing
            while they still move before the hand lifts (a heavy object pinched by a thin wall: lifted with
            the fingers still closing, it turns in them and slips out). Left out of the repr, and so out of
            the scene's fingerprint (`scene_fingerprint`): it changes nothing in the simulated scene.
    """

    kind: str = "body"
    height: float = 0.02
    offset: tuple[float, float] = (0.0, 0.0)
    across_yaw: float = math.pi / 2
    close_until_still: bool = field(default=False, repr=False)


@dataclass(frozen=True)
class Joint:
    """The joint that lets a part of a fixture move: a drawer's slide, a door's hinge, a knob's axle.

    Args:
        kind: "drawer" (slide), "door" (hinge) or "knob" (hinge); decides the type and the
            thresholds of the Open/Close and TurnOn/TurnOff predicates (envs/thresholds.py).
        axis: direction of motion (slide) or rotation axis (hinge), part frame; positive values open
            or turn on.
        range: lower and upper joint limit (metres or radians); 0 is closed / off.
        pos: anchor of a hinge in the part frame, metres.
        damping: joint damping, N·s/m or N·m·s/rad, so that a part stays where the hand leaves it.
        frictionloss: dry friction, N or N·m.
    """

    kind: str
    axis: tuple[float, float, float]
    range: tuple[float, float]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    damping: float = 5.0
    frictionloss: float = 0.5

    @property
    def type(self) -> str:
        return "slide" if self.kind == "drawer" else "hinge"


@dataclass(frozen=True)
class Part:
    """A moving part of a fixture: its own body with a joint to the fixture.

    Args:
        name: part name; the MuJoCo body is ``<instance>_<name>`` and its joint ``<instance>_<name>_joint``.
        pos: origin of the part in the fixture's frame when closed / off, metres.
        joint: how it moves.
        geoms: its shapes, in the part's frame.
        regions: affordance regions that move with the part (the inside of a drawer).
        handle: where a hand takes hold of it (part frame, metres), for experts; None for knobs.
    """

    name: str
    pos: tuple[float, float, float]
    joint: Joint
    geoms: tuple[Geom, ...]
    regions: tuple[Region, ...] = ()
    handle: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Model:
    """A whole category: its geoms, regions, physical constants and grasp hint.

    Args:
        category: the category name used in task files.
        kind: "object" (movable, with a free joint) or "fixture" (welded to the world).
        half_size: half extents of the bounding box, metres.
        geoms: the shapes.
        density: kg/m^3 applied to every colliding geom.
        friction: sliding, torsional, rolling friction of colliding geoms.
        friction_priority: MuJoCo's geom priority of the colliding geoms. A contact between geoms of equal
            priority takes the larger of their two frictions; one with a geom of higher priority takes that
            geom's. So a model whose friction is below the table's (1.0) slides on it only with a priority
            above 0 (a plate: `libero_ll/assets/objects.py`).
        regions: affordance regions (docs/assets.md).
        grasp: grasp hint for the expert (None for things that are not picked up).
        description: one line for people (the gallery, error messages).
        parts: moving parts (drawers, doors, knobs), each with its joint.
        controls: (name, part) pairs saying which part Open/Close/TurnOn/TurnOff act on: name is a
            region of this model ("top_region" → the top drawer) or "" for the model itself
            (Open(microwave_1) → its door).
        mass: total mass in kg; when given, overrides `density` (fixtures whose boxes are hollow in
            reality).
        front: whether the robot works this fixture from its front, the +x side of the model frame
            (drawers, a door, a knob at the front edge, a shelf's open side): validation warns when a
            task turns that front away from the robot.
        libero_yaw: radians to add to the yaw that a task file written for LIBERO's own models gives
            this category, so that ours stands as LIBERO's does (LIBERO's cabinets, for one, face -y in
            their model frame where ours face +x: -pi/2). `libero-ll convert-tasks` applies it
            (docs/interop.md); our own task files give the yaws of our models.
    """

    category: str
    kind: str
    half_size: tuple[float, float, float]
    geoms: tuple[Geom, ...]
    density: float = 500.0
    friction: tuple[float, float, float] = (1.0, 0.005, 0.0001)
    friction_priority: int = field(default=0, repr=False)
    regions: tuple[Region, ...] = ()
    grasp: Grasp | None = None
    description: str = ""
    parts: tuple[Part, ...] = ()
    controls: tuple[tuple[str, str], ...] = ()
    mass: float | None = None
    # Neither changes the scene a task builds, so neither is in the repr that initial-states files are
    # fingerprinted with (envs/init_states.py).
    front: bool = field(default=False, repr=False)
    libero_yaw: float = field(default=0.0, repr=False)

    @property
    def all_regions(self) -> tuple[Region, ...]:
        """Regions of the body itself and of its moving parts."""
        return self.regions + tuple(r for p in self.parts for r in p.regions)

    def part(self, name: str) -> Part:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)

    def control(self, name: str) -> Part | None:
        """The part that Open/Close/TurnOn/TurnOff of `name` ("" = the model itself) act on, or None."""
        for key, part in self.controls:
            if key == name:
                return self.part(part)
        return None

    @property
    def top_z(self) -> float:
        """Height of the top of the bounding box above the model origin, metres."""
        return self.half_size[2]

    def standing_out(self, part: str | None = None) -> tuple[float, float, float, float] | None:
        """(centre x, centre y, half x, half y), metres in the model's frame seen from above, of the box around those
        colliding geoms of the body (`part` None) or of one moving part as it stands closed (off) that stand out of
        `half_size`'s box; None where none does. A cabinet's drawer handles stand 6 cm out of it in front (each
        drawer's 12 cm wide), the microwave's sill 4 cm and its closed door and handle 6 cm."""
        origin, geoms = ((0.0, 0.0, 0.0), self.geoms) if part is None else (self.part(part).pos, self.part(part).geoms)
        lo, hi = [math.inf, math.inf], [-math.inf, -math.inf]
        for g in geoms:
            if not g.collide:
                continue
            half = g.half_extent()
            low = [origin[k] + g.pos[k] - half[k] for k in range(3)]
            high = [origin[k] + g.pos[k] + half[k] for k in range(3)]
            if all(low[k] >= -self.half_size[k] - 1e-9 and high[k] <= self.half_size[k] + 1e-9 for k in range(3)):
                continue
            for k in range(2):
                lo[k], hi[k] = min(lo[k], low[k]), max(hi[k], high[k])
        if lo[0] == math.inf:
            return None
        return ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (hi[0] - lo[0]) / 2, (hi[1] - lo[1]) / 2)

    @property
    def horizontal_radius(self) -> float:
        """Radius of the circle around the origin that holds the footprint, metres."""
        return math.hypot(self.half_size[0], self.half_size[1])

    def region(self, name: str) -> Region:
        for r in self.all_regions:
            if r.name == name:
                return r
        raise KeyError(name)


def ring(
    radius: float,
    z: float,
    wall: float,
    height: float,
    count: int,
    rgba: tuple[float, float, float, float],
) -> list[Geom]:
    """Vertical wall boxes set in a circle, the side of a bowl or the rim of a plate.

    Args:
        radius: distance of each wall box's centre from the axis, metres.
        z: height of the boxes' centres, metres.
        wall: wall thickness, metres.
        height: wall height, metres.
        count: number of boxes; more gives a rounder wall.
        rgba: colour.
    """
    # Each box spans its arc with a little overlap so the wall has no gaps to catch fingers.
    half_arc = radius * math.tan(math.pi / count) * 1.05
    out = []
    for i in range(count):
        a = 2 * math.pi * i / count
        out.append(
            Geom(
                "box",
                (wall / 2, half_arc, height / 2),
                (radius * math.cos(a), radius * math.sin(a), z),
                yaw=a,
                rgba=rgba,
            )
        )
    return out


def open_box(
    inner_x: float,
    inner_y: float,
    height: float,
    wall: float,
    floor: float,
    rgba: tuple[float, float, float, float],
    wall_gap: float = 0.0,
) -> list[Geom]:
    """A floor and four walls around an inner space, centred on the origin (a basket, a tray).

    Args:
        inner_x, inner_y: half extents of the inner space, metres.
        height: total height including the floor, metres.
        wall: wall thickness, metres.
        floor: floor thickness, metres.
        rgba: colour.
        wall_gap: the walls start this far above the floor's underside (so that, standing, only the
            floor touches what is below), metres.
    """
    hz = height / 2
    ox, oy = inner_x + wall, inner_y + wall
    wz, wc = (height - wall_gap) / 2, wall_gap / 2
    return [
        Geom("box", (ox, oy, floor / 2), (0, 0, -hz + floor / 2), rgba=rgba),
        Geom("box", (wall / 2, oy, wz), (inner_x + wall / 2, 0, wc), rgba=rgba),
        Geom("box", (wall / 2, oy, wz), (-inner_x - wall / 2, 0, wc), rgba=rgba),
        Geom("box", (inner_x, wall / 2, wz), (0, inner_y + wall / 2, wc), rgba=rgba),
        Geom("box", (inner_x, wall / 2, wz), (0, -inner_y - wall / 2, wc), rgba=rgba),
    ]


@dataclass
class Arena:
    """A scene family's static surroundings: the table (or floor), where the robot stands, the look of the room.

    Args:
        problem_class: the BDDL problem class this arena serves.
        workspace: the instance name of the table-like fixture task files refer to.
        workspace_category: its category.
        table_full_size: full extents of the table top (x, y, thickness), metres; None for the floor.
        table_top_z: height of the working surface above the floor, metres (0 for the floor).
        table_rgba: colour of the table top.
        leg_rgba: colour of the table legs.
        floor_rgba, floor_rgba2: the floor's two checker colours (equal for a plain floor).
        wall_rgba: colour of the walls.
        robot_base: where the robot's base sits, world frame, metres: mounted at the table's near edge
            (on its pedestal) or standing on the ground.
        agentview: the front camera's position and the point it looks at (world frame, metres), chosen
            so that the workspace fills the picture.
        description: one line for people.
    """

    problem_class: str
    workspace: str
    workspace_category: str
    table_full_size: tuple[float, float, float] | None = (0.8, 1.2, 0.05)
    table_top_z: float = 0.8
    table_rgba: tuple[float, float, float, float] = (0.78, 0.74, 0.68, 1.0)
    leg_rgba: tuple[float, float, float, float] = (0.55, 0.55, 0.57, 1.0)
    floor_rgba: tuple[float, float, float, float] = (0.62, 0.62, 0.6, 1.0)
    floor_rgba2: tuple[float, float, float, float] = (0.58, 0.58, 0.56, 1.0)
    wall_rgba: tuple[float, float, float, float] = (0.86, 0.85, 0.82, 1.0)
    robot_base: tuple[float, float, float] = (-0.56, 0.0, 0.912)
    agentview: tuple[tuple[float, float, float], tuple[float, float, float]] = ((0.3, 0.0, 1.4), (-0.12, 0.0, 0.8))
    description: str = ""
