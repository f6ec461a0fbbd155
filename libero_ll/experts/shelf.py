"""Putting things into the layers of an open shelf: in from the front, under the board above.

A layer is a region of a fixture with a board of that same fixture over it (the bottom and top
layers of the two-layer shelf) and at least one side open. The hand cannot come down onto it: the
board stops the wrist. Instead the object is carried to the front of the layer at the layer's
height, slid in through the open side and released, and the hand goes back out the way it came.

The Panda's hand, pointing down, cannot pass under a board roofing a layer about 17 cm tall: its
wrist stops HAND_FRONT in front of the board's edge. So
- an object held far from its centre (a pan by its handle) hangs ahead of the hand into the layer
  and is released there; what still sticks out of the layer is then pushed in by its back end with
  the closed fingers (`push_in_waypoints`);
- an object held near its centre (a standing book) is picked with the hand pitched forward
  (PITCH): the fingertips then lead and the wrist trails behind and above them, so the hand
  reaches the open face and sets the object down just inside it; it is then pushed in further
  with the hand pitched too (`push_in_waypoints`).

The inside of a microwave is a layer too, behind a door (opened first; what goes in must be in
whole for the door to close). Its floor runs out under the door as a sill. A mug held upright by
its rim cannot go in under the top panel (link 6 of the arm, about 0.19 m above the grip, meets the
panel's edge), so it is set down on the sill in the doorway; the open hand rises out of it (one
finger was inside) and backs away, and the mug is then pushed in whole by the closed fingers with
the hand pitched forward (PUSH_PITCH), its wrist trailing outside, and the hand backs out RETREAT
in front of the panel's edge before it turns to the door. The mug is picked by the side of its rim
that already faces out of the microwave (see the expert): turned half a revolution on the way, it
slipped in the fingers and was set down too near the sill's edge, where it fell off.

Depth along the layer is measured from the open face of the fixture, inward (negative in front of
the fixture).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.envs.placement import owner_of

# A board of the fixture lying at most this far (metres) above a region's top roofs it.
ROOF_REACH = 0.05
# How far in front of the front edge of the board over a layer the wrist of a hand pointing down
# stops (metres, hand centre): measured, the Panda's link 7 touches the board's edge at 4.3 cm.
HAND_FRONT = 0.05
# With the hand pointing down, the top of its wrist stands this high above the grip point, metres:
# the hand goes in under a board only when that top stays below it. Measured: link 7 reaches 0.156
# above it; link 6, beside it, 0.185 with the hand 12 cm above a microwave's floor and 0.218 with
# it pushing 3.5 cm above that floor.
WRIST_TOP = 0.23
# Where link 7 passes under the board and only link 6 does not, the hand stops this much nearer
# the board's edge than HAND_FRONT (measured: link 6 touched the microwave's top panel with the
# hand 3.1 cm in front of its edge), metres.
LINK7_TOP = 0.16
HAND_FRONT_LINK6 = 0.045
# A standing book is carried into a layer with the hand pitched PITCH radians forward (fingertips
# toward the back of the layer), aiming PITCHED_REACH past the open face. The hand's housing meets
# the board above at about the open face, and the book then stands 1 to 1.6 cm inside it, on the
# layer's floor. Measured on the two-layer shelf's bottom layer: pitched 0.45, 14 of 14 books ended
# on the floor; 0.4, 7 of 8; 0.5, 1 of 4 (the book fell in front of the shelf); aiming only 1 cm
# past the face, 2 of 4.
PITCH = 0.45
PITCHED_REACH = 0.055
# An object is held near its centre when the grasp point is within this distance of it, metres.
CENTRED = 0.02
# The carried object's front stops this far in front of the open face before it is slid in.
APPROACH_GAP = 0.04
# Slack kept between the object and the layer's floor, roof and back, metres.
LAYER_CLEARANCE = 0.012
# An object held off its centre hangs up to this much off level while carried (a pan by its
# handle: 5 to 30 degrees), radians; its far side is that much lower.
HANG_TILT = 0.45
# Steps the fingers are given to open wide before the hand moves away from a released object.
RELEASE_STEPS = 6
# A hand that lets go in front of a layer rises this far above the object's top before it backs out, metres.
LIFT_CLEARANCE = 0.02
# An object counts as in far enough when its centre is this far inside the region's front face.
DEPTH_MARGIN = 0.02
# Pushing: the closed fingers start this far behind the object's back end, touch it this high above
# the floor (low, so that a standing object slides rather than tips) and reach FINGER_LEAD ahead of
# the hand's centre. A move counts as done STOP_SHORT before its target (the expert's tolerance):
# the push aims that much further.
PUSH_STANDOFF = 0.04
PUSH_HEIGHT = 0.033
FINGER_LEAD = 0.011
STOP_SHORT = 0.008
PUSH_SPEED = 0.6
# A hand pushing under a board it cannot pass pointing down is pitched this far forward (radians):
# its wrist then trails outside.
PUSH_PITCH = 0.5
# After a push the hand backs out to this far in front of the point where its wrist would touch
# the board's edge, metres: then the next skill can turn it (it is 20 cm wide) and raise it there.
RETREAT = 0.07


@dataclass(frozen=True)
class LayerShape:
    """What makes a region of a model a layer, in the model's frame.

    Args:
        roof_gap: height of the underside of the board over the region above the region's top, metres.
        open_dir: unit vector (x, y) out of the layer through its open side.
        face: distance from the region's centre to the fixture's open face along `open_dir`, metres.
        back_gap: distance from the region's back face to the wall behind it, metres (0 without one).
        edge: depth of the roof board's front edge behind the open face, metres (0: flush with it).
        door: whether a door of the model closes over the layer (the whole object must then be in).
    """

    roof_gap: float
    open_dir: tuple[float, float]
    face: float
    back_gap: float = 0.0
    edge: float = 0.0
    door: bool = False


def layer_shape(model, region_name: str) -> LayerShape | None:
    """The layer a region of a fixture model is, or None when no board of the model roofs it.

    A board roofs the region when a colliding box of the model covers the region's centre from
    above, its underside at most ROOF_REACH above the region's top. A side is closed when a box
    stands beyond it covering the middle of that side; the open side is the model's front (+x) when
    that is open, else the first open one of -x, +y, -y. A roofed region with no open side is no
    layer (the hand cannot get in at all), nor is the inside of a drawer (it is pulled open, then
    reached from above like any container). The inside of a microwave is a layer behind a door: the
    door is opened first, and the object must be in whole for it to close.
    """
    region = next((r for r in model.regions if r.name == region_name), None)
    part = model.control(region_name) if region is not None else None
    if region is None or (part is not None and part.joint.kind != "door"):
        return None
    c, h = np.asarray(region.pos, dtype=float), np.asarray(region.half_size, dtype=float)
    boxes = [
        (np.asarray(g.pos, dtype=float), np.asarray(g.size, dtype=float))
        for g in model.geoms
        if g.type == "box" and g.collide and g.yaw == 0.0 and g.axis == "z"
    ]
    top = c[2] + h[2]
    roofs = [
        (p[2] - s[2] - top, p, s)
        for p, s in boxes
        if abs(c[0] - p[0]) <= s[0] and abs(c[1] - p[1]) <= s[1] and -0.005 <= p[2] - s[2] - top <= ROOF_REACH
    ]
    if not roofs:
        return None
    roof_gap, roof_pos, roof_size = min(roofs, key=lambda r: r[0])

    def walls(axis: int, sign: float) -> list[float]:
        """Gaps from the region's face on one side to the boxes standing beyond it, covering its middle."""
        point = c.copy()
        point[axis] += sign * h[axis]
        other = [k for k in range(3) if k != axis]
        gaps = [sign * (p[axis] - s[axis] * sign - point[axis]) for p, s in boxes if all(abs(point[k] - p[k]) <= s[k] for k in other)]
        return [gap for gap in gaps if gap >= -0.005]

    for axis, sign in ((0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)):
        if not walls(axis, sign):
            open_dir = (sign, 0.0) if axis == 0 else (0.0, sign)
            face = model.half_size[axis] - sign * c[axis]
            back_gap = max(0.0, min(walls(axis, -sign), default=0.0))
            roof_front = sign * (roof_pos[axis] - c[axis]) + roof_size[axis]
            edge = max(0.0, float(face - roof_front))
            return LayerShape(float(roof_gap), open_dir, float(face), float(back_gap), edge, part is not None)
    return None


