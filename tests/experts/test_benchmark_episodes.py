"""Whole expert episodes on shipped benchmark scenes that once failed: each must now succeed, and in time."""

from __future__ import annotations

import pytest

from libero_ll.assets.categories import get_model
from libero_ll.data.collect import demo_seed, run_expert_episode
from libero_ll.envs import thresholds as th
from libero_ll.envs.env import EnvConfig, LiberoEnv
from libero_ll.tasks.registry import get_suite


def _env(suite: str, name: str) -> tuple[LiberoEnv, str]:
    task = next(t for t in get_suite(suite) if t.name == name)
    return LiberoEnv(str(task.file), EnvConfig(render=False)), task.name


@pytest.mark.parametrize(
    "suite, name, budget, index",
    [
        # The plate's friction once stalled the pushing hand at every short step: about 500 steps.
        ("libero_goal", "push_the_plate_to_the_front_of_the_stove", 320, 0),
        # A bowl put into the bottom drawer once met the middle drawer's handle: only 14 cm of the
        # drawer stood out of the cabinet.
        ("libero_90", "KITCHEN_SCENE4_put_the_black_bowl_in_the_bottom_drawer_of_the_cabinet", 400, 0),
        # Pushing the bottom drawer shut, the fingers once landed on top of its bar and stalled.
        ("libero_90", "KITCHEN_SCENE4_close_the_bottom_drawer_of_the_cabinet_and_open_the_top_drawer", 450, 0),
        # A wine bottle standing in a drawer has its centre above the drawer's region: it is laid down.
        ("libero_90", "KITCHEN_SCENE4_put_the_wine_bottle_in_the_bottom_drawer_of_the_cabinet", 450, 0),
        # A standing book under a shelf's 17 cm board: carried in and pushed in with the hand pitched.
        ("libero_90", "STUDY_SCENE4_pick_up_the_book_on_the_right_and_place_it_under_the_cabinet_shelf", 600, 0),
        # A mug set on the microwave's sill, pushed in whole with the hand pitched, and the door shut.
        ("libero_10", "KITCHEN_SCENE6_put_the_yellow_and_white_mug_in_the_microwave_and_close_it", 600, 0),
    ],
)
def test_expert_solves_once_failing_task_within_budget(suite, name, budget, index):
    env, task = _env(suite, name)
    try:
        ok, _ = run_expert_episode(env, demo_seed(task, index, 0, seed=0), budget, record=False)
        unmet = [text for text, holds in env.predicate_values(env.spec.goal_predicates()) if not holds]
        assert ok, f"{task}: not solved in {budget} steps; unmet {unmet}"
    finally:
        env.close()


def test_bowl_into_the_bottom_drawer_is_put_down_low_and_the_drawer_shut():
    """Closing the hand along the drawer's front, the Panda's wrist met the top drawer's handle 11 cm above the
    place: the hand waited there for its waypoint budget (about 60 steps) and let go, the bowl's far rim came
    down on the middle drawer's handle, and in episodes 1, 6 and 19 (of 0 to 19) the bowl lay tilted by 27 to
    42 degrees and jammed the drawer 5 cm open (600 steps, unsolved; the episodes solved took 320 to 379).
    Turned by `DRAWER_HAND_TURN` the hand is 2 cm further out, puts the bowl down and shuts the drawer in
    about 230 steps."""
    env, task = _env("libero_10", "KITCHEN_SCENE4_put_the_black_bowl_in_the_bottom_drawer_of_the_cabinet_and_close_it")
    slow = []
    try:
        for index in (1, 6, 19):
            ok, _ = run_expert_episode(env, demo_seed(task, index, 0, seed=0), 320, record=False)
            if not ok:
                slow.append(index)
    finally:
        env.close()
    assert not slow, f"{task}: episodes {slow} not solved in 320 steps"


def test_open_drawer_stands_out_far_enough_for_a_bowl_clear_of_the_handle_above():
    # Pulled to where an Open in :init puts it, a bowl (12.5 cm across) put at the front of the
    # drawer must leave the hand holding it (about 3 cm from its centre to its back face) in front
    # of the bar of the drawer above.
    from libero_ll.assets.fixtures import CABINET_HALF, HANDLE_RADIUS, HANDLE_STANDOFF
    from libero_ll.experts.expert import DRAWER_EDGE_GAP

    drawer = get_model("white_cabinet").part("bottom_drawer")
    assert th.DRAWER_INIT_OPEN <= drawer.joint.range[1]
    region = next(r for r in drawer.regions if r.name == "bottom_region")
    inner_front = region.pos[0] + region.half_size[0] + th.DRAWER_INIT_OPEN
    bowl_centre = inner_front - 0.125 / 2 - DRAWER_EDGE_GAP
    bar_front = CABINET_HALF[0] + HANDLE_STANDOFF + HANDLE_RADIUS
    assert bowl_centre - 0.03 >= bar_front


def test_a_bowl_at_the_edge_of_reach_is_lifted_with_the_elbow_bent():
    """libero_spatial's bowl on the stove stands 0.83 m from the robot's base. Pinched on its far side with
    the hand straight down, the arm straightened to the elbow's stop (joint 4 at -0.07 rad), where the
    controller cannot draw the hand back: episodes ran 321 steps on average and 2 of 20 failed. Pinched at
    its side with the hand pitched outwards (`FAR_REACH`), the elbow stays bent and the episode is short.
    Episodes 1 and 13 have the bowl farthest out of the first 20."""

    _solved_with_the_elbow_bent("pick_up_the_black_bowl_on_the_stove_and_place_it_on_the_plate", (1, 13))


