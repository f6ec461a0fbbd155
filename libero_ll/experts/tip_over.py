"""Laying a tall object down inside a low container: stood at one end, then pushed over along it.

In(a, r) holds when a's centre lies inside r's box. A wine bottle (24 cm) standing in a drawer
whose inside is 8 cm deep has its centre 12 cm above the floor: it is not in. Lying down it is.
Laying it down in the fingers would take a hand turned horizontal in front of the cabinet;
instead the bottle is put down standing at one end of the container's longer side, let go, and
pushed over at its neck towards the other end: it falls along the container and comes to rest
lying on the floor, or leaning on the far wall with its centre low enough.
"""

from __future__ import annotations

import numpy as np

from libero_ll.envs import thresholds as th

# The object stands this far from the container's end wall (metres, from the wall to its side).
END_GAP = 0.012
# The closed fingers touch it this far up its height (fraction: at a bottle's neck, above its
# shoulder), from this far behind its axis (metres, hand centre; the fingers' half thickness and
# the neck's radius, plus slack).
PUSH_AT = 0.83
PUSH_BEHIND = 0.034
# The hand pushes this far past the object's axis (metres), at this speed (units of position action).
PUSH_THROUGH = 0.11
PUSH_SPEED = 0.35
CLOSED = 1.0


def stands_too_tall(model, region) -> bool:
    """Whether an object of `model` standing on a region's floor has its centre above the region's box.

    The region's box starts a few millimetres above the container's floor: the object's centre,
    half its height above the floor, is compared with the box's top (with In's tolerance).
    """
    return float(model.half_size[2]) > 2 * float(region.half[2]) + th.IN_TOLERANCE


def long_axis(region) -> np.ndarray:
    """The horizontal unit vector (world) along a region's longer horizontal side."""
    k = 0 if region.half[0] >= region.half[1] else 1
    a = np.asarray(region.rot)[:2, k]
    return a / np.linalg.norm(a)


def standing_spot(region, model, towards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where (centre x, y) an object stands before it is pushed over, and the direction it falls (unit x, y).

    It stands at the end of the region's longer side nearer the point `towards` (the robot's base:
    the hand then pushes away from the robot), as close to that end as its radius allows.
    """
    a = long_axis(region)
    half = float(max(region.half[0], region.half[1]))
    centre = np.asarray(region.center[:2], dtype=float)
    if (np.asarray(towards[:2]) - centre) @ a < 0:
        a = -a
    radius = float(max(model.half_size[0], model.half_size[1]))
    return centre + a * max(0.0, half - radius - END_GAP), -a


def tip_over_waypoints(pos: np.ndarray, model, fall: np.ndarray, hand: np.ndarray, hand_rot: np.ndarray) -> list:
    """Waypoints that push a standing object over in the horizontal direction `fall`.

    Args:
        pos: the object's centre (world, metres); model: its model (half sizes).
        fall: horizontal unit vector it is to fall along.
        hand: the hand's position now (above the object, having let it go).
        hand_rot: the hand's rotation for the push: pointing down, fingers closing along `fall`
            (the hand is thin across the push, clear of whatever stands beside the container).

    Returns:
        ("move", position, rotation, grip[, speed]) waypoints for `ScriptedExpert`.
    """
    fall = np.array([fall[0], fall[1], 0.0])
    bottom = float(pos[2] - model.half_size[2])
    z = bottom + PUSH_AT * 2 * float(model.half_size[2])
    behind = np.array([pos[0], pos[1], z]) - fall * PUSH_BEHIND
    high = max(float(hand[2]), bottom + 2 * float(model.half_size[2]) + 0.05)
    through = behind + fall * (PUSH_BEHIND + PUSH_THROUGH)
    return [
        ("move", np.array([hand[0], hand[1], high]), hand_rot, CLOSED),
        ("move", np.array([behind[0], behind[1], high]), hand_rot, CLOSED),
        ("move", behind, hand_rot, CLOSED),
        ("move", through, hand_rot, CLOSED, PUSH_SPEED),
        ("move", through + np.array([0, 0, 0.12]), hand_rot, CLOSED),
    ]
