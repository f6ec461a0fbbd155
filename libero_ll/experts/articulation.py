"""Waypoints for the articulated fixtures: pulling and pushing drawers, swinging doors, turning knobs.

Each function reads the scene from the simulator and returns waypoints for `ScriptedExpert`:
("move", position, hand rotation, grip) or ("hold", steps, hand rotation, grip). Positions are of
the grip site (the centre between the finger pads), metres, world frame.

How the hand works each part:
- drawers and doors have horizontal bar handles standing off their front. To open, the hand points
  into the face, pinches the bar and pulls along the drawer's axis or around the door's hinge
  (turning the wrist with the door). A door that does not face the robot is dragged ajar by the
  closed fingers hooked behind its bar from above, then pushed open from inside (the arm, reaching
  round the door to pinch it from outside, meets its edge). To shut, the closed fingers of a hand
  pointing down push the front of the bar, or a door's outer face, back;
- a knob is grasped from above across its grip ridge and turned by turning the wrist.
"""

from __future__ import annotations

import math

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.assets.fixtures import HANDLE_STANDOFF
from libero_ll.envs.thresholds import DOOR_OPEN
from libero_ll.experts.skills import (
    WRIST_LIMIT,
    clearances,
    footprints,
    hand_and_wrist,
    hand_down_rotation,
    highest_top_near,
    nearest_equivalent_yaw,
)

CLOSED, OPEN = 1.0, -1.0
# How far past the threshold a part is driven, metres or radians.
DRAWER_PULL_TO = 0.195
# A drawer is pushed shut towards this (past its stop, so that the hand, which lags behind its
# waypoints, still shuts it; much further, and the hand pressing on a shut drawer winds the arm up),
# in this many waypoints, the finger pads' centre this far in front of the bar's axis (the leaning
# fingers' tips then clear the bar's top and press on its front).
DRAWER_PUSH_TO = -0.02
DRAWER_PUSH_STEPS = 3
DRAWER_PUSH_DEPTH = 0.027
DOOR_PULL_TO = 1.35
# A door is pushed shut at this fraction of the way from its hinge to its handle...
DOOR_PUSH_AT = 0.75
# ... and this far above the handle (the microwave door's top edge is 16.8 cm above it), or, on a lower door,
# DOOR_PUSH_BELOW_TOP below its top edge (the small microwave's is 9.2 cm above its handle).
DOOR_PUSH_HIGH = 0.105
DOOR_PUSH_BELOW_TOP = 0.05
# A door is pushed towards this angle (past shut: the hand lags behind the path), radians.
DOOR_PUSH_TO = -0.3
# A knob is turned to these angles (radians; on at 0.6 or more, off at 0.15 or less) ...
KNOB_ON_TO = 1.0
KNOB_OFF_TO = -0.1
# ... or, when the hand would meet something near the knob turning it that far, at least to these.
KNOB_ON_LEAST = 0.7
KNOB_OFF_LEAST = 0.0
ABOVE = 0.09


def _site(env, name: str) -> tuple[np.ndarray, np.ndarray]:
    import mujoco

    sid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_SITE, name)
    return env.data.site_xpos[sid].copy(), env.data.site_xmat[sid].reshape(3, 3).copy()


def _body(env, name: str) -> tuple[np.ndarray, np.ndarray]:
    import mujoco

    bid = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY, name)
    return env.data.xpos[bid].copy(), env.data.xmat[bid].reshape(3, 3).copy()


def _hand(env, along: np.ndarray) -> np.ndarray:
    """A downward hand whose fingers close along the horizontal direction `along`."""
    yaw = math.atan2(along[1], along[0])
    return hand_down_rotation(nearest_equivalent_yaw(yaw, *hand_and_wrist(env)))


def _rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


