"""Putting things into a shelf's layers: which regions are layers, the plan, the insertion and the push."""

from __future__ import annotations

import math

import numpy as np
import pytest

import libero_ll.assets  # noqa: F401  (registers the categories)
from libero_ll.assets.categories import get_model
from libero_ll.bddl.spec import Predicate
from libero_ll.assets.fixtures import MICROWAVE_FLOOR, MICROWAVE_HALF, MICROWAVE_SILL
from libero_ll.experts.shelf import (
    HAND_FRONT,
    HAND_FRONT_LINK6,
    PUSH_PITCH,
    RETREAT,
    WRIST_TOP,
    Layer,
    insert_waypoints,
    is_layer,
    layer_shape,
    pitched_rotation,
    push_in_waypoints,
)

SHELF = {"wooden_two_layer_shelf_1": "wooden_two_layer_shelf", "chefmate_8_frypan_1": "chefmate_8_frypan"}


def _layer() -> Layer:
    """The bottom layer of a shelf whose open face is the plane x = 0, entered along +x."""
    return Layer(
        floor=0.82,
        roof=0.99,
        face=np.array([0.0, -0.3]),
        inward=np.array([1.0, 0.0]),
        across=np.array([0.0, 1.0]),
        front=0.015,
        back=0.23,
        middle=0.115,
        width=0.2,
    )


def test_only_the_shelf_layers_under_a_board_are_layers():
    shelf = get_model("wooden_two_layer_shelf")
    for name in ("bottom_region", "top_region"):
        shape = layer_shape(shelf, name)
        assert shape is not None
        assert shape.open_dir == (1.0, 0.0)  # the back board closes -x, the sides close +-y
        assert shape.roof_gap == pytest.approx(0.0, abs=1e-9)
        assert shape.back_gap == pytest.approx(0.015)
    assert layer_shape(shelf, "top_side") is None  # nothing over the top
    assert layer_shape(shelf, "no_such_region") is None
    # An open rack, a caddy's compartments and a drawer's inside are no layers.
    assert layer_shape(get_model("wine_rack"), "top_region") is None
    assert layer_shape(get_model("desk_caddy"), "front_contain_region") is None
    assert is_layer("wooden_two_layer_shelf_1_bottom_region", SHELF)
    assert not is_layer("wooden_two_layer_shelf_1_top_side", SHELF)
    assert not is_layer("kitchen_table_somewhere", SHELF)


def test_planner_pushes_in_after_putting_into_a_layer_only():
    from libero_ll.experts.expert import PickPlace, SlideIn, plan

    into = Predicate("in", ("chefmate_8_frypan_1", "wooden_two_layer_shelf_1_bottom_region"))
    steps = plan([into], SHELF)
    assert [type(s) for s in steps] == [PickPlace, SlideIn]
    assert steps[1].obj == "chefmate_8_frypan_1" and steps[1].goal == into
    on_top = Predicate("on", ("chefmate_8_frypan_1", "wooden_two_layer_shelf_1_top_side"))
    assert [type(s) for s in plan([on_top], SHELF)] == [PickPlace]


