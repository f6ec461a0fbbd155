"""The robosuite environment class that assembles a task's arena, robot and objects into one MJCF model."""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET

from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.models.tasks import ManipulationTask

from libero_ll.assets.build import build_arena, build_object
from libero_ll.assets.categories import get_model
from libero_ll.assets.models import Arena
from libero_ll.bddl.spec import TaskSpec
from libero_ll.envs.render import HIDDEN_GROUP, ROBOT_PREFIXES

# Held while a model is loaded from XML and its XML read back, and while a scene loads its robot: MuJoCo writes out
# the XML of the model loaded last in the process, whichever thread loaded it (`LiberoEnv.model_xml`), and
# `TaskScene._load_robots` swaps a robosuite method for the time of its load.
MODEL_LOADING = threading.RLock()


class TaskScene(ManipulationEnv):
    """A Panda in a scene family's arena holding the fixtures and objects of one task file.

    Object placement, observations and goal checks live in `LiberoEnv`; this class only builds the
    model and runs robosuite's controller and physics.

    Args:
        spec: the parsed task.
        arena: the scene family's arena description.
        controller_config: robosuite composite controller config.
        control_freq: policy steps per simulated second.
        robot_visuals: keep the robot's detailed visual meshes. Without them (for a scene whose robot is drawn
            as its collision hulls) each of the robot's visual mesh geoms is a tiny sphere in a geom group no
            camera draws, and the meshes are not loaded: about half the memory an environment takes, with the
            same physics, bit for bit (the geoms never collide, and every robot body's inertia is its own).
    """

    def __init__(self, spec: TaskSpec, arena: Arena, controller_config: dict, control_freq: int = 20,
                 robot_visuals: bool = True):
        self.spec = spec
        self.arena = arena
        self.robot_visuals = robot_visuals
        self.mj_objects: dict[str, object] = {}
        super().__init__(
            robots="Panda",
            controller_configs=controller_config,
            initialization_noise=None,
            use_camera_obs=False,
            has_renderer=False,
            has_offscreen_renderer=False,
            control_freq=control_freq,
            horizon=10**9,
            ignore_done=True,
            hard_reset=False,
            camera_names=[],
            camera_heights=[],
            camera_widths=[],
        )

    def _load_robots(self):
        # robosuite compiles each robot on its own as it loads it and keeps that MjModel (`RobotModel.mujoco_model`),
        # which neither robosuite's controllers nor ours read: about 50 MB per environment, with the robot's detailed
        # meshes, and a tenth of a second to build. Loaded here without it.
        # One thread at a time, so that another's scene never takes the swapped method for robosuite's own.
        from robosuite.models.robots.robot_model import RobotModel

        with MODEL_LOADING:
            compile_alone = RobotModel.set_mujoco_model
            RobotModel.set_mujoco_model = _no_robot_only_model
            try:
                super()._load_robots()
            finally:
                RobotModel.set_mujoco_model = compile_alone

    def _load_model(self):
        super()._load_model()
        import numpy as np

        robot = self.robots[0].robot_model
        # set_base_xpos places the bottom of the robot's pedestal; the arena names where the base goes.
        robot.set_base_xpos(np.array(self.arena.robot_base) + robot.bottom_offset)
        mujoco_arena = build_arena(self.arena)
        for inst, cat in self.spec.instances().items():
            model = get_model(cat)
            if model.kind == "workspace":
                continue
            self.mj_objects[inst] = build_object(model, inst)
        self.model = ManipulationTask(
            mujoco_arena=mujoco_arena,
            mujoco_robots=[robot],
            mujoco_objects=list(self.mj_objects.values()),
        )
        if not self.robot_visuals:
            _drop_robot_visual_meshes(self.model.root)
        # Several contacts per pair of convex shapes, not one: a plate's or bowl's round base then rests
        # flat on a handful of contacts instead of tipping onto one point of its edge, so that the walls
        # and rims need not touch the table (libero_ll/assets/objects.py, _FOOT_GAP).
        option = self.model.root.find("option")
        flag = option.find("flag")
        if flag is None:
            flag = ET.SubElement(option, "flag")
        flag.set("multiccd", "enable")
        # A fixture's moving parts and its body never collide with each other: joint limits stop a
        # drawer, a door or a dial. Without this, every drawer box is tested against every cabinet box at
        # every substep (the parts' parent is fixed to the world, which MuJoCo's parent filter exempts).
        contact = self.model.root.find("contact")
        if contact is None:
            contact = ET.SubElement(self.model.root, "contact")
        for inst, cat in self.spec.instances().items():
            model = get_model(cat)
            if model.kind != "fixture" or not model.parts:
                continue
            bodies = [f"{inst}_root"] + [f"{inst}_{p.name}" for p in model.parts]
            for i, a in enumerate(bodies):
                for b in bodies[i + 1 :]:
                    ET.SubElement(contact, "exclude", {"body1": a, "body2": b})

    def _destroy_sim(self):
        # robosuite's `MjSim.free` drops the simulator's model, data and offscreen context, then runs a full garbage
        # collection: 0.13 s of the 0.15 s an environment took to close in a process that holds torch, about a third
        # of what building one takes. The same without it: what sits in reference cycles goes at Python's next
        # automatic collection.
        sim, self.sim = self.sim, None
        if sim is not None:
            sim._render_context_offscreen = None
            del sim.data
            del sim.model

    def _setup_observables(self):
        # Observations are assembled by LiberoEnv from the simulator directly; robosuite's
        # observable machinery would only add per-substep work.
        return {}

    def _check_success(self):
        return False

    def reward(self, action=None):
        return 0.0


def _no_robot_only_model(robot_model, mujoco_model=None) -> None:
    """`RobotModel.set_mujoco_model` without compiling the robot alone: the model given, if any, is kept."""
    robot_model.mujoco_model = mujoco_model


def _drop_robot_visual_meshes(root: ET.Element) -> None:
    """Turn the robot's visual mesh geoms (geom group 1) of the MJCF `root` into tiny spheres in HIDDEN_GROUP, which no
    camera draws, and remove the meshes no geom uses any more. The geoms stay, under their names, for robosuite's
    references to them; they never collide (contype and conaffinity 0) and add no mass (every robot body has its
    own inertial), so the physics is unchanged."""
    for geom in root.iter("geom"):
        if (geom.get("name") or "").startswith(ROBOT_PREFIXES) and geom.get("group") == "1" and geom.get("type") == "mesh":
            for key in ("mesh", "material"):
                geom.attrib.pop(key, None)
            geom.set("type", "sphere")
            geom.set("size", "0.001")
            geom.set("group", str(HIDDEN_GROUP))
    used = {geom.get("mesh") for geom in root.iter("geom")}
    for asset in root.findall("asset"):
        for mesh in asset.findall("mesh"):
            if mesh.get("name") not in used:
                asset.remove(mesh)
