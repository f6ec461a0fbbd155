"""Movable objects: bowls, plates, containers, groceries, kitchenware and books, built from primitives.

Every model is drawn in a "natural" frame first (z = 0 at the object's bottom, the main body's axis at
x = y = 0) and then shifted so that the model origin is the centre of its bounding box, as
`libero_ll.assets.models.Model` requires. Sizes are in metres and follow the real things, trimmed
where a Panda hand (fingers open to 8 cm, pads 2 cm wide, palm 3 cm above the grip point) has to
hold them: whatever is picked up has two parallel faces at most 6.5 cm apart within 2 cm of its
top (a can, a carton, a bottle's neck or cap), or a wall or handle the fingers can pinch (a bowl,
a mug, the frying pan). Round necks and caps are octagonal so that the pads meet flat faces.
Densities give believable masses. tests/assets/test_objects.py checks masses, resting poses, the
grasp hints against the hand's geometry, and the scripted expert on every graspable object.
"""

from __future__ import annotations

import math
from dataclasses import replace

from libero_ll.assets.categories import register_category
from libero_ll.assets.models import Geom, Grasp, Model, Region, open_box, ring

# Where the Panda hand's parts sit relative to its grip point (metres, measured on robosuite's
# model): the finger pads span 0.4 cm below to 1.2 cm above it, the finger tips reach 1 cm below
# it and the palm's underside is 2.9 cm above it. So a grip point 2 cm below an object's top puts
# the pads wholly on the object and keeps the palm clear of it.
_GRIP_BELOW_TOP = 0.02
# A thin wall is pinched lower: the fingers need about ten control steps to close on it, and the
# scripted expert starts lifting after eight, so the pads must still overlap the wall after the
# hand has risen a centimetre or so.
_RIM_GRIP_BELOW_TOP = 0.022
# Across-the-model-y closing direction, the default of most hints.
_ACROSS_Y = math.pi / 2
# Walls and rims of things that stand on a base stop this far above the bottom. Upright, only the base
# touches what is below: each wall box on the table is four more contacts (a plate's 24-box rim made 96,
# most of a scene's physics cost), and tilted by more than a degree or so a wall still meets the surface.
_FOOT_GAP = 0.001


# ---------------------------------------------------------------- building blocks


def _cyl(radius: float, z0: float, z1: float, rgba, collide: bool = True, x=0.0, y=0.0) -> Geom:
    """An upright cylinder from height z0 to z1 (natural frame, metres)."""
    return Geom("cylinder", (radius, (z1 - z0) / 2), (x, y, (z0 + z1) / 2), rgba=rgba, collide=collide)


def _box(hx: float, hy: float, z0: float, z1: float, rgba, collide=True, x=0.0, y=0.0, yaw=0.0) -> Geom:
    """A box with horizontal half extents hx, hy from height z0 to z1 (natural frame, metres)."""
    return Geom("box", (hx, hy, (z1 - z0) / 2), (x, y, (z0 + z1) / 2), yaw=yaw, rgba=rgba, collide=collide)


def _walls(radius: float, z0: float, z1: float, wall: float, count: int, rgba) -> list[Geom]:
    """A round wall of `count` boxes from height z0 to z1 (natural frame); see `ring`."""
    return ring(radius, (z0 + z1) / 2, wall, z1 - z0, count, rgba)


def _octagon(apothem: float, z0: float, z1: float, rgba, collide: bool = True) -> list[Geom]:
    """An upright regular octagonal prism, faces normal to the x and y axes and the diagonals.

    Four crossing bars, each as wide as one face, cover exactly the octagon. Flat faces matter: a
    parallel gripper closing on two of them gets face contacts that hold against twisting, where
    a cylinder would give two point contacts it can pivot about.
    """
    side_half = apothem * math.tan(math.pi / 8)
    return [_box(apothem, side_half, z0, z1, rgba, collide, yaw=i * math.pi / 4) for i in range(4)]


def _extent(g: Geom) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Lower and upper corner of a geom's axis-aligned bounding box (upright geoms turned by yaw)."""
    if getattr(g, "axis", "z") != "z":
        raise ValueError("objects are built from upright geoms only")
    if g.type == "box":
        c, s = abs(math.cos(g.yaw)), abs(math.sin(g.yaw))
        half = (c * g.size[0] + s * g.size[1], s * g.size[0] + c * g.size[1], g.size[2])
    elif g.type == "cylinder":
        half = (g.size[0], g.size[0], g.size[1])
    elif g.type == "capsule":
        half = (g.size[0], g.size[0], g.size[0] + g.size[1])
    elif g.type == "sphere":
        half = (g.size[0],) * 3
    else:
        raise ValueError(f"no bounding box for geom type {g.type!r}")
    return (
        tuple(p - h for p, h in zip(g.pos, half)),
        tuple(p + h for p, h in zip(g.pos, half)),
    )


