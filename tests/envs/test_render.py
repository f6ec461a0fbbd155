"""Leaving geoms outside a camera's view out of the drawing changes no pixel."""

from __future__ import annotations

import numpy as np

from libero_ll.envs.render import CameraRenderer

CAMERAS = ("agentview", "robot0_eye_in_hand")


def test_culled_images_are_the_same_pixel_for_pixel(soup_env):
    soup_env.reset(seed=3)
    full = CameraRenderer(soup_env.model, 64, cull=False)
    culled = CameraRenderer(soup_env.model, 64)
    groups = soup_env.model.geom_group.copy()
    rng = np.random.default_rng(0)
    left_out = {cam: 0 for cam in CAMERAS}
    try:
        previous = None
        for step in range(12):
            # Large random moves swing the wrist camera over the table, the robot and the room.
            soup_env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
            for cam in CAMERAS:
                a, b = full.render(soup_env.data, cam), culled.render(soup_env.data, cam)
                np.testing.assert_array_equal(a, b, err_msg=f"{cam} after step {step}")
                left_out[cam] += full._renderer.scene.ngeom - culled._renderer.scene.ngeom
            if previous is not None:
                assert (previous != a).any(), "the wrist image did not change while the arm moved"
            previous = a
    finally:
        full.close()
        culled.close()
    # The model's groups are put back after each picture, and geoms were left out of both views.
    np.testing.assert_array_equal(soup_env.model.geom_group, groups)
    assert left_out["robot0_eye_in_hand"] > 0 and left_out["agentview"] > 0, left_out


def test_no_culling_with_shadows_or_reflections(soup_env):
    for kwargs in ({"shadows": True}, {"reflections": True}):
        r = CameraRenderer(soup_env.model, 32, **kwargs)
        try:
            assert not r.cull
        finally:
            r.close()
