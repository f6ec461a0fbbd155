"""Turning task files written for LIBERO's models (libero_ll/tasks/libero_files.py): the arithmetic of the turn,
and a region that cannot be turned for two fixtures at once."""

from __future__ import annotations

import math

import pytest

from libero_ll.bddl.spec import And, Predicate, Region, TaskSpec
from libero_ll.errors import LiberoError
from libero_ll.tasks.libero_files import LIBERO_SIZED, Resized, _turn, convert_spec


def _spec(fixtures: dict[str, str], regions: dict[str, list[str]], yaws: dict[str, list] | None = None) -> TaskSpec:
    """A kitchen with `fixtures` (instance -> category), each region of the table placing the instances listed."""
    yaws = yaws or {}
    spec = TaskSpec(
        problem_class="LIBERO_Kitchen_Tabletop_Manipulation",
        language="turn on the stove",
        regions={},
        fixtures={"kitchen_table": "kitchen_table", **fixtures},
        objects={"plate_1": "plate"},
        obj_of_interest=[],
        init=[],
        goal=And([Predicate("turnon", ("flat_stove_1",))]),
    )
    for i, (name, insts) in enumerate(regions.items()):
        region = Region(name, "kitchen_table", [(0.1 * i, 0.0, 0.1 * i + 0.02, 0.02)], yaws.get(name, []))
        spec.regions[region.full_name] = region
        spec.init += [Predicate("on", (inst, region.full_name)) for inst in insts]
    return spec


def test_a_turn_keeps_the_pairs_width_and_brings_its_middle_within_a_half_turn_of_zero():
    assert _turn((0.0, 0.0), -math.pi / 2) == (-math.pi / 2, -math.pi / 2)
    assert _turn((math.pi, math.pi), math.pi) == (0.0, 0.0)  # 2 pi is no turn at all
    assert _turn((math.pi, math.pi), -math.pi / 2) == (math.pi / 2, math.pi / 2)
    lo, hi = _turn((2.6, 2.7), math.pi)
    assert hi - lo == pytest.approx(0.1) and -math.pi < (lo + hi) / 2 <= math.pi
    assert (lo, hi) == pytest.approx((2.6 - math.pi, 2.7 - math.pi))


def test_each_fixtures_region_turns_by_its_model_and_back_and_objects_and_tables_stay():
    spec = _spec(
        {"white_cabinet_1": "white_cabinet", "flat_stove_1": "flat_stove", "desk_caddy_1": "desk_caddy"},
        {"cabinet_region": ["white_cabinet_1"], "stove_region": ["flat_stove_1"], "caddy_region": ["desk_caddy_1"],
         "plate_region": ["plate_1"]},
        {"caddy_region": [(math.pi, math.pi)], "plate_region": [(0.5, 0.5)]},
    )
    ours, turned, resized = convert_spec(spec)
    yaw = {k: r.yaw_rotation for k, r in ours.regions.items()}
    assert yaw["kitchen_table_cabinet_region"] == [(-math.pi / 2, -math.pi / 2)]
    assert yaw["kitchen_table_stove_region"] == [(math.pi / 2, math.pi / 2)]
    assert yaw["kitchen_table_caddy_region"] == [(0.0, 0.0)]
    assert yaw["kitchen_table_plate_region"] == [(0.5, 0.5)]  # an object's region is left as it is
    assert [(t.instance, round(t.by_degrees)) for t in turned] == [
        ("white_cabinet_1", -90), ("flat_stove_1", 90), ("desk_caddy_1", 180)]
    assert spec.regions["kitchen_table_cabinet_region"].yaw_rotation == []  # the input is not changed
    # The plate and the cabinet, drawn for LIBERO's smaller ones, get our models of their sizes.
    assert resized == [Resized("white_cabinet_1", "white_cabinet", "small_white_cabinet"),
                       Resized("plate_1", "plate", "small_plate")]
    assert ours.objects["plate_1"] == "small_plate" and ours.fixtures["white_cabinet_1"] == "small_white_cabinet"
    assert spec.objects["plate_1"] == "plate" and spec.fixtures["white_cabinet_1"] == "white_cabinet"
    back, _, resized = convert_spec(ours, to_libero=True)
    for key, region in spec.regions.items():
        assert (back.regions[key].yaw_rotation or [(0.0, 0.0)]) == (region.yaw_rotation or [(0.0, 0.0)])
    assert resized == [Resized("white_cabinet_1", "small_white_cabinet", "white_cabinet"),
                       Resized("plate_1", "small_plate", "plate")]
    assert back.objects == spec.objects and back.fixtures == spec.fixtures
    # Converted twice, a plate is resized once: a small plate is no category of LIBERO's.
    assert convert_spec(ours)[2] == []