def _shift(g: Geom, d) -> Geom:
    return replace(g, pos=(g.pos[0] - d[0], g.pos[1] - d[1], g.pos[2] - d[2]))


def _model(
    category: str,
    geoms: list[Geom],
    *,
    density: float,
    description: str,
    friction: tuple[float, float, float] = (1.0, 0.005, 0.0001),
    friction_priority: int = 0,
    grasp: Grasp | None = None,
    regions: tuple[Region, ...] = (),
) -> Model:
    """A movable model from geoms, regions and a grasp drawn in the natural frame (bottom at z = 0).

    The bounding box is computed from the geoms, and everything is moved so that its centre is the
    model origin. Grasp heights are measured from the bottom and need no change; grasp offsets and
    regions move with the geoms.

    Args:
        category: the category name.
        geoms: the shapes; the lowest must touch z = 0.
        density: kg/m^3 of every colliding geom.
        description: one line for people.
        friction: sliding, torsional, rolling friction.
        friction_priority: above 0, this friction governs every contact of the model's geoms (`Model`).
        grasp: grasp hint (offset in the natural frame) or None for things that are not picked up.
        regions: affordance regions in the natural frame.
    """
    lows, highs = zip(*(_extent(g) for g in geoms))
    lo = [min(v[i] for v in lows) for i in range(3)]
    hi = [max(v[i] for v in highs) for i in range(3)]
    if abs(lo[2]) > 1e-9:
        raise ValueError(f"{category}: the lowest geom must touch z = 0, not {lo[2]:.4f}")
    centre = [(a + b) / 2 for a, b in zip(lo, hi)]
    half = tuple((b - a) / 2 for a, b in zip(lo, hi))
    if grasp is not None:
        ox, oy = grasp.offset
        grasp = replace(grasp, offset=(ox - centre[0], oy - centre[1]))
    moved = tuple(
        replace(r, pos=(r.pos[0] - centre[0], r.pos[1] - centre[1], r.pos[2] - centre[2])) for r in regions
    )
    return Model(
        category,
        "object",
        half,
        tuple(_shift(g, centre) for g in geoms),
        density=density,
        friction=friction,
        friction_priority=friction_priority,
        regions=moved,
        grasp=grasp,
        description=description,
    )


def _body_grasp(height: float, across_yaw: float = _ACROSS_Y) -> Grasp:
    """Close across the object's axis at `height` above its bottom."""
    return Grasp("body", height=height, across_yaw=across_yaw)


def _rim_grasp(radius: float, top: float) -> Grasp:
    """Pinch a round wall of centre radius `radius` on the model's -y side, just below its top edge.

    The fingers close along y, across the wall's thickness; the ring of wall boxes must have a box
    centred at -90 degrees (a count divisible by 4) so that the pads meet a flat face.
    """
    return Grasp("rim", height=top - _RIM_GRIP_BELOW_TOP, offset=(0.0, -radius), across_yaw=_ACROSS_Y)


def _contain_region(inner_x: float, inner_y: float, floor_top: float, height: float) -> Region:
    """The inside of an open container: from its floor up to `height` above it (tall things stick out)."""
    return Region(
        "contain_region", (0.0, 0.0, floor_top + height / 2), (inner_x, inner_y, height / 2), relations=("in",)
    )


# ---------------------------------------------------------------- bowls, plates, ramekin


def _bowl(category: str, rgba, inside_rgba, description: str, radius: float = 0.058, height: float = 0.045) -> Model:
    """A bowl whose wall (8 mm thick, `height` tall) stands on a circle of `radius`."""
    wall, base = 0.008, 0.008
    geoms = [_cyl(radius - wall / 2, 0.0, base, rgba)]
    geoms += _walls(radius, _FOOT_GAP, height, wall, 16, rgba)
    # The glazed inside, seen from above.
    geoms.append(_cyl(radius - wall / 2 - 0.001, base, base + 0.0006, inside_rgba, collide=False))
    return _model(
        category,
        geoms,
        density=900.0,
        friction=(1.2, 0.005, 0.0001),
        grasp=_rim_grasp(radius, height),
        description=description,
    )


