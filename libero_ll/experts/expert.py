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
from libero_ll.experts.articulation import (
    HAND_BOTTOM_ABOVE_GRIP,
    _body,
    _site,
    articulation_waypoints,
    faces_robot,
    hand_clearance,
)
from libero_ll.experts.push import PUSH_BACKOFF, PUSH_HEIGHT, PUSH_INSIDE, PUSH_INSIDE_LOWER, push_waypoints
from libero_ll.experts.shelf import (
    CENTRED,
    HANG_TILT,
    LAYER_CLEARANCE,
    entry_depth,
    find_layer,
    footprint_extent,
    insert_waypoints,
    is_layer,
    pitched_rotation,
    push_in_waypoints,
)
from libero_ll.experts.tip_over import standing_spot, stands_too_tall, tip_over_waypoints
from libero_ll.experts.skills import (
    PART_STANDS_CLOSED,
    POS_SCALE,
    clearances,
    footprints,
    hand_and_wrist,
    highest_top_near,
    is_round,
    hand_down_rotation,
    nearest_equivalent_yaw,
    servo,
    settled_wrist_safe_yaw,
    stands_closed,
    standing_out,
    wrap_angle,
    wrist_safe_turn,
    wrist_safe_yaw,
)

# Changes whenever the demos it writes change (its own logic, or the scenes it acts in: 0.9 came with
# the objects' lifted walls and multi-point convex contacts; 0.10 keeps a round wall's grasp hint
# whenever it is clear enough; 0.11 lets go of a thing put into a container 1.2 cm above its floor, not 3.2;
# 0.12 does not grasp where the open outer finger would come down on something beside the object; 0.13 adds
# noise to the rotation actions of moves, ROT_NOISE; 0.14 acts under the lean controller compiled, whose torques
# round differently, so that contacts and the demos drift apart from 0.13's over an episode; 0.15 holds an object
# beyond FAR_REACH at its side, the hand pitched where it is low, and draws it in as it lifts; 0.16 passes the
# points between the legs of a long move without stopping ("via"), gives up a waypoint it has stopped closing in
# on (STALL_STEPS) and turns a bowl put into a drawer so that the hand is further out, DRAWER_HAND_TURN); 0.17 closes
# the fingers on a mug until they stop (`Grasp.close_until_still`), turns the hand before it pitches to push
# something further into a layer, gives up a stalled waypoint of such a push too, turns it the way that leaves
# the wrist room for the pitch (PUSH_WRIST_WIND), and does not pinch a round wall where the hand's housing would
# come down on something tall beside it (HOUSING_OVERLAP_PENALTY); 0.18 pitches the hand for an object beyond
# FAR_REACH at any height, comes to it from nearer the base where it stands high (FAR_STAGE), and lifts it only
# FAR_LIFT); 0.19 shuts an open drawer above one it is to pull open (`_with_drawers_above_shut`), ranks a pinch
# lower where the hand's housing would come down on something tall beside the place it puts the object on, and
# pitches the hand away from something tall beside a grasp (WRIST_PITCH); 0.20 turns an object put down on a region
# drawn on a surface so that the hand's housing clears what stands tall beside the place (`_housed_turn`), grasps
# the other way round where the arm, settling, would drive its last joint to its stop (`settled_wrist`), and carries
# an object held by its wall higher by its droop (WALL_HANG_TILT); 0.21 puts an object into a region beside others
# at the place with room nearest the robot's base (`free_spot`), not on whichever side had a few millimetres more.
# 0.22 is 0.21's code on a plate that slides (friction 0.6 governing its contacts, libero_ll/assets/objects.py): its
# demos of every task with a plate differ, and a file of 0.21 gets the stale-demo note. 0.22 also opens a door that
# does not face the robot (`articulation.door`) where it failed before (LIBERO's `KITCHEN_SCENE7` microwave, converted:
# 0 of 10 episodes); the shipped tasks' doors face the robot, and their demos are those of 0.22 before. It pushes a
# plate from inside its rim where the hand has no room behind it (`_push_from_inside`: LIBERO-Goal's plate beside a
# cabinet, 0 of 5 episodes before); the shipped task that pushes a plate has room (50 of 50 demos pushed from behind
# as before).
# 0.23 keeps the hand's housing, coming down to grasp, clear of what stands out of a fixture's box: a cabinet's
# closed drawers' handles, the microwave's sill and its closed door's handle, 4 to 6 cm out (`Model.standing_out`,
# `skills.standing_out`): beside LIBERO-Spatial's cabinet the housing came down on a handle, short of the bowl's rim,
# and the fingers closed on nothing. Demos of scenes with a cabinet or a microwave may differ; the quickstart's are
# those of 0.22.
# 0.24 puts an object down in a range drawn on a surface where its footprint has room (`_room_in_range`): a range
# drawn beside something for a smaller model of it (LIBERO-Long's "to the right of the plate", drawn for a plate 14 cm
# across, ours being 20) put the pudding on the plate's rim. Where the range's middle has room, as in the shipped
# tasks, the object goes there as before.
# 0.25 picks a thing held by its wall (a bowl) out of a container whose walls leave the open outer finger no room
# beside it (a bowl in the drawer of LIBERO's 22 cm cabinet, 15 cm deep inside) with the hand further in
# (`room_inside`, FINGER_REACH): the outer finger had come down on the drawer's wall and the fingers closed above
# the rim. A drawer that slides out less than DRAWER_PULL_TO is pulled to 5 mm short of its stop (`articulation.drawer`).
# 0.26 counts a door standing open as in the way of the hand, like an open drawer (`_open_doors`: LIBERO's microwave,
# converted, opens its door over a mug, on whose top edge the hand came down); gives up a stalled waypoint of carrying
# an object into a layer (STALL_STEPS); pushes a door shut below its top edge where the door is low
# (DOOR_PUSH_BELOW_TOP); and picks a book to be carried into a layer whose open face is beside the robot with the hand
# pitched away from the robot, not towards it (`_into_layer`: LIBERO's shelf, converted, faces sideways; pitched
# towards the robot, the Panda's last joint went to its stop).
# 0.27 carries an object into a layer without passing over the layer's fixture where the way to the layer's entry
# only leaves the fixture further behind (`_left_behind`: LIBERO's frying pan, converted, beside the shelf it goes
# into, had been lifted over the shelf's top at the edge of the arm's reach).
# 0.28 pushes a drawer shut with fingers that come down nearer its handle where something stands in front of it
# (`articulation.push_approach`: a bowl 3 cm in front of LIBERO's bottom drawer, converted), and crosses to the
# handle above what stands in the way (`articulation.pass_over`: the wine bottle beside it).
# 0.29 leaves out of the carrying height any fixture that the way to the place only leaves further behind, as 0.27 did
# for a layer's own fixture (`_left_behind`: LIBERO's frying pan, converted, carried from beside a shelf onto the stove,
# was lifted over the shelf's top).
# 0.30 may hold a box lying flat up to BODY_SHIFT off its middle along the fingers' pads (`pinch_candidates`), where
# held at its middle the hand's housing would come down on something beside it (LIBERO's cream cheese, converted,
# beside the tomato sauce).
# 0.31 pushes a thing standing on the table under or beside an open drawer out from under it, from behind or, a bowl,
# from inside its rim, where no pinch leaves the hand's housing room to come down or its wrist clear of the drawer
# (`Nudge`, `_out_from_under`: LIBERO-90's KITCHEN_SCENE10 bowl, converted); an open drawer over a thing is no longer
# taken for a container it stands in.
# 0.32 crosses to a drawer's handle that it pulls open above anything tall standing near its way (`pass_over`, as it
# does to push one shut), rising where it is first (LIBERO-Goal's wine bottle, converted, beside the cabinet whose
# middle drawer it opens: the hand knocked it over against the drawer, which then stuck).
EXPERT_VERSION = "scripted-expert 0.32"

# An object put into a region beside others (`free_spot`): the gap (metres) that is room enough, and the most
# gap that counts when no place nearer the robot has that room.
SPOT_CLEARANCE = 0.02
SPOT_CLEARANCE_CAP = 0.03
# An object put down in a range drawn on a surface (`_room_in_range`): the gap from what stands there that is room
# enough where the range's middle falls, the most gap that counts otherwise, and how far inside the range's edges
# the centre is put then (metres).
RANGE_ROOM = 0.01
RANGE_ROOM_CAP = 0.02
RANGE_EDGE = 0.005

