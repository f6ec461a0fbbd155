"""Placement from init regions: inside the ranges, yaw respected, and a clear error when it cannot fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from libero_ll.assets.categories import ARENAS
from libero_ll.bddl.parser import parse_file
from libero_ll.envs.placement import sample_placements
from libero_ll.errors import LiberoError


def test_samples_inside_regions(bowl_task):
    spec = parse_file(str(bowl_task))
    arena = ARENAS.get(spec.problem_class)
    for seed in range(20):
        poses = sample_placements(spec, arena, np.random.default_rng(seed)).poses
        for p in spec.init:
            obj, region = p.args
            x0, y0, x1, y1 = spec.regions[region].ranges[0]
            x, y = poses[obj].pos[:2]
            assert x0 <= x <= x1 and y0 <= y <= y1
        cheese = spec.regions["main_table_cream_cheese_init_region"].yaw_rotation[0]
        assert cheese[0] <= poses["cream_cheese_1"].yaw <= cheese[1]


def test_crowded_region_error_names_region(tmp_path, bowl_task):
    text = bowl_task.read_text()
    # Put the plate's region exactly where the bowl's is: they cannot both fit.
    plate, bowl = "(-0.045 -0.21 -0.025 -0.19)", "(-0.185 -0.05 -0.165 -0.03)"
    assert plate in text and bowl in text
    text = text.replace(plate, bowl)
    bad = tmp_path / "crowded.bddl"
    bad.write_text(text)
    spec = parse_file(str(bad))
    with pytest.raises(LiberoError, match="main_table_plate_init_region"):
        sample_placements(spec, ARENAS.get(spec.problem_class), np.random.default_rng(0))


def test_an_object_in_a_drawer_starts_at_the_drawer_front():
    """Put in a drawer at the start, an object stands as far out as it fits, clear of the cabinet's top."""
    from libero_ll.assets.categories import get_model
    from libero_ll.envs.placement import DRAWER_WALL_GAP, region_in_model

    root = Path(__file__).resolve().parents[2] / "bddl_tasks" / "libero_spatial"
    name = "pick_up_the_black_bowl_in_the_top_drawer_of_the_wooden_cabinet_and_place_it_on_the_plate.bddl"
    spec = parse_file(str(root / name))
    layout = sample_placements(spec, ARENAS.get(spec.problem_class), np.random.default_rng(0))
    cabinet, bowl = layout.poses["wooden_cabinet_1"], layout.poses["akita_black_bowl_1"]
    model = get_model("wooden_cabinet")
    joints = {part: q for (inst, part), q in layout.joints.items() if inst == "wooden_cabinet_1"}
    centre, region = region_in_model(model, "top_region", joints)
    c, s = np.cos(cabinet.yaw), np.sin(cabinet.yaw)
    d = bowl.pos[:2] - cabinet.pos[:2]
    local_x = c * d[0] + s * d[1]  # along the drawer's slide axis (+x of the cabinet)
    half_bowl = get_model("akita_black_bowl").half_size[0]
    expected = centre[0] + region.half_size[0] - half_bowl - DRAWER_WALL_GAP
    assert local_x == pytest.approx(expected, abs=1e-6)
    assert local_x > centre[0]


# ---------------------------------------------------------------- regions too tight for our footprints


def _tight_spec(tmp_path, name):
    import libero_files

    path = tmp_path / f"{name}.bddl"
    path.write_text(libero_files.FILES[name])
    return parse_file(str(path))


@pytest.mark.parametrize("name", ["pick_up_the_black_bowl_next_to_the_plate", "put_the_left_bowl_on_the_plate",
                                  "put_the_white_bowl_on_the_stove"])