_BLACK_GLAZE, _WHITE_GLAZE = (0.07, 0.07, 0.08, 1.0), (0.92, 0.92, 0.9, 1.0)
register_category(
    _bowl("akita_black_bowl", _BLACK_GLAZE, (0.13, 0.12, 0.12, 1.0), "a black ceramic bowl, 12.5 cm across")
)
register_category(_bowl("white_bowl", _WHITE_GLAZE, (0.97, 0.97, 0.95, 1.0), "a white bowl, 12.5 cm across"))
# LIBERO's bowls are 10.7 cm across and 5.1 cm tall: the size its cabinets' drawers (15 cm deep inside) are drawn
# for. `libero-ll convert-tasks` gives their bowls these models (docs/interop.md).
_SMALL_BOWL = dict(radius=0.0495, height=0.051)
register_category(
    _bowl("small_akita_black_bowl", _BLACK_GLAZE, (0.13, 0.12, 0.12, 1.0), "a small black ceramic bowl, 10.7 cm across",
          **_SMALL_BOWL)
)
register_category(
    _bowl("small_white_bowl", _WHITE_GLAZE, (0.97, 0.97, 0.95, 1.0), "a small white bowl, 10.7 cm across", **_SMALL_BOWL)
)

def _plate(category: str, radius: float, rim_boxes: int, description: str) -> Model:
    """A flat plate whose floor is a disc of `radius`, with a low rim of `rim_boxes` wall boxes standing on a circle
    2 mm inside the floor's edge."""
    return _model(
        category,
        [_cyl(radius, 0.0, 0.008, (0.95, 0.93, 0.86, 1.0))]
        + _walls(radius - 0.002, _FOOT_GAP, 0.018, 0.008, rim_boxes, (0.85, 0.82, 0.74, 1.0)),
        density=1800.0,
        # Glaze on wood and on glaze slides: 0.6, which governs the plate's contacts (priority 1), where the
        # larger of two frictions would give 1.0 against the table. At 1.0 on both of its contacts, fingers
        # pushing the rim with the least downward force wedged the plate against the table: a policy's push
        # that pressed down by a millimetre a step moved it 0.1 to 2.4 cm in 20 steps, and 7.4 to 8.8 cm at 0.7
        # (docs/policies.md, "Pushing the plate").
        friction=(0.6, 0.005, 0.0001),
        friction_priority=1,
        description=description,
    )


register_category(_plate("plate", 0.095, 24, "a flat dinner plate, 20 cm across, with a low rim"))
# LIBERO's plate is 13.6 cm across: the size that the layouts of LIBERO's task files are drawn for (a bowl between
# the plate and a ramekin, a pudding to the right of the plate). `libero-ll convert-tasks` gives their plates this
# model (docs/interop.md).
register_category(_plate("small_plate", 0.066, 20, "a small flat plate, 13.6 cm across, with a low rim"))


def _ramekin() -> Model:
    radius, wall, height, base = 0.041, 0.008, 0.05, 0.008
    porcelain, glaze = (0.96, 0.95, 0.92, 1.0), (0.55, 0.33, 0.2, 1.0)
    glaze_band = 0.012
    geoms = [_cyl(radius - wall / 2, 0.0, base, porcelain)]
    geoms += _walls(radius, _FOOT_GAP, height - glaze_band, wall, 12, porcelain)
    geoms += ring(radius, height - glaze_band / 2, wall, glaze_band, 12, glaze)
    return _model(
        "glazed_rim_porcelain_ramekin",
        geoms,
        density=1300.0,
        grasp=_rim_grasp(radius, height),
        description="a white porcelain ramekin with a brown glazed rim, 9 cm across",
    )


register_category(_ramekin())


# ---------------------------------------------------------------- containers

_WICKER = (0.62, 0.45, 0.25, 1.0)
_WICKER_DARK = (0.45, 0.31, 0.16, 1.0)


def _basket() -> Model:
    inner_x, inner_y, height, wall, floor = 0.08, 0.105, 0.08, 0.01, 0.01
    # open_box is centred on its middle; the natural frame has the floor's underside at z = 0.
    box = open_box(inner_x, inner_y, height, wall, floor, _WICKER, wall_gap=_FOOT_GAP)
    geoms = [_shift(g, (0.0, 0.0, -height / 2)) for g in box]
    # A darker woven band on the outside of each wall, for the look of a basket.
    out_x, out_y, skin = inner_x + wall, inner_y + wall, 0.0008
    for s in (-1, 1):
        geoms.append(_box(skin, out_y, 0.03, 0.045, _WICKER_DARK, collide=False, x=s * (out_x + skin)))
        geoms.append(_box(out_x, skin, 0.03, 0.045, _WICKER_DARK, collide=False, y=s * (out_y + skin)))
    return _model(
        "basket",
        geoms,
        density=700.0,
        # Up to 12 cm above the floor: a carton standing in the basket sticks out of its 8 cm walls.
        regions=(_contain_region(inner_x - 0.002, inner_y - 0.002, floor, 0.12),),
        description="a wicker basket with an open top, 18 x 23 cm, 8 cm deep",
    )


