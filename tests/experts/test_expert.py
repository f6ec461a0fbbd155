"""The scripted expert solves quickstart tasks and its demos are reproducible."""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from libero_ll.data.collect import run_expert_episode


def test_expert_solves_soup_task_and_is_deterministic(soup_env):
    ok1, rec1 = run_expert_episode(soup_env, seed=11, max_steps=300, record=True)
    ok2, rec2 = run_expert_episode(soup_env, seed=11, max_steps=300, record=True)
    assert ok1 and ok2
    np.testing.assert_allclose(np.stack(rec1["actions"]), np.stack(rec2["actions"]))
    ok3, rec3 = run_expert_episode(soup_env, seed=12, max_steps=300, record=True)
    assert ok3
    n = min(len(rec1["actions"]), len(rec3["actions"]))
    assert not np.allclose(np.stack(rec1["actions"])[:n], np.stack(rec3["actions"])[:n])


@pytest.mark.slow
@pytest.mark.parametrize(
    "task",
    ["put_the_black_bowl_on_the_plate", "put_the_alphabet_soup_in_the_basket", "put_the_cream_cheese_in_the_basket"],
)
def test_expert_success_rate_on_quickstart(task):
    """The acceptance bar: at least 90% over 20 seeds on every quickstart task."""
    from libero_ll.data.collect import collect_task

    quickstart = Path(__file__).resolve().parents[2] / "bddl_tasks" / "quickstart"
    stats = collect_task(quickstart / f"{task}.bddl", None, 20, seed=0)
    assert stats.success_rate >= 0.9, stats


def test_expert_turns_the_hand_off_a_little_and_back(soup_env):
    """The demos carry noise on the rotation actions (ROT_NOISE), as on the position ones, so that a policy
    sampling its actions has seen the hand's turn corrected. Without it the median rotation action of a
    soup demo was about 0.004; with it about 0.033. The expert turns the hand back: its median tilt from
    straight down stays about 0.013 rad (0.005 without the noise), where the noise's turns alone would add
    up to tenths of a radian over a demo."""
    from libero_ll.experts.expert import ROT_NOISE

    ok, rec = run_expert_episode(soup_env, seed=11, max_steps=300, record=True)
    assert ok
    rotation = np.abs(np.stack(rec["actions"])[:, 3:6])
    assert np.median(rotation) > 0.4 * ROT_NOISE
    rot6 = np.stack([o["ee_rot6"] for o in rec["obs"]])
    axis = np.cross(rot6[:, :3], rot6[:, 3:])
    tilt = np.arccos(np.clip(np.abs(axis[:, 2]) / np.linalg.norm(axis, axis=1), 0.0, 1.0))
    assert np.median(tilt) < 0.03


def test_planner_opens_before_putting_in_and_closes_after():
    from libero_ll.bddl.spec import Predicate
    from libero_ll.experts.expert import Articulate, PickPlace, plan

    instances = {"wooden_cabinet_1": "wooden_cabinet", "akita_black_bowl_1": "akita_black_bowl", "flat_stove_1": "flat_stove"}
    goal = [
        Predicate("close", ("wooden_cabinet_1_top_region",)),
        Predicate("in", ("akita_black_bowl_1", "wooden_cabinet_1_top_region")),
        Predicate("turnon", ("flat_stove_1",)),
    ]
    steps = plan(goal, instances)
    kinds = [(type(s).__name__, s.goal.name) for s in steps]
    assert kinds == [("Articulate", "open"), ("PickPlace", "in"), ("Articulate", "turnon"), ("Articulate", "close")]
    assert isinstance(steps[0], Articulate) and steps[0].part == "top_drawer"
    # A drawer that is already open is not opened again.
    steps = plan(goal, instances, holds=lambda p: p.name == "open")
    assert [type(s) for s in steps[:1]] == [PickPlace]


@pytest.mark.parametrize("goal", ["(TurnOn flat_stove_1)", "(Close wooden_cabinet_1_top_region)"])
def test_expert_turns_the_knob_and_shuts_a_drawer(tmp_path, goal):
    import re

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    examples = Path(__file__).resolve().parents[2] / "bddl_tasks" / "examples"
    (src,) = examples.glob("kitchen_*.bddl")
    task = tmp_path / "kitchen.bddl"
    task.write_text(re.sub(r"\(:goal .*\)\n\)", f"(:goal (And {goal}))\n)", src.read_text(), flags=re.S))
    env = LiberoEnv(task, EnvConfig(render=False))
    try:
        ok, _ = run_expert_episode(env, seed=0, max_steps=300, record=False)
    finally:
        env.close()
    assert ok


def test_planner_stacks_on_an_object_after_moving_that_object():
    from libero_ll.bddl.spec import Predicate
    from libero_ll.experts.expert import PickPlace, plan

    instances = {
        "akita_black_bowl_1": "akita_black_bowl",
        "akita_black_bowl_2": "akita_black_bowl",
        "wooden_tray_1": "wooden_tray",
    }
    goal = [
        Predicate("on", ("akita_black_bowl_1", "akita_black_bowl_2")),
        Predicate("in", ("akita_black_bowl_2", "wooden_tray_1_contain_region")),
    ]
    steps = plan(goal, instances)
    assert [s.obj for s in steps] == ["akita_black_bowl_2", "akita_black_bowl_1"]
    assert all(isinstance(s, PickPlace) for s in steps)


def test_planner_keeps_a_close_in_place_when_nothing_goes_into_that_drawer():
    from libero_ll.bddl.spec import Predicate
    from libero_ll.experts.expert import plan

    instances = {"white_cabinet_1": "white_cabinet", "akita_black_bowl_1": "akita_black_bowl"}
    goal = [
        Predicate("close", ("white_cabinet_1_top_region",)),
        Predicate("on", ("akita_black_bowl_1", "white_cabinet_1_top_side")),
    ]
    steps = plan(goal, instances)
    assert [(type(s).__name__, s.goal.name) for s in steps] == [("Articulate", "close"), ("PickPlace", "on")]


def test_free_spot_keeps_clear_of_what_is_already_in_the_region():
    import numpy as np

    from libero_ll.assets.categories import get_model
    from libero_ll.envs.predicates import BoxRegion
    from libero_ll.experts.expert import free_spot

    region = BoxRegion(np.array([0.0, 0.0, 0.9]), np.eye(3), np.array([0.078, 0.103, 0.06]), "basket_1")
    soup = get_model("alphabet_soup")
    alone = free_spot(region, soup, [])
    np.testing.assert_allclose(alone, [0.0, 0.0], atol=1e-9)
    spot = free_spot(region, soup, [(np.array([0.0, -0.05]), 0.03)])
    assert spot[1] > 0.02  # away from the can already at the -y end
    assert np.all(np.abs(spot) <= region.half[:2])


