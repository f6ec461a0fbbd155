"""The movable-object library: every benchmark category exists, rests still on a table, and can be picked.

The fast tests check the grasp hints against the hand's geometry and put all objects on the plain
table at once (several scenes when they do not fit) to watch them for a second; the slow test has
the scripted expert carry each graspable object onto a plate or into a basket over ten seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from libero_ll.assets.categories import CATEGORIES, get_model

# The object list of shared/spec/bddl.md, "Categories used by the benchmark suites".
SPEC_OBJECTS = """
akita_black_bowl white_bowl plate glazed_rim_porcelain_ramekin basket wooden_tray chefmate_8_frypan
moka_pot porcelain_mug red_coffee_mug white_yellow_mug black_book yellow_book wine_bottle alphabet_soup
tomato_sauce cream_cheese butter chocolate_pudding cookies ketchup bbq_sauce salad_dressing
new_salad_dressing milk orange_juice
""".split()
# The categories LIBERO-plus adds to LIBERO's scenes.
LIBERO_PLUS_OBJECTS = """
bottle_of_antihistamines bottle_of_aspirin bottle_of_alfredo_sauce bottle_of_baby_oil bottle_of_barbecue_sauce__2
can_of_soda__1 canned_food__1 can_of_sardines box_of_vegetable_juice__1 box_of_shampoo__1 boxed_ink_cartridge__3
box_of_yogurt__1 bag_of_yeast
""".split()
OBJECTS = SPEC_OBJECTS + LIBERO_PLUS_OBJECTS

# Containers and supports that tasks never pick up.
TARGETS = {"plate", "basket", "wooden_tray"}
# Where the slow test takes each graspable object: onto a plate (dishes, kitchenware, books, the
# wine bottle) or into the basket (groceries).
GOES_ON_PLATE = {
    "akita_black_bowl",
    "white_bowl",
    "glazed_rim_porcelain_ramekin",
    "chefmate_8_frypan",
    "moka_pot",
    "porcelain_mug",
    "red_coffee_mug",
    "white_yellow_mug",
    "black_book",
    "yellow_book",
    "wine_bottle",
}

# The plain table's top, in its own frame (metres): x away from the robot, y to its left.
TABLE_X = (-0.3, 0.36)
TABLE_Y = (-0.55, 0.55)
# Nothing stands under the hand's rest position, 20 cm above the table: the wine bottle is taller.
HAND_XY, HAND_CLEARANCE = (-0.1, 0.0), 0.08
GAP = 0.015


def _region(name: str, x: float, y: float, half: float = 0.0005, yaw=(0.0, 2 * math.pi)) -> str:
    return f"""
    ({name}
      (:target main_table)
      (:ranges (({x - half:.4f} {y - half:.4f} {x + half:.4f} {y + half:.4f})))
      (:yaw_rotation (({yaw[0]:.4f} {yaw[1]:.4f})))
    )"""


def scene_text(
    placements: dict[str, tuple[float, float, float]],
    goal: str,
    language: str,
    stacked: dict[str, tuple[str, str]] | None = None,
) -> str:
    """A plain-table task file with one instance `<category>_1` per placed category.

    Args:
        placements: category → (x, y, half width of its square start region), table frame, metres;
            each object starts at any yaw.
        goal: the goal formula, e.g. "(On milk_1 main_table_milk_init_region)".
        language: the instruction.
        stacked: further instances that start on top of another: instance → (category, support instance).
    """
    stacked = stacked or {}
    regions = "".join(_region(f"{c}_init_region", x, y, half) for c, (x, y, half) in placements.items())
    objects = "\n".join(
        [f"    {c}_1 - {c}" for c in placements] + [f"    {i} - {c}" for i, (c, _) in stacked.items()]
    )
    init = "\n".join(
        [f"    (On {c}_1 main_table_{c}_init_region)" for c in placements]
        + [f"    (On {i} {below})" for i, (_, below) in stacked.items()]
    )
    return f"""(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language {language})
  (:regions{regions}
  )
  (:fixtures
    main_table - table
  )
  (:objects
{objects}
  )
  (:init
{init}
  )
  (:goal
    (And {goal})
  )
)
"""


def pack_on_table(categories: list[str]) -> list[dict[str, tuple[float, float]]]:
    """Spread objects over the table without their bounding circles touching; as many tables as needed.

    Returns:
        one dict per scene: category → (x, y) of its centre, table frame, metres.
    """
    todo = sorted(categories, key=lambda c: -get_model(c).horizontal_radius)
    xs = np.arange(TABLE_X[0], TABLE_X[1], 0.01)
    ys = np.arange(TABLE_Y[0], TABLE_Y[1], 0.01)
    scenes = []
    while todo:
        placed: dict[str, tuple[float, float]] = {}
        for c in list(todo):
            r = get_model(c).horizontal_radius
            spot = next(
                (
                    (float(x), float(y))
                    for x in xs
                    for y in ys
                    if TABLE_X[0] <= x - r
                    and x + r <= TABLE_X[1]
                    and TABLE_Y[0] <= y - r
                    and y + r <= TABLE_Y[1]
                    and math.hypot(x - HAND_XY[0], y - HAND_XY[1]) >= r + HAND_CLEARANCE
                    and all(
                        math.hypot(x - px, y - py) >= r + get_model(o).horizontal_radius + GAP
                        for o, (px, py) in placed.items()
                    )
                ),
                None,
            )
            if spot is not None:
                placed[c] = spot
                todo.remove(c)
        assert placed, f"{todo[0]} does not fit on an empty table"
        scenes.append(placed)
    return scenes


def test_every_spec_object_is_registered():
    """Every object category of the spec and of LIBERO-plus has a movable model; all but plate, tray, basket a
    grasp hint."""
    missing = [c for c in OBJECTS if c not in CATEGORIES]
    assert not missing, f"categories without a model: {missing}"
    for c in OBJECTS:
        m = get_model(c)
        assert m.kind == "object", c
        assert m.description, c
        if c not in TARGETS:
            assert m.grasp is not None, f"{c} has no grasp hint"


def test_containers_have_contain_region():
    for c in ("basket", "wooden_tray"):
        region = get_model(c).region("contain_region")
        # The region starts on the container's floor, inside its walls.
        half = get_model(c).half_size
        assert -half[2] < region.pos[2] - region.half_size[2] < -half[2] + 0.02, c
        assert region.half_size[0] < half[0] and region.half_size[1] < half[1], c


# The Panda hand around its grip point, measured on robosuite's model (metres): the pads span
# 0.4 cm below to 1.2 cm above it and 2 cm across; open fingers stand 4-5 cm to either side of it
# and reach 1 cm below it; the palm's underside is 2.9 cm above it and spans 10 cm to either side
# along the closing direction and 3 cm across it.
PAD_Z = (-0.004, 0.0116)
PAD_HALF_WIDTH = 0.008
OPEN_FINGER = (0.041, 0.05)
FINGER_TIP_BELOW = 0.01
PALM_ABOVE, PALM_ALONG, PALM_ACROSS = 0.03, 0.1, 0.03
# Widest thing the open hand (8 cm between the pads) closes on with room to spare.
MAX_GRIP_WIDTH = 0.07


def _solid_at(model, p) -> bool:
    """Whether the point p (model frame, metres) lies inside one of the model's colliding geoms."""
    for g in model.geoms:
        if not g.collide:
            continue
        dx, dy, dz = p[0] - g.pos[0], p[1] - g.pos[1], p[2] - g.pos[2]
        if g.type == "box":
            c, s = math.cos(g.yaw), math.sin(g.yaw)
            lx, ly = c * dx + s * dy, -s * dx + c * dy
            inside = abs(lx) <= g.size[0] and abs(ly) <= g.size[1] and abs(dz) <= g.size[2]
        elif g.type == "cylinder":
            inside = math.hypot(dx, dy) <= g.size[0] and abs(dz) <= g.size[1]
        elif g.type == "sphere":
            inside = math.sqrt(dx * dx + dy * dy + dz * dz) <= g.size[0]
        elif g.type == "capsule":
            inside = math.hypot(dx, dy, max(abs(dz) - g.size[1], 0.0)) <= g.size[0]
        else:
            raise AssertionError(f"{model.category}: unexpected geom type {g.type}")
        if inside:
            return True
    return False


