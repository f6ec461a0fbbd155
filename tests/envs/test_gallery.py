"""The asset gallery: one labelled tile per category, each showing its thing."""

from __future__ import annotations

import numpy as np
from PIL import Image

from libero_ll.cli import main
from libero_ll.envs.gallery import render_gallery


def test_gallery_tiles_show_their_category(tmp_path):
    out = render_gallery(tmp_path / "g.png", tile=64, columns=2, categories=["plate", "wooden_cabinet"], families=False)
    img = np.asarray(Image.open(out))
    assert img.shape == (64, 128, 3)
    plate, cabinet = img[:50, :64].astype(int), img[:50, 64:].astype(int)
    # A white plate and a brown cabinet fill the middle of their tiles.
    assert plate[20:40, 20:44].mean() > 170
    centre = cabinet[15:45, 20:44].reshape(-1, 3).mean(0)
    assert centre[0] > centre[2] + 20  # brown: more red than blue
    assert not (tmp_path / "g.png.tmp.png").exists()


def test_render_needs_a_file_or_gallery(capsys):
    assert main(["render", "-o", "x.png"]) == 2
    assert "give a task file, or --gallery" in capsys.readouterr().err


def test_the_gallery_takes_the_seed_and_robot_meshes_given(tmp_path, monkeypatch):
    """`render --gallery --seed S --robot-mesh M` draws with them (they were ignored)."""
    import libero_ll.envs.env as env_module

    made, resets = [], []
    real = env_module.LiberoEnv

    class Recorded(real):
        def __init__(self, spec, config=None):
            made.append(config.robot_mesh)
            super().__init__(spec, config)

        def reset(self, seed=None):
            resets.append(seed)
            return super().reset(seed=seed)

    monkeypatch.setattr(env_module, "LiberoEnv", Recorded)
    render_gallery(tmp_path / "g.png", tile=32, columns=1, categories=["plate"], families=False, seed=4,
                   robot_mesh="collision")
    assert made == ["collision"] and resets == [4]


def test_the_gallerys_fixtures_face_its_cameras_without_a_warning(tmp_path):
    """The gallery turns the stove's front to its camera, away from the robot: a task file would be warned of
    that, but the gallery is no task file of the user's."""
    import warnings

    from libero_ll.bddl.validate import BddlWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", BddlWarning)
        render_gallery(tmp_path / "g.png", tile=32, columns=2, categories=["plate", "flat_stove"], families=False)


def test_a_tile_beyond_three_metres_shows_floor_behind_its_thing(tmp_path, monkeypatch):
    """The floor plane is drawn 3 m out each way; a tile of the grid's far rows showed the black void behind its
    thing (the gallery's 63 categories reach about 4 m)."""
    import libero_ll.envs.gallery as gallery

    monkeypatch.setattr(gallery, "GRID_SPACING", 1.2)  # one thing: column 0, 4.8 m to the robot's right
    img = np.asarray(Image.open(render_gallery(tmp_path / "g.png", tile=48, columns=1, categories=["plate"],
                                               families=False))).astype(int)
    background = np.concatenate([img[:8, :8].reshape(-1, 3), img[:8, -8:].reshape(-1, 3)])
    assert background.mean() > 60, background.mean()