def is_layer(where: str, instances: dict[str, str]) -> bool:
    """Whether a full region name (``<instance>_<region>``) is a layer of its fixture."""
    split = owner_of(where, instances)
    if split is None:
        return False
    inst, region = split
    return layer_shape(get_model(instances[inst]), region) is not None


@dataclass(frozen=True)
class Layer:
    """A layer in the world, as the expert moves things into it.

    Args:
        floor: height of the layer's floor (the region's bottom), metres.
        roof: height of the underside of the board over it, metres.
        face: a point (x, y) on the fixture's open face, level with the region's centre.
        inward: unit vector (x, y) from the open face toward the back of the layer.
        across: unit vector (x, y) along the open face.
        front, back, middle: depths of the region's front face, of the wall behind it (of its
            back face without one) and of its centre, metres.
        width: the region's half extent along the open face, metres.
        edge: depth of the front edge of the board over the layer, metres.
        door: whether a door closes over the layer: what goes in must be in whole.
    """

    floor: float
    roof: float
    face: np.ndarray
    inward: np.ndarray
    across: np.ndarray
    front: float
    back: float
    middle: float
    width: float
    edge: float = 0.0
    door: bool = False

    def depth(self, xy: np.ndarray) -> float:
        """How far a point lies inside the open face, metres (negative in front of it)."""
        return float((np.asarray(xy)[:2] - self.face) @ self.inward)

    def point(self, depth: float, lateral: float, z: float) -> np.ndarray:
        """The world point at a depth, a distance along the face from the face point, and a height."""
        xy = self.face + self.inward * depth + self.across * lateral
        return np.array([xy[0], xy[1], z])


