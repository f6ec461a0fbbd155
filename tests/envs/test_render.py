"""Leaving geoms outside a camera's view out of the drawing changes no pixel."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from libero_ll.envs.render import CameraRenderer

CAMERAS = ("agentview", "robot0_eye_in_hand")


def _same_pictures_while_moving(env, first, second, steps: int, seed: int, also=None) -> None:
    """Large random moves of the arm from env's reset(seed); after each, both renderers' pictures from every
    camera are the same pixel for pixel, and the wrist camera's picture has changed. `also(cam)` runs after
    each camera's pair."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    previous = None
    for step in range(steps):
        # Large random moves swing the wrist camera over the table, the robot and the room.
        env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
        for cam in CAMERAS:
            a = first.render(env.data, cam)
            np.testing.assert_array_equal(a, second.render(env.data, cam), err_msg=f"{cam} after step {step}")
            if also is not None:
                also(cam)
        if previous is not None:
            assert (previous != a).any(), "the wrist image did not change while the arm moved"
        previous = a


def test_culled_images_are_the_same_pixel_for_pixel(soup_env):
    full = CameraRenderer(soup_env.model, 64, cull=False)
    culled = CameraRenderer(soup_env.model, 64)
    groups = soup_env.model.geom_group.copy()
    left_out = {cam: 0 for cam in CAMERAS}

    def count(cam):
        left_out[cam] += full._renderer.scene.ngeom - culled._renderer.scene.ngeom

    try:
        _same_pictures_while_moving(soup_env, full, culled, steps=12, seed=3, also=count)
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


def test_without_shadows_the_gl_context_has_no_shadow_map_and_no_pixel_changes(soup_env):
    """MuJoCo's 4096 x 4096 shadow map (about 64 MB of a software renderer's memory) is made only for a renderer
    that draws shadows; the model keeps its own size, and the pictures are those of a renderer given the map
    whose shadows are turned off."""
    import mujoco

    quality = soup_env.model.vis.quality
    own = int(quality.shadowsize)
    assert own > 0
    lean = CameraRenderer(soup_env.model, 64)
    given = CameraRenderer(soup_env.model, 64, shadows=True)
    try:
        assert lean._renderer._mjr_context.shadowSize == 0 and given._renderer._mjr_context.shadowSize == own
        assert quality.shadowsize == own
        given._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        _same_pictures_while_moving(soup_env, lean, given, steps=6, seed=5)
    finally:
        lean.close()
        given.close()


def test_round_geoms_drawn_with_fewer_facets_change_few_pixels_and_not_the_model(soup_env):
    """Observations draw spheres and cylinders with ROUND_SLICES x ROUND_STACKS facets; the model keeps its own
    (MuJoCo's 28 x 16, which `fine_round` draws) and the pictures differ only along round outlines."""
    from libero_ll.envs.render import ROUND_SLICES, ROUND_STACKS

    quality = soup_env.model.vis.quality
    own = quality.numslices, quality.numstacks
    assert ROUND_SLICES < own[0] and ROUND_STACKS < own[1]
    soup_env.reset(seed=3)
    renderers = {fine: CameraRenderer(soup_env.model, 96, fine_round=fine) for fine in (False, True)}
    try:
        assert (quality.numslices, quality.numstacks) == own
        for step in range(3):
            soup_env.step(np.r_[0.5, 0.0, -0.5, 0.0, 0.0, 0.3, -1.0])
            for cam in CAMERAS:
                coarse, fine = (renderers[f].render(soup_env.data, cam).astype(int) for f in (False, True))
                changed = (np.abs(coarse - fine).max(axis=-1) > 10).mean()
                assert changed < 0.01, (cam, step, changed)
                if cam == "agentview":
                    # The soup can and the basket's round parts are in view: the facets did change.
                    assert (coarse != fine).any(), "the facets made no difference"
    finally:
        for r in renderers.values():
            r.close()


