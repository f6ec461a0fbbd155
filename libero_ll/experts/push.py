"""Pushing along the surface: the skill for things the hand cannot pick up (a plate).

The closed fingers come down just behind the object's far side from the target, at the height of
its lowest edge, and push it in a straight line until its centre is over the target; the palm
stays above the object. Where something stands behind it (a cabinet beside a plate), a plate is pushed
from inside instead: the fingers come down inside its rim on the target's side and push that rim from
within, so the hand never needs room beyond the object.
"""

from __future__ import annotations

import math

import numpy as np

from libero_ll.experts.skills import hand_down_rotation, nearest_equivalent_yaw

CLOSED = 1.0
# The finger pads' centre stays this high above the surface (the finger tips reach 1 cm lower).
PUSH_HEIGHT = 0.017
# The fingers start this far behind the object's edge, and the hand first lines up this high above.
PUSH_BACKOFF = 0.03
PUSH_ABOVE = 0.1
# Pushed from inside, the fingers' centre comes down this far (metres) inside the object's round outline: its
# rim (a plate's is 8 mm thick), the closed fingers' half width (about 1 cm) and a few millimetres. A rectangle
# (a tray) is not pushed so: along its diagonal the closed fingers, wider along their closing direction, came
# down on its 12 mm rim (2 and 4 of 6 episodes at 2 and 2.5 cm).
PUSH_INSIDE = 0.02
# ... and their pads' centre this much lower than PUSH_HEIGHT, so that the finger tips rest on its floor and the
# whole of the rim's height above the floor meets them. Measured on LIBERO-Goal's plate pushed past a cabinet
# (docs/interop.md): at PUSH_HEIGHT the fingers rode over the plate's 1 cm of rim in 1 of 5 episodes; 4 mm lower,
# 8 of 8 arrived in about 90 steps; 8 mm lower, pressed on its floor, they all arrived in about 270.
PUSH_INSIDE_LOWER = 0.004
# The push goes in steps of about this length (metres) so that the object keeps pace with the hand.
# The controller's force grows with the distance to the next waypoint: with short steps (2 cm) and a
# slow cap (1.5 cm per step) a plate's friction stalls the hand at every step.
PUSH_STEP = 0.06
# Pushing speed cap, units of position action (0.8 = 4 cm per control step).
PUSH_SPEED = 0.8


def push_waypoints(start_xy: np.ndarray, target_xy: np.ndarray, radius: float, surface_z: float, ee_rot: np.ndarray,
                   inside: bool = False, backoff: float = PUSH_BACKOFF, height: float | None = None) -> list:
    """Waypoints that push an object lying at `start_xy` until its centre reaches `target_xy`.

    Args:
        start_xy, target_xy: the object's centre now and where it should end up (world x, y, metres).
        radius: the object's horizontal half size along the push, metres; pushed from inside, how far from
            its centre along the push the fingers come down (`PUSH_INSIDE` within its round outline).
        surface_z: height of the surface it slides on, metres.
        ee_rot: the hand's rotation now (the fingers' closing direction is chosen nearest to it).
        inside: push a round thing with a rim (a plate) from inside it, not from behind.
        backoff: how far behind the object the fingers come down (metres), pushed from behind.
        height: the finger pads' centre above the surface while pushing (metres); by default PUSH_HEIGHT, and
            PUSH_INSIDE_LOWER less pushed from inside.

    Returns:
        ("move", position, rotation, grip, speed) waypoints for `ScriptedExpert`.
    """
    d = target_xy - start_xy
    dist = float(np.linalg.norm(d))
    if dist < 1e-6:
        return []
    d = d / dist
    # Fingers close across the push so that the two closed fingers side by side make the pusher.
    hand = hand_down_rotation(nearest_equivalent_yaw(math.atan2(d[1], d[0]) + math.pi / 2, ee_rot))
    if inside:
        # The fingers touch the rim on the target's side from within, and end as far beyond the target.
        z = surface_z + (PUSH_HEIGHT - PUSH_INSIDE_LOWER if height is None else height)
        behind = start_xy + d * radius
        end = target_xy + d * radius
    else:
        z = surface_z + (PUSH_HEIGHT if height is None else height)
        behind = start_xy - d * (radius + backoff)
        end = target_xy - d * radius
    way = [
        ("move", np.array([*behind, z + PUSH_ABOVE]), hand, CLOSED, None),
        ("move", np.array([*behind, z]), hand, CLOSED, None),
    ]
    n = max(1, int(math.ceil(float(np.linalg.norm(end - behind)) / PUSH_STEP)))
    for k in range(1, n + 1):
        xy = behind + (end - behind) * k / n
        way.append(("move", np.array([*xy, z]), hand, CLOSED, PUSH_SPEED))
    if inside:
        return way + [("move", np.array([*end, z + PUSH_ABOVE]), hand, CLOSED, None)]
    back = end - d * PUSH_BACKOFF
    way += [
        ("move", np.array([*back, z]), hand, CLOSED, None),
        ("move", np.array([*back, z + PUSH_ABOVE]), hand, CLOSED, None),
    ]
    return way
