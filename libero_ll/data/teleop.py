"""Teleoperation: a person drives the arm (keyboard, through robosuite's device layer) and every episode
that reaches the task's goal is written as a demo, in the same HDF5 layout as the scripted expert's.

The loop (`teleop_session`, `run_teleop_episode`) takes any object with the small `TeleopDevice`
interface, so it runs without a keyboard or a display; `KeyboardDevice` adapts
``robosuite.devices.Keyboard`` to it. Keys (robosuite's keyboard layout, plus Esc to quit):

    up / down arrow     move the hand away from / toward the front camera (-x / +x)
    left / right arrow  move the hand left / right in the front camera's view (-y / +y)
    ;  /  .             move the hand up / down (+z / -z)
    e / r               roll
    y / h               pitch
    o / p               yaw
    space               toggle the gripper (open / closed)
    q                   discard this episode and reset
    Esc                 quit: demos kept so far are saved (Ctrl-C in the terminal does the same)

An episode's clock starts at its first motion or gripper key: nothing is simulated or recorded before.
It ends when the goal holds (the demo is kept), on q (discarded), on Esc (discarded, session ends) or
at the step cap (discarded). The keyboard needs pynput and a display (an X server on Linux; on macOS
the terminal needs the accessibility permission).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from libero_ll.data.collect import demo_seed
from libero_ll.data.hdf5 import Demo, DemoWriter, new_record, record_step
from libero_ll.envs.env import EnvConfig, LiberoEnv
from libero_ll.envs.gl import ensure_gl_backend, quiet_simulator_logs
from libero_ll.errors import LiberoError

# What a device asks of the loop at each tick.
CONTINUE, RESET, QUIT = "continue", "reset", "quit"
COMMANDS = (CONTINUE, RESET, QUIT)

# How an episode ended.
SUCCESS, DISCARDED, TIMEOUT, QUITTED = "success", "reset", "timeout", "quit"

# The keyboard map, for help texts: (keys, what they do).
KEYS = (
    ("up / down arrow", "move the hand away from / toward the front camera (-x / +x)"),
    ("left / right arrow", "move the hand left / right in the front camera's view (-y / +y)"),
    ("; / .", "move the hand up / down"),
    ("e / r", "roll"),
    ("y / h", "pitch"),
    ("o / p", "yaw"),
    ("space", "toggle the gripper (open / closed)"),
    ("q", "discard this episode and reset"),
    ("Esc", "quit; demos kept so far are saved (Ctrl-C in the terminal too)"),
)

# robosuite's Keyboard moves its target by this much per press (position) and turns it by this much
# (rotation); the adapter divides them out so that one press is `pos_scale` / `rot_scale` of a full action.
_RS_POS_STEP = 0.05
_RS_ROT_STEP = 0.1

# robosuite's keyboard keys that move or turn the hand (besides the arrows).
_MOTION_CHARS = frozenset(".;eryhop")

TELEOP_INSTALL = "pip install 'libero_ll[teleop]'  (or: pip install pynput)"


def keys_help() -> str:
    """The keyboard map as aligned text lines."""
    return "\n".join(f"  {k:<20}{what}" for k, what in KEYS)


class TeleopDevice(Protocol):
    """What the teleoperation loop needs from an input device.

    Attributes:
        name: short device name, written into the file's ``generator`` attribute.
    """

    name: str

    def start_episode(self, env: LiberoEnv) -> None:
        """Called right after each reset: forget the previous episode's input (gripper back to open)."""

    def get_action(self, env: LiberoEnv) -> tuple[np.ndarray | None, str]:
        """Poll the device once per control tick.

        Returns:
            (action, command): action is 7 numbers in [-1, 1] (delta position 3, delta axis-angle 3,
            gripper -1 open / +1 close), or None for "no step this tick" (nobody has touched the device
            yet this episode); command is CONTINUE, RESET (discard the episode) or QUIT.
        """

    def close(self) -> None:
        """Release the device (stop listener threads)."""


