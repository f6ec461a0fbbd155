"""Goal and init predicates as geometric tests on the simulator state (docs/assets.md).

`Geometry` indexes a compiled scene once (which geoms belong to which instance, where each region
is) so that every predicate is a few array operations per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from libero_ll.bddl.spec import And, Not, Or, Predicate
from libero_ll.envs import thresholds as th
from libero_ll.envs.placement import joint_target, owner_of
from libero_ll.errors import LiberoError


@dataclass
class BoxRegion:
    """A region as a box in the world: centre, rotation (3x3, columns are the box axes), half extents."""

    center: np.ndarray
    rot: np.ndarray
    half: np.ndarray
    owner: str


class Geometry:
    """Reads positions, contacts, joints and regions of a scene's instances from a MuJoCo model and data.

    Args:
        model, data: the raw ``mujoco.MjModel`` / ``mujoco.MjData`` of the scene.
        instances: instance name → category, for every instance of the task.
        instance_bodies: instance name → name of its root body in the model (all but the workspace).
        workspace: instance name of the table-like fixture, and the body that carries its surface.
        range_regions: full region name → (target instance, list of (x_min, y_min, x_max, y_max)) in
            the target's top-surface frame.
        table_top: world position of the workspace's top-surface centre.
        joints: (instance, part) → (qpos address, joint kind) of every moving part.
    """

    def __init__(self, model, data, instances, instance_bodies, workspace, range_regions, table_top, joints):
        import mujoco

        from libero_ll.assets.categories import get_model

        self.mj = mujoco
        self.model, self.data = model, data
        self.instances = instances
        self.workspace_name, workspace_body = workspace
        self.range_regions = range_regions
        self.table_top = np.asarray(table_top, dtype=float)
        self.joints = joints
        self.half_z = {n: get_model(c).half_size[2] for n, c in instances.items()}
        self.body_of: dict[str, int] = {}
        # geom id → index of the instance that owns it (-1: robot or arena)
        self.names = list(instance_bodies) + [self.workspace_name]
        owner = np.full(model.ngeom, -1, dtype=int)
        roots = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b): i for i, b in enumerate(instance_bodies.values())}
        for inst, b in instance_bodies.items():
            self.body_of[inst] = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b)
        ws_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, workspace_body)
        roots[ws_id] = len(self.names) - 1
        self.body_of[self.workspace_name] = ws_id
        for g in range(model.ngeom):
            b = model.geom_bodyid[g]
            while b not in roots and b != 0:
                b = model.body_parentid[b]
            owner[g] = roots.get(b, -1)
        self.geom_owner = owner
        self.index = {n: i for i, n in enumerate(self.names)}
        self.start_z: dict[str, float] = {}

    # ------------------------------------------------------------------ raw reads

    def pos(self, inst: str) -> np.ndarray:
        """World position of an instance's root body, metres."""
        return self.data.xpos[self.body_of[inst]].copy()

    def rot(self, inst: str) -> np.ndarray:
        return self.data.xmat[self.body_of[inst]].reshape(3, 3).copy()

    def record_start(self) -> None:
        """Remember every instance's height now, the reference for Up."""
        self.start_z = {n: float(self.pos(n)[2]) for n in self.body_of}

    def touching(self, a: str, b: str) -> bool:
        """Whether any geom of `a` is in contact with any geom of `b`."""
        ia, ib = self.index[a], self.index[b]
        d = self.data
        n = d.ncon
        if n == 0:
            return False
        con = d.contact[:n]
        o1, o2 = self.geom_owner[con.geom1], self.geom_owner[con.geom2]
        hit = ((o1 == ia) & (o2 == ib)) | ((o1 == ib) & (o2 == ia))
        return bool(np.any(hit & (con.dist < th.CONTACT_MARGIN)))

    def site_region(self, full_name: str) -> BoxRegion | None:
        sid = self.mj.mj_name2id(self.model, self.mj.mjtObj.mjOBJ_SITE, full_name)
        if sid < 0:
            return None
        split = owner_of(full_name, self.instances)
        owner = split[0] if split else None
        return BoxRegion(
            self.data.site_xpos[sid].copy(),
            self.data.site_xmat[sid].reshape(3, 3).copy(),
            self.model.site_size[sid].copy(),
            owner or "",
        )

    # ------------------------------------------------------------------ predicates

    def on(self, a: str, b: str) -> bool:
        """On(a, b): b an instance or a region (docs/assets.md)."""
        pa = self.pos(a)
        if b in self.body_of:
            pb = self.pos(b)
            return bool(
                pa[2] > pb[2] + th.ON_MIN_HEIGHT
                and float(np.hypot(*(pa[:2] - pb[:2]))) <= th.ON_XY_TOLERANCE
                and self.touching(a, b)
            )
        if b in self.range_regions:
            target, ranges = self.range_regions[b]
            origin, rot = self.surface_frame(target)
            local = rot.T @ (pa - origin)
            tol = th.ON_RANGE_TOLERANCE
            inside = any(
                x0 - tol <= local[0] <= x1 + tol and y0 - tol <= local[1] <= y1 + tol for x0, y0, x1, y1 in ranges
            )
            if self.is_fixture(a):
                # Fixtures are welded to the world and the simulator reports no contacts between two
                # welded things: a fixture rests on the surface when its bottom is at the surface.
                return bool(inside and abs(local[2] - self.half_z[a]) <= th.FIXTURE_ON_TOLERANCE)
            return bool(inside and 0.0 < local[2] <= th.ON_REGION_MAX_HEIGHT and self.touching(a, target))
        region = self.site_region(b)
        if region is None:
            raise LiberoError(f"On: unknown region {b!r}")
        local = region.rot.T @ (pa - region.center)
        return bool(
            np.all(np.abs(local[:2]) <= region.half[:2] + th.IN_TOLERANCE)
            and -region.half[2] <= local[2] <= region.half[2] + th.ON_REGION_MAX_HEIGHT
            and self.touching(a, region.owner)
        )

    def inside(self, a: str, r: str) -> bool:
        """In(a, r): a's centre inside r's box (with tolerances) and a touches r's owner."""
        region = self.site_region(r)
        if region is None:
            raise LiberoError(f"In: {r!r} is not a container region of this scene")
        local = region.rot.T @ (self.pos(a) - region.center)
        lo = -region.half - th.IN_TOLERANCE
        lo[2] -= th.IN_BOTTOM_TOLERANCE
        hi = region.half + th.IN_TOLERANCE
        return bool(np.all(local >= lo) and np.all(local <= hi)) and self.touching(a, region.owner)

    def surface_frame(self, inst: str) -> tuple[np.ndarray, np.ndarray]:
        """Origin (centre of the top surface) and rotation of the frame an instance's ranges are in."""
        if inst == self.workspace_name:
            return self.table_top, np.eye(3)
        rot = self.rot(inst)
        return self.pos(inst) + rot[:, 2] * self.half_z[inst], rot

    def is_fixture(self, inst: str) -> bool:
        """Whether an instance is welded to the world (a fixture or the workspace)."""
        return self.model.body_weldid[self.body_of[inst]] == 0

    def joint_value(self, inst: str, part: str) -> float:
        """The joint position of a moving part: metres pulled out, or radians turned."""
        adr, _ = self.joints[(inst, part)]
        return float(self.data.qpos[adr])

    def articulation(self, p: Predicate) -> bool:
        """Open / Close / TurnOn / TurnOff against the thresholds of the part's kind."""
        inst, part, kind = joint_target(p, self.instances)
        q = self.joint_value(inst, part)
        if p.name in ("open", "close"):
            if kind == "knob":
                raise LiberoError(f"{p.name}({p.args[0]}): a knob is turned on or off, not opened or closed")
            opened, closed = (th.DRAWER_OPEN, th.DRAWER_CLOSED) if kind == "drawer" else (th.DOOR_OPEN, th.DOOR_CLOSED)
            return bool(q >= opened if p.name == "open" else q <= closed)
        if kind != "knob":
            raise LiberoError(f"{p.name}({p.args[0]}): only a stove knob is turned on or off")
        return bool(q >= th.KNOB_ON if p.name == "turnon" else q <= th.KNOB_OFF)

    def up(self, a: str) -> bool:
        """Up(a): a is lifted more than UP_HEIGHT above where it started."""
        return float(self.pos(a)[2]) - self.start_z.get(a, float(self.pos(a)[2])) > th.UP_HEIGHT

    def holds(self, p: Predicate) -> bool:
        """Whether one atom holds now."""
        if p.name == "on":
            return self.on(*p.args)
        if p.name == "in":
            return self.inside(*p.args)
        if p.name == "up":
            return self.up(p.args[0])
        if p.name in ("open", "close", "turnon", "turnoff"):
            return self.articulation(p)
        raise LiberoError(f"unknown predicate {p.name}")

    def evaluate(self, f) -> bool:
        """Evaluate a goal formula (And / Or / Not / atom)."""
        if isinstance(f, Predicate):
            return self.holds(f)
        if isinstance(f, And):
            return all(self.evaluate(c) for c in f.children)
        if isinstance(f, Or):
            return any(self.evaluate(c) for c in f.children)
        if isinstance(f, Not):
            return not self.evaluate(f.child)
        raise TypeError(f"not a formula: {f!r}")
