"""Small boxes and cylinders drawn as meshes with fewer triangles than MuJoCo's own shapes.

MuJoCo draws every box with each face split into `numquads` x `numquads` quads (4 x 4, 192
triangles) and every cylinder with `numstacks` bands along its side and `numstacks / 2` rings on
each cap, so that the light, which fixed-function OpenGL computes at the vertices only, spreads
smoothly over a large face. A software renderer's cost is mostly the triangles it draws, and our
objects and fixtures are built from many small boxes and cylinders (a plate's rim is 24 boxes): on a
face of a few centimetres the light hardly changes, and the subdivision buys nothing.

So a renderer given the scene's XML draws each body's boxes and cylinders of one colour as one mesh,
made here, in which a face is split into quads no longer than `LIGHT_CELL` (and never more than
MuJoCo would): a 2 cm box has 12 triangles instead of 192, the large faces of the table's top and
the walls keep their 4 x 4 quads, and shapes for which nothing would change (every edge 20 cm or
longer) keep MuJoCo's own drawing. The vertices, their order and the
way each quad is cut into two triangles follow MuJoCo's shapes, so only the light inside the faces
that lost vertices changes, by a few of 255 levels (docs/speed.md).

The meshes live in a second copy of the model, compiled from the XML with the meshes added, from
which only the renderer's GL objects are made; the scene is still built from the simulated model,
so its physics, state and saved XML are untouched. What the meshes stand for is read when the
renderer is made; a geom whose colour or group changes later (a burner that glows) is drawn by
MuJoCo from then on.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

# Longest edge of a quad of a box face or of a cylinder's band or ring, metres.
LIGHT_CELL = 0.05

# Faces of MuJoCo's unit box as (normal axis, its sign, axis along a, axis along b, b runs backwards):
# each face's quads are (a0, b0), (a1, b0), (a1, b1), (a0, b1), counter-clockwise seen from outside.
_BOX_FACES = ((2, 1, 0, 1, False), (2, -1, 0, 1, True), (0, 1, 1, 2, False),
              (0, -1, 1, 2, True), (1, -1, 0, 2, False), (1, 1, 0, 2, True))


def _count(length: float, most: int) -> int:
    """Quads along an edge of `length` metres: as many as LIGHT_CELL needs, at least 1, at most `most`."""
    return int(min(most, max(1, math.ceil(length / LIGHT_CELL - 1e-9))))


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays made read-only (the shape functions' results are cached and shared)."""
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _quads(corners: np.ndarray) -> np.ndarray:
    """(n, 4, k) quad corners -> (2n, 3, k) triangles, each quad cut as OpenGL cuts GL_QUADS."""
    return corners[:, [[0, 1, 3], [1, 2, 3]]].reshape(-1, 3, corners.shape[-1])