def _grasp_problems(model) -> list[str]:
    """What keeps the hand from taking `model` by its grasp hint, read off the geometry alone."""
    grasp = model.grasp
    a = grasp.across_yaw
    u, v = (math.cos(a), math.sin(a)), (-math.sin(a), math.cos(a))
    h = -model.half_size[2] + grasp.height
    top = model.half_size[2]

    def at(s, w, z):
        return (grasp.offset[0] + s * u[0] + w * v[0], grasp.offset[1] + s * u[1] + w * v[1], z)

    problems = []
    between = [
        s
        for s in np.arange(-OPEN_FINGER[0], OPEN_FINGER[0], 0.001)
        for w in (-PAD_HALF_WIDTH, 0.0, PAD_HALF_WIDTH)
        for z in (h + PAD_Z[0] + 0.001, h, h + PAD_Z[1] - 0.001)
        if _solid_at(model, at(s, w, z))
    ]
    if not between:
        problems.append("nothing between the finger pads")
    elif max(between) - min(between) > MAX_GRIP_WIDTH:
        problems.append(f"{max(between) - min(between):.3f} m between the pads is too wide")
    for s in np.arange(OPEN_FINGER[0], OPEN_FINGER[1], 0.002):
        for sign in (-1, 1):
            for w in (-PAD_HALF_WIDTH, PAD_HALF_WIDTH):
                for z in np.arange(h - FINGER_TIP_BELOW, top, 0.002):
                    if _solid_at(model, at(sign * s, w, z)):
                        problems.append(f"an open finger would hit the object at height {z + top:.3f} m")
                        return problems
    for s in np.arange(-PALM_ALONG, PALM_ALONG, 0.005):
        for w in np.arange(-PALM_ACROSS, PALM_ACROSS, 0.005):
            for z in np.arange(h + PALM_ABOVE, top + 0.001, 0.002):
                if _solid_at(model, at(s, w, z)):
                    problems.append(f"the palm would hit the object at height {z + top:.3f} m")
                    return problems
    return problems


