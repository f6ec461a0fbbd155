"""Demonstration files: the HDF5 layout shared with LIBERO and robomimic, an atomic writer and readers.

The layout is described in the datasets spec: one file per task, ``data/demo_<i>/...`` groups, and
dataset-level attributes that say where the demos came from and how images are oriented.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import h5py
import numpy as np

from libero_ll.errors import LiberoError

# Sizes of the low-dim observation keys a policy can read.
LOWDIM_SIZES = {"joint_states": 7, "gripper_states": 2, "ee_states": 6, "ee_pos": 3, "ee_rot6": 6}


def axis_angle_to_rot6(axis_angle: np.ndarray) -> np.ndarray:
    """The first two columns of the rotation matrices of (T, 3) axis-angle vectors, (T, 6) float32.

    A continuous code of the hand's orientation: the axis-angle vector of a hand pointing straight down
    has a length near pi and flips to its opposite under the smallest turn, the two columns do not.
    """
    rot = axis_angle_to_matrix(axis_angle)
    return np.concatenate([rot[..., 0], rot[..., 1]], axis=-1).astype(np.float32)


def axis_angle_to_matrix(axis_angle: np.ndarray) -> np.ndarray:
    """The rotation matrices of (T, 3) axis-angle vectors, (T, 3, 3) float64 (Rodrigues' formula)."""
    v = np.asarray(axis_angle, dtype=np.float64)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    axis = np.divide(v, angle, out=np.zeros_like(v), where=angle > 1e-12)
    x, y, z = axis[..., 0:1], axis[..., 1:2], axis[..., 2:3]
    c, s = np.cos(angle), np.sin(angle)
    k = 1.0 - c
    col0 = np.concatenate([c + x * x * k, y * x * k + z * s, z * x * k - y * s], axis=-1)
    col1 = np.concatenate([x * y * k - z * s, c + y * y * k, z * y * k + x * s], axis=-1)
    col2 = np.concatenate([x * z * k + y * s, y * z * k - x * s, c + z * z * k], axis=-1)
    return np.stack([col0, col1, col2], axis=-1)


def quat_to_axis_angle(quats_xyzw: np.ndarray) -> np.ndarray:
    """(T, 3) axis-angle vectors of (T, 4) unit quaternions (x, y, z, w) as robosuite (and LIBERO's files) make
    them: angle 2 acos(w) in [0, 2π), following the quaternion's sign."""
    q = np.asarray(quats_xyzw, dtype=np.float64)
    w = np.clip(q[:, 3:4], -1.0, 1.0)
    den = np.sqrt(1.0 - w * w)
    scale = np.divide(2.0 * np.arccos(w), den, out=np.zeros_like(den), where=den > 0.0)
    return q[:, :3] * scale


# The frames the hand's orientation is recorded in (ee_states' axis-angle part, ee_rot6 and robot_states'
# quaternion), attribute ``ee_orientation`` of ``data/``: the grip site's, what the environment observes and the
# files made here hold (the angle within [0, π]); or the hand body's, what LIBERO's files (robosuite's
# robot0_eef_quat) and LeRobot's LIBERO datasets hold (the angle 2 acos w of the body's quaternion, up to 2π).
# The site is turned 90 degrees about the hand's axis from the body. Readers get the frame they ask for.
GRIP_SITE = "grip_site"
HAND_BODY = "hand_body"
EE_ORIENTATIONS = (GRIP_SITE, HAND_BODY)
# What the files made here hold, and what the environment observes.
EE_ORIENTATION = GRIP_SITE
# The grip site's rotation in the hand body's frame (site = body @ this), fixed by the Panda's gripper mount.
SITE_IN_HAND = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def _simulator_imports_ready() -> None:
    """Before this module first imports MuJoCo or robosuite: a headless GL backend chosen (MuJoCo takes its
    backend as it is imported, and a scene built later in the process draws through it) and robosuite's
    start-up chatter kept off the console."""
    from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs

    ensure_gl_backend()
    quiet_simulator_logs()


@functools.lru_cache(maxsize=1)
def _panda_kinematics():
    """MuJoCo model and data of the Panda arm alone (robosuite's model, no meshes needed for kinematics) and the
    hand body's id: the sign of the hand's quaternion, as the scenes' MuJoCo computes it, follows the joints."""
    _simulator_imports_ready()
    import mujoco
    from robosuite.models.robots import Panda

    from libero_ll.envs.scene import MODEL_LOADING

    with MODEL_LOADING:  # a model loaded while an environment is built would be the XML that one records
        model = mujoco.MjModel.from_xml_string(Panda(idn=0).get_xml())
    return model, mujoco.MjData(model), mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "robot0_right_hand")