def test_a_bowl_at_the_edge_of_reach_and_at_the_shoulders_height_is_reached_from_nearer_the_base():
    """libero_spatial's bowl on the wooden cabinet stands 0.84 m from the robot's base, at the height of its
    shoulder. With the hand pointing down the approach above it was out of reach (365 steps on average), and
    in episode 12 the 12 cm lift straightened the elbow to its stop: the hand could not come back and let go
    of the bowl 23 cm above the plate. Pitched, brought first to a point nearer the base and lifted only
    `FAR_LIFT`, the hand keeps the elbow bent. Episode 7 was the longest of the first 20 (241 steps)."""

    _solved_with_the_elbow_bent("pick_up_the_black_bowl_on_the_wooden_cabinet_and_place_it_on_the_plate", (12, 7))


def _solved_with_the_elbow_bent(name: str, episodes: tuple[int, ...]) -> None:
    """The expert solves these episodes of a libero_spatial task in 300 steps, the elbow never near its stop."""
    env, task = _env("libero_spatial", name)
    try:
        for index in episodes:
            ok, rec = run_expert_episode(env, demo_seed(task, index, 0, seed=0), 300, record=True)
            assert ok, f"episode {index}: not solved in 300 steps"
            elbow = max(float(obs["joint_states"][3]) for obs in rec["obs"])
            assert elbow < -0.3, f"episode {index}: the elbow straightened to {elbow:.2f} rad (its stop: -0.07)"
    finally:
        env.close()


@pytest.mark.parametrize("index", [1, 16])
def test_a_mug_is_lifted_once_the_fingers_have_stopped_closing_on_its_wall(index):
    """The fingers take about 11 steps to close from wide open onto a mug's 6 mm wall. After the expert's usual 8
    the hand rose with them still 3 cm apart, and in these episodes of LIVING_ROOM_SCENE6's white mug the mug
    turned in them and fell (18 of 20 solved). A mug's fingers now close until they stop before the lift."""
    env, task = _env("libero_90", "LIVING_ROOM_SCENE6_put_the_white_mug_on_the_plate")
    try:
        ok, rec = run_expert_episode(env, demo_seed(task, index, 0, seed=0), 300, record=True)
    finally:
        env.close()
    assert ok, f"episode {index}: not solved in 300 steps"
    actions = rec["actions"]
    close = next(i for i, a in enumerate(actions) if a[6] > 0)
    lift = next(i for i in range(close, len(actions)) if actions[i][2] > 0.1)
    opening = [float(o["gripper_states"][0] - o["gripper_states"][1]) for o in rec["obs"]]
    assert opening[lift] < 0.012, f"the lift began with the fingers {100 * opening[lift]:.1f} cm apart"
    assert lift - close <= 16, f"the fingers closed for {lift - close} steps"


def test_the_mug_is_pushed_into_the_microwave_with_the_wrist_off_its_stop():
    """Episode 1 of libero_10's microwave task: turned the other way round for the pitched push, the Panda's last
    joint wound to its stop (2.9 rad), the hand swung off its way turning back for the door, and the episode ran
    past 600 steps. The push's turn now leaves that joint room for the pitch."""
    env, task = _env("libero_10", "KITCHEN_SCENE6_put_the_yellow_and_white_mug_in_the_microwave_and_close_it")
    try:
        ok, rec = run_expert_episode(env, demo_seed(task, 1, 0, seed=0), 600, record=True)
    finally:
        env.close()
    assert ok, "episode 1: not solved in 600 steps"
    wrist = max(abs(float(o["joint_states"][6])) for o in rec["obs"])
    assert wrist < 2.6, f"the last joint reached {wrist:.2f} rad"


@pytest.mark.parametrize(
    "suite, name, index, budget",
    [
        # The bowl 8 cm from the side wall of the drawer just pulled open: pinched on that side, the hand's
        # housing came down on the wall 18 cm above the bowl and the fingers closed on nothing.
        ("libero_goal", "open_the_top_drawer_and_put_the_bowl_inside", 5, 520),
        # The bowl at the back beside the wooden cabinet: the hand's housing met the cabinet's side, and the hand
        # used up its waypoint budgets at the grasp and on the way up.
        ("libero_90", "KITCHEN_SCENE2_put_the_black_bowl_at_the_back_on_the_plate", 2, 180),
    ],
)
def test_a_round_wall_is_not_pinched_where_the_hands_housing_would_come_down_on_something(suite, name, index, budget):
    """The choice of pinch on a bowl's wall once looked only 5 cm beyond the pinch for things reaching up to the
    hand's housing; it now looks under the housing's whole 21 cm (`HOUSING_OVERLAP_PENALTY`)."""
    env, task = _env(suite, name)
    try:
        ok, _ = run_expert_episode(env, demo_seed(task, index, 0, seed=0), budget, record=False)
    finally:
        env.close()
    assert ok, f"{task} episode {index}: not solved in {budget} steps"