# The hand leans this far forward from pointing straight down when it works a handle, radians.
HOOK_PITCH = 0.3
# The finger pads' centre sits this far behind the bar's axis (hooking) or in front of it (pushing).
HOOK_DEPTH = 0.02
# Pinching a bar: the open hand lines up this far in front of it, then comes in until the pads'
# centre is this far behind the bar's axis, and closes for this many steps.
PINCH_APPROACH = 0.1
PINCH_DEPTH = 0.004
PINCH_CLOSE_STEPS = 10
# How far the pinching hand points below the horizontal, radians: a fully horizontal hand drives
# the Panda's wrist to a joint limit.
PINCH_PITCH = 0.12


def _hook_hand(env, toward: np.ndarray, swinging: bool = False) -> np.ndarray:
    """A hand pointing down and leaning towards the horizontal `toward`, fingers closing across it.

    The fingers may close either way round. For a straight push (a drawer) the way nearer the
    hand's now is taken. A door's swing turns the hand by up to 110 degrees on the way, and then
    only one way keeps the Panda's last joint off its stop wherever the hand starts (measured on
    the microwave from the home pose and from inside a microwave's doorway: the hand's x axis
    along `toward` x up; the other way wound the joint to its stop at +2.9 or -2.9 rad).
    """
    z = np.array([0, 0, -math.cos(HOOK_PITCH)]) + math.sin(HOOK_PITCH) * toward
    x = np.cross([0, 0, 1.0], toward)
    if swinging or x @ env.robot_proprio()["ee_rot"][:, 0] < 0:
        x = -x
    return np.stack([x, np.cross(z, x), z], axis=1)


def _pinch_hand(toward: np.ndarray, pitch: float, side: float) -> np.ndarray:
    """A hand pointing along `toward` and `pitch` radians below it, fingers closing across a horizontal bar.

    The fingers close in the vertical plane through `toward`, so that the hand's width (about
    20 cm along the closing direction) stays in front of the face the bar stands on. `side` is the
    handle's y in the world (the robot stands at y = 0).
    """
    toward = toward / np.linalg.norm(toward)
    up = np.array([0, 0, 1.0])
    c, s = math.cos(pitch), math.sin(pitch)
    z = c * toward - s * up
    # Of the two equivalent closing directions, the one that keeps the Panda's wrist joints away
    # from their limits depends on which side of the robot the handle is (found by trying both).
    sign = 1.0 if side < 0 else -1.0
    x = sign * (s * toward + c * up)
    return np.stack([x, np.cross(z, x), z], axis=1)


# Long moves to a handle are cut into legs of at most this length (metres): each waypoint has a
# step budget, and a hand that runs out of it on a long leg starts the next one from wherever it got
# to, which on the way to a door's outer face can be on the wrong side of the door or above its top
# edge.
APPROACH_LEG = 0.08
# The hand comes down in front of a face this far further out than where it will work, metres ...
APPROACH_OUT = 0.05
# ... or, to push a drawer shut, nearer (in steps of APPROACH_OUT / 5) where something standing there reaches the
# closed fingers' height: the fingers come down at least this far (metres) from its footprint. LIBERO's
# KITCHEN_SCENE4, converted, has a bowl 3 cm in front of the open bottom drawer's handle.
PUSH_FINGERS_CLEAR = 0.02
# ... and crosses to it this far (metres) above the top of anything standing within reach of its way (`pass_over`):
# there, a wine bottle 24 cm tall stands 13 cm beside the drawer's handle.
CROSS_ABOVE = 0.03


def _legs(start: np.ndarray, end: np.ndarray, hand: np.ndarray, grip: float) -> list:
    """Waypoints along the straight line from `start` to `end`, none more than APPROACH_LEG apart.

    The hand passes the ones between without stopping ("via") and stops at `end`.
    """
    n = max(1, math.ceil(float(np.linalg.norm(end - start)) / APPROACH_LEG))
    return [("via" if k < n else "move", start + (end - start) * k / n, hand, grip) for k in range(1, n + 1)]


def _follow(
    handle: np.ndarray, start: np.ndarray, hand: np.ndarray, path, grip: float, n: int = 8, via: bool = False
) -> tuple[list, np.ndarray, np.ndarray]:
    """Waypoints that carry the hand (at `start`, rotation `hand`) along with the handle's `path`.

    With `via`, the hand passes the waypoints before the last without stopping.
    """
    way, last, turn = [], start, np.eye(3)
    for k in range(1, n + 1):
        shift, turn = path(k, n)
        last = handle + shift + turn @ (start - handle)
        way.append(("via" if via and k < n else "move", last, turn @ hand, grip))
    return way, last, turn