@functools.lru_cache(maxsize=256)
def _box(half: tuple[float, float, float], numquads: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Triangles (n, 3, 3) and their vertex normals of a box with half-sizes `half`, or None when MuJoCo's
    own box would be drawn alike (no face loses a quad). Cached: objects repeat their parts."""
    half = np.array(half)
    counts = [_count(2 * h, numquads) for h in half]
    if min(counts) == numquads:
        return None
    verts, normals = [], []
    for axis, sign, a, b, backwards in _BOX_FACES:
        na, nb = counts[a], counts[b]
        ga, gb = np.linspace(-1, 1, na + 1), np.linspace(-1, 1, nb + 1)
        corners = []
        for i in range(na):
            for j in range(nb):
                b0, b1 = (gb[j + 1], gb[j]) if backwards else (gb[j], gb[j + 1])
                corners.append([(ga[i], b0), (ga[i + 1], b0), (ga[i + 1], b1), (ga[i], b1)])
        uv = np.array(corners)  # (quads, 4, 2)
        p = np.empty(uv.shape[:2] + (3,))
        p[..., axis], p[..., a], p[..., b] = sign, uv[..., 0], uv[..., 1]
        tris = _quads(p) * half
        n = np.zeros(3)
        n[axis] = sign
        verts.append(tris)
        normals.append(np.broadcast_to(n, tris.shape))
    return _frozen(np.concatenate(verts), np.concatenate(normals))


@functools.lru_cache(maxsize=256)
def _cylinder(radius: float, half_height: float, slices: int, stacks: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Triangles and vertex normals of a closed cylinder along z, or None when MuJoCo's would be drawn alike."""
    bands, rings = _count(2 * half_height, stacks), _count(radius, stacks // 2)
    if bands == stacks and rings == stacks // 2:
        return None
    az = 2 * np.pi * np.arange(slices + 1) / slices

    def circle(r: float, z: float) -> np.ndarray:
        """(slices + 1, 3): the points of a circle at each azimuth, the first again at the end."""
        return np.stack([np.cos(az) * r, np.sin(az) * r, np.full(slices + 1, z)], -1)

    def band(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """(slices, 4, 3): the quads between two circles, corners in MuJoCo's order."""
        return np.stack([lower[:-1], lower[1:], upper[1:], upper[:-1]], 1)

    verts, normals = [], []
    for sign in (-1, 1):  # the caps: a fan round the centre, then rings of quads outwards
        z = sign * half_height
        radii = np.arange(1, rings + 1) / rings * radius
        first = circle(radii[0], z)
        fan = np.stack([first[:-1], first[1:], np.broadcast_to([0.0, 0.0, z], (slices, 3))], 1)
        quads = [band(circle(radii[k + 1], z), circle(radii[k], z)) for k in range(rings - 1)]
        if sign < 0:  # seen from below: the same corners in the opposite order
            fan, quads = fan[:, ::-1], [q[:, ::-1] for q in quads]
        tris = np.concatenate([fan] + [_quads(q) for q in quads])
        verts.append(tris)
        normals.append(np.broadcast_to([0.0, 0.0, float(sign)], tris.shape))
    heights = np.linspace(-half_height, half_height, bands + 1)
    side = np.concatenate([band(circle(radius, heights[i]), circle(radius, heights[i + 1])) for i in range(bands)])
    verts.append(_quads(side))
    radial = band(circle(1.0, 0.0), circle(1.0, 0.0))
    normals.append(_quads(np.concatenate([radial] * bands)))
    return _frozen(np.concatenate(verts), np.concatenate(normals))


def _quat_to_mat(quat) -> np.ndarray:
    import mujoco

    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, dtype=float))
    return out.reshape(3, 3)


class Shapes:
    """The meshes that stand for a model's small boxes and cylinders, and the model to draw them from.

    Use `Shapes.build`; a renderer makes its GL objects from `context_model`, hides `members` from
    the scene MuJoCo builds and adds the meshes with `add_to`.
    """

    def __init__(self, context_model, bodies, members, owner, mesh_ids, mesh_pos, mesh_rot, first, rgba, groups,
                 static):
        import mujoco

        self.context_model = context_model
        self.bodies, self.members, self.owner = bodies, members, owner
        self._dataid = (2 * mesh_ids).tolist()  # MuJoCo keeps two GL lists per mesh: the mesh and its convex hull
        self._mesh_pos, self._mesh_rot = mesh_pos, mesh_rot
        self._first = [int(g) for g in first]
        static_bit, dynamic_bit = int(mujoco.mjtCatBit.mjCAT_STATIC), int(mujoco.mjtCatBit.mjCAT_DYNAMIC)
        self._category = [static_bit if fixed else dynamic_bit for fixed in static]
        self._rgba = rgba  # per mesh, float32
        self._member_rgba = rgba[owner].astype(np.float32)
        self._member_groups = groups
        self._all_rgba = self._all_groups = None  # every geom's, as last found unchanged (a quick first check)

    @classmethod
    def build(cls, model, xml: str, visible_groups, slices: int, stacks: int) -> Shapes | None:
        """The meshes for `model` (compiled from `xml`), or None when no geom needs one.

        Args:
            model: the simulated MjModel (its geoms as they are now: groups, colours).
            xml: the MJCF it was compiled from.
            visible_groups: per geom group, whether it is drawn.
            slices, stacks: the facets of round geoms the renderer draws (MuJoCo's numslices, numstacks).

        Returns None, with a warning saying why, when the XML does not compile to the same meshes as
        the model (the renderer then draws MuJoCo's shapes).
        """
        import mujoco

        box, cylinder = mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_CYLINDER
        numquads = int(model.vis.quality.numquads)
        shown = np.asarray(visible_groups, dtype=bool)
        parts: dict[tuple[int, bytes], list[tuple[int, np.ndarray, np.ndarray]]] = {}
        for g in range(model.ngeom):
            kind, size, rgba = model.geom_type[g], model.geom_size[g], model.geom_rgba[g]
            if kind not in (box, cylinder) or not shown[model.geom_group[g]] or model.geom_matid[g] != -1 \
                    or rgba[3] < 1 or (size[: 3 if kind == box else 2] <= 0).any():
                continue
            made = (_box(tuple(map(float, size)), numquads) if kind == box
                    else _cylinder(float(size[0]), float(size[1]), int(slices), int(stacks)))
            if made is None:
                continue
            rot = _quat_to_mat(model.geom_quat[g])
            verts, normals = made
            parts.setdefault((int(model.geom_bodyid[g]), rgba.tobytes()), []).append(
                (g, verts.reshape(-1, 3) @ rot.T + model.geom_pos[g], normals.reshape(-1, 3) @ rot.T))
        if not parts:
            return None
        try:
            spec = mujoco.MjSpec.from_string(xml)
            names = []
            for k, pieces in enumerate(parts.values()):
                verts = np.concatenate([p[1] for p in pieces])
                normals = np.concatenate([p[2] for p in pieces])
                mesh = spec.add_mesh()
                mesh.name = f"libero_ll_drawn_{k}"
                mesh.uservert = verts.ravel().tolist()
                mesh.usernormal = normals.ravel().tolist()
                corners = list(range(len(verts)))
                mesh.userface = corners
                mesh.userfacenormal = corners
                mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
                names.append(mesh.name)
            context = spec.compile()
        except Exception as e:  # noqa: BLE001 - MuJoCo raises ValueError or its own errors for a bad model
            warnings.warn(f"small boxes and cylinders are drawn as MuJoCo's shapes: the scene's XML did not compile "
                          f"with their meshes ({e})", RuntimeWarning, stacklevel=3)
            return None
        n = model.nmesh
        same = all(np.array_equal(getattr(context, f)[:n], getattr(model, f))
                   for f in ("mesh_vertadr", "mesh_vertnum", "mesh_faceadr", "mesh_normaladr", "mesh_texcoordadr"))
        same = same and context.ntex == model.ntex and context.nmat == model.nmat and context.nskin == model.nskin
        if not same:
            warnings.warn("small boxes and cylinders are drawn as MuJoCo's shapes: the scene's XML does not compile "
                          "to the model's meshes, textures and materials", RuntimeWarning, stacklevel=3)
            return None
        # The model's own meshes as they are now (a robot drawn simplified has fewer faces than its files).
        for field in ("mesh_vert", "mesh_normal", "mesh_texcoord", "mesh_face", "mesh_facenormal", "mesh_facetexcoord"):
            ours = getattr(model, field)
            getattr(context, field)[: len(ours)] = ours
        context.mesh_facenum[:n] = model.mesh_facenum
        ids = np.array([mujoco.mj_name2id(context, mujoco.mjtObj.mjOBJ_MESH, name) for name in names])
        keys = list(parts)
        bodies = np.array([b for b, _ in keys])
        member_lists = [[p[0] for p in pieces] for pieces in parts.values()]
        members = np.array([g for m in member_lists for g in m])
        owner = np.repeat(np.arange(len(keys)), [len(m) for m in member_lists])
        return cls(
            context,
            bodies=bodies,
            members=members,
            owner=owner,
            mesh_ids=ids,
            # MuJoCo moves a mesh's vertices into its own frame when it compiles it; this puts them back.
            mesh_pos=context.mesh_pos[ids].copy(),
            mesh_rot=np.stack([_quat_to_mat(q) for q in context.mesh_quat[ids]]),
            first=[m[0] for m in member_lists],
            rgba=np.stack([model.geom_rgba[m[0]] for m in member_lists]).astype(np.float32),
            groups=model.geom_group[members].copy(),
            static=[bool(model.body_weldid[b] == 0) for b in bodies],
        )

    def usable(self, model) -> np.ndarray:
        """Per mesh: whether its geoms still have the colour and group they had when it was made."""
        if self._all_rgba is not None and np.array_equal(model.geom_rgba, self._all_rgba) \
                and np.array_equal(model.geom_group, self._all_groups):
            return np.ones(len(self.bodies), dtype=bool)
        rgba, groups = model.geom_rgba[self.members], model.geom_group[self.members]
        if np.array_equal(rgba, self._member_rgba) and np.array_equal(groups, self._member_groups):
            self._all_rgba, self._all_groups = model.geom_rgba.copy(), model.geom_group.copy()
            return np.ones(len(self.bodies), dtype=bool)
        changed = (rgba != self._member_rgba).any(1) | (groups != self._member_groups)
        return np.bincount(self.owner[changed], minlength=len(self.bodies)) == 0

    def add_to(self, scene, data, meshes: np.ndarray, eye: np.ndarray | None = None) -> None:
        """Append the meshes whose indices are `meshes` to `scene`, posed as their bodies are in `data`.

        Given the `eye` the scene is seen from, nearer meshes come first: they are drawn first, and a
        software renderer then skips the pixels of farther ones that they hide.
        """
        import mujoco

        if len(meshes) == 0:
            return
        if scene.ngeom + len(meshes) > scene.maxgeom:
            raise RuntimeError(f"the scene holds at most {scene.maxgeom} geoms")
        xmat = np.asarray(data.xmat)[self.bodies[meshes]].reshape(-1, 3, 3)
        pos = np.asarray(data.xpos)[self.bodies[meshes]] + np.einsum("bij,bj->bi", xmat, self._mesh_pos[meshes])
        if eye is not None:
            order = np.argsort(((pos - eye) ** 2).sum(axis=1), kind="stable")
            meshes, xmat, pos = meshes[order], xmat[order], pos[order]
        mat = np.einsum("bij,bjk->bik", xmat, self._mesh_rot[meshes]).reshape(-1, 9)
        init, mesh_kind, unit, of_geom = mujoco.mjv_initGeom, mujoco.mjtGeom.mjGEOM_MESH, np.ones(3), mujoco.mjtObj.mjOBJ_GEOM
        geoms, start = scene.geoms, scene.ngeom
        for i, k in enumerate(meshes.tolist()):
            geom = geoms[start + i]
            init(geom, mesh_kind, unit, pos[i], mat[i], self._rgba[k])
            geom.dataid, geom.objtype, geom.objid, geom.category = self._dataid[k], of_geom, self._first[k], self._category[k]
        scene.ngeom = start + len(meshes)