def test_simplified_robot_looks_like_the_detailed_one_with_fewer_triangles():
    import mujoco

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    mesh_type = mujoco.mjtGeom.mjGEOM_MESH
    rng = np.random.default_rng(1)
    actions = [np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])] for _ in range(8)]
    triangles, images = {}, {}
    for mesh in ("visual", "simplified"):
        env = LiberoEnv(task, EnvConfig(image_size=96, robot_mesh=mesh))
        try:
            m = env.model
            robot = {int(m.geom_dataid[g]) for g in range(m.ngeom) if m.geom_type[g] == mesh_type and m.geom_group[g] == 1}
            triangles[mesh] = int(sum(m.mesh_facenum[k] for k in robot))
            env.reset(seed=5)
            images[mesh] = [env.step(a)[0] for a in actions]
        finally:
            env.close()
    assert triangles["simplified"] < 0.3 * triangles["visual"], triangles
    for key in ("agentview_rgb", "eye_in_hand_rgb"):
        for step, (detailed, simplified) in enumerate(zip(images["visual"], images["simplified"])):
            diff = np.abs(detailed[key].astype(int) - simplified[key].astype(int))
            # The same picture up to the robot's finest detail.
            assert diff.mean() < 2.0 and (diff.max(axis=-1) > 40).mean() < 0.03, (key, step, diff.mean())
        frames = [obs[key] for obs in images["simplified"]]
        assert all((a != b).any() for a, b in zip(frames, frames[1:])), f"{key} did not change while the arm moved"


def test_unknown_robot_mesh_is_named():
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.errors import LiberoError

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    with pytest.raises(LiberoError, match="robot_mesh must be one of visual, simplified, collision, not 'hulls'"):
        LiberoEnv(task, EnvConfig(image_size=32, robot_mesh="hulls"))


def test_robot_drawn_from_its_hulls_moves_as_the_detailed_one():
    import mujoco

    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.render import FINGER_HULL_RGBA, HULL_RGBA, ROBOT_PREFIXES, VISIBLE_GROUPS

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    rng = np.random.default_rng(2)
    actions = [np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])] for _ in range(6)]
    states, images = {}, {}
    for mesh in ("visual", "collision"):
        env = LiberoEnv(task, EnvConfig(image_size=48, robot_mesh=mesh))
        try:
            m = env.model
            robot = [g for g in range(m.ngeom)
                     if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[g]) or "").startswith(ROBOT_PREFIXES)]
            drawn = [g for g in robot if VISIBLE_GROUPS[m.geom_group[g]]]
            meshes = [g for g in drawn if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and m.geom_contype[g] == 0
                      and m.geom_conaffinity[g] == 0]
            if mesh == "collision":
                # The hulls are drawn, in their colours, and none of the detailed meshes.
                hulls = [g for g in drawn if m.geom_contype[g] or m.geom_conaffinity[g]]
                assert hulls and not meshes
                colours = {tuple(np.round(m.geom_rgba[g].astype(float), 2)) for g in hulls}
                assert colours == {HULL_RGBA, FINGER_HULL_RGBA}, colours
            else:
                assert meshes
            env.reset(seed=4)
            images[mesh] = [env.step(a)[0]["eye_in_hand_rgb"] for a in actions]
            states[mesh] = env.get_state()
        finally:
            env.close()
    # Drawing is all that changes: the same actions give the same states.
    np.testing.assert_array_equal(states["visual"], states["collision"])
    assert any((a != b).any() for a, b in zip(images["visual"], images["collision"]))
    assert all((a != b).any() for a, b in zip(images["collision"], images["collision"][1:]))