# Heights are metres above the grasp or release point.
APPROACH_HEIGHT = 0.10
CARRY_CLEARANCE = 0.12
RELEASE_CLEARANCE = 0.012
CLOSE_STEPS = 8
# An object whose grasp hint asks for it (`Grasp.close_until_still`) is held with fingers that go on closing after
# CLOSE_STEPS while they closed by more than CLOSE_STILL (metres of opening) over the last step, for at most
# CLOSE_MAX_STEPS in all.
CLOSE_STILL = 0.001
CLOSE_MAX_STEPS = 16
OPEN_STEPS = 6
POS_TOL = 0.008
ROT_TOL = 0.08
# A "via" waypoint is one the hand passes on its way to the next (a corner-free stretch of a longer path cut
# into legs): it counts as reached this near, so that the hand does not slow to a stop at every leg.
VIA_TOL = 0.025
VIA_ROT_TOL = 0.3
# Noise added to the rotation actions of moves, action units (0.05 = 0.025 rad a step), as the position
# actions get theirs: the demos then show the hand turned a little off and turned back. A policy that
# samples its actions turns the hand by a random amount every step; from demos that never showed such a
# turn corrected, those turns added up (the wrist camera looking at the walls) and a cpu-size policy's
# sampled success on libero_object's soup was 0.20 where its most likely actions made 0.95; with this
# noise in the demos, 0.80 and 1.00 (docs/policies.md, "Sampled actions and the hand's turn").
ROT_NOISE = 0.05
# Only while the hand is to point straight down (the cosine of its tilt above this): the hand pitched into a
# shelf's compartment or a microwave needs its angle (with the noise there too, the book under STUDY_SCENE4's
# shelf went from 20/20 to 11/20 and the mug into KITCHEN_SCENE6's microwave to 17/20).
STRAIGHT_DOWN = 0.999
# A carried object's bottom passes this far above whatever stands near its path, metres, but the
# hand goes no higher than MAX_CARRY_ABOVE_BASE above the robot's base (out of reach beyond).
PASS_OVER = 0.03
MAX_CARRY_ABOVE_BASE = 0.45
# Objects held more than OFF_CENTRE metres from their centre of mass are carried at this speed (units of
# position action).
OFF_CENTRE = 0.08
CARRY_SPEED_OFF_CENTRE = 0.25
# The open hand moving to an object passes this far (metres, hand centre) above whatever stands near
# its path, within HAND_HALF_WIDTH of it.
TRANSIT_CLEARANCE = 0.07
HAND_HALF_WIDTH = 0.08
# A push comes down behind the object only where the closed fingers keep PUSH_ROOM + PUSH_FINGERS (metres, the
# fingers' half width) from everything reaching them, and the hand's footprint (`articulation.hand_clearance`) keeps
# PUSH_ROOM from everything reaching its housing. Else a plate is pushed from inside.
PUSH_ROOM = 0.01
PUSH_FINGERS = 0.02
# A drawer pulled out more than this (metres) is in the way of the hand and arm like any object; its
# walls stand this far outside its inner region.
DRAWER_STANDS_OUT = PART_STANDS_CLOSED["drawer"]
DRAWER_WALL = 0.02
# An object put into a drawer stays this far from the drawer's front wall, metres.
DRAWER_EDGE_GAP = 0.008
# Put into a drawer, an object held by its wall (a bowl) is turned by this much more than the hand closing along
# the drawer's front would need, radians, the way that puts the hand further out of the drawer: closing along the
# front, the hand is over the bowl's centre line, and into libero_10's bottom drawer the Panda's wrist (link 7,
# 11 cm above the fingers) then met the top drawer's handle. Expert 0.15 stopped 11 cm above the place and let go
# there, the bowl's far rim came down on the middle drawer's handle, and in 3 episodes of 20 it lay tilted by 27
# to 42 degrees and jammed the drawer. Turned by 0.35 rad, the pinch (5.8 cm from the bowl's centre) and the hand
# are 2 cm further out, and the hand puts the bowl down where it was meant to go.
DRAWER_HAND_TURN = 0.35
# A grasp this far (metres) from the object's centre, seen from above, holds it by its wall.
WALL_GRASP = 0.02
# A door that does not face the robot is opened in up to 1 + DOOR_TRIES steps (see `_with_doors_pushed_open`).
DOOR_TRIES = 2
# A waypoint the hand cannot reach exactly (an object in the way) is given up after this many steps,
# or after twice the steps a longer move takes: the controller moves the hand at about TRACKING of
# the speed an action asks for (its stiffness against its damping), less with a load.
WAYPOINT_BUDGET = 60
TRACKING = 0.3
# Working a fixture's part (a drawer, door or knob), a waypoint the hand has stopped closing in on is given up
# sooner: after STALL_STEPS steps over which neither its distance to the waypoint shrank by STALL_PROGRESS (metres)
# nor its angle by STALL_TURN (radians). Expert 0.15 spent the whole budget there, the hand pressing on a part at
# its stop or held at the edge of the arm's reach: 60 steps of standing still in a demo (libero_10's microwave door,
# pushed from the edge of the Panda's reach, 1.5 cm short of two waypoints for 120 steps, and the episode over the
# 600-step cap). The same holds for a push of an object further into a layer (`SlideIn`): in libero_10's microwave
# task the closed fingers stood still 2 cm short of the push's end for 40 steps. Carrying an
# object, the whole budget is kept: a held object caught on something can come free
# (given up after 12 steps there too, 2 episodes of libero_object's butter and 1 of its bbq sauce failed); but not
# once it is carried into a layer (`insert_waypoints`), where the hand stops at the board over the layer (a mug
# carried into LIBERO's microwave, converted, 19 cm tall: three waypoints 5 cm beyond that board's edge, 180 steps
# standing still and the episode over the cap).
STALL_STEPS = 12
STALL_PROGRESS = 0.003
STALL_TURN = 0.03
# A push into a layer with the hand pitched forward (`push_in_waypoints`) winds the Panda's last joint on by about
# this much (radians; measured 0.7 for a book under a shelf, 1.3 to 1.4 for a mug in the microwave). Of two ways
# to turn the hand that differ by less than PUSH_TURN_TIE (radians), the expert takes the one that leaves that
# joint nearer the middle of its range: libero_10's microwave task had wound it to its stop, and turning back
# from there the hand swung 25 cm off its way.
PUSH_WRIST_WIND = 1.0
PUSH_TURN_TIE = 0.5
# An object whose centre lies more than FAR_REACH (metres, seen from above) from the robot's base is at the
# edge of the Panda's reach. Pinched on its far side with the hand straight down, the arm straightens to
# its elbow's stop, where the controller can no longer draw the hand back (the black bowls on libero_spatial's
# stove and wooden cabinet, 0.83 m out: 18/20 episodes each, 321 and 369 steps on average). There:
# - a round wall is pinched at its side seen from the base, not on its far side;
# - the hand is pitched FAR_PITCH radians outwards about the closing direction, so that the wrist trails nearer
#   the base (the stove's bowl: 20/20 in 170 steps on average; 0.45 rad left the elbow straight in 2 of 20);
# - from FAR_HIGH above the base up (the cabinet's bowl, at the shoulder's height), the open hand first comes to
#   a point FAR_STAGE nearer the base than its approach, at the approach's height, and only then goes out to it.
#   Sent straight from the start, the arm overshot as it turned to the pitch and its elbow straightened in 3 of
#   20 episodes; with the hand pointing down instead, the approach 10 cm above the bowl was out of reach and the
#   hand waited out two budgets below it (365 steps on average). Staged 0.15 m in, the wrist's pitch joint
#   (joint 6) reached its stop in 7 of 20; at FAR_STAGE it stays 0.25 rad short of it;
# - the fingers close for FAR_CLOSE_STEPS (a pitched hand lifting before they hold lets the wall slip);
# - the lift takes the object only FAR_LIFT above where it was (or over what it must pass, and CARRY_CLEARANCE
#   above its place), not CARRY_CLEARANCE: 12 cm up at the shoulder's height, the arm straightened to the
#   elbow's stop as it carried the cabinet's bowl, and the hand let go of it 23 cm above the plate;
# - the lift draws the object FAR_DRAW_IN towards the base as it rises, bending the elbow;
# - a pitched hand turns back to pointing down as it carries the object to its place (the bowl then hangs
#   tilted until it is put down): pitched all the way, the last joint wound to its stop putting the
#   cabinet's bowl down near the base, and the stove's bowl took 232 steps on average.
FAR_REACH = 0.76
FAR_PITCH = 0.65
FAR_HIGH = 0.15
FAR_STAGE = 0.10
FAR_LIFT = 0.05
FAR_CLOSE_STEPS = 16
FAR_DRAW_IN = 0.08
# The wrist (link 7) is wider than the hand's housing that `hand_clearance` models: about WRIST_RADIUS round
# the hand's axis from WRIST_ABOVE_GRIP above the grip up. A grasp with something that tall within that
# reach (an open drawer beside the object) pitches the hand by WRIST_PITCH about its closing direction,
# fingertips towards the obstacle, so that the wrist trails away from it. Pointing straight down beside
# the drawer it had just opened, the wrist came down on the drawer in 2 of 5 episodes of a generated
# "open the top drawer and put the cream cheese in it" and the fingers closed on nothing; pitched, 10 of 10.
WRIST_RADIUS = 0.07
WRIST_ABOVE_GRIP = 0.10
WRIST_PITCH = 0.35
# An object held by its wall (a bowl pinched at its rim, WALL_GRASP or more from its centre) hangs up to this much
# off level while carried, radians, and slips down between the fingers a little: its far side is lower. Carried
# beside KITCHEN_SCENE9's shelf with its bottom planned PASS_OVER (3 cm) above the shelf's top, the white bowl's
# lowest point passed 0.3 cm above it to 1.7 cm into it (tilted 6 to 12 degrees), and knocked off the board, the
# bowl fell out of the hand (a generated "turn on the stove and put the white bowl on it": 1 of 5 episodes failed).
WALL_HANG_TILT = 0.2
# Put down on a region drawn on a surface, an object is turned in steps of this much (radians) until the hand's
# housing clears what stands tall beside the place (`_housed_turn`).
PLACE_TURN_STEP = math.pi / 12


@dataclass
class PickPlace:
    """Move `obj` so that `goal` holds: pick it by its grasp hint and release it at the target."""

    obj: str
    goal: Predicate


@dataclass
class Push:
    """Slide `obj` along the surface so that `goal` (On a region) holds: for things the hand cannot pick up."""

    obj: str
    goal: Predicate


@dataclass
class Nudge:
    """Push `obj` along the table to `to` (world x, y), from behind or, `inside`, from inside its rim with the finger
    pads `height` above the table: out from under an open drawer (`ScriptedExpert._out_from_under`)."""

    obj: str
    to: np.ndarray
    inside: bool
    height: float


@dataclass
class SlideIn:
    """Push `obj`, put down in the mouth of a shelf's layer, further in until `goal` (In/On that layer) holds."""

    obj: str
    goal: Predicate


@dataclass
class TipOver:
    """Push `obj`, left standing at one end of a container too low for it, over along the container so that `goal` (In) holds."""

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

    Goal atoms are handled in their order in the goal, with these rules:
    - something that goes into a drawer or the microwave has that drawer or door opened first (if
      it is not open already);
    - a Close in the goal of a drawer or door that something goes into comes after everything that
      goes into it (other Close atoms keep their place);
    - an object put on another object that is itself moved by the goal is put there after that one
      has been moved (stack on the bowl once the bowl is in the tray);
    - an object the hand cannot pick up (no grasp hint, a plate) is pushed onto its target;
    - an object put into a layer of a shelf or the microwave (a region with a board over it) is then pushed
      further in, if it is not in far enough;
    - atoms that already hold at planning time (`holds(atom)` true) are skipped, except placements
      and Close.

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
    placements = [p for p in goal_predicates if p.name in ("on", "in")]
    filled = set()
    for p in placements:
        opener = _container_part(p.args[1], instances)
        if opener is not None:
            filled.add(opener[:2])
    for p in _placements_in_order(goal_predicates):
        if p.name in ("on", "in"):
            opener = _container_part(p.args[1], instances)
            if opener is not None:
                inst, part, kind, atom_arg = opener
                open_atom = Predicate("open", (atom_arg,))
                if not holds(open_atom) and not any(isinstance(s, Articulate) and s.part == part and s.inst == inst for s in steps):
                    steps.append(Articulate(inst, part, kind, open_atom))
            graspable = get_model(instances[p.args[0]]).grasp is not None
            steps.append(PickPlace(p.args[0], p) if graspable or p.name == "in" else Push(p.args[0], p))
            if isinstance(steps[-1], PickPlace) and is_layer(p.args[1], instances):
                steps.append(SlideIn(p.args[0], p))
        elif p.name in ("open", "close", "turnon", "turnoff"):
            if holds(p) and p.name != "close":
                continue
            inst, part, kind = joint_target(p, instances)
            step = Articulate(inst, part, kind, p)
            if p.name == "close" and (inst, part) in filled:
                closes_later.append(step)
            else:
                steps.append(step)
        else:
            raise LiberoError(f"the scripted expert cannot achieve {p.name}({', '.join(p.args)}) yet")
    return steps + closes_later