def _work_handle(
    env, handle: np.ndarray, out: np.ndarray, path, pulling: bool, steps: int = 8, depth: float = HOOK_DEPTH,
    approach: float = APPROACH_OUT, over=None,
) -> list:
    """Pinch a handle's bar and pull it along `path`, or rest the closed fingers on its front and push.

    Pulling: the hand points horizontally into the face, comes straight in with the fingers open
    above and below the bar (so that no other handle above or below is in the way), closes on it
    and follows the path. Pushing: the hand, pointing down and leaning towards the face, rests its
    closed fingers against the front of the bar and follows the path.

    Args:
        handle: the bar's centre now; out: horizontal unit vector out of the face it stands on.
        path: callable(k, n) → (offset of the handle after step k of n, rotation about z of step k).
        steps: waypoints along the path.
        depth: pushing, how far in front of the bar's axis the finger pads' centre rests, metres.
        approach: pushing, how far in front of that the hand comes down, metres.
        over: callable(a, b) → the height (metres) at which the hand crosses from a to b, at least. Pushing, it
            crosses at its own height or at the height it comes down from, whichever is higher, without one.
            Pulling, it crosses straight to above the bar unless `over` asks for more: then it rises where it is,
            turned as it is, and crosses at that height, turning on the way the way round that keeps the wrist in
            its range.
    """
    up = np.array([0, 0, ABOVE])
    if pulling:
        # Turn the wrist while the hand still points down, then tip it towards the face: turning
        # both at once swings the Panda's forearm to a joint limit.
        hand = _pinch_hand(-out, PINCH_PITCH, handle[1])
        front = handle + out * PINCH_APPROACH
        grip = handle - out * PINCH_DEPTH
        down = _pinch_hand(-out, math.pi / 2, handle[1])
        way = []
        if over is not None:
            hand_at = env.robot_proprio()["ee_pos"]
            high = over(hand_at, front + up)
            if high > max(hand_at[2], front[2] + ABOVE) + 0.01:
                now, wrist = hand_and_wrist(env)
                risen = np.array([hand_at[0], hand_at[1], high])
                across = np.array([front[0], front[1], high])
                way = _legs(hand_at, risen, now, OPEN)
                # Both rotations point down: the turn between them is about the vertical, and near half a
                # revolution either way round would do; half of it on the way makes it the way round that keeps
                # the Panda's last joint (which turns by about minus the hand's turn) within its range.
                turn = math.atan2((down @ now.T)[1, 0], (down @ now.T)[0, 0])
                turn = min((turn, turn - 2 * math.pi, turn + 2 * math.pi),
                           key=lambda t: (abs(wrist - t) > WRIST_LIMIT, abs(t)))
                way.append(("via", (risen + across) / 2, _rot_z(turn / 2) @ now, OPEN))
                way.append(("move", across, down, OPEN))
        way += [
            ("move", front + up, down, OPEN),
            ("move", front, hand, OPEN),
            ("move", grip, hand, OPEN),
            ("hold", PINCH_CLOSE_STEPS, hand, CLOSED),
        ]
        follow, last, turn = _follow(handle, grip, hand, path, CLOSED)
        back = last + turn @ out * PINCH_APPROACH
        # Let go, back off, and point the hand down again as it was before it tipped towards the
        # face: the next skill starts from a wrist that is not wound up.
        clear = back + turn @ out * PINCH_APPROACH * 0.5 + up
        return way + follow + [
            ("hold", 6, turn @ hand, OPEN),
            ("move", back, turn @ hand, OPEN),
            ("move", clear, turn @ hand, OPEN),
            ("move", clear, turn @ down, OPEN),
        ]
    start = handle + out * depth
    hand = _hook_hand(env, -out, swinging=not np.allclose(path(steps, steps)[1], np.eye(3)))
    # The hand rises where it is (a slanting way up could meet a door's edge), goes above the
    # working point and a little further out in short legs, then comes straight down and in: a hand
    # that comes down early lands on the door's top edge or behind the door.
    clear = start + up + out * approach
    hand_at = env.robot_proprio()["ee_pos"]
    high = max(hand_at[2], clear[2], over(hand_at, clear) if over is not None else -math.inf)
    risen = np.array([hand_at[0], hand_at[1], high])
    way = _legs(hand_at, risen, hand, CLOSED) if risen[2] > hand_at[2] + 0.01 else []
    above = np.array([clear[0], clear[1], high])
    way += _legs(risen, above, hand, CLOSED)
    if high > clear[2] + 0.01:
        way += _legs(above, clear, hand, CLOSED)
    way += [("move", start + out * approach, hand, CLOSED), ("move", start, hand, CLOSED)]
    follow, last, turn = _follow(handle, start, hand, path, CLOSED, steps, via=True)
    back = last + turn @ out * 0.04
    return way + follow + [("move", back, turn @ hand, CLOSED), ("move", back + up, turn @ hand, CLOSED)]


