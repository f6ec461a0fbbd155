"""Turn a category model into a robosuite MJCF object, and an arena description into a robosuite arena."""

from __future__ import annotations

import math

from libero_ll.assets.models import Arena, Model


def _yaw_quat(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def build_object(model: Model, instance: str):
    """A robosuite object for one instance of a category.

    Args:
        model: the category's description.
        instance: the instance name from the task file; it prefixes every MJCF name.

    Returns:
        A robosuite ``CompositeObject``: movable objects get a free joint, fixtures none. Each
        affordance region becomes a site named ``<instance>_<region>``.
    """
    from robosuite.models.objects import CompositeObject  # the simulator is imported only when building

    geoms = list(model.geoms)
    sites = [
        {
            "name": r.name,
            "pos": " ".join(f"{v:.5f}" for v in r.pos),
            "size": " ".join(f"{v:.5f}" for v in r.half_size),
            "type": "box",
            "rgba": "0 1 0 0",
            "group": "3",
        }
        for r in model.regions
    ]
    return CompositeObject(
        name=instance,
        total_size=list(model.half_size),
        geom_types=[g.type for g in geoms],
        geom_sizes=[list(g.size) for g in geoms],
        geom_locations=[list(g.pos) for g in geoms],
        geom_quats=[_yaw_quat(g.yaw) for g in geoms],
        geom_names=[f"g{i}" for i in range(len(geoms))],
        geom_rgbas=[list(g.rgba) for g in geoms],
        geom_frictions=[list(model.friction)] * len(geoms),
        density=model.density,
        solref=(0.01, 1.0),
        solimp=(0.95, 0.99, 0.001),
        locations_relative_to_center=True,
        joints="default" if model.kind == "object" else None,
        sites=sites,
        obj_types=["all" if g.collide else "visual" for g in geoms],
        # One geom serves both physics and drawing; duplicates only double the rendering work.
        duplicate_collision_geoms=False,
    )


def build_arena(arena: Arena):
    """A robosuite table arena for a scene family, its origin at the floor under the table centre."""
    from robosuite.models.arenas import TableArena

    table = TableArena(
        table_full_size=arena.table_full_size,
        table_friction=(1.0, 0.005, 0.0001),
        table_offset=(0.0, 0.0, arena.table_top_z),
    )
    table.set_origin([0, 0, 0])
    table.table_visual.set("rgba", " ".join(str(v) for v in arena.table_rgba))
    table.table_visual.attrib.pop("material", None)
    pos, target = arena.agentview
    cam = table.worldbody.find("./camera[@name='agentview']")
    cam.set("pos", " ".join(f"{v:.5f}" for v in pos))
    cam.set("quat", " ".join(f"{v:.6f}" for v in look_at_quat(pos, target)))
    return table


def look_at_quat(pos, target) -> list[float]:
    """Quaternion (w, x, y, z) of a MuJoCo camera at `pos` looking at `target` with the world's z up.

    A MuJoCo camera looks along its own -z axis with +y up in the picture.
    """
    import mujoco
    import numpy as np

    z = np.asarray(pos, float) - np.asarray(target, float)
    z /= np.linalg.norm(z)
    x = np.cross([0.0, 0.0, 1.0], z)
    x /= np.linalg.norm(x)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.stack([x, np.cross(z, x), z], axis=1).reshape(9))
    return quat.tolist()
