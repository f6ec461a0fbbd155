"""Laying a tall object down in a low container: when it is needed, where it stands, how it is pushed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from libero_ll.assets.categories import get_model
from libero_ll.envs.predicates import BoxRegion
from libero_ll.experts import tip_over as tip


def _drawer_region(yaw: float = math.pi) -> BoxRegion:
    # The white cabinet's bottom drawer turned towards a robot at -x: 17 cm along x, 24 cm along y,
    # 8 cm deep.
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return BoxRegion(np.array([-0.08, -0.3, 0.91]), rot, np.array([0.084, 0.119, 0.039]), "white_cabinet_1")


def test_a_standing_bottle_is_too_tall_for_a_drawer_and_a_bowl_is_not():
    region = _drawer_region()
    assert tip.stands_too_tall(get_model("wine_bottle"), region)
    assert not tip.stands_too_tall(get_model("akita_black_bowl"), region)


def test_it_stands_at_the_end_of_the_long_side_nearer_the_robot_and_falls_towards_the_other():
    region = _drawer_region()
    bottle = get_model("wine_bottle")
    spot, fall = tip.standing_spot(region, bottle, np.array([-0.66, 0.0, 0.91]))
    # The long side runs along y; the robot (y = 0) is on the +y end.
    assert np.allclose(fall, [0.0, -1.0], atol=1e-9)
    assert spot[0] == pytest.approx(-0.08)
    assert spot[1] == pytest.approx(-0.3 + 0.119 - bottle.half_size[0] - tip.END_GAP)
    # With the robot on the other side, it stands at the other end.
    spot2, fall2 = tip.standing_spot(region, bottle, np.array([-0.66, -0.8, 0.91]))
    assert np.allclose(fall2, [0.0, 1.0], atol=1e-9)
    assert spot2[1] < -0.3


def test_the_push_comes_from_behind_at_the_neck_and_goes_through_along_the_fall():
    bottle = get_model("wine_bottle")
    pos = np.array([-0.08, -0.2, 0.872 + bottle.half_size[2]])
    fall = np.array([0.0, -1.0])
    way = tip.tip_over_waypoints(pos, bottle, fall, np.array([-0.08, -0.2, 1.2]), np.eye(3))
    points = [w[1] for w in way]
    # The hand never comes down onto the bottle: it goes behind it above its top first.
    top = 0.872 + 2 * bottle.half_size[2]
    assert points[0][2] > top and points[1][2] > top
    behind = points[2]
    assert behind[1] - pos[1] == pytest.approx(tip.PUSH_BEHIND)
    assert behind[2] > 0.872 + 0.15 + 0.031  # above the shoulder, at the neck
    # The push goes past the axis along the fall, and all with the fingers closed.
    assert points[3][1] < pos[1] - 0.05
    assert all(w[3] == tip.CLOSED for w in way)
