"""Articulation waypoints: the knob grasp keeps the hand clear, a door is pushed from outside, a door turned to the
side is dragged ajar and pushed open from inside."""

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


# The microwave turned a quarter to the robot's left, on its right: its door faces the table's middle (+y), hinged on
# the side away from the robot, as LIBERO's `KITCHEN_SCENE7` files place it once converted for our models.
SIDEWAYS_MICROWAVE = """(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language open the microwave)
    (:regions
      (microwave_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.01 -0.27 0.01 -0.25)
            )
          )
          (:yaw_rotation (
              (1.5707963267948966 1.5707963267948966)
            )
          )
      )
      (plate_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.22 0.18 -0.2 0.2)
            )
          )
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    microwave_1 - microwave
  )

  (:objects
    plate_1 - plate
  )

  (:obj_of_interest
    microwave_1
  )

  (:init
    (On microwave_1 kitchen_table_microwave_init_region)
    (On plate_1 kitchen_table_plate_init_region)
    (Close microwave_1)
  )

  (:goal
    (And (Open microwave_1))
  )

)
"""


@pytest.fixture(scope="module")
def sideways_env(tmp_path_factory):
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    path = tmp_path_factory.mktemp("sideways") / "open_the_microwave.bddl"
    path.write_text(SIDEWAYS_MICROWAVE)
    env = LiberoEnv(str(path), EnvConfig(render=False))
    env.reset(seed=0)
    yield env
    env.close()


def test_a_door_turned_to_the_side_is_hooked_from_above_then_pushed_from_inside(sideways_env):
    from libero_ll.experts.expert import DOOR_TRIES, Articulate, ScriptedExpert

    env = sideways_env
    env.reset(seed=0)
    hinge, rot = art._body(env, "microwave_1_door")
    out = rot[:, 0]
    assert out[1] > 0.99 and not art.faces_robot(out)
    steps = ScriptedExpert(env, np.random.default_rng(0)).steps
    assert [type(s) for s in steps] == [Articulate] * (1 + DOOR_TRIES)
    # Closed: the closed fingers come straight down behind the handle's bar, between it and the door, and drag it.
    handle, _ = art._site(env, "microwave_1_door_handle")
    way = art.door(env, "microwave_1", "door", True, np.random.default_rng(0))
    moves = [w for w in way if w[0] in ("move", "via")]
    assert all(w[3] == art.CLOSED for w in way)
    hook = next(i for i, w in enumerate(moves) if abs(w[1][2] - handle[2]) < 0.005)
    behind = (handle - moves[hook][1]) @ out
    assert 0.0 < behind < art.HANDLE_STANDOFF - 0.01  # behind the bar's axis, short of the door
    assert np.linalg.norm(moves[hook - 1][1][:2] - moves[hook][1][:2]) < 1e-6  # from straight above
    # Ajar (past DOOR_AJAR): the hand goes above the appliance before it crosses to the inside, and pushes the
    # door's inner face, whose normal points back at the robot's side.
    import mujoco

    adr, _ = env.geometry.joints[("microwave_1", "door")]
    env.data.qpos[adr] = 0.85
    mujoco.mj_forward(env.model, env.data)
    top = env.geometry.pos("microwave_1")[2] + MICROWAVE_HALF[2]
    hinge, rot = art._body(env, "microwave_1_door")
    inside = -rot[:, 0]  # out of the door's inner face
    way = art.door(env, "microwave_1", "door", True, np.random.default_rng(0))
    moves = [w[1] for w in way if w[0] in ("move", "via")]
    # (The hand rises from where it is, beside the door: the way down starts after the highest waypoint.)
    highest = int(np.argmax([p[2] for p in moves]))
    assert moves[highest][2] > top + 0.02
    low = next(i for i in range(highest, len(moves)) if moves[i][2] < top)
    assert np.linalg.norm(moves[low - 1][:2] - moves[low][:2]) < 1e-6  # straight down ...
    assert (moves[low] - hinge) @ inside > 0.05  # ... on the inside
    # ... and once the door is open, a repeated step does nothing.
    env.data.qpos[adr] = 1.2
    mujoco.mj_forward(env.model, env.data)
    assert art.door(env, "microwave_1", "door", True, np.random.default_rng(0)) == []


def test_expert_opens_a_door_turned_to_the_side(sideways_env):
    """Dragged ajar from outside, pushed open from inside (pinched from outside as a door facing the robot is,
    the arm reached round the door and met its edge: 0 of 10 episodes of LIBERO's converted file)."""
    from libero_ll.data.collect import run_expert_episode

    ok, rec = run_expert_episode(sideways_env, seed=0, max_steps=600, record=False)
    assert ok, rec["steps"]