def test_each_libero_sized_category_is_a_model_here_of_the_same_kind_and_smaller():
    from libero_ll.assets.categories import get_model

    def names(model):
        return {r.name for r in model.regions} | {r.name for p in model.parts for r in p.regions}

    for libero, ours in LIBERO_SIZED.items():
        big, small = get_model(libero), get_model(ours)
        assert small.kind == big.kind and getattr(small.grasp, "kind", None) == getattr(big.grasp, "kind", None)
        assert max(small.half_size[:2]) < max(big.half_size[:2])
        # A converted file names the same regions and moving parts.
        assert names(small) == names(big) and small.controls == big.controls
        assert small.libero_yaw == big.libero_yaw
    # LIBERO's plate, 13.6 cm across (its collision mesh at the scale its model gives); its bowls 10.7 cm; its
    # cabinets 19 x 24 x 22 cm, with drawers that slide out 16 cm; its microwave 22 x 34.5 x 18.7 cm, its door 26 cm
    # wide.
    assert 2 * get_model(LIBERO_SIZED["plate"]).half_size[0] == pytest.approx(0.136, abs=0.002)
    for bowl in ("akita_black_bowl", "white_bowl"):
        assert 2 * get_model(LIBERO_SIZED[bowl]).half_size[0] == pytest.approx(0.107, abs=0.002)
    for cabinet in ("wooden_cabinet", "white_cabinet"):
        model = get_model(LIBERO_SIZED[cabinet])
        assert [2 * h for h in model.half_size] == pytest.approx([0.19, 0.24, 0.222], abs=0.002)
        assert {p.joint.range for p in model.parts} == {(0.0, 0.16)}
        # Each drawer holds LIBERO's bowl (5.1 cm tall) under the board above it, with room to spare (LIBERO's: 5.8
        # cm), and the handles stand out of the front no further than LIBERO's (3.1 cm): a bowl put into the bottom
        # drawer comes down between its front wall and the middle drawer's handle.
        bowl_height = 2 * get_model(LIBERO_SIZED["akita_black_bowl"]).half_size[2]
        for part in model.parts:
            (region,) = part.regions
            floor = part.pos[2] + region.pos[2] - region.half_size[2]
            board = min(g.pos[2] - g.half_extent()[2] for g in model.geoms
                        if g.collide and g.pos[2] - g.half_extent()[2] >= floor)
            assert board - floor >= bowl_height + 0.003, part.name
            cx, _, hx, _ = model.standing_out(part.name)
            assert cx + hx - model.half_size[0] <= 0.033, part.name
    microwave = get_model(LIBERO_SIZED["microwave"])
    assert [2 * h for h in microwave.half_size] == pytest.approx([0.22, 0.345, 0.187], abs=0.002)
    door = microwave.part("door")
    assert max(g.size[1] for g in door.geoms if g.type == "box") * 2 == pytest.approx(0.26, abs=0.002)
    assert door.joint.range == get_model("microwave").part("door").joint.range


def test_one_region_placing_two_fixtures_that_turn_differently_is_named():
    spec = _spec({"white_cabinet_1": "white_cabinet", "flat_stove_1": "flat_stove"},
                 {"shared_region": ["white_cabinet_1", "flat_stove_1"]})
    with pytest.raises(LiberoError, match="region 'kitchen_table_shared_region' places flat_stove_1, "
                                          "white_cabinet_1, whose models need different turns"):
        convert_spec(spec)


def test_a_category_without_a_model_here_is_left_as_it_is_and_the_rest_turned():
    # Suites built on LIBERO add objects of their own (LIBERO-plus: a bag of yeast); `check` names them.
    spec = _spec({"white_cabinet_1": "white_cabinet", "short_fridge_1": "short_fridge"},
                 {"cabinet_region": ["white_cabinet_1"], "fridge_region": ["short_fridge_1"]})
    spec.objects["bag_of_yeast_1"] = "bag_of_yeast"
    ours, turned, _ = convert_spec(spec)
    assert [t.instance for t in turned] == ["white_cabinet_1"]
    assert ours.regions["kitchen_table_fridge_region"].yaw_rotation == []