# ---------------------------------------------------------------------------------------- keyboard


def has_display() -> bool:
    """Whether windows and a global keyboard listener can work here (on Linux: DISPLAY or WAYLAND_DISPLAY)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def check_keyboard_available() -> None:
    """Raise a LiberoError saying what is missing when keyboard teleoperation cannot run here.

    Checks, in order: pynput is installed; there is a display; pynput's keyboard backend loads (on Linux
    it connects to the X server). Cheap: call it before building a scene.
    """
    if importlib.util.find_spec("pynput") is None:
        raise LiberoError(f"keyboard teleoperation needs pynput: {TELEOP_INSTALL}")
    if not has_display():
        raise LiberoError(
            "keyboard teleoperation needs a display (pynput listens to the keyboard through the window "
            "system) and none is set (DISPLAY is empty): run it on a desktop session, or over `ssh -X`"
        )
    _robosuite_keyboard_class()


def _robosuite_keyboard_class():
    """robosuite's Keyboard class, or a LiberoError when pynput or its window-system backend is missing."""
    # Importing robosuite imports mujoco, whose rendering backend must be chosen first.
    ensure_gl_backend()
    quiet_simulator_logs()
    try:
        # robosuite.devices prints a notice to stdout when the SpaceMouse driver (hid) is absent.
        with contextlib.redirect_stdout(io.StringIO()):
            from robosuite.devices.keyboard import Keyboard
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "pynput":
            raise LiberoError(f"keyboard teleoperation needs pynput: {TELEOP_INSTALL}") from None
        raise
    except ImportError as e:
        # pynput raises ImportError when its backend cannot start (no X server, no permission).
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LiberoError(
            f"the keyboard cannot be read here: {first}. Keyboard teleoperation needs a display "
            "(an X server on Linux; on macOS the terminal needs the accessibility permission)"
        ) from None
    return Keyboard


class KeyboardDevice:
    """``robosuite.devices.Keyboard`` behind the `TeleopDevice` interface (keys: see the module docstring).

    robosuite's own keys move, turn and toggle the gripper (its ``input2action`` turns them into the
    controller's normalised delta action); this adapter adds Esc to quit, waits for the first key of
    each episode, and makes one key press worth a set fraction of a full action.

    Args:
        pos_scale: position action per key press, as a fraction of a full action (0-1]. A full action sets
            the controller's goal 5 cm from the hand; held, it moves the hand about 1.2 cm per control tick
            (measured on the quickstart scene). Holding a key repeats it.
        rot_scale: rotation action per key press, as a fraction of a full action (0-1]. A full action sets
            the goal 0.5 rad away; held, it turns the hand about 0.07 to 0.1 rad per control tick.
    Raises:
        LiberoError: pynput is missing or there is no display (see `check_keyboard_available`).
    """

    name = "keyboard"

    def __init__(self, pos_scale: float = 0.3, rot_scale: float = 0.3) -> None:
        for label, v in (("pos_scale", pos_scale), ("rot_scale", rot_scale)):
            if not 0 < v <= 1:
                raise LiberoError(f"{label} must be in (0, 1], got {v}")
        check_keyboard_available()
        self.pos_scale = float(pos_scale)
        self.rot_scale = float(rot_scale)
        self._kb = None
        self._env = None

    def _bind(self, env: LiberoEnv) -> None:
        # robosuite's device reads the robots of the robosuite environment it is given, at construction.
        base = _robosuite_keyboard_class()
        from pynput.keyboard import Key

        pos_scale, rot_scale = self.pos_scale, self.rot_scale
        arrows = (Key.up, Key.down, Key.left, Key.right)

        class _Keyboard(base):
            def __init__(self, rs_env):
                self.touched = False
                self.quit = False
                super().__init__(rs_env)

            @staticmethod
            def _display_controls():
                pass  # The CLI prints our key map, which adds Esc.

            def on_press(self, key):
                if key in arrows or getattr(key, "char", None) in _MOTION_CHARS:
                    self.touched = True
                super().on_press(key)

            def on_release(self, key):
                if key == Key.esc:
                    self.quit = True
                    return
                if key == Key.space:
                    self.touched = True
                super().on_release(key)

            def _postprocess_device_outputs(self, dpos, drotation):
                dpos = np.clip(dpos / _RS_POS_STEP * pos_scale, -1, 1)
                drotation = np.clip(drotation / _RS_ROT_STEP * rot_scale, -1, 1)
                return dpos, drotation

        self._kb = _Keyboard(env.scene)
        self._env = env

    def start_episode(self, env: LiberoEnv) -> None:
        if self._kb is None or self._env is not env:
            self.close()
            self._bind(env)
        self._kb.start_control()
        self._kb.touched = False

    def get_action(self, env: LiberoEnv) -> tuple[np.ndarray | None, str]:
        kb = self._kb
        if kb is None:
            raise RuntimeError("start_episode() must be called before get_action()")
        if kb.quit:
            return None, QUIT
        if kb._reset_state:
            return None, RESET
        if not kb.touched:
            # Idle before the first key: do not consume input, do not step.
            return None, CONTINUE
        ac = kb.input2action()
        if ac is None:
            return None, RESET
        robot = env.scene.robots[0]
        arm = kb.active_arm
        action = robot.create_action_vector({arm: ac[f"{arm}_delta"], f"{arm}_gripper": ac[f"{arm}_gripper"]})
        return np.asarray(action, dtype=np.float64), CONTINUE

    def close(self) -> None:
        if self._kb is not None:
            self._kb.listener.stop()
            self._kb = None
            self._env = None


