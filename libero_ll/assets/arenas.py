"""Scene families (BDDL problem classes): the table or floor, where the robot stands, the look of the room.

Each family has one workspace instance that task files refer to (``main_table``, ``kitchen_table``,
...). Its category is registered as a model of kind "workspace": the geometry comes from the arena.
Table-top families have the robot at the table's near edge on its pedestal, its base 11 cm above
the table top; the floor family has it as high above the floor, so that the hand reaches the
floor as it reaches a table top.
"""

from __future__ import annotations

from libero_ll.assets.categories import ARENAS, register_category
from libero_ll.assets.models import Arena, Model

# The robot's base sits this far behind the table's near edge and this high above its top.
_BASE_BEHIND_EDGE = 0.16
_BASE_ABOVE_TOP = 0.112


def _table_family(problem_class, workspace, category, size, top_z, camera, **style) -> Arena:
    """A table-top scene family; the camera looks down over the table from its far side at the robot.

    Args:
        camera: (x, height above the table top) of the front camera.
    """
    base = (-size[0] / 2 - _BASE_BEHIND_EDGE, 0.0, top_z + _BASE_ABOVE_TOP)
    cam = (camera[0], 0.0, top_z + camera[1])
    target = (-0.12, 0.0, top_z)
    return Arena(
        problem_class=problem_class,
        workspace=workspace,
        workspace_category=category,
        table_full_size=size,
        table_top_z=top_z,
        robot_base=base,
        agentview=(cam, target),
        **style,
    )


_ARENAS = [
    _table_family(
        "LIBERO_Tabletop_Manipulation",
        "main_table",
        "table",
        (0.8, 1.2, 0.05),
        0.8,
        (0.3, 0.6),
        description="a plain grey table in a plain room",
    ),
    _table_family(
        "LIBERO_Kitchen_Tabletop_Manipulation",
        "kitchen_table",
        "kitchen_table",
        (1.0, 1.4, 0.05),
        0.8,
        (0.62, 0.85),
        table_rgba=(0.82, 0.7, 0.52, 1.0),
        leg_rgba=(0.45, 0.32, 0.2, 1.0),
        floor_rgba=(0.9, 0.9, 0.88, 1.0),
        floor_rgba2=(0.35, 0.4, 0.45, 1.0),
        wall_rgba=(0.93, 0.9, 0.78, 1.0),
        description="a light wooden kitchen table on a tiled floor",
    ),
    _table_family(
        "LIBERO_Living_Room_Tabletop_Manipulation",
        "living_room_table",
        "living_room_table",
        (0.9, 1.3, 0.04),
        0.6,
        (0.58, 0.8),
        table_rgba=(0.42, 0.28, 0.18, 1.0),
        leg_rgba=(0.3, 0.2, 0.12, 1.0),
        floor_rgba=(0.55, 0.42, 0.3, 1.0),
        floor_rgba2=(0.5, 0.38, 0.27, 1.0),
        wall_rgba=(0.78, 0.83, 0.8, 1.0),
        description="a low dark-wood living-room table on a wooden floor",
    ),
    _table_family(
        "LIBERO_Study_Tabletop_Manipulation",
        "study_table",
        "study_table",
        (0.9, 1.3, 0.05),
        0.78,
        (0.58, 0.8),
        table_rgba=(0.58, 0.45, 0.33, 1.0),
        leg_rgba=(0.2, 0.2, 0.22, 1.0),
        floor_rgba=(0.45, 0.47, 0.52, 1.0),
        floor_rgba2=(0.42, 0.44, 0.49, 1.0),
        wall_rgba=(0.88, 0.86, 0.8, 1.0),
        description="a study desk in a room with a grey carpet",
    ),
    Arena(
        problem_class="LIBERO_Floor_Manipulation",
        workspace="floor",
        workspace_category="floor",
        table_full_size=None,
        table_top_z=0.0,
        robot_base=(-0.6, 0.0, _BASE_ABOVE_TOP),
        agentview=((0.35, 0.0, 0.95), (-0.12, 0.0, 0.0)),
        floor_rgba=(0.7, 0.6, 0.45, 1.0),
        floor_rgba2=(0.66, 0.56, 0.42, 1.0),
        wall_rgba=(0.85, 0.85, 0.85, 1.0),
        description="a wooden floor; the robot stands on a low stand",
    ),
]

for _arena in _ARENAS:
    ARENAS.register(_arena.problem_class)(_arena)
    size = _arena.table_full_size or (2.0, 2.0, 0.0)
    register_category(
        Model(
            _arena.workspace_category,
            "workspace",
            (size[0] / 2, size[1] / 2, size[2] / 2),
            (),
            description=_arena.description,
        )
    )