def _tray() -> Model:
    inner_x, inner_y, height, wall, floor = 0.15, 0.11, 0.03, 0.012, 0.008
    wood, grip = (0.72, 0.52, 0.32, 1.0), (0.3, 0.2, 0.12, 1.0)
    box = open_box(inner_x, inner_y, height, wall, floor, wood, wall_gap=_FOOT_GAP)
    geoms = [_shift(g, (0.0, 0.0, -height / 2)) for g in box]
    # Hand-hold slots on the two short sides, drawn as dark patches.
    for s in (-1, 1):
        geoms.append(
            _box(wall / 2 + 0.0008, 0.03, 0.014, 0.024, grip, collide=False, x=s * (inner_x + wall / 2))
        )
    return _model(
        "wooden_tray",
        geoms,
        density=600.0,
        regions=(_contain_region(inner_x - 0.002, inner_y - 0.002, floor, 0.12),),
        description="a wooden serving tray, 32 x 24 cm, with a 3 cm rim",
    )


register_category(_basket())
register_category(_tray())


# ---------------------------------------------------------------- kitchenware


def _frypan() -> Model:
    radius, wall, height, base = 0.096, 0.006, 0.045, 0.006
    body, handle_rgba, inside = (0.18, 0.18, 0.19, 1.0), (0.05, 0.05, 0.05, 1.0), (0.26, 0.26, 0.28, 1.0)
    geoms = [_cyl(radius - wall / 2, 0.0, base, body)]
    geoms += _walls(radius, _FOOT_GAP, height, wall, 16, body)
    geoms.append(_cyl(radius - wall / 2 - 0.001, base, base + 0.0006, inside, collide=False))
    # The handle leaves the wall just below the rim and runs 17 cm out along +x.
    handle_len, handle_z = 0.17, (height - 0.016, height - 0.004)
    geoms.append(_box(handle_len / 2, 0.011, *handle_z, handle_rgba, x=radius + handle_len / 2))
    # A red brand dot on the handle.
    dot = (0.8, 0.1, 0.1, 1.0)
    geoms.append(_cyl(0.006, handle_z[1], handle_z[1] + 0.0006, dot, collide=False, x=radius + 0.12))
    return _model(
        "chefmate_8_frypan",
        geoms,
        # About 0.3 kg: a light aluminium pan. A pinch of the side wall cannot hold the pan's weight
        # 10 cm away (it tips out of the fingers); a pinch across the handle 2.5 cm from the wall
        # holds 0.3 kg with the pan hanging 5-30 degrees off level.
        density=800.0,
        friction=(1.0, 0.005, 0.0001),
        grasp=Grasp("rim", height=handle_z[0] + 0.004, offset=(radius + 0.025, 0.0), across_yaw=_ACROSS_Y),
        description="an 8-inch non-stick frying pan, 20 cm across, with a black handle",
    )


def _moka_pot() -> Model:
    alu, dark = (0.72, 0.73, 0.75, 1.0), (0.06, 0.06, 0.06, 1.0)
    geoms = _octagon(0.034, 0.0, 0.06, alu)
    geoms.append(_cyl(0.027, 0.06, 0.07, alu))
    geoms += _octagon(0.03, 0.07, 0.132, alu)
    geoms.append(_cyl(0.029, 0.132, 0.137, alu))  # the lid
    geoms.append(_cyl(0.008, 0.137, 0.143, dark))  # the knob
    geoms.append(_box(0.011, 0.007, 0.112, 0.128, alu, x=-0.036))  # the spout
    # The black handle: an arm out from the upper chamber and a grip down its outer end.
    geoms.append(_box(0.022, 0.007, 0.118, 0.13, dark, x=0.05))
    geoms.append(_box(0.007, 0.007, 0.07, 0.13, dark, x=0.066))
    return _model(
        "moka_pot",
        geoms,
        # The octagons' crossing bars overlap, and MuJoCo counts overlaps twice: about 0.45 kg in all.
        density=500.0,
        # Across the flats of the upper chamber, handle and spout out of the fingers' way.
        grasp=_body_grasp(0.143 - _GRIP_BELOW_TOP - 0.003),
        description="an octagonal aluminium moka pot, 14 cm tall, with a black handle",
    )