# ------------------------------------------------------------------------------------------ viewer


class OpenCVViewer:
    """A live window (OpenCV) of the front and wrist cameras with a status line, redrawn every tick.

    Args:
        size: side of each camera picture in the window, pixels (rendered at this size, not upscaled).
        title: window title.
    Raises:
        LiberoError: OpenCV has no GUI support here (e.g. opencv-python-headless) or there is no display.
    """

    def __init__(self, size: int = 320, title: str = "libero-ll teleop") -> None:
        if not has_display():
            # OpenCV's Qt backend aborts the whole process when it cannot reach a display.
            raise LiberoError("the live view needs a display; pass --no-view to run without it")
        import cv2

        self._cv2 = cv2
        self.size = int(size)
        self.title = title
        try:
            cv2.namedWindow(title, cv2.WINDOW_AUTOSIZE | cv2.WINDOW_GUI_NORMAL)
        except cv2.error as e:
            raise LiberoError(
                f"OpenCV cannot open a window ({str(e).strip().splitlines()[-1]}); install opencv-python "
                "(not -headless) or pass --no-view"
            ) from None
        self._shown = False

    def show(self, env: LiberoEnv, lines: list[str]) -> bool:
        """Draw the current scene with status `lines`; False once the person has closed the window."""
        cv2 = self._cv2
        if self._shown and cv2.getWindowProperty(self.title, cv2.WND_PROP_VISIBLE) < 1:
            return False
        cams = list(env.config.cameras.values())
        img = np.concatenate([env.render(cam, self.size) for cam in cams], axis=1)
        img = np.ascontiguousarray(img[:, :, ::-1])  # RGB -> BGR
        for i, line in enumerate(lines):
            y = 18 + 18 * i
            cv2.putText(img, line, (6, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 3, cv2.LINE_AA)
            cv2.putText(img, line, (6, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1, cv2.LINE_AA)
        cv2.imshow(self.title, img)
        cv2.waitKey(1)
        self._shown = True
        return True

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._cv2.destroyWindow(self.title)
            self._cv2.waitKey(1)


# -------------------------------------------------------------------------------------------- loop


@dataclass
class TeleopStats:
    """What one teleoperation session did.

    Attributes:
        task: task name.
        kept: demos written.
        discarded: episodes ended by the reset key.
        timed_out: episodes that reached the step cap without the goal.
        episodes: episodes started.
        lengths: steps of each kept demo.
        ended_by: "done" (the wanted demos were kept), "quit" (quit key or closed window),
            "interrupted" (Ctrl-C) or "terminated" (SIGTERM or SIGHUP).
        path: the file written, or None when nothing was kept (nothing is written then).
        earlier: demos the file held before the session, kept in front of the new ones (append).
    """

    task: str
    kept: int = 0
    discarded: int = 0
    timed_out: int = 0
    episodes: int = 0
    lengths: list[int] = field(default_factory=list)
    ended_by: str = "done"
    path: Path | None = None
    earlier: int = 0


class _Interrupts:
    """Turns Ctrl-C (and SIGTERM / SIGHUP) into a polite request to stop, checked once per tick.

    A second Ctrl-C raises KeyboardInterrupt as usual, except while a demo or the file is being written.
    """

    def __init__(self) -> None:
        self.requested = False
        self.terminated = False  # the request came from SIGTERM or SIGHUP
        self.writing = False
        self._old: dict = {}

    def _handle(self, signum, frame) -> None:
        if self.requested and not self.writing and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not self.requested:
            self.terminated = signum != signal.SIGINT
        self.requested = True

    @property
    def stopped_by(self) -> str:
        return "terminated" if self.terminated else "interrupted"

    def __enter__(self) -> _Interrupts:
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGINT", "SIGTERM", "SIGHUP"):
                sig = getattr(signal, name, None)
                if sig is not None:
                    self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()


def run_teleop_episode(
    env: LiberoEnv,
    device: TeleopDevice,
    seed: int,
    max_steps: int,
    viewer=None,
    rate_hz: float | None = None,
    status: Callable[[], list[str]] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[str, dict]:
    """Reset with `seed` and let `device` drive until the goal holds, a reset or quit, or `max_steps`.

    Args:
        env: the task's environment (rendering on: images are recorded).
        device: a `TeleopDevice`.
        seed: reset seed (placement of the objects).
        max_steps: step cap, policy steps; reaching it ends the episode as TIMEOUT.
        viewer: optional object with ``show(env, lines) -> bool`` (False: the window was closed, quit).
        rate_hz: ticks per second to pace the loop at (the control frequency for a person); None runs
            as fast as the device answers.
        status: optional callable giving extra status lines for the viewer.
        should_stop: optional callable polled every tick; True ends the episode as QUITTED.
    Returns:
        (outcome, record): outcome is SUCCESS, DISCARDED, TIMEOUT or QUITTED; record holds per-step
        ``obs``, ``actions``, ``states``, ``robot_states`` and the ``init_state``, like the scripted
        expert's (the state and observation before each action).
    """
    # As the scripted expert does: start from `reset_to` of the sampled state, which clears what the state
    # vector does not hold (gripper command, solver warm start), and step with the actions as stored
    # (float32), so that the recorded actions replay the recorded states exactly.
    env.reset(seed=seed)
    init_state = env.get_state()
    obs = env.reset_to(init_state)
    device.start_episode(env)
    rec = new_record(init_state)
    period = 1.0 / rate_hz if rate_hz else 0.0
    next_tick = time.monotonic()
    while True:
        if should_stop is not None and should_stop():
            return QUITTED, rec
        if viewer is not None:
            head = f"step {env.steps}/{max_steps}" if env.steps else "press a motion key to start"
            if not viewer.show(env, [head, *(status() if status else [])]):
                return QUITTED, rec
        action, command = device.get_action(env)
        if command == QUIT:
            return QUITTED, rec
        if command == RESET:
            return DISCARDED, rec
        if command != CONTINUE:
            raise ValueError(f"device command must be one of {COMMANDS}, got {command!r}")
        if action is not None:
            action = np.asarray(action, dtype=np.float64)
            if action.shape != (7,):
                raise ValueError(f"device action must be 7 numbers, got shape {action.shape}")
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            record_step(rec, env, obs, action)
            obs, _, info = env.step(action)
            if info["success"]:
                return SUCCESS, rec
            if env.steps >= max_steps:
                return TIMEOUT, rec
        if period:
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_tick = time.monotonic()  # running late: do not try to catch up


def episode_seed(task_name: str, episode: int, seed: int | None) -> int:
    """The reset seed of episode `episode` (0, 1, ...): with a session seed, episode i starts where the
    scripted expert's demo i (first attempt) does; without one, a fresh random seed (recorded in the demo)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % 2**31)
    return demo_seed(task_name, episode, 0, seed)


def teleop_session(
    task_file: str | Path,
    out_path: str | Path,
    device: TeleopDevice,
    num_demos: int,
    *,
    seed: int | None = None,
    env_config: EnvConfig | None = None,
    max_steps: int = 3000,
    viewer=None,
    rate_hz: float | None = None,
    env: LiberoEnv | None = None,
    on_episode: Callable[[int, str, int, TeleopStats], None] | None = None,
    append: bool = False,
) -> TeleopStats:
    """Record demos of one task by teleoperation until `num_demos` are kept or the person quits.

    Episodes that reach the goal are written (atomically: the file appears under `out_path` when the
    session ends, with every kept demo, also after quit, Ctrl-C, SIGTERM or an error in the loop);
    reset, quit and timed-out episodes are not. When nothing was kept, nothing is written and a file
    already at `out_path` is left as it was. An error in the loop after a demo was kept is raised again
    (a LiberoError saying where the kept demos were written).

    Args:
        task_file: the task's .bddl file.
        out_path: the HDF5 file to write.
        device: a `TeleopDevice` (e.g. `KeyboardDevice`).
        num_demos: demos wanted; the session ends when this many are kept.
        seed: session seed; with it episode i resets like the expert's demo i. None: random resets.
        env_config: simulation and image settings (stored in env_args); its max_steps is set to `max_steps`.
        max_steps: step cap per episode, policy steps.
        viewer: optional live view (see `run_teleop_episode`); the caller closes it and the device.
        rate_hz: loop pace in ticks per second (None: as fast as possible, for scripted devices).
        env: an already built environment of this task to use (the caller closes it); None builds one.
        on_episode: optional callable(episode, outcome, steps, stats) called after each episode.
        append: keep the demos of an existing `out_path` (of this task, recorded at the same image size and
            robot meshes) in front of the new ones; `num_demos` counts the new ones. With `seed`, the
            episodes go on from the expert's demo after the file's last.
    """
    if num_demos < 1:
        raise LiberoError(f"--demos must be at least 1, got {num_demos}")
    task_file = Path(task_file)
    name = task_file.stem
    earlier = demos_to_append(out_path, task_file, env_config or EnvConfig()) if append else []
    own_env = env is None
    if own_env:
        cfg = EnvConfig(**{**asdict(env_config or EnvConfig()), "render": True, "max_steps": max_steps})
        env = LiberoEnv(task_file, cfg)
    stats = TeleopStats(task=name, earlier=len(earlier))
    writer = None
    interrupts = _Interrupts()
    failed: Exception | None = None
    try:
        cfg = env.config
        writer = DemoWriter(
            out_path,
            env_name=name,
            problem_info={"problem_name": env.spec.problem_class, "language_instruction": env.spec.language},
            bddl_file_name=str(task_file),
            bddl_file_content=task_file.read_text(),
            env_args={"env_name": name, "env_kwargs": asdict(cfg)},
            generator=f"teleoperation {device.name}",
        )
        model_xml = env.model_xml()
        for demo_name in earlier:
            writer.copy_demo(out_path, demo_name)

        def status() -> list[str]:
            return [f"episode {stats.episodes}  kept {stats.kept}/{num_demos}", env.spec.language]

        with interrupts:
            while stats.kept < num_demos:
                s = episode_seed(name, stats.earlier + stats.episodes, seed)
                stats.episodes += 1
                outcome, rec = run_teleop_episode(
                    env, device, s, max_steps, viewer, rate_hz, status, lambda: interrupts.requested
                )
                steps = len(rec["actions"])
                if outcome == SUCCESS:
                    demo = Demo.from_record(rec, model_xml, s)
                    interrupts.writing = True
                    writer.add(demo)
                    interrupts.writing = False
                    stats.kept += 1
                    stats.lengths.append(steps)
                elif outcome == DISCARDED:
                    stats.discarded += 1
                elif outcome == TIMEOUT:
                    stats.timed_out += 1
                if outcome == QUITTED:
                    stats.ended_by = interrupts.stopped_by if interrupts.requested else "quit"
                if on_episode is not None:
                    on_episode(stats.episodes, outcome, steps, stats)
                if outcome == QUITTED:
                    break
    except KeyboardInterrupt:
        stats.ended_by = interrupts.stopped_by
    except Exception as e:
        failed = e
        raise
    finally:
        # Demos already kept are saved whatever ended the session, unless writing one of them failed
        # halfway (`writing` still set: the file could then hold a partial demo). A Ctrl-C while the file
        # is written waits for it.
        if writer is not None:
            if stats.kept and not interrupts.writing:
                with interrupts:
                    interrupts.writing = True
                    writer.close()
                    interrupts.writing = False
                stats.path = Path(out_path)
                if interrupts.requested and stats.ended_by in ("done", "quit"):
                    stats.ended_by = interrupts.stopped_by  # a Ctrl-C that came while the file was written
            else:
                writer.abort()
        if own_env:
            env.close()
        if isinstance(failed, LiberoError) and stats.path is not None:
            raise LiberoError(f"{failed}; the {_demos(stats.kept)} kept before it "
                              f"{'are' if stats.kept != 1 else 'is'} written to {stats.path}") from failed
        if failed is not None and stats.path is not None:
            failed.add_note(f"The {_demos(stats.kept)} kept before the error are written to {stats.path}.")
    return stats


def _demos(n: int) -> str:
    return f"{n} demo{'s' if n != 1 else ''}"


def demos_to_append(out_path: str | Path, task_file: Path, env_config: EnvConfig) -> list[str]:
    """The demos of an existing `out_path` that a session appends to (none when there is no file yet), after
    checking that they are of `task_file`'s task and recorded at `env_config`'s image size and meshes."""
    from libero_ll.bddl.parser import parse_string
    from libero_ll.data.hdf5 import demo_names, read_info

    out_path = Path(out_path)
    if not out_path.exists():
        return []
    info = read_info(out_path)
    try:
        theirs = parse_string(info.bddl_file_content or "", str(out_path)).language
    except LiberoError:
        theirs = None
    ours = parse_string(task_file.read_text(), str(task_file))
    if info.bddl_file_content != task_file.read_text() and theirs != ours.language:
        raise LiberoError(f"{out_path}: its demos are of another task ({theirs or 'unreadable task text'}), not "
                          f"{task_file.stem}; choose another --out")
    kwargs = (info.env_args or {}).get("env_kwargs") or {}
    for key in ("image_size", "robot_mesh"):
        want = getattr(env_config, key)
        if key in kwargs and kwargs[key] != want:
            flag = "--" + key.replace("_", "-")
            raise LiberoError(f"{out_path}: its demos were recorded with {key} {kwargs[key]}, not {want}; append "
                              f"with {flag} {kwargs[key]}, or choose another --out")
    return demo_names(out_path)