def _placements_in_order(goal_predicates: list[Predicate]) -> list[Predicate]:
    """The goal's atoms with each placement onto a moved object after the placement of that object."""
    moved = {p.args[0]: p for p in goal_predicates if p.name in ("on", "in")}
    out: list[Predicate] = []

    def add(p: Predicate, seen: tuple = ()) -> None:
        if p in out or p in seen:
            return
        if p.name in ("on", "in") and p.args[1] in moved:
            add(moved[p.args[1]], seen + (p,))
        out.append(p)

    for p in goal_predicates:
        add(p)
    return out


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
        rot_noise: standard deviation of the Gaussian noise added to rotation actions (ROT_NOISE).
    """

    def __init__(self, env, rng: np.random.Generator, noise: float = 0.02, rot_noise: float = ROT_NOISE):
        self.env = env
        self.rng = rng
        self.noise = noise
        self.rot_noise = rot_noise
        steps = plan(env.spec.goal_predicates(), env.spec.instances(), env.geometry.holds)
        self.steps = self._with_doors_pushed_open(self._with_tip_overs(self._with_drawers_above_shut(steps)))
        self.speed = float(rng.uniform(0.45, 0.7))
        self._queue: list = []
        self._stage = 0
        self._counter = 0
        self._hold_pos: np.ndarray | None = None  # where a hold keeps the hand: the last waypoint
        self._last_opening: float | None = None  # the fingers' opening at the last step of a close
        self._wp_steps = 0
        self._wp_budget = WAYPOINT_BUDGET
        self._wp_errors: list[tuple[float, float]] = []  # the hand's distance and angle to its waypoint, per step
        self._stall_within = 0  # with this many waypoints or fewer left, a stalled one is given up (see STALL_STEPS)
        self._load(0)

    def _with_doors_pushed_open(self, steps: list) -> list:
        """The plan with each Open of a door that does not face the robot tried DOOR_TRIES more times: each drags
        the door ajar by its handle, or, ajar far enough, pushes it open from inside, or, open, does nothing
        (`articulation.door`)."""
        out = []
        for step in steps:
            out.append(step)
            if isinstance(step, Articulate) and step.kind == "door" and step.goal.name == "open":
                _, rot = _body(self.env, f"{step.inst}_{step.part}")
                if not faces_robot(rot[:, 0]):
                    out += [step] * DOOR_TRIES
        return out

    def _with_tip_overs(self, steps: list) -> list:
        """The plan with a TipOver after each placement into a container too low for the object to stand in (see `tip_over`)."""
        out = []
        for step in steps:
            out.append(step)
            if isinstance(step, PickPlace) and self._too_tall_for(step):
                out.append(TipOver(step.obj, step.goal))
        return out

    def _with_drawers_above_shut(self, steps: list) -> list:
        """The plan with a Close of every open drawer above a drawer that is to be pulled open, first.

        A drawer pulled out stands over the handles of the drawers below it: the hand, coming down in
        front of a lower handle, lands on it (and closes on the upper drawer's front, or on nothing).
        Drawers whose Open the goal asks for are left open.
        """
        env, g = self.env, self.env.geometry
        inst = env.spec.instances()
        wanted = {p.args[0] for p in env.spec.goal_predicates() if p.name == "open"}
        out, shut = [], set()
        for step in steps:
            if isinstance(step, Articulate) and step.kind == "drawer" and step.goal.name == "open":
                model = get_model(inst[step.inst])

                def handle_z(part: str) -> float:
                    return float(_site(env, f"{step.inst}_{part}_handle")[0][2])

                for region_name, part_name in model.controls:
                    full = f"{step.inst}_{region_name}"
                    if (part_name == step.part or model.part(part_name).joint.kind != "drawer" or full in wanted
                            or (step.inst, part_name) in shut
                            or g.joint_value(step.inst, part_name) < DRAWER_STANDS_OUT
                            or handle_z(part_name) <= handle_z(step.part)):
                        continue
                    out.append(Articulate(step.inst, part_name, "drawer", Predicate("close", (full,))))
                    shut.add((step.inst, part_name))
            out.append(step)
        return out

    def _too_tall_for(self, step) -> bool:
        """Whether the object of an In step, standing in its container, would stick out of the container's region."""
        region = self._container(step)
        return region is not None and stands_too_tall(get_model(self.env.spec.instances()[step.obj]), region)

    # ------------------------------------------------------------------ waypoints

    def _load(self, i: int) -> None:
        """Compute the waypoints of pick-and-place step i from the scene as it is now."""
        if i >= len(self.steps):
            self._queue = []
            return
        step = self.steps[i]
        self._stall_within = 0
        if isinstance(step, Articulate):
            self._queue = articulation_waypoints(self.env, step.inst, step.part, step.kind, step.goal.name, self.rng)
            return
        env, g = self.env, self.env.geometry
        inst = env.spec.instances()
        model = get_model(inst[step.obj])
        if isinstance(step, SlideIn):
            self._queue = [] if g.holds(step.goal) else self._slide_in(step, model)
            return
        if isinstance(step, TipOver):
            self._queue = self._tip_over(step, model)
            return
        if isinstance(step, Nudge):
            self._queue = self._nudge(step, model)
            return
        if isinstance(step, Push):
            target_xy, bottom_z = self._target(step, model)
            pos = g.pos(step.obj)
            d = target_xy - pos[:2]
            yaw = math.atan2(g.rot(step.obj)[1, 0], g.rot(step.obj)[0, 0]) - math.atan2(d[1], d[0])
            reach = abs(math.cos(yaw)) * model.half_size[0] + abs(math.sin(yaw)) * model.half_size[1]
            surface = pos[2] - model.half_size[2]
            along = math.atan2(d[1], d[0])
            behind = pos[:2] - np.array([math.cos(along), math.sin(along)]) * (reach + PUSH_BACKOFF)
            if self._push_from_inside(step.obj, model, behind, along, surface):
                self._queue = push_waypoints(pos[:2], target_xy, model.half_size[0] - PUSH_INSIDE, surface,
                                             env.robot_proprio()["ee_rot"], inside=True)
            else:
                self._queue = push_waypoints(pos[:2], target_xy, reach, surface, env.robot_proprio()["ee_rot"])
            return
        if model.grasp is None:
            raise LiberoError(f"the scripted expert does not know how to grasp a {inst[step.obj]}")
        pos, rot = g.pos(step.obj), g.rot(step.obj)
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        bottom = pos[2] - model.half_size[2]
        grasp_z = bottom + model.grasp.height
        # What the fingers could meet (tops reaching their height) and, further out along the closing
        # direction, what the hand's housing could meet (tops reaching its bottom).
        obstacles = self._obstacles(step.obj, grasp_z)
        under_hand = [o for o in obstacles if o[4] >= grasp_z + HAND_BOTTOM_ABOVE_GRIP]
        # An open drawer standing over the object (its floor above the object's top) is in the way, wherever the
        # object's centre lies, not a container it stands in.
        over_it = self._drawers_over(pos[2] + model.half_size[2])

        def beside_it(o) -> bool:
            return clearance(pos[:2], [o]) > 0.0 or _key(o) in over_it

        # What the open outer finger could come down on: not a container the object stands in (a drawer
        # around a bowl), whose floor lies below the fingers.
        beside = [o for o in obstacles if beside_it(o)]
        # The walls of a container the object stands in whose top reaches the fingers (a bowl in an open drawer):
        # the outer finger must come down inside them.
        around_it = [o for o in obstacles if not beside_it(o) and o[4] >= grasp_z]
        # What the hand's housing could come down on: anything beside the object whose top reaches the housing's
        # bottom (HAND_BOTTOM_ABOVE_GRIP above the fingers), anywhere under the housing (HAND_HALF_LENGTH along
        # the closing direction either side of the pinch). Pinched where it came down on the side wall of an open
        # drawer, libero_goal's bowl was not reached: the hand stopped 18 cm above it and closed on nothing.
        # A fixture's closed drawers' handles count here (`skills.standing_out`): beside LIBERO-Spatial's
        # cabinet, the housing came down on a handle 6 cm out of the cabinet's box, short of the bowl's rim.
        around = [o for o in self._obstacles(step.obj, grasp_z, parts=True)
                  if o[4] >= grasp_z + HAND_BOTTOM_ABOVE_GRIP and beside_it(o)]
        best = None
        base = np.asarray(env.arena.robot_base[:2])
        layer = find_layer(env, step.goal.args[1])
        from_base = pos[:2] - base
        far = layer is None and float(np.linalg.norm(from_base)) > FAR_REACH
        from_base = from_base / max(float(np.linalg.norm(from_base)), 1e-9)
        # Where the hand will put the object down (not into a layer or a container, whose fit turns the object):
        # a pinch whose hand's housing would come down there on something tall beside the place (a cabinet
        # beside the bowl stacked on) ranks below one that leaves it room.
        place_check = None
        if layer is None and not far and step.goal.name == "on" and step.goal.args[1] in g.body_of:
            tgt = g.pos(step.goal.args[1])
            below = get_model(inst[step.goal.args[1]])
            place_grip_z = tgt[2] + below.half_size[2] + RELEASE_CLEARANCE + model.grasp.height
            place_around = [o for o in self._obstacles({step.obj, step.goal.args[1]}, place_grip_z + HAND_BOTTOM_ABOVE_GRIP)
                            if o[4] >= place_grip_z + HAND_BOTTOM_ABOVE_GRIP]
            place_check = (tgt[:2], place_around)
        for k, off, across in pinch_offsets(inst[step.obj], model, pos[:2], yaw, base):
            radial = np.array([math.cos(yaw + across), math.sin(yaw + across)])
            point = pos[:2] + off
            # The hand is 20 cm wide along the closing direction: look a little beyond the pinch too.
            outward = radial * np.sign(radial @ off)
            outer = point + outward * 0.05
            clear = min(clearance(point, obstacles, rounded=True), clearance(outer, under_hand, rounded=True))
            score = min(clear, GRASP_CLEARANCE)
            # The open outer finger comes down beside the wall: on anything under it (a tray's wall
            # beside a bowl), the hand stops short of the grasp and the fingers close on nothing.
            finger_room = clearance(point + outward * FINGER_OUT, beside, rounded=True) - FINGER_RADIUS
            if around_it:
                finger_room = min(finger_room, room_inside(point, outward, around_it) - FINGER_REACH)
            if finger_room < 0.0:
                score = finger_room
            housed = hand_clearance(point, yaw + across, around) > 0.0
            if place_check is not None and place_check[1]:
                housed = housed and hand_clearance(place_check[0] + off, yaw + across, place_check[1]) > 0.0
            if not housed:
                score = min(score, -HOUSING_OVERLAP_PENALTY)
            if far:
                # Of the pinches clear enough, the one most to the side (see FAR_REACH).
                side = 1.0 - abs(float(off @ from_base)) / max(float(np.linalg.norm(off)), 1e-9)
                score = side if clear >= HINT_CLEARANCE and finger_room >= 0.0 and housed else score - 1.0
                if best is None or score > best[0]:
                    best = (score, off, across, 0.0)
                continue
            if k == 0 and layer is None and clear >= HINT_CLEARANCE and finger_room >= 0.0 and housed:
                # The hint wins whenever it is clear enough: a choice by the most clearance flips
                # between two sides of a round wall as an object moves by a centimetre, and demos
                # that grasp a bowl on either side for the same look of the scene cannot be learnt.
                best = (score, off, across, 0.0)
                break
            # Going into a layer the object is turned so that the hand is behind it (see
            # `_into_layer`): of equally clear pinches, the one already facing out of the layer
            # needs the least turn (a half turn winds the Panda's wrist from one stop to the other).
            facing = -float(off @ layer.inward) / max(float(np.linalg.norm(off)), 1e-9) if layer is not None else 0.0
            if best is None or score > best[0] + 1e-9 or (score > best[0] - 1e-9 and facing > best[3] + 1e-9):
                best = (score, off, across, facing)
        nudged = i > 0 and isinstance(self.steps[i - 1], Nudge) and self.steps[i - 1].obj == step.obj
        drawers = [o for o in around if _key(o) in over_it]
        if drawers and layer is None and not nudged and not self._housed_at(step.obj, model, pos[:2], yaw, around, drawers):
            nudge = self._out_from_under(step.obj, model, pos, yaw, around, drawers)
            if nudge is not None:
                self.steps.insert(i, nudge)
                self._load(i)
                return
        _, off, across, _ = best
        jitter = self.rng.uniform(-0.004, 0.004, size=2)
        grasp = np.array([pos[0] + off[0] + jitter[0], pos[1] + off[1] + jitter[1], grasp_z])
        if around_it and float(np.linalg.norm(off)) >= WALL_GRASP:
            # In a container too tight for the open outer finger beside the wall (a bowl in LIBERO's 22 cm
            # cabinet's drawer, 15 cm deep inside), the hand comes down that much further in, the inner finger
            # inside the object; closing, the outer finger pushes the wall in until both pads hold it.
            radial = np.array([math.cos(yaw + across), math.sin(yaw + across)])
            outward = radial * np.sign(radial @ off)
            short = FINGER_REACH - room_inside(grasp[:2], outward, around_it)
            if short > 0.0:
                grasp[:2] -= outward * min(short, FINGER_SHIFT_MAX)
        close_dir = nearest_equivalent_yaw(yaw + across, *hand_and_wrist(env))
        if not far and layer is None:
            # Reckoned from the joint as it stands, which the arm settling can undo (see `settled_wrist`).
            close_dir = settled_wrist_safe_yaw(close_dir, base, grasp[:2])
        hand_rot = hand_down_rotation(close_dir)
        pointing = from_base - hand_rot[:2, 0] * float(from_base @ hand_rot[:2, 0])
        if far and np.linalg.norm(pointing) > 0.7:
            hand_rot = pitched_rotation(close_dir, pointing / np.linalg.norm(pointing), FAR_PITCH)
        elif layer is None:
            # The wrist (link 7, about WRIST_RADIUS round the hand's axis from WRIST_ABOVE_GRIP up) would come down on
            # something tall beside the grasp (an open drawer beside the object): the hand is pitched WRIST_PITCH
            # about its closing direction, fingertips towards it, so that the wrist trails away from it.
            tall = [o for o in obstacles if o[4] >= grasp_z + WRIST_ABOVE_GRIP and clearance(pos[:2], [o]) > 0.0]
            near = [o for o in tall if clearance(grasp[:2], [o]) < WRIST_RADIUS]
            if near:
                o = min(near, key=lambda o: clearance(grasp[:2], [o]))
                along = hand_rot[:2, 0]
                to = np.asarray(o[0]) - grasp[:2]
                to = to - along * float(to @ along)
                if np.linalg.norm(to) > 1e-6:
                    hand_rot = pitched_rotation(close_dir, to / np.linalg.norm(to), WRIST_PITCH)
        # Held at its centre (a standing book), an object is not slid under a board (see `shelf`): On a
        # layer, it is put down from above like anywhere else, which the hand can only do on the
        # fixture's top; On(layer) holds there too (the region reaches ON_REGION_MAX_HEIGHT above it).
        centred = float(np.hypot(*(grasp[:2] - pos[:2]))) < CENTRED
        if layer is not None and not (centred and step.goal.name == "on"):
            self._queue = self._into_layer(step, model, layer, grasp, hand_rot)
            return
        # Where the object's bottom must end up, and hence where the hand goes (the grasp offset is kept).
        target_xy, bottom_z = self._target(step, model)
        # Turned about the vertical while carried when it would not fit the container as it lies.
        container = self._container(step)
        turn = fit_turn(yaw, model, container)
        into_drawer = container is not None and _container_part(step.goal.args[1], inst) is not None
        if into_drawer:
            # Into a drawer, whose cabinet overhangs its back: the hand (20 cm wide along the
            # closing direction) closes along the drawer's front so that it stays clear of the cabinet.
            along_front = math.atan2(container.rot[1, 1], container.rot[0, 1])
            turn = _wrap_half(along_front - (yaw + across))
            # ... and puts the object as far out in the drawer as it fits, for the same reason: the
            # wrist above it passes under the part of the cabinet above the drawer only there, so
            # the spot's jitter is kept along the front and dropped across it.
            out = container.rot[:2, 0]
            extent = footprint_extent(model, yaw + turn, out)
            along = target_xy - container.center[:2]
            along = along - out * float(along @ out)
            target_xy = container.center[:2] + along + out * max(0.0, container.half[0] - extent - DRAWER_EDGE_GAP)
        if abs(turn) > 1e-6:
            # The hand turns while it carries; at the end of the wrist's range the arm swings off
            # its path. The Panda's last joint at the grasp: it turns by about -d for a turn d of
            # the hand about the vertical.
            ee_rot, wrist = hand_and_wrist(env)
            d = wrap_angle(math.atan2(hand_rot[1, 0], hand_rot[0, 0]) - math.atan2(ee_rot[1, 0], ee_rot[0, 0]))
            turn = wrist_safe_turn(turn, wrist - d)
        if into_drawer:
            turn = turn_hand_out(turn, grasp[:2] - pos[:2], container.rot[:2, 0])
        elif container is None and layer is None and not far and step.goal.args[1] in g.range_regions:
            turn = self._housed_turn(step, model, grasp[:2] - pos[:2], close_dir, turn, target_xy, bottom_z)
        if container is None and layer is None and step.goal.args[1] in g.range_regions:
            target_xy = self._room_in_range(step, model, target_xy, yaw + turn)
        c, s = math.cos(turn), math.sin(turn)
        offset = np.array([[c, -s], [s, c]]) @ (grasp[:2] - pos[:2])
        place = np.array([target_xy[0] + offset[0], target_xy[1] + offset[1], bottom_z + model.grasp.height])
        # Put down with the hand pointing down, also when it was pitched to grasp (see FAR_REACH).
        place_rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]]) @ hand_down_rotation(close_dir)
        carry_z = max(grasp[2] + (FAR_LIFT if far else CARRY_CLEARANCE), place[2] + CARRY_CLEARANCE)
        # High enough that the object's bottom passes over everything standing near its path.
        owner = owner_of(step.goal.args[1], inst)
        skip = {step.obj, step.goal.args[1], owner[0] if owner else ""}
        # The target and the fixture its region belongs to are left out: the place height already
        # accounts for them, and a region inside a fixture (a shelf's layer, a drawer) is entered
        # from the front, not over the fixture's top. So are the fixtures that the object, standing
        # beside them, is carried away from (`_left_behind`).
        fixtures = {i for i in inst if i in g.body_of and g.is_fixture(i) and i != g.workspace_name} - skip
        carry_z = max(carry_z, self._pass_over(step, model, grasp, place[:2], skip | self._left_behind(step.obj, target_xy, fixtures)))
        carry = self._carry_speed(step, grasp)
        up = np.array([0, 0, 1.0])
        lift_xy = grasp[:2] - from_base * FAR_DRAW_IN if far else grasp[:2]
        staged = far and grasp_z >= env.arena.robot_base[2] + FAR_HIGH
        self._queue = self._pick(step, grasp, hand_rot, FAR_CLOSE_STEPS if far else CLOSE_STEPS, staged) + [
            ("move", np.array([*lift_xy, carry_z]), hand_rot, 1.0, carry),
            ("move", np.array([place[0], place[1], carry_z]), place_rot, 1.0, carry),
            ("move", place, place_rot, 1.0, carry),
            ("hold", OPEN_STEPS, place_rot, -1.0),
            ("move", place + up * APPROACH_HEIGHT, place_rot, -1.0),
        ]

    def _pick(self, step, grasp: np.ndarray, hand_rot: np.ndarray, close_steps: int = CLOSE_STEPS,
              staged: bool = False) -> list:
        """Waypoints that take the open hand to the grasp point along its own axis and close the fingers there.

        `staged`: the hand first comes to a point FAR_STAGE nearer the robot's base than the approach (see FAR_REACH).
        """
        # The hand's z axis points out of the palm: the approach lies back along it (straight above
        # the grasp for a hand pointing down).
        approach = grasp - hand_rot[:, 2] * APPROACH_HEIGHT
        close = "close" if get_model(self.env.spec.instances()[step.obj]).grasp.close_until_still else "hold"
        first = approach
        if staged:
            inward = np.asarray(self.env.arena.robot_base[:2]) - grasp[:2]
            first = approach.copy()
            first[:2] += inward / max(float(np.linalg.norm(inward)), 1e-9) * FAR_STAGE
        return self._transit(first, hand_rot, skip={step.obj}) + [
            *([("move", first, hand_rot, -1.0)] if staged else []),
            ("move", approach, hand_rot, -1.0),
            ("move", grasp, hand_rot, -1.0),
            (close, close_steps, hand_rot, 1.0),
        ]

    def _housed_turn(self, step, model, offset: np.ndarray, close_dir: float, turn: float, target_xy: np.ndarray,
                     bottom_z: float) -> float:
        """The turn about the vertical (radians) to carry an object put down on a region drawn on a surface with, so
        that the hand's housing, putting it down, is clear of what stands tall beside the place.

        `turn` itself when the housing is clear with it; else the least further turn, in steps of PLACE_TURN_STEP up
        to a quarter turn either way, that clears it (kept within the wrist's range as `wrist_safe_turn` keeps it);
        else `turn`. Closing across a narrow region beside a fixture (a book put to the right of STUDY_SCENE4's
        shelf, its region 2.8 cm from the shelf's 40 cm side board), the hand (21 cm long along the closing
        direction) came down on the board and stayed caught on it (generated tasks: 3/5 and 0/5 episodes failed).

        Args:
            offset: the grasp point from the object's centre, xy, as picked (the turn turns it too).
            close_dir: the hand's closing direction at the grasp (world angle).
        """
        above = bottom_z + model.grasp.height + HAND_BOTTOM_ABOVE_GRIP
        around = [o for o in self._obstacles({step.obj}, above) if o[4] >= above]
        if not around:
            return turn

        def housed(t: float) -> bool:
            c, s = math.cos(t), math.sin(t)
            hand_xy = target_xy + np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]])
            return hand_clearance(hand_xy, close_dir + t, around) > 0.0

        if housed(turn):
            return turn
        ee_rot, wrist = hand_and_wrist(self.env)
        d = wrap_angle(close_dir - math.atan2(ee_rot[1, 0], ee_rot[0, 0]))
        for k in range(1, int(round(math.pi / 2 / PLACE_TURN_STEP)) + 1):
            for sign in (1.0, -1.0):
                t = wrist_safe_turn(turn + sign * k * PLACE_TURN_STEP, wrist - d)
                if housed(t):
                    return t
        return turn

    def _held_off_centre(self, step, grasp: np.ndarray) -> bool:
        """Whether the grasp point lies more than OFF_CENTRE from the object's centre of mass (a pan's handle)."""
        g = self.env.geometry
        mass_centre = g.data.xipos[g.body_of[step.obj]]
        return float(np.hypot(*(grasp[:2] - mass_centre[:2]))) > OFF_CENTRE

    def _carry_speed(self, step, grasp: np.ndarray) -> float | None:
        """The carrying speed: slow for an object held far from its centre, which swings out of the fingers when carried fast."""
        return CARRY_SPEED_OFF_CENTRE if self._held_off_centre(step, grasp) else None

    def _pass_over(self, step, model, grasp: np.ndarray, place_xy: np.ndarray, skip: set) -> float:
        """The hand's height that carries the object's bottom PASS_OVER above whatever stands near its path.

        An object held far from its centre hangs off level (HANG_TILT), one held by its wall a little
        (WALL_HANG_TILT): its far side is lower by that much. The height is no more than MAX_CARRY_ABOVE_BASE
        above the robot's base.
        """
        radius = float(np.hypot(*model.half_size[:2]))
        top = highest_top_near(self._obstacles(skip, -np.inf), grasp[:2], place_xy, radius)
        droop = 0.0
        held_at = float(np.hypot(*(grasp[:2] - self.env.geometry.pos(step.obj)[:2])))
        if self._held_off_centre(step, grasp):
            droop = (held_at + radius) * math.sin(HANG_TILT)
        elif held_at >= WALL_GRASP:
            droop = (held_at + radius) * math.sin(WALL_HANG_TILT)
        return min(top + model.grasp.height + PASS_OVER + droop, self.env.arena.robot_base[2] + MAX_CARRY_ABOVE_BASE)

    def _into_layer(self, step, model, layer, grasp: np.ndarray, hand_rot: np.ndarray) -> list:
        """Waypoints that pick an object and slide it into a shelf's layer (see `libero_ll.experts.shelf`).

        Held off its centre (a pan by its handle), the object is turned so that the grasp point
        faces out of the layer, the object ahead of the hand. Held near its centre, it is picked
        with the hand pitched toward the back of the layer (after the turn), which lets the hand
        reach in past the board's edge; it is turned so that the fingers close along the layer's
        open face.
        """
        g = self.env.geometry
        pos, rot = g.pos(step.obj), g.rot(step.obj)
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        offset = grasp[:2] - pos[:2]
        pitched = float(np.linalg.norm(offset)) < CENTRED
        inward = math.atan2(layer.inward[1], layer.inward[0])
        close = math.atan2(hand_rot[1, 0], hand_rot[0, 0])
        if pitched:
            pointing = np.array([-math.sin(close), math.cos(close)])
            if pointing @ layer.inward < 0:
                pointing = -pointing
            # Closing across the layer's way in, either pitch needs a quarter turn on the way: not the one with the
            # fingertips towards the robot, which drives the Panda's last joint to its stop (LIBERO's shelf, whose
            # open face is beside the robot, converted).
            from_base = pos[:2] - np.asarray(self.env.arena.robot_base[:2])
            from_base = from_base / max(float(np.linalg.norm(from_base)), 1e-9)
            if abs(float(pointing @ layer.inward)) < 1e-6 and float(pointing @ from_base) < -0.5:
                pointing = -pointing
            turn = wrap_angle(inward - math.atan2(pointing[1], pointing[0]))
        else:
            turn = wrap_angle(inward + math.pi - math.atan2(offset[1], offset[0]))
        # The fingers may close either way round: the way that keeps the wrist in range through the turn.
        close = wrist_safe_yaw(close, turn, *hand_and_wrist(self.env))
        hand_rot = pitched_rotation(close, pointing) if pitched else hand_down_rotation(close)
        c, s = math.cos(turn), math.sin(turn)
        turned = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
        lateral = float(self.rng.uniform(-1, 1)) * min(0.015, max(0.0, layer.width - float(np.hypot(*model.half_size[:2]))))
        offset_in, yaw_in = turned[:2, :2] @ offset, yaw + turn
        entry = layer.point(entry_depth(layer, model, offset_in, yaw_in), lateral + float(offset_in @ layer.across), 0.0)
        # The object comes to the layer from the side: it is carried at the height it goes in at,
        # or over everything near the way there, the fixture too (the path must not cut across it).
        carry_z = max(grasp[2] + APPROACH_HEIGHT / 2, layer.floor + model.grasp.height + 2 * LAYER_CLEARANCE)
        owner = owner_of(step.goal.args[1], self.env.spec.instances())
        behind = self._left_behind(step.obj, entry, {owner[0]} if owner else set())
        carry_z = max(carry_z, self._pass_over(step, model, grasp, entry[:2], {step.obj} | behind))
        carry = self._carry_speed(step, grasp)
        insert = insert_waypoints(layer, model, offset_in, yaw_in, turned @ hand_rot, pitched, lateral, carry_z, carry)
        self._stall_within = len(insert)
        return (
            self._pick(step, grasp, hand_rot)
            + [("move", np.array([grasp[0], grasp[1], carry_z]), hand_rot, 1.0, carry)]
            + insert
        )

    def _left_behind(self, obj: str, end: np.ndarray, fixtures: set) -> set:
        """Of `fixtures`, those that the way of `obj`'s centre from where it stands beside them to `end` (xy) only
        leaves further behind: every point of the way at least as far from the fixture (its box, its drawers pulled
        out and its doors swung open) as the object is now. A fixture the object stands in or on is not left behind:
        a way out of its footprint can cross the rest of it (from a drawer over the cabinet).

        Carried there, the object need not pass over them. LIBERO's frying pan, converted, stands beside the shelf it
        goes into, and was lifted over the shelf's top (1.35 m up, at the edge of the arm's reach); carried from
        beside the shelf onto the stove, it took 271 steps to rise that high and did not reach the stove in 600.
        """
        boxes = footprints(self.env, set(), -np.inf)
        inst = self.env.spec.instances()
        start = self.env.geometry.pos(obj)[:2]
        way = start + np.linspace(0.0, 1.0, 11)[:, None] * (np.asarray(end[:2], dtype=float) - start)
        out = set()
        for f in sorted(fixtures):
            if f not in boxes:
                continue
            gaps = clearances(way, [boxes[f], *self._open_parts(f, get_model(inst[f]))])
            if gaps[0] > 0.0 and float(gaps.min()) >= float(gaps[0]) - 1e-6:
                out.add(f)
        return out

    def _drawers_over(self, top: float) -> set:
        """The keys (`_key`) of the footprints, as `_obstacles` has them, of the drawers standing open whose floor lies
        above the height `top`."""
        g = self.env.geometry
        return {_key(footprint)
                for inst, cat in self.env.spec.instances().items() if inst in g.body_of and g.is_fixture(inst)
                for box, footprint in self._open_drawers(inst, get_model(cat))
                if box.center[2] - box.half[2] - DRAWER_FLOOR >= top}

    def _out_from_under(self, obj: str, model, pos: np.ndarray, yaw: float, around: list, drawers: list) -> Nudge | None:
        """How to push `obj`, standing on the table under or within WRIST_RADIUS beside the open `drawers` (footprints
        of `around` that `_drawers_over` names) where no pinch of it leaves the hand room to come down (`_housed_at`),
        out from under them: the shortest push, NUDGE_STEP at a time up to NUDGE_MAX in one of NUDGE_WAYS directions,
        after which a pinch does, the object keeping NUDGE_GAP from everything else on its way and on the table. The
        closed fingers push it from behind where they have room there (NUDGE_FINGERS from everything, the hand above
        them clear of what reaches it), else, a bowl, from inside its rim, the hand's housing NUDGE_OVER_RIM above
        the rim. None when there is no such push.

        LIBERO-90's `KITCHEN_SCENE10`, converted: the cabinet's top drawer stands open over the bowl to be put into
        it, and the hand, coming down to the bowl's rim, stopped on the drawer (3 of 5 episodes failed)."""
        env = self.env
        surface = float(pos[2] - model.half_size[2])
        if abs(surface - env.arena.table_top_z) > NUDGE_ON_TABLE:
            return None
        if footprint_gap(pos[:2], yaw, model, drawers) >= WRIST_RADIUS:
            return None
        low = list(footprints(env, {obj}, surface + 0.002).values())
        table = env.arena.table_full_size
        extent = float(np.hypot(model.half_size[0], model.half_size[1]))
        # Pushed from behind, the pads go PUSH_HEIGHT above the table; from inside, the housing clears the rim.
        behind_at = surface + PUSH_HEIGHT
        fingers_near = self._obstacles(obj, behind_at, parts=True)
        inside_at = max(behind_at, surface + 2 * float(model.half_size[2]) + NUDGE_OVER_RIM - HAND_BOTTOM_ABOVE_GRIP)
        bowl = is_round(model) and model.grasp.kind == "rim"
        for shift in np.arange(NUDGE_STEP, NUDGE_MAX + 1e-9, NUDGE_STEP):
            for a in np.arange(NUDGE_WAYS) * 2 * math.pi / NUDGE_WAYS:
                d = np.array([math.cos(a), math.sin(a)])
                to = pos[:2] + d * shift
                if table is not None and np.any(np.abs(to) > np.array(table[:2]) / 2 - extent):
                    continue
                if min(footprint_gap(pos[:2] + d * u, yaw, model, low) for u in np.linspace(0.0, shift, 4)[1:]) < NUDGE_GAP:
                    continue
                if not self._housed_at(obj, model, to, yaw, around, drawers):
                    continue
                behind = pos[:2] - d * (footprint_extent(model, yaw, d) + NUDGE_BACKOFF)
                if (clearance(behind, fingers_near, rounded=True) >= NUDGE_FINGERS
                        and hand_clearance(behind, a + math.pi / 2, self._reaching(obj, behind_at)) > 0.0):
                    return Nudge(obj, to, False, PUSH_HEIGHT)
                inner = pos[:2] + d * (float(model.half_size[0]) - PUSH_INSIDE)
                if bowl and hand_clearance(inner, a + math.pi / 2, self._reaching(obj, inside_at)) > 0.0:
                    return Nudge(obj, to, True, inside_at - surface)
        return None

    def _reaching(self, obj: str, fingers_z: float) -> list:
        """Footprints (as `_obstacles` has them, with what stands out of fixtures) of what reaches the hand's housing
        with the finger pads at `fingers_z`."""
        housing = fingers_z + HAND_BOTTOM_ABOVE_GRIP
        return [o for o in self._obstacles(obj, housing, parts=True) if o[4] >= housing]

    def _housed_at(self, obj: str, model, xy: np.ndarray, yaw: float, around: list, drawers: list) -> bool:
        """Whether a pinch of `obj` standing at `xy` turned by `yaw` (`pinch_candidates`, but those beyond it from the
        robot's base, as `_load` weighs them) keeps the hand's housing NUDGE_ROOM from `around`, and the wrist
        WRIST_RADIUS from the open `drawers` standing over the object. Beside LIBERO-90's `KITCHEN_SCENE10` drawer,
        the wrist came down on it with the housing clear."""
        base = np.asarray(self.env.arena.robot_base[:2])
        return any(hand_clearance(xy + off, yaw + across, around) >= NUDGE_ROOM and clearance(xy + off, drawers) >= WRIST_RADIUS
                   for _, off, across in pinch_offsets(self.env.spec.instances()[obj], model, xy, yaw, base))

    def _nudge(self, step: Nudge, model) -> list:
        """Waypoints that push `step.obj` to `step.to` (`_out_from_under`): the hand comes over the place it pushes from
        at its own height or higher, and ends where it came from, turned as it was, so that the step after finds the
        arm as it would have found it without the push. Sent on from where a push left it, the arm swung off its way
        to the next waypoint with the wrist at the end of its range."""
        g = self.env.geometry
        pos, rot = g.pos(step.obj), g.rot(step.obj)
        d = step.to - pos[:2]
        if float(np.linalg.norm(d)) < 1e-6:
            return []
        d = d / float(np.linalg.norm(d))
        surface = float(pos[2] - model.half_size[2])
        reach = (float(model.half_size[0]) - PUSH_INSIDE if step.inside
                 else footprint_extent(model, math.atan2(rot[1, 0], rot[0, 0]), d))
        p = self.env.robot_proprio()
        way = push_waypoints(pos[:2], step.to, reach, surface, p["ee_rot"], inside=step.inside, backoff=NUDGE_BACKOFF,
                             height=step.height)
        kind, first, *rest = way[0]
        start = np.array([first[0], first[1], max(float(first[2]), float(p["ee_pos"][2]))])
        return [(kind, start, *rest)] + way + [("move", p["ee_pos"].copy(), p["ee_rot"].copy(), way[-1][3], None)]

    def _slide_in(self, step: SlideIn, model) -> list:
        """Waypoints that push an object lying in a layer's mouth further in, with the closed fingers along the open face."""
        env, g = self.env, self.env.geometry
        layer = find_layer(env, step.goal.args[1])
        if layer is None:
            raise LiberoError(f"{step.goal.args[1]!r} is not a layer of a shelf in this scene")
        rot = g.rot(step.obj)
        yaw = math.atan2(rot[1, 0], rot[0, 0])
        along_face = math.atan2(layer.across[1], layer.across[0])
        hand_rot, wrist = hand_and_wrist(env)
        close = nearest_equivalent_yaw(along_face, hand_rot, wrist)
        hand = env.robot_proprio()["ee_pos"]
        way = push_in_waypoints(layer, model, g.pos(step.obj), yaw, hand, close)
        if not any(w[2][2, 2] > -STRAIGHT_DOWN for w in way):
            return way
        # The push is pitched (see `push_in_waypoints`): pitching the hand forward winds the Panda's last joint on
        # by PUSH_WRIST_WIND. Where the other way round is about as short a turn, the one that leaves the joint
        # nearer the middle of its range once pitched is taken.
        now = math.atan2(hand_rot[1, 0], hand_rot[0, 0])
        other = wrap_angle(close + math.pi)
        d, d_other = wrap_angle(close - now), wrap_angle(other - now)
        wound, wound_other = abs(wrist - d + PUSH_WRIST_WIND), abs(wrist - d_other + PUSH_WRIST_WIND)
        if abs(abs(d_other) - abs(d)) < PUSH_TURN_TIE and wound_other < wound:
            way = push_in_waypoints(layer, model, g.pos(step.obj), yaw, hand, other)
        return way

    def _tip_over(self, step: TipOver, model) -> list:
        """Waypoints that push a standing object over along its container, fingers closing along the fall."""
        region = self._container(step)
        _, fall = standing_spot(region, model, np.asarray(self.env.arena.robot_base))
        hand_rot = hand_down_rotation(nearest_equivalent_yaw(math.atan2(fall[1], fall[0]), *hand_and_wrist(self.env)))
        hand = self.env.robot_proprio()["ee_pos"]
        return tip_over_waypoints(self.env.geometry.pos(step.obj), model, fall, hand, hand_rot)

    def _transit(self, approach: np.ndarray, hand_rot: np.ndarray, skip: set) -> list:
        """Waypoints that take the open hand over whatever stands between it and `approach` (maybe none).

        When a loose object, an open drawer or an open door near the path stands higher than the approach allows
        for, the hand rises where it is (if it must) to pass TRANSIT_CLEARANCE above it, moves across
        at that height, and the caller's approach then lowers it straight down: a tall bottle beside
        the start of the path is not knocked over by a slanting descent.
        """
        hand = self.env.robot_proprio()["ee_pos"]
        # Loose objects and open drawers and doors count; a fixture's body does not: the hand leaves one it
        # has just worked (a door's handle) sideways, as it came.
        inst = self.env.spec.instances()
        fixtures = {i for i in inst if i in self.env.geometry.body_of and self.env.geometry.is_fixture(i)}
        around = self._obstacles(skip | fixtures, -np.inf)
        for f in fixtures - skip:
            around += self._open_parts(f, get_model(inst[f]))
        top = highest_top_near(around, hand[:2], approach[:2], HAND_HALF_WIDTH)
        z = min(top + TRANSIT_CLEARANCE, self.env.arena.robot_base[2] + MAX_CARRY_ABOVE_BASE)
        if z <= approach[2] + 0.005:
            return []
        rise = [("move", np.array([hand[0], hand[1], z]), hand_rot, -1.0)] if hand[2] < z - 0.005 else []
        return rise + [("move", np.array([approach[0], approach[1], max(z, hand[2])]), hand_rot, -1.0)]

    def _push_from_inside(self, obj: str, model, behind: np.ndarray, along: float, surface: float) -> bool:
        """Whether `obj` is pushed from inside its rim (`push_waypoints(inside=True)`): the hand, come down behind
        it at `behind` to push along the world angle `along` (its fingers closing across it), would be within
        PUSH_ROOM of something reaching the fingers, and the object is round (`is_round`: a plate, not a tray; see
        `push.PUSH_INSIDE`) and low enough for the hand's housing to stay above its rim with the fingers on its floor.

        LIBERO-Goal's plate to be pushed to the stove's front stands 1 cm from a cabinet on the far side from
        the stove, and the hand, sent behind it, stopped against the cabinet (0 of 5 episodes; docs/interop.md).
        """
        if not is_round(model) or 2 * model.half_size[2] > PUSH_HEIGHT - PUSH_INSIDE_LOWER + HAND_BOTTOM_ABOVE_GRIP:
            return False
        fingers = surface + PUSH_HEIGHT
        if clearance(behind, self._obstacles(obj, fingers), rounded=True) < PUSH_ROOM + PUSH_FINGERS:
            return True
        # `_obstacles` counts tops from 1 cm below the height it is given: here, those that reach the housing's bottom.
        housing = self._obstacles(obj, fingers + HAND_BOTTOM_ABOVE_GRIP + 0.01)
        return hand_clearance(behind, along + math.pi / 2, housing) < PUSH_ROOM

    def _obstacles(self, skip, grasp_z: float, parts: bool = False) -> list:
        """Footprints (centre xy, yaw, half x, half y, top z) of the instances (but `skip`) whose tops reach up to the
        fingers; with `parts`, also of what stands out of a fixture's box (`skills.standing_out`: handles)."""
        instances = self.env.spec.instances()
        out = []
        for inst, footprint in footprints(self.env, skip, grasp_z - 0.01).items():
            out.append(footprint)
            if parts and self.env.geometry.is_fixture(inst):
                out += standing_out(self.env, inst, footprint)
            out += self._open_parts(inst, get_model(instances[inst]))
        return out

    def _open_parts(self, inst: str, model) -> list:
        """Footprints of a fixture's moving parts that stand out of it, as `_obstacles` has them: its drawers pulled
        open, and its doors swung open (`_open_doors`)."""
        return [footprint for _, footprint in self._open_drawers(inst, model)] + self._open_doors(inst, model)

    def _open_drawers(self, inst: str, model) -> list:
        """(region box, footprint as `_obstacles` has it) of each of a fixture's drawers pulled open: the box of its
        region, DRAWER_WALL wider each way, up to the region's top."""
        g = self.env.geometry
        out = []
        for region_name, part_name in model.controls:
            part = model.part(part_name)
            if part.joint.kind != "drawer" or g.joint_value(inst, part_name) < DRAWER_STANDS_OUT:
                continue
            box = g.site_region(f"{inst}_{region_name}")
            if box is None:
                continue
            yaw = math.atan2(box.rot[1, 0], box.rot[0, 0])
            half_x, half_y = box.half[0] + DRAWER_WALL, box.half[1] + DRAWER_WALL
            out.append((box, (box.center[:2], yaw, half_x, half_y, box.center[2] + box.half[2], False)))
        return out

    def _open_doors(self, inst: str, model) -> list:
        """Footprints of a fixture's doors that stand open (swung out of its front), as `_obstacles` has them: the
        box of the door's panel, turned as the door stands. LIBERO's microwave, converted, opens its door over a mug
        beside it: a hand coming down to the mug met the door's top edge."""
        g = self.env.geometry
        out = []
        for part in model.parts:
            if part.joint.kind != "door" or stands_closed(g.joint_value(inst, part.name), "door"):
                continue
            pos, rot = _body(self.env, f"{inst}_{part.name}")
            panel = max((b for b in part.geoms if b.type == "box" and b.collide), key=lambda b: b.size[0] * b.size[1] * b.size[2])
            centre = pos + rot @ np.array(panel.pos)
            yaw = math.atan2(rot[1, 0], rot[0, 0])
            out.append((centre[:2], yaw, panel.size[0], panel.size[1], centre[2] + panel.size[2], False))
        return out

    def _container(self, step: PickPlace):
        """The BoxRegion an In goal puts the object into (None for other goals)."""
        if step.goal.name != "in":
            return None
        return self.env.geometry.site_region(step.goal.args[1])

    def _target(self, step: PickPlace | Push, model) -> tuple[np.ndarray, float]:
        """Where the moved object's centre goes (x, y) and the height its bottom is released at."""
        g = self.env.geometry
        where = step.goal.args[1]
        jitter = self.rng.uniform(-0.006, 0.006, size=2)
        if where in g.body_of:
            below = get_model(self.env.spec.instances()[where])
            p = g.pos(where)
            return p[:2] + jitter, p[2] + below.half_size[2] + RELEASE_CLEARANCE
        if where in g.range_regions:
            # A region drawn on a surface (the table, or relative to another object): the middle of
            # one of its ranges, in the frame of the thing it is drawn on.
            target, ranges = g.range_regions[where]
            x0, y0, x1, y1 = ranges[int(self.rng.integers(len(ranges)))]
            origin, rot = g.surface_frame(target)
            centre = origin + rot @ np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.0])
            span = np.minimum([(x1 - x0) / 2, (y1 - y0) / 2], 0.02)
            return centre[:2] + self.rng.uniform(-1, 1, size=2) * span * 0.5, centre[2] + RELEASE_CLEARANCE
        region = g.site_region(where)
        if region is None:
            raise LiberoError(f"the scripted expert cannot find region {where!r}")
        if step.goal.name == "in" and stands_too_tall(model, region):
            # Stood at one end of the container, to be pushed over along it (TipOver).
            xy = standing_spot(region, model, np.asarray(self.env.arena.robot_base))[0] + jitter
        else:
            others = self._others_in(region, step.obj, owner_of(where, self.env.spec.instances()))
            xy = free_spot(region, model, others, inside=step.goal.name == "in",
                           toward=np.asarray(self.env.arena.robot_base[:2])) + jitter
        bottom = region.center[2] - region.half[2]
        if step.goal.name == "in":
            # As onto a surface. Expert 0.10 let go 2 cm higher: no demo showed the object held closed below
            # that, and a policy that carried it a little lower kept holding it there (docs/policies.md).
            return xy, bottom + RELEASE_CLEARANCE
        return xy, region.center[2] + region.half[2] + RELEASE_CLEARANCE

    def _room_in_range(self, step: PickPlace, model, xy: np.ndarray, yaw: float) -> np.ndarray:
        """Where in the range drawn on a surface that `step` puts its object on the object goes: `xy` (in the range
        `_target` picked), or, where the object's footprint there (turned by `yaw`, as it will be put down) would
        come within RANGE_ROOM of something standing on the surface, the point of that range with the most room up
        to RANGE_ROOM_CAP, the nearest `xy` of those.

        A range is drawn beside something for that thing's size: LIBERO-Long's "to the right of the plate" for
        LIBERO's plate, 14 cm across, where ours is 20; put at the range's middle, the pudding came down on our
        plate's rim and stood tilted on it, not on the table (2 of 5 episodes).
        """
        g = self.env.geometry
        target, ranges = g.range_regions[step.goal.args[1]]
        origin, rot = g.surface_frame(target)
        others = list(footprints(self.env, {step.obj, target}, origin[2] + 0.002).values())
        gap = footprint_gap(xy, yaw, model, others)
        if gap >= RANGE_ROOM:
            return xy
        local = (rot.T @ np.array([xy[0] - origin[0], xy[1] - origin[1], 0.0]))[:2]
        x0, y0, x1, y1 = min(ranges, key=lambda r: math.hypot(local[0] - (r[0] + r[2]) / 2, local[1] - (r[1] + r[3]) / 2))
        m = min(RANGE_EDGE, (x1 - x0) / 2, (y1 - y0) / 2)
        best, best_key = xy, (min(gap, RANGE_ROOM_CAP), 0.0)
        for u in np.linspace(x0 + m, x1 - m, 11):
            for v in np.linspace(y0 + m, y1 - m, 11):
                p = (origin + rot @ np.array([u, v, 0.0]))[:2]
                key = (min(footprint_gap(p, yaw, model, others), RANGE_ROOM_CAP), -float(np.linalg.norm(p - xy)))
                if key > best_key:
                    best, best_key = p, key
        return best

    def _others_in(self, region, moved: str, owner: tuple[str, str] | None) -> list[tuple[np.ndarray, float]]:
        """(centre xy, radius) of the objects other than `moved` whose centres lie over a region's box.

        The region's own container (`owner`: (instance, region) as `owner_of` splits the region's name) is
        not in its way: a basket's centre lies over its own region, and counting it sent every object to a
        corner of the basket, a different one from demo to demo.
        """
        g = self.env.geometry
        out = []
        for inst, cat in self.env.spec.instances().items():
            if inst == moved or inst not in g.body_of or g.is_fixture(inst) or (owner and inst == owner[0]):
                continue
            p = g.pos(inst)
            local = region.rot.T @ (p - region.center)
            if np.all(np.abs(local[:2]) <= region.half[:2] + 0.03):
                h = get_model(cat).half_size
                out.append((p[:2], float(min(h[0], h[1]))))
        return out

    # ------------------------------------------------------------------ acting

    @property
    def done(self) -> bool:
        """True when every step has been carried out."""
        return self._stage >= len(self.steps)

    def _stalled(self) -> bool:
        """Whether the hand, working a part, pushing something into a layer or carrying it in, has stopped closing in
        on its waypoint (see STALL_STEPS)."""
        working = isinstance(self.steps[self._stage], (Articulate, SlideIn)) or len(self._queue) <= self._stall_within
        if len(self._wp_errors) <= STALL_STEPS or not working:
            return False
        (err0, rot0), (err, rot) = self._wp_errors[-STALL_STEPS - 1], self._wp_errors[-1]
        return err0 - err < STALL_PROGRESS and rot0 - rot < STALL_TURN

    def act(self) -> np.ndarray:
        """The next action (7 numbers in [-1, 1])."""
        p = self.env.robot_proprio()
        pos, rot = p["ee_pos"], p["ee_rot"]
        while self._queue:
            kind, target, hand_rot, grip, *rest = self._queue[0]
            speed = rest[0] if rest and rest[0] is not None else self.speed
            if kind in ("hold", "close"):
                # Fingers closing or opening: the hand stays at the last waypoint (a zero delta each
                # step would let it drift with the fingers' push). A "close" goes on while the fingers move.
                if self._counter == 0 and self._hold_pos is None:
                    self._hold_pos = pos.copy()
                closing = False
                if kind == "close":
                    opening = float(p["gripper_states"][0] - p["gripper_states"][1])
                    closing = self._last_opening is not None and self._last_opening - opening > CLOSE_STILL
                    self._last_opening = opening
                if self._counter < target or (closing and self._counter < CLOSE_MAX_STEPS):
                    self._counter += 1
                    return servo(pos, rot, self._hold_pos, hand_rot, grip, speed)
                self._counter = 0
                self._last_opening = None
                self._queue.pop(0)
                continue
            err = np.linalg.norm(target - pos)
            rot_err = np.linalg.norm(_axis_angle(hand_rot @ rot.T))
            if self._wp_steps == 0:
                # A long or slow move gets the steps it needs at its speed, twice over.
                self._wp_budget = max(WAYPOINT_BUDGET, int(2 * err / (speed * POS_SCALE * TRACKING)))
                self._wp_errors = []
            pos_tol, rot_tol = (VIA_TOL, VIA_ROT_TOL) if kind == "via" else (POS_TOL, ROT_TOL)
            self._wp_errors.append((float(err), float(rot_err)))
            if (err > pos_tol or rot_err > rot_tol) and self._wp_steps < self._wp_budget and not self._stalled():
                self._wp_steps += 1
                a = servo(pos, rot, target, hand_rot, grip, speed)
                a[:3] += self.rng.normal(0.0, self.noise, size=3)
                if hand_rot[2, 2] < -STRAIGHT_DOWN:
                    a[3:6] += self.rng.normal(0.0, self.rot_noise, size=3)
                return np.clip(a, -1.0, 1.0)
            self._wp_steps = 0
            self._hold_pos = target
            self._queue.pop(0)
        if self._stage < len(self.steps):
            self._stage += 1
            self._load(self._stage)
            if self._queue:
                return self.act()
        # Everything is done: keep the hand still and open.
        return np.array([0, 0, 0, 0, 0, 0, -1.0])


