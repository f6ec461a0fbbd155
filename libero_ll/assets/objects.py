"""Movable objects: bowls, plates, containers, groceries, kitchenware, as our own primitive-built models.

Sizes are in metres and chosen to match the real things (a 14 cm bowl, a 20 cm plate, a soup can);
densities give believable masses (a soup can about 0.25 kg, a bowl about 0.15 kg).
"""

from __future__ import annotations

import math

from libero_ll.assets.categories import register_category
from libero_ll.assets.models import Geom, Grasp, Model, Region, open_box, ring


# ---------------------------------------------------------------- bowls and plates


def _bowl(category: str, rgba, description: str) -> Model:
    radius, wall, height, base = 0.058, 0.008, 0.045, 0.008
    hz = height / 2
    geoms = [Geom("cylinder", (radius - wall / 2, base / 2), (0, 0, -hz + base / 2), rgba=rgba)]
    geoms += ring(radius, 0.0, wall, height, 16, rgba)
    return Model(
        category,
        "object",
        (radius + wall / 2, radius + wall / 2, hz),
        tuple(geoms),
        density=900.0,
        friction=(1.2, 0.005, 0.0001),
        # Pinch the wall on the robot's right; the fingers close across the wall's thickness (along y).
        grasp=Grasp("rim", height=height - 0.012, offset=(0.0, -radius), across_yaw=math.pi / 2),
        description=description,
    )


register_category(_bowl("akita_black_bowl", (0.07, 0.07, 0.08, 1.0), "a black ceramic bowl, 13 cm across"))
register_category(_bowl("white_bowl", (0.92, 0.92, 0.9, 1.0), "a white bowl, 13 cm across"))

_PLATE_RGBA = (0.95, 0.93, 0.86, 1.0)
register_category(
    Model(
        "plate",
        "object",
        (0.1, 0.1, 0.009),
        tuple(
            [Geom("cylinder", (0.095, 0.004), (0, 0, -0.005), rgba=_PLATE_RGBA)]
            + ring(0.093, 0.0, 0.008, 0.018, 24, (0.85, 0.82, 0.74, 1.0))
        ),
        density=1800.0,
        description="a flat dinner plate, 20 cm across, with a low rim",
    )
)


# ---------------------------------------------------------------- containers

_WICKER = (0.62, 0.45, 0.25, 1.0)
register_category(
    Model(
        "basket",
        "object",
        (0.09, 0.115, 0.04),
        tuple(open_box(0.08, 0.105, 0.08, 0.01, 0.01, _WICKER)),
        density=700.0,
        regions=(Region("contain_region", (0.0, 0.0, 0.005), (0.078, 0.103, 0.035)),),
        description="a wicker basket with an open top, 18 x 23 cm",
    )
)


# ---------------------------------------------------------------- groceries


def _can(category: str, radius: float, height: float, body_rgba, label_rgba, description: str) -> Model:
    hz = height / 2
    metal = (0.75, 0.75, 0.78, 1.0)
    geoms = (
        Geom("cylinder", (radius, hz), (0, 0, 0), rgba=metal),
        Geom("cylinder", (radius + 0.0008, hz * 0.7), (0, 0, 0), rgba=body_rgba, collide=False),
        Geom("cylinder", (radius + 0.0012, hz * 0.25), (0, 0, hz * 0.1), rgba=label_rgba, collide=False),
    )
    return Model(
        category,
        "object",
        (radius, radius, hz),
        geoms,
        density=650.0,
        friction=(1.5, 0.005, 0.0001),
        grasp=Grasp("body", height=hz + 0.01),
        description=description,
    )


def _carton(category: str, half, body_rgba, label_rgba, description: str) -> Model:
    hx, hy, hz = half
    geoms = (
        Geom("box", half, (0, 0, 0), rgba=body_rgba),
        Geom("box", (hx * 0.7, hy + 0.0008, hz * 0.6), (0, 0, 0), rgba=label_rgba, collide=False),
    )
    return Model(
        category,
        "object",
        half,
        geoms,
        density=550.0,
        friction=(1.5, 0.005, 0.0001),
        # Fingers close along y, across the carton's short side.
        grasp=Grasp("body", height=hz + 0.008),
        description=description,
    )


register_category(
    _can("alphabet_soup", 0.03, 0.1, (0.8, 0.12, 0.1, 1.0), (0.95, 0.9, 0.75, 1.0), "a red soup can, 10 cm tall")
)
register_category(
    _can("tomato_sauce", 0.028, 0.09, (0.85, 0.2, 0.1, 1.0), (0.2, 0.55, 0.2, 1.0), "a tomato sauce can, 9 cm")
)
register_category(
    _carton(
        "cream_cheese",
        (0.045, 0.026, 0.02),
        (0.75, 0.8, 0.9, 1.0),
        (0.15, 0.25, 0.65, 1.0),
        "a silver-blue cream cheese box, 9 x 5 cm",
    )
)
register_category(
    _carton("butter", (0.05, 0.025, 0.018), (0.95, 0.88, 0.45, 1.0), (0.9, 0.9, 0.85, 1.0), "a butter pack")
)
