"""One picture of the whole asset library: every object and fixture category, and every scene family.

All movable objects and fixtures are laid out in a grid on the floor of one scene (building a scene
takes seconds, so one scene serves every tile); each tile is a close view of one instance from its
front, labelled with its category. The scene families get one tile each, their front camera's view.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from libero_ll.assets.categories import ARENAS, CATEGORIES, get_model
from libero_ll.bddl.spec import And, Predicate, Region, TaskSpec
from libero_ll.bddl.validate import BddlWarning

GRID_SPACING = 0.55
GRID_COLUMNS = 9
FLOOR_CLASS = "LIBERO_Floor_Manipulation"
# How far out the gallery's floor is drawn, metres (the grid of tiles reaches about 4 m from the robot).
FLOOR_DRAWN = 6.0


def _layout_spec(categories: list[str]) -> TaskSpec:
    """A floor scene with one instance of each category on a grid in front of the robot."""
    regions, fixtures, objects, init = {}, {"floor": "floor"}, {}, []
    for k, cat in enumerate(categories):
        row, col = divmod(k, GRID_COLUMNS)
        x = 0.5 + row * GRID_SPACING
        y = (col - (GRID_COLUMNS - 1) / 2) * GRID_SPACING
        inst = f"{cat}_1"
        name = f"{cat}_init_region"
        regions[f"floor_{name}"] = Region(name, "floor", [(x, y, x, y)], [(0.0, 0.0)])
        (fixtures if get_model(cat).kind == "fixture" else objects)[inst] = cat
        init.append(Predicate("on", (inst, f"floor_{name}")))
    first = next(iter(objects or fixtures))
    return TaskSpec(FLOOR_CLASS, "the asset gallery", regions, fixtures, objects, [], init, And([Predicate("up", (first,))]))


def _label(img: np.ndarray, text: str) -> np.ndarray:
    from PIL import Image, ImageDraw

    im = Image.fromarray(img)
    draw = ImageDraw.Draw(im)
    w = draw.textlength(text)
    draw.rectangle([0, im.height - 14, im.width, im.height], fill=(255, 255, 255))
    draw.text(((im.width - w) / 2, im.height - 13), text, fill=(0, 0, 0))
    return np.asarray(im)


def render_gallery(output: str | Path, tile: int = 192, columns: int = 7, categories: list[str] | None = None,
                   families: bool = True, seed: int = 0, robot_mesh: str = "visual") -> Path:
    """Draw every category and scene family into one labelled PNG and return its path.

    Args:
        output: the PNG to write (written to a temporary name, then renamed).
        tile: the side of each tile, pixels.
        columns: tiles per row.
        categories: only these categories (default: all but the workspaces, which the family tiles show).
        families: add one tile per scene family, its front camera's view.
        seed: the seed of every reset (where a placement region leaves room to vary).
        robot_mesh: the robot's meshes in the scene family tiles ("visual" or "collision").
    """
    from libero_ll.envs.gl import ensure_gl_backend

    # MuJoCo fixes its GL backend when first imported: choose a headless one before that (as LiberoEnv does).
    ensure_gl_backend()
    import mujoco
    from PIL import Image

    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.render import CameraRenderer

    things = categories or [c for c in CATEGORIES.names() if get_model(c).kind != "workspace"]
    # Big fixtures in the rows nearest the robot, so that no close view reaches past the walls.
    layout = sorted(things, key=lambda c: -max(get_model(c).half_size))
    tiles = []
    with warnings.catch_warnings():
        # The fixtures face the gallery's cameras, not the robot, as a task's must: that is no news to the user.
        warnings.simplefilter("ignore", BddlWarning)
        env = LiberoEnv(_layout_spec(layout), EnvConfig(image_size=tile, settle_steps=20, robot_mesh=robot_mesh))
    try:
        env.reset(seed=seed)
        for g in range(env.model.ngeom):
            name = mujoco.mj_id2name(env.model, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
            if name.startswith("wall"):
                env.model.geom_rgba[g, 3] = 0.0  # the walls would hide the far tiles
            elif name == "floor":
                # The plane is drawn 3 m out each way; the grid's far rows stand beyond that (a plane collides
                # everywhere): drawn wider, their tiles show floor behind them, not the void.
                env.model.geom_size[g, :2] = np.maximum(env.model.geom_size[g, :2], FLOOR_DRAWN)
        renderer = CameraRenderer(env.model, tile, shadows=True, reflections=True, fine_round=True)
        for cat in things:
            model = get_model(cat)
            inst = f"{cat}_1"
            size = max(model.half_size)
            cam = mujoco.MjvCamera()
            cam.lookat[:] = env.geometry.pos(inst)
            cam.distance = 3.2 * size + 0.12
            cam.azimuth = 200.0  # from the front (+x), a little to the side
            cam.elevation = -28.0
            tiles.append(_label(renderer.render(env.data, cam), cat))
        renderer.close()
    finally:
        env.close()
    for problem_class in ARENAS.names() if families else []:
        arena = ARENAS.get(problem_class)
        spec = _layout_spec(["plate"])
        spec.problem_class = problem_class
        spec.fixtures = {arena.workspace: arena.workspace_category}
        spec.regions = {
            f"{arena.workspace}_plate_init_region": Region("plate_init_region", arena.workspace, [(-0.1, 0.0, -0.1, 0.0)])
        }
        spec.init = [Predicate("on", ("plate_1", f"{arena.workspace}_plate_init_region"))]
        fam = LiberoEnv(spec, EnvConfig(image_size=tile, robot_mesh=robot_mesh))
        try:
            tiles.append(_label(fam.reset(seed=seed)["agentview_rgb"], arena.workspace_category))
        finally:
            fam.close()
    rows = math.ceil(len(tiles) / columns)
    sheet = np.full((rows * tile, columns * tile, 3), 255, dtype=np.uint8)
    for k, t in enumerate(tiles):
        r, c = divmod(k, columns)
        sheet[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile] = t
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp.png")
    Image.fromarray(sheet).save(tmp)
    tmp.replace(out)
    return out