# Round walls (bowls, ramekins, mugs) can be pinched anywhere along them: the number of flat wall
# boxes around each (the pads meet a flat face at a box's centre), and whether a handle at +x is
# to be avoided.
ROUND_RIMS = {
    "akita_black_bowl": (16, False),
    "white_bowl": (16, False),
    "small_akita_black_bowl": (16, False),
    "small_white_bowl": (16, False),
    "glazed_rim_porcelain_ramekin": (12, False),
    "porcelain_mug": (12, True),
    "red_coffee_mug": (12, True),
    "white_yellow_mug": (12, True),
}
# An object held across its middle (a "body" grasp) may also be held this far (metres) to either side of it, along the
# fingers' pads, as long as that leaves BODY_SHIFT_EDGE to its end, and not when that leaves less than BODY_SHIFT_LEAST.
BODY_SHIFT = 0.035
BODY_SHIFT_EDGE = 0.01
BODY_SHIFT_LEAST = 0.03
# Beyond this clearance (metres) from other things, a pinch point is as good as any.
GRASP_CLEARANCE = 0.05
# The object's own grasp hint is taken whenever it has this much clearance (metres): room for the outer
# finger and its pad beside the wall.
HINT_CLEARANCE = 0.02
# A pinch where the hand's housing would come down on something is ranked as if it had this much less than no
# clearance, metres: below every pinch that has room for the housing.
HOUSING_OVERLAP_PENALTY = 0.01
# A thing standing on the table (its bottom within NUDGE_ON_TABLE of the table's top, metres) under or beside an open
# drawer, where no pinch leaves the hand's housing room or its wrist WRIST_RADIUS from the drawer, is pushed out from
# under it (`ScriptedExpert._out_from_under`): NUDGE_STEP further at a time, up to NUDGE_MAX, in one of NUDGE_WAYS
# directions, until a pinch keeps the housing NUDGE_ROOM from what stands there and the wrist clear, the thing
# keeping NUDGE_GAP from everything else on its way. From behind, the
# closed fingers come down NUDGE_BACKOFF behind it where they keep NUDGE_FINGERS (their half width and a few
# millimetres) from everything; from inside a bowl, with the hand's housing NUDGE_OVER_RIM above its rim. A drawer's
# floor is taken to be DRAWER_FLOOR thick below its region.
NUDGE_ON_TABLE = 0.01
NUDGE_STEP = 0.01
NUDGE_MAX = 0.1
NUDGE_WAYS = 16
NUDGE_ROOM = 0.01
NUDGE_GAP = 0.005
NUDGE_BACKOFF = 0.02
NUDGE_FINGERS = 0.02
NUDGE_OVER_RIM = 0.01
DRAWER_FLOOR = 0.01
# The open hand's outer finger, seen from above: its centre lies FINGER_OUT (metres) beyond the pinch
# point along the closing direction (the Panda's open fingers, from the hand's centre: 4 to 6.2 cm), and
# a disc of FINGER_RADIUS about it holds its footprint (2.1 x 2.7 cm) with a few millimetres to spare.
FINGER_OUT = 0.051
FINGER_RADIUS = 0.02
# Inside a container, the open outer finger needs this much room (metres) beyond the pinch point along the closing
# direction, to the container's region (`room_inside`): the finger's far edge is 6.2 cm from the hand's centre, and
# a drawer's walls stand 6 to 10 mm outside its region. A hand with less room comes down up to FINGER_SHIFT_MAX
# further in.
FINGER_REACH = 0.056
FINGER_SHIFT_MAX = 0.03