def test_free_spot_beside_a_can_takes_the_same_side_wherever_the_can_settled():
    """A box put into a basket beside a can at its centre goes to the side with room nearest the robot, not to
    whichever side a few millimetres of the can's resting place favour (demos on both sides cannot be learnt)."""
    import numpy as np

    from libero_ll.assets.categories import get_model
    from libero_ll.envs.predicates import BoxRegion
    from libero_ll.experts.expert import SPOT_CLEARANCE, free_spot

    region = BoxRegion(np.array([0.0, 0.2, 0.9]), np.eye(3), np.array([0.078, 0.103, 0.06]), "basket_1")
    box = get_model("cream_cheese")
    radius = float(min(box.half_size[:2]))
    base = np.array([-0.66, 0.0])
    spots = []
    for dx in (-0.006, 0.0, 0.006):
        for dy in (-0.006, 0.0, 0.006):
            can = (np.array([dx, 0.2 + dy]), 0.031)
            spot = free_spot(region, box, [can], toward=base)
            spots.append(spot)
            assert np.linalg.norm(spot - can[0]) - can[1] - radius >= SPOT_CLEARANCE
    spots = np.array(spots)
    assert np.all(spots[:, 1] < 0.2 - 0.05), spots  # every one on the side of the basket nearer the base (y < centre)
    assert np.ptp(spots[:, 0]) < 0.02 and np.ptp(spots[:, 1]) < 0.02, spots  # and at the same place, near enough
    # A can at the near side leaves no room there: the box goes no nearer than the basket's middle, clear of it.
    can = (np.array([0.0, 0.12]), 0.031)
    spot = free_spot(region, box, [can], toward=base)
    assert spot[1] >= 0.2 - 1e-9 and np.linalg.norm(spot - can[0]) - can[1] - radius >= SPOT_CLEARANCE


def test_free_spot_without_room_anywhere_takes_the_most_room():
    import numpy as np

    from libero_ll.assets.categories import get_model
    from libero_ll.envs.predicates import BoxRegion
    from libero_ll.experts.expert import SPOT_CLEARANCE, free_spot

    region = BoxRegion(np.array([0.0, 0.0, 0.9]), np.eye(3), np.array([0.05, 0.05, 0.06]), "basket_1")
    box = get_model("cream_cheese")
    big = [(np.array([0.0, 0.0]), 0.04)]
    spot = free_spot(region, box, big, toward=np.array([-0.66, 0.0]))
    assert np.linalg.norm(spot) - 0.04 - float(min(box.half_size[:2])) < SPOT_CLEARANCE
    np.testing.assert_allclose(spot, free_spot(region, box, big))


def test_fit_turn_turns_a_book_to_fit_a_narrow_compartment():
    import math

    import numpy as np

    from libero_ll.assets.categories import get_model
    from libero_ll.envs.predicates import BoxRegion
    from libero_ll.experts.expert import fit_turn

    book = get_model("black_book")  # 7.5 cm along its x, 3 cm along its y
    narrow = BoxRegion(np.zeros(3), np.eye(3), np.array([0.04, 0.13, 0.045]), "desk_caddy_1")
    turn = fit_turn(0.1, book, narrow)
    assert abs(abs(0.1 + turn) - math.pi / 2) < 1e-9
    assert fit_turn(math.pi / 2, book, narrow) == 0.0
    assert fit_turn(0.3, book, None) == 0.0


def test_pinch_candidates_go_round_a_bowl_and_avoid_a_mug_handle():
    import math

    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import pinch_candidates

    bowl = pinch_candidates("akita_black_bowl", get_model("akita_black_bowl"))
    assert len(bowl) == 16 and bowl[0][1] == get_model("akita_black_bowl").grasp.across_yaw
    mug = get_model("porcelain_mug")
    axis_x = mug.grasp.offset[0]
    for (x, _), angle in pinch_candidates("porcelain_mug", mug)[1:]:
        assert x - axis_x < 0.45 * -mug.grasp.offset[1] + 1e-9  # never on the handle's side
        assert abs(math.hypot(x - axis_x, _) + mug.grasp.offset[1]) < 1e-9
    assert pinch_candidates("alphabet_soup", get_model("alphabet_soup")) == [
        (tuple(get_model("alphabet_soup").grasp.offset), get_model("alphabet_soup").grasp.across_yaw)
    ]


def test_clearance_to_a_round_footprint_is_to_its_circle():
    from libero_ll.experts.expert import clearance

    plate = (np.zeros(2), 0.0, 0.1, 0.1, 0.01, True)
    corner = np.array([0.1, 0.1])  # on the bounding box, 4.1 cm outside the plate's rim
    assert clearance(corner, [plate]) == pytest.approx(0.0)
    assert clearance(corner, [plate], rounded=True) == pytest.approx(math.hypot(0.1, 0.1) - 0.1)
    # A footprint not marked round, or one without the mark, stays a box.
    box = (np.zeros(2), 0.0, 0.1, 0.1, 0.01, False)
    unmarked = (np.zeros(2), 0.0, 0.1, 0.1, 0.01)
    as_box = clearance(corner, [box], rounded=True)
    assert as_box == clearance(corner, [unmarked], rounded=True) == pytest.approx(0.0)


def test_round_objects_are_told_from_boxes():
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.skills import is_round

    assert all(is_round(get_model(c)) for c in ("plate", "akita_black_bowl", "alphabet_soup"))
    assert not any(is_round(get_model(c)) for c in ("basket", "cream_cheese", "milk"))


def test_bowl_is_grasped_on_the_same_side_from_every_fixed_initial_state(bowl_task):
    """Next to the plate the bowl's grasp hint is always clear enough: the expert takes it every time.

    Choosing the rim point with the most clearance made the grasp jump between two sides of the bowl as
    it moved by a centimetre, and a policy cannot learn such demos.
    """
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.init_states import load_init_states
    from libero_ll.experts.expert import ScriptedExpert

    env = LiberoEnv(bowl_task, EnvConfig(image_size=32, robot_mesh="collision"))
    try:
        offsets = []
        for state in load_init_states(bowl_task, 20, state_size=env.get_state().shape[0]):
            env.reset_to(state)
            queue = ScriptedExpert(env, np.random.default_rng(0))._queue
            grasp = queue[[w[0] for w in queue].index("hold") - 1][1]
            offsets.append(grasp[:2] - env.geometry.pos("akita_black_bowl_1")[:2])
    finally:
        env.close()
    offsets = np.array(offsets)
    # The hint pinches the wall on the bowl's -y side; the per-demo jitter is 4 mm.
    assert np.all(offsets[:, 1] < -0.05), offsets
    assert np.ptp(offsets, axis=0).max() < 0.012, offsets


