"""`LiberoEnv`: a simulated task built from a task file, with the observations and actions of LIBERO's datasets (docs/python.md)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from libero_ll.assets.categories import ARENAS, affordances, category_facts, get_model
from libero_ll.bddl.parser import BddlError, parse_file
from libero_ll.bddl.spec import PREDICATE_SPELLING, TaskSpec
from libero_ll.bddl.validate import BddlWarning, validate_with_warnings
from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs
from libero_ll.envs.render import ROBOT_MESHES, CameraRenderer, draw_robot, prepare_offscreen
from libero_ll.errors import LiberoError
from libero_ll.signals import interrupts_held

CAMERAS = {"agentview_rgb": "agentview", "eye_in_hand_rgb": "robot0_eye_in_hand"}
CONTROLLERS = ("lean", "robosuite")


@dataclass
class EnvConfig:
    """How a task is simulated and observed.

    Args:
        image_size: height and width of both camera images, pixels (128 in the paper's protocol).
        control_freq: policy steps per simulated second (20 Hz in the paper).
        max_steps: episode cap for rollouts, policy steps (600 in the paper).
        shadows: draw shadows (slower in software rendering).
        reflections: draw reflections (slower).
        robot_mesh: "visual" draws the robot's detailed meshes; "simplified" draws them with about a
            fifth of their triangles (`render.simplify_meshes`; the images differ from "visual" in about
            1.6% of the pixels at 128 px); "collision" draws its simple collision hulls. On a CPU with
            two 128 px cameras an env step runs about 1.9 to 2.1 times as fast with "simplified" and
            3.1 to 3.2 times as fast with "collision" (docs/speed.md's benchmark; the scene objects look the
            same in all three).
        settle_steps: zero-action policy steps after placing objects so that they come to rest.
        render: whether to render camera images at all (off for fast expert dry runs).
        cameras: observation key -> camera name of the images in each observation.
        controller: "lean" computes robosuite's default Panda controller (operational-space pose
            control, 0.05 m and 0.5 rad per unit of action, and the gripper) in our own compiled code
            between MuJoCo's step calls (envs/control.py): a step without cameras takes under a quarter
            of the time. "robosuite" runs robosuite's own. The same actions move the hand alike up to
            rounding, so a demo replays exactly only under the controller it was recorded with (kept in
            its file's env_args).
    """

    image_size: int = 128
    control_freq: int = 20
    max_steps: int = 600
    shadows: bool = False
    reflections: bool = False
    robot_mesh: str = "visual"
    settle_steps: int = 10
    render: bool = True
    cameras: dict = field(default_factory=lambda: dict(CAMERAS))
    controller: str = "lean"


# The task files' warnings said in this process: each is said once, however many times and from wherever its
# task is loaded (a run loads each task for its instruction, its initial states and every environment built).
_SAID: set[str] = set()


def load_task(path_or_spec) -> TaskSpec:
    """A validated TaskSpec from a path or an already parsed spec; LiberoError listing every problem. Each
    warning of the file (BddlWarning) is said once in a process."""
    spec = path_or_spec if isinstance(path_or_spec, TaskSpec) else parse_file(str(path_or_spec))
    errors, notes = validate_with_warnings(spec, affordances(), category_facts())
    if errors:
        raise LiberoError("\n".join(str(e) for e in errors))
    for note in map(str, notes):
        if note not in _SAID:
            _SAID.add(note)
            warnings.warn(note, BddlWarning, stacklevel=3)
    if spec.scene_family not in ARENAS:
        raise LiberoError(
            f"{spec.path or '<task>'}: scene family {spec.scene_family!r} is not available yet; "
            f"available: {', '.join(ARENAS.names())}"
        )
    return spec


def say_task_warnings(task_files) -> None:
    """Say the warnings of several task files (a suite's) before their work begins: a warning that several of
    them share word for word (LIBERO's files of one suite share their scene) is said once, at its first file,
    with how many more files it is in, instead of once for each. Files that do not parse or validate are passed
    over here; `load_task` raises their problems where each is loaded. `load_task` then says none of these
    again."""
    from pathlib import Path

    groups: dict[str, list[BddlError]] = {}
    for f in task_files:
        try:
            spec = parse_file(str(f))
        except (BddlError, OSError):
            continue
        _, notes = validate_with_warnings(spec, affordances(), category_facts())
        for note in notes:
            if str(note) not in _SAID:
                groups.setdefault(note.message, []).append(note)
    for notes in groups.values():
        first = notes[0]
        others = list(dict.fromkeys(n.path for n in notes if n.path != first.path))
        text = str(first)
        if others:
            names = [Path(p).name for p in others]
            listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            text += f" (the same in {len(others)} more file{'s' * (len(others) > 1)}: {listed})"
        warnings.warn(text, BddlWarning, stacklevel=2)
        _SAID.update(map(str, notes))


class LiberoEnv:
    """One task's simulation: reset (sampled or from a stored state), step, observe, check the goal.

    Args:
        task: a task file path or a parsed TaskSpec.
        config: EnvConfig (defaults: the paper's 128x128 images at 20 Hz).
    """

    def __init__(self, task, config: EnvConfig | None = None):
        self.config = config or EnvConfig()
        if self.config.controller not in CONTROLLERS:
            raise LiberoError(f"controller must be one of {', '.join(CONTROLLERS)}, not {self.config.controller!r}")
        for key, least in (("image_size", 1), ("control_freq", 1), ("max_steps", 1), ("settle_steps", 0)):
            value = getattr(self.config, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise LiberoError(f"EnvConfig.{key} must be a whole number of at least {least}, not {value!r}")
        if self.config.robot_mesh not in ROBOT_MESHES:
            raise LiberoError(f"robot_mesh must be one of {', '.join(ROBOT_MESHES)}, not {self.config.robot_mesh!r}")
        self.spec = load_task(task)
        self.arena = ARENAS.get(self.spec.scene_family)
        ensure_gl_backend()
        quiet_simulator_logs()
        from robosuite.controllers import load_composite_controller_config

        from libero_ll.envs.placement import sample_placements
        from libero_ll.envs.predicates import Geometry
        from libero_ll.envs.scene import MODEL_LOADING, TaskScene

        self._sample_placements = sample_placements
        ctrl = load_composite_controller_config(controller="BASIC", robot="Panda")
        # One thread at a time from the scene's load to the reading of its XML (below).
        with MODEL_LOADING:
            # Hulls drawn: the robot's visual meshes are not loaded (less memory, the same physics).
            self.scene = TaskScene(self.spec, self.arena, ctrl, control_freq=self.config.control_freq,
                                   robot_visuals=self.config.robot_mesh != "collision")
            self.scene.reset()
            self.model = self.scene.sim.model._model
            self.data = self.scene.sim.data._data
            import mujoco

            instances = self.spec.instances()
            workspace = next(i for i, c in instances.items() if get_model(c).kind == "workspace")
            self.workspace = workspace
            bodies = {inst: obj.root_body for inst, obj in self.scene.mj_objects.items()}
            range_regions = {name: (r.target, list(r.ranges)) for name, r in self.spec.regions.items() if r.ranges}
            joints = {}
            for inst, obj in self.scene.mj_objects.items():
                for part in get_model(instances[inst]).parts:
                    jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{inst}_{part.name}_joint")
                    joints[(inst, part.name)] = (int(self.model.jnt_qposadr[jid]), part.joint.kind)
            self.geometry = Geometry(
                self.model,
                self.data,
                instances,
                bodies,
                (workspace, "table"),
                range_regions,
                [0, 0, self.arena.table_top_z],
                joints,
            )
            self._joint_qpos = {
                inst: self.model.jnt_qposadr[self.model.body_jntadr[self.geometry.body_of[inst]]]
                for inst in self.scene.mj_objects
                if get_model(instances[inst]).kind == "object"
            }
            # Fixtures have no free joint: their placement is part of the model, and it travels with the
            # state (see get_state) so that a stored initial state restores the whole layout.
            self._fixtures = sorted(i for i in self.scene.mj_objects if get_model(instances[i]).kind == "fixture")
            # Burners that glow while their stove's knob is on.
            self._burners = []
            for inst in self.scene.mj_objects:
                gid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, f"{inst}_burner")
                if gid >= 0 and (inst, "knob") in joints:
                    self._burners.append((gid, inst, self.model.geom_rgba[gid].copy()))
            robot = self.scene.robots[0]
            self._arm_qpos = np.array(robot._ref_joint_pos_indexes)
            self._grip_qpos = np.array(robot._ref_gripper_joint_pos_indexes["right"])
            self._eef_site = robot.eef_site_id["right"]
            self._lean = None
            if self.config.controller == "lean":
                from libero_ll.envs.control import LeanControl

                substeps = int(self.scene.control_timestep / self.scene.model_timestep)
                self._lean = LeanControl(self.model, self.data, robot, substeps)
            self._renderers: dict = {}
            self._style_rendering()
            # MuJoCo writes out the XML of the model it loaded last in the process, whichever model it is asked
            # about and whichever thread loaded it: read it now, before another environment is built (and under
            # MODEL_LOADING since the load, so that no other thread loads one meanwhile). It names the type of
            # each mesh file that MuJoCo took from its cache of files read before in the process, not of one it
            # read now: without that note, the XML is the same whatever the process built before.
            self._xml = re.sub(r' content_type="[^"]*"', "", self.scene.sim.model.get_xml())
        self.steps = 0

    # ------------------------------------------------------------------ rendering

    def _style_rendering(self) -> None:
        import mujoco

        m = self.model
        prepare_offscreen(m, self.config.image_size)
        bodies = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[g]) or "" for g in range(m.ngeom)]
        # Our instances' colliding geoms are in group 0 (they carry the mass); show them in group 2.
        ours = tuple(f"{inst}_" for inst in self.scene.mj_objects)
        for g, body in enumerate(bodies):
            if m.geom_group[g] == 0 and body.startswith(ours):
                m.geom_group[g] = 2
        draw_robot(m, bodies, self.config.robot_mesh)

    def render(self, camera: str, size: int | None = None) -> np.ndarray:
        """An upright RGB image (row 0 is the top) from a named camera, uint8 (H, W, 3)."""
        return self._renderer(size).render(self.data, camera)

    def _renderer(self, size: int | None = None) -> CameraRenderer:
        size = size or self.config.image_size
        r = self._renderers.get(size)
        if r is None:
            r = CameraRenderer(self.model, size, self.config.shadows, self.config.reflections, xml=self._xml,
                               columns=len(self.config.cameras))
            self._renderers[size] = r
        return r

    # ------------------------------------------------------------------ state

    def get_state(self) -> np.ndarray:
        """The simulator state, replayable with `reset_to`.

        The flattened MuJoCo state (time, qpos, qvel), followed by the pose of every fixture
        (x, y, z and quaternion w, x, y, z; fixtures in name order), since fixtures are placed in
        the model rather than by joints.
        """
        sim = np.asarray(self.scene.sim.get_state().flatten(), dtype=np.float64)
        return np.concatenate([sim, self._fixture_layout()])

    def _fixture_layout(self) -> np.ndarray:
        out = []
        for inst in self._fixtures:
            bid = self.geometry.body_of[inst]
            out.append(np.concatenate([self.model.body_pos[bid], self.model.body_quat[bid]]))
        return np.concatenate(out) if out else np.zeros(0)

    def _set_fixture_layout(self, layout: np.ndarray) -> None:
        for k, inst in enumerate(self._fixtures):
            bid = self.geometry.body_of[inst]
            self.model.body_pos[bid] = layout[7 * k : 7 * k + 3]
            self.model.body_quat[bid] = layout[7 * k + 3 : 7 * k + 7]

    def _reset_scene(self) -> None:
        # robosuite's reset puts the arm home and forgets the gripper command; the lean controller too.
        self.scene.reset()
        if self._lean is not None:
            self._lean.reset()

    def _advance(self, action: np.ndarray) -> None:
        """One control period of physics under a clipped 7-number action."""
        if self._lean is not None:
            self._lean.step(action)
        else:
            self.scene.step(action)

    def _sync_controller(self) -> None:
        # The operational-space controller keeps goals from the previous episode; start from here.
        import mujoco

        mujoco.mj_forward(self.model, self.data)
        self.scene.robots[0].composite_controller.reset()
        self.geometry.record_start()
        self._update_indicators()
        self.steps = 0

    def _update_indicators(self) -> None:
        from libero_ll.envs import thresholds as th

        for gid, inst, off_rgba in self._burners:
            on = self.geometry.joint_value(inst, "knob") >= th.KNOB_ON
            self.model.geom_rgba[gid] = (0.95, 0.25, 0.08, 1.0) if on else off_rgba

    def reset(self, seed: int | None = None, positions: dict | None = None) -> dict:
        """Start an episode from a freshly sampled initial state.

        Args:
            seed: seeds the placement sampler; the same seed gives the same initial state.
            positions: instance -> world (x, y) for things that must start at a given point of
                their region instead of a sampled one (see placement.sample_placements).
        """
        if seed is not None and int(seed) < 0:
            raise LiberoError(f"{self.spec.path}: a reset seed must be 0 or more, got {seed}")
        rng = np.random.default_rng(seed)
        self._reset_scene()
        layout = self._sample_placements(self.spec, self.arena, rng, positions)
        for inst, pose in layout.poses.items():
            if inst in self._joint_qpos:
                adr = self._joint_qpos[inst]
                self.data.qpos[adr : adr + 7] = np.concatenate([pose.pos, pose.quat_wxyz()])
            else:
                bid = self.geometry.body_of[inst]
                self.model.body_pos[bid] = pose.pos
                self.model.body_quat[bid] = pose.quat_wxyz()
        for key, (adr, _) in self.geometry.joints.items():
            self.data.qpos[adr] = layout.joints.get(key, 0.0)
        self.data.qvel[:] = 0
        if layout.crowded:
            # A region too tight for our footprints: let the simulator push overlapping things apart.
            from libero_ll.envs.placement import settle_overlaps

            settle_overlaps(self.model, self.data, list(self._joint_qpos.values()), self.geometry.geom_owner,
                            self.geometry.index[self.workspace])
        self._sync_controller()
        zero = np.zeros(7)
        zero[6] = -1.0
        for _ in range(self.config.settle_steps):
            self._advance(zero)
        self.data.time = 0.0
        self._sync_controller()
        return self.observe()

    def reset_to(self, state: np.ndarray) -> dict:
        """Start an episode from a stored state (a fixed initial state or a demo's init_state)."""
        self._reset_scene()
        state = np.asarray(state, dtype=np.float64)
        expected = self.get_state().shape[0]
        if state.shape != (expected,):
            raise LiberoError(
                f"state has {state.shape[0] if state.ndim else 0} numbers but this task's simulator state has "
                f"{expected}; was it recorded from a different task file?"
            )
        n_layout = 7 * len(self._fixtures)
        self._set_fixture_layout(state[expected - n_layout :])
        self.scene.sim.set_state_from_flattened(state[: expected - n_layout])
        self._sync_controller()
        return self.observe()

    def loose_objects(self) -> list[str]:
        """The instances that lie loose in the scene (a free joint each)."""
        return list(self._joint_qpos)

    def show_state(self, state: np.ndarray, shifts: dict | None = None) -> None:
        """Put the scene in a stored state to look at it (render, read geometry), without starting an episode.

        Unlike `reset_to`, the controller is left as it is and nothing is stepped: the state is set and the
        kinematics computed. `shifts` moves loose objects sideways first: instance -> (dx, dy), metres.
        """
        import mujoco

        sim_size = len(state) - 7 * len(self._fixtures)
        self._set_fixture_layout(state[sim_size:])
        self.scene.sim.set_state_from_flattened(state[:sim_size])
        for inst, d in (shifts or {}).items():
            adr = self._joint_qpos[inst]
            self.data.qpos[adr : adr + 2] += np.asarray(d, dtype=np.float64)
        mujoco.mj_forward(self.model, self.data)

    def sample_init_states(self, n: int, seed: int) -> np.ndarray:
        """n initial states sampled with a fixed seed, (n, S): the evaluator starts rollouts from these."""
        if n < 1:
            raise LiberoError(f"{self.spec.path}: the number of initial states must be 1 or more, got {n}")
        if seed < 0:
            raise LiberoError(f"{self.spec.path}: the seed of initial states must be 0 or more, got {seed}")
        rng = np.random.default_rng(seed)
        states = []
        for _ in range(n):
            self.reset(seed=int(rng.integers(2**31)))
            states.append(self.get_state())
        return np.stack(states)

    # ------------------------------------------------------------------ stepping

    def step(self, action: np.ndarray) -> tuple[dict, bool, dict]:
        """Apply one action (7 numbers in [-1, 1]) for one control period.

        Returns:
            (observation, done, info): done when the goal holds or max_steps is reached;
            info["success"] says whether the goal holds.
        """
        action = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        if action.shape != (7,):
            raise LiberoError(f"an action is 7 numbers, got shape {action.shape}")
        if np.isnan(action).any():
            # MuJoCo would take it and leave the scene in an unphysical state; infinities clip to +-1.
            raise LiberoError(f"an action holds NaN at step {self.steps}: {action.tolist()}")
        self._advance(action)
        self.steps += 1
        if self._burners:
            self._update_indicators()
        success = self.check_goal()
        done = success or self.steps >= self.config.max_steps
        return self.observe(), done, {"success": success}

    def check_goal(self) -> bool:
        """Whether the task's goal formula holds now."""
        return self.geometry.evaluate(self.spec.goal)

    def predicate_values(self, predicates) -> list[tuple[str, bool]]:
        """(text, holds) for each predicate, for `libero-ll check --load`."""
        out = []
        for p in predicates:
            try:
                v = self.geometry.holds(p)
            except LiberoError as e:
                # Said once (the geometry's messages may already start with the predicate), and where the
                # task file wrote the predicate when it came from one.
                text = f"{p.name}({', '.join(p.args)})"
                said = str(e)
                for prefix in (f"{text}: ", f"{PREDICATE_SPELLING.get(p.name, p.name)}: "):
                    said = said.removeprefix(prefix)
                message = f"{text}: {said}"
                if p.loc is not None and p.loc.line:
                    raise BddlError.at(p.loc, message) from None
                raise LiberoError(message) from None
            out.append((f"({p.name} {' '.join(p.args)})", v))
        return out

    # ------------------------------------------------------------------ observations

    def robot_proprio(self) -> dict:
        """joint_states (7), gripper_states (2), ee_states (the grip site's position 3 + its orientation as an
        axis-angle 3, the angle within [0, π]), and the grip site's position and rotation matrix (`ee_pos`,
        `ee_rot`). LIBERO's files record the hand body's orientation instead (a quarter turn about the hand's
        axis from the site's); they are read into this frame (`libero_ll.data.hdf5`, DatasetInfo.ee_orientation).
        """
        d = self.data
        pos = d.site_xpos[self._eef_site].copy()
        rot = d.site_xmat[self._eef_site].reshape(3, 3).copy()
        return {
            "joint_states": d.qpos[self._arm_qpos].astype(np.float32),
            "gripper_states": d.qpos[self._grip_qpos].astype(np.float32),
            "ee_states": np.concatenate([pos, rotation_to_axis_angle(rot)]).astype(np.float32),
            "ee_pos": pos,
            "ee_rot": rot,
        }

    def robot_state(self) -> np.ndarray:
        """The 9-number robot state of the dataset layout: gripper (2), eef position (3), eef quaternion (4, xyzw),
        the grip site's, as in ee_states."""
        p = self.robot_proprio()
        return np.concatenate([p["gripper_states"], p["ee_pos"], rotation_to_quat_xyzw(p["ee_rot"])])

    def observe(self) -> dict:
        """joint_states (7), gripper_states (2), ee_states (6: position, axis-angle), ee_pos (3), ee_rot6 (6) and
        each camera's image (H, W, 3) uint8, upright, under its observation key (only when rendering is on)."""
        p = self.robot_proprio()
        obs = {k: p[k] for k in ("joint_states", "gripper_states", "ee_states")}
        # The hand's pose in continuous form: ee_states' axis-angle part jumps between opposite vectors of
        # length near π when the hand points straight down, so a policy reads these instead. ee_rot6 is
        # the rotation matrix's first two columns (data.hdf5.axis_angle_to_rot6 makes the same from a file).
        obs["ee_pos"] = p["ee_pos"].astype(np.float32)
        obs["ee_rot6"] = np.concatenate([p["ee_rot"][:, 0], p["ee_rot"][:, 1]]).astype(np.float32)
        if self.config.render:
            keys, cams = zip(*self.config.cameras.items()) if self.config.cameras else ((), ())
            obs.update(zip(keys, self._renderer().render_many(self.data, cams)))
        return obs

    def model_xml(self) -> str:
        """The MJCF of the whole scene as built, stored with every demo."""
        return self._xml

    def close(self) -> None:
        """Free the simulator and the cameras' GL contexts. A Ctrl-C that comes meanwhile is raised once they
        are freed: cut in half, robosuite's freeing left a simulator whose later collection printed tracebacks
        (`MjSim.free`, `_render_context_offscreen`), and one inside its garbage collection was lost."""
        with interrupts_held():
            for r in self._renderers.values():
                r.close()
            self._renderers.clear()
            self.scene.close()


def rotation_to_axis_angle(rot: np.ndarray) -> np.ndarray:
    """Axis-angle vector (axis times angle, radians) of a 3x3 rotation matrix."""
    cos = np.clip((np.trace(rot) - 1) / 2, -1.0, 1.0)
    angle = float(np.arccos(cos))
    if angle < 1e-6:
        return np.zeros(3)
    if np.pi - angle < 1e-4:
        # Near 180 degrees the antisymmetric part vanishes; read the axis off the diagonal.
        axis = np.sqrt(np.clip((np.diag(rot) + 1) / 2, 0, None))
        i = int(np.argmax(axis))
        for j in range(3):
            if j != i:
                axis[j] = np.copysign(axis[j], rot[i, j] + rot[j, i])
        return axis / np.linalg.norm(axis) * angle
    axis = np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]]) / (2 * np.sin(angle))
    return axis * angle


def rotation_to_quat_xyzw(rot: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a 3x3 rotation matrix."""
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot, dtype=np.float64).reshape(9))
    return np.array([q[1], q[2], q[3], q[0]])