def turn_hand_out(turn: float, offset: np.ndarray, out: np.ndarray, by: float = DRAWER_HAND_TURN) -> float:
    """Of `turn` ± `by` (radians about the vertical), the one that carries a grasp `offset` (the pinch from the
    object's centre, xy) further along `out`; `turn` itself when the grasp is not on the object's wall."""
    if float(np.linalg.norm(offset)) < WALL_GRASP:
        return turn

    def along_out(t: float) -> float:
        c, s = math.cos(t), math.sin(t)
        return float(np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]]) @ out)

    return max((turn + by, turn - by), key=along_out)


def pinch_candidates(category: str, model) -> list[tuple[tuple[float, float], float]]:
    """(offset in the model frame, closing angle from the model's x axis) of each way to hold an object.

    The model's own grasp hint comes first. A round wall adds every other wall box it can be pinched at (closing
    radially), away from a mug's handle; a box lying flat, held across its middle, adds the two holds BODY_SHIFT to
    either side of its middle along the fingers' pads.
    """
    hint = model.grasp
    out = [(tuple(hint.offset), hint.across_yaw)]
    if hint.kind == "body" and not is_round(model):
        # Held across its middle, a box lying flat can be held off its middle too, along the fingers' pads: the hand,
        # 20 cm long along its closing direction, then comes down further from what stands at one end of it (LIBERO's
        # cream cheese, converted, beside the tomato sauce). Not a thing standing up (a bottle, a carton): held off
        # its middle it tilts in the fingers (LIBERO's barbecue sauce, 1.7 cm off, 3 of 5 episodes).
        along = (-math.sin(hint.across_yaw), math.cos(hint.across_yaw))
        half = abs(along[0]) * model.half_size[0] + abs(along[1]) * model.half_size[1]
        shift = min(BODY_SHIFT, half - BODY_SHIFT_EDGE)
        if shift >= BODY_SHIFT_LEAST and model.half_size[2] < half:
            out += [((hint.offset[0] + s * along[0], hint.offset[1] + s * along[1]), hint.across_yaw) for s in (shift, -shift)]
        return out
    if hint.kind != "rim" or category not in ROUND_RIMS:
        return out
    n, handle = ROUND_RIMS[category]
    # The hint pinches the wall on the -y side: the axis is a radius further along +y.
    radius = -hint.offset[1]
    axis = (hint.offset[0], 0.0)
    for k in range(n):
        a = 2 * math.pi * k / n
        if abs(wrap_angle(a + math.pi / 2)) < 1e-6 or (handle and math.cos(a) > 0.45):
            continue
        out.append(((axis[0] + radius * math.cos(a), axis[1] + radius * math.sin(a)), a))
    return out