def test_planner_pushes_what_cannot_be_picked_up():
    from libero_ll.bddl.spec import Predicate
    from libero_ll.experts.expert import Push, plan

    goal = [Predicate("on", ("plate_1", "kitchen_table_flat_stove_1_front_region"))]
    steps = plan(goal, {"plate_1": "plate", "flat_stove_1": "flat_stove", "kitchen_table": "kitchen_table"})
    assert len(steps) == 1 and isinstance(steps[0], Push) and steps[0].obj == "plate_1"


def test_push_waypoints_stay_behind_the_object_and_end_at_the_target():
    import numpy as np

    from libero_ll.experts.push import PUSH_HEIGHT, push_waypoints

    start, target = np.array([0.0, 0.0]), np.array([0.0, 0.2])
    way = push_waypoints(start, target, 0.1, 0.8, np.eye(3))
    lows = [w[1] for w in way if abs(w[1][2] - (0.8 + PUSH_HEIGHT)) < 1e-9]
    assert lows[0][1] < -0.1  # starts behind the far edge from the target
    assert max(p[1] for p in lows) <= 0.2 - 0.1 + 1e-9  # never passes the object's centre over the target
    assert np.allclose([p[0] for p in lows], 0.0)


def test_push_waypoints_from_inside_stay_within_the_rim_on_the_targets_side():
    import numpy as np

    from libero_ll.experts.push import PUSH_HEIGHT, push_waypoints

    start, target = np.array([0.0, 0.0]), np.array([0.0, 0.2])
    way = push_waypoints(start, target, 0.08, 0.8, np.eye(3), inside=True)
    lows = [w[1] for w in way if w[1][2] < 0.8 + PUSH_HEIGHT + 1e-9]
    assert all(w[1][2] > 0.8 for w in way)
    # Down inside the rim on the target's side, never behind the object, and as far past the target at the end.
    assert np.isclose(lows[0][1], 0.08) and min(p[1] for p in lows) > 0.0
    assert np.isclose(lows[-1][1], 0.2 + 0.08)
    assert np.allclose([p[0] for p in lows], 0.0)
    assert np.allclose(way[-1][1][:2], lows[-1][:2]) and way[-1][1][2] > lows[-1][2] + 0.05  # then straight up


# A plate 1.2 cm from a cabinet on its far side from the target region, as LIBERO-Goal's plate stands by its wooden
# cabinet: the fingers cannot come down behind it.
PLATE_BY_A_CABINET = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language Push the plate away from the cabinet)
  (:regions
    (plate_init_region (:target main_table) (:ranges ((0.06 -0.015 0.08 -0.005))))
    (cabinet_init_region (:target main_table) (:ranges ((0.02 -0.28 0.04 -0.27))) (:yaw_rotation ((3.14159 3.14159))))
    (target_region (:target main_table) (:ranges ((-0.09 0.17 -0.01 0.25))))
  )
  (:fixtures main_table - table wooden_cabinet_1 - wooden_cabinet)
  (:objects plate_1 - plate)
  (:obj_of_interest plate_1)
  (:init (On plate_1 main_table_plate_init_region) (On wooden_cabinet_1 main_table_cabinet_init_region))
  (:goal (And (On plate_1 main_table_target_region)))
)
"""


def test_a_plate_with_a_cabinet_behind_it_is_pushed_from_inside_its_rim(tmp_path):
    """Sent behind the plate, the hand stopped against the cabinet and the plate never moved (LIBERO-Goal's
    plate push: 0 of 5 episodes); from inside its rim it arrives. A tray there is still pushed from behind: the
    closed fingers came down on its rim along its diagonal."""
    from libero_ll.assets.categories import get_model
    from libero_ll.experts import expert as expert_module
    from libero_ll.experts.expert import ScriptedExpert

    chosen = []
    original = expert_module.ScriptedExpert._push_from_inside

    def spy(self, *args):
        chosen.append(original(self, *args))
        return chosen[-1]

    with _env_of_text(tmp_path, "push_the_plate_away_from_the_cabinet", PLATE_BY_A_CABINET) as env:
        expert_module.ScriptedExpert._push_from_inside = spy
        try:
            for seed in (0, 1):
                env.reset(seed=seed)
                expert = ScriptedExpert(env, np.random.default_rng(seed))
                for _ in range(300):
                    _, done, _ = env.step(np.asarray(expert.act(), dtype=np.float32))
                    if done:
                        break
                assert done, (seed, env.geometry.pos("plate_1"))
        finally:
            expert_module.ScriptedExpert._push_from_inside = original
    assert chosen == [True, True]
    tray_text = PLATE_BY_A_CABINET.replace("plate_1 - plate", "plate_1 - wooden_tray")
    with _env_of_text(tmp_path, "push_the_plate_away_from_the_cabinet", tray_text) as env:
        env.reset(seed=0)
        expert = ScriptedExpert(env, np.random.default_rng(0))
        tray = get_model("wooden_tray")
        assert not expert._push_from_inside("plate_1", tray, env.geometry.pos("plate_1")[:2] - [0.0, 0.15], 1.57, 0.8)


PUDDING_RIGHT_OF_THE_PLATE = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language Put the chocolate pudding to the right of the plate)
  (:regions
    (plate_init_region (:target main_table) (:ranges ((-0.005 -0.005 0.005 0.005))))
    (pudding_init_region (:target main_table) (:ranges ((-0.06 -0.21 -0.04 -0.19))) (:yaw_rotation ((0.0 0.0))))
    (plate_right_region (:target main_table) (:ranges ((0.0 0.06 0.1 0.16))))
  )
  (:fixtures main_table - table)
  (:objects plate_1 - plate chocolate_pudding_1 - chocolate_pudding)
  (:obj_of_interest chocolate_pudding_1)
  (:init (On plate_1 main_table_plate_init_region) (On chocolate_pudding_1 main_table_pudding_init_region))
  (:goal (And (On chocolate_pudding_1 main_table_plate_right_region)))
)
"""


