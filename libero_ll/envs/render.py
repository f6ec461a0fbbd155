"""Offscreen camera rendering with one set of settings, shared by `LiberoEnv` and the speed benchmark."""

from __future__ import annotations

import os
import sys

import numpy as np

from libero_ll.errors import LiberoError

# Geom groups drawn: 1 holds robosuite's visual meshes, 2 our objects' geoms; 0 (collision) is hidden.
VISIBLE_GROUPS = (0, 1, 1, 0, 0, 0)
# A hidden group nothing else uses: geoms out of a camera's view are moved there while a scene is built.
OUT_OF_VIEW_GROUP = 5
# Another: planes (the floor) wait there while a scene is built, and are added after everything else.
LAST_GROUP = 4
# And one for the robot's visual meshes when its collision hulls are drawn instead.
HIDDEN_GROUP = 3


def prepare_offscreen(model, size: int) -> None:
    """Turn off multisampling and make the model's offscreen buffer at least size x size pixels.

    Both are part of the model (and of its saved XML), so the env sets them when it is built.
    """
    model.vis.quality.offsamples = 0
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, size)
    model.vis.global_.offheight = max(model.vis.global_.offheight, size)


# Facets of the spheres, cylinders, capsules and ellipsoids drawn for observations: slices around the axis,
# stacks along it (MuJoCo's defaults are 28 and 16). A software renderer's cost is mostly the triangles it
# draws: with 12 x 6 the two 64 px pictures of a quickstart scene took 7.1 ms instead of 12.2, while a
# silhouette moves by at most 3.4% of a round part's radius (half a pixel on a 30-pixel bowl) and 0.1 to
# 0.5% of the pixels change (docs/speed.md).
ROUND_SLICES, ROUND_STACKS = 12, 6


# Cell of the vertex grid that `simplify_meshes` merges the robot's detailed meshes on, metres: at 128 px
# the robot drawn from the simplified meshes differs from the detailed one in about 1.6% of the pixels.
SIMPLIFY_CELL = 0.008


def simplify_meshes(model, mesh_ids, cell: float = SIMPLIFY_CELL) -> None:
    """Draw meshes with fewer triangles: merge each mesh's vertices that share a cell of a `cell`-metre grid.

    Vertex clustering, in place in the compiled model: every vertex stands for the first vertex of
    its grid cell, triangles that collapse to a line or a point are dropped, and duplicates too. The
    kept triangles are written at the start of each mesh's faces and its face count is lowered, so
    only what is drawn changes (no vertex moves). Use it on meshes that do not collide (visual
    meshes), before a renderer is made for the model: a renderer uploads the meshes when it is made.
    """
    for k in sorted({int(i) for i in mesh_ids}):
        va, vn = model.mesh_vertadr[k], model.mesh_vertnum[k]
        fa, fn = model.mesh_faceadr[k], model.mesh_facenum[k]
        faces = model.mesh_face[fa:fa + fn].copy()
        normals = model.mesh_facenormal[fa:fa + fn].copy()
        texcoords = model.mesh_facetexcoord[fa:fa + fn].copy()
        cells = np.floor(model.mesh_vert[va:va + vn] / cell).astype(np.int64)
        _, first, inverse = np.unique(cells, axis=0, return_index=True, return_inverse=True)
        merged = first[inverse.ravel()][faces]
        keep = (merged[:, 0] != merged[:, 1]) & (merged[:, 1] != merged[:, 2]) & (merged[:, 0] != merged[:, 2])
        merged, normals, texcoords = merged[keep], normals[keep], texcoords[keep]
        _, unique = np.unique(np.sort(merged, axis=1), axis=0, return_index=True)
        unique.sort()
        merged, normals, texcoords = merged[unique], normals[unique], texcoords[unique]
        model.mesh_face[fa:fa + len(merged)] = merged
        model.mesh_facenormal[fa:fa + len(merged)] = normals
        model.mesh_facetexcoord[fa:fa + len(merged)] = texcoords
        model.mesh_facenum[k] = len(merged)


# Bodies of the robot, its gripper and its pedestal (robosuite's names) start with one of these.
ROBOT_PREFIXES = ("robot0_", "gripper0_", "fixed_mount0_")
# How the robot can be drawn: its detailed visual meshes, the same with about a fifth of their triangles
# (`simplify_meshes`), or its collision hulls.
ROBOT_MESHES = ("visual", "simplified", "collision")
# Colours of the robot's hulls when they are drawn: the arm, and the fingers.
HULL_RGBA = (0.82, 0.82, 0.84, 1.0)
FINGER_HULL_RGBA = (0.25, 0.25, 0.27, 1.0)


