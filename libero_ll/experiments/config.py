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
        expert_max_steps: episode cap for the expert, policy steps (EXPERT_MAX_STEPS of
            libero_ll/data/collect.py: the evaluation cap, which the expert's longest task fits in).
        collect_workers: processes collecting missing demos at once (the demos do not depend on it); 0: one
            per CPU core.
        corrections_per_demo: displaced-object corrections made from each pick of each demo and trained on
            with the demos (libero_ll/data/corrections.py; kept in `<dir>/corrections/`); 0: none.
    """

    dir: str = "datasets/quickstart"
    demos_per_task: int = 50
    collect_seed: int = 0
    expert_max_steps: int = 600
    collect_workers: int = 1
    corrections_per_demo: int = 0


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
        init_states: number of fixed initial states per task: the first ones of the task's shipped
            `<task>.init.npz` when it is current, else sampled with `init_seed`.
        init_seed: seed that fixes sampled initial states (the same for every method).
        past_tasks: after each task, evaluate all earlier tasks (for NBT and AUC).
        workers: environment processes stepping rollouts in parallel (1: in the training process; 0: one
            per CPU core), at most the rollouts of one evaluation point (`rollouts` times the tasks
            evaluated together there: a stage's tasks, or the earlier tasks after a stage). With more than one,
            the rollouts of all the tasks of a point are in flight at once, where the learner's evaluation
            context allows it: a policy on the CPU runs in every worker (a copy with the point's weights,
            whole rollouts each), a policy on a GPU acts in the training process, batched over the rollouts
            in flight, which the workers step in lock-step (docs/speed.md). Training waits while they run
            (unless `overlap`).
        envs_per_worker: with a policy batched in the training process (on a GPU, or recording videos),
            rollouts each worker steps at once, each in an environment of its own: the policy then acts
            on batches of up to workers x envs_per_worker rollouts, less often (on 2 CPU cores, 3 took ten
            rollouts from 16.8 s to 15.0 s; docs/speed.md). A worker keeps up to this many environments of each
            task it evaluates, about 200 MB each for a quickstart task. A policy run in the workers steps
            one rollout at a time in each.
        still_steps: end a rollout as failed once nothing in its scene (arm, fingers, objects, drawers,
            doors) has moved for this many consecutive steps; 0 (the paper's protocol) runs every failing
            rollout to `max_steps`. Longer than the policy's window, such a rollout cannot recover under
            deterministic actions (libero_ll.evaluation.rollout.StillnessMonitor).
        overlap: evaluate while training goes on, in a process of its own that rolls out copies of the
            weights (with its own `workers`; libero_ll/experiments/background_eval.py): false (the default),
            true, or null (on when the policy trains on a CUDA GPU, whose machine's cores otherwise idle
            through training while the GPU idles through rollouts). The scores are those of an evaluation in
            the training process (the same run on a CPU, tested). A stage's evaluations during training go
            on beside it and the stage waits for them at its end; the earlier tasks' evaluation after a stage
            is waited for. A run's state is saved at the epochs whose evaluations are in, so a resume may go
            back a few epochs further. Not yet timed on a GPU.
    """

    every: int = 5
    rollouts: int = 20
    max_steps: int = 600
    init_states: int = 50
    init_seed: int = 7
    past_tasks: bool = True
    workers: int = 1
    envs_per_worker: int = 1
    still_steps: int = 0
    overlap: Optional[bool] = False


@dataclass
class PolicySection:
    """Which policy, and its own keys (checked by the policy's config class).

    Args:
        name: registry name of the policy (resnet_t, resnet_rnn, vit_t).
        cfg: keys of the chosen policy; they take precedence over `by_name[name]`.
        by_name: policy name → keys used whenever that policy is the chosen one, so that a preset can
            size every architecture and `policy.name=...` alone switches between them. Every entry is
            checked against its policy, chosen or not.
    """

    name: str = "resnet_t"
    cfg: dict = field(default_factory=dict)
    by_name: dict = field(default_factory=dict)


def policy_config(cfg) -> dict:
    """The chosen policy's keys: `policy.by_name[policy.name]` updated with `policy.cfg`."""
    from omegaconf import OmegaConf

    section = OmegaConf.to_container(cfg.policy, resolve=True)
    return {**(section["by_name"].get(section["name"]) or {}), **(section["cfg"] or {})}


@dataclass
class LearnerSection:
    """Which learner, and its own options (checked by the learner).

    Args:
        name: registry name of the learner (seql, er, ewc, packnet, mtl).
        options: options of the chosen learner; they take precedence over `by_name[name]`.
        by_name: learner name → options used whenever that learner is the chosen one, so that a preset can
            carry sensible options for every learner and `learner.name=...` alone switches between them.
            Every entry is checked against its learner, chosen or not.
    """

    name: str = "er"
    options: dict = field(default_factory=dict)
    by_name: dict = field(default_factory=dict)


def learner_options(cfg) -> dict:
    """The chosen learner's options: `learner.by_name[learner.name]` updated with `learner.options`."""
    from omegaconf import OmegaConf

    section = OmegaConf.to_container(cfg.learner, resolve=True)
    return {**(section["by_name"].get(section["name"]) or {}), **(section["options"] or {})}


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
        init_from: start the policy from the weights of an earlier run (pretraining): a checkpoint file
            written by a run, a run directory (its final policy), or a glob pattern of run directories
            (the last match in name order, i.e. the newest of one run name). None: random initial weights.
            The run records the file it loaded in its environment.json (a resume before the first save
            loads that file again).
    """

    name: str = "run"
    seed: int = 100
    suite: str = "quickstart"
    tasks: Optional[list[str]] = None
    language_encoder: str = "minilm"
    output_dir: str = "runs"
    num_threads: int = 2
    device: str = "auto"
    init_from: Optional[str] = None
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
    # The file's layers and the overrides are merged in two steps, so that an error names where the bad
    # value came from.
    try:
        layers = _read_layers(Path(path)) if path else []
        cfg = OmegaConf.merge(schema, *layers)
    except OmegaConfBaseException as e:
        where = f"{path}: " if path else ""
        key = getattr(e, "full_key", None)
        raise LiberoError(f"{where}{key + ': ' if key else ''}{_first_line(e)}") from None
    try:
        dotlist = OmegaConf.merge(OmegaConf.create(), *[_read_override(o) for o in overrides or []])
        cfg = OmegaConf.merge(cfg, dotlist)
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None)
        raise LiberoError(f"override {key + ': ' if key else ''}{_first_line(e)}") from None
    except ValueError as e:
        raise LiberoError(f"bad override: {e}") from None
    return cfg


def _read_override(override: str):
    """One `key=value` override as a config, or a LiberoError naming it when it has no `=` or its value
    is not YAML."""
    import yaml
    from omegaconf import OmegaConf

    key = str(override).partition("=")[0].strip()
    if "=" not in str(override) or not key:
        raise LiberoError(
            f"override {override!r}: expected key=value (e.g. train.epochs=20); "
            + ("the key is missing" if "=" in str(override) else "there is no '='")
        )
    try:
        return OmegaConf.from_dotlist([str(override)])
    except yaml.YAMLError as e:
        problem = str(getattr(e, "problem", None) or _first_line(e))
        raise LiberoError(
            f"override {override!r}: the value is not valid YAML ({problem}); write lists as [a, b] and "
            "mappings as {key: value} with a space after each colon, or set one key at a time (a.b.key=value)"
        ) from None


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
    if not cfg:
        raise LiberoError(f"{path}: the config file is empty; start from a preset such as configs/cpu.yaml")
    layers = []
    defaults = cfg.pop("defaults", []) or []
    for d in defaults:
        layers += _read_layers((path.parent / str(d)).with_suffix(".yaml"), seen + (path.resolve(),))
    return layers + [cfg]


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