def test_grasp_hints_fit_the_hand():
    """At every grasp hint the open fingers come down clear, close on something narrower than the hand,
    and the palm clears the object's top."""
    problems = []
    for c in OBJECTS:
        m = get_model(c)
        if m.grasp is None:
            continue
        assert 0.0 < m.grasp.height < 2 * m.half_size[2], c
        problems += [f"{c}: {p}" for p in _grasp_problems(m)]
    assert not problems, "\n".join(problems)


def test_grasp_check_rejects_a_bad_hint():
    """The geometric check above can fail: a milk carton held too low or beside its middle does."""
    from dataclasses import replace

    milk = get_model("milk")
    assert _grasp_problems(milk) == []
    too_low = replace(milk, grasp=replace(milk.grasp, height=0.03))
    assert any("palm" in p for p in _grasp_problems(too_low))
    off_centre = replace(milk, grasp=replace(milk.grasp, offset=(0.0, 0.04)))
    assert any("finger" in p for p in _grasp_problems(off_centre))


def test_objects_rest_still_and_upright_on_the_table():
    """Placed at any yaw, every object keeps still for a second: moved < 1 cm, tilted < 5 degrees.

    It also rests at the height its bounding box says (so the placement and the expert, which read
    the box, are right about where its bottom is), and MuJoCo's mass of it is believable.
    """
    from libero_ll.bddl.parser import parse_string
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    problems = []
    for scene in pack_on_table(OBJECTS):
        first = next(iter(scene))
        text = scene_text(
            {c: (x, y, 0.0005) for c, (x, y) in scene.items()},
            f"(On {first}_1 main_table_{first}_init_region)",
            "leave everything where it is",
        )
        env = LiberoEnv(parse_string(text), EnvConfig(image_size=32, robot_mesh="collision", render=False))
        try:
            env.reset(seed=0)
            g = env.geometry
            start = {c: g.pos(f"{c}_1") for c in scene}
            still = np.array([0, 0, 0, 0, 0, 0, -1.0])
            for _ in range(env.config.control_freq):
                env.step(still)
            for c in scene:
                inst = f"{c}_1"
                model = get_model(c)
                moved = float(np.linalg.norm(g.pos(inst) - start[c]))
                tilt = math.degrees(math.acos(min(1.0, g.rot(inst)[2, 2])))
                height = float(g.pos(inst)[2] - env.arena.table_top_z - model.half_size[2])
                mass = float(env.model.body_subtreemass[g.body_of[inst]])
                if moved > 0.01 or tilt > 5.0 or abs(height) > 0.004 or not 0.02 <= mass <= 2.0:
                    problems.append(
                        f"{c}: moved {moved:.4f} m, tilt {tilt:.1f} deg, "
                        f"height error {height:.4f} m, mass {mass:.3f} kg"
                    )
        finally:
            env.close()
    assert not problems, "\n".join(problems)