def _mug(category: str, wall_rgba, handle_rgba, inside_rgba, description: str, lower_rgba=None) -> Model:
    radius, wall, height, base = 0.037, 0.006, 0.09, 0.008
    geoms = [_cyl(radius - wall / 2, 0.0, base, lower_rgba or wall_rgba)]
    if lower_rgba is None:
        geoms += _walls(radius, _FOOT_GAP, height, wall, 12, wall_rgba)
    else:
        split = height * 0.45
        geoms += _walls(radius, _FOOT_GAP, split, wall, 12, lower_rgba)
        geoms += ring(radius, (split + height) / 2, wall, height - split, 12, wall_rgba)
    geoms.append(_cyl(radius - wall / 2 - 0.001, base, base + 0.0006, inside_rgba, collide=False))
    # A C-shaped handle on +x: two arms and an upright grip.
    out = radius + wall / 2
    geoms.append(_box(0.013, 0.006, 0.066, 0.076, handle_rgba, x=out + 0.011))
    geoms.append(_box(0.013, 0.006, 0.02, 0.03, handle_rgba, x=out + 0.011))
    geoms.append(_box(0.005, 0.006, 0.02, 0.076, handle_rgba, x=out + 0.027))
    return _model(
        category,
        geoms,
        density=1700.0,
        # 0.3 kg held by its 6 mm wall at the rim: the fingers close until they stop before the lift (lifted
        # after the expert's usual 8 steps, 3 cm apart and still closing, the mug turned in them and fell in 5
        # of libero_90's 200 mug episodes and 2 of libero_10's 60).
        grasp=replace(_rim_grasp(radius, height), close_until_still=True),
        description=description,
    )


register_category(_frypan())
register_category(_moka_pot())
register_category(
    _mug(
        "porcelain_mug",
        (0.95, 0.95, 0.93, 1.0),
        (0.95, 0.95, 0.93, 1.0),
        (0.9, 0.9, 0.88, 1.0),
        "a plain white porcelain mug, 8 cm across, 9 cm tall",
    )
)
register_category(
    _mug(
        "red_coffee_mug",
        (0.72, 0.08, 0.07, 1.0),
        (0.72, 0.08, 0.07, 1.0),
        (0.95, 0.93, 0.9, 1.0),
        "a red coffee mug, white inside, 8 cm across",
    )
)
register_category(
    _mug(
        "white_yellow_mug",
        (0.96, 0.96, 0.94, 1.0),
        (0.96, 0.8, 0.15, 1.0),
        (0.96, 0.8, 0.15, 1.0),
        "a mug, white on top and yellow below, with a yellow handle and inside",
        lower_rgba=(0.96, 0.8, 0.15, 1.0),
    )
)


# ---------------------------------------------------------------- books


def _book(category: str, cover_rgba, band_rgba, description: str) -> Model:
    # A small hardback standing upright: 7.5 cm wide (x), 3 cm thick (y), 12 cm tall, so that it
    # fits an 8 cm desk-caddy compartment. Its covers face +-y; the fingers close across them.
    hx, hy, h = 0.0375, 0.015, 0.12
    pages = (0.95, 0.93, 0.85, 1.0)
    geoms = [
        _box(hx, hy, 0.0, h, cover_rgba),
        # The page block shows at the top and at the fore-edge (+x); the spine is at -x.
        _box(hx - 0.002, hy - 0.0025, 0.003, h + 0.0006, pages, collide=False, x=0.0026),
        # A title band across the covers and the spine.
        _box(hx - 0.006, hy + 0.0006, 0.075, 0.09, band_rgba, collide=False, x=-0.006),
        _box(0.0006, hy - 0.003, 0.075, 0.09, band_rgba, collide=False, x=-hx - 0.0003),
    ]
    return _model(
        category,
        geoms,
        density=700.0,
        friction=(0.9, 0.005, 0.0001),
        grasp=_body_grasp(h - _GRIP_BELOW_TOP),
        description=description,
    )


register_category(
    _book(
        "black_book",
        (0.06, 0.06, 0.07, 1.0),
        (0.85, 0.72, 0.3, 1.0),
        "a small black hardback with a gold title band, standing",
    )
)
register_category(
    _book(
        "yellow_book",
        (0.93, 0.78, 0.12, 1.0),
        (0.1, 0.1, 0.12, 1.0),
        "a small yellow hardback with a black title band, standing",
    )
)


# ---------------------------------------------------------------- bottles


def _wine_bottle() -> Model:
    glass, foil, label = (0.1, 0.22, 0.12, 1.0), (0.45, 0.05, 0.1, 1.0), (0.93, 0.9, 0.8, 1.0)
    r = 0.031
    geoms = [
        _cyl(r, 0.0, 0.15, glass),
        Geom("sphere", (r,), (0.0, 0.0, 0.15), rgba=glass),  # the rounded shoulder
        # The neck and the foil over the cork, flat-faced for the fingers.
        *_octagon(0.0125, 0.17, 0.205, glass),
        *_octagon(0.0125, 0.205, 0.24, foil),
        _cyl(r + 0.0006, 0.05, 0.11, label, collide=False),
    ]
    return _model(
        "wine_bottle",
        geoms,
        density=1000.0,
        friction=(0.9, 0.005, 0.0001),
        # Pinch the top of the neck; the bottle hangs below the fingers.
        grasp=_body_grasp(0.24 - _GRIP_BELOW_TOP - 0.005),
        description="a half-size green wine bottle with a burgundy foil, 24 cm tall, standing",
    )