def test_a_scene_drawn_from_its_hulls_loads_no_robot_visual_mesh_and_is_otherwise_the_same(monkeypatch):
    # The robot's detailed meshes took half an environment's memory where they were never drawn.
    from libero_ll.envs import scene
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    rng = np.random.default_rng(5)
    actions = [np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])] for _ in range(8)]
    runs = {}
    for loaded in (False, True):
        if loaded:
            monkeypatch.setattr(scene, "_drop_robot_visual_meshes", lambda root: None)
        env = LiberoEnv(task, EnvConfig(image_size=48, robot_mesh="collision"))
        try:
            vertices = env.model.nmeshvert
            env.reset(seed=6)
            steps = [env.step(a)[0] for a in actions]
            runs[loaded] = (vertices, [o["agentview_rgb"] for o in steps], [o["eye_in_hand_rgb"] for o in steps],
                            env.get_state())
        finally:
            env.close()
    without, loaded = runs[False], runs[True]
    assert without[0] * 10 < loaded[0], (without[0], loaded[0])  # the visual meshes' vertices are gone
    for k in (1, 2):
        np.testing.assert_array_equal(np.stack(without[k]), np.stack(loaded[k]))
        assert all((a != b).any() for a, b in zip(without[k][1:], without[k][2:]))  # the pictures change
    np.testing.assert_array_equal(without[3], loaded[3])


def test_closing_a_renderer_leaves_the_other_renderers_pictures_alone(soup_env):
    # MuJoCo's own close deletes its GL objects by number in whichever context is current; when another
    # renderer drew last, that one's textures and meshes went and its pictures came out dark.
    soup_env.reset(seed=3)
    first, second = CameraRenderer(soup_env.model, 48), CameraRenderer(soup_env.model, 48)
    try:
        first.render(soup_env.data, "agentview")
        before = second.render(soup_env.data, "agentview")  # the second renderer's context is current now
        first.close()
        np.testing.assert_array_equal(second.render(soup_env.data, "agentview"), before)
        # A renderer dropped without closing frees its objects the same way when it is collected.
        third = CameraRenderer(soup_env.model, 48)
        third.render(soup_env.data, "agentview")
        second.render(soup_env.data, "agentview")
        del third
        gc.collect()
        np.testing.assert_array_equal(second.render(soup_env.data, "agentview"), before)
        assert before.std() > 20, "not a picture of the scene"
        soup_env.step(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0]))
        assert (second.render(soup_env.data, "agentview") != before).any(), "the picture did not follow the arm"
    finally:
        second.close()
    # The env's own renderers draw as before too.
    obs = soup_env.reset(seed=3)
    assert obs["agentview_rgb"].std() > 20


