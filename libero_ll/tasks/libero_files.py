"""Task files written for LIBERO's own models, turned to stand the same way with ours, and back.

A task file turns each fixture by the yaw of the region it is placed in, and a yaw means something only
in the frame of the model it turns. LIBERO's cabinets, microwave, two-layer shelf and wine rack face the
-y side of their frames, its stove has its knob at the -x end and its desk caddy its front compartment
at -x; ours all face +x (`libero_ll/assets/fixtures.py`). Loaded as it is, a file written by LIBERO's
generator therefore turns our white cabinet's drawers, our microwave's door and our stove's knob away
from the robot (validation warns), and our shelf, long where LIBERO's is deep, into the frying pan
beside it.

Converting adds each fixture model's `libero_yaw` to the yaws of the region it is placed in (LIBERO's
default yaw, 0, where the region gives none); the other way subtracts it. It also gives an object or fixture of
a category whose model here is much larger than LIBERO's the model of LIBERO's size (`LIBERO_SIZED`: a plate
becomes a `small_plate`, 13.6 cm across like LIBERO's, where ours is 20; a bowl a small bowl, 10.7 cm; a cabinet
a small cabinet, 22 cm tall, where ours is 38; a microwave a small microwave, 19 cm tall, where ours is 34), since
LIBERO's layouts are drawn for its sizes (a bowl between the plate and a ramekin, a drawer that opens over the table
beside a bowl, a microwave's door that swings open beside a mug); the other way gives it back its LIBERO category.
Nothing else changes: regions, instance names, init and goal are written as they were. Movable objects are not
turned: LIBERO places them at its own models' rotations whatever the region says, and ours are placed at the yaws
the file gives.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from libero_ll.bddl.spec import TaskSpec
from libero_ll.errors import LiberoError


# LIBERO's category -> ours at LIBERO's size, for the categories whose model here is much larger than LIBERO's.
LIBERO_SIZED = {
    "plate": "small_plate",
    "akita_black_bowl": "small_akita_black_bowl",
    "white_bowl": "small_white_bowl",
    "wooden_cabinet": "small_wooden_cabinet",
    "white_cabinet": "small_white_cabinet",
    "microwave": "small_microwave",
}


@dataclass(frozen=True)
class Resized:
    """An instance a conversion gave another category's model: `before` and `after` are the categories."""

    instance: str
    before: str
    after: str


@dataclass(frozen=True)
class Turned:
    """A fixture whose region's yaws a conversion turned.

    Args:
        instance: the fixture's instance name.
        category: its category.
        region: the full name of the region it is placed in.
        before: the region's (yaw_min, yaw_max) pairs before, radians ([(0.0, 0.0)] where it gave none).
        after: the pairs written.
    """

    instance: str
    category: str
    region: str
    before: tuple[tuple[float, float], ...]
    after: tuple[tuple[float, float], ...]

    @property
    def by_degrees(self) -> float:
        """How far it was turned, degrees in (-180, 180]."""
        d = math.degrees(self.after[0][0] - self.before[0][0])
        return d - 360.0 * math.ceil((d - 180.0) / 360.0)


def _turn(pair: tuple[float, float], by: float) -> tuple[float, float]:
    """A (yaw_min, yaw_max) pair turned by `by` radians, brought by whole turns to a middle within (-pi, pi]."""
    lo, hi = float(pair[0]) + by, float(pair[1]) + by
    turns = math.ceil(((lo + hi) / 2 - math.pi) / (2 * math.pi))
    return (lo - turns * 2 * math.pi, hi - turns * 2 * math.pi) if turns else (lo, hi)


def convert_spec(spec: TaskSpec, to_libero: bool = False) -> tuple[TaskSpec, list[Turned], list[Resized]]:
    """A copy of `spec` whose fixtures stand with our models as they stood with LIBERO's, and whose objects and
    fixtures of `LIBERO_SIZED` categories have our models of LIBERO's sizes (or, with `to_libero`, the other way);
    what was turned, and what was given another category.

    Instances of a category this library has no model of are left as they are (validation names them).

    Raises:
        LiberoError: one region that places two fixtures that need different turns (the message names the
        region).
    """
    from libero_ll.assets.categories import CATEGORIES

    out = copy.deepcopy(spec)
    sized = {v: k for k, v in LIBERO_SIZED.items()} if to_libero else LIBERO_SIZED
    resized = []
    for declared in (out.fixtures, out.objects):
        for inst, category in declared.items():
            if category in sized:
                declared[inst] = sized[category]
                resized.append(Resized(inst, category, sized[category]))
    instances = out.instances()
    placed: dict[str, list[str]] = {}
    for p in out.init:
        if p.name == "on" and len(p.args) == 2 and p.args[1] in out.regions:
            placed.setdefault(p.args[1], []).append(p.args[0])
    turned = []
    for where, insts in placed.items():
        region = out.regions[where]
        if not region.ranges:
            continue
        turns = {}
        for inst in insts:
            if inst not in instances or instances[inst] not in CATEGORIES:
                continue  # validation names it
            model = CATEGORIES.get(instances[inst])
            if model.kind == "fixture" and model.libero_yaw:
                turns[inst] = -model.libero_yaw if to_libero else model.libero_yaw
        if not turns:
            continue
        if len(set(turns.values())) > 1:
            raise LiberoError(
                f"region '{where}' places {', '.join(sorted(turns))}, whose models need different turns; "
                f"give each its own region"
            )
        by = next(iter(turns.values()))
        before = tuple(tuple(float(v) for v in y) for y in (region.yaw_rotation or [(0.0, 0.0)]))
        region.yaw_rotation = [_turn(y, by) for y in before]
        after = tuple(region.yaw_rotation)
        turned += [Turned(inst, instances[inst], where, before, after) for inst in sorted(turns)]
    return out, turned, resized
