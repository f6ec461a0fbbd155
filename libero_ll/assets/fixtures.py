"""Fixtures: furniture and appliances welded to the world, some with joints (drawers, doors, knobs).

Every fixture's front faces its model frame's +x axis; a task turns it towards the robot with the
yaw of its init region (yaw pi puts the front towards a robot standing at -x). Left and right are
as seen by a person standing in front of it (left is -y in the model frame).
LIBERO's own models of the same categories face other ways (its cabinets, microwave and shelf open
towards -y of their frames, its stove has its knob at the -x end), so the yaws of task files written
for them are turned by each model's `libero_yaw` (`libero-ll convert-tasks`, docs/interop.md).
Sizes are in metres. Fixture bodies are static, so only their moving parts need a mass.
"""

from __future__ import annotations

import math

from libero_ll.assets.categories import register_category
from libero_ll.assets.models import Geom, Joint, Model, Part, Region

GREY_METAL = (0.62, 0.63, 0.66, 1.0)
DARK = (0.08, 0.08, 0.09, 1.0)


def _box(half, pos, rgba, collide=True, name="") -> Geom:
    return Geom("box", tuple(half), tuple(pos), rgba=rgba, collide=collide, name=name)


# Handles stand this far in front of their drawer or door, metres.
HANDLE_STANDOFF = 0.055
HANDLE_RADIUS = 0.006


def _bar_handle(
    x_front: float, y: float, z: float, half_length: float, rgba, standoff: float = HANDLE_STANDOFF
) -> list[Geom]:
    """A horizontal bar handle standing off a front face at x = x_front: the bar and its two posts.

    The bar runs along y, `standoff` in front of the face; a finger hooks into the gap behind it
    from above, between the posts, and pulls.
    """
    bar_x = x_front + standoff
    bar = Geom("capsule", (HANDLE_RADIUS, half_length), (bar_x, y, z), axis="y", rgba=rgba)
    posts = [
        _box((standoff / 2, 0.005, 0.005), (x_front + standoff / 2, y + s * (half_length - 0.005), z), rgba)
        for s in (-1, 1)
    ]
    return [bar, *posts]


# ---------------------------------------------------------------- cabinets with three drawers

CABINET_HALF = (0.11, 0.15, 0.19)
CABINET_WALL = 0.012
CABINET_PLINTH = 0.05
DRAWER_TRAVEL = 0.20


