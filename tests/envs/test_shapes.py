"""Small boxes and cylinders drawn as meshes with fewer triangles: right shapes, nearly the same pictures."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from libero_ll.envs.render import CameraRenderer
from libero_ll.envs.shapes import LIGHT_CELL, _box, _cylinder

CAMERAS = ("agentview", "robot0_eye_in_hand")


def _check_surface(tris, normals, inside, on_surface):
    """Every triangle is wound counter-clockwise seen from outside, and its corners lie on the surface."""
    face = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    assert (np.linalg.norm(face, axis=1) > 0).all(), "a triangle has no area"
    outward = (face * (tris.mean(axis=1) - inside)).sum(axis=1)
    assert (outward > 0).all(), f"{(outward <= 0).sum()} triangles face inwards"
    assert (np.einsum("tcd,td->tc", normals, face) > 0).all(), "a vertex normal points away from its face"
    assert on_surface(tris.reshape(-1, 3)).all(), "a corner lies off the surface"


def test_a_small_box_has_twelve_triangles_and_a_large_one_keeps_mujocos_drawing():
    half = np.array([0.01, 0.02, 0.005])
    tris, normals = _box(tuple(half), 4)
    assert tris.shape == (12, 3, 3)
    _check_surface(tris, normals, np.zeros(3), lambda p: np.isclose(np.abs(p) / half, 1).any(axis=1))
    assert np.allclose(tris.reshape(-1, 3).min(0), -half) and np.allclose(tris.reshape(-1, 3).max(0), half)
    # A box with one long edge: the faces along it are cut into quads no longer than the cell.
    half = np.array([1.25 * LIGHT_CELL, 0.01, 0.01])
    tris, normals = _box(tuple(half), 4)
    assert tris.shape == (2 * (2 + 4 * 3), 3, 3)  # the two ends 1 quad each, the four long faces 3 each
    _check_surface(tris, normals, np.zeros(3), lambda p: np.isclose(np.abs(p) / half, 1).any(axis=1))
    assert _box((0.5, 0.5, 0.5), 4) is None  # as MuJoCo draws it: nothing to gain
    with pytest.raises(ValueError):
        tris.reshape(-1)[0] = 1.0  # cached results are shared, so read-only


def test_a_small_cylinder_has_one_band_and_one_ring_per_cap():
    radius, half_height = 0.03, 0.01
    tris, normals = _cylinder(radius, half_height, 12, 6)
    assert tris.shape == (12 * 2 + 2 * 12, 3, 3)

    def on_surface(p):
        r = np.hypot(p[:, 0], p[:, 1])
        return (np.isclose(r, radius) & (np.abs(p[:, 2]) <= half_height + 1e-12)) | \
            (np.isclose(np.abs(p[:, 2]), half_height) & (r <= radius + 1e-12))

    _check_surface(tris, normals, np.zeros(3), on_surface)
    # MuJoCo's own at 12 slices and 6 stacks: 6 bands and 3 rings per cap.
    assert _cylinder(0.3, 0.3, 12, 6) is None
    tall, _ = _cylinder(radius, 0.12, 12, 6)  # 24 cm: 5 bands
    assert len(tall) == 12 * 2 * 5 + 2 * 12


@pytest.fixture()
def renderers(soup_env):
    made = {"mujoco": CameraRenderer(soup_env.model, 64),
            "meshes": CameraRenderer(soup_env.model, 64, xml=soup_env.model_xml()),
            "meshes, nothing culled": CameraRenderer(soup_env.model, 64, xml=soup_env.model_xml(), cull=False)}
    yield made
    for r in made.values():
        r.close()


def test_pictures_with_fewer_triangles_look_the_same(soup_env, renderers):
    model = soup_env.model
    before = model.geom_group.copy(), model.nmesh
    shapes = renderers["meshes"]._shapes
    assert shapes is not None and len(shapes.members) > 20  # the basket's and the table's legs at least
    soup_env.reset(seed=3)
    rng = np.random.default_rng(0)
    previous = None
    for step in range(8):
        soup_env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
        for cam in CAMERAS:
            ours = renderers["mujoco"].render(soup_env.data, cam).astype(int)
            meshes = renderers["meshes"].render(soup_env.data, cam)
            # Leaving out what is out of view still changes no pixel.
            everything = renderers["meshes, nothing culled"].render(soup_env.data, cam)
            np.testing.assert_array_equal(meshes, everything, err_msg=f"{cam} after step {step}")
            off = np.abs(ours - meshes).max(axis=-1)
            assert (off > 4).mean() < 0.01 and (off > 16).mean() < 0.002, (cam, step, (off > 4).mean())
        if previous is not None:
            assert (previous != meshes).any(), "the wrist image did not change while the arm moved"
        previous = meshes
    # The simulated model is as it was: the meshes live in the renderer's own copy.
    np.testing.assert_array_equal(model.geom_group, before[0])
    assert model.nmesh == before[1]


def test_a_geom_that_changes_colour_is_drawn_in_its_new_colour(soup_env, renderers):
    shapes = renderers["meshes"]._shapes
    model = soup_env.model
    soup_env.reset(seed=3)
    # One of the basket's walls, seen from the agentview camera.
    basket = [g for g in shapes.members if "basket" in (model.body(model.geom_bodyid[g]).name or "")]
    assert basket, "the basket is drawn as a mesh"
    wall = basket[0]
    kept = model.geom_rgba[wall].copy()
    plain = renderers["meshes"].render(soup_env.data, "agentview")
    try:
        model.geom_rgba[wall] = (1.0, 0.0, 0.0, 1.0)
        red = renderers["meshes"].render(soup_env.data, "agentview")
        expected = renderers["mujoco"].render(soup_env.data, "agentview")
    finally:
        model.geom_rgba[wall] = kept
    assert (np.abs(red.astype(int) - plain).max(-1) > 50).sum() > 5, "the wall's new colour did not show"
    assert (np.abs(red.astype(int) - expected).max(-1) > 16).mean() < 0.002
    np.testing.assert_array_equal(renderers["meshes"].render(soup_env.data, "agentview"), plain)


def test_an_xml_that_does_not_compile_leaves_mujocos_shapes(soup_env):
    soup_env.reset(seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bad_xml = "<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>"
        broken = CameraRenderer(soup_env.model, 32, xml=bad_xml)
    plain = CameraRenderer(soup_env.model, 32)
    try:
        assert broken._shapes is None
        assert any("did not compile" in str(w.message) for w in caught), [str(w.message) for w in caught]
        for cam in CAMERAS:
            np.testing.assert_array_equal(broken.render(soup_env.data, cam), plain.render(soup_env.data, cam))
    finally:
        broken.close()
        plain.close()


def test_a_renderer_made_after_another_env_was_built_draws_its_own_scene(soup_env):
    """MuJoCo writes out the XML of the model it loaded last; an env keeps its own from when it was built."""
    import mujoco

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/examples/floor_put_the_cream_cheese_in_the_basket.bddl"
    other = LiberoEnv(task, EnvConfig(image_size=32, robot_mesh="collision"))
    try:
        assert other.model_xml() != soup_env.model_xml()
        assert mujoco.MjModel.from_xml_string(soup_env.model_xml()).ngeom == soup_env.model.ngeom
        soup_env.reset(seed=3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            picture = soup_env.render("agentview", size=40)
        renderer = soup_env._renderers[40]
        assert renderer._shapes is not None
        plain = CameraRenderer(soup_env.model, 40)
        try:
            off = np.abs(plain.render(soup_env.data, "agentview").astype(int) - picture).max(-1)
        finally:
            plain.close()
        assert (off > 16).mean() < 0.002
    finally:
        other.close()
        renderer = soup_env._renderers.pop(40, None)
        if renderer is not None:
            renderer.close()


def test_an_unknown_camera_is_named_with_the_scenes_cameras(soup_env):
    from libero_ll.errors import LiberoError

    with pytest.raises(LiberoError, match="no camera 'no_such_camera'.*agentview"):
        soup_env.render("no_such_camera")
