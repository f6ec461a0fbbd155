"""Env steps per second with two 128x128 cameras: our scenes next to robosuite's Lift, in one run.

The scenes: a quickstart task (plain table, five objects) and the kitchen example (cabinet,
microwave, stove, wine rack and four objects), each with the robot drawn from its detailed
meshes and from its collision hulls.

Usage: python scripts/bench/env_speed.py [--steps 200] [--size 128]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


QUICKSTART = REPO / "bddl_tasks/quickstart/put_the_black_bowl_on_the_plate.bddl"
KITCHEN = REPO / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"


def bench_ours(task: Path, steps: int, size: int, robot_mesh: str) -> float:
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(task, EnvConfig(image_size=size, robot_mesh=robot_mesh))
    env.reset(seed=0)
    rate = _steps_per_second(env, steps)
    env.close()
    return rate


def bench_lift(steps: int, size: int) -> float:
    from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs

    ensure_gl_backend()
    quiet_simulator_logs()
    import robosuite
    from robosuite.controllers import load_composite_controller_config

    env = robosuite.make(
        "Lift", robots="Panda", controller_configs=load_composite_controller_config(controller="BASIC", robot="Panda"),
        has_renderer=False, has_offscreen_renderer=True, use_camera_obs=True,
        camera_names=["agentview", "robot0_eye_in_hand"], camera_heights=size, camera_widths=size, control_freq=20,
    )
    env.reset()
    rate = _steps_per_second(env, steps)
    env.close()
    return rate


def _steps_per_second(env, steps: int) -> float:
    """Time `steps` random small actions (the same sequence for every env)."""
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for _ in range(steps):
        env.step(rng.uniform(-0.3, 0.3, size=7))
    return steps / (time.perf_counter() - t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--size", type=int, default=128)
    a = p.parse_args()
    lift = bench_lift(a.steps, a.size)
    print(f"two {a.size}x{a.size} cameras, {a.steps} steps each")
    print(f"{'robosuite Lift':52s} {lift:6.1f} steps/s")
    for label, task in (("quickstart task", QUICKSTART), ("kitchen scene, full furniture", KITCHEN)):
        for mesh in ("visual", "collision"):
            rate = bench_ours(task, a.steps, a.size, mesh)
            print(f"{label + f' (robot_mesh={mesh})':52s} {rate:6.1f} steps/s  ratio to Lift {rate / lift:.2f}")


if __name__ == "__main__":
    main()