# A door faces the robot when its outer face's normal is within this cosine of the way to the robot (-x): within
# about 45 degrees.
FACES_ROBOT = 0.7
# A door that does not face the robot is pulled open by its handle this far (radians) ...
DOOR_HOOK_TO = 0.95
# ... with the fingers this far (metres) from the handle's middle towards the hinge (its posts stand 5 cm out) ...
DOOR_HOOK_IN = 0.02
# ... and then, once it is open this far (radians; less, and the hand does not fit between the door and the
# appliance), pushed open from inside (see `door`).
DOOR_AJAR = 0.75
# Pushing a door open from inside, the finger tips rest this far (metres) above the handle's height.
DOOR_INSIDE_HIGH = 0.04


def faces_robot(out: np.ndarray) -> bool:
    """Whether a face whose outward horizontal normal is `out` faces the robot (which stands at -x)."""
    return float(out[0]) < -FACES_ROBOT


def _down_onto(env, start: np.ndarray, hand: np.ndarray, high: float, beside=None, turn_above: bool = False) -> list:
    """The closed hand's way from where it is down onto `start` from above, clear of a door it works.

    It rises where it is to `high` (or stays at its height, if higher), crosses at that height to above
    `start + beside`, comes straight down there and, with `beside`, moves in to `start`. With `turn_above` it
    keeps its rotation until it is above that point and turns to `hand` there, nearer the robot (turned far
    out, the arm stretched straight and stuck); else it turns on the way up.
    """
    beside = np.zeros(3) if beside is None else beside
    hand_at, now = env.robot_proprio()["ee_pos"], env.robot_proprio()["ee_rot"]
    carried = now if turn_above else hand
    risen = np.array([hand_at[0], hand_at[1], max(hand_at[2], high)])
    above = np.array([start[0] + beside[0], start[1] + beside[1], risen[2]])
    way = _legs(hand_at, risen, carried, CLOSED) if risen[2] > hand_at[2] + 0.01 else []
    way += _legs(risen, above, carried, CLOSED)
    if turn_above:
        way.append(("move", above, hand, CLOSED))
    way += _legs(above, start + beside, hand, CLOSED)
    if np.any(beside):
        way.append(("move", start, hand, CLOSED))
    return way


def _hook_behind(env, handle: np.ndarray, out: np.ndarray, path, steps: int = 8) -> list:
    """Hook the closed fingers behind a bar handle from above and pull it along `path`.

    For a door that does not face the robot: the hand points down (the arm stays above the door's top edge
    while the door turns), comes straight down behind the bar and drags it round; then it rises out.
    """
    up = np.array([0, 0, ABOVE])
    start = handle - out * HOOK_DEPTH
    hand = _hook_hand(env, -out, swinging=True)
    way = _down_onto(env, start, hand, start[2] + ABOVE)
    follow, last, turn = _follow(handle, start, hand, path, CLOSED, steps, via=True)
    return way + follow + [("move", last + up, turn @ hand, CLOSED)]