def test_footprint_gap_measures_boxes_and_round_things():
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import footprint_gap

    pudding, plate = get_model("chocolate_pudding"), get_model("plate")
    r = plate.half_size[0]
    round_plate = [(np.zeros(2), 0.0, r, r, 0.62, True)]
    # The pudding's long side (9 cm, along x at yaw 0) faces the plate's edge 2 cm away; turned a quarter,
    # its short side does, and its end reaches 1.4 cm further in.
    y = r + pudding.half_size[1] + 0.02
    assert footprint_gap(np.array([0.0, y]), 0.0, pudding, round_plate) == pytest.approx(0.02, abs=1e-3)
    assert footprint_gap(np.array([0.0, y]), np.pi / 2, pudding, round_plate) == pytest.approx(
        0.02 - (pudding.half_size[0] - pudding.half_size[1]), abs=1e-3)
    # A box seen as a box: its corner is nearer than its inscribed circle would say.
    square = [(np.zeros(2), 0.0, r, r, 0.62, False)]
    corner = np.array([r, r]) + 0.02 / np.sqrt(2) + np.array([pudding.half_size[0], pudding.half_size[1]])
    assert footprint_gap(corner, 0.0, pudding, square) == pytest.approx(0.02, abs=1e-3)
    assert footprint_gap(corner, 0.0, pudding, round_plate) > 0.05
    assert footprint_gap(np.zeros(2), 0.0, pudding, round_plate) == 0.0
    assert footprint_gap(np.zeros(2), 0.0, pudding, []) == 1.0


def test_a_range_beside_a_plate_that_reaches_under_its_middle_gets_the_object_where_there_is_room(tmp_path):
    """LIBERO-Long's "to the right of the plate" is drawn for LIBERO's smaller plate: at the range's middle our plate's
    rim lies under the pudding, which came down on it and stood tilted there (here the goal still held, the pudding
    touching the table; in LIBERO-Long's scene it did not). The expert puts it where the range leaves it room."""
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import ScriptedExpert, footprint_gap
    from libero_ll.experts.skills import footprints

    pudding = get_model("chocolate_pudding")
    task = "put_the_chocolate_pudding_to_the_right_of_the_plate"
    with _env_of_text(tmp_path, task, PUDDING_RIGHT_OF_THE_PLATE) as env:
        for seed in (0, 1):
            env.reset(seed=seed)
            g = env.geometry
            origin, rot = g.surface_frame("main_table")
            middle = (origin + rot @ np.array([0.05, 0.11, 0.0]))[:2]
            plate = list(footprints(env, {"chocolate_pudding_1", "main_table"}, origin[2] + 0.002).values())
            assert footprint_gap(middle, 0.0, pudding, plate) == 0.0  # the range's middle overlaps the plate
            expert = ScriptedExpert(env, np.random.default_rng(seed))
            for _ in range(400):
                _, done, _ = env.step(np.asarray(expert.act(), dtype=np.float32))
                if done:
                    break
            assert done, (seed, g.pos("chocolate_pudding_1"))
            # Flat on the table, not tilted on the plate's rim (where On still held: it touched the table).
            up, height = g.rot("chocolate_pudding_1")[2, 2], g.pos("chocolate_pudding_1")[2] - origin[2]
            assert up > 0.99 and height < pudding.half_size[2] + 0.005, (seed, up, height)