def _ketchup() -> Model:
    red, cap, label = (0.75, 0.06, 0.04, 1.0), (0.95, 0.95, 0.93, 1.0), (0.93, 0.9, 0.8, 1.0)
    # A squeeze bottle with a stadium-shaped footprint, 6.8 x 4.4 cm: a box between two half-round ends.
    hy, flat = 0.022, 0.012
    geoms = [
        _box(flat, hy, 0.0, 0.13, red),
        _cyl(hy, 0.0, 0.13, red, x=flat),
        _cyl(hy, 0.0, 0.13, red, x=-flat),
        _cyl(0.016, 0.13, 0.142, cap),
        _box(flat + 0.008, hy + 0.0006, 0.04, 0.085, label, collide=False),
    ]
    return _model(
        "ketchup",
        geoms,
        # The round ends overlap the middle box, and MuJoCo counts overlaps twice: about 0.37 kg.
        density=700.0,
        friction=(1.2, 0.005, 0.0001),
        # Across the flat sides (4.4 cm), just below the short cap.
        grasp=_body_grasp(0.142 - _GRIP_BELOW_TOP - 0.004),
        description="a red ketchup squeeze bottle with a white cap, 14 cm tall",
    )


def _square_bottle(
    category: str, half: float, body_top: float, body_rgba, cap_rgba, label_rgba, description: str
) -> Model:
    """A bottle with a square body and a tall octagonal flip cap, which is where the fingers hold it."""
    cap_top = body_top + 0.026
    geoms = [
        _box(half, half, 0.0, body_top, body_rgba),
        *_octagon(0.016, body_top, cap_top, cap_rgba),
        _box(half + 0.0006, half + 0.0006, body_top * 0.3, body_top * 0.75, label_rgba, collide=False),
    ]
    return _model(
        category,
        geoms,
        density=1000.0,
        friction=(1.2, 0.005, 0.0001),
        # The finger tips stay just above the body's shoulders.
        grasp=_body_grasp(cap_top - _GRIP_BELOW_TOP + 0.006),
        description=description,
    )


def _round_bottle(
    category: str, radius: float, body_top: float, body_rgba, cap_rgba, label_rgba, description: str
) -> Model:
    """A round bottle whose narrow, flat-faced neck and cap are where the fingers hold it."""
    neck_top, cap_top = body_top + 0.04, body_top + 0.055
    geoms = [
        _cyl(radius, 0.0, body_top, body_rgba),
        _cyl(radius * 0.75, body_top, body_top + 0.012, body_rgba),
        *_octagon(0.014, body_top + 0.012, neck_top, body_rgba),
        *_octagon(0.014, neck_top, cap_top, cap_rgba),
        _cyl(radius + 0.0006, body_top * 0.25, body_top * 0.75, label_rgba, collide=False),
    ]
    return _model(
        category,
        geoms,
        density=1000.0,
        friction=(1.2, 0.005, 0.0001),
        grasp=_body_grasp(cap_top - _GRIP_BELOW_TOP),
        description=description,
    )


register_category(_wine_bottle())
register_category(_ketchup())
register_category(
    _square_bottle(
        "bbq_sauce",
        0.026,
        0.11,
        (0.32, 0.1, 0.05, 1.0),
        (0.08, 0.08, 0.08, 1.0),
        (0.95, 0.65, 0.15, 1.0),
        "a dark-brown barbecue sauce bottle with an orange label and black cap, 14 cm tall",
    )
)
register_category(
    _round_bottle(
        "salad_dressing",
        0.027,
        0.1,
        (0.9, 0.62, 0.2, 1.0),
        (0.15, 0.5, 0.2, 1.0),
        (0.95, 0.93, 0.85, 1.0),
        "a round orange Italian-dressing bottle with a green cap, 15.5 cm tall",
    )
)
register_category(
    _square_bottle(
        "new_salad_dressing",
        0.025,
        0.12,
        (0.95, 0.94, 0.88, 1.0),
        (0.95, 0.95, 0.95, 1.0),
        (0.3, 0.6, 0.25, 1.0),
        "a square creamy-white ranch-dressing bottle with a green label, 14.5 cm tall",
    )
)


# ---------------------------------------------------------------- cans, boxes and cartons

_SAUCE_RED, _LEAF_GREEN = (0.85, 0.2, 0.1, 1.0), (0.2, 0.55, 0.2, 1.0)


def _can(category: str, radius: float, height: float, body_rgba, label_rgba, description: str) -> Model:
    metal = (0.75, 0.75, 0.78, 1.0)
    geoms = [
        _cyl(radius, 0.0, height, metal),
        _cyl(radius + 0.0008, height * 0.15, height * 0.85, body_rgba, collide=False),
        _cyl(radius + 0.0012, height * 0.4, height * 0.65, label_rgba, collide=False),
    ]
    return _model(
        category,
        geoms,
        density=650.0,
        friction=(1.5, 0.005, 0.0001),
        grasp=_body_grasp(height - _GRIP_BELOW_TOP),
        description=description,
    )


