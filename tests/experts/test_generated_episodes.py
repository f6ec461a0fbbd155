"""Whole expert episodes on generated tasks (`libero-ll generate --random`) that once failed: each must now
succeed, and in time. The tasks are built here as the generator draws them (the same text, byte for byte)."""

from __future__ import annotations

import pytest

from libero_ll.data.collect import demo_seed, run_expert_episode
from libero_ll.envs.env import EnvConfig, LiberoEnv
from libero_ll.tasks.generator import TaskRequest, _steps, build_task
from libero_ll.tasks.scenes import load_scene


@pytest.mark.parametrize(
    "scene, goal, indices, budget",
    [
        # The top drawer starts pulled out over the middle one's handle: the hand came down on it, closed on its
        # front and pulled it out again (1 of 5 episodes solved); the open drawer above is now pushed shut first.
        ("KITCHEN_SCENE5", [{"open": "white_cabinet_1_middle_region"}], (0, 1, 2, 4), 400),
        ("KITCHEN_SCENE10", [{"open": "wooden_cabinet_1_middle_region"}], (0, 2, 4), 400),
        # Beside the drawer it had just opened, the wrist came down on the drawer's side and the fingers closed on
        # nothing (3 of 5); the hand is now pitched away from it.
        ("GOAL_SCENE", [{"open": "wooden_cabinet_1_top_region"},
                        {"put_in": {"object": "cream_cheese_1", "target": "wooden_cabinet_1_top_region"}}], (0, 4), 600),
        # The bowl at the back stands 9 cm in front of the cabinet: a pinch chosen for room at the pick brought the
        # hand's housing down on the cabinet's top at the place, and the bowl was let go 27 cm up (3 and 4 of 5).
        ("KITCHEN_SCENE2", [{"stack": {"object": "akita_black_bowl_1", "target": "akita_black_bowl_3"}}], (3, 4), 250),
        ("KITCHEN_SCENE2", [{"stack": {"object": "akita_black_bowl_2", "target": "akita_black_bowl_3"}}], (2,), 250),
        # The book's region lies 2.8 cm from the shelf's side board: the hand, closing across it, came down on the
        # board and stayed caught (0 and 2 of 5); the book is now turned so that the hand lies along the board.
        ("STUDY_SCENE4", [{"place_next_to": {"object": "black_book_1", "side": "right",
                                             "reference": "wooden_two_layer_shelf_1"}}], (0, 1, 2, 3, 4), 300),
        ("STUDY_SCENE4", [{"place_next_to": {"object": "yellow_book_1", "side": "right",
                                             "reference": "wooden_two_layer_shelf_1"}}], (0, 3, 4), 300),
        # After pulling the drawer open the arm's wrist stands twisted; the grasp's way round, reckoned from the last
        # joint as it stood, drove that joint to its stop as the arm settled, and the hand crept (600 and 591 steps).
        ("KITCHEN_SCENE2", [{"open": "wooden_cabinet_1_top_region"},
                            {"put_in": {"object": "akita_black_bowl_2", "target": "wooden_cabinet_1_top_region"}}],
         (2, 3), 540),
        # Carried over the shelf beside it, the bowl (held by its rim, hanging tilted) caught the shelf's top and
        # fell out of the hand (4 of 5); it is now carried higher by its droop.
        ("KITCHEN_SCENE9", [{"turn_on": "flat_stove_1"}, {"put_on": {"object": "white_bowl_1", "target": "flat_stove_1"}}],
         (3,), 400),
    ],
)
def test_expert_solves_once_failing_generated_task_within_budget(scene, goal, indices, budget, tmp_path):
    task = build_task(TaskRequest(load_scene(scene), _steps(goal, "")))
    path = tmp_path / f"{task.name}.bddl"
    path.write_text(task.text)
    env = LiberoEnv(str(path), EnvConfig(render=False))
    failed = []
    try:
        for index in indices:
            ok, _ = run_expert_episode(env, demo_seed(task.name, index, 0, seed=0), budget, record=False)
            if not ok:
                unmet = [text for text, holds in env.predicate_values(env.spec.goal_predicates()) if not holds]
                failed.append((index, unmet))
    finally:
        env.close()
    assert not failed, f"{task.name}: episodes not solved in {budget} steps (index, unmet goal): {failed}"