def find_layer(env, where: str) -> Layer | None:
    """The layer a full region name names in this scene, or None when it is no layer."""
    instances = env.spec.instances()
    split = owner_of(where, instances)
    if split is None:
        return None
    shape = layer_shape(get_model(instances[split[0]]), split[1])
    region = env.geometry.site_region(where)
    if shape is None or region is None:
        return None
    out = region.rot[:2, :2] @ np.asarray(shape.open_dir)
    out = out / np.linalg.norm(out)
    axis = 0 if shape.open_dir[0] != 0.0 else 1
    half_in, half_across = region.half[axis], region.half[1 - axis]
    return Layer(
        floor=float(region.center[2] - region.half[2]),
        roof=float(region.center[2] + region.half[2] + shape.roof_gap),
        face=region.center[:2] + out * shape.face,
        inward=-out,
        across=np.array([-out[1], out[0]]),
        front=float(shape.face - half_in),
        back=float(shape.face + half_in + shape.back_gap),
        middle=float(shape.face),
        width=float(half_across),
        edge=float(shape.edge),
        door=shape.door,
    )


def pitched_rotation(close_dir: float, pointing: np.ndarray, pitch: float = PITCH) -> np.ndarray:
    """Rotation of a hand whose fingers close along the world angle `close_dir`, tipped forward.

    The fingertips point down and `pitch` radians toward the horizontal unit vector `pointing`
    (perpendicular to the closing direction); with pitch 0 this is `hand_down_rotation`.
    """
    x = np.array([math.cos(close_dir), math.sin(close_dir), 0.0])
    p = np.array([pointing[0], pointing[1], 0.0])
    z = p * math.sin(pitch) - np.array([0.0, 0.0, 1.0]) * math.cos(pitch)
    return np.stack([x, np.cross(z, x), z], axis=1)