def _cabinet(
    category: str,
    body_rgba,
    front_rgba,
    handle_rgba,
    description: str,
    half: tuple[float, float, float] = CABINET_HALF,
    wall: float = CABINET_WALL,
    plinth: float = CABINET_PLINTH,
    travel: float = DRAWER_TRAVEL,
    standoff: float = HANDLE_STANDOFF,
) -> Model:
    """A cabinet of three drawers, `half` its half size (depth, width, height), its walls `wall` thick on a plinth
    `plinth` high; its drawers slide out up to `travel`, their bar handles stand `standoff` off their fronts."""
    hx, hy, hz = half
    t = wall
    z0 = -hz + plinth  # underside of the carcass; a recessed plinth stands below it
    slot = (hz - z0 - 4 * t) / 3  # height of each drawer opening
    zc = (hz + z0) / 2
    geoms = [
        _box((hx - 0.02, hy - 0.02, plinth / 2), (-0.02, 0, -hz + plinth / 2), (0.15, 0.12, 0.1, 1.0)),
        _box((t / 2, hy, (hz - z0) / 2), (-hx + t / 2, 0, zc), body_rgba),  # back
        _box((hx, t / 2, (hz - z0) / 2), (0, -hy + t / 2, zc), body_rgba),  # sides
        _box((hx, t / 2, (hz - z0) / 2), (0, hy - t / 2, zc), body_rgba),
        _box((hx, hy, t / 2), (0, 0, hz - t / 2), body_rgba),  # top
        _box((hx, hy, t / 2), (0, 0, z0 + t / 2), body_rgba),  # bottom
    ]
    for i in (1, 2):  # shelves between the drawers
        geoms.append(_box((hx - t, hy - t, t / 2), (t, 0, hz - t - i * slot - (i - 0.5) * t), body_rgba))

    # A drawer: open-topped box whose front panel closes the opening; it slides out along +x.
    x_back, x_front = -hx + t + 0.004, hx - t
    dx, xc = (x_front - x_back) / 2, (x_front + x_back) / 2
    wy = hy - t - 0.003
    wall_h = slot * 0.62
    floor_z = -slot / 2 + 0.006
    parts, regions_top = [], []
    for i, name in enumerate(("top", "middle", "bottom")):
        z = hz - t - slot / 2 - i * (slot + t)
        dgeoms = [
            _box((t / 2, wy, slot / 2 - 0.002), (hx - t / 2, 0, 0), front_rgba),
            _box((dx, wy - 0.002, 0.004), (xc, 0, floor_z), front_rgba),
            _box((dx, 0.004, wall_h / 2), (xc, -wy + 0.006, floor_z + wall_h / 2), front_rgba),
            _box((dx, 0.004, wall_h / 2), (xc, wy - 0.006, floor_z + wall_h / 2), front_rgba),
            _box((0.004, wy, wall_h / 2), (x_back + 0.004, 0, floor_z + wall_h / 2), front_rgba),
            *_bar_handle(hx, 0.0, 0.0, 0.06, handle_rgba, standoff),
        ]
        inner_h = slot - 0.016
        region = Region(
            f"{name}_region",
            (xc + 0.002, 0.0, floor_z + 0.004 + inner_h / 2),
            (dx - 0.012, wy - 0.016, inner_h / 2),
            relations=("in",),
        )
        parts.append(
            Part(
                f"{name}_drawer",
                (0.0, 0.0, z),
                Joint("drawer", (1.0, 0.0, 0.0), (0.0, travel), damping=8.0, frictionloss=1.0),
                tuple(dgeoms),
                regions=(region,),
                handle=(hx + standoff, 0.0, 0.0),
            )
        )
    regions_top.append(Region("top_side", (0.0, 0.0, hz + 0.005), (hx - 0.01, hy - 0.01, 0.005), relations=("on",)))
    return Model(
        category,
        "fixture",
        half,
        tuple(geoms),
        density=600.0,
        regions=tuple(regions_top),
        parts=tuple(parts),
        controls=tuple((f"{n}_region", f"{n}_drawer") for n in ("top", "middle", "bottom")),
        description=description,
        front=True,
        # LIBERO's cabinets have their drawers on the -y side of their frame.
        libero_yaw=-math.pi / 2,
    )


# Body, drawer fronts and handles of the two looks.
_CABINET_LOOKS = {
    "wooden": ((0.55, 0.38, 0.22, 1.0), (0.62, 0.44, 0.27, 1.0), (0.2, 0.2, 0.2, 1.0)),
    "white": ((0.92, 0.92, 0.9, 1.0), (0.96, 0.96, 0.94, 1.0), GREY_METAL),
}
# LIBERO's cabinets (both of one model) are 19 cm deep, 24 cm wide and 22 cm tall, with drawers 6 cm tall that
# slide out 16 cm and handles close to their fronts: the size that the layouts of LIBERO's task files are drawn
# for (a bowl beside a cabinet whose drawer opens over the table; a hand closing the bottom drawer under the top
# one). `libero-ll convert-tasks` gives their cabinets the `small_` models (docs/interop.md). Their boards are
# thin (5 mm), so that LIBERO's bowl (5.1 cm tall) stands in a drawer under the board above with 3 mm to spare
# (LIBERO's drawers leave 5.8 cm), and their handles' bars stand out of the front by 3.2 cm at most, as LIBERO's
# do (3.1 cm): a bowl put into the bottom drawer, open 15 cm, comes down between its front wall and the middle
# drawer's handle, 10.9 cm apart.
SMALL_CABINET = dict(half=(0.095, 0.12, 0.111), wall=0.005, plinth=0.01, travel=0.16, standoff=0.026)
for _look, (_body, _front, _handle) in _CABINET_LOOKS.items():
    register_category(
        _cabinet(f"{_look}_cabinet", _body, _front, _handle, f"a small {_look} cabinet with three drawers, 34 cm tall")
    )
    register_category(
        _cabinet(f"small_{_look}_cabinet", _body, _front, _handle, f"a {_look} cabinet with three drawers, 22 cm tall",
                 **SMALL_CABINET)
    )


# ---------------------------------------------------------------- microwave with a swinging door

MICROWAVE_HALF = (0.15, 0.21, 0.17)
# The floor inside is a board MICROWAVE_FLOOR thick; it runs out under the door as a sill reaching
# MICROWAVE_SILL in front of the door plane, so that a thing set down in the doorway stands on it
# (and can then be pushed in), and the door closes above it.
MICROWAVE_FLOOR = 0.025
MICROWAVE_SILL = 0.06


