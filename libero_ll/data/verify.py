"""The replay check of a demo file: rebuild the task's scene from the file, reset to each demo's initial
state, apply its actions, and compare the simulator state with the stored ``states`` step by step."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from libero_ll.data.hdf5 import Demo, demo_names, read_demos, read_info
from libero_ll.errors import LiberoError

# Largest difference allowed between a replayed and a stored state, in the position part of the state
# (simulated time in s, joint positions in m or rad, fixture poses): a tenth of a millimetre. Demos
# collected here replay exactly (measured divergence 0.0 on the quickstart tasks: the collector starts
# each episode from `reset_to` of its initial state and applies the actions as stored); the margin is
# for another machine or MuJoCo build whose last bits differ. Velocities are not compared: a contact
# that starts a hair earlier changes them by far more than it moves anything.
REPLAY_TOLERANCE = 1e-4


@dataclass
class DemoReplay:
    """The replay of one demo.

    Attributes:
        name: the demo's group name, e.g. ``demo_3``.
        steps: its number of actions.
        max_divergence: largest |replayed - stored| over steps and position entries of the state.
        worst_step: the step index t (state before action t) where it occurred.
        first_diverged: the first step whose divergence exceeds the tolerance; None when none does.
        goal: whether the task's goal holds after the last action.
        error: why the demo could not be replayed at all (then it fails), else None.
    """

    name: str
    steps: int
    max_divergence: float = 0.0
    worst_step: int = 0
    first_diverged: int | None = None
    goal: bool = False
    error: str | None = None
    tolerance: float = REPLAY_TOLERANCE

    @property
    def ok(self) -> bool:
        """Replayed within the tolerance and ended with the goal holding."""
        return self.error is None and self.max_divergence <= self.tolerance and self.goal

    def describe(self) -> str:
        """One line for people: steps, divergence, goal, verdict."""
        if self.error is not None:
            return f"{self.name}: FAILED, {self.error}"
        verdict = "ok" if self.ok else "FAILED"
        where = f" at step {self.worst_step}" if self.max_divergence > 0 else ""
        over = (
            f", over the tolerance {self.tolerance:g} from step {self.first_diverged}"
            if self.first_diverged is not None
            else ""
        )
        goal = "goal reached" if self.goal else "goal NOT reached"
        divergence = f"max divergence {self.max_divergence:.2e}{where}{over}"
        return f"{self.name}: {verdict}, {self.steps} steps, {divergence}, {goal}"


@dataclass
class FileReplay:
    """The replay check of one file: one DemoReplay per demo, in index order."""

    path: Path
    demos: list[DemoReplay] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every demo replayed (a file without demos fails)."""
        return bool(self.demos) and all(d.ok for d in self.demos)

    @property
    def failed(self) -> list[DemoReplay]:
        return [d for d in self.demos if not d.ok]


def _position_mask(env) -> np.ndarray:
    """True for the entries of `env.get_state()` that are positions: time, qpos, fixture poses."""
    n = env.get_state().shape[0]
    mask = np.ones(n, dtype=bool)
    start = 1 + env.model.nq
    mask[start : start + env.model.nv] = False
    return mask


def replay_demo(env, demo: Demo, name: str = "demo", tolerance: float = REPLAY_TOLERANCE) -> DemoReplay:
    """Replay one demo in `env` (built from the demo's task) and compare states.

    ``demo.states[t]`` is the state recorded just before ``demo.actions[t]`` was applied (the collector's
    convention), so the state before step t is compared with it, and the goal is checked after the last
    action.

    Args:
        env: a LiberoEnv of the demo's task; rendering may be off (replay does not depend on it).
        demo: the demo (actions, states, init_state).
        name: its name in the report.
        tolerance: the largest position divergence that passes, see REPLAY_TOLERANCE.
    """
    result = DemoReplay(name=name, steps=demo.num_steps, tolerance=tolerance)
    states = np.asarray(demo.states, dtype=np.float64)
    if states.ndim != 2 or len(states) != demo.num_steps:
        result.error = f"states have shape {states.shape}, expected ({demo.num_steps}, n)"
        return result
    if states.shape[1] == 0 or np.asarray(demo.init_state).size == 0:
        # Imported demos (`libero-ll import`) hold observations and actions only.
        result.error = "holds no simulator states (imported from another tool's dataset): nothing to replay"
        return result
    try:
        env.reset_to(demo.init_state)
        mask = _position_mask(env)
        if states.shape[1] != mask.shape[0]:
            raise LiberoError(
                f"stored states have {states.shape[1]} numbers, this task's state has {mask.shape[0]}"
            )
        for t, action in enumerate(demo.actions):
            diff = np.abs(env.get_state()[mask] - states[t][mask])
            d = float(diff.max()) if diff.size else 0.0
            d = d if np.isfinite(d) else float("inf")
            if d > result.max_divergence:
                result.max_divergence, result.worst_step = d, t
            if d > tolerance and result.first_diverged is None:
                result.first_diverged = t
            env.step(action)
        result.goal = bool(env.check_goal())
    except LiberoError as e:
        result.error = str(e)
    return result


def _env_config(env_args: dict):
    # Replay reads states, not pixels.
    return env_config_of(env_args, render=False)


def env_config_of(env_args: dict, render: bool = False):
    """The EnvConfig a demo file's env_args describe (keys this version does not know are left out)."""
    from libero_ll.envs.env import EnvConfig

    kwargs = env_args.get("env_kwargs", {}) if isinstance(env_args, dict) else {}
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    kwargs = {k: v for k, v in kwargs.items() if k in known} if isinstance(kwargs, dict) else {}
    # Files written before the controller was recorded were made with robosuite's own.
    kwargs.setdefault("controller", "robosuite")
    kwargs["render"] = render
    return EnvConfig(**kwargs)


def verify_file(
    path: str | os.PathLike,
    tolerance: float = REPLAY_TOLERANCE,
    max_demos: int | None = None,
    on_demo: Callable[[DemoReplay], None] | None = None,
) -> FileReplay:
    """Replay every demo of a file in a scene rebuilt from the file's task text and env_args.

    Args:
        path: an HDF5 demo file made here (it must hold ``bddl_file_content`` and ``states``).
        tolerance: the largest position divergence that passes, see REPLAY_TOLERANCE.
        max_demos: check only the first this many demos; None checks all.
        on_demo: optional callable called with each DemoReplay as it is done.
    Raises:
        LiberoError: the file is missing or not a demo file, or its task cannot be rebuilt.
    """
    from libero_ll.bddl.parser import parse_string
    from libero_ll.envs.env import LiberoEnv

    path = Path(path)
    info = read_info(path)
    if not info.bddl_file_content:
        imported = (" (imported from another tool's dataset: it holds no simulator states either, nothing to replay)"
                    if info.env_name == "LeRobot" else "")
        raise LiberoError(f"demo file {path}: no task text (bddl_file_content), so its scene cannot be "
                          f"rebuilt{imported}")
    try:
        spec = parse_string(info.bddl_file_content, info.bddl_file_name or str(path))
    except LiberoError as e:
        raise LiberoError(f"demo file {path}: its task text does not parse: {e}") from None
    demos = read_demos(path, obs_keys=[], max_demos=max_demos)
    names = demo_names(path)
    report = FileReplay(path)
    env = LiberoEnv(spec, _env_config(info.env_args))
    try:
        for name, demo in zip(names, demos):
            r = replay_demo(env, demo, name, tolerance)
            report.demos.append(r)
            if on_demo:
                on_demo(r)
    finally:
        env.close()
    return report