def _push_inside(env, contact: np.ndarray, out: np.ndarray, path, top: float, steps: int = 8) -> list:
    """Push a door open from inside: the closed fingers rest on its inner face at `contact` (whose outward
    normal is `out`) and follow `path`.

    The hand, which dragged the door ajar from outside, rises above the appliance's `top` before it crosses
    to the inside, and turns only there (`_down_onto`), as far as it must (of the two ways the fingers can
    close, the nearer).
    """
    up = np.array([0, 0, ABOVE])
    hand = _hook_hand(env, -out)
    start = contact + out * HOOK_DEPTH
    way = _down_onto(env, start, hand, top + ABOVE / 2, beside=out * APPROACH_OUT, turn_above=True)
    follow, last, turn = _follow(contact, start, hand, path, CLOSED, steps, via=True)
    back = last + turn @ out * 0.04
    return way + follow + [("move", back, turn @ hand, CLOSED), ("move", back + up, turn @ hand, CLOSED)]


def drawer(env, inst: str, part: str, opening: bool, rng) -> list:
    """Pull a drawer open (to DRAWER_PULL_TO, or 5 mm short of the stop of one that slides out less) by its
    handle, or push it shut."""
    handle, _ = _site(env, f"{inst}_{part}_handle")
    _, rot = _body(env, f"{inst}_{part}")
    joint = get_model(env.spec.instances()[inst]).part(part).joint
    out = rot @ np.array(joint.axis)  # out of the cabinet
    q = env.geometry.joint_value(inst, part)
    handle = handle + np.cross([0, 0, 1.0], out) * rng.uniform(-0.02, 0.02)
    travel = (min(DRAWER_PULL_TO, joint.range[1] - 0.005) if opening else DRAWER_PUSH_TO) - q
    path = lambda k, n: (out * travel * k / n, np.eye(3))  # noqa: E731
    if opening:
        return _work_handle(env, handle, out, path, pulling=True, over=lambda a, b: pass_over(env, inst, a, b))
    approach = push_approach(env, inst, handle + out * DRAWER_PUSH_DEPTH, out)
    return _work_handle(env, handle, out, path, pulling=False, steps=DRAWER_PUSH_STEPS, depth=DRAWER_PUSH_DEPTH,
                        approach=approach, over=lambda a, b: pass_over(env, inst, a, b))


def push_approach(env, inst: str, start: np.ndarray, out: np.ndarray) -> float:
    """How far in front of `start` (where the closed fingers will push a handle of `inst`, facing the horizontal
    `out`) they come down: APPROACH_OUT, or the furthest of its fifths whose spot stays PUSH_FINGERS_CLEAR from
    what (but `inst`) stands there as tall as the fingers reach down; `start` itself when none does."""
    standing = list(footprints(env, inst, start[2] - 0.01).values())
    if not standing:
        return APPROACH_OUT
    options = np.linspace(APPROACH_OUT, 0.0, 6)
    gaps = clearances(start[:2] + options[:, None] * out[:2], standing, rounded=True)
    return float(next((a for a, gap in zip(options, gaps) if gap >= PUSH_FINGERS_CLEAR), 0.0))


def pass_over(env, inst: str, a: np.ndarray, b: np.ndarray) -> float:
    """The height (metres; -inf where nothing is in the way) at which the hand, crossing from `a` to `b` on its way
    to a handle of `inst`, passes CROSS_ABOVE over what (but `inst`) stands near its way (`highest_top_near`,
    within HAND_HALF_LENGTH) and reaches above the lower end."""
    standing = list(footprints(env, inst, min(a[2], b[2])).values())
    return highest_top_near(standing, a, b, HAND_HALF_LENGTH) + CROSS_ABOVE


