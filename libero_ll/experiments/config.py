"""The experiment config: OmegaConf YAML checked against these dataclasses; unknown keys are errors."""

from __future__ import annotations

import functools
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
    """Evaluation protocol (the LIBERO paper's by default).

    Args:
        every: evaluate the current task every this many epochs (and at epoch 0 and the last epoch).
        rollouts: rollouts per evaluation.
        max_steps: episode cap, policy steps.
        init_states: number of fixed initial states per task: the first ones of the task's shipped
            `<task>.init.npz` when it is current (and holds that many), else sampled with `init_seed` and
            checked like `libero-ll init-states` does (the init predicates hold, the goal does not).
        init_seed: seed that fixes sampled initial states (the same for every method); with the task's name
            (`libero_ll.envs.init_states.task_init_seed`), so that a task's states do not depend on its place in
            the run (task order, a subset of the tasks). Runs begun before that sampled task k with
            init_seed + k; a resumed run keeps the states in its init_states.npz.
        past_tasks: after each task, evaluate all earlier tasks (for NBT and AUC).
        workers: environment processes stepping rollouts in parallel (1: in the training process; 0: one
            per CPU core), at most the rollouts of one evaluation point (`rollouts` times the tasks
            evaluated together there: a stage's tasks, or the earlier tasks after a stage). With more than one,
            the rollouts of all the tasks of a point are in flight at once, where the learner's evaluation
            context allows it: a policy on the CPU runs in every worker (a copy with the point's weights,
            whole rollouts each), a policy on a GPU acts in the training process, batched over the rollouts
            in flight, which the workers step in lock-step (docs/speed.md). Training waits while they run
            (unless `overlap`).
        envs_per_worker: rollouts each worker steps at once, each in an environment of its own. With a
            policy batched in the training process (on a GPU, or recording videos), the policy then acts on
            batches of up to workers x envs_per_worker rollouts, less often (on 2 CPU cores, 3 took ten
            rollouts from 16.8 s to 15.0 s). With the policy in the workers (on a CPU), each worker steps
            groups of that many consecutive rollouts, its copy of the policy acting once per step on a group
            (on 2 CPU cores, five per worker took ten quickstart rollouts from 11.4-13.4 s to 8.0-9.1 s); 1
            gives exactly the rollouts of one process, more the same up to a batch's rounding
            (docs/speed.md). A worker keeps up to this many environments of each task it evaluates, about
            265 MB each for a quickstart task, 16 at most in all beside those in use.
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
            is waited for. A run's state is saved after every epoch as without it, with the evaluations still
            out (the weights each evaluates), which a resume sends again. On one H200 a paper-protocol task's 11 evaluations (200 s of the
            evaluation process's work) went on beside its training, which waited 11.5 s for them (docs/speed.md).
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

    from libero_ll.evaluation.runs import chosen_settings

    return chosen_settings(OmegaConf.to_container(cfg.policy, resolve=True), "cfg")


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

    from libero_ll.evaluation.runs import chosen_settings

    return chosen_settings(OmegaConf.to_container(cfg.learner, resolve=True), "options")


@dataclass
class ExperimentConfig:
    """A lifelong-learning run.

    Args:
        name: run name, part of the run directory's name.
        seed: drives numpy, torch and the simulator.
        suite: a folder under bddl_tasks/ or a path to a folder of .bddl files.
        tasks: task names in learning order, each once (None: all of the suite, a shipped suite in its registry order
            (LIBERO's), another folder's tasks sorted by name).
        language_encoder: "minilm", "task_id" (one-hot over the run's distinct instructions in learning order),
            "task_id:<model>", or a local transformers model path (`libero_ll.policies.language`).
        output_dir: where run directories are created.
        num_threads: torch CPU threads. On cores another busy process shares, 1 can train much faster than 2
            (docs/speed.md, "Rendering and speed": 117 windows/s against 40 with one busy process beside it).
        device: "auto" (CUDA when available), "cpu", "cuda" or "cuda:N" (the Nth GPU).
        init_from: start the policy from the weights of an earlier run (pretraining): a checkpoint file
            written by a run, a run directory (its final policy), or a glob pattern of run directories
            (the last match in name order, i.e. the newest of one run name). None: random initial weights.
            The run records the file it loaded in its environment.json (a resume before the first save
            loads that file again).
        plugins: Python code of your own to import before the run is built, whose learners and policies
            (`register_learner`, `register_policy`) `learner.name` and `policy.name` may then name
            (docs/extending.md): paths to `.py` files (from the current folder) or module names (found from
            the current folder, then on the Python path). The run records each file's SHA-256.
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
    plugins: list[str] = field(default_factory=list)
    data: DataConfig = field(default_factory=DataConfig)
    env: EnvSettings = field(default_factory=EnvSettings)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    policy: PolicySection = field(default_factory=PolicySection)
    learner: LearnerSection = field(default_factory=LearnerSection)


def load_config(path: str | Path | None, overrides: list[str] | None = None, run: bool = False) -> Any:
    """Merge a YAML file (and the files it names under `defaults:`) with key=value overrides.

    Args:
        path: a YAML config; None gives the built-in defaults.
        overrides: dotted `key=value` strings, e.g. ["train.epochs=3", "learner.name=seql"].
        run: `path` is a run's own config.yaml: a damaged or empty one is said to be the run's, with the file of
            the run that keeps a copy of it and how to write it back (`libero_ll.evaluation.runs.read_config_file`).

    Returns:
        An OmegaConf DictConfig following ExperimentConfig (interpolations left as written, but checked).

    Raises:
        LiberoError: a missing file, bad YAML, a file that is not a mapping of sections, bad `defaults`, an
            unknown key, a wrongly typed value, a value out of its range or an interpolation that cannot be
            resolved, naming the file (or the override) it came from and the key.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    schema = _schema()
    layers = _read_layers(Path(path), run=run) if path else []
    for file, layer in layers:
        problem = _shape_problem(schema, layer)
        if problem:
            raise LiberoError(f"{_file_label(file, path)}: {_shape_in_file(problem.replace('{value}', 'VALUE'))}")
    sources = [(_file_label(file, path), layer) for file, layer in layers]
    cfg = _merged(schema, sources)
    given = []
    for override in overrides or []:
        try:
            layer = _read_override(override)
        except OmegaConfBaseException as e:
            key = getattr(e, "full_key", None)
            raise LiberoError(f"override {key + ': ' if key else ''}{first_line(e)}") from None
        except ValueError as e:
            raise LiberoError(f"bad override {override!r}: {e}") from None
        problem = _shape_problem(schema, layer)
        if problem:
            value = str(override).partition("=")[2].strip() or "VALUE"
            raise LiberoError(f"override {override}: {problem.replace('{value}', value)}")
        given.append((f"override {override}", layer))
    cfg = _merged(cfg, given)
    sources += given
    _check_values(cfg, sources)
    from libero_ll.experiments.plugins import import_plugins

    plugins = OmegaConf.select(cfg, "plugins")
    if plugins:
        import_plugins(plugins, where=f"{_source(sources, 'plugins')}plugins",
                       started_in=_run_started_in(Path(path)) if path else None)
    return cfg


def _merged(base, sources: list):
    """`base` with the layers of `sources` ((where, layer) pairs) merged in, in order; a LiberoError that names
    where a value that does not fit came from (a file, or `override KEY`)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        return OmegaConf.merge(base, *(layer for _, layer in sources))
    except OmegaConfBaseException as merged:
        # One at a time instead, to find the layer the bad value came from.
        cfg = base
        for where, layer in sources:
            try:
                cfg = OmegaConf.merge(cfg, layer)
            except OmegaConfBaseException as e:
                key = getattr(e, "full_key", None)
                label = "override " if where.startswith("override ") else f"{where}: "
                raise LiberoError(f"{label}{key + ': ' if key else ''}{first_line(e)}") from None
        raise LiberoError(f"config: {first_line(merged)}") from None


@functools.cache
def _schema():
    """ExperimentConfig as an OmegaConf schema, built once (merges copy it, never change it)."""
    from omegaconf import OmegaConf

    return OmegaConf.structured(ExperimentConfig)


def _run_started_in(path: Path) -> str | None:
    """For a run's own config.yaml, the folder its first session was started from (environment.json)."""
    from libero_ll.experiments.environment import load_sessions

    if path.name != "config.yaml" or not (path.parent / "environment.json").is_file():
        return None
    sessions = load_sessions(path.parent)
    return str(sessions[0].get("cwd") or "") or None if sessions else None


def _check_values(cfg, sources: list) -> None:
    """Resolve `cfg`'s interpolations and check the settings' ranges (those `check_components` checks again),
    raising a LiberoError that names the file or the override that set the bad value, and its key."""
    import re

    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None) or ""
        raw = _lookup(OmegaConf.to_container(cfg, resolve=False), key)[1]
        what = f"cannot resolve {raw!r}" if isinstance(raw, str) and "${" in raw else "cannot resolve it"
        raise LiberoError(
            f"{_source(sources, key)}{key + ': ' if key else ''}{what}: {first_line(e)}"
        ) from None
    from libero_ll.experiments.lifelong import CHOICES, COUNTS, choice_problem, is_count, repeated_task_problem

    try:
        TrainConfig(**plain["train"])
    except LiberoError as e:
        match = re.match(r"(train\.\w+) ", str(e))
        raise LiberoError(f"{_source(sources, match.group(1) if match else 'train')}{e}") from None
    for key, least, meaning in COUNTS:
        value = _lookup(plain, key)[1]
        if not is_count(key, value, least):
            raise LiberoError(f"{_source(sources, key)}{key} must be {meaning}, got {value!r}")
    for key, _ in CHOICES:
        problem = choice_problem(key, _lookup(plain, key)[1])
        if problem:
            raise LiberoError(f"{_source(sources, key)}{problem}")
    problem = repeated_task_problem(plain.get("tasks") or [])
    if problem:
        raise LiberoError(f"{_source(sources, 'tasks')}{problem}")


def _lookup(container, key: str) -> tuple[bool, Any]:
    """(found, value) of the dotted `key` in plain nested dicts and lists."""
    node = container
    for part in key.split(".") if key else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _source(sources: list, key: str) -> str:
    """'FILE: ' or 'override KEY=VALUE: ' for the last of `sources` (label, layer) that sets `key`; '' when
    none does (a default)."""
    from omegaconf import OmegaConf

    for label, layer in reversed(sources):
        if _lookup(OmegaConf.to_container(layer, resolve=False), key)[0]:
            return f"{label}: "
    return ""


def _file_label(file: Path, top) -> str:
    """How an error names a config file: the file, and the one that included it through `defaults`."""
    if top is None or Path(file).resolve() == Path(top).resolve():
        return str(file)
    return f"{file} (in the defaults of {top})"


# The sections' `by_name` mappings, whose every entry is a mapping of settings: what those settings are.
BY_NAME = {"learner.by_name": "learner's options", "policy.by_name": "policy's keys"}


def _shape_problem(schema, layer, prefix: str = "") -> str | None:
    """The message for the first value of `layer` given where the schema has a section, a mapping or a list
    and the value is not one (`learner=er`, `train: 3`, `tasks=foo`); None when the shapes agree. Other
    mismatches (an unknown key, a wrong scalar type) are left to OmegaConf's merge, which names them."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    for k in layer.keys():
        if not isinstance(k, str) or k not in schema:
            continue
        key = f"{prefix}{k}"
        expected, given = schema._get_node(k), layer._get_node(k)
        if isinstance(expected, DictConfig):
            structured = OmegaConf.get_type(expected) not in (dict, None)
            if not isinstance(given, DictConfig) or given._is_none():
                if structured:
                    fields = list(expected.keys())
                    return (f"{key} is a section ({', '.join(fields)}), not a single value; set one of its keys, "
                            f"e.g. {key}.{fields[0]}={{value}}")
                return (f"{key} is a mapping of keys to values, not a single value; set one of its keys, e.g. "
                        f"{key}.NAME={{value}}")
            if structured:
                inner = _shape_problem(expected, given, f"{key}.")
                if inner:
                    return inner
            elif key in BY_NAME:
                for name in given.keys():
                    entry = given._get_node(name)
                    if not isinstance(entry, DictConfig) and not entry._is_none():
                        return (f"{key}.{name} takes a mapping of that {BY_NAME[key]}, not a list or a single value; "
                                f"set one at a time, e.g. {key}.{name}.KEY=VALUE")
        elif isinstance(expected, ListConfig) and not isinstance(given, ListConfig) \
                and not (given._is_none() and expected._is_optional()):
            return f"{key} takes a list, e.g. {key}=[a,b]"
    return None


def _shape_in_file(message: str) -> str:
    """A `_shape_problem` message with its example written as YAML (`train: {epochs: 3}`, `tasks: [a, b]`)."""
    import re

    def yaml_form(m: re.Match) -> str:
        parts, value = m.group(1).split("."), m.group(2)
        value = "[a, b]" if value == "[a,b]" else value
        for part in reversed(parts[1:]):
            value = f"{{{part}: {value}}}"
        return f"{parts[0]}: {value}"

    return re.sub(r"e\.g\. ([\w.]+)=(\S+)$", lambda m: "e.g. " + yaml_form(m), message)


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
    if not all(key.split(".")):
        raise LiberoError(
            f"override {override!r}: the key {key!r} has an empty part; keys are names joined by single dots, "
            "e.g. train.epochs=20"
        )
    try:
        return OmegaConf.from_dotlist([str(override)])
    except yaml.YAMLError as e:
        problem = str(getattr(e, "problem", None) or first_line(e))
        raise LiberoError(
            f"override {override!r}: the value is not valid YAML ({problem}); write lists as [a, b] and "
            "mappings as {key: value} with a space after each colon, or set one key at a time (a.b.key=value)"
        ) from None


def _read_layers(path: Path, seen: tuple = (), run: bool = False) -> list:
    """(file, config) for `path` and, before it, the files its `defaults:` names (and theirs), in merge order.

    `defaults` lists config names or paths, each relative to the folder of the file that names it, `.yaml`
    optional (`defaults: [smoke]`, `defaults: [../cpu.yaml]`); a bare name not there is a shipped preset of
    the project's configs/ folder, so that a preset copied elsewhere still finds the presets it builds on.
    `run`: `path` is a run's own config.yaml (see `load_config`)."""
    from libero_ll.evaluation.runs import read_config_file

    if not path.exists():
        raise LiberoError(f"{path}: no such config file")
    if path.is_dir():
        raise LiberoError(f"{path}: is a folder, not a config file")
    if path.resolve() in seen:
        raise LiberoError(f"{path}: config includes itself through defaults")
    raw, cfg = read_config_file(path, run=run)
    layers = []
    if "defaults" in cfg:
        cfg.pop("defaults")
        for name in _defaults_names(path, raw.get("defaults")):
            layers += _read_layers(_default_file(path, name), seen + (path.resolve(),))
    return layers + [(path, cfg)]


def _default_file(path: Path, name: str) -> Path:
    """The file that `name` of `path`'s `defaults:` names: beside `path`, else (a bare name) the shipped
    preset of that name; a LiberoError naming `path` and where it looked when neither is there."""
    from libero_ll.tasks.registry import REPO_ROOT

    beside = (path.parent / name).with_suffix(".yaml")
    if beside.exists():
        return beside
    shipped = (REPO_ROOT / "configs" / name).with_suffix(".yaml")
    if Path(name).name == name and shipped.is_file():
        return shipped
    presets = sorted(p.stem for p in (REPO_ROOT / "configs").glob("*.yaml"))
    raise LiberoError(f"{path}: defaults names {name!r}, but there is no {beside} (a name is looked for beside "
                      f"the file that names it, then among the shipped presets: {', '.join(presets)})")


def _defaults_names(path: Path, defaults) -> list[str]:
    """The config names or paths of a file's `defaults:` (null: none), or a LiberoError naming the file and
    saying what it takes."""
    if defaults is None:
        return []
    names = "config names or paths, relative to this file's folder, .yaml optional (e.g. defaults: [smoke])"
    if not isinstance(defaults, list):
        hint = f"; write defaults: [{defaults}]" if isinstance(defaults, str) else ""
        raise LiberoError(f"{path}: defaults takes a list of {names}, got {defaults!r}{hint}")
    for i, name in enumerate(defaults):
        if not isinstance(name, str) or not name.strip():
            raise LiberoError(f"{path}: defaults[{i}]: the entries of defaults are {names}, got {name!r}")
    return defaults


# What first_difference reads for a key one side lacks.
ABSENT = "<absent>"


def first_difference(was, now, ignore=(), prefix: str = ""):
    """(dotted key, value in `was`, value in `now`) of the first difference between two plain (nested dict)
    configs, keys in `ignore` (dotted) left out; None when they agree. A key one side lacks reads ABSENT."""
    if prefix.rstrip(".") in ignore:
        return None
    if isinstance(was, dict) and isinstance(now, dict):
        for k in list(was) + [k for k in now if k not in was]:
            found = first_difference(was.get(k, ABSENT), now.get(k, ABSENT), ignore, f"{prefix}{k}.")
            if found is not None:
                return found
        return None
    return None if was == now else (prefix.rstrip("."), was, now)


def first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