def footprint_extent(model, yaw: float, direction: np.ndarray) -> float:
    """How far an object's footprint (half sizes, turned by yaw) reaches from its centre along a unit direction."""
    a = yaw - math.atan2(direction[1], direction[0])
    return abs(math.cos(a)) * model.half_size[0] + abs(math.sin(a)) * model.half_size[1]


def entry_depth(layer: Layer, model, grasp_offset: np.ndarray, yaw: float) -> float:
    """The depth of the hand (negative: in front of the layer) that keeps the held object APPROACH_GAP in front of it.

    Args are as for `insert_waypoints`.
    """
    return float(grasp_offset @ layer.inward) - footprint_extent(model, yaw, layer.inward) - APPROACH_GAP


def insert_waypoints(
    layer: Layer,
    model,
    grasp_offset: np.ndarray,
    yaw: float,
    hand_rot: np.ndarray,
    pitched: bool,
    lateral: float,
    carry_z: float,
    speed: float | None,
) -> list:
    """Waypoints that carry a held object in front of a layer, slide it in, release it and back out.

    The hand is over the object's grasp point; the object is already turned as it goes in.

    Args:
        layer: the layer.
        model: the held object's model.
        grasp_offset: (x, y) from the object's centre to the hand, world frame, as it goes in.
        yaw: the object's yaw as it goes in.
        hand_rot: the hand's rotation as it goes in.
        pitched: whether the hand is pitched forward (it may then reach past the open face).
        lateral: where along the open face the object's centre goes, metres from the face point.
        carry_z: the height the hand is carried at before it comes down in front of the layer.
        speed: carrying speed (None: the expert's own).
    """
    u = layer.inward
    ahead = footprint_extent(model, yaw, u)
    # The hand's depth relative to the object's centre, and where the centre should end: in the
    # middle of the region, or as deep as the back allows.
    behind = float(grasp_offset @ u)
    centre_goal = min(layer.middle, layer.back - ahead - LAYER_CLEARANCE)
    # Held off centre, the object hangs with its far side low: it goes in that much higher, as far
    # as the roof allows.
    droop = 0.0 if pitched else (ahead - behind) * math.sin(HANG_TILT)
    height = 2 * model.half_size[2]
    lowest = layer.floor + model.grasp.height + LAYER_CLEARANCE
    highest = layer.roof - (height - model.grasp.height) - LAYER_CLEARANCE
    slide_z = max(lowest, min(lowest + droop, highest))
    # The hand stops in front of the board's edge (nearer it where only link 6 stands higher than
    # the board's underside), unless the layer is tall enough for the whole wrist to pass under.
    reach = layer.edge + (PITCHED_REACH if pitched else -HAND_FRONT)
    under = not pitched and slide_z + WRIST_TOP + LAYER_CLEARANCE <= layer.roof
    if under:
        reach = math.inf
    elif not pitched and slide_z + LINK7_TOP + LAYER_CLEARANCE <= layer.roof:
        reach = layer.edge - HAND_FRONT_LINK6
    hand_depth = min(centre_goal + behind, reach)
    release_z = lowest
    side = lateral + float(grasp_offset @ layer.across)
    entry = entry_depth(layer, model, grasp_offset, yaw)
    start = layer.point(entry, side, carry_z)
    outside = layer.point(entry, side, slide_z)
    inside = layer.point(hand_depth, side, slide_z)
    down = layer.point(hand_depth, side, release_z)
    # Back out to behind the object's back end, where a push in would start. A hand still in front
    # of the board first rises until its fingers clear the object's top (a finger pinching a
    # mug's rim is inside the mug, and would drag it back out); a hand under the board backs out
    # along the object (open fingers straddling a handle slide off its end).
    back_depth = hand_depth - behind - ahead - PUSH_STANDOFF
    if not under and not pitched:
        clear_z = release_z + (height - model.grasp.height) + LIFT_CLEARANCE
        away = [
            ("move", layer.point(hand_depth, side, clear_z), hand_rot, -1.0),
            ("move", layer.point(back_depth, side, clear_z), hand_rot, -1.0),
        ]
    else:
        away = [("move", layer.point(back_depth, side, release_z + 0.005), hand_rot, -1.0)]
    return [
        ("move", start, hand_rot, 1.0, speed),
        ("move", outside, hand_rot, 1.0, speed),
        ("move", inside, hand_rot, 1.0, speed),
        ("move", down, hand_rot, 1.0, speed),
        ("hold", RELEASE_STEPS, hand_rot, -1.0),
        *away,
    ]