def door(env, inst: str, part: str, opening: bool, rng) -> list:
    """Swing a door open (to DOOR_PULL_TO) or shut by its handle, turning the wrist with it."""
    model = get_model(env.spec.instances()[inst])
    joint = model.part(part).joint
    hinge, rot = _body(env, f"{inst}_{part}")
    handle, _ = _site(env, f"{inst}_{part}_handle")
    handle = handle + rot[:, 1] * rng.uniform(-0.015, 0.015)
    q = env.geometry.joint_value(inst, part)
    sign = float((rot @ np.array(joint.axis))[2])  # +1: opening turns counter-clockwise seen from above
    dq = (DOOR_PULL_TO if opening else DOOR_PUSH_TO) - q

    def path(k, n):
        turn = _rot_z(sign * dq * k / n)
        return turn @ (handle - hinge) + hinge - handle, turn

    if opening and q >= DOOR_OPEN:
        return []  # a repeated step (ScriptedExpert) whose door the last one opened
    if opening and faces_robot(rot[:, 0]):
        return _work_handle(env, handle, rot[:, 0], path, pulling=True)
    if opening and q < DOOR_AJAR:
        # Turned away from the robot, a door swings its outer face away too: the arm, reaching round the door
        # to a handle pinched from outside, meets the door's edge. The fingers hook behind the handle and drag
        # the door ajar; a second step (ScriptedExpert) pushes it open from inside.
        ajar = DOOR_HOOK_TO - q
        # Hooked nearer the hinge, the handle's way round is shorter and stays nearer the robot.
        hook = handle - rot[:, 1] * DOOR_HOOK_IN

        def ajar_path(k, n):
            turn = _rot_z(sign * ajar * k / n)
            return turn @ (hook - hinge) + hinge - hook, turn

        return _hook_behind(env, hook, rot[:, 0], ajar_path)
    if opening:
        local = rot.T @ (handle - hinge)
        contact = hinge + rot @ np.array([0.0, local[1], local[2] + DOOR_INSIDE_HIGH])

        def inside_path(k, n):
            turn = _rot_z(sign * dq * k / n)
            return turn @ (contact - hinge) + hinge - contact, turn

        top = env.geometry.pos(inst)[2] + model.half_size[2]
        return _push_inside(env, contact, -rot[:, 0], inside_path, top)
    # Shut, the finger tips push the door's outer face just below its top edge, so that the hand
    # (20 cm wide along the door) passes above the handle and the appliance's top: the handle of a
    # wide-open door is out of the Panda's reach.
    local = rot.T @ (handle - hinge)
    top_edge = max(g.pos[2] + g.size[2] for g in model.part(part).geoms if g.type == "box")
    high = min(DOOR_PUSH_HIGH, top_edge - local[2] - DOOR_PUSH_BELOW_TOP)
    contact = hinge + rot @ np.array([local[0] - HANDLE_STANDOFF + 0.015, DOOR_PUSH_AT * local[1], local[2] + high])

    def push_path(k, n):
        turn = _rot_z(sign * dq * k / n)
        return turn @ (contact - hinge) + hinge - contact, turn

    return _work_handle(env, contact, rot[:, 0], push_path, pulling=False)


# The hand's footprint seen from above when it points down: half its length along the closing
# direction and half its depth across it, metres; its housing starts this far above the grip site.
HAND_HALF_LENGTH = 0.105
HAND_HALF_DEPTH = 0.035
HAND_BOTTOM_ABOVE_GRIP = 0.026
# A knob is pinched across its ridge (the fingers push its faces round) unless the hand, turning,
# would come closer than this to something standing near the knob; then it pinches the ridge's
# ends, the hand lying along the ridge.
KNOB_CLEARANCE = 0.03


def hand_clearance(point: np.ndarray, close_dir: float, footprints: list) -> float:
    """The smallest gap (metres, 0 when they overlap) between a downward hand's footprint and `footprints`.

    The hand grips at `point` (xy) closing along the world angle `close_dir`; its footprint is a
    rectangle HAND_HALF_LENGTH along the closing direction and HAND_HALF_DEPTH across it.
    """
    along = np.array([math.cos(close_dir), math.sin(close_dir)])
    across = np.array([-along[1], along[0]])
    # Points on the rectangle's outline and inside it, a centimetre or so apart.
    u = np.linspace(-HAND_HALF_LENGTH, HAND_HALF_LENGTH, 22)
    v = np.linspace(-HAND_HALF_DEPTH, HAND_HALF_DEPTH, 8)
    pts = (point[:2] + u[:, None, None] * along + v[None, :, None] * across).reshape(-1, 2)
    best = math.inf
    for centre, yaw, hx, hy, *_ in footprints:
        c, s = math.cos(yaw), math.sin(yaw)
        d = pts - centre
        local = np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]], axis=1)
        gap = np.maximum(np.abs(local) - [hx, hy], 0.0)
        best = min(best, float(np.min(np.hypot(gap[:, 0], gap[:, 1]))))
    return best