def _box_package(category: str, half, body_rgba, label_rgba, description: str, density=550.0,
                 standing: bool = False) -> Model:
    """A closed box lying flat, the fingers closing across its short side (y); `standing`, a tall box standing on
    its end (a drinks box, a carton of shampoo), held near its top."""
    hx, hy, hz = half
    geoms = [
        _box(hx, hy, 0.0, 2 * hz, body_rgba),
        _box(hx * 0.7, hy + 0.0008, hz * 0.4, hz * 1.6, label_rgba, collide=False),
    ]
    return _model(
        category,
        geoms,
        density=density,
        friction=(1.5, 0.005, 0.0001),
        grasp=_body_grasp(2 * hz - _GRIP_BELOW_TOP if standing else hz + 0.008),
        description=description,
    )


def _carton(category: str, half: float, body_top: float, body_rgba, band_rgba, cap_rgba, description):
    """A gable-top drinks carton: square body, a narrower roof and the sealed fin along x."""
    geoms = [
        _box(half, half, 0.0, body_top, body_rgba),
        _box(half, half * 0.55, body_top, body_top + 0.008, body_rgba),
        _box(half, 0.004, body_top + 0.008, body_top + 0.014, body_rgba),
        _box(half + 0.0006, half + 0.0006, body_top * 0.35, body_top * 0.65, band_rgba, collide=False),
        # The screw cap on the roof's slope.
        _cyl(0.008, body_top + 0.008, body_top + 0.012, cap_rgba, False, x=half * 0.45, y=-half * 0.3),
    ]
    return _model(
        category,
        geoms,
        density=650.0,
        friction=(1.3, 0.005, 0.0001),
        # Across the body's flat sides; the palm clears the low roof.
        grasp=_body_grasp(body_top + 0.014 - _GRIP_BELOW_TOP - 0.003),
        description=description,
    )


register_category(
    _can("alphabet_soup", 0.03, 0.1, (0.8, 0.12, 0.1, 1.0), (0.95, 0.9, 0.75, 1.0), "a red soup can, 10 cm")
)
register_category(
    _can("tomato_sauce", 0.028, 0.09, _SAUCE_RED, _LEAF_GREEN, "a tomato sauce can, 9 cm tall")
)
register_category(
    _box_package(
        "cream_cheese",
        (0.045, 0.026, 0.02),
        (0.75, 0.8, 0.9, 1.0),
        (0.15, 0.25, 0.65, 1.0),
        "a silver-blue cream cheese box, 9 x 5 cm",
    )
)
register_category(
    _box_package(
        "butter",
        (0.05, 0.025, 0.018),
        (0.95, 0.88, 0.45, 1.0),
        (0.9, 0.9, 0.85, 1.0),
        "a yellow butter pack, 10 x 5 cm",
    )
)
register_category(
    _box_package(
        "chocolate_pudding",
        (0.045, 0.03, 0.02),
        (0.36, 0.2, 0.1, 1.0),
        (0.93, 0.85, 0.7, 1.0),
        "a brown chocolate pudding box, 9 x 6 x 4 cm",
        density=500.0,
    )
)
register_category(
    _box_package(
        "cookies",
        # 12 cm long, so that it fits the basket (16 x 21 cm inside) at any yaw; a bowl rests on it.
        (0.06, 0.031, 0.025),
        (0.12, 0.2, 0.55, 1.0),
        (0.55, 0.35, 0.15, 1.0),
        "a blue box of cookies lying flat, 12 x 6 x 5 cm",
        density=420.0,
    )
)
register_category(
    _carton(
        "milk",
        0.03,
        0.11,
        (0.96, 0.96, 0.96, 1.0),
        (0.15, 0.35, 0.8, 1.0),
        (0.15, 0.35, 0.8, 1.0),
        "a white milk carton with a blue band and cap, 6 x 6 x 12.4 cm",
    )
)
register_category(
    _carton(
        "orange_juice",
        0.03,
        0.12,
        (0.97, 0.55, 0.1, 1.0),
        (0.2, 0.55, 0.2, 1.0),
        (0.95, 0.95, 0.95, 1.0),
        "an orange juice carton with a green band and white cap, 6 x 6 x 13.4 cm",
    )
)


# ---------------------------------------------------------------- LIBERO-plus's added groceries
#
# LIBERO-plus adds objects of these 13 categories to LIBERO's scenes (its category names, `__N` and all). Ours
# are drawn from primitives at everyday sizes, every one narrow enough across its grasp for the open hand.