def _microwave(
    category: str = "microwave",
    half: tuple[float, float, float] = MICROWAVE_HALF,
    description: str = "a white microwave oven whose door swings open to the left",
    sill: float = MICROWAVE_SILL,
) -> Model:
    """A microwave oven of half size `half` (depth, width, height) whose door, hinged on its left, swings open; its
    floor runs out `sill` in front of the door."""
    hx, hy, hz = half
    t, door_t, panel_w = 0.012, 0.02, 0.08
    floor = MICROWAVE_FLOOR
    shell = (0.85, 0.85, 0.83, 1.0)
    x_front = hx - door_t  # the door closes in front of this plane
    geoms = [
        _box((t / 2, hy, hz), (-hx + t / 2, 0, 0), shell),  # back
        _box(((x_front + hx) / 2, t / 2, hz), ((x_front - hx) / 2, -hy + t / 2, 0), shell),  # left wall
        _box(((x_front + hx) / 2, t / 2, hz), ((x_front - hx) / 2, hy - panel_w - t / 2, 0), shell),  # inner wall
        _box(((x_front + hx) / 2, t / 2, hz), ((x_front - hx) / 2, hy - t / 2, 0), shell),  # outer right wall
        _box(((x_front + hx) / 2, hy, t / 2), ((x_front - hx) / 2, 0, hz - t / 2), shell),  # top
        # floor, and the sill in front of the door
        _box(((x_front + sill + hx) / 2, hy, floor / 2), ((x_front + sill - hx) / 2, 0, -hz + floor / 2), shell),
        # control panel: its face flush with the closed door
        _box((door_t / 2, panel_w / 2, hz), (hx - door_t / 2, hy - panel_w / 2, 0), (0.25, 0.25, 0.27, 1.0)),
        _box((0.001, 0.025, 0.012), (hx + 0.001, hy - panel_w / 2, hz * 0.55), (0.1, 0.5, 0.3, 1.0), collide=False),
        _box((0.001, 0.012, 0.012), (hx + 0.001, hy - panel_w / 2, 0.0), (0.7, 0.7, 0.7, 1.0), collide=False),
        _box((0.001, 0.012, 0.012), (hx + 0.001, hy - panel_w / 2, -hz * 0.45), (0.7, 0.7, 0.7, 1.0), collide=False),
    ]
    door_w = 2 * hy - panel_w - 0.004
    door_h, door_z = (2 * hz - floor - 0.005) / 2, (floor + 0.003 - 0.002) / 2
    door = Part(
        "door",
        (x_front, -hy + 0.002, 0.0),
        # Rotating about -z swings the free edge outwards (+x): positive angles open.
        Joint("door", (0.0, 0.0, -1.0), (0.0, 2.0), damping=0.3, frictionloss=0.05),
        (
            # the door: from just above the sill to just under the top
            _box((door_t / 2, door_w / 2, door_h), (door_t / 2, door_w / 2, door_z), (0.3, 0.3, 0.32, 1.0)),
            _box(
                (0.001, door_w / 2 - 0.04, door_h - 0.033),
                (door_t + 0.001, door_w / 2 - 0.015, door_z),
                (0.05, 0.07, 0.08, 1.0),
                collide=False,
            ),
            *_bar_handle(door_t, door_w - 0.075, 0.0, 0.055, GREY_METAL),
        ),
        handle=(door_t + HANDLE_STANDOFF, door_w - 0.075, 0.0),
    )
    cavity_x0, cavity_x1 = -hx + t, x_front
    cavity_y0, cavity_y1 = -hy + t, hy - panel_w - t
    cavity_z0, cavity_z1 = -hz + floor, hz - t
    heating = Region(
        "heating_region",
        ((cavity_x0 + cavity_x1) / 2, (cavity_y0 + cavity_y1) / 2, (cavity_z0 + cavity_z1) / 2),
        ((cavity_x1 - cavity_x0) / 2 - 0.01, (cavity_y1 - cavity_y0) / 2 - 0.01, (cavity_z1 - cavity_z0) / 2),
        relations=("in",),
    )
    top = Region("top_side", (-door_t / 2, 0.0, hz + 0.005), (hx - 0.02, hy - 0.02, 0.005), relations=("on",))
    return Model(
        category,
        "fixture",
        half,
        tuple(geoms),
        density=400.0,
        regions=(heating, top),
        parts=(door,),
        controls=(("", "door"), ("heating_region", "door")),
        description=description,
        front=True,
        # LIBERO's microwave has its door on the -y side of its frame.
        libero_yaw=-math.pi / 2,
    )