def test_the_floor_drawn_last_and_near_meshes_first_change_no_pixel(soup_env):
    """The floor is added after everything else and the small shapes' meshes near to far, so that a software
    renderer skips hidden pixels; what is drawn stays the same, and a hidden plane stays hidden."""
    import mujoco

    model = soup_env.model
    floor = int(np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)[0])
    ordered = CameraRenderer(model, 64, xml=soup_env.model_xml())
    as_built = CameraRenderer(model, 64, xml=soup_env.model_xml())
    as_built._last = np.zeros(0, dtype=int)  # planes where MuJoCo puts them, meshes in their own order
    add_to = as_built._shapes.add_to
    as_built._shapes.add_to = lambda scene, data, meshes, eye=None: add_to(scene, data, meshes)
    soup_env.reset(seed=3)
    rng = np.random.default_rng(1)
    groups = model.geom_group.copy()
    try:
        for step in range(6):
            soup_env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
            for cam in CAMERAS:
                a = ordered.render(soup_env.data, cam)
                np.testing.assert_array_equal(a, as_built.render(soup_env.data, cam), err_msg=f"{cam} after {step}")
                scene = ordered._renderer.scene
                drawn = [(scene.geoms[i].objtype, scene.geoms[i].objid) for i in range(scene.ngeom)]
                assert drawn.count((int(mujoco.mjtObj.mjOBJ_GEOM), floor)) == 1, cam
                assert drawn[-1] == (int(mujoco.mjtObj.mjOBJ_GEOM), floor), cam
        # The meshes were drawn near to far, from the wrist camera too.
        eye = ordered._eye()
        centres = [np.asarray(scene.geoms[i].pos) for i in range(scene.ngeom)
                   if scene.geoms[i].type == mujoco.mjtGeom.mjGEOM_MESH and scene.geoms[i].dataid // 2 >= model.nmesh]
        far = [np.linalg.norm(c - eye) for c in centres]
        assert len(far) > 3 and far == sorted(far)
        np.testing.assert_array_equal(model.geom_group, groups)
        # A plane moved to a hidden group is not drawn.
        model.geom_group[floor] = 3
        hidden = ordered.render(soup_env.data, "agentview")
        scene = ordered._renderer.scene
        assert all(not (scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_GEOM and scene.geoms[i].objid == floor)
                   for i in range(scene.ngeom))
        np.testing.assert_array_equal(hidden, as_built.render(soup_env.data, "agentview"))
        # A model that puts geoms of its own in the group the planes wait in: those stay hidden, and the
        # floor is drawn where MuJoCo puts it.
        model.geom_group[floor] = groups[floor]
        table = [g for g in range(model.ngeom) if model.geom_group[g] == 1 and model.geom_rbound[g] > 0.3
                 and model.body_weldid[model.geom_bodyid[g]] == 0 and g != floor]
        assert table
        full = ordered.render(soup_env.data, "agentview")
        model.geom_group[table] = 4
        own = ordered.render(soup_env.data, "agentview")
        np.testing.assert_array_equal(own, as_built.render(soup_env.data, "agentview"))
        assert (own != full).any()
    finally:
        model.geom_group[:] = groups
        ordered.close()
        as_built.close()


@pytest.fixture(scope="module")
def detailed_soup_env():
    """The quickstart soup scene with the robot's detailed meshes drawn."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl",
                    EnvConfig(image_size=64, robot_mesh="visual"))
    yield env
    env.close()


def test_what_is_never_drawn_is_left_out_of_the_gl_context_and_no_pixel_changes(detailed_soup_env, monkeypatch):
    """The renderer's GL context gets no faces for meshes no shown geom uses (with the robot's detailed meshes
    drawn, its hulls) and a one-pixel skybox: the pictures are those of a context given everything."""
    import mujoco

    from libero_ll.envs import render

    soup_env = detailed_soup_env
    leave_out = render._leave_out_undrawn
    seen = {}

    def spy(context, model):
        seen["faces"] = int(context.mesh_facenum.sum())
        leave_out(context, model)
        seen["faces_kept"] = int(context.mesh_facenum.sum())
        seen["skybox"] = context.tex_width[context.tex_type == mujoco.mjtTexture.mjTEXTURE_SKYBOX].tolist()

    monkeypatch.setattr(render, "_leave_out_undrawn", spy)
    lean = CameraRenderer(soup_env.model, 64, xml=soup_env.model_xml())
    monkeypatch.setattr(render, "_leave_out_undrawn", lambda context, model: None)
    whole = CameraRenderer(soup_env.model, 64, xml=soup_env.model_xml())
    hulls = soup_env.model.geom_dataid[(soup_env.model.geom_group == 0) & (soup_env.model.geom_type == mujoco.mjtGeom.mjGEOM_MESH)]
    assert seen["faces"] - seen["faces_kept"] >= soup_env.model.mesh_facenum[np.unique(hulls)].sum() > 0
    assert seen["skybox"] == [1]
    soup_env.reset(seed=4)
    rng = np.random.default_rng(2)
    try:
        previous = None
        for step in range(8):
            soup_env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
            a = lean.render_many(soup_env.data, CAMERAS)
            for cam, x, y in zip(CAMERAS, a, whole.render_many(soup_env.data, CAMERAS)):
                np.testing.assert_array_equal(x, y, err_msg=f"{cam} after step {step}")
            if previous is not None:
                assert (previous != a[1]).any(), "the wrist image did not change while the arm moved"
            previous = a[1]
    finally:
        lean.close()
        whole.close()


def test_the_shoulders_collision_mesh_is_drawn_with_fewer_triangles_and_physics_keeps_it(soup_env):
    """robosuite's Panda collides with link 1's convex hull but would draw its 12,516-face collision mesh when
    the hulls are shown; the renderer's copy draws it clustered, the simulated model keeps every face."""
    import mujoco

    from libero_ll.envs.render import _concave_drawn_hulls

    model = soup_env.model
    link1 = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MESH, "robot0_link1")
    assert _concave_drawn_hulls(model) == [link1]
    faces = model.mesh_facenum.copy()
    r = CameraRenderer(model, 64, xml=soup_env.model_xml())
    plain = CameraRenderer(model, 64)  # without the scene's XML nothing is simplified
    try:
        np.testing.assert_array_equal(model.mesh_facenum, faces)
        # A camera looking at the shoulder: the clustered mesh looks like the full one.
        soup_env.reset(seed=3)
        cam = mujoco.MjvCamera()
        cam.lookat[:] = soup_env.data.xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "robot0_link1")]
        cam.distance, cam.azimuth, cam.elevation = 0.5, 150.0, -20.0
        a, b = r.render(soup_env.data, cam).astype(int), plain.render(soup_env.data, cam).astype(int)
        off = np.abs(a - b).max(axis=-1)
        shoulder = (np.abs(b - b[0, 0]).max(axis=-1) > 0).mean()
        assert shoulder > 0.1, "the shoulder is not in the picture"
        assert (off > 16).mean() < 0.03, (off > 16).mean()
    finally:
        r.close()
        plain.close()