BOWL_IN_A_SMALL_DRAWER = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language Pick up the black bowl in the top drawer and place it on the plate)
  (:regions
    (cabinet_init_region (:target main_table) (:ranges ((0.13 -0.01 0.15 0.01))) (:yaw_rotation ((3.14159 3.14159))))
    (plate_init_region (:target main_table) (:ranges ((-0.11 0.17 -0.09 0.19))))
    (top_region (:target small_wooden_cabinet_1))
  )
  (:fixtures main_table - table small_wooden_cabinet_1 - small_wooden_cabinet)
  (:objects small_akita_black_bowl_1 - small_akita_black_bowl plate_1 - plate)
  (:obj_of_interest small_akita_black_bowl_1)
  (:init
    (On small_wooden_cabinet_1 main_table_cabinet_init_region)
    (On plate_1 main_table_plate_init_region)
    (Open small_wooden_cabinet_1_top_region)
    (In small_akita_black_bowl_1 small_wooden_cabinet_1_top_region)
  )
  (:goal (And (On small_akita_black_bowl_1 plate_1)))
)
"""


def test_room_inside_measures_to_a_containers_region_along_a_direction():
    from libero_ll.experts.expert import DRAWER_WALL, room_inside

    # A drawer's footprint (its region and DRAWER_WALL about it), 20 x 30 cm about (1, 0), turned a quarter.
    drawer = [(np.array([1.0, 0.0]), np.pi / 2, 0.10 + DRAWER_WALL, 0.15 + DRAWER_WALL, 0.9, False)]
    inside = np.array([1.02, 0.03])
    assert room_inside(inside, np.array([1.0, 0.0]), drawer) == pytest.approx(0.15 - 0.02)
    assert room_inside(inside, np.array([0.0, -1.0]), drawer) == pytest.approx(0.10 + 0.03)
    # Along the diagonal the drawer's long side (in y, 12 cm from its centre with the wall) comes first.
    diagonal = np.array([1.0, 1.0]) / np.sqrt(2)
    assert room_inside(inside, diagonal, drawer) == pytest.approx((0.12 - 0.03) * np.sqrt(2) - DRAWER_WALL)


def test_a_bowl_in_a_drawer_too_tight_for_the_open_outer_finger_is_picked_with_the_hand_further_in(tmp_path):
    """LIBERO's cabinet's drawers are 15 cm deep inside and its bowl 10.7 cm across: beside the bowl's wall the open
    outer finger (6.2 cm out from the hand's centre) came down on the drawer's wall, the hand stopped above the rim
    and the fingers closed on nothing (expert 0.24). The hand now comes down further in."""
    from libero_ll.experts.expert import ScriptedExpert

    task = "pick_up_the_black_bowl_in_the_top_drawer_and_place_it_on_the_plate"
    with _env_of_text(tmp_path, task, BOWL_IN_A_SMALL_DRAWER) as env:
        for seed in (0, 1):
            env.reset(seed=seed)
            start = env.geometry.pos("small_akita_black_bowl_1")
            expert = ScriptedExpert(env, np.random.default_rng(seed))
            lifted = 0.0
            for _ in range(400):
                _, done, _ = env.step(np.asarray(expert.act(), dtype=np.float32))
                lifted = max(lifted, env.geometry.pos("small_akita_black_bowl_1")[2] - start[2])
                if done:
                    break
            assert lifted > 0.05 and done, (seed, lifted, env.geometry.pos("small_akita_black_bowl_1"))


def test_a_plate_pushed_with_the_hand_pressing_down_a_little_still_slides_to_the_stove_front():
    """A learnt policy pushes the plate at about 2.5 cm a step and presses down by half a millimetre a step
    (the demos' own mean, which the expert's closed loop corrects). With the plate at friction 1.0, the fingers
    wedged it against the table and this test failed (from the task's first three fixed starts the same push got
    the plate 10 to 13 cm along, short of the stove's front). With its glaze's 0.6 governing its contacts it
    arrives from both starts checked here."""
    from libero_ll.assets.categories import get_model
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.experiments.lifelong import suite_tasks
    from libero_ll.experts.push import push_waypoints
    from libero_ll.experts.skills import servo

    task = suite_tasks("libero_goal", ["push_the_plate_to_the_front_of_the_stove"])[0]
    env = LiberoEnv(task, EnvConfig(render=False))
    half = get_model("plate").half_size
    try:
        for seed in (0, 1):
            env.reset(seed=seed)
            # The centre of the stove's front region (a range on the table) in the world.
            g = env.geometry
            table, ((x0, y0, x1, y1),) = g.range_regions["kitchen_table_flat_stove_1_front_region"]
            origin, rot = g.surface_frame(table)
            front = (origin + rot @ np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.0]))[:2]
            plate = env.geometry.pos("plate_1")
            way = push_waypoints(plate[:2], front, half[0], plate[2] - half[2], env.robot_proprio()["ee_rot"])
            for _, target, hand, grip, _ in way[:2]:  # above the plate's far side from the front, then down
                for _ in range(40):
                    p = env.robot_proprio()
                    env.step(servo(p["ee_pos"], p["ee_rot"], target, hand, grip))
            along = (front - plate[:2]) / np.linalg.norm(front - plate[:2])
            for _ in range(80):
                _, done, _ = env.step(np.array([*(0.5 * along), -0.01, 0.0, 0.0, 0.0, 1.0]))
                if done:
                    break
            assert done, (seed, env.geometry.pos("plate_1"))
    finally:
        env.close()


def test_hand_turns_the_way_that_keeps_the_wrist_in_range():
    import math

    from libero_ll.experts.skills import WRIST_LIMIT, hand_down_rotation, nearest_equivalent_yaw

    now = hand_down_rotation(0.0)
    # Nearest is a turn of +0.4 rad; with the last joint already at its limit on that side
    # (turning +d about the vertical turns it by -d), the hand goes the other way round.
    assert nearest_equivalent_yaw(0.4, now) == 0.4
    assert nearest_equivalent_yaw(0.4, now, wrist=0.0) == 0.4
    other = nearest_equivalent_yaw(0.4, now, wrist=-WRIST_LIMIT + 0.1)
    assert math.isclose(math.cos(other), math.cos(0.4 - math.pi))
    assert math.isclose(math.sin(other), math.sin(0.4 - math.pi))
    # When neither way stays within range, the nearest is kept.
    assert nearest_equivalent_yaw(math.pi / 2, now, wrist=10.0) == math.pi / 2


def test_the_grasp_goes_the_way_round_that_the_settled_arm_can_reach():
    from libero_ll.experts.skills import settled_wrist, settled_wrist_safe_yaw

    base = np.array([-0.66, 0.0])
    # The rest posture: the hand in front of the base closing along +y, the last joint at pi/4.
    assert math.isclose(settled_wrist(base, np.array([-0.2, 0.0]), math.pi / 2), math.pi / 4)
    # KITCHEN_SCENE2's bowl, pinched closing along -45 degrees: settled, the joint would stand at about pi (it stopped
    # at 2.9); the other way round leaves it near 0.
    hand = np.array([-0.159, 0.031])
    assert abs(settled_wrist(base, hand, -math.pi / 4)) > 2.9
    turned = settled_wrist_safe_yaw(-math.pi / 4, base, hand)
    assert math.isclose(math.cos(turned), math.cos(3 * math.pi / 4), abs_tol=1e-9)
    assert abs(settled_wrist(base, hand, turned)) < 0.3
    assert settled_wrist_safe_yaw(math.pi / 2, base, hand) == math.pi / 2


def test_highest_top_near_a_path_counts_only_what_is_near_it():
    import numpy as np

    from libero_ll.experts.expert import highest_top_near

    tall = (np.array([0.0, 0.07]), 0.0, 0.02, 0.02, 0.95)  # 5 cm from the path
    low = (np.array([0.3, 0.0]), 0.0, 0.02, 0.02, 0.85)
    far = (np.array([0.0, 0.6]), 0.0, 0.02, 0.02, 1.5)
    a, b = np.array([-0.2, 0.0]), np.array([0.3, 0.0])
    assert highest_top_near([tall, low, far], a, b, 0.06) == 0.95
    assert highest_top_near([tall, low, far], a, b, 0.01) == 0.85
    assert highest_top_near([far], a, b, 0.06) == -np.inf


@contextmanager
def _env_of_text(folder: Path, name: str, text: str):
    """The environment (no rendering) of a task file `name`.bddl with `text`, written into `folder`; closed after."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    path = folder / f"{name}.bddl"
    path.write_text(text)
    env = LiberoEnv(str(path), EnvConfig(render=False))
    try:
        yield env
    finally:
        env.close()


@contextmanager
def _expert_for_first_demo(suite: str, prefix: str):
    """The environment of the suite's task whose name starts with `prefix`, reset as demo 0 (collection
    seed 0) starts, the expert for that episode, and the episode's seed; the environment is closed after."""
    from libero_ll.data.collect import demo_seed
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.experts.expert import ScriptedExpert
    from libero_ll.tasks.registry import get_suite

    task = next(t for t in get_suite(suite) if t.name.startswith(prefix))
    env = LiberoEnv(task.file, EnvConfig(render=False, robot_mesh="collision"))
    try:
        seed = demo_seed(task.name, 0, 0, seed=0)
        env.reset(seed=seed)
        yield env, ScriptedExpert(env, np.random.default_rng(seed)), seed
    finally:
        env.close()


def test_open_hand_passes_over_a_tall_neighbour_and_comes_down_straight():
    """On the floor, the cream cheese stands between tall bottles: the hand goes over, not through them."""
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import TRANSIT_CLEARANCE

    with _expert_for_first_demo("libero_object", "pick_up_the_cream_cheese") as (env, expert, _):
        ketchup_top = env.geometry.pos("ketchup_1")[2] + get_model("ketchup").half_size[2]
        moves = [w for w in expert._queue if w[0] == "move"]
        across, approach, grasp = moves[-7], moves[-6], moves[-5]
        assert across[1][2] >= ketchup_top + TRANSIT_CLEARANCE - 1e-6
        np.testing.assert_allclose(across[1][:2], approach[1][:2])  # straight down from there
        np.testing.assert_allclose(approach[1][:2], grasp[1][:2])
        assert approach[1][2] < across[1][2]


def test_carry_turn_goes_the_way_round_that_keeps_the_wrist_in_range():
    from libero_ll.experts.skills import WRIST_LIMIT, wrist_safe_turn

    # A quarter turn either way fits a drawer's front equally; with the wrist already at 1.65 rad,
    # turning by -pi/2 would take it to 3.2 (past its 2.9 stop): the other way round is chosen.
    assert wrist_safe_turn(-math.pi / 2, 1.65) == pytest.approx(math.pi / 2)
    # With room either way the smaller turn is kept.
    assert wrist_safe_turn(0.3, 0.0) == pytest.approx(0.3)
    assert wrist_safe_turn(-0.3, 2.0) == pytest.approx(-0.3)
    # Whatever is chosen stays within the limit when any of the three can.
    for wrist in (-2.5, -1.0, 0.0, 1.0, 2.5):
        for turn in (-1.5, -0.7, 0.7, 1.5):
            assert abs(wrist - wrist_safe_turn(turn, wrist)) <= WRIST_LIMIT


def test_an_object_goes_to_the_middle_of_an_empty_basket(soup_env):
    # The basket's own centre lies over its region; counted as an obstacle it sent the soup to a corner,
    # a different one from demo to demo, and policies could not tell where a carry ends.
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import ScriptedExpert

    ends = []
    for seed in (3, 4, 5):
        soup_env.reset(seed=seed)
        expert = ScriptedExpert(soup_env, np.random.default_rng(seed))
        step = expert.steps[0]
        xy, _ = expert._target(step, get_model(soup_env.spec.instances()[step.obj]))
        region = soup_env.geometry.site_region(step.goal.args[1])
        ends.append(np.abs(xy - region.center[:2]).max())
    assert max(ends) <= 0.0061  # the release jitter, nothing more


def test_an_object_is_let_go_just_above_a_containers_floor(soup_env):
    # Let go 2 cm higher, no demo showed a closed hand below the release point, and a policy that carried
    # the object a little lower than the expert hovered there with the fingers closed (docs/policies.md).
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import RELEASE_CLEARANCE, ScriptedExpert

    soup_env.reset(seed=3)
    expert = ScriptedExpert(soup_env, np.random.default_rng(3))
    step = expert.steps[0]
    model = get_model(soup_env.spec.instances()[step.obj])
    _, bottom_z = expert._target(step, model)
    region = soup_env.geometry.site_region(step.goal.args[1])
    floor = region.center[2] - region.half[2]
    assert bottom_z - floor == pytest.approx(RELEASE_CLEARANCE, abs=1e-9)

    # In an episode: when the fingers are first told to open, the can's bottom is within 2.5 cm of the floor
    # (about 4 cm when it was let go 3.2 cm up).
    ok, rec = run_expert_episode(soup_env, seed=3, max_steps=300, record=True)
    assert ok
    grip = np.stack(rec["actions"])[:, 6]
    first_open = int(np.nonzero(grip > 0)[0][-1]) + 1
    soup_env.reset_to(rec["states"][first_open])
    g = soup_env.geometry
    region = g.site_region(step.goal.args[1])
    above = g.pos(step.obj)[2] - model.half_size[2] - (region.center[2] - region.half[2])
    assert 0.0 < above < 0.025, above


def test_a_bowl_beside_a_tray_is_not_grasped_where_the_outer_finger_meets_the_trays_wall():
    # The bowl's grasp hint pinches its wall on the side of the tray: the open outer finger came down on
    # the tray's wall, the hand stopped 1.4 cm short and the fingers closed on nothing (0 of 4 episodes).
    from libero_ll.experts.expert import FINGER_OUT, FINGER_RADIUS, clearance
    from libero_ll.experts.skills import footprints

    with _expert_for_first_demo("libero_90", "LIVING_ROOM_SCENE4_stack_the_left_bowl") as (env, expert, seed):
        queue = expert._queue
        grasp = queue[[w[0] for w in queue].index("hold") - 1][1]
        bowl = env.geometry.pos(expert.steps[0].obj)
        outward = (grasp[:2] - bowl[:2]) / np.linalg.norm(grasp[:2] - bowl[:2])
        tray = footprints(env, set(), -np.inf)["wooden_tray_1"]
        assert clearance(grasp[:2] + outward * FINGER_OUT, [tray]) >= FINGER_RADIUS

        ok, _ = run_expert_episode(env, seed=seed, max_steps=600, record=False)
        assert ok


class _StillHand:
    """Just enough of an environment for `ScriptedExpert.act`: a hand pointing down at a fixed place."""

    def __init__(self, pos, opening: float = 0.08):
        self.pos = np.asarray(pos, dtype=float)
        self.opening = opening  # the fingers' opening, metres

    def robot_proprio(self):
        from libero_ll.experts.skills import hand_down_rotation

        fingers = np.array([self.opening / 2, -self.opening / 2])
        return {"ee_pos": self.pos, "ee_rot": hand_down_rotation(0.0), "gripper_states": fingers}


def _expert_with(queue, hand_at, step=None, stall_within=0):
    from libero_ll.experts.expert import WAYPOINT_BUDGET, ScriptedExpert

    ex = ScriptedExpert.__new__(ScriptedExpert)
    ex.env, ex.rng, ex.noise, ex.rot_noise, ex.speed = _StillHand(hand_at), np.random.default_rng(0), 0.0, 0.0, 0.6
    ex.steps, ex._stage, ex._counter, ex._hold_pos, ex._last_opening = [step], 0, 0, None, None
    ex._wp_steps, ex._wp_budget, ex._queue = 0, WAYPOINT_BUDGET, list(queue)
    ex._stall_within = stall_within
    return ex


@pytest.mark.parametrize("kind, heads_for", [("via", "next"), ("move", "this")])
def test_the_hand_passes_a_via_point_without_stopping_there(kind, heads_for):
    """2 cm short of a "via" point the hand already heads for the next; short of a "move" it goes on to it."""
    from libero_ll.experts.skills import hand_down_rotation

    down = hand_down_rotation(0.0)
    this, after = np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.3, 1.0])
    ex = _expert_with([(kind, this, down, 1.0), ("move", after, down, 1.0)], hand_at=[-0.02, 0.0, 1.0])
    a = ex.act()
    if heads_for == "next":
        assert len(ex._queue) == 1 and a[1] > 0.5  # towards the next waypoint (y)
    else:
        assert len(ex._queue) == 2 and a[0] > 0.3 and abs(a[1]) < 1e-9  # on towards this one (x)


