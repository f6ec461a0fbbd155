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

    env, task = _env("libero_spatial", "pick_up_the_black_bowl_on_the_stove_and_place_it_on_the_plate")
    try:
        for index in (1, 13):
            ok, rec = run_expert_episode(env, demo_seed(task, index, 0, seed=0), 300, record=True)
            assert ok, f"episode {index}: not solved in 300 steps"
            elbow = max(float(obs["joint_states"][3]) for obs in rec["obs"])
            assert elbow < -0.3, f"episode {index}: the elbow straightened to {elbow:.2f} rad (its stop: -0.07)"
    finally:
        env.close()
