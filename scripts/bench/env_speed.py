"""Env steps per second of our scenes next to robosuite's Lift, without cameras and with two cameras, in one run.

The scenes: a quickstart task (plain table, five objects) and the kitchen example (cabinet,
microwave, stove, wine rack and four objects), under the lean controller (the default) and under
robosuite's own controller; Lift under robosuite's controller, as its users run it. A step is the
env's whole step: control, physics, observations and, with cameras, both images.

Cameras: agentview and the wrist camera, SIZE x SIZE pixels, drawn for every scene, Lift included, by
the same renderer with the same settings (libero_ll.envs.render.CameraRenderer: no shadows, reflections,
multisampling or skybox, geoms outside the view left out, small boxes and cylinders drawn with fewer
triangles, the floor last, both pictures drawn together as an env's observation draws them). The
robot is drawn the same way on both sides of a ratio: with its detailed meshes in the first rows; with
robot_mesh=simplified (the detailed meshes with about a fifth of their triangles) and
robot_mesh=collision (its collision hulls, the `cpu` preset's choice) against Lift's robot drawn the
same way. For reference the run also times Lift drawn with nothing left out and Lift with robosuite's
own camera observations (its default render settings).

Each rate is the median of --repeats runs of --steps random small actions (the same sequence for
every env, each run from the same start); the runs of all settings are interleaved so that a busy
machine slows each alike.

Usage: python scripts/bench/env_speed.py [--steps 200] [--size 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "bddl_tasks/quickstart/put_the_black_bowl_on_the_plate.bddl"
KITCHEN = REPO / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"
CAMERAS = ("agentview", "robot0_eye_in_hand")


class Ours:
    """One of our scenes; `cameras` switches both camera images on or off."""

    def __init__(self, task: Path, size: int, controller: str, robot_mesh: str = "visual"):
        from libero_ll.envs.env import EnvConfig, LiberoEnv

        self.env = LiberoEnv(task, EnvConfig(image_size=size, robot_mesh=robot_mesh, controller=controller))

    def start(self, cameras: bool) -> None:
        self.env.config.render = cameras
        self.env.reset(seed=0)

    def step(self, action: np.ndarray) -> None:
        self.env.step(action)

    def close(self) -> None:
        self.env.close()


class Lift:
    """robosuite's Lift with the Panda and its default controller.

    Args:
        size: camera image size, pixels.
        own_cameras: use robosuite's camera observations (its render settings) instead of ours.
        cull: our renderer leaves geoms outside the view out.
        robot_mesh: how our renderer draws the robot (libero_ll.envs.render.ROBOT_MESHES).
    """

    def __init__(self, size: int, own_cameras: bool = False, cull: bool = True, robot_mesh: str = "visual"):
        from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs

        ensure_gl_backend()
        quiet_simulator_logs()
        import robosuite
        from robosuite.controllers import load_composite_controller_config

        from libero_ll.envs.render import CameraRenderer, draw_robot

        ctrl = load_composite_controller_config(controller="BASIC", robot="Panda")
        cams = {"camera_names": list(CAMERAS), "camera_heights": size, "camera_widths": size}
        # hard_reset=False: a reset keeps the simulation, and with it the model our renderer draws (a hard
        # reset builds a new one).
        self.env = robosuite.make("Lift", robots="Panda", controller_configs=ctrl, has_renderer=False,
                                  has_offscreen_renderer=own_cameras, use_camera_obs=own_cameras, control_freq=20,
                                  hard_reset=False, **(cams if own_cameras else {}))
        model = self.env.sim.model._model
        bodies = [self.env.sim.model.body_id2name(b) or "" for b in model.geom_bodyid]
        draw_robot(model, bodies, robot_mesh)
        xml = self.env.sim.model.get_xml()
        self.renderer = None if own_cameras else CameraRenderer(model, size, cull=cull, xml=xml)
        self.cameras = own_cameras

    def start(self, cameras: bool) -> None:
        self.env.reset()
        self.cameras = cameras

    def step(self, action: np.ndarray) -> None:
        if self.cameras and self.renderer is None:
            # robosuite draws its camera observations with whichever GL context is current (its own is
            # made current only when created): make it current, as another env's renderer may have left
            # its own.
            self.env.sim._render_context_offscreen.gl_ctx.make_current()
        self.env.step(action)
        if self.cameras and self.renderer is not None:
            # As an env's observation draws its cameras (CameraRenderer.render_many).
            self.renderer.render_many(self.env.sim.data._data, CAMERAS)

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
        self.env.close()


def steps_per_second(env, cameras: bool, steps: int) -> float:
    """Time `steps` random small actions from the env's start (the same sequence for every env)."""
    env.start(cameras)
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, size=(steps, 7))
    t = time.perf_counter()
    for a in actions:
        env.step(a)
    return steps / (time.perf_counter() - t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()

    lift = Lift(a.size)
    lift_all = Lift(a.size, cull=False)
    lift_own = Lift(a.size, own_cameras=True)
    lift_mesh = {mesh: Lift(a.size, robot_mesh=mesh) for mesh in ("simplified", "collision")}
    scenes = {}
    for name, task in (("quickstart", QUICKSTART), ("kitchen", KITCHEN)):
        scenes[f"{name}, lean controller"] = Ours(task, a.size, "lean")
        scenes[f"{name}, robosuite controller"] = Ours(task, a.size, "robosuite")
        scenes[f"{name}, lean, robot_mesh=simplified"] = Ours(task, a.size, "lean", "simplified")
        scenes[f"{name}, lean, robot_mesh=collision"] = Ours(task, a.size, "lean", "collision")
    # (label, env, cameras): every row timed once per repeat, repeats interleaved.
    rows = [("robosuite Lift", lift, False), ("robosuite Lift", lift, True),
            ("robosuite Lift, nothing left out of the drawing", lift_all, True),
            ("robosuite Lift, its own camera observations", lift_own, True)]
    rows += [(f"robosuite Lift, robot_mesh={mesh}", env, True) for mesh, env in lift_mesh.items()]
    for label, env in scenes.items():
        if "robot_mesh" not in label:
            rows.append((label, env, False))
        rows.append((label, env, True))
    runs: dict[tuple[str, bool], list[float]] = {}
    for _ in range(a.repeats):
        for label, env, cameras in rows:
            runs.setdefault((label, cameras), []).append(steps_per_second(env, cameras, a.steps))
    rate = {k: statistics.median(v) for k, v in runs.items()}

    print(f"MUJOCO_GL={os.environ.get('MUJOCO_GL')}; {a.steps} steps per run, median of {a.repeats} runs; "
          f"cameras: two of {a.size}x{a.size} px, the same render settings for every scene")
    print(f"{'env':48s} {'no cameras':>11s} {'ratio':>6s}   {'two cameras':>11s} {'ratio':>6s}")
    print("(a robot_mesh row's ratio with cameras is against Lift with the same robot_mesh)")
    base_plain = rate[("robosuite Lift", False)]
    for label in dict.fromkeys(r[0] for r in rows):
        plain, cams = rate.get((label, False)), rate.get((label, True))
        mesh = label.split("robot_mesh=")[1] if "robot_mesh=" in label else None
        base_cams = rate[(f"robosuite Lift, robot_mesh={mesh}" if mesh else "robosuite Lift", True)]
        left = f"{plain:11.1f} {plain / base_plain:5.2f}x" if plain else f"{'-':>11s} {'':6s}"
        print(f"{label:48s} {left}   {cams:11.1f} {cams / base_cams:5.2f}x")
    for env in [lift, lift_all, lift_own, *lift_mesh.values(), *scenes.values()]:
        env.close()


if __name__ == "__main__":
    main()