def test_pictures_drawn_together_are_the_single_pictures(soup_env):
    """`render_many` draws the cameras side by side and reads them back once: the first picture is the one
    `render` draws, pixel for pixel; the others sit further along the buffer, where the rasterizer's
    rounding can move a colour by a level at a few pixels. An env's observation is made this way."""
    soup_env.reset(seed=3)
    r = CameraRenderer(soup_env.model, 64, xml=soup_env.model_xml(), columns=2)
    rng = np.random.default_rng(3)
    previous = None
    try:
        for step in range(6):
            soup_env.step(np.r_[rng.uniform(-1, 1, 6), rng.choice([-1.0, 1.0])])
            # Three cameras with two columns: two pictures drawn together, then one alone.
            cams = (*CAMERAS, CAMERAS[0])
            many = r.render_many(soup_env.data, cams)
            single = [r.render(soup_env.data, cam) for cam in cams]
            assert [m.shape for m in many] == [(64, 64, 3)] * 3 and all(m.flags.c_contiguous for m in many)
            np.testing.assert_array_equal(many[0], single[0])
            np.testing.assert_array_equal(many[2], single[2])
            off = np.abs(many[1].astype(int) - single[1].astype(int)).max(axis=-1)
            assert off.max() <= 2 and (off > 0).mean() < 0.002, (step, off.max(), (off > 0).mean())
            assert many[1].std() > 20 and (many[0] != many[1]).any()
            if previous is not None:
                assert (previous != many[1]).any(), "the wrist picture did not change while the arm moved"
            previous = many[1]
        obs = soup_env.observe()
        drawn = soup_env._renderer().render_many(soup_env.data, list(soup_env.config.cameras.values()))
        for key, picture in zip(soup_env.config.cameras, drawn):
            np.testing.assert_array_equal(obs[key], picture, err_msg=key)
    finally:
        r.close()
    with pytest.raises(RuntimeError, match="after close"):
        r.render_many(soup_env.data, CAMERAS)


def test_an_error_left_in_the_gl_context_by_other_code_does_not_stop_the_pictures(soup_env):
    """Other code may leave a GL error behind in our context (robosuite's renderer draws with whichever
    context is current; MuJoCo never reads the error flag). Drawing two pictures together goes on, and
    they are the pictures drawn with no error pending."""
    from OpenGL import GL, platform

    soup_env.reset(seed=1)
    cams = list(soup_env.config.cameras.values())
    renderer = soup_env._renderer()
    clean = renderer.render_many(soup_env.data, cams)
    renderer._renderer._gl_context.make_current()
    platform.PLATFORM.GL.glEnable(0)  # an invalid enum: sets GL_INVALID_ENUM, unchecked
    after = renderer.render_many(soup_env.data, cams)
    for a, b in zip(clean, after):
        np.testing.assert_array_equal(a, b)
    renderer._renderer._gl_context.make_current()
    GL.glGetError()  # clear the flag for the tests after this one