def test_a_bowl_put_into_a_drawer_turns_so_that_the_hand_is_further_out():
    from libero_ll.experts.expert import DRAWER_HAND_TURN, turn_hand_out

    out = np.array([-1.0, 0.0])  # out of the drawer, towards the robot
    pinch = np.array([0.0, -0.058])  # the hand on the bowl's wall, along the drawer's front
    for turn in (0.0, 0.5, -2.0):
        got = turn_hand_out(turn, pinch, out)
        assert abs(abs(got - turn) - DRAWER_HAND_TURN) < 1e-12
        c, s = math.cos(got), math.sin(got)
        c0, s0 = math.cos(turn), math.sin(turn)
        turned = np.array([c * pinch[0] - s * pinch[1], s * pinch[0] + c * pinch[1]])
        before = np.array([c0 * pinch[0] - s0 * pinch[1], s0 * pinch[0] + c0 * pinch[1]])
        assert turned @ out > before @ out
    # A box pinched across its middle is not turned.
    assert turn_hand_out(0.3, np.array([0.003, -0.002]), out) == 0.3


def test_a_waypoint_the_hand_no_longer_closes_in_on_is_given_up_working_a_part():
    """Working a drawer, a hand held fast 5 cm short of its waypoint heads for the next after STALL_STEPS
    steps, not after the whole WAYPOINT_BUDGET; carrying an object it keeps trying for the whole budget, but not
    once it carries it into a layer (the waypoints `_into_layer` counts in `_stall_within`); a hand that still
    closes in keeps going."""
    from libero_ll.bddl.spec import Predicate
    from libero_ll.experts.expert import STALL_STEPS, WAYPOINT_BUDGET, Articulate, PickPlace
    from libero_ll.experts.skills import hand_down_rotation

    down = hand_down_rotation(0.0)
    this, after = np.array([0.05, 0.0, 1.0]), np.array([0.0, 0.3, 1.0])
    drawer = Articulate("cabinet_1", "top_drawer", "drawer", Predicate("close", ("cabinet_1_top_region",)))
    carry = PickPlace("bowl_1", Predicate("on", ("bowl_1", "plate_1")))

    def steps_towards_this(step, stall_within=0):
        ex = _expert_with([("move", this, down, 1.0), ("move", after, down, 1.0)], hand_at=[0.0, 0.0, 1.0], step=step,
                          stall_within=stall_within)
        n = 0
        while len(ex._queue) == 2 and n <= WAYPOINT_BUDGET:
            ex.act()
            n += len(ex._queue) == 2
        return n

    assert steps_towards_this(drawer) == STALL_STEPS < WAYPOINT_BUDGET
    assert steps_towards_this(carry) == WAYPOINT_BUDGET
    assert steps_towards_this(carry, stall_within=2) == STALL_STEPS
    assert steps_towards_this(carry, stall_within=1) == WAYPOINT_BUDGET

    # Closing in by 1 cm a step, it is not given up.
    ex = _expert_with([("move", np.array([0.3, 0.0, 1.0]), down, 1.0), ("move", after, down, 1.0)], hand_at=[0.0, 0.0, 1.0], step=drawer)
    for k in range(25):
        ex.env.pos = np.array([0.01 * k, 0.0, 1.0])
        ex.act()
    assert len(ex._queue) == 2