register_category(_microwave())
# LIBERO's microwave is 22 cm deep, 34.5 cm wide and 19 cm tall, its door 26 cm wide: ours, 42 cm wide and 34 cm
# tall, swings its door through a mug LIBERO's files stand beside it, and lifts a bowl put on it to 1.3 m.
# `libero-ll convert-tasks` gives their microwaves this model (docs/interop.md).
register_category(_microwave("small_microwave", (0.11, 0.1725, 0.0935),
                             "a small white microwave oven whose door swings open to the left, 19 cm tall", sill=0.10))


# ---------------------------------------------------------------- flat stove with a knob

STOVE_HALF = (0.14, 0.17, 0.02)


def _stove() -> Model:
    hx, hy, hz = STOVE_HALF
    burner_xy = (-0.02, -0.04)
    geoms = (
        _box((hx, hy, hz), (0, 0, 0), (0.12, 0.12, 0.13, 1.0)),
        # The burner: a ring drawn on the glass; its colour turns red when the knob is on.
        Geom("cylinder", (0.075, 0.0008), (*burner_xy, hz + 0.0008), rgba=(0.3, 0.3, 0.32, 1.0), collide=False),
        Geom("cylinder", (0.065, 0.001), (*burner_xy, hz + 0.001), rgba=(0.16, 0.16, 0.17, 1.0), collide=False, name="burner"),
        _box((0.001, 0.03, 0.008), (hx + 0.001, hy - 0.06, 0), (0.7, 0.1, 0.1, 1.0), collide=False),
    )
    knob = Part(
        "knob",
        (hx - 0.045, hy - 0.05, hz),
        # A dial on the top surface, turned about the vertical axis.
        Joint("knob", (0.0, 0.0, 1.0), (0.0, math.pi / 2), damping=0.02, frictionloss=0.02),
        (
            Geom("cylinder", (0.024, 0.008), (0, 0, 0.008), rgba=(0.75, 0.75, 0.77, 1.0)),
            _box((0.022, 0.006, 0.012), (0, 0, 0.026), (0.85, 0.85, 0.87, 1.0)),
            _box((0.01, 0.002, 0.0015), (0.012, 0, 0.0385), (0.8, 0.1, 0.1, 1.0), collide=False),
        ),
        handle=(0.0, 0.0, 0.026),
    )
    cook = Region("cook_region", (*burner_xy, hz + 0.01), (0.065, 0.065, 0.01), relations=("on",))
    return Model(
        "flat_stove",
        "fixture",
        (hx, hy, hz),
        geoms,
        density=300.0,
        regions=(cook,),
        parts=(knob,),
        controls=(("", "knob"), ("cook_region", "knob")),
        description="a black glass cooktop with one burner and a dial that turns it on",
        front=True,
        # LIBERO's stove is long along x of its frame, its knob at the -x end and the burner beyond it along +x.
        # Turned a quarter turn, ours is long along that x too, its knob the nearer the robot.
        libero_yaw=math.pi / 2,
    )


register_category(_stove())


# ---------------------------------------------------------------- wine rack

def _wine_rack() -> Model:
    wood = (0.5, 0.33, 0.18, 1.0)
    slot, t, slots = 0.085, 0.01, 3
    hx = slot / 2 + t
    hy = (slots * slot + (slots + 1) * t) / 2
    hz = 0.05
    base_t = 0.015
    geoms = [_box((hx, hy, base_t / 2), (0, 0, -hz + base_t / 2), wood)]
    wall_h = 2 * hz - base_t
    wz = -hz + base_t + wall_h / 2
    for sx in (-1, 1):
        geoms.append(_box((t / 2, hy, wall_h / 2), (sx * (hx - t / 2), 0, wz), wood))
    for i in range(slots + 1):
        y = -hy + t / 2 + i * (slot + t)
        geoms.append(_box((hx - t, t / 2, wall_h / 2), (0, y, wz), wood))
    # Bottles stand On the rack (as LIBERO's files say): a standing bottle's centre is above this box, so In
    # would never hold.
    top = Region("top_region", (0.0, 0.0, -hz + base_t + 0.04), (slot / 2, hy - t, 0.04), relations=("on",))
    return Model(
        "wine_rack",
        "fixture",
        (hx, hy, hz),
        tuple(geoms),
        density=600.0,
        regions=(top,),
        description="a wooden rack with three upright slots for bottles",
        # LIBERO's rack has its row of bottles along x, its front on the -y side.
        libero_yaw=-math.pi / 2,
    )


