"""Servoing on the operational-space controller: the one motion primitive every skill is made of.

The controller takes a delta pose per step: 0.05 m of position and 0.5 rad of rotation per unit of
action (robosuite's default Panda OSC_POSE). A skill names a target pose and gripper command; this
module turns the gap between the hand and that target into the next action. It also holds what
every skill shares about the arm and the scene: which way round to turn the hand so that the
wrist stays in range, and the footprints of what stands around.
"""

from __future__ import annotations

import math

import numpy as np

from libero_ll.assets.categories import get_model

POS_SCALE = 0.05  # metres per unit of position action
ROT_SCALE = 0.5  # radians per unit of rotation action
# The Panda's last joint turns within ±2.9 rad; turns planned for the hand keep it within this.
WRIST_LIMIT = 2.6


def hand_down_rotation(close_dir: float) -> np.ndarray:
    """Rotation of a hand pointing straight down whose fingers close along the world angle `close_dir`.

    The grip frame's x axis is the finger-closing direction and its z axis points out of the palm.
    """
    x = np.array([math.cos(close_dir), math.sin(close_dir), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    return np.stack([x, np.cross(z, x), z], axis=1)


def nearest_equivalent_yaw(close_dir: float, current_rot: np.ndarray, wrist: float | None = None) -> float:
    """The parallel gripper is symmetric: of close_dir and close_dir ± pi, the one nearer the hand's now.

    With `wrist`, the Panda's last joint angle now (radians), a turn that would drive that joint
    past WRIST_LIMIT is avoided when the other way round does not: for a hand pointing down, turning
    it by d about the vertical turns the last joint by about -d.
    """
    now = math.atan2(current_rot[1, 0], current_rot[0, 0])
    cands = sorted((close_dir, close_dir + math.pi, close_dir - math.pi), key=lambda c: abs(wrap_angle(c - now)))
    if wrist is not None:
        within = [c for c in cands if abs(wrist - wrap_angle(c - now)) <= WRIST_LIMIT]
        cands = within or cands
    return cands[0]


def wrap_angle(a: float) -> float:
    """An angle in [-pi, pi)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle (world frame) that turns `current` into `target`, radians."""
    from libero_ll.envs.env import rotation_to_axis_angle

    return rotation_to_axis_angle(target @ current.T)


def servo(
    pos: np.ndarray,
    rot: np.ndarray,
    target_pos: np.ndarray,
    target_rot: np.ndarray,
    grip: float,
    max_speed: float = 0.6,
) -> np.ndarray:
    """The action that moves the hand from (pos, rot) toward (target_pos, target_rot).

    Args:
        pos, rot: the hand's position (m) and rotation matrix now.
        target_pos, target_rot: where it should go.
        grip: -1 opens the fingers, +1 closes them.
        max_speed: cap on each position component, in units of action (0.6 = 3 cm per step).
    """
    dp = np.clip((target_pos - pos) / POS_SCALE, -max_speed, max_speed)
    dr = np.clip(rotation_error(target_rot, rot) / ROT_SCALE, -0.8, 0.8)
    return np.concatenate([dp, dr, [grip]])


def hand_and_wrist(env) -> tuple[np.ndarray, float]:
    """The hand's rotation matrix and the Panda's last joint angle now, for `nearest_equivalent_yaw`."""
    p = env.robot_proprio()
    return p["ee_rot"], float(p["joint_states"][-1])


def is_round(model) -> bool:
    """Whether an object is round seen from above: a square footprint around an upright cylinder at its
    centre (plates, bowls, cans)."""
    if abs(model.half_size[0] - model.half_size[1]) > 1e-6:
        return False
    return any(
        g.type == "cylinder" and g.collide and g.axis == "z" and abs(g.pos[0]) < 1e-6 and abs(g.pos[1]) < 1e-6
        for g in model.geoms
    )


# A moving part is in its fixture's footprint where it stands as closed: a drawer pulled out less than this (metres;
# the expert keeps one pulled further out as a footprint of its own), a door turned less than this (radians: an open
# door is elsewhere, and its closed place in front of the microwave is free); a knob, turning in place, always.
PART_STANDS_CLOSED = {"drawer": 0.02, "door": 0.2}


def stands_closed(value: float, kind: str) -> bool:
    """Whether a moving part whose joint stands at `value` (metres or radians) is where it is when closed."""
    return value < PART_STANDS_CLOSED.get(kind, math.inf)


def footprints(env, skip, above: float) -> dict:
    """Instance → footprint (centre xy, yaw, half x, half y, top z, round) of the instances but `skip`
    whose tops reach `above`.

    The workspace (table or floor) is left out. Footprints are the instances' bounding boxes seen
    from above, as the skills keep the hand and what it carries clear of them; `round` (see
    `is_round`) says that the box's inscribed circle is the object's outline. What stands out of a
    fixture's box (its handles) is in `standing_out`.
    """
    g = env.geometry
    skip = {skip} if isinstance(skip, str) else skip
    out = {}
    for inst, cat in env.spec.instances().items():
        if inst in skip or inst not in g.body_of or inst == g.workspace_name:
            continue
        model = get_model(cat)
        p = g.pos(inst)
        top = p[2] + model.half_size[2]
        if model.kind == "workspace" or top < above:
            continue
        r = g.rot(inst)
        yaw = math.atan2(r[1, 0], r[0, 0])
        out[inst] = (p[:2], yaw, model.half_size[0], model.half_size[1], top, is_round(model))
    return out


def standing_out(env, inst: str, footprint: tuple) -> list:
    """Footprints (as `footprints` gives them, with the instance's top) of what stands out of a fixture's box
    (`Model.standing_out`): of its body, and of each moving part that stands closed (`stands_closed`; a drawer
    pulled further out the expert counts on its own, and an open door is elsewhere). A cabinet's drawer handles
    stand 6 cm out of its box in front, where the hand's housing coming down beside it meets them."""
    g = env.geometry
    model = get_model(env.spec.instances()[inst])
    names = [None] + [p.name for p in model.parts if stands_closed(g.joint_value(inst, p.name), p.joint.kind)]
    rot = g.rot(inst)[:2, :2]
    out = []
    for name in names:
        box = model.standing_out(name)
        if box is not None:
            out.append((g.pos(inst)[:2] + rot @ np.array(box[:2]), footprint[1], box[2], box[3], footprint[4], False))
    return out


def settled_wrist(base_xy: np.ndarray, hand_xy: np.ndarray, close_dir: float) -> float:
    """The Panda's last joint angle (radians, in [-pi, pi)) with the hand pointing down at `hand_xy`, closing along
    `close_dir`, once the arm has settled into its rest posture.

    `nearest_equivalent_yaw` reckons the joint from where it is now, as if only it turned; but the controller's
    null space draws the other joints back to their rest posture as the hand moves, and the last joint takes up
    what they give back. Settled, the joint is 3/4 pi plus the hand's bearing from the robot's base less the
    hand's yaw (the rest posture: pi/4 with the hand in front of the base closing along +y); measured over 18
    benchmark tasks' episodes, within 0.1 rad where the arm's other wrist joints (3 and 5) lay within 0.3 rad
    of rest. After a drawer is pulled open those stand 1.6 rad off; the joint at -0.2 rad then, a grasp a
    quarter turn away was reckoned to leave it at 0.6, and the arm, settling, drove it to its stop.
    """
    d = np.asarray(hand_xy, dtype=float)[:2] - np.asarray(base_xy, dtype=float)[:2]
    return wrap_angle(3 * math.pi / 4 + math.atan2(d[1], d[0]) - close_dir)


def settled_wrist_safe_yaw(close_dir: float, base_xy: np.ndarray, hand_xy: np.ndarray) -> float:
    """`close_dir`, or its other way round (close_dir + pi) when the hand, pointing down at `hand_xy`, would leave the
    Panda's last joint beyond WRIST_LIMIT once the arm settled (`settled_wrist`)."""
    if abs(settled_wrist(base_xy, hand_xy, close_dir)) > WRIST_LIMIT:
        return wrap_angle(close_dir + math.pi)
    return close_dir


def wrist_safe_turn(turn: float, wrist: float) -> float:
    """Of turn and turn ± pi, the smallest that keeps the Panda's last joint (at `wrist` when the turn starts) within WRIST_LIMIT.

    A carried object turned to fit a box (`fit_turn`) or to lie along a drawer's front fits as
    well turned half a revolution more or less. Turning the hand by d turns the joint by about -d.
    """
    cands = (turn, turn - math.pi, turn + math.pi)
    return min(cands, key=lambda t: (abs(wrist - t) > WRIST_LIMIT, abs(t)))


def wrist_safe_yaw(close_dir: float, turn: float, current_rot: np.ndarray, wrist: float) -> float:
    """Of close_dir and close_dir ± pi, the hand yaw to grasp with so that turning by `turn` afterwards keeps the wrist in range.

    As in `nearest_equivalent_yaw`, turning a hand pointing down by d about the vertical turns the
    Panda's last joint by about -d. Of the yaws that keep that joint within WRIST_LIMIT at the
    grasp, the one that leaves it nearest the middle of its range after the turn wins (the
    estimate is rough: the joint's ends are best kept for the grasp's own error).
    """
    now = math.atan2(current_rot[1, 0], current_rot[0, 0])
    cands = [close_dir, close_dir + math.pi, close_dir - math.pi]
    within = [c for c in cands if abs(wrist - wrap_angle(c - now)) <= WRIST_LIMIT] or cands
    return min(within, key=lambda c: (abs(wrist - wrap_angle(c - now) - turn), abs(wrap_angle(c - now))))


def clearances(points: np.ndarray, obstacles: list, rounded: bool = False) -> np.ndarray:
    """The horizontal distance (metres) from each of `points` (an (n, 2) array) to the nearest of `obstacles`'
    footprints (as `footprints` has them), at most 1; with `rounded`, a footprint marked round is its inscribed
    circle, one without the mark (five numbers) a box."""
    best = np.ones(len(points))
    for centre, yaw, hx, hy, *rest in obstacles:
        d = points - np.asarray(centre, dtype=float)[:2]
        if rounded and len(rest) > 1 and rest[1]:
            best = np.minimum(best, np.maximum(np.hypot(d[:, 0], d[:, 1]) - hx, 0.0))
            continue
        c, s = math.cos(yaw), math.sin(yaw)
        gap_x = np.maximum(np.abs(c * d[:, 0] + s * d[:, 1]) - hx, 0.0)
        gap_y = np.maximum(np.abs(-s * d[:, 0] + c * d[:, 1]) - hy, 0.0)
        best = np.minimum(best, np.hypot(gap_x, gap_y))
    return best


def highest_top_near(footprints: list, a: np.ndarray, b: np.ndarray, radius: float) -> float:
    """The highest top (z, metres) of the footprints (as `footprints` has them) near segment a-b.

    Near: within `radius` + 2 cm of one of 11 points along the segment; -inf when none is.
    """
    a, b = np.asarray(a, dtype=float)[:2], np.asarray(b, dtype=float)[:2]
    way = a + np.linspace(0.0, 1.0, 11)[:, None] * (b - a)
    return max((f[4] for f in footprints if float(clearances(way, [f]).min()) < radius + 0.02), default=-np.inf)