def knob_grasp(
    centre: np.ndarray, ridge: float, full: float, least: float, footprints: list
) -> tuple[float, float]:
    """How to grasp and turn a knob whose ridge runs along the world angle `ridge`: (closing direction, turn).

    The turn is `full` radians if the hand can turn that far and stay KNOB_CLEARANCE clear of
    `footprints`, else as far as it can but no less than `least` (same sign as `full`). The fingers
    close across the ridge when the hand stays clear that way, else along it. When no grasp keeps the
    hand clear, the one (turning by `least`) that comes least close.
    """

    def clear(close_dir: float, turn: float) -> float:
        n = max(1, math.ceil(abs(turn) / 0.1))
        return min(hand_clearance(centre, close_dir + turn * k / n, footprints) for k in range(n + 1))

    dirs = (ridge + math.pi / 2, ridge)  # across the ridge, then along it
    turns = [float(t) for t in np.linspace(full, least, 6)] if abs(full) > abs(least) else [full]
    for turn in turns:
        for close_dir in dirs:
            if clear(close_dir, turn) >= KNOB_CLEARANCE:
                return close_dir, turn
    turn = turns[-1]
    gaps = [clear(d, turn) for d in dirs]
    return dirs[int(np.argmax(gaps))], turn


def knob(env, inst: str, part: str, turning_on: bool, rng) -> list:
    """Grasp a knob's ridge and turn the wrist to on (KNOB_ON_TO) or off (KNOB_OFF_TO).

    The fingers close across the ridge's thickness, or, when the hand (20 cm long along its closing
    direction) would then meet something standing near the knob, along the ridge's length; when it
    would meet it either way, it turns the knob less far, but still past the on or off threshold.
    """
    centre, rot = _body(env, f"{inst}_{part}")
    q = env.geometry.joint_value(inst, part)
    grip_point = centre + np.array([0, 0, 0.026])
    full = (KNOB_ON_TO if turning_on else KNOB_OFF_TO) - q
    least = (KNOB_ON_LEAST if turning_on else KNOB_OFF_LEAST) - q
    ridge = math.atan2(rot[1, 0], rot[0, 0])  # the ridge runs along the knob's x
    nearby = list(footprints(env, {inst}, grip_point[2] + HAND_BOTTOM_ABOVE_GRIP).values())
    close_dir, dq = knob_grasp(grip_point, ridge, full, least, nearby)
    hand0 = _hand(env, np.array([math.cos(close_dir), math.sin(close_dir), 0.0]))
    above = np.array([0, 0, 0.08])
    way = [("move", grip_point + above, hand0, OPEN), ("move", grip_point, hand0, OPEN), ("hold", 8, hand0, CLOSED)]
    steps = max(2, int(abs(dq) / 0.15))
    for k in range(1, steps + 1):
        way.append(("move", grip_point, _rot_z(dq * k / steps) @ hand0, CLOSED))
    way.append(("hold", 6, _rot_z(dq) @ hand0, OPEN))
    way.append(("move", grip_point + above, _rot_z(dq) @ hand0, OPEN))
    return way


def articulation_waypoints(env, inst: str, part: str, kind: str, predicate: str, rng) -> list:
    """Waypoints that make Open/Close/TurnOn/TurnOff of one part hold."""
    on = predicate in ("open", "turnon")
    if kind == "drawer":
        return drawer(env, inst, part, on, rng)
    if kind == "door":
        return door(env, inst, part, on, rng)
    return knob(env, inst, part, on, rng)
