"""Placement from init regions: inside the ranges, yaw respected, and a clear error when it cannot fit."""

from __future__ import annotations

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