def hand_quats_from_site(site_rot: np.ndarray, joint_states: np.ndarray) -> np.ndarray:
    """The hand body's quaternions (T, 4, xyzw) from the grip site's rotation matrices (T, 3, 3) and the arm's
    joint angles (T, 7): the rotation from the site's, exactly; the sign (the same rotation has two
    quaternions) that of the quaternion the scene's MuJoCo computes, from the joints."""
    _simulator_imports_ready()
    import mujoco

    body = np.asarray(site_rot, dtype=np.float64) @ SITE_IN_HAND.T
    model, data, hand = _panda_kinematics()
    out = np.zeros((len(body), 4))
    q = np.zeros(4)
    for t, (rot, joints) in enumerate(zip(body, np.asarray(joint_states, dtype=np.float64))):
        mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot).reshape(9))
        data.qpos[:7] = joints
        mujoco.mj_kinematics(model, data)
        ref = data.xquat[hand]
        sign = -1.0 if float(q @ ref) < 0.0 else 1.0
        out[t] = sign * np.array([q[1], q[2], q[3], q[0]])
    return out


def quat_to_matrix(quats_xyzw: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotation matrices of (T, 4) quaternions (x, y, z, w), normalised first."""
    q = np.asarray(quats_xyzw, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def site_from_hand(hand_rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grip site's axis-angle vectors (T, 3) and quaternions (T, 4, xyzw) from the hand body's rotation
    matrices (T, 3, 3), as the environment computes them from the site's rotation."""
    from libero_ll.envs.env import rotation_to_axis_angle, rotation_to_quat_xyzw

    site = np.asarray(hand_rot, dtype=np.float64) @ SITE_IN_HAND
    return (np.stack([rotation_to_axis_angle(r) for r in site]).reshape(-1, 3),
            np.stack([rotation_to_quat_xyzw(r) for r in site]).reshape(-1, 4))


# Keys a file may lack that are computed from another key (files made before they were written, and
# files from other tools): the hand's position is the first three numbers of ee_states, its orientation's
# continuous code comes from the last three.
DERIVED_OBS = {
    "ee_pos": ("ee_states", lambda a: np.ascontiguousarray(a[:, :3])),
    "ee_rot6": ("ee_states", lambda a: axis_angle_to_rot6(a[:, 3:6])),
}
IMAGE_KEYS = ("agentview_rgb", "eye_in_hand_rgb")
# What robosuite's environments (and so robomimic's files) call the readings these files name otherwise.
ROBOSUITE_OBS_NAMES = {
    "agentview_rgb": "agentview_image",
    "eye_in_hand_rgb": "robot0_eye_in_hand_image",
    "joint_states": "robot0_joint_pos",
    "gripper_states": "robot0_gripper_qpos",
    "ee_pos": "robot0_eef_pos",
}
# Row 0 is the top of the picture, as a person sees it. Written into every file made here.
IMAGE_CONVENTION = "upright"
# Row 0 is the bottom of the picture (OpenGL's framebuffer order): robosuite's default, which is what
# robomimic's files and LIBERO's hold when they do not say otherwise.
OPENGL_CONVENTION = "opengl"
IMAGE_CONVENTIONS = (IMAGE_CONVENTION, OPENGL_CONVENTION)
# LIBERO's files say which order their images are in with this attribute of ``data/``: robosuite's macro
# IMAGE_CONVENTION, "opengl" (bottom row first, the default) or "opencv" (top row first, as ours).
LIBERO_CONVENTION_ATTR = "macros_image_convention"
LIBERO_CONVENTIONS = {"opengl": OPENGL_CONVENTION, "opencv": IMAGE_CONVENTION}

COMPRESSIONS = ("gzip", "lzf", None)
_DEMO_NAME = re.compile(r"^demo_(\d+)$")
# The attributes of ``data/`` that the layout names; any other attribute there is a statistic of the
# dataset (lengths, expert success rate, collection seed, ...) and is read into ``DatasetInfo.stats``.
LAYOUT_ATTRS = (
    "env_name",
    "problem_info",
    "bddl_file_name",
    "bddl_file_content",
    "env_args",
    "num_demos",
    "total",
    "image_convention",
    "generator",
    "ee_orientation",
)


def missing_obs_error(path, name: str, key: str, obs) -> LiberoError:
    """The error for demo `name` of file `path` whose obs group `obs` (None when it has none) lacks `key`:
    it lists the readings the demo holds, and says so when one is robosuite's name for `key`."""
    if obs is None:
        return LiberoError(f"demo file {path}: data/{name} has no 'obs' group (needed: '{key}')")
    held = sorted(obs.keys())
    text = f"demo file {path}: data/{name}/obs has no '{key}' dataset (it holds: {', '.join(held) or 'nothing'})"
    other = ROBOSUITE_OBS_NAMES.get(key)
    if other in held:
        text += (f"; '{other}' is robosuite's name for it: a file recorded from robosuite's observations (as "
                 f"robomimic's are) needs its readings renamed to this project's names ('{other}' to '{key}')")
    return LiberoError(text)


@dataclass
class Demo:
    """One demonstration, in memory.

    Attributes:
        actions: (T, 7) float actions, one per control step.
        states: (T, S) float64 flattened simulator state before each action (replayable).
        robot_states: (T, 9) float robot proprioception (gripper 2, ee position 3, ee quaternion 4).
        obs: observation key -> (T, ...) array; images are uint8 (T, H, W, 3), upright.
        init_state: (S,) simulator state the episode was reset to.
        model_file: MJCF XML of the scene the demo was recorded in.
        seed: seed that made the demo; None when a file read from elsewhere does not record it.
    Rewards and dones are not held: they are derived on write (1 at the last step, else 0).
    """

    actions: np.ndarray
    states: np.ndarray
    robot_states: np.ndarray
    obs: dict[str, np.ndarray]
    init_state: np.ndarray
    model_file: str = ""
    seed: int | None = None

    @property
    def num_steps(self) -> int:
        """Number of steps T."""
        return int(len(self.actions))

    @classmethod
    def from_record(cls, rec: dict, model_file: str, seed: int | None) -> Demo:
        """A demo from an episode recorded step by step (see `record_step`)."""
        return cls(
            actions=np.stack(rec["actions"]),
            states=np.stack(rec["states"]),
            robot_states=np.stack(rec["robot_states"]),
            obs={k: np.stack([o[k] for o in rec["obs"]]) for k in rec["obs"][0]},
            init_state=rec["init_state"],
            model_file=model_file,
            seed=seed,
        )


def new_record(init_state: np.ndarray) -> dict:
    """An empty step-by-step episode record starting from `init_state`."""
    return {"obs": [], "actions": [], "states": [], "robot_states": [], "init_state": init_state}


def record_step(rec: dict, env, obs: dict, action: np.ndarray) -> None:
    """Append what the layout stores of one step: the observation and state before `action`, and it."""
    rec["obs"].append(obs)
    rec["states"].append(env.get_state())
    rec["robot_states"].append(env.robot_state())
    rec["actions"].append(action)


@dataclass
class DatasetInfo:
    """The dataset-level attributes of one demo file.

    Dict attributes missing from a file read as ``{}``; other missing attributes read as None
    (files made by LIBERO or robomimic lack ``generator`` and ``image_convention``). ``stats`` holds
    every other attribute of ``data/`` as plain Python values (lists for arrays): the writer's
    ``demo_lengths``, ``length_mean``/``length_min``/``length_max``, and what the collector adds
    (``expert_success_rate``, ``attempts``, ``collect_seed``, ``image_size``, ...).

    Two fields are read from more than one attribute: ``image_rows`` is the order of the images' rows,
    ``"upright"`` or ``"opengl"`` (from ``image_convention``, else LIBERO's ``macros_image_convention``, else
    OpenGL's, robomimic's default); ``ee_orientation`` is the frame of the hand's orientation in ee_states,
    ee_rot6 and robot_states: ``"grip_site"`` (the files made here, from the attribute or, in files made before
    it, from what made them) or ``"hand_body"`` (LIBERO's, robomimic's and LeRobot imports).
    """

    path: Path
    env_name: str | None
    problem_info: dict = field(default_factory=dict)
    bddl_file_name: str | None = None
    bddl_file_content: str | None = None
    env_args: dict = field(default_factory=dict)
    num_demos: int = 0
    total: int = 0
    image_convention: str | None = None
    image_rows: str = OPENGL_CONVENTION
    generator: str | None = None
    ee_orientation: str = HAND_BODY
    stats: dict = field(default_factory=dict)

    @property
    def control_freq(self) -> float | None:
        """The policy steps per second the demos were recorded at, as env_args hold it (at the top, as LIBERO's
        files and LeRobot imports keep it, or in env_kwargs, as ours do); None when they do not say."""
        args = self.env_args if isinstance(self.env_args, dict) else {}
        kwargs = args.get("env_kwargs") if isinstance(args.get("env_kwargs"), dict) else {}
        for where in (args, kwargs):
            rate = where.get("control_freq")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                return rate
        return None


# robomimic's kind of environment (its EnvType) for a robosuite environment, kept in env_args["type"].
ROBOMIMIC_ROBOSUITE_TYPE = 1


class DemoWriter:
    """Writes demos into one task file, atomically.

    Use as a context manager: ``with DemoWriter(path, ...) as w: w.add(demo)``. Everything goes to a
    temporary file in the destination folder that is renamed to ``path`` only on a clean close; if the
    with-block raises, the temporary file is removed and a file already at ``path`` is left untouched.
    On close, the demo lengths and their mean, min and max are written into the attributes of
    ``data/`` (``demo_lengths``, ``length_mean``, ``length_min``, ``length_max``); `set_attrs` adds
    more statistics.

    Args:
        path: destination ``.hdf5`` file; its folder is created if needed.
        env_name: name of the environment class the demos ran in.
        problem_info: task metadata (problem name, language instruction, ...), stored as JSON.
        bddl_file_name: the task file's path or name.
        bddl_file_content: the task file's text.
        env_args: keyword arguments that rebuild the environment, stored as JSON, with robomimic's
            ``"type"`` (1, a robosuite environment) unless they hold one.
        generator: what made the demos, e.g. ``"scripted_expert 0.1.0"`` or ``"teleoperation"``.
        compression: ``"gzip"``, ``"lzf"`` or None, used for images (and states).
        ee_orientation: the frame of the hand's orientation the demos hold (``GRIP_SITE``, as the environment
            observes it, or ``HAND_BODY``, as LIBERO's files hold it).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        env_name: str,
        problem_info: dict,
        bddl_file_name: str,
        bddl_file_content: str,
        env_args: dict,
        generator: str,
        compression: str | None = "gzip",
        ee_orientation: str = EE_ORIENTATION,
    ) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
        if ee_orientation not in EE_ORIENTATIONS:
            raise ValueError(f"ee_orientation must be one of {EE_ORIENTATIONS}, got {ee_orientation!r}")
        self.ee_orientation = ee_orientation
        self.path = Path(path)
        self.compression = compression
        self._num_demos = 0
        self._total = 0
        self._lengths: list[int] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self._tmp_path = Path(tmp)
        self._file: h5py.File | None = None
        try:
            # Format 1.8+ stores large attributes densely; scene MJCF strings exceed the 64 KiB limit
            # of the oldest format. Every h5py that LIBERO or robomimic use reads it.
            self._file = h5py.File(self._tmp_path, "w", libver=("v108", "latest"))
            data = self._file.create_group("data")
            data.attrs["env_name"] = env_name
            data.attrs["problem_info"] = json.dumps(problem_info)
            data.attrs["bddl_file_name"] = str(bddl_file_name)
            data.attrs["bddl_file_content"] = bddl_file_content
            # robomimic reads the kind of environment from env_args["type"] (1: robosuite) before anything else.
            data.attrs["env_args"] = json.dumps({"type": ROBOMIMIC_ROBOSUITE_TYPE, **env_args})
            data.attrs["generator"] = generator
            data.attrs["image_convention"] = IMAGE_CONVENTION
            data.attrs["ee_orientation"] = ee_orientation
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> DemoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    @property
    def num_demos(self) -> int:
        """Number of demos added so far."""
        return self._num_demos

    def add(self, demo: Demo) -> int:
        """Write one demo as ``data/demo_<i>`` and return its index i (0, 1, 2, ...)."""
        if self._file is None:
            raise ValueError(f"DemoWriter for {self.path} is already closed")
        actions = np.asarray(demo.actions)
        if actions.ndim != 2 or len(actions) == 0:
            raise ValueError(f"demo actions must be a non-empty (T, A) array, got shape {actions.shape}")
        T = len(actions)
        states = np.asarray(demo.states, dtype=np.float64)
        robot_states = np.asarray(demo.robot_states)
        for name, arr in (("states", states), ("robot_states", robot_states)):
            if arr.ndim != 2 or len(arr) != T:
                raise ValueError(f"demo {name} must have shape ({T}, n), got {arr.shape}")
        for key, arr in demo.obs.items():
            if len(arr) != T:
                raise ValueError(f"demo obs/{key} has {len(arr)} steps, actions have {T}")
            if key in IMAGE_KEYS and (np.asarray(arr).dtype != np.uint8 or np.ndim(arr) != 4):
                raise ValueError(f"demo obs/{key} must be uint8 (T, H, W, 3), got {np.asarray(arr).dtype}")

        index = self._num_demos
        with self._writing():
            self._add(demo, index, actions, states, robot_states)
        self._count(T)
        return index

    def _add(self, demo: Demo, index: int, actions, states, robot_states) -> None:
        T = len(actions)
        grp = self._file["data"].create_group(f"demo_{index}")
        grp.attrs["num_samples"] = T
        grp.attrs["init_state"] = np.asarray(demo.init_state, dtype=np.float64)
        grp.attrs["model_file"] = demo.model_file
        if demo.seed is not None:
            grp.attrs["seed"] = int(demo.seed)
        grp.create_dataset("actions", data=actions)
        grp.create_dataset("states", data=states, compression=self.compression)
        grp.create_dataset("robot_states", data=robot_states)
        end = np.zeros(T, dtype=np.uint8)
        end[-1] = 1
        grp.create_dataset("rewards", data=end)
        grp.create_dataset("dones", data=end)
        obs_grp = grp.create_group("obs")
        for key, arr in demo.obs.items():
            arr = np.asarray(arr)
            if arr.dtype == np.uint8 and arr.ndim == 4:
                # One frame per chunk: a reader decodes only the frames it asks for.
                obs_grp.create_dataset(
                    key, data=arr, chunks=(1, *arr.shape[1:]), compression=self.compression
                )
            else:
                obs_grp.create_dataset(key, data=arr)

    def copy_demo(self, path: str | os.PathLike, name: str = "demo_0") -> int:
        """Copy demo group ``data/<name>`` of another demo file in as the next ``data/demo_<i>``; return i.

        The group is copied as stored (compressed chunks are not re-encoded), so a demo written to a file
        of its own and copied here is identical to one added directly.
        """
        if self._file is None:
            raise ValueError(f"DemoWriter for {self.path} is already closed")
        with _open(path) as src:
            if name not in src["data"] or "actions" not in src["data"][name]:
                raise LiberoError(f"demo file {path}: no demo data/{name} with actions")
            held = _info(Path(path), src["data"]).ee_orientation
            if held != self.ee_orientation:
                raise LiberoError(
                    f"demo file {path} holds the hand's orientation in the frame {held!r}, {self.path} in "
                    f"{self.ee_orientation!r}: a demo cannot be copied from one into the other as it is"
                )
            grp = src["data"][name]
            T = int(grp.attrs.get("num_samples", len(grp["actions"])))
            index = self._num_demos
            with self._writing():
                src.copy(grp, self._file["data"], name=f"demo_{index}")
        self._count(T)
        return index

    def _count(self, steps: int) -> None:
        self._num_demos += 1
        self._total += steps
        self._lengths.append(steps)

    def set_attrs(self, attrs: dict[str, Any]) -> None:
        """Add dataset-level attributes (statistics) to ``data/``; dicts are stored as JSON text.

        The layout's own attributes (``env_name``, ``num_demos``, ...) cannot be set this way.
        """
        if self._file is None:
            raise ValueError(f"DemoWriter for {self.path} is already closed")
        clash = sorted(set(attrs) & set(LAYOUT_ATTRS))
        if clash:
            raise ValueError(f"attributes {clash} belong to the layout and are set by the writer")
        for key, value in attrs.items():
            self._file["data"].attrs[key] = json.dumps(value) if isinstance(value, dict) else value

    def close(self) -> None:
        """Write the totals and length statistics and move the file into place under its final name."""
        if self._file is None:
            return
        try:
            with self._writing():
                self._write_totals()
            # mkstemp made the temporary file private (0600); the dataset gets the usual permissions.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self._tmp_path, 0o666 & ~umask)
            try:
                os.replace(self._tmp_path, self.path)
            except IsADirectoryError:
                raise LiberoError(f"{self.path} is a folder: the demo file cannot take its place") from None
        except BaseException:
            self.abort()
            raise

    def _write_totals(self) -> None:
        """The totals and length statistics on ``data/``, then the file closed."""
        data = self._file["data"]
        data.attrs["num_demos"] = self._num_demos
        data.attrs["total"] = self._total
        data.attrs["image_convention"] = IMAGE_CONVENTION
        if self._lengths:
            lengths = np.asarray(self._lengths, dtype=np.int64)
            data.attrs["demo_lengths"] = lengths
            data.attrs["length_mean"] = float(lengths.mean())
            data.attrs["length_min"] = int(lengths.min())
            data.attrs["length_max"] = int(lengths.max())
        # Closing writes what HDF5 still holds; a close that fails (a full disk) is not tried again by abort().
        f, self._file = self._file, None
        f.close()

    def abort(self) -> None:
        """Discard everything written; a file already at ``path`` is left as it was."""
        if self._file is not None:
            try:
                self._file.close()
            except Exception:  # noqa: BLE001 - a file that cannot even close (a full disk) is deleted all the same
                pass
            finally:
                self._file = None
        self._tmp_path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def _writing(self):
        """Turn a failed write (a full disk, a file size limit: h5py raises OSError or RuntimeError) into a
        LiberoError naming the file, the temporary file discarded."""
        try:
            yield
        except (OSError, RuntimeError) as e:
            self.abort()
            # HDF5's text holds the system's own words ("error message = 'File too large'") after a time stamp.
            said = re.search(r"error message = '([^']*)'", str(e))
            why = said.group(1) if said else str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise LiberoError(f"cannot write the demo file {self.path} ({why}): a full disk or a file size limit? "
                              "The file is not written") from None


def _open(path: str | os.PathLike) -> h5py.File:
    path = Path(path)
    if path.is_dir():
        raise LiberoError(f"demo file {path} is a folder, not an HDF5 file")
    if not path.is_file():
        raise LiberoError(f"demo file {path} does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise LiberoError(f"demo file {path} is not a readable HDF5 file ({e})") from None
    if "data" not in f or not isinstance(f["data"], h5py.Group):
        f.close()
        raise LiberoError(f"demo file {path} has no 'data' group")
    return f


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value.item())
    return str(value)


def _json_attr(path: Path, attrs: h5py.AttributeManager, key: str) -> dict:
    if key not in attrs:
        return {}
    try:
        value = json.loads(_text(attrs[key]))
    except json.JSONDecodeError as e:
        raise LiberoError(f"demo file {path}: attribute data.{key} is not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise LiberoError(f"demo file {path}: attribute data.{key} must be a JSON object")
    return value


def _plain(value: Any) -> Any:
    """An attribute value as plain Python: str for text, list for arrays, int/float for numbers."""
    if isinstance(value, (bytes, str)):
        return _text(value)
    if isinstance(value, np.ndarray):
        return value.item() if value.shape == () else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _demo_names(data: h5py.Group) -> list[str]:
    """Demo group names in index order (demo_2 before demo_10)."""
    found = [(int(m.group(1)), name) for name in data.keys() if (m := _DEMO_NAME.match(name))]
    return [name for _, name in sorted(found)]


# What made the files of this library that held the grip site's orientation before files said which frame they
# hold: the scripted expert, teleoperation and the displaced-object corrections. Files that say nothing and were
# made elsewhere (LIBERO's, robomimic's), or imported from LeRobot (LIBERO's datasets), hold the hand body's.
_SITE_GENERATORS = ("scripted-expert", "teleoperation", "displaced-object corrections")


def _info(path: Path, data: h5py.Group) -> DatasetInfo:
    attrs = data.attrs
    names = _demo_names(data)

    def opt(key: str) -> str | None:
        return _text(attrs[key]) if key in attrs else None

    env_args = _json_attr(path, attrs, "env_args")
    env_name = opt("env_name") or env_args.get("env_name")
    if "total" in attrs:
        total = int(attrs["total"])
    else:
        total = sum(int(data[n].attrs.get("num_samples", len(data[n]["actions"]))) for n in names)
    convention = opt("image_convention")
    if convention is not None and convention not in IMAGE_CONVENTIONS:
        raise LiberoError(
            f"demo file {path}: attribute data.image_convention is {convention!r}, "
            f"expected one of {IMAGE_CONVENTIONS}"
        )
    macro = opt(LIBERO_CONVENTION_ATTR)
    if macro is not None and macro.lower() not in LIBERO_CONVENTIONS:
        raise LiberoError(
            f"demo file {path}: attribute data.{LIBERO_CONVENTION_ATTR} is {macro!r}, expected one of "
            f"{tuple(LIBERO_CONVENTIONS)}"
        )
    # The order the images are in: the file's own word, else LIBERO's attribute, else OpenGL's (robomimic).
    rows = convention or (LIBERO_CONVENTIONS[macro.lower()] if macro is not None else None)
    generator = opt("generator")
    orientation = opt("ee_orientation")
    if orientation is None:
        ours = convention == IMAGE_CONVENTION and (generator or "").startswith(_SITE_GENERATORS)
        orientation = GRIP_SITE if ours else HAND_BODY
    elif orientation not in EE_ORIENTATIONS:
        raise LiberoError(
            f"demo file {path}: attribute data.ee_orientation is {orientation!r}, expected one of {EE_ORIENTATIONS}"
        )
    return DatasetInfo(
        path=path,
        env_name=env_name,
        problem_info=_json_attr(path, attrs, "problem_info"),
        bddl_file_name=opt("bddl_file_name"),
        bddl_file_content=opt("bddl_file_content"),
        env_args=env_args,
        num_demos=int(attrs["num_demos"]) if "num_demos" in attrs else len(names),
        total=total,
        image_convention=convention,
        image_rows=rows or OPENGL_CONVENTION,
        generator=generator,
        ee_orientation=orientation,
        stats={k: _plain(attrs[k]) for k in attrs.keys() if k not in LAYOUT_ATTRS},
    )


# LIBERO names a task's demo file `<task>_demo.hdf5`; collect and the datasets here name it `<task>.hdf5`.
LIBERO_DEMO_SUFFIX = "_demo"


def task_demo_file(folder: str | os.PathLike, task: str) -> Path:
    """The demo file of task `task` (a task file's stem) in a folder of demos: `<task>.hdf5`, or LIBERO's
    `<task>_demo.hdf5` when only that one is there, so that a folder of LIBERO's own demos is read as it
    is. When neither exists, `<task>.hdf5`: where missing demos are collected."""
    folder = Path(folder)
    ours = folder / f"{task}.hdf5"
    libero = folder / f"{task}{LIBERO_DEMO_SUFFIX}.hdf5"
    return libero if not ours.exists() and libero.exists() else ours


def read_info(path: str | os.PathLike) -> DatasetInfo:
    """Read the dataset-level attributes of a demo file.

    Args:
        path: an HDF5 demo file (made here, or by LIBERO or robomimic).
    Raises:
        LiberoError: the file is missing, is not HDF5, lacks ``data``, or holds a malformed attribute.
    """
    path = Path(path)
    with _open(path) as f:
        return _info(path, f["data"])


def demo_names(path: str | os.PathLike) -> list[str]:
    """The demo group names of a file in the order `read_demos` reads them (demo_2 before demo_10).

    Raises:
        LiberoError: the file is missing, is not HDF5, or lacks ``data``.
    """
    with _open(path) as f:
        return _demo_names(f["data"])


def image_size(path: str | os.PathLike, key: str = "agentview_rgb") -> int | None:
    """The height of the images of `key` in a file's first demo (read from the dataset's shape, nothing loaded);
    None when the file has no demo or no such images.

    Raises:
        LiberoError: the file is missing, is not HDF5, or lacks ``data``.
    """
    with _open(path) as f:
        names = _demo_names(f["data"])
        if not names:
            return None
        obs = f["data"][names[0]].get("obs")
        images = obs.get(key) if obs is not None else None
        return int(images.shape[1]) if images is not None and images.ndim == 4 else None


def read_demos(
    path: str | os.PathLike,
    obs_keys: Sequence[str] | None = None,
    max_demos: int | None = None,
    *,
    upright: bool = True,
    ee_orientation: str = EE_ORIENTATION,
) -> list[Demo]:
    """Read demos in index order (demo_0, demo_1, ..., sorted numerically).

    Args:
        path: an HDF5 demo file (made here, or by LIBERO or robomimic).
        obs_keys: observation keys to load; None loads every key in each demo's ``obs`` group. A key of
            ``DERIVED_OBS`` that a file lacks is read from its source key.
        max_demos: read at most this many demos (the first ones); None reads all.
        upright: return images upright. Files that say (``image_convention``, or LIBERO's
            ``macros_image_convention``) or, saying nothing, are assumed to hold OpenGL-ordered images, as
            robomimic's do, are flipped vertically.
        ee_orientation: the frame to give the hand's orientation in (ee_states' axis-angle part, ee_rot6,
            robot_states' quaternion): ``GRIP_SITE``, as the environment observes it (the default), or
            ``HAND_BODY``, as LIBERO's files hold it. A file that holds the other (``DatasetInfo.ee_orientation``)
            is read turned: from the hand body a fixed turn; to it, the quaternion's sign from the joints.
    Returns:
        One Demo per demo group. Missing ``states``/``robot_states`` read as (T, 0) arrays, a missing
        ``init_state`` as the first state, a missing ``model_file`` as "" and a missing seed as None.
    Raises:
        LiberoError: the file is missing or not HDF5, or lacks ``data``, ``actions`` or a requested key.
    """
    return list(iter_demos(path, obs_keys, max_demos, upright=upright, ee_orientation=ee_orientation))


def _reframe(path: Path, name: str, obs_grp, robot_states: np.ndarray, src: str, dst: str, ee_wanted: bool):
    """A demo's hand orientation, recorded in frame `src`, in frame `dst`: (ee_states' axis-angle part (T, 3),
    or None when it is not `ee_wanted` or the demo has no ee_states; robot_states with its quaternion turned,
    when it holds one)."""
    has_ee = ee_wanted and obs_grp is not None and "ee_states" in obs_grp
    ee = obs_grp["ee_states"][()][:, 3:6] if has_ee else None
    quat = robot_states[:, 5:9] if robot_states.shape[1:] == (9,) and np.any(robot_states[:, 5:9]) else None
    # Each from its own numbers: a file's ee_states and robot_states need not be alike (float32 or float64).
    ee_rot = axis_angle_to_matrix(ee) if ee is not None else None
    quat_rot = quat_to_matrix(quat) if quat is not None else None
    if src == HAND_BODY:  # to the grip site: a fixed turn, no sign to choose
        aa = site_from_hand(ee_rot)[0] if ee is not None else None
        if quat is not None:
            robot_states = robot_states.copy()
            robot_states[:, 5:9] = site_from_hand(quat_rot)[1]
        return aa, robot_states
    # To the hand body: its quaternion's sign follows the joints, so they are needed.
    if (ee is not None or quat is not None) and (obs_grp is None or "joint_states" not in obs_grp):
        raise LiberoError(
            f"demo file {path}: data/{name} holds the hand's orientation in the grip site's frame and no "
            "obs/joint_states, which its turn into the hand body's frame needs"
        )
    aa = None
    if ee is not None:
        aa = quat_to_axis_angle(hand_quats_from_site(ee_rot, obs_grp["joint_states"][()]))
    if quat is not None:
        robot_states = robot_states.copy()
        robot_states[:, 5:9] = hand_quats_from_site(quat_rot, obs_grp["joint_states"][()])
    return aa, robot_states


def _check_steps(path: Path, name: str, key: str, arr: np.ndarray, steps: int) -> None:
    """A LiberoError unless a demo's dataset `key` holds one row per step, as many as its actions."""
    if arr.ndim == 0 or len(arr) != steps:
        rows = "a single value" if arr.ndim == 0 else f"{len(arr)} rows"
        raise LiberoError(
            f"demo file {path}: data/{name}/{key} holds {rows} for {steps} actions; each dataset of a demo holds "
            "one row per step"
        )