def test_pan_goes_in_handle_first_from_the_front_and_the_hand_stays_out():
    pan = get_model("chefmate_8_frypan")
    layer = _layer()
    # Handle pointing out of the layer (-x): the hand is 3.6 cm out from the pan's centre.
    offset = np.array([-0.036, 0.0])
    hand = pitched_rotation(math.pi / 2, layer.inward, 0.0)
    way = insert_waypoints(layer, pan, offset, math.pi, hand, False, 0.0, 1.0, 0.25)
    moves = [w for w in way if w[0] == "move"]
    start, outside, inside, down, up, back = (m[1] for m in moves)
    # It comes down in front of the layer with the pan clear of the open face, then slides in level.
    assert layer.depth(outside) + 0.036 + pan.half_size[0] < 0
    assert outside[2] == pytest.approx(inside[2]) and outside[2] < layer.roof
    assert layer.depth(inside) == pytest.approx(-HAND_FRONT)
    # Released just over the floor; the open hand rises straight up until its fingers clear the
    # pan's top, then backs out past the handle's end.
    assert down[2] == pytest.approx(layer.floor + pan.grasp.height + 0.012)
    assert [w[0] for w in way].index("hold") == 4 and way[4][3] == -1.0
    assert np.allclose(up[:2], down[:2]) and up[2] >= layer.floor + 2 * pan.half_size[2] + 0.012
    assert back[2] == pytest.approx(up[2])
    assert layer.depth(back) < layer.depth(inside) + 0.036 - pan.half_size[0]
    # No waypoint of the hand lies past the board's edge.
    assert max(layer.depth(m[1]) for m in moves) <= -HAND_FRONT + 1e-9


def test_push_in_starts_behind_the_back_end_and_stops_before_the_back_wall():
    pan = get_model("chefmate_8_frypan")
    layer = _layer()
    # Released with its centre 2 cm short of the open face: pushed in by the handle's end.
    pos = np.array([-0.02, -0.3, 0.842])
    way = push_in_waypoints(layer, pan, pos, math.pi, np.array([-0.3, -0.3, 0.87]), math.pi / 2)
    moves = [w for w in way if w[0] == "move"]
    # The hand first turns where it is to close along the open face.
    np.testing.assert_allclose(moves[0][1], [-0.3, -0.3, 0.87])
    np.testing.assert_allclose(moves[0][2][:2, 0], [0.0, 1.0], atol=1e-12)
    behind, push = moves[2][1], moves[3][1]
    # The handle's end is far enough out for a hand pointing down, which stops in front of the board.
    np.testing.assert_allclose(moves[3][2][:, 2], [0.0, 0.0, -1.0], atol=1e-12)
    assert layer.depth(push) <= layer.edge - HAND_FRONT + 1e-9
    rear = layer.depth(pos) - pan.half_size[0]
    assert layer.depth(behind) < rear  # the fingers come down behind the handle's end
    assert way[3][0] == "hold" and way[3][3] == 1.0  # and close before pushing
    pushed = layer.depth(push) - rear  # how far the pan's centre moves, give or take the fingers
    assert layer.front + 0.005 < layer.depth(pos) + pushed
    assert layer.depth(pos) + pushed - 0.011 + pan.half_size[0] <= layer.back
    # In far enough already: nothing to do.
    deep = np.array([0.05, -0.3, 0.842])
    assert push_in_waypoints(layer, pan, deep, math.pi, np.array([-0.3, -0.3, 0.87]), math.pi / 2) == []


def test_a_standing_book_in_the_mouth_of_a_low_layer_is_pushed_in_by_a_pitched_hand():
    """A hand pointing down would stop in front of the board with the book's centre still outside the
    region: the hand pitches forward, its fingertips leading under the board."""
    book = get_model("yellow_book")
    layer = _layer()
    yaw = math.pi / 2  # the book's thickness along the layer
    pos = np.array([0.005, -0.3, layer.floor + book.half_size[2]])
    way = push_in_waypoints(layer, book, pos, yaw, np.array([-0.1, -0.3, 0.95]), math.pi / 2)
    moves = [w for w in way if w[0] == "move"]
    # The hand turns pointing down where it is, and pitches only on its way back along the layer.
    np.testing.assert_allclose(moves[0][1], [-0.1, -0.3, 0.95])
    np.testing.assert_allclose(moves[0][2][:, 2], [0.0, 0.0, -1.0], atol=1e-12)
    assert moves[1][2][:2, 2] @ layer.inward == pytest.approx(math.sin(PUSH_PITCH))
    push = moves[3]
    assert push[2][:2, 2] @ layer.inward == pytest.approx(math.sin(PUSH_PITCH))
    # The fingers' front passes the board's edge, taking the book's centre DEPTH_MARGIN past the
    # region's front face.
    assert layer.depth(push[1]) > layer.edge
    assert layer.depth(push[1]) + 0.011 + book.half_size[1] > layer.front + 0.02
    # Then the hand backs out from under the board.
    assert layer.depth(moves[-1][1]) <= layer.edge - HAND_FRONT - RETREAT + 1e-9