def test_what_cannot_be_seen_is_left_out_under_the_floor_and_invisible_sites(soup_env):
    """robosuite parks its mocap targets a metre under the floor and keeps its markers as sites with no
    opacity: none of them is drawn (test_culled_images_are_the_same_pixel_for_pixel checks that the pictures
    stay the same); a site given an opaque colour is drawn, and the model's groups are left as they were."""
    import mujoco

    model = soup_env.model
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or "" for g in range(model.ngeom)]
    targets = {g for g in range(model.ngeom) if "eef_target" in names[g]}
    assert len(targets) == 4 and all(soup_env.data.geom_xpos[g][2] < -0.5 for g in targets)
    r = CameraRenderer(model, 48, xml=soup_env.model_xml())
    soup_env.reset(seed=3)
    sites, rgba = model.site_group.copy(), model.site_rgba.copy()
    marker = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "gripper0_right_grip_site")
    assert model.site_rgba[marker, 3] <= 0
    try:
        for cam in CAMERAS:
            r.render(soup_env.data, cam)
            scene = r._renderer.scene
            drawn = [scene.geoms[i] for i in range(scene.ngeom)]
            geoms = {g.objid for g in drawn if g.objtype == mujoco.mjtObj.mjOBJ_GEOM}
            assert not geoms & targets, cam
            assert not [g for g in drawn if g.objtype == mujoco.mjtObj.mjOBJ_SITE], cam
            assert r._under_floor(soup_env.data, r._eye(), model.geom_group).sum() == len(targets), cam
        np.testing.assert_array_equal(model.site_group, sites)
        model.site_rgba[marker] = (1.0, 0.0, 0.0, 1.0)
        r.render(soup_env.data, "robot0_eye_in_hand")
        scene = r._renderer.scene
        assert [scene.geoms[i].objid for i in range(scene.ngeom)
                if scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_SITE] == [marker]
    finally:
        model.site_rgba[:] = rgba
        r.close()


def test_a_buffer_the_gl_library_refuses_is_a_clear_error_and_leaves_nothing_behind(monkeypatch):
    # Before: `mujoco.FatalError: Offscreen framebuffer is not complete` (a traceback from `render --size 20000`
    # or `collect --image-size 20000`), then an AttributeError from the half-made mujoco.Renderer's __del__.
    import mujoco

    from libero_ll.envs.render import RenderError
    from libero_ll.errors import LiberoError

    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 0.1"/></worldbody></mujoco>')
    model.vis.global_.offwidth = 100_000  # wider than any GL library makes a buffer; cheap to ask for
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    with pytest.raises(RenderError) as e:
        CameraRenderer(model, 8)
    gc.collect()
    assert isinstance(e.value, LiberoError)  # the CLI prints it as `error: ...`
    assert str(e.value).startswith("cannot draw 8x8 pixel pictures: the GL library refused the 100000x")
    assert "use a smaller image size" in str(e.value)
    assert unraisable == []


def test_a_renderer_cut_by_ctrl_c_while_made_is_freed_and_the_interrupt_goes_on(monkeypatch):
    # A Ctrl-C or SIGTERM that came while mujoco.Renderer's __init__ ran (a run stopped as a stage began) left a
    # half-made renderer whose __del__ failed with "'Renderer' object has no attribute '_mjr_context'".
    import mujoco

    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 0.1"/></worldbody></mujoco>')
    real_init = mujoco.Renderer.__init__

    def init_then_ctrl_c(self, *args, **kwargs):
        self._gl_context = None  # as far as __init__ got: nothing else set
        raise KeyboardInterrupt

    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    monkeypatch.setattr(mujoco.Renderer, "__init__", init_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        CameraRenderer(model, 8)
    gc.collect()
    assert unraisable == []
    monkeypatch.setattr(mujoco.Renderer, "__init__", real_init)
