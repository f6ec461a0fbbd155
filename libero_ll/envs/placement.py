"""Sample where each object starts from a task's init predicates: regions with yaw ranges, stacking, containers.

Pure geometry on the category models; the environment writes the result into the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.assets.models import Arena
from libero_ll.bddl.spec import TaskSpec
from libero_ll.errors import LiberoError

MAX_TRIES = 500
# Objects are released this far above their resting height and settle during the reset's physics steps.
DROP_HEIGHT = 0.002
# Footprints may overlap by this fraction of the sum of their radii (bounding circles are generous).
OVERLAP_SLACK = 0.1


@dataclass
class Pose:
    """Where an instance starts: world position of its origin (metres) and yaw (radians)."""

    pos: np.ndarray
    yaw: float

    def quat_wxyz(self) -> np.ndarray:
        return np.array([math.cos(self.yaw / 2), 0.0, 0.0, math.sin(self.yaw / 2)])


def _rotate(xy, yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([c * xy[0] - s * xy[1], s * xy[0] + c * xy[1]])


def sample_placements(spec: TaskSpec, arena: Arena, rng: np.random.Generator) -> dict[str, Pose]:
    """Sample a start pose for every fixture and object placed by the task's init predicates.

    Args:
        spec: the task.
        arena: its scene family's arena (table size and height).
        rng: the random generator (seeded by the caller for reproducible starts).

    Returns:
        instance → Pose, for each instance that an init predicate places.

    Raises:
        LiberoError: an init predicate this library cannot realise, or a region in which no
        collision-free pose was found in MAX_TRIES tries (the message names the region).
    """
    table_top = np.array([0.0, 0.0, arena.table_top_z])
    poses: dict[str, Pose] = {}
    footprints: list[tuple[np.ndarray, float]] = []
    instances = spec.instances()
    pending = [p for p in spec.init if p.name in ("on", "in")]
    for p in spec.init:
        if p.name not in ("on", "in"):
            raise LiberoError(
                f"init predicate {p.name}({', '.join(p.args)}) needs an articulated fixture; "
                "this library has none yet"
            )

    def place(p) -> bool:
        a, where = p.args
        model = get_model(instances[a])
        if p.name == "on" and where in spec.regions and spec.regions[where].ranges:
            region = spec.regions[where]
            if instances.get(region.target) is None or get_model(instances[region.target]).kind != "workspace":
                raise LiberoError(f"region {where}: ranges relative to {region.target!r} are not supported yet")
            yaws = region.yaw_rotation or [(0.0, 0.0)]
            for _ in range(MAX_TRIES):
                x0, y0, x1, y1 = region.ranges[rng.integers(len(region.ranges))]
                lo, hi = yaws[rng.integers(len(yaws))]
                xy = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
                yaw = float(rng.uniform(lo, hi))
                r = model.horizontal_radius
                if all(np.linalg.norm(xy - c) >= (r + rc) * (1 - OVERLAP_SLACK) for c, rc in footprints):
                    footprints.append((xy, r))
                    pos = table_top + np.array([xy[0], xy[1], model.half_size[2] + DROP_HEIGHT])
                    poses[a] = Pose(pos, yaw)
                    return True
            raise LiberoError(
                f"could not place {a} in region {where} without touching another object "
                f"after {MAX_TRIES} tries; widen the region or move its neighbours"
            )
        if p.name == "on" and where in instances:
            if where not in poses:
                return False
            base = poses[where]
            below = get_model(instances[where])
            pos = base.pos + np.array([0.0, 0.0, below.half_size[2] + model.half_size[2] + DROP_HEIGHT])
            poses[a] = Pose(pos, base.yaw)
            return True
        # In(a, <container>_<region>) or On(a, <fixture>_<surface>): the region of a placed instance.
        owner = next((i for i in instances if where.startswith(i + "_")), None)
        if owner is None:
            raise LiberoError(f"init: cannot place {a}: {where!r} is neither a region nor an instance")
        if owner not in poses:
            return False
        omodel = get_model(instances[owner])
        try:
            region = omodel.region(where[len(owner) + 1 :])
        except KeyError:
            raise LiberoError(f"init: {instances[owner]} has no region {where[len(owner) + 1:]!r}") from None
        base = poses[owner]
        centre = base.pos + np.array([*_rotate(region.pos[:2], base.yaw), region.pos[2]])
        z = centre[2] - region.half_size[2] + model.half_size[2] + DROP_HEIGHT
        poses[a] = Pose(np.array([centre[0], centre[1], z]), base.yaw)
        return True

    # Stacks and containers need their support placed first; loop until nothing moves.
    while pending:
        progressed = [p for p in pending if place(p)]
        if not progressed:
            names = ", ".join(f"{p.name}({' '.join(p.args)})" for p in pending)
            raise LiberoError(f"init predicates form a cycle or lean on an unplaced instance: {names}")
        pending = [p for p in pending if p not in progressed]
    return poses
