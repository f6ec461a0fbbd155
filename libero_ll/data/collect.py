"""Generate demonstrations of a task with the scripted expert and write them in the HDF5 layout."""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from libero_ll.data.hdf5 import Demo, DemoWriter
from libero_ll.envs.env import EnvConfig, LiberoEnv
from libero_ll.experts.expert import EXPERT_VERSION, ScriptedExpert

# Each demo gets up to this many fresh starts before the collection gives up on it.
MAX_ATTEMPTS = 5


@dataclass
class CollectStats:
    """What one task's collection did: demos kept, episodes tried, expert success rate, mean length."""

    task: str
    kept: int
    attempts: int
    success_rate: float
    mean_length: float


def demo_seed(task_name: str, index: int, attempt: int, seed: int) -> int:
    """A seed fixed by (task, demo index, attempt, collection seed): demos are reproducible one by one."""
    return zlib.crc32(f"{task_name}|{index}|{attempt}|{seed}".encode()) & 0x7FFFFFFF


def run_expert_episode(env: LiberoEnv, seed: int, max_steps: int, record: bool) -> tuple[bool, dict]:
    """Reset with `seed`, run the expert until the goal holds or `max_steps`; optionally record everything.

    Returns:
        (success, record) where record holds per-step arrays (obs, actions, states, robot_states).
    """
    obs = env.reset(seed=seed)
    expert = ScriptedExpert(env, np.random.default_rng(seed))
    rec: dict = {"obs": [], "actions": [], "states": [], "robot_states": [], "init_state": env.get_state()}
    success = False
    for _ in range(max_steps):
        action = expert.act()
        if record:
            rec["obs"].append(obs)
            rec["states"].append(env.get_state())
            rec["robot_states"].append(env.robot_state())
            rec["actions"].append(action.astype(np.float32))
        obs, _, info = env.step(action)
        if info["success"]:
            success = True
            break
    return success, rec


def collect_task(
    task_file: str | Path,
    out_path: str | Path | None,
    num_demos: int,
    seed: int = 0,
    env_config: EnvConfig | None = None,
    max_steps: int = 400,
    progress=None,
) -> CollectStats:
    """Collect `num_demos` successful expert demos of one task into `out_path` (None: dry run, nothing written).

    Args:
        task_file: the task's .bddl file.
        out_path: the HDF5 file to write (atomically); None runs the expert without recording.
        num_demos: successful demos wanted (or, for a dry run, episodes to try).
        seed: collection seed; with the task and demo index it fixes every demo.
        env_config: simulation and image settings (image size is stored in env_args).
        max_steps: episode cap for the expert, policy steps.
        progress: optional callable(task_name, done, total) for progress display.
    """
    env_config = env_config or EnvConfig()
    dry = out_path is None
    cfg = EnvConfig(**{**asdict(env_config), "render": not dry})
    env = LiberoEnv(task_file, cfg)
    name = Path(task_file).stem
    kept = attempts = 0
    lengths: list[int] = []
    try:
        writer = None
        if not dry:
            text = Path(task_file).read_text()
            writer = DemoWriter(
                out_path,
                env_name=name,
                problem_info={"problem_name": env.spec.problem_class, "language_instruction": env.spec.language},
                bddl_file_name=str(task_file),
                bddl_file_content=text,
                env_args={"env_name": name, "env_kwargs": asdict(cfg)},
                generator=EXPERT_VERSION,
            )
            writer.__enter__()
            model_xml = env.model_xml()
        for index in range(num_demos):
            for attempt in range(1 if dry else MAX_ATTEMPTS):
                s = demo_seed(name, index, attempt, seed)
                attempts += 1
                success, rec = run_expert_episode(env, s, max_steps, record=not dry)
                if success:
                    kept += 1
                    lengths.append(len(rec["actions"]) if not dry else env.steps)
                    if writer is not None:
                        obs = {k: np.stack([o[k] for o in rec["obs"]]) for k in rec["obs"][0]}
                        writer.add(
                            Demo(
                                actions=np.stack(rec["actions"]),
                                states=np.stack(rec["states"]),
                                robot_states=np.stack(rec["robot_states"]),
                                obs=obs,
                                init_state=rec["init_state"],
                                model_file=model_xml,
                                seed=s,
                            )
                        )
                    break
            if progress:
                progress(name, index + 1, num_demos)
        if writer is not None:
            writer.__exit__(None, None, None)
    except BaseException as e:
        if not dry and writer is not None:
            writer.__exit__(type(e), e, e.__traceback__)
        raise
    finally:
        env.close()
    return CollectStats(name, kept, attempts, kept / max(attempts, 1), float(np.mean(lengths)) if lengths else 0.0)