def test_pitched_hand_leans_its_fingertips_toward_the_back():
    rot = pitched_rotation(math.pi / 2, np.array([1.0, 0.0]), math.pi / 4)
    np.testing.assert_allclose(rot[:, 2], [math.sqrt(0.5), 0.0, -math.sqrt(0.5)], atol=1e-12)
    np.testing.assert_allclose(rot[:, 0], [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(rot.T @ rot, np.eye(3), atol=1e-12)
    assert np.linalg.det(rot) == pytest.approx(1.0)


def test_grasp_yaw_keeps_the_wrist_in_range_through_the_turn():
    from libero_ll.experts.skills import wrist_safe_yaw
    from libero_ll.experts.skills import hand_down_rotation

    now = hand_down_rotation(math.pi / 2)
    # A pan on the table, handle along +y, goes into a layer handle first toward -x: a quarter
    # turn. Closing at -pi would leave the wrist 2.3 rad round; closing at 0 brings it back.
    close = wrist_safe_yaw(-math.pi, math.pi / 2, now, math.pi / 4)
    assert math.isclose(math.cos(close), 1.0, abs_tol=1e-9)


def test_the_microwave_inside_is_a_layer_behind_a_door_with_a_set_back_roof_edge():
    shape = layer_shape(get_model("microwave"), "heating_region")
    assert shape is not None and shape.door
    assert shape.open_dir == (1.0, 0.0)
    # The top panel ends 2 cm behind the front of the control panel.
    assert shape.edge == pytest.approx(0.02)
    assert not layer_shape(get_model("wooden_two_layer_shelf"), "bottom_region").door


def test_push_in_behind_a_door_takes_the_whole_object_in_with_the_hand_pitched():
    from dataclasses import replace

    mug = get_model("white_yellow_mug")
    # The mug's centre 4 cm inside the region's front face: in far enough for a shelf, not behind a door.
    pos = np.array([0.055, -0.3, 0.865])
    shelf = _layer()
    assert push_in_waypoints(shelf, mug, pos, 0.0, np.array([-0.2, -0.3, 0.95]), 0.0) == []
    door = replace(shelf, roof=1.12, door=True, edge=0.02)
    way = push_in_waypoints(door, mug, pos, 0.0, np.array([-0.2, -0.3, 0.95]), 0.0)
    push = [w for w in way if w[0] == "move"][3]
    # The hand pushes pitched forward, the fingers taking the back end past the front face.
    assert push[2][:2, 2] @ door.inward == pytest.approx(math.sin(PUSH_PITCH))
    assert door.depth(push[1]) + 0.011 > door.front
    assert door.depth(push[1]) > door.edge - HAND_FRONT
    # Then it backs out from under the board, far enough to rise and turn in front of its edge.
    assert door.depth(way[-1][1]) <= door.edge - HAND_FRONT - RETREAT + 1e-9


def test_the_microwave_floor_runs_out_under_the_door_as_a_sill():
    """A thing set down in the doorway stands on the sill; the closed door clears the sill's top."""
    model = get_model("microwave")
    hx, _, hz = MICROWAVE_HALF
    door_plane = hx - 0.02
    floor = max(
        (g for g in model.geoms if g.type == "box" and g.collide and abs(g.pos[2] + hz - g.size[2]) < 1e-9),
        key=lambda g: g.pos[0] + g.size[0],
    )
    assert floor.pos[0] + floor.size[0] == pytest.approx(door_plane + MICROWAVE_SILL)
    assert floor.pos[2] + floor.size[2] == pytest.approx(-hz + MICROWAVE_FLOOR)
    door = model.part("door").geoms[0]
    assert door.pos[2] - door.size[2] > -hz + MICROWAVE_FLOOR
    # The heating region starts on the floor, and the inside is still a layer behind a door.
    region = next(r for r in model.regions if r.name == "heating_region")
    assert region.pos[2] - region.half_size[2] == pytest.approx(-hz + MICROWAVE_FLOOR)
    assert layer_shape(model, "heating_region").door


def test_under_a_roof_high_enough_for_the_whole_wrist_the_hand_takes_the_object_to_the_middle():
    """A layer whose board clears the wrist: the hand goes in under it, sets the object down in the
    middle of the region and backs out low along it (no rise under the board)."""
    from dataclasses import replace

    mug = get_model("white_yellow_mug")
    tall = replace(_layer(), roof=1.25)
    offset = np.array([-0.036, 0.0])  # the hand 3.6 cm behind the mug's centre
    hand = pitched_rotation(math.pi / 2, tall.inward, 0.0)
    way = insert_waypoints(tall, mug, offset, 0.0, hand, False, 0.0, 1.0, None)
    start, outside, inside, down, back = (w[1] for w in way if w[0] == "move")
    assert inside[2] + WRIST_TOP <= tall.roof
    assert tall.depth(down) + 0.036 == pytest.approx(tall.middle)  # the mug's centre
    assert tall.depth(inside) > tall.edge
    assert back[2] == pytest.approx(down[2] + 0.005) and tall.depth(back) < tall.depth(down)
    # Under the usual 17 cm board the same mug stays in front of the board's edge.
    low = [w[1] for w in insert_waypoints(_layer(), mug, offset, 0.0, hand, False, 0.0, 1.0, None) if w[0] == "move"]
    assert _layer().depth(low[2]) == pytest.approx(-HAND_FRONT)


def test_a_mug_held_by_its_rim_is_set_in_the_microwave_doorway_and_let_go_from_above():
    """The hand cannot reach under the microwave's top with a mug held upright: it sets the mug on the
    sill, and its fingers (one inside the mug) rise out of the mug before the hand backs away."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.experts.shelf import find_layer
    from libero_ll.tasks.registry import get_suite

    task = get_suite("libero_10").task("KITCHEN_SCENE6_put_the_yellow_and_white_mug_in_the_microwave_and_close_it")
    env = LiberoEnv(str(task.file), EnvConfig(render=False))
    try:
        env.reset(seed=0)
        layer = find_layer(env, "microwave_1_heating_region")
        mug = get_model("white_yellow_mug")
        # Rim grasp on the side facing out: the hand 3.6 cm behind the mug's centre.
        offset = -layer.inward * 0.036
        hand = pitched_rotation(math.atan2(layer.across[1], layer.across[0]), layer.inward, 0.0)
        way = insert_waypoints(layer, mug, offset, 0.0, hand, False, 0.0, 1.0, None)
        moves = [w[1] for w in way if w[0] == "move"]
        start, outside, inside, down, up, back = moves
        # Link 6 would meet the top's edge: the hand stays in front of it (nearer than HAND_FRONT,
        # where link 7 meets a lower board); the mug's centre lands over the sill, in front of the
        # door plane.
        assert layer.depth(inside) == pytest.approx(layer.edge - HAND_FRONT_LINK6)
        centre = layer.depth(inside) + 0.036
        assert layer.edge - MICROWAVE_SILL < centre < layer.edge
        assert down[2] == pytest.approx(layer.floor + mug.grasp.height + 0.012)
        assert np.allclose(up[:2], down[:2]) and up[2] > layer.floor + 2 * mug.half_size[2]
        assert back[2] == pytest.approx(up[2]) and layer.depth(back) < layer.depth(up)
    finally:
        env.close()