def pinch_offsets(category: str, model, xy: np.ndarray, yaw: float, base: np.ndarray):
    """(index, world offset from the object's centre, closing angle from its x axis) of each of `pinch_candidates` of
    an object standing at `xy` turned by `yaw`, but those beyond the object from the robot's `base` (all xy): the far
    side of a wall is the edge of the Panda's reach. The grasp hint, index 0, always comes."""
    c, s = math.cos(yaw), math.sin(yaw)
    for k, (offset, across) in enumerate(pinch_candidates(category, model)):
        off = np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]])
        if k == 0 or np.linalg.norm(xy + off - base) <= np.linalg.norm(xy - base) + 0.01:
            yield k, off, across


def _key(footprint) -> tuple:
    """A footprint (as `ScriptedExpert._obstacles` has them) told apart from others by its centre and top."""
    return (round(float(footprint[0][0]), 6), round(float(footprint[0][1]), 6), round(float(footprint[4]), 6))


def clearance(point: np.ndarray, obstacles: list, rounded: bool = False) -> float:
    """Horizontal distance (metres) from a point to the nearest footprint rectangle; 1 when there is none.

    With `rounded`, a footprint marked round (see `skills.footprints`) is its inscribed circle; one
    without the mark (five numbers) is a box.
    """
    return float(clearances(np.asarray(point, dtype=float)[None, :2], obstacles, rounded)[0])


