"""The scripted expert: plans pick-and-place steps from a task's goal and drives the hand through them.

It reads the simulator's true state (positions, sizes, regions) — privileged information a learned
policy never sees — and adds small seeded variations so that demonstrations differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from libero_ll.assets.categories import get_model
from libero_ll.bddl.spec import Predicate
from libero_ll.errors import LiberoError
from libero_ll.envs.placement import joint_target, owner_of
from libero_ll.experts.articulation import articulation_waypoints
from libero_ll.experts.skills import hand_down_rotation, nearest_equivalent_yaw, servo

EXPERT_VERSION = "scripted-expert 0.2"

# Heights are metres above the grasp or release point.
APPROACH_HEIGHT = 0.10
CARRY_CLEARANCE = 0.12
RELEASE_CLEARANCE = 0.012
CLOSE_STEPS = 8
OPEN_STEPS = 6
POS_TOL = 0.008
ROT_TOL = 0.08
# A waypoint the hand cannot reach exactly (an object in the way) is given up after this many steps.
WAYPOINT_BUDGET = 60


@dataclass
class PickPlace:
    """Move `obj` so that `goal` holds: pick it by its grasp hint and release it at the target."""

    obj: str
    goal: Predicate


@dataclass
class Articulate:
    """Drive one moving part (drawer, door, knob) so that `goal` (Open/Close/TurnOn/TurnOff) holds."""

    inst: str
    part: str
    kind: str
    goal: Predicate


def plan(goal_predicates: list[Predicate], instances: dict[str, str], holds=None) -> list:
    """Order the skills that make a conjunction of goal atoms hold.

    Goal atoms are handled in their order in the goal, with two rules: something that goes into a
    drawer or the microwave has that drawer or door opened first (if it is not open already), and a
    Close of that drawer or door in the goal comes after everything that goes into it. Atoms that
    already hold at planning time (`holds(atom)` true) are skipped, except placements.

    Args:
        goal_predicates: the goal's atoms.
        instances: instance → category of the task.
        holds: optional callable(Predicate) → bool telling what already holds.

    Raises:
        LiberoError: for goal predicates the expert cannot achieve (Up, Or, Not).
    """
    holds = holds or (lambda p: False)
    steps: list = []
    closes_later: list = []
    goal_closes = {(p.name, p.args) for p in goal_predicates if p.name == "close"}
    for p in goal_predicates:
        if p.name in ("on", "in"):
            opener = _container_part(p.args[1], instances)
            if opener is not None:
                inst, part, kind, atom_arg = opener
                open_atom = Predicate("open", (atom_arg,))
                if not holds(open_atom) and not any(isinstance(s, Articulate) and s.part == part and s.inst == inst for s in steps):
                    steps.append(Articulate(inst, part, kind, open_atom))
            steps.append(PickPlace(p.args[0], p))
        elif p.name in ("open", "close", "turnon", "turnoff"):
            if holds(p) and p.name != "close":
                continue
            inst, part, kind = joint_target(p, instances)
            step = Articulate(inst, part, kind, p)
            if p.name == "close" and ("close", p.args) in goal_closes:
                closes_later.append(step)
            else:
                steps.append(step)
        else:
            raise LiberoError(f"the scripted expert cannot achieve {p.name}({', '.join(p.args)}) yet")
    return steps + closes_later


def _container_part(where: str, instances: dict[str, str]):
    """(instance, part, kind, Open argument) when `where` is a region inside a drawer or behind a door."""
    split = owner_of(where, instances)
    if split is None:
        return None
    inst, region = split
    part = get_model(instances[inst]).control(region)
    if part is None or part.joint.kind == "knob":
        return None
    return inst, part.name, part.joint.kind, where


class ScriptedExpert:
    """A closed-loop scripted policy for one episode of one task.

    Args:
        env: a reset LiberoEnv (its simulator is read directly).
        rng: seeded generator for the per-demo variations (waypoint offsets, speed, action noise).
        noise: standard deviation of the Gaussian noise added to position actions.
    """

    def __init__(self, env, rng: np.random.Generator, noise: float = 0.02):
        self.env = env
        self.rng = rng
        self.noise = noise
        self.steps = plan(env.spec.goal_predicates(), env.spec.instances(), env.geometry.holds)
        self.speed = float(rng.uniform(0.45, 0.7))
        self._queue: list = []
        self._stage = 0
        self._counter = 0
        self._wp_steps = 0
        self._load(0)

    # ------------------------------------------------------------------ waypoints

    def _load(self, i: int) -> None:
        """Compute the waypoints of pick-and-place step i from the scene as it is now."""
        if i >= len(self.steps):
            self._queue = []
            return
        step = self.steps[i]
        if isinstance(step, Articulate):
            self._queue = articulation_waypoints(self.env, step.inst, step.part, step.kind, step.goal.name, self.rng)
            return
        env, g = self.env, self.env.geometry
        inst = env.spec.instances()
        model = get_model(inst[step.obj])
        if model.grasp is None:
            raise LiberoError(f"the scripted expert does not know how to grasp a {inst[step.obj]}")
        pos, rot = g.pos(step.obj), g.rot(step.obj)
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        c, s = math.cos(yaw), math.sin(yaw)
        off = np.array([c * model.grasp.offset[0] - s * model.grasp.offset[1], s * model.grasp.offset[0] + c * model.grasp.offset[1]])
        jitter = self.rng.uniform(-0.004, 0.004, size=2)
        bottom = pos[2] - model.half_size[2]
        grasp = np.array([pos[0] + off[0] + jitter[0], pos[1] + off[1] + jitter[1], bottom + model.grasp.height])
        hand_rot = hand_down_rotation(
            nearest_equivalent_yaw(yaw + model.grasp.across_yaw, env.robot_proprio()["ee_rot"])
        )
        # Where the object's bottom must end up, and hence where the hand goes (the grasp offset is kept).
        target_xy, bottom_z = self._target(step, model)
        place = np.array(
            [target_xy[0] + (grasp[0] - pos[0]), target_xy[1] + (grasp[1] - pos[1]), bottom_z + model.grasp.height]
        )
        carry_z = max(grasp[2], place[2]) + CARRY_CLEARANCE
        up = np.array([0, 0, 1.0])
        self._queue = [
            ("move", grasp + up * APPROACH_HEIGHT, hand_rot, -1.0),
            ("move", grasp, hand_rot, -1.0),
            ("hold", CLOSE_STEPS, hand_rot, 1.0),
            ("move", np.array([grasp[0], grasp[1], carry_z]), hand_rot, 1.0),
            ("move", np.array([place[0], place[1], carry_z]), hand_rot, 1.0),
            ("move", place, hand_rot, 1.0),
            ("hold", OPEN_STEPS, hand_rot, -1.0),
            ("move", place + up * APPROACH_HEIGHT, hand_rot, -1.0),
        ]

    def _target(self, step: PickPlace, model) -> tuple[np.ndarray, float]:
        g = self.env.geometry
        where = step.goal.args[1]
        jitter = self.rng.uniform(-0.006, 0.006, size=2)
        if where in g.body_of:
            below = get_model(self.env.spec.instances()[where])
            p = g.pos(where)
            return p[:2] + jitter, p[2] + below.half_size[2] + RELEASE_CLEARANCE
        region = g.site_region(where)
        if region is None:
            raise LiberoError(f"the scripted expert cannot find region {where!r}")
        bottom = region.center[2] - region.half[2]
        if step.goal.name == "in":
            return region.center[:2] + jitter, bottom + RELEASE_CLEARANCE + 0.02
        return region.center[:2] + jitter, region.center[2] + region.half[2] + RELEASE_CLEARANCE

    # ------------------------------------------------------------------ acting

    @property
    def done(self) -> bool:
        """True when every step has been carried out."""
        return self._stage >= len(self.steps)

    def act(self) -> np.ndarray:
        """The next action (7 numbers in [-1, 1])."""
        p = self.env.robot_proprio()
        pos, rot = p["ee_pos"], p["ee_rot"]
        while self._queue:
            kind, target, hand_rot, grip = self._queue[0]
            if kind == "hold":
                if self._counter < target:
                    self._counter += 1
                    return servo(pos, rot, pos, hand_rot, grip, self.speed)
                self._counter = 0
                self._queue.pop(0)
                continue
            err = np.linalg.norm(target - pos)
            rot_err = np.linalg.norm(_axis_angle(hand_rot @ rot.T))
            if (err > POS_TOL or rot_err > ROT_TOL) and self._wp_steps < WAYPOINT_BUDGET:
                self._wp_steps += 1
                a = servo(pos, rot, target, hand_rot, grip, self.speed)
                a[:3] += self.rng.normal(0.0, self.noise, size=3)
                return np.clip(a, -1.0, 1.0)
            self._wp_steps = 0
            self._queue.pop(0)
        if self._stage < len(self.steps):
            self._stage += 1
            self._load(self._stage)
            if self._queue:
                return self.act()
        # Everything is done: keep the hand still and open.
        return np.array([0, 0, 0, 0, 0, 0, -1.0])


def _axis_angle(rot: np.ndarray) -> np.ndarray:
    from libero_ll.envs.env import rotation_to_axis_angle

    return rotation_to_axis_angle(rot)