def push_in_waypoints(layer: Layer, model, pos: np.ndarray, yaw: float, hand: np.ndarray, close_dir: float) -> list:
    """Waypoints that push an object lying in a layer's mouth further in, by its back end; [] when it is in far enough.

    The closed fingers come down behind the object's back end (as seen from the open face), push
    it in along the layer until its centre (behind a door: its back end) is DEPTH_MARGIN past the
    region's front face (a little more, where the back allows), and back out. A hand pointing down
    stops HAND_FRONT in front of the board's edge unless it pushes low enough for its wrist to pass
    under the board. Where that stop would leave the object short, and behind a door (what goes in
    must be in whole), the hand pushes pitched PUSH_PITCH forward instead: its wrist then trails
    outside, and the fingers reach under the board (a standing book in a shelf's bottom layer, a
    mug in a microwave).

    Args:
        layer: the layer.
        model: the object's model.
        pos: the object's centre now (world).
        yaw: its yaw now.
        hand: the hand's position now.
        close_dir: the world angle the fingers close along (along the open face).
    """
    u = layer.inward
    depth = layer.depth(pos)
    extent = footprint_extent(model, yaw, u)
    inset = extent if layer.door else 0.0
    goal = min(layer.front + inset + 2 * DEPTH_MARGIN, layer.back - extent - LAYER_CLEARANCE)
    if depth >= layer.front + inset + DEPTH_MARGIN or goal <= depth:
        return []
    rear = depth - extent
    lateral = float((pos[:2] - layer.face) @ layer.across)
    z = layer.floor + min(model.grasp.height, PUSH_HEIGHT) + 0.002
    behind = layer.point(rear - PUSH_STANDOFF, lateral, z)
    last = rear + (goal - depth) - FINGER_LEAD + STOP_SHORT
    stop = layer.edge - HAND_FRONT
    if z + WRIST_TOP > layer.roof and last > stop:
        # Where a hand pointing down stops, the object's centre would get this deep.
        reached = stop + FINGER_LEAD - STOP_SHORT + extent
        pitched = layer.door or reached < layer.front + inset + DEPTH_MARGIN
        if not pitched:
            last = stop
    else:
        pitched = layer.door
    hand_rot = pitched_rotation(close_dir, u, PUSH_PITCH if pitched else 0.0)
    # The hand first turns where it is, pointing down, to close along `close_dir`; then it goes back along the layer
    # at its height (open fingers straddling a handle slide off its end), pitching as it goes, and down behind the
    # object. Turned and pitched in one move (1.3 to 1.5 rad in libero_10's microwave task), the arm swung its base
    # and forearm joints by up to 1.5 rad and the hand stood 1.5 to 4 cm off its waypoint until the budget ran out.
    level = layer.point(rear - PUSH_STANDOFF, lateral, max(hand[2], z))
    return [
        ("move", np.asarray(hand, dtype=float), pitched_rotation(close_dir, u, 0.0), -1.0),
        ("move", level, hand_rot, -1.0),
        ("move", behind, hand_rot, -1.0),
        ("hold", 8, hand_rot, 1.0),
        ("move", layer.point(last, lateral, z), hand_rot, 1.0, PUSH_SPEED),
        # Out from under the board, far enough for the wrist to rise in front of its edge.
        ("move", layer.point(min(last - 0.06, stop - RETREAT), lateral, z + 0.02), hand_rot, 1.0),
    ]