def room_inside(point: np.ndarray, direction: np.ndarray, containers: list) -> float:
    """How far (metres) from `point` along the horizontal unit `direction` the nearest of `containers`' footprints
    (as `clearance` has them, `point` inside each) ends, less DRAWER_WALL: for an open drawer (`_open_parts`) the
    room to its region, whose walls stand 6 to 10 mm further out; for a basket, tray or microwave, whose footprint is
    its outer box, a centimetre or so less than the room to its walls' inner faces."""
    best = 1.0
    for centre, yaw, hx, hy, *_ in containers:
        c, s = math.cos(yaw), math.sin(yaw)
        d = np.asarray(point, dtype=float)[:2] - np.asarray(centre, dtype=float)[:2]
        local = (c * d[0] + s * d[1], -s * d[0] + c * d[1])
        way = (c * direction[0] + s * direction[1], -s * direction[0] + c * direction[1])
        for p, u, h in ((local[0], way[0], hx), (local[1], way[1], hy)):
            if abs(u) > 1e-9:
                best = min(best, ((h if u > 0 else -h) - p) / u)
    return best - DRAWER_WALL


def footprint_gap(xy: np.ndarray, yaw: float, model, others: list) -> float:
    """The smallest horizontal gap (metres, 0 where they overlap; 1 with nothing there) between an object's footprint,
    standing at `xy` turned by `yaw` (its inscribed circle if round, else its box), and `others`' footprints, round
    ones as circles (`clearances`)."""
    hx, hy = float(model.half_size[0]), float(model.half_size[1])
    u, v = np.meshgrid(np.linspace(-1.0, 1.0, 9), np.linspace(-1.0, 1.0, 9))
    local = np.stack([u.ravel() * hx, v.ravel() * hy], axis=1)
    if is_round(model):
        local = local[np.hypot(u.ravel(), v.ravel()) <= 1.0 + 1e-9]
    c, s = math.cos(yaw), math.sin(yaw)
    pts = np.asarray(xy, dtype=float)[:2] + local @ np.array([[c, s], [-s, c]])
    return float(clearances(pts, others, rounded=True).min())


