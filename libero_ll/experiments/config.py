"""The experiment config: OmegaConf YAML checked against these dataclasses; unknown keys are errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from libero_ll.errors import LiberoError
from libero_ll.learners.base import TrainConfig


@dataclass
class DataConfig:
    """Demonstrations.

    Args:
        dir: folder of `<task_name>.hdf5` demo files; missing files are collected with the expert.
        demos_per_task: demos used (and collected when missing) per task.
        collect_seed: seed of the expert's collection.
        expert_max_steps: episode cap for the expert, policy steps.
    """

    dir: str = "datasets/quickstart"
    demos_per_task: int = 50
    collect_seed: int = 0
    expert_max_steps: int = 400


@dataclass
class EnvSettings:
    """Simulation and observation settings (see libero_ll.envs.env.EnvConfig)."""

    image_size: int = 128
    robot_mesh: str = "visual"
    shadows: bool = False
    reflections: bool = False


@dataclass
class EvalConfig:
    """Evaluation protocol (shared/spec/protocol.md).

    Args:
        every: evaluate the current task every this many epochs (and at epoch 0 and the last epoch).
        rollouts: rollouts per evaluation.
        max_steps: episode cap, policy steps.
        init_states: number of fixed initial states per task.
        init_seed: seed that fixes them (the same for every method).
        past_tasks: after each task, evaluate all earlier tasks (for NBT and AUC).
    """

    every: int = 5
    rollouts: int = 20
    max_steps: int = 600
    init_states: int = 50
    init_seed: int = 7
    past_tasks: bool = True


@dataclass
class PolicySection:
    """Which policy, and its own keys (checked by the policy's config class)."""

    name: str = "resnet_t"
    cfg: dict = field(default_factory=dict)


@dataclass
class LearnerSection:
    """Which learner, and its own options (checked by the learner)."""

    name: str = "er"
    options: dict = field(default_factory=dict)


@dataclass
class ExperimentConfig:
    """A lifelong-learning run.

    Args:
        name: run name, part of the run directory's name.
        seed: drives numpy, torch and the simulator.
        suite: a folder under bddl_tasks/ or a path to a folder of .bddl files.
        tasks: task names in learning order (None: all of the suite, sorted by name).
        language_encoder: "minilm", "task_id", or a local transformers model path.
        output_dir: where run directories are created.
        num_threads: torch CPU threads.
        device: "auto" (CUDA when available), "cpu" or "cuda".
    """

    name: str = "run"
    seed: int = 100
    suite: str = "quickstart"
    tasks: Optional[list[str]] = None
    language_encoder: str = "minilm"
    output_dir: str = "runs"
    num_threads: int = 2
    device: str = "auto"
    data: DataConfig = field(default_factory=DataConfig)
    env: EnvSettings = field(default_factory=EnvSettings)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    policy: PolicySection = field(default_factory=PolicySection)
    learner: LearnerSection = field(default_factory=LearnerSection)


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> Any:
    """Merge a YAML file (and the files it names under `defaults:`) with key=value overrides.

    Args:
        path: a YAML config; None gives the built-in defaults.
        overrides: dotted `key=value` strings, e.g. ["train.epochs=3", "learner.name=seql"].

    Returns:
        An OmegaConf DictConfig following ExperimentConfig.

    Raises:
        LiberoError: a missing file, bad YAML, an unknown key or a wrongly typed value, naming it.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    schema = OmegaConf.structured(ExperimentConfig)
    try:
        layers = _read_layers(Path(path)) if path else []
        dotlist = OmegaConf.from_dotlist(list(overrides or []))
        cfg = OmegaConf.merge(schema, *layers, dotlist)
    except OmegaConfBaseException as e:
        where = f"{path}: " if path else ""
        raise LiberoError(f"{where}{_first_line(e)}") from None
    except ValueError as e:
        raise LiberoError(f"bad override: {e}") from None
    return cfg


def _read_layers(path: Path, seen: tuple = ()) -> list:
    from omegaconf import OmegaConf

    if not path.exists():
        raise LiberoError(f"{path}: no such config file")
    if path.resolve() in seen:
        raise LiberoError(f"{path}: config includes itself through defaults")
    try:
        cfg = OmegaConf.load(path)
    except Exception as e:  # noqa: BLE001 - YAML errors come in many types
        raise LiberoError(f"{path}: not valid YAML: {_first_line(e)}") from None
    layers = []
    defaults = cfg.pop("defaults", []) or []
    for d in defaults:
        layers += _read_layers((path.parent / str(d)).with_suffix(".yaml"), seen + (path.resolve(),))
    return layers + [cfg]


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