def test_tight_regions_fall_back_and_end_inside_their_regions_apart(tmp_path, name):
    """Too tight for our footprints: placed as LIBERO does, with a warning, then pushed apart within reach
    of their regions (the init check's tolerance), clear of each other's outlines."""
    from libero_ll.assets.categories import get_model
    from libero_ll.envs import thresholds as th
    from libero_ll.envs.placement import Outline, PlacementWarning, round_radius

    spec = _tight_spec(tmp_path, name)
    arena = ARENAS.get(spec.problem_class)
    instances = spec.instances()
    for seed in range(5):
        with pytest.warns(PlacementWarning, match="too tight for the footprint"):
            layout = sample_placements(spec, arena, np.random.default_rng(seed))
        outlines = []
        for p in spec.init:
            region = spec.regions.get(p.args[1])
            if region is None or not region.ranges:
                continue
            inst = p.args[0]
            x0, y0, x1, y1 = region.ranges[0]
            x, y = layout.poses[inst].pos[:2]
            tol = th.ON_RANGE_TOLERANCE
            assert x0 - tol < x < x1 + tol and y0 - tol < y < y1 + tol, (inst, x, y)
            model = get_model(instances[inst])
            outlines.append(Outline(inst, np.array([x, y]), model.half_size[:2], layout.poses[inst].yaw,
                                    round_radius(model)))
        for i, a in enumerate(outlines):
            for b in outlines[i + 1:]:
                assert a.contact(b)[0] <= 1e-6, (a.name, b.name)
        # The same seed gives the same start.
        with pytest.warns(PlacementWarning):
            again = sample_placements(spec, arena, np.random.default_rng(seed))
        assert all(np.array_equal(again.poses[k].pos, v.pos) for k, v in layout.poses.items())


def test_outline_overlap_depths_and_directions():
    from libero_ll.envs.placement import Outline

    disc = Outline("a", np.array([0.0, 0.0]), (0.05, 0.05), 0.0, 0.05)
    near = Outline("b", np.array([0.08, 0.0]), (0.05, 0.05), 0.0, 0.05)
    depth, n = disc.contact(near)
    assert depth == pytest.approx(0.02) and n == pytest.approx([1.0, 0.0])
    # A circle by the side of a turned box: the box's half width along the line between them counts.
    box = Outline("c", np.array([0.0, 0.1]), (0.1, 0.02), np.pi / 2, None)
    depth, n = box.contact(Outline("d", np.array([0.05, 0.1]), (0.04, 0.04), 0.0, 0.04))
    assert depth == pytest.approx(0.01) and n == pytest.approx([1.0, 0.0])
    # Two boxes: the shallower axis, pointing from the first to the second.
    depth, n = Outline("e", np.zeros(2), (0.1, 0.1), 0.0, None).contact(
        Outline("f", np.array([0.0, -0.15]), (0.1, 0.1), 0.0, None))
    assert depth == pytest.approx(0.05) and n == pytest.approx([0.0, -1.0])
    # Apart: a negative depth, the gap.
    assert disc.contact(Outline("g", np.array([0.3, 0.0]), (0.05, 0.05), 0.0, 0.05))[0] == pytest.approx(-0.2)


def test_round_models_are_circles_and_boxes_are_not():
    from libero_ll.assets.categories import get_model
    from libero_ll.envs.placement import round_radius

    assert round_radius(get_model("plate")) == pytest.approx(0.0978, abs=1e-3)
    assert round_radius(get_model("akita_black_bowl")) == pytest.approx(0.063, abs=1e-3)
    for category in ("cookies", "milk", "porcelain_mug", "wooden_cabinet"):
        assert round_radius(get_model(category)) is None


@pytest.mark.parametrize("target", ["plate_1", "wooden_cabinet_1"])
def test_a_region_with_ranges_on_an_object_or_fixture_places_things_on_it(tmp_path, target):
    # Ranges are in the target's own frame (bddl.md); the sampler kept the thing clear of the target's own
    # footprint, so nothing could ever be placed there ("plate_1 overlaps it by 14.7 cm").
    from libero_ll.assets.categories import get_model
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    example = Path(__file__).resolve().parents[2] / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"
    text = example.read_text()
    bowl = "(On akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)"
    assert bowl in text
    text = text.replace(
        "(plate_init_region ",
        f"(rest_region (:target {target}) (:ranges ((-0.02 -0.02 0.02 0.02))))\n    (plate_init_region ",
    ).replace(bowl, f"(On akita_black_bowl_1 {target}_rest_region)")
    path = tmp_path / "on_target.bddl"
    path.write_text(text)
    spec = parse_file(str(path))
    for seed in range(5):
        poses = sample_placements(spec, ARENAS.get(spec.problem_class), np.random.default_rng(seed)).poses
        base, bowl_pose = poses[target], poses["akita_black_bowl_1"]
        local = bowl_pose.pos[:2] - base.pos[:2]
        assert np.all(np.abs(local) <= 0.02 + 1e-9)  # within the ranges about the target's centre
        assert bowl_pose.pos[2] > base.pos[2] + get_model(spec.instances()[target]).half_size[2]  # above its top
    env = LiberoEnv(path, EnvConfig(render=False))
    try:
        env.reset(seed=0)
        assert all(holds for _, holds in env.predicate_values(spec.init))
    finally:
        env.close()