def fit_turn(yaw: float, model, region, margin: float = 0.012) -> float:
    """The turn about the vertical (radians, within ±pi/2) that lets an object's footprint fit a box region.

    Zero when there is no region or the object fits as it lies (with `margin` to spare on each
    side); otherwise the smallest turn that aligns the object's sides with the region's so that
    it fits best.

    Args:
        yaw: the object's yaw now, radians.
        model: its model (half sizes).
        region: the BoxRegion it goes into, or None.
    """
    if region is None:
        return 0.0
    hx, hy = model.half_size[0], model.half_size[1]
    region_yaw = math.atan2(region.rot[1, 0], region.rot[0, 0])
    rx, ry = region.half[0], region.half[1]

    def slack(obj_yaw: float) -> float:
        a = obj_yaw - region_yaw
        c, s = abs(math.cos(a)), abs(math.sin(a))
        return min(rx - (c * hx + s * hy), ry - (s * hx + c * hy))

    if slack(yaw) >= margin:
        return 0.0
    candidates = [wrap_angle(region_yaw + k * math.pi / 2 - yaw) for k in range(4)]
    return max(candidates, key=lambda t: (round(slack(yaw + t), 4), -abs(t)))


def _wrap_half(a: float) -> float:
    """An angle modulo pi, in [-pi/2, pi/2): the parallel gripper closes the same both ways."""
    return (a + math.pi / 2) % math.pi - math.pi / 2


def free_spot(region, model, others: list[tuple[np.ndarray, float]], inside: bool = True, grid: int = 9,
              toward: np.ndarray | None = None) -> np.ndarray:
    """The point of a region's box (x, y, world) where an object of `model` goes beside `others`.

    Candidates lie on a grid over the box, shrunk by the object's half size where the box allows
    when the object goes inside (a container's walls), or by a margin when only its centre must
    lie over the box (On); with nothing else in the region the centre wins. Otherwise, of the candidates
    at least SPOT_CLEARANCE from everything there, the one nearest `toward` (the robot's base) wins; with
    none that clear, or no `toward`, the one farthest from the others (up to SPOT_CLEARANCE_CAP, then the
    nearer the centre the better).

    Nearest the base, not farthest from the others: a second object put into a basket beside a can at its
    centre had room on both sides, and which side won turned on where the can had come to rest, to a few
    millimetres; the demos then put it on either side for the same look of the scene, which a policy cannot
    learn (LIBERO-Long's two-object baskets: 32 and 18 of 50 demos each side).

    Args:
        region: the BoxRegion (centre, rotation, half extents).
        model: the model of the object to put there.
        others: (centre xy, radius) of the things already in the region.
        inside: whether the whole object must fit in the box (In) or only its centre (On).
        toward: the xy point the object goes as near to as room allows (the robot's base).
    """
    half = np.asarray(region.half[:2], dtype=float)
    if inside:
        room = np.maximum(half - np.asarray(model.half_size[:2]) * 0.8, half * 0.25)
    else:
        room = half * 0.85
    if not others:
        return region.center[:2].copy()
    radius = float(min(model.half_size[0], model.half_size[1]))
    toward = None if toward is None else np.asarray(toward, dtype=float)[:2]
    best, best_key = None, None
    for u in np.linspace(-1, 1, grid):
        for v in np.linspace(-1, 1, grid):
            xy = region.center[:2] + region.rot[:2, :2] @ (np.array([u, v]) * room)
            clear = min(float(np.linalg.norm(xy - c)) - r - radius for c, r in others)
            spread = min(clear, SPOT_CLEARANCE_CAP) - 0.01 * float(np.hypot(u, v))
            if toward is not None and clear >= SPOT_CLEARANCE:
                key = (1, -float(np.linalg.norm(xy - toward)), spread)
            else:
                key = (0, spread, 0.0)
            if best_key is None or key > best_key:
                best, best_key = xy, key
    return best


def _axis_angle(rot: np.ndarray) -> np.ndarray:
    from libero_ll.envs.env import rotation_to_axis_angle

    return rotation_to_axis_angle(rot)