def draw_robot(model, bodies, robot_mesh: str) -> None:
    """Make a renderer draw the robot as `robot_mesh` says, in place in the compiled model.

    Its visual meshes are in geom group 1 and its collision hulls in group 0 (robosuite's layout);
    "collision" hides the meshes (HIDDEN_GROUP) and shows the hulls in group 1, grey with dark fingers (a scene
    built without them, `TaskScene(robot_visuals=False)`, has them as tiny spheres there already).
    Physics is untouched. Call it before a renderer is made for the model.

    Args:
        model: the MjModel.
        bodies: per model geom, the name of its body (ROBOT_PREFIXES tell the robot's geoms, and
            "finger" the fingers' hulls).
        robot_mesh: one of ROBOT_MESHES (checked by the caller).
    """
    import mujoco

    robot_geoms = [g for g, body in enumerate(bodies) if body.startswith(ROBOT_PREFIXES)]
    visual = [g for g in robot_geoms if model.geom_group[g] == 1 and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
    if robot_mesh == "collision":
        for g in visual:
            model.geom_group[g] = HIDDEN_GROUP
        for g in robot_geoms:
            if model.geom_group[g] == 0:
                model.geom_group[g] = 1
                model.geom_rgba[g] = FINGER_HULL_RGBA if "finger" in bodies[g] else HULL_RGBA
    elif robot_mesh == "simplified":
        simplify_meshes(model, model.geom_dataid[visual])


def _gl_flush() -> None:
    """Hand what the current GL context has drawn to the rasterizer without waiting for it.

    The GL library's own entry point, not PyOpenGL's checked wrapper: glFlush raises no error of its own,
    and the wrapper would raise whatever error an earlier call left in the context, as MuJoCo's calls,
    which never look, may (robosuite's renderer draws with whichever context is current, ours included,
    and leaves "invalid framebuffer operation" behind in it).
    """
    from OpenGL import platform

    platform.PLATFORM.GL.glFlush()


def _make_current(gl) -> None:
    """Make the GL context `gl` current. A Ctrl-C or SIGTERM that came while ctypes converted the call's
    arguments is raised as itself, not as the ArgumentError ctypes turns it into."""
    import ctypes

    from libero_ll.signals import unwrap_interrupt

    try:
        gl.make_current()
    except ctypes.ArgumentError as e:
        stop = unwrap_interrupt(e)
        if stop is None:
            raise
        raise stop from None


class RenderError(LiberoError):
    """The GL library could not make the offscreen buffer pictures of the asked size are drawn in."""


def _make_renderer(context, size: int):
    """A `mujoco.Renderer` of size x size pixels for `context`; RenderError when its buffer cannot be made.

    MuJoCo stops with "Offscreen framebuffer is not complete" when the GL library refuses a buffer that
    large (a software renderer takes at most 16384 pixels a side, and `render_many` puts pictures side by
    side). The half-made renderer is closed here: left to itself it would complain when collected.
    """
    import mujoco

    renderer = mujoco.Renderer.__new__(mujoco.Renderer)
    try:
        renderer.__init__(context, size, size)
    except BaseException as e:
        # Its __init__ stopped (refused, or cut by Ctrl-C or SIGTERM) before it set what close() reads; free the
        # GL context it did make, so that the half-made renderer does not fail again when collected.
        renderer.__dict__.setdefault("_gl_context", None)
        renderer.__dict__.setdefault("_mjr_context", None)
        renderer.close()
        if not isinstance(e, mujoco.FatalError):
            raise
        if "framebuffer" not in str(e).lower():
            raise RenderError(gl_start_error(str(e).strip())) from None
        width, height = context.vis.global_.offwidth, context.vis.global_.offheight
        raise RenderError(
            f"cannot draw {size}x{size} pixel pictures: the GL library refused the {width}x{height} "
            f"offscreen buffer they need ({str(e).strip()}); use a smaller image size"
        ) from None
    return renderer


def gl_start_error(why: str) -> str:
    """What to say when MuJoCo's GL context cannot start: which backend was used, and why it may have failed."""
    from libero_ll.envs import gl

    backend = "MuJoCo's default (glfw)" if gl.IMPORTED_BEFORE else gl.CHOSEN or os.environ.get("MUJOCO_GL") or "glfw"
    text = f"the OpenGL backend {backend} could not start ({why})"
    if gl.IMPORTED_BEFORE:
        return (text + ": mujoco (or robosuite) was imported before libero_ll could choose a headless backend; "
                "import libero_ll first, or set MUJOCO_GL=egl or MUJOCO_GL=osmesa before starting Python")
    if backend == "glfw":
        return text + ": glfw needs a display; without one set MUJOCO_GL=egl or MUJOCO_GL=osmesa (or leave it unset)"
    return text + f"; check that the {backend} libraries are installed (`make setup`)"


def _concave_drawn_hulls(model) -> list[int]:
    """Meshes that a drawn, colliding geom shows and that have more faces than their convex hull.

    MuJoCo collides with a mesh's convex hull but draws the mesh: robosuite's Panda has one such
    collision mesh (the shoulder, link 1: 12,516 faces against its hull's 3,172; every other link is its
    own hull of 200 to 300), which cost a quarter of an agentview picture whenever the hulls are drawn
    (robot_mesh="collision"), in view or not.
    """
    import mujoco

    shown = np.asarray(VISIBLE_GROUPS, dtype=bool)[model.geom_group]
    colliding = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    meshes = model.geom_dataid[shown & colliding & (model.geom_type == mujoco.mjtGeom.mjGEOM_MESH)]
    out = []
    for k in sorted({int(i) for i in meshes if i >= 0}):
        adr = model.mesh_graphadr[k]
        # mesh_graph starts with the hull's vertex and face counts (-1: no hull was made).
        if adr >= 0 and model.mesh_facenum[k] > model.mesh_graph[adr + 1]:
            out.append(k)
    return out


def _leave_out_undrawn(context, model) -> None:
    """Give the GL context made from `context` (the renderer's own copy of `model`, with the meshes `Shapes`
    added) nothing to upload for what the renderer never draws: meshes that no geom of `model` shows (with the
    robot's detailed meshes drawn, its hulls; a scene drawn from its hulls has not loaded the detailed meshes,
    353,635 of the quickstart scenes' 360,929 vertices, at all: `TaskScene(robot_visuals=False)`) and the skybox's
    texture (the renderer draws no skybox). Making the context took about half the time of the renderer's
    first picture; the pictures are the same pixel for pixel. Call it after `model`'s groups are final
    (`draw_robot`)."""
    import mujoco

    shown = np.asarray(VISIBLE_GROUPS, dtype=bool)[model.geom_group]
    used = np.zeros(context.nmesh, dtype=bool)
    used[model.geom_dataid[shown & (model.geom_type == mujoco.mjtGeom.mjGEOM_MESH)]] = True
    used[model.nmesh :] = True  # the meshes `Shapes` added come after the model's own
    context.mesh_facenum[~used] = 0
    context.mesh_graphadr[~used] = -1  # nor their convex hulls
    skybox = context.tex_type == mujoco.mjtTexture.mjTEXTURE_SKYBOX
    context.tex_width[skybox] = 1
    context.tex_height[skybox] = 1


class CameraRenderer:
    """Upright RGB images of a model's cameras, size x size pixels.

    No multisampling and no skybox; shadows and reflections only when asked for (both are slow in
    software rendering); round geoms with ROUND_SLICES x ROUND_STACKS facets unless `fine_round`. Call only
    after the GL backend is chosen (envs.gl.ensure_gl_backend).

    Without shadows and reflections, geoms wholly outside a camera's view are left out of what is
    drawn (each geom's bounding sphere against the view frustum), as are geoms under an opaque floor
    and sites with no opacity: the images are the same pixel for pixel, and a software renderer, whose
    cost is mostly the robot's detailed meshes, draws the wrist camera's view and the agentview in a
    little over half the time.

    Given the scene's XML, small boxes and cylinders are drawn with fewer triangles (`envs.shapes`):
    at most 0.5% of the pixels change by more than 4 of 255 levels, and with the robot's hulls our
    scenes draw in a tenth to a third less time. A colliding mesh shown with more faces than its
    convex hull (robosuite's collision mesh of the Panda's shoulder) is drawn with its vertices merged
    on a SIMPLIFY_CELL grid, in that copy only.

    What is drawn is ordered for a software renderer, which shades a pixel only when it is nearer than
    what is already there: the meshes nearest to the camera first and planes (the floor) last. The
    pictures are the same pixel for pixel.

    Args:
        model: the MjModel (its offscreen buffer is enlarged to `size` when smaller).
        size: image height and width, pixels.
        shadows, reflections: draw them.
        cull: leave out geoms outside the view (only without shadows and reflections, which can
            bring them into the picture).
        fine_round: draw round geoms with the model's own facets (for close-ups) instead of
            ROUND_SLICES x ROUND_STACKS.
        xml: the MJCF `model` was compiled from; without it every geom is drawn as MuJoCo's shape.
        columns: how many pictures `render_many` draws side by side before reading them back.
    """

    def __init__(self, model, size: int, shadows: bool = False, reflections: bool = False, cull: bool = True,
                 fine_round: bool = False, xml: str | None = None, columns: int = 2):
        import mujoco

        from libero_ll.envs.shapes import Shapes

        prepare_offscreen(model, size)
        self.model = model
        self.size = int(size)
        self._columns = max(1, int(columns))
        quality = model.vis.quality
        slices, stacks = (quality.numslices, quality.numstacks) if fine_round else (ROUND_SLICES, ROUND_STACKS)
        self._shapes = Shapes.build(model, xml, VISIBLE_GROUPS, slices, stacks) if xml is not None else None
        # GL objects (meshes, textures, the round shapes' facets) come from `context`; scenes are built from
        # `model`, so what the simulation changes in it (colours, groups) shows.
        context = self._shapes.context_model if self._shapes is not None else model
        if context is not model:
            prepare_offscreen(context, size)
            simplify_meshes(context, _concave_drawn_hulls(model))
            _leave_out_undrawn(context, model)
        # `render_many` draws pictures side by side in the offscreen buffer.
        context.vis.global_.offwidth = max(context.vis.global_.offwidth, self._columns * size)
        context_quality = context.vis.quality
        kept = context_quality.numslices, context_quality.numstacks, context_quality.shadowsize
        # The context makes the round geoms' meshes from these when it is created; the model (and its
        # saved XML) keeps its own.
        context_quality.numslices, context_quality.numstacks = slices, stacks
        if not shadows:
            # No shadow map: MuJoCo makes one of shadowsize x shadowsize (4096 by default) whether shadows are
            # drawn or not, about 64 MB of every environment's memory with a software renderer (a quarter of
            # it at the cpu preset's settings; docs/speed.md).
            context_quality.shadowsize = 0
        try:
            self._renderer = _make_renderer(context, size)
        finally:
            context_quality.numslices, context_quality.numstacks, context_quality.shadowsize = kept
        if self._shapes is not None:
            self._shapes.context_model = None  # its GL objects are made; the copy is not needed again
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = reflections
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        self.option = mujoco.MjvOption()
        self.option.geomgroup[:] = VISIBLE_GROUPS
        self.cull = bool(cull and not shadows and not reflections)
        self._cameras: dict = {}
        # Drawn last: a software renderer shades a pixel only when it is nearer than what is already drawn
        # there, and the floor lies behind nearly everything. Without reflections only (a reflecting
        # plane is drawn by MuJoCo in a pass of its own).
        self._visible = np.asarray(VISIBLE_GROUPS, dtype=bool)
        planes = np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)
        self._last = planes if not reflections else np.zeros(0, dtype=int)
        self._last_option = mujoco.MjvOption()
        for kind in ("geomgroup", "sitegroup", "jointgroup", "tendongroup", "actuatorgroup", "flexgroup",
                     "skingroup"):
            getattr(self._last_option, kind)[:] = 0
        self._last_option.geomgroup[LAST_GROUP] = 1
        self._perturb = mujoco.MjvPerturb()

    def render(self, data, camera) -> np.ndarray:
        """The image of the state in `data` seen from `camera` (a camera's name or number, or an MjvCamera).

        Returns:
            uint8 (size, size, 3), row 0 at the top.
        """
        self._build(data, camera)
        return self._renderer.render()

    def render_many(self, data, cameras) -> list[np.ndarray]:
        """Images of the state in `data` from several cameras, uint8 (size, size, 3) each, row 0 at the top.

        Up to `columns` pictures are drawn side by side into one buffer and read back together, and each
        is handed to the rasterizer as soon as it is drawn: a software renderer fills one picture's pixels
        on its threads while the next picture's scene is built and its triangles are set up (at 128 px
        two pictures took 4.2 instead of 5.4 ms, docs/speed.md). The first picture of each
        `columns` is the one `render` draws, pixel for pixel; the others lie further along the buffer,
        where the rasterizer's rounding can move a colour by one level at a few pixels.
        """
        import mujoco

        renderer, size = self._renderer, self.size
        context = renderer._mjr_context
        if context is None:
            raise RuntimeError("render_many cannot be called after close")
        images: list[np.ndarray] = []
        cameras = list(cameras)
        for start in range(0, len(cameras), self._columns):
            chunk = cameras[start : start + self._columns]
            _make_current(renderer._gl_context)
            for i, camera in enumerate(chunk):
                self._build(data, camera)
                mujoco.mjr_render(mujoco.MjrRect(i * size, 0, size, size), renderer.scene, context)
                if i < len(chunk) - 1:
                    _gl_flush()
            wide = np.empty((size, len(chunk) * size, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(wide, None, mujoco.MjrRect(0, 0, len(chunk) * size, size), context)
            images += [np.ascontiguousarray(wide[::-1, i * size : (i + 1) * size]) for i in range(len(chunk))]
        return images

    def _build(self, data, camera) -> None:
        """Build the renderer's scene of the state in `data` seen from `camera`."""
        import mujoco

        camera = self._camera(camera)
        shapes = self._shapes
        drawn = shapes.usable(self.model) if shapes is not None else None
        # Scene building skips hidden groups: geoms drawn as meshes, and geoms out of view, are moved into
        # one while the scene is built, then put back.
        groups = self.model.geom_group
        kept = groups.copy()
        sites = self.model.site_group
        kept_sites = sites.copy()
        scene = self._renderer.scene
        try:
            if self.cull:
                # Sites with no opacity (robosuite's markers) draw nothing but cost a transparent pass.
                sites[self.model.site_rgba[:, 3] <= 0] = OUT_OF_VIEW_GROUP
            if drawn is not None:
                groups[shapes.members[drawn[shapes.owner]]] = OUT_OF_VIEW_GROUP
            last = self._last[self._visible[groups[self._last]]]
            if len(last) and (groups == LAST_GROUP).any():
                last = last[:0]  # the model uses the group itself: planes are drawn where MuJoCo puts them
            groups[last] = LAST_GROUP
            self._update(data, camera)
            if self.cull:
                outside = self._outside_view(data, kept)
                if outside.any():
                    groups[outside] = OUT_OF_VIEW_GROUP
                    self._update(data, camera)
                    if drawn is not None:
                        # A mesh is drawn when any of its geoms is in view.
                        seen = np.bincount(shapes.owner[~outside[shapes.members]], minlength=len(drawn)) > 0
                        drawn &= seen
            if drawn is not None:
                shapes.add_to(scene, data, np.flatnonzero(drawn), eye=self._eye())
            if len(last):
                mujoco.mjv_addGeoms(self.model, data, self._last_option, self._perturb,
                                    mujoco.mjtCatBit.mjCAT_ALL, scene)
        finally:
            groups[:] = kept
            sites[:] = kept_sites

    def _eye(self) -> np.ndarray:
        """Where the scene just built is seen from (the mean of its two eye cameras)."""
        eyes = self._renderer.scene.camera
        return (np.asarray(eyes[0].pos, float) + np.asarray(eyes[1].pos, float)) / 2

    def _camera(self, camera):
        """An MjvCamera for a camera's name or number (made once) or an MjvCamera as it is."""
        import mujoco

        if isinstance(camera, mujoco.MjvCamera):
            return camera
        made = self._cameras.get(camera)
        if made is None:
            cam_id = camera if isinstance(camera, int) else \
                mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
            if not 0 <= cam_id < self.model.ncam:
                from libero_ll.errors import LiberoError

                names = [self.model.camera(i).name for i in range(self.model.ncam)]
                raise LiberoError(f"the scene has no camera {camera!r}; it has {', '.join(names)}")
            made = mujoco.MjvCamera()
            made.type = mujoco.mjtCamera.mjCAMERA_FIXED
            made.fixedcamid = cam_id
            self._cameras[camera] = made
        return made

    def _update(self, data, camera) -> None:
        import mujoco

        mujoco.mjv_updateScene(self.model, data, self.option, None, camera, mujoco.mjtCatBit.mjCAT_ALL,
                               self._renderer.scene)

    def _outside_view(self, data, groups: np.ndarray) -> np.ndarray:
        """Per model geom: whether its bounding sphere lies wholly outside the view or under the floor.

        The frustum is the one the scene was just built with: the mean of its two eye cameras (the
        renderer draws a mono image from their mean), the near-plane rectangle, its half-width from
        the square image when the scene leaves it to the viewport. `groups`: the geoms' groups as the
        model has them (while a scene is built, the floor waits in another).
        """
        eyes = self._renderer.scene.camera
        cam = eyes[0]
        if cam.orthographic:
            return np.zeros(self.model.ngeom, dtype=bool)
        pos = self._eye()
        f, u = np.asarray(cam.forward, float), np.asarray(cam.up, float)
        right = np.array([f[1] * u[2] - f[2] * u[1], f[2] * u[0] - f[0] * u[2], f[0] * u[1] - f[1] * u[0]])
        near, bottom, top = float(cam.frustum_near), float(cam.frustum_bottom), float(cam.frustum_top)
        half = float(cam.frustum_width) or 0.5 * (top - bottom)
        left_edge, right_edge = float(cam.frustum_center) - half, float(cam.frustum_center) + half
        # Inward normals of the planes a point must be in front of: the eye's own plane, and the four side
        # planes, each through the eye and an edge of the near-plane rectangle (normal a * side + b *
        # forward in the plane of that side's axis and the view direction).
        sides = np.array([[near, -left_edge], [-near, right_edge], [near, -bottom], [-near, top]])
        sides /= np.hypot(sides[:, :1], sides[:, 1:])
        normals = np.empty((5, 3))
        normals[0] = f
        normals[1:3] = sides[:2, :1] * right + sides[:2, 1:] * f
        normals[3:] = sides[2:, :1] * u + sides[2:, 1:] * f
        radius = self.model.geom_rbound
        out = ((np.asarray(data.geom_xpos) - pos) @ normals.T < -radius[:, None]).any(axis=1)
        out |= self._under_floor(data, pos, groups)
        # Planes and other unbounded geoms (bounding radius 0) are always drawn.
        return out & (radius > 0)

    def _under_floor(self, data, eye: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Per model geom: whether an opaque plane hides it from `eye`.

        That is when the plane is shown (by `groups`) and opaque, the eye is above it and the geom's
        bounding sphere wholly below it, both within its extent: every line of sight to the geom then
        crosses the plane. (robosuite parks its mocap targets, half-transparent, a metre under the floor.)
        """
        m = self.model
        hidden = np.zeros(m.ngeom, dtype=bool)
        xpos, xmat, radius = np.asarray(data.geom_xpos), np.asarray(data.geom_xmat), m.geom_rbound
        for p in self._last:
            mat = m.geom_matid[p]
            if not self._visible[groups[p]] or m.geom_rgba[p, 3] < 1 or (mat >= 0 and m.mat_rgba[mat, 3] < 1):
                continue
            rot = xmat[p].reshape(3, 3)
            half = m.geom_size[p, :2]  # 0: unbounded along that axis
            bounded = half > 0
            seen_from = (eye - xpos[p]) @ rot
            if seen_from[2] <= 0 or (bounded & (np.abs(seen_from[:2]) > half)).any():
                continue
            local = (xpos - xpos[p]) @ rot
            inside = (~bounded | (np.abs(local[:, :2]) + radius[:, None] <= half)).all(axis=1)
            hidden |= (local[:, 2] < -radius) & inside
        return hidden

    def close(self) -> None:
        """Free the renderer's GL objects and context, leaving every other renderer's intact.

        MuJoCo's `Renderer.close` destroys its GL context first and then deletes the rendering context's GL
        objects by number in whatever context is current: when that is another renderer's (the one that drew
        last), that renderer's textures and meshes with the same numbers go, and its pictures come out dark.
        So the objects are deleted here first, in this renderer's own context.
        """
        renderer = self._renderer
        gl, objects = getattr(renderer, "_gl_context", None), getattr(renderer, "_mjr_context", None)
        if gl is not None and objects is not None:
            _make_current(gl)
            objects.free()
            renderer._mjr_context = None
        renderer.close()

    def __del__(self) -> None:
        # An env dropped without `close` (its process goes on with others) frees its GL objects as `close` does;
        # not while the interpreter shuts down, when the GL display may already be gone and nothing draws again.
        if self.__dict__.get("_renderer") is not None and not sys.is_finalizing():
            self.close()