@pytest.mark.parametrize("kind", ["hold", "close"])
def test_fingers_closing_on_a_mug_go_on_until_they_stop(kind):
    """A "hold" closes the fingers for its steps; a "close" (`Grasp.close_until_still`, a mug) goes on while they
    still close by more than CLOSE_STILL a step, up to CLOSE_MAX_STEPS in all."""
    from libero_ll.experts.expert import CLOSE_MAX_STEPS, CLOSE_STEPS
    from libero_ll.experts.skills import hand_down_rotation

    down = hand_down_rotation(0.0)

    def steps_closing(shut_after: int, rate: float = 0.007) -> int:
        """Steps before the hand moves on, for fingers that close by `rate` (metres) a step for `shut_after` steps."""
        ex = _expert_with([(kind, CLOSE_STEPS, down, 1.0), ("move", np.array([0.0, 0.3, 1.0]), down, 1.0)], [0.0, 0.0, 1.0])
        n = 0
        while len(ex._queue) == 2:
            ex.env.opening = 0.08 - rate * min(n, shut_after)
            a = ex.act()
            if len(ex._queue) == 2:
                assert a[6] == 1.0 and abs(a[1]) < 1e-9  # closing, the hand kept where it is
                n += 1
        return n

    if kind == "hold":
        assert steps_closing(11) == CLOSE_STEPS
    else:
        # 2.4 cm apart after CLOSE_STEPS: on until the step after the fingers stopped (at 3 mm).
        assert steps_closing(11) == 12
        assert steps_closing(5) == CLOSE_STEPS
        # Fingers that never stop: no longer than CLOSE_MAX_STEPS; fingers that creep: no longer than CLOSE_STEPS.
        assert steps_closing(100, rate=0.002) == CLOSE_MAX_STEPS
        assert steps_closing(100, rate=0.0005) == CLOSE_STEPS


def test_mugs_and_only_mugs_ask_for_fingers_closed_until_they_stop():
    from libero_ll.assets.categories import get_model

    for mug in ("porcelain_mug", "red_coffee_mug", "white_yellow_mug"):
        assert get_model(mug).grasp.close_until_still
    for other in ("akita_black_bowl", "white_bowl", "alphabet_soup", "cream_cheese"):
        assert not get_model(other).grasp.close_until_still


