"""Articulation waypoints: the knob grasp keeps the hand clear, a door is pushed from outside."""

from __future__ import annotations

import math

import numpy as np
import pytest

from libero_ll.assets.fixtures import MICROWAVE_HALF
from libero_ll.experts import articulation as art


def test_hand_clearance_measures_the_gap_along_and_across_the_closing_direction():
    bottle = [(np.array([0.0, -0.2]), 0.0, 0.03, 0.03)]
    # Closing along y, the hand reaches HAND_HALF_LENGTH towards the bottle.
    along_y = art.hand_clearance(np.zeros(2), math.pi / 2, bottle)
    assert along_y == pytest.approx(0.2 - 0.03 - art.HAND_HALF_LENGTH, abs=1e-3)
    # Closing along x, only the hand's depth faces it.
    along_x = art.hand_clearance(np.zeros(2), 0.0, bottle)
    assert along_x == pytest.approx(0.2 - 0.03 - art.HAND_HALF_DEPTH, abs=1e-3)
    # Overlapping footprints have no gap; nothing around means unlimited room.
    assert art.hand_clearance(np.array([0.0, -0.15]), 0.0, bottle) == 0.0
    assert art.hand_clearance(np.zeros(2), 0.0, []) == math.inf


def test_knob_is_pinched_across_its_ridge_when_nothing_is_near():
    close_dir, turn = art.knob_grasp(np.zeros(3), 0.0, 1.0, 0.7, [])
    assert close_dir == pytest.approx(math.pi / 2)
    assert turn == pytest.approx(1.0)


def test_knob_grasp_turns_the_hand_away_from_a_bottle_beside_the_knob():
    # The libero_goal stove: a wine bottle 13 cm from the knob, on the side the fingers would
    # close towards when pinching across the ridge (ridge along x).
    bottle = [(np.array([-0.007, -0.132]), 0.0, 0.0316, 0.0316)]
    close_dir, turn = art.knob_grasp(np.zeros(3), math.pi, 1.0, 0.7, bottle)
    assert close_dir == pytest.approx(math.pi)  # along the ridge
    assert 0.7 - 1e-9 <= turn < 1.0  # turned less far, but past the on threshold (0.6)
    # Across the ridge the hand would touch the bottle at the start.
    assert art.hand_clearance(np.zeros(2), math.pi + math.pi / 2, bottle) == 0.0
    # The chosen grasp keeps the hand off it all the way round.
    assert min(art.hand_clearance(np.zeros(2), close_dir + turn * k / 10, bottle) for k in range(11)) > 0.0


def test_knob_grasp_keeps_across_when_only_the_full_turn_is_blocked_along():
    # Something in line with the ridge: across stays clear, so nothing changes.
    block = [(np.array([0.2, 0.0]), 0.0, 0.03, 0.03)]
    close_dir, turn = art.knob_grasp(np.zeros(3), 0.0, 1.0, 0.7, block)
    assert close_dir == pytest.approx(math.pi / 2)
    assert turn == pytest.approx(1.0)


def test_knob_grasp_turning_off_turns_the_other_way():
    close_dir, turn = art.knob_grasp(np.zeros(3), 0.3, -1.3, -1.2, [])
    assert close_dir == pytest.approx(0.3 + math.pi / 2)
    assert turn == pytest.approx(-1.3)


def test_legs_cut_a_long_move_into_short_ones():
    start, end = np.zeros(3), np.array([0.3, 0.4, 0.0])
    way = art._legs(start, end, np.eye(3), 1.0)
    points = [start] + [w[1] for w in way]
    assert np.allclose(points[-1], end)
    assert all(np.linalg.norm(b - a) <= art.APPROACH_LEG + 1e-9 for a, b in zip(points, points[1:]))
    assert all(w[3] == 1.0 for w in way)
    # The hand passes the points between without stopping and stops at the end.
    assert [w[0] for w in way] == ["via"] * (len(way) - 1) + ["move"]


@pytest.fixture(scope="module")
def microwave_env():
    from libero_ll.data.collect import demo_seed
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.tasks.registry import get_suite

    task = get_suite("libero_90").task("KITCHEN_SCENE6_close_the_microwave")
    env = LiberoEnv(str(task.file), EnvConfig(render=False))
    env.reset(seed=demo_seed(task.name, 0, 0, seed=0))
    yield env
    env.close()


def test_door_push_comes_down_outside_the_open_door(microwave_env):
    """Shutting the microwave: the closed fingers come down in front of the door, not on its edge."""
    env = microwave_env
    hinge, rot = art._body(env, "microwave_1_door")
    out = rot[:, 0]  # out of the door's outer face
    way = art.door(env, "microwave_1", "door", False, np.random.default_rng(0))
    moves = [w for w in way if w[0] in ("move", "via")]
    # The hand goes below the door's top edge only once it is outside the door: the first waypoint
    # under the edge is straight below the one before, and that one lies more than the door's
    # thickness (2 cm) and the hand's half depth (3.5 cm) out of the door, with room to spare.
    top = hinge[2] + MICROWAVE_HALF[2] - 0.002
    # (The hand starts below that edge, beside the microwave: the first waypoint coming down past it.)
    first_low = next(i for i in range(1, len(moves)) if moves[i][1][2] < top <= moves[i - 1][1][2])
    above, below = moves[first_low - 1][1], moves[first_low][1]
    assert above[2] > top + 0.02
    assert np.linalg.norm(above[:2] - below[:2]) < 1e-6
    assert (above - hinge) @ out > 0.08
    # No leg of the way there is longer than 10 cm (each waypoint has a step budget).
    pts = [env.robot_proprio()["ee_pos"]] + [w[1] for w in moves[: first_low + 1]]
    assert max(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:])) <= 0.1


@pytest.mark.slow
def test_expert_shuts_the_microwave():
    from libero_ll.data.collect import demo_seed, run_expert_episode
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.tasks.registry import get_suite

    task = get_suite("libero_90").task("KITCHEN_SCENE6_close_the_microwave")
    env = LiberoEnv(str(task.file), EnvConfig(render=False))
    ok, _ = run_expert_episode(env, seed=demo_seed(task.name, 0, 0, seed=0), max_steps=600, record=False)
    assert ok
