"""Turn a category model into a robosuite MJCF object, and an arena description into a robosuite arena."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from libero_ll.assets.models import Arena, Geom, Model, Part

# Contact softness of object geoms: stiff enough that a grasped can does not sink into the fingers.
OBJECT_SOLREF = "0.01 1"
OBJECT_SOLIMP = "0.95 0.99 0.001"
# robosuite compiles with inertiagrouprange 0..0: only group-0 geoms give a body its mass, so colliding
# geoms are in group 0 and decorations in group 1. The environment shows both (envs/env.py moves our
# group-0 geoms to group 2 when it styles rendering); group 3 holds invisible sites.
COLLIDING_GROUP = "0"
DECORATION_GROUP = "1"


def _fmt(values) -> str:
    return " ".join(f"{float(v):.6g}" for v in values)


def _geom_element(g: Geom, name: str, model: Model, density: float) -> ET.Element:
    attrib = {
        "name": name,
        "type": g.type,
        "size": _fmt(g.size),
        "pos": _fmt(g.pos),
        "quat": _fmt(g.quat()),
        "rgba": _fmt(g.rgba),
        "group": COLLIDING_GROUP if g.collide else DECORATION_GROUP,
    }
    if g.collide:
        # One geom serves both physics and drawing: separate visual copies would double the drawing work.
        attrib.update(
            density=f"{density:.6g}",
            friction=_fmt(model.friction),
            solref=OBJECT_SOLREF,
            solimp=OBJECT_SOLIMP,
        )
        if model.friction_priority:
            attrib["priority"] = str(model.friction_priority)
    else:
        attrib.update(contype="0", conaffinity="0", density="0")
    return ET.Element("geom", attrib)


def _site_element(name: str, pos, half_size) -> ET.Element:
    return ET.Element(
        "site", {"name": name, "type": "box", "pos": _fmt(pos), "size": _fmt(half_size), "rgba": "0 1 0 0", "group": "3"}
    )


def _density(model: Model) -> float:
    if model.mass is None:
        return model.density
    volume = sum(g.volume() for g in model.geoms if g.collide)
    volume += sum(g.volume() for p in model.parts for g in p.geoms if g.collide)
    return model.mass / max(volume, 1e-9)


def _part_body(part: Part, model: Model, density: float) -> ET.Element:
    body = ET.Element("body", {"name": part.name, "pos": _fmt(part.pos)})
    j = part.joint
    ET.SubElement(
        body,
        "joint",
        {
            "name": f"{part.name}_joint",
            "type": j.type,
            "axis": _fmt(j.axis),
            "pos": _fmt(j.pos),
            "range": _fmt(j.range),
            "limited": "true",
            "damping": f"{j.damping:.6g}",
            "frictionloss": f"{j.frictionloss:.6g}",
            "armature": "0.01",
        },
    )
    for i, g in enumerate(part.geoms):
        body.append(_geom_element(g, g.name or f"{part.name}_g{i}", model, density))
    for r in part.regions:
        body.append(_site_element(r.name, r.pos, r.half_size))
    if part.handle is not None:
        body.append(_site_element(f"{part.name}_handle", part.handle, (0.005, 0.005, 0.005)))
    return body


def build_object(model: Model, instance: str):
    """A robosuite object for one instance of a category.

    Args:
        model: the category's description.
        instance: the instance name from the task file; it prefixes every MJCF name.

    Returns:
        A robosuite ``MujocoGeneratedObject``. Movable objects get a free joint, fixtures none; each
        moving part is a child body with its joint. Each affordance region becomes a site named
        ``<instance>_<region>``; the root body is ``<instance>_root``; a part's body is
        ``<instance>_<part>`` and its joint ``<instance>_<part>_joint``.
    """
    from robosuite.models.objects.objects import MujocoGeneratedObject

    class ModelObject(MujocoGeneratedObject):
        def __init__(self):
            super().__init__(obj_type="all", duplicate_collision_geoms=False)
            self._name = instance
            self._obj = self._get_object_subtree()
            self._get_object_properties()

        def _get_object_subtree(self):
            density = _density(model)
            root = ET.Element("body", {"name": "root"})
            if model.kind == "object":
                ET.SubElement(root, "joint", {"name": "joint0", "type": "free", "damping": "0.0005"})
            for i, g in enumerate(model.geoms):
                root.append(_geom_element(g, g.name or f"g{i}", model, density))
            for r in model.regions:
                root.append(_site_element(r.name, r.pos, r.half_size))
            for part in model.parts:
                root.append(_part_body(part, model, density))
            return root

        @property
        def bottom_offset(self):
            import numpy as np

            return np.array([0.0, 0.0, -model.half_size[2]])

        @property
        def top_offset(self):
            import numpy as np

            return np.array([0.0, 0.0, model.half_size[2]])

        @property
        def horizontal_radius(self):
            return model.horizontal_radius

        def get_bounding_box_half_size(self):
            import numpy as np

            return np.array(model.half_size)

    return ModelObject()


def build_arena(arena: Arena):
    """A robosuite arena for a scene family: floor, walls and (unless it is the floor family) the table.

    The table body keeps robosuite's name ``table``; for the floor family the floor plane itself is
    moved into a body of that name, so that the working surface is always the body ``table``.
    """
    from robosuite.models.arenas import TableArena

    size = arena.table_full_size or (0.8, 0.8, 0.05)
    table = TableArena(
        table_full_size=size,
        table_friction=(1.0, 0.005, 0.0001),
        table_offset=(0.0, 0.0, arena.table_top_z if arena.table_full_size else 0.0),
        has_legs=arena.table_full_size is not None,
    )
    table.set_origin([0, 0, 0])
    _restyle(table, arena)
    body = table.worldbody.find("./body[@name='table']")
    if arena.table_full_size is None:
        for g in list(body.findall("geom")):
            body.remove(g)
        body.set("pos", "0 0 0")
        floor = table.floor
        table.worldbody.remove(floor)
        body.append(floor)
        site = body.find("./site[@name='table_top']")
        if site is not None:
            site.set("pos", "0 0 0")
    pos, target = arena.agentview
    cam = table.worldbody.find("./camera[@name='agentview']")
    cam.set("pos", _fmt(pos))
    cam.set("quat", _fmt(look_at_quat(pos, target)))
    return table


def _restyle(table, arena: Arena) -> None:
    """Our own colours for floor, walls and table instead of robosuite's image textures."""
    asset = table.asset
    for el in list(asset):
        if el.tag in ("texture", "material") and el.get("type") != "skybox":
            asset.remove(el)
    ET.SubElement(
        asset,
        "texture",
        {
            "name": "floor_tiles",
            "type": "2d",
            "builtin": "checker",
            "width": "256",
            "height": "256",
            "rgb1": _fmt(arena.floor_rgba[:3]),
            "rgb2": _fmt(arena.floor_rgba2[:3]),
        },
    )
    ET.SubElement(
        asset,
        "material",
        {"name": "floor_mat", "texture": "floor_tiles", "texrepeat": "8 8", "texuniform": "true", "reflectance": "0"},
    )
    for g in table.worldbody.iter("geom"):
        name = g.get("name", "")
        g.attrib.pop("material", None)
        if name == "floor":
            g.set("material", "floor_mat")
        elif name.startswith("wall"):
            g.set("rgba", _fmt(arena.wall_rgba))
        elif name == "table_visual":
            g.set("rgba", _fmt(arena.table_rgba))
        elif name.startswith("table_leg"):
            g.set("rgba", _fmt(arena.leg_rgba))


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


def yaw_quat(yaw: float) -> list[float]:
    """Quaternion (w, x, y, z) of a rotation by `yaw` radians about the world z axis."""
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