def test_a_fixture_is_left_behind_by_a_thing_carried_away_from_beside_it_not_by_one_taken_out_of_it():
    """`ScriptedExpert._left_behind` (expert 0.29): libero_goal's bowl stands beside the cabinet, and the way to the
    plate only leaves the cabinet further behind, so the bowl is not lifted over it; libero_spatial's bowl stands in
    the cabinet's open top drawer, and a way out of a fixture can cross the rest of it, so that cabinet is not left
    behind; nor is one that the way comes nearer to."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.experiments.lifelong import suite_tasks
    from libero_ll.experts.expert import ScriptedExpert

    beside = suite_tasks("libero_goal", ["put_the_bowl_on_the_plate"])[0]
    inside = suite_tasks(
        "libero_spatial", ["pick_up_the_black_bowl_in_the_top_drawer_of_the_wooden_cabinet_and_place_it_on_the_plate"])[0]
    for task, left in ((beside, {"wooden_cabinet_1"}), (inside, set())):
        env = LiberoEnv(task, EnvConfig(render=False))
        try:
            env.reset(seed=0)
            expert = ScriptedExpert(env, np.random.default_rng(0))
            plate, cabinet = env.geometry.pos("plate_1"), env.geometry.pos("wooden_cabinet_1")
            assert expert._left_behind("akita_black_bowl_1", plate, {"wooden_cabinet_1"}) == left, task
            assert expert._left_behind("akita_black_bowl_1", cabinet, {"wooden_cabinet_1"}) == set(), task
        finally:
            env.close()


CREAM_CHEESE_BESIDE_A_BOTTLE = """\
(define (problem LIBERO_Floor_Manipulation)
  (:domain robosuite)
  (:language Pick the cream cheese and place it in the basket)
  (:regions
    (bin_region (:target floor) (:ranges ((-0.01 0.25 0.01 0.27))))
    (cheese_region (:target floor) (:ranges ((0.055 -0.122 0.059 -0.118))) (:yaw_rotation ((0.0 0.0))))
    (sauce_region (:target floor) (:ranges ((0.086 -0.178 0.09 -0.174))))
    (contain_region (:target basket_1))
  )
  (:fixtures floor - floor)
  (:objects cream_cheese_1 - cream_cheese basket_1 - basket tomato_sauce_1 - tomato_sauce)
  (:obj_of_interest cream_cheese_1 basket_1)
  (:init
    (On cream_cheese_1 floor_cheese_region)
    (On tomato_sauce_1 floor_sauce_region)
    (On basket_1 floor_bin_region)
  )
  (:goal (And (In cream_cheese_1 basket_1_contain_region)))
)
"""


def test_a_box_lying_flat_may_be_held_off_its_middle_and_a_bottle_may_not():
    from libero_ll.assets.categories import get_model
    from libero_ll.experts.expert import BODY_SHIFT, pinch_candidates

    cheese = get_model("cream_cheese")
    hint = (tuple(cheese.grasp.offset), cheese.grasp.across_yaw)
    # Closing across the box (along its y), the pads run along its x: held up to BODY_SHIFT either side of the middle.
    got = pinch_candidates("cream_cheese", cheese)
    assert got[0] == hint and len(got) == 3
    assert sorted(np.round([offset for offset, _ in got[1:]], 6).tolist()) == [[-BODY_SHIFT, 0.0], [BODY_SHIFT, 0.0]]
    assert all(across == cheese.grasp.across_yaw for _, across in got)
    for standing in ("bbq_sauce", "milk", "ketchup", "moka_pot", "black_book"):
        assert len(pinch_candidates(standing, get_model(standing))) == 1, standing


def test_a_box_beside_a_bottle_is_held_off_its_middle_away_from_the_bottle(tmp_path):
    """LIBERO-Object's cream cheese, converted, stood 6 cm beside the tomato sauce: held at its middle, the hand's
    housing came down on the sauce, stopped 3 cm above the grasp and closed on nothing (1 of 5 demo seeds). Expert 0.30
    holds it off its middle, away from the sauce."""
    from libero_ll.experts.expert import ScriptedExpert

    task = "pick_up_the_cream_cheese_and_place_it_in_the_basket"
    with _env_of_text(tmp_path, task, CREAM_CHEESE_BESIDE_A_BOTTLE) as env:
        for seed in (1, 2):
            env.reset(seed=seed)
            start = env.geometry.pos("cream_cheese_1")
            expert = ScriptedExpert(env, np.random.default_rng(seed))
            grasp = [w for w in expert._queue if w[0] == "move"][2][1]  # above, the approach, then the grasp
            assert start[0] - grasp[0] > 0.02, seed  # towards the robot, away from the sauce
            done = False
            for _ in range(300):
                _, done, _ = env.step(np.asarray(expert.act(), dtype=np.float32))
                if done:
                    break
            assert done, seed


BOWL_UNDER_AN_OPEN_DRAWER = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the black bowl in the top drawer of the cabinet)
  (:regions
    (cabinet_region (:target kitchen_table) (:ranges ((-0.002 -0.302 0.002 -0.298)))
      (:yaw_rotation ((1.5707963267948966 1.5707963267948966))))
    (bowl_region (:target kitchen_table) (:ranges ((-0.102 -0.022 -0.098 -0.018))) (:yaw_rotation ((0.0 0.0))))
    (top_region (:target wooden_cabinet_1))
  )
  (:fixtures kitchen_table - kitchen_table wooden_cabinet_1 - small_wooden_cabinet)
  (:objects akita_black_bowl_1 - small_akita_black_bowl)
  (:obj_of_interest akita_black_bowl_1 wooden_cabinet_1)
  (:init
    (On akita_black_bowl_1 kitchen_table_bowl_region)
    (On wooden_cabinet_1 kitchen_table_cabinet_region)
    (Open wooden_cabinet_1_top_region)
  )
  (:goal (And (In akita_black_bowl_1 wooden_cabinet_1_top_region)))
)
"""


def test_a_bowl_under_an_open_drawer_is_pushed_out_from_under_it_then_put_in(tmp_path):
    """LIBERO-90's KITCHEN_SCENE10, converted: the top drawer stands open over the bowl to be put into it, and the hand,
    coming down to the bowl's rim, stopped on the drawer (3 of 5 demo seeds). Expert 0.31 pushes the bowl out from
    under the drawer first (`Nudge`); without that push none of these seeds reaches the goal in 400 steps."""
    from libero_ll.experts.expert import Nudge, ScriptedExpert

    task = "put_the_black_bowl_in_the_top_drawer_of_the_cabinet"
    with _env_of_text(tmp_path, task, BOWL_UNDER_AN_OPEN_DRAWER) as env:
        for seed in (1, 2):
            env.reset(seed=seed)
            start = env.geometry.pos("akita_black_bowl_1")
            expert = ScriptedExpert(env, np.random.default_rng(seed))
            assert isinstance(expert.steps[0], Nudge) and expert.steps[0].obj == "akita_black_bowl_1", seed
            pushed = False
            for _ in range(400):
                _, done, info = env.step(np.asarray(expert.act(), dtype=np.float32))
                pushed = pushed or np.linalg.norm(env.geometry.pos("akita_black_bowl_1")[:2] - start[:2]) > 0.02
                if done:
                    break
            assert pushed and info["success"], seed
