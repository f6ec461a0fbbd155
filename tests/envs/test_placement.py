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
    text = text.replace("(-0.06 -0.225 -0.01 -0.175)", "(-0.2 -0.065 -0.15 -0.015)")
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