def iter_demos(
    path: str | os.PathLike,
    obs_keys: Sequence[str] | None = None,
    max_demos: int | None = None,
    *,
    upright: bool = True,
    ee_orientation: str = EE_ORIENTATION,
) -> Iterator[Demo]:
    """The demos of `read_demos`, one at a time, so that only one is in memory (arguments as there).

    The file stays open until the iterator is exhausted or closed.
    """
    path = Path(path)
    with _open(path) as f:
        data = f["data"]
        info = _info(path, data)
        flip = upright and info.image_rows == OPENGL_CONVENTION
        if ee_orientation not in EE_ORIENTATIONS:
            raise ValueError(f"ee_orientation must be one of {EE_ORIENTATIONS}, got {ee_orientation!r}")
        convert = info.ee_orientation != ee_orientation
        names = _demo_names(data)
        if max_demos is not None:
            names = names[: max(int(max_demos), 0)]
        for name in names:
            grp = data[name]
            if not isinstance(grp, h5py.Group):
                raise LiberoError(f"demo file {path}: data/{name} is not a group of datasets")
            if "actions" not in grp:
                raise LiberoError(f"demo file {path}: data/{name} has no 'actions' dataset")
            actions = grp["actions"][()]
            if actions.ndim != 2:
                raise LiberoError(f"demo file {path}: data/{name}/actions has shape {actions.shape}; actions are "
                                  "(steps, action size)")
            T = len(actions)
            states = grp["states"][()] if "states" in grp else np.zeros((T, 0))
            robot_states = grp["robot_states"][()] if "robot_states" in grp else np.zeros((T, 0))
            for key, arr in (("states", states), ("robot_states", robot_states)):
                _check_steps(path, name, key, arr, T)
            obs_grp = grp["obs"] if "obs" in grp else None
            keys = list(obs_keys) if obs_keys is not None else (list(obs_grp.keys()) if obs_grp else [])
            turned = None
            if convert:
                turned, robot_states = _reframe(path, name, obs_grp, robot_states, info.ee_orientation,
                                                ee_orientation, ee_wanted=bool({"ee_states", "ee_rot6"} & set(keys)))
            obs = {}
            for key in keys:
                source, derive = DERIVED_OBS.get(key, (key, None))
                if obs_grp is not None and key in obs_grp and not (convert and key == "ee_rot6"):
                    source, derive = key, None
                if obs_grp is None or source not in obs_grp:
                    raise missing_obs_error(path, name, key, obs_grp)
                arr = obs_grp[source][()]
                if convert and source == "ee_states":
                    # The orientation in the frame asked for (ee_rot6 is then derived from it).
                    arr = arr.copy()
                    arr[:, 3:6] = turned
                if derive is not None:
                    arr = derive(arr)
                _check_steps(path, name, f"obs/{source}", arr, T)
                if flip and arr.dtype == np.uint8 and arr.ndim == 4:
                    arr = np.ascontiguousarray(arr[:, ::-1])
                obs[key] = arr
            attrs = grp.attrs
            if "init_state" in attrs:
                init_state = np.asarray(attrs["init_state"])
            else:
                init_state = states[0].copy() if len(states) else np.zeros(0)
            yield Demo(
                actions=actions,
                states=states,
                robot_states=robot_states,
                obs=obs,
                init_state=init_state,
                model_file=_text(attrs["model_file"]) if "model_file" in attrs else "",
                seed=int(attrs["seed"]) if "seed" in attrs else None,
            )


def demo_files(source: str | os.PathLike | Sequence) -> list[Path]:
    """The demo files of `source`: the ``*.hdf5`` files of a folder in name order, the one file named, or the
    files given (a sequence, taken as it is)."""
    if isinstance(source, (str, os.PathLike)):
        src = Path(source)
        if src.is_dir():
            files = sorted(p for p in src.glob("*.hdf5") if p.is_file())
            if not files:
                raise LiberoError(f"{src}: no demo files (*.hdf5) in this folder")
            return files
        if not src.is_file():
            raise LiberoError(f"{src}: no such demo file or folder")
        return [src]
    return [Path(p) for p in source]