register_category(_wine_rack())


# ---------------------------------------------------------------- two-layer shelf

def _shelf() -> Model:
    wood = (0.66, 0.5, 0.33, 1.0)
    hx, hy, hz = 0.12, 0.23, 0.2
    t = 0.02
    geoms = [
        _box((hx, hy, t / 2), (0, 0, -hz + t / 2), wood),
        _box((hx, hy, t / 2), (0, 0, 0), wood),
        _box((hx, hy, t / 2), (0, 0, hz - t / 2), wood),
        _box((hx, t / 2, hz), (0, -hy + t / 2, 0), wood),
        _box((hx, t / 2, hz), (0, hy - t / 2, 0), wood),
        _box((0.005, hy, hz), (-hx + 0.005, 0, 0), (0.6, 0.45, 0.3, 1.0)),
    ]
    layer_h = hz - 1.5 * t
    inner = (hx - 0.02, hy - t - 0.01, layer_h / 2)
    # A layer takes both: a thing stands on its board, inside the shelf (LIBERO's files say In, ours On).
    bottom = Region("bottom_region", (0.005, 0.0, -hz + t + layer_h / 2), inner, relations=("in", "on"))
    top = Region("top_region", (0.005, 0.0, t / 2 + layer_h / 2), inner, relations=("in", "on"))
    top_side = Region("top_side", (0.0, 0.0, hz + 0.005), (hx - 0.01, hy - 0.01, 0.005), relations=("on",))
    return Model(
        "wooden_two_layer_shelf",
        "fixture",
        (hx, hy, hz),
        tuple(geoms),
        density=600.0,
        regions=(bottom, top, top_side),
        description="an open wooden shelf with two layers, 40 cm tall",
        front=True,
        # LIBERO's shelf opens towards -y of its frame.
        libero_yaw=-math.pi / 2,
    )


register_category(_shelf())


# ---------------------------------------------------------------- desk caddy with four compartments

def _caddy() -> Model:
    plastic = (0.25, 0.35, 0.55, 1.0)
    hx, hy, hz = 0.14, 0.15, 0.05
    t, floor_t = 0.008, 0.01
    split = 0.045  # the front and back compartments start this far from the centre
    wall_h = 2 * hz - floor_t
    wz = -hz + floor_t + wall_h / 2
    geoms = [
        _box((hx, hy, floor_t / 2), (0, 0, -hz + floor_t / 2), plastic),
        _box((t / 2, hy, wall_h / 2), (hx - t / 2, 0, wz), plastic),
        _box((t / 2, hy, wall_h / 2), (-hx + t / 2, 0, wz), plastic),
        _box((hx, t / 2, wall_h / 2), (0, hy - t / 2, wz), plastic),
        _box((hx, t / 2, wall_h / 2), (0, -hy + t / 2, wz), plastic),
        _box((t / 2, hy - t, wall_h / 2), (split, 0, wz), plastic),
        _box((t / 2, hy - t, wall_h / 2), (-split, 0, wz), plastic),
        _box((split - t / 2, t / 2, wall_h / 2), (0, 0, wz), plastic),
    ]
    zc, half_z = wz, wall_h / 2
    depth = (hx - t - split - t / 2) / 2
    xc = (hx - t + split + t / 2) / 2
    side_y = (hy - t - t / 2) / 2
    side_yc = (hy - t + t / 2) / 2
    inside = ("in",)
    regions = (
        Region("front_contain_region", (xc, 0.0, zc), (depth - 0.003, hy - t - 0.003, half_z), inside),
        Region("back_contain_region", (-xc, 0.0, zc), (depth - 0.003, hy - t - 0.003, half_z), inside),
        Region("left_contain_region", (0.0, -side_yc, zc), (split - t / 2 - 0.003, side_y - 0.003, half_z), inside),
        Region("right_contain_region", (0.0, side_yc, zc), (split - t / 2 - 0.003, side_y - 0.003, half_z), inside),
    )
    return Model(
        "desk_caddy",
        "fixture",
        (hx, hy, hz),
        tuple(geoms),
        density=900.0,
        regions=regions,
        description="a blue desk caddy with front, back, left and right compartments",
        # LIBERO's caddy has its front compartment at -x of its frame and its left one at +y.
        libero_yaw=math.pi,
    )


register_category(_caddy())
