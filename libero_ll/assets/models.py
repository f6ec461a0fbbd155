"""Simulator-neutral descriptions of our objects and fixtures: primitive geoms, affordance sites, grasp hints.

A category is described once here as plain data; `libero_ll.assets.build` turns a description into
MJCF for robosuite. Keeping the description free of simulator types lets the expert and the
predicates read sizes and regions without parsing XML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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
    """

    type: str
    size: tuple[float, ...]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    rgba: tuple[float, float, float, float] = (0.5, 0.5, 0.5, 1.0)
    collide: bool = True


@dataclass(frozen=True)
class Region:
    """An affordance region of a model: an axis-aligned box in the model's frame.

    Args:
        name: the region name used in task files (e.g. "contain_region").
        pos: centre of the box, metres, model frame.
        half_size: half extents of the box, metres.
    """

    name: str
    pos: tuple[float, float, float]
    half_size: tuple[float, float, float]


@dataclass(frozen=True)
class Grasp:
    """How a scripted hand takes hold of an object.

    Args:
        kind: "body" (close the fingers across the object's centre) or "rim" (pinch a wall at `offset`).
        height: height of the finger tips above the object's bottom, metres.
        offset: horizontal offset of the pinch point from the object's centre (model frame), metres.
        across_yaw: direction in which the fingers close, as an angle from the model's x axis, radians.
    """

    kind: str = "body"
    height: float = 0.02
    offset: tuple[float, float] = (0.0, 0.0)
    across_yaw: float = math.pi / 2


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
        regions: affordance regions (see shared/spec/bddl.md).
        grasp: grasp hint for the expert (None for things that are not picked up).
        description: one line for people (the gallery, error messages).
    """

    category: str
    kind: str
    half_size: tuple[float, float, float]
    geoms: tuple[Geom, ...]
    density: float = 500.0
    friction: tuple[float, float, float] = (1.0, 0.005, 0.0001)
    regions: tuple[Region, ...] = ()
    grasp: Grasp | None = None
    description: str = ""

    @property
    def top_z(self) -> float:
        """Height of the top of the bounding box above the model origin, metres."""
        return self.half_size[2]

    @property
    def horizontal_radius(self) -> float:
        """Radius of the circle around the origin that holds the footprint, metres."""
        return math.hypot(self.half_size[0], self.half_size[1])

    def region(self, name: str) -> Region:
        for r in self.regions:
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
) -> list[Geom]:
    """A floor and four walls around an inner space, centred on the origin (a basket, a tray).

    Args:
        inner_x, inner_y: half extents of the inner space, metres.
        height: total height including the floor, metres.
        wall: wall thickness, metres.
        floor: floor thickness, metres.
        rgba: colour.
    """
    hz = height / 2
    ox, oy = inner_x + wall, inner_y + wall
    return [
        Geom("box", (ox, oy, floor / 2), (0, 0, -hz + floor / 2), rgba=rgba),
        Geom("box", (wall / 2, oy, hz), (inner_x + wall / 2, 0, 0), rgba=rgba),
        Geom("box", (wall / 2, oy, hz), (-inner_x - wall / 2, 0, 0), rgba=rgba),
        Geom("box", (inner_x, wall / 2, hz), (0, inner_y + wall / 2, 0), rgba=rgba),
        Geom("box", (inner_x, wall / 2, hz), (0, -inner_y - wall / 2, 0), rgba=rgba),
    ]


@dataclass
class Arena:
    """A scene family's static surroundings: the table (or floor) and where the robot stands.

    Args:
        problem_class: the BDDL problem class this arena serves.
        workspace: the instance name of the table-like fixture task files refer to.
        table_full_size: full extents of the table top (x, y, thickness), metres.
        table_top_z: height of the table's top surface above the floor, metres.
        table_rgba: colour of the table top.
        robot_base: where the robot stands: "table" (mounted at the near edge).
        agentview: the front camera's position and the point it looks at (world frame, metres), chosen
            so that the workspace fills the picture.
    """

    problem_class: str
    workspace: str
    table_full_size: tuple[float, float, float] = (0.8, 1.2, 0.05)
    table_top_z: float = 0.8
    table_rgba: tuple[float, float, float, float] = (0.78, 0.74, 0.68, 1.0)
    robot_base: str = "table"
    agentview: tuple[tuple[float, float, float], tuple[float, float, float]] = ((0.3, 0.0, 1.4), (-0.12, 0.0, 0.8))