def _capped(category: str, radius: float, body_top: float, cap_radius: float, cap_height: float, body_rgba,
            cap_rgba, label_rgba, description: str, density: float = 700.0) -> Model:
    """A round pill bottle or jar: a body and a screw cap (or lid) as wide or a little wider, held across the cap."""
    cap_top = body_top + cap_height
    geoms = [
        _cyl(radius, 0.0, body_top, body_rgba),
        _cyl(cap_radius, body_top, cap_top, cap_rgba),
        _cyl(radius + 0.0006, body_top * 0.25, body_top * 0.8, label_rgba, collide=False),
    ]
    return _model(
        category,
        geoms,
        density=density,
        friction=(1.5, 0.005, 0.0001),
        grasp=_body_grasp(cap_top - _GRIP_BELOW_TOP),
        description=description,
    )


_PILL_WHITE, _TIN = (0.95, 0.95, 0.93, 1.0), (0.72, 0.73, 0.76, 1.0)
register_category(
    _capped("bottle_of_antihistamines", 0.019, 0.065, 0.02, 0.016, _PILL_WHITE, (0.2, 0.45, 0.8, 1.0),
            (0.35, 0.65, 0.9, 1.0), "a white pill bottle of antihistamines with a blue cap, 8 cm tall")
)
register_category(
    _capped("bottle_of_aspirin", 0.021, 0.07, 0.022, 0.017, (0.55, 0.3, 0.12, 1.0), _PILL_WHITE,
            (0.9, 0.2, 0.15, 1.0), "a brown pill bottle of aspirin with a white cap and red label, 8.7 cm tall")
)
register_category(
    _capped("bottle_of_alfredo_sauce", 0.031, 0.095, 0.032, 0.018, (0.96, 0.93, 0.82, 1.0), (0.85, 0.75, 0.3, 1.0),
            (0.1, 0.35, 0.2, 1.0), "a glass jar of creamy alfredo sauce with a gold lid, 11.3 cm tall",
            density=900.0)
)
register_category(
    _square_bottle("bottle_of_baby_oil", 0.022, 0.12, (0.97, 0.75, 0.82, 1.0), _PILL_WHITE,
                   (0.55, 0.75, 0.95, 1.0), "a pink bottle of baby oil with a white flip cap, 14.6 cm tall")
)
register_category(
    _round_bottle("bottle_of_barbecue_sauce__2", 0.028, 0.11, (0.45, 0.08, 0.05, 1.0), (0.9, 0.85, 0.8, 1.0),
                  (0.95, 0.8, 0.25, 1.0), "a round dark-red barbecue sauce bottle with a cream cap, 16.5 cm tall")
)
register_category(
    _can("can_of_soda__1", 0.033, 0.122, (0.1, 0.45, 0.25, 1.0), (0.95, 0.95, 0.9, 1.0), "a green soda can, 12.2 cm")
)
register_category(
    _can("canned_food__1", 0.034, 0.105, (0.9, 0.75, 0.2, 1.0), (0.2, 0.3, 0.6, 1.0),
         "a food can with a yellow and blue label, 10.5 cm tall")
)
register_category(
    _box_package("can_of_sardines", (0.052, 0.03, 0.014), _TIN, (0.15, 0.3, 0.6, 1.0),
                 "a flat silver tin of sardines with a blue label, 10.4 x 6 x 2.8 cm", density=900.0)
)
register_category(
    _box_package("box_of_vegetable_juice__1", (0.029, 0.02, 0.052), (0.85, 0.25, 0.15, 1.0), _LEAF_GREEN,
                 "a red box of vegetable juice standing on end, 5.8 x 4 x 10.4 cm", density=700.0, standing=True)
)
register_category(
    _box_package("box_of_shampoo__1", (0.03, 0.021, 0.07), (0.3, 0.6, 0.85, 1.0), _PILL_WHITE,
                 "a blue carton of shampoo standing on end, 6 x 4.2 x 14 cm", density=450.0, standing=True)
)
register_category(
    _box_package("boxed_ink_cartridge__3", (0.055, 0.03, 0.02), (0.12, 0.12, 0.14, 1.0), (0.2, 0.7, 0.85, 1.0),
                 "a black ink-cartridge box with a cyan label, 11 x 6 x 4 cm", density=300.0)
)
register_category(
    _box_package("box_of_yogurt__1", (0.045, 0.031, 0.028), _PILL_WHITE, (0.85, 0.3, 0.5, 1.0),
                 "a white box of yogurt cups with a pink label, 9 x 6.2 x 5.6 cm", density=400.0)
)
register_category(
    # A filled sachet lying flat: a box to the fingers.
    _box_package("bag_of_yeast", (0.045, 0.032, 0.013), (0.9, 0.78, 0.45, 1.0), (0.75, 0.2, 0.15, 1.0),
                 "a flat golden sachet of yeast with a red label, 9 x 6.4 x 2.6 cm", density=600.0)
)