def test_bowls_rest_on_a_cookie_box_and_a_ramekin():
    """The spatial tasks start a bowl on the cookie box or on the ramekin: it must stay there, level."""
    from libero_ll.bddl.parser import parse_string
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    text = scene_text(
        {"cookies": (0.1, -0.2, 0.0005), "glazed_rim_porcelain_ramekin": (0.1, 0.2, 0.0005)},
        "(On bowl_a cookies_1)",
        "leave the bowls where they are",
        stacked={
            "bowl_a": ("akita_black_bowl", "cookies_1"),
            "bowl_b": ("akita_black_bowl", "glazed_rim_porcelain_ramekin_1"),
        },
    )
    env = LiberoEnv(parse_string(text), EnvConfig(image_size=32, robot_mesh="collision", render=False))
    try:
        env.reset(seed=1)
        g = env.geometry
        start = {b: g.pos(b) for b in ("bowl_a", "bowl_b")}
        for _ in range(env.config.control_freq):
            env.step(np.array([0, 0, 0, 0, 0, 0, -1.0]))
        assert g.on("bowl_a", "cookies_1") and g.on("bowl_b", "glazed_rim_porcelain_ramekin_1")
        for b in start:
            assert np.linalg.norm(g.pos(b) - start[b]) < 0.01, b
            assert math.degrees(math.acos(min(1.0, g.rot(b)[2, 2]))) < 5.0, b
    finally:
        env.close()


# ---------------------------------------------------------------- the scripted expert on each object

GRASPABLE = [c for c in OBJECTS if c not in TARGETS]
SEEDS = range(10)


def pick_and_place_text(category: str) -> str:
    """A plain-table task: take `category` onto a plate or into a basket, both started clear of each other."""
    target = "plate" if category in GOES_ON_PLATE else "basket"
    tx, ty = (-0.035, -0.2) if target == "plate" else (-0.015, 0.195)
    # The object starts on the robot's side of the target, as far away as the two need.
    gap = get_model(target).horizontal_radius + get_model(category).horizontal_radius + 0.05
    ox = -0.17
    oy = ty + math.copysign(math.sqrt(max(gap**2 - (ox - tx) ** 2, 0.0)), -ty)
    if target == "plate":
        goal = f"(On {category}_1 plate_1)"
    else:
        goal = f"(In {category}_1 basket_1_contain_region)"
    where = "on the plate" if target == "plate" else "in the basket"
    return scene_text(
        {category: (ox, oy, 0.02), target: (tx, ty, 0.02)},
        goal,
        f"put the {category.replace('_', ' ')} {where}",
    )


def expert_successes(category: str, seeds=SEEDS, max_steps: int = 400) -> list[bool]:
    """Run the scripted expert once per seed on `pick_and_place_text(category)`; success of each episode."""
    from libero_ll.bddl.parser import parse_string
    from libero_ll.data.collect import run_expert_episode
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    config = EnvConfig(image_size=32, robot_mesh="collision", render=False)
    env = LiberoEnv(parse_string(pick_and_place_text(category)), config)
    try:
        return [run_expert_episode(env, seed=s, max_steps=max_steps, record=False)[0] for s in seeds]
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("category", GRASPABLE)
def test_expert_picks_and_places_each_object(category):
    """The acceptance bar: the scripted expert succeeds in at least 9 of 10 seeds."""
    ok = expert_successes(category)
    # Shown with `pytest -s`: the per-object success table.
    print(f"\n{category}: {sum(ok)}/10 {''.join('x' if o else '.' for o in ok)}")
    assert sum(ok) >= 9, f"{category}: {sum(ok)}/10 ({ok})"
