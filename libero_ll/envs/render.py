"""Offscreen camera rendering with one set of settings, shared by `LiberoEnv` and the speed benchmark."""

from __future__ import annotations

import numpy as np

# Geom groups drawn: 1 holds robosuite's visual meshes, 2 our objects' geoms; 0 (collision) is hidden.
VISIBLE_GROUPS = (0, 1, 1, 0, 0, 0)


def prepare_offscreen(model, size: int) -> None:
    """Turn off multisampling and make the model's offscreen buffer at least size x size pixels.

    Both are part of the model (and of its saved XML), so the env sets them when it is built.
    """
    model.vis.quality.offsamples = 0
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, size)
    model.vis.global_.offheight = max(model.vis.global_.offheight, size)


class CameraRenderer:
    """Upright RGB images of a model's cameras, size x size pixels.

    No multisampling and no skybox; shadows and reflections only when asked for (both are slow in
    software rendering). Call only after the GL backend is chosen (envs.gl.ensure_gl_backend).

    Args:
        model: the MjModel (its offscreen buffer is enlarged to `size` when smaller).
        size: image height and width, pixels.
        shadows, reflections: draw them.
    """

    def __init__(self, model, size: int, shadows: bool = False, reflections: bool = False):
        import mujoco

        prepare_offscreen(model, size)
        self._renderer = mujoco.Renderer(model, size, size)
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = reflections
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        self.option = mujoco.MjvOption()
        self.option.geomgroup[:] = VISIBLE_GROUPS

    def render(self, data, camera) -> np.ndarray:
        """The image of the state in `data` seen from `camera` (a camera's name or an MjvCamera).

        Returns:
            uint8 (size, size, 3), row 0 at the top.
        """
        self._renderer.update_scene(data, camera=camera, scene_option=self.option)
        return self._renderer.render()

    def close(self) -> None:
        self._renderer.close()
