"""Run directories as inputs of the metrics and reports: load one, group runs by method, measure them.

A run directory (written by the lifelong loop) holds ``config.yaml`` (the resolved config: name, seed,
suite, tasks, learner.name, policy.name, ...), ``success.json`` (the success tensor) and, when the loop
records it, ``resources.json`` and ``environment.json``; a run made by `libero-ll sweep` also holds
``sweep.json`` (its variant).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from libero_ll.errors import LiberoError, yaml_problem
from libero_ll.evaluation.resources import RunResources, load_resources, run_data_sizes
from libero_ll.evaluation.success import SuccessTensor
from libero_ll.tasks.registry import ORDER_FILE

# Learners whose memory holds training samples (counted by SSS rather than MS), whatever a run's resources.json
# says (runs made before it recorded the learner's `memory_is_samples`, and MTL's made before MTL said so).
REPLAY_LEARNERS = frozenset({"er", "mtl"})
# A relative data.dir in a config is looked up from the current directory, then from the repository.
REPO_ROOT = Path(__file__).resolve().parents[2]
# Written into a run directory by a sweep (libero_ll.experiments.sweep): its sweep, variant, seed, order and
# overrides; reports read the variant.
SWEEP_FILE = "sweep.json"
# What each session of a run ran on (libero_ll.experiments.environment writes it).
ENVIRONMENT_FILE = "environment.json"
# Where a run stands, written by the lifelong loop after every save: the stage (stages ended so far), phase and
# epoch, and how many stages the run has.
PROGRESS_FILE = "progress.json"
# The weights a finished run ends with (libero_ll.experiments.checkpoint writes it, last of all).
FINAL_POLICY = "final_policy.pt"
# The whole training state after the last save (libero_ll.experiments.lifelong writes it).
STATE_FILE = "resume.pt"
# The run's own copies of its task files (and their stored initial states), with their learning order, written as
# the run starts (libero_ll.experiments.run_files).
RUN_TASKS_DIR = "tasks"
RUN_TASKS_ORDER = ORDER_FILE
# The run's log: every line the lifelong loop logs, after the time it was written (a sweep's run also gets
# what it prints besides, its warnings and errors).
LOG_FILE = "log.txt"


@dataclass
class Run:
    """One run directory, loaded.

    Attributes:
        path: the directory.
        config: its resolved config as plain dicts and lists.
        tensor: its success tensor.
        resources: its recorded resources, or None when ``resources.json`` is absent.
        sweep: what a sweep recorded about the run (``sweep.json``: its sweep, variant and task order), or
            None for a run started by hand.
        sessions: what each session of the run (its start, then each resume) ran on (``environment.json``:
            device, versions, command); empty for runs made before it was recorded.
        unfinished: (stages ended, stages in all) of a run that has not ended (killed, or paused with
            `train --stages`), else None (see `unfinished_stages`).
    """

    path: Path
    config: dict
    tensor: SuccessTensor
    resources: RunResources | None
    sweep: dict | None = None
    sessions: list = field(default_factory=list)
    unfinished: tuple[int, int] | None = None

    @property
    def ran_on(self) -> dict:
        """Where the run ran, from its first session: ``device``, ``libero_ll`` (version and commit) and
        ``torch``; "n/a" where not recorded. A run resumed on another device or version says so in ``device``."""
        if not self.sessions:
            return {"device": "n/a", "libero_ll": "n/a", "torch": "n/a"}
        first = self.sessions[0]
        versions = first.get("versions") or {}
        git = first.get("git") or {}
        code = str(versions.get("libero_ll") or "n/a")
        if git.get("commit"):
            code += f" ({str(git['commit'])[:10]}{', modified' if git.get('dirty') else ''})"
        devices = list(dict.fromkeys(str(s.get("device", "?")) for s in self.sessions))
        return {"device": " then ".join(devices), "libero_ll": code, "torch": str(versions.get("torch") or "n/a")}

    @property
    def suite(self) -> str:
        """The suite's name (the last part of ``suite`` when the config names a folder)."""
        return Path(str(self.config.get("suite", "?"))).name

    @property
    def learner(self) -> str:
        return str((self.config.get("learner") or {}).get("name", "?"))

    @property
    def policy(self) -> str:
        return str((self.config.get("policy") or {}).get("name", "?"))

    @property
    def seed(self) -> int | None:
        seed = self.config.get("seed")
        return int(seed) if seed is not None else None

    @property
    def variant(self) -> str:
        """The overrides a sweep varied for this run besides suite, learner and policy ("" when none)."""
        return str((self.sweep or {}).get("variant", ""))

    @property
    def method(self) -> tuple[str, str, str, str]:
        """(suite, learner, policy, variant): what runs of different seeds (and task orders) share."""
        return self.suite, self.learner, self.policy, self.variant

    @property
    def task_order(self) -> tuple[str, ...]:
        return tuple(self.tensor.task_names)

    @property
    def replay(self) -> bool:
        recorded = self.resources.memory_is_samples if self.resources is not None else None
        return bool(recorded) or self.learner in REPLAY_LEARNERS


class NotEvaluatedYet(LiberoError):
    """A run directory that has saved no evaluation yet: it has its ``config.yaml`` but no ``success.json``
    (killed, or still running, before its first evaluation). Reports leave such a run out and name it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        again = ""
        if (self.path / STATE_FILE).exists() or (self.path / FINAL_POLICY).exists():
            # Its saved state holds the success tensor: a success.json lost since is written again from it.
            again = f"; if it got further and the file was lost, libero-ll train --resume {path} writes it again"
        super().__init__(f"{path}: the run has saved no evaluation yet: it has no success.json (killed, or still "
                         f"running, before its first evaluation){again}")


def unfinished_stages(run_dir: str | os.PathLike) -> tuple[int, int] | None:
    """(stages ended, stages in all) of a run that has not ended yet, from its progress.json; None for a run
    that has ended, or that recorded no progress (made by hand, or before the file existed).

    A run stopped before its first save (or, before saves and progress were written together, during one) has
    no progress.json: without its final policy, one that holds a saved state or its copies of the task files
    (what `libero-ll train` writes as a run starts) has ended no stage yet, of as many as it has tasks (one for
    MTL, which learns them all in one stage)."""
    run_dir = Path(run_dir)
    try:
        progress = json.loads((run_dir / PROGRESS_FILE).read_text(encoding="utf-8"))
        ended, total = int(progress["stage"]), int(progress["stages"])
    except (OSError, ValueError, KeyError, TypeError):
        if (run_dir / FINAL_POLICY).exists() or not (
                (run_dir / STATE_FILE).exists() or (run_dir / RUN_TASKS_DIR / RUN_TASKS_ORDER).exists()):
            return None
        return 0, _stages_of(run_dir)
    return (ended, total) if ended < total else None


def _stages_of(run_dir: Path) -> int:
    """How many stages a run has, from its task files' order and its learner (one stage for MTL); at least 1."""
    try:
        order = (run_dir / RUN_TASKS_DIR / RUN_TASKS_ORDER).read_text(encoding="utf-8")
        tasks = [line for line in order.splitlines() if line.strip()]
    except OSError:
        tasks = []
    if not tasks:
        try:
            tasks = json.loads((run_dir / "success.json").read_text(encoding="utf-8"))["task_names"]
        except (OSError, ValueError, KeyError, TypeError):
            tasks = []
    try:
        from omegaconf import OmegaConf

        learner = str(OmegaConf.load(run_dir / "config.yaml").learner.name)
    except Exception:  # noqa: BLE001 - an unreadable config is reported where it is read; here it counts tasks
        learner = ""
    return 1 if learner == "mtl" else max(1, len(tasks))


def unfinished_note(run: Run) -> str:
    """How far an unfinished run got, for a line of output: "3 of 10 stages ended"."""
    ended, total = run.unfinished
    return f"{ended} of {total} stage{'s' if total > 1 else ''} ended"


def config_digest(run_dir: str | os.PathLike) -> str | None:
    """The SHA-256 of a run's config.yaml as it is now; None when it cannot be read."""
    import hashlib

    try:
        return hashlib.sha256((Path(run_dir) / "config.yaml").read_bytes()).hexdigest()
    except OSError:
        return None


def config_edited(run_dir: str | os.PathLike, sessions: list[dict]) -> bool:
    """Whether a run's config.yaml differs from the one its last session ran with (edited after the run: its
    results are then read under settings, a learner or a policy that may not be the ones that made them). False
    for runs whose sessions did not record it."""
    recorded = sessions[-1].get("config_sha256") if sessions else None
    return isinstance(recorded, str) and config_digest(run_dir) not in (None, recorded)


def edited_config_warning(run_dir: str | os.PathLike) -> str:
    return (f"{Path(run_dir) / 'config.yaml'} differs from the one the run's last session ran with (edited after "
            "the run?): its learner, policy and settings are read as the file says now")


def load_sessions(run_dir: str | os.PathLike) -> list[dict]:
    """The sessions (start, then each resume) recorded in a run's environment.json, oldest first; [] when
    there is none or it cannot be read (a run made before the file existed)."""
    try:
        data = json.loads((Path(run_dir) / ENVIRONMENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    sessions = data.get("sessions") if isinstance(data, dict) else None
    return [s for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []


def runs_inside_hint(path: str | Path) -> str:
    """For a folder that is not a run: "; it holds N runs (a, b, ...): give them, e.g. DIR/*" when run
    directories lie in it (a sweep's output folder), else ""."""
    path = Path(path)
    try:
        runs = sorted(c.name for c in path.iterdir() if (c / "config.yaml").is_file())
    except OSError:
        return ""
    if not runs:
        return ""
    some = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
    return f"; it holds {len(runs)} run{'s' if len(runs) != 1 else ''} ({some}): give them, e.g. {path / '*'}"


def check_run_dir(path: str | Path, option: str = "") -> Path:
    """`path` as a Path when it is a run directory (it holds config.yaml); else a LiberoError saying what it is
    instead: nothing, a file, or a folder that holds run directories (a sweep's output folder) or none.
    `option` ("--resume " say) begins the message when the path came from one."""
    p = Path(path)
    if not p.exists():
        raise LiberoError(f"{option}{p}: no such folder (give a run directory)")
    if not p.is_dir():
        raise LiberoError(f"{option}{p}: is a file, not a run directory")
    if not (p / "config.yaml").is_file():
        raise LiberoError(f"{option}{p}: not a run directory (no config.yaml){runs_inside_hint(p)}")
    return p


def read_config_file(path: str | os.PathLike, run: bool = False):
    """Read a YAML config file: (its plain contents, the same as an OmegaConf DictConfig). Every command reads
    config files, a run's own config.yaml included, through this, so that they say a damaged one alike.

    Args:
        path: the file.
        run: the file is a run's own config.yaml (written whole as the run starts): a damaged or empty one is
            said to be the run's, with the file of the run that keeps a copy of it (`saved_config_hint`).

    Raises:
        LiberoError: naming the file, when it is not valid YAML (with the line and column), empty, or not a
            mapping of settings.
    """
    import yaml
    from omegaconf import DictConfig, OmegaConf

    path = Path(path)
    problem = None
    try:
        # Read as plain YAML first for the shape of the whole file: OmegaConf reads a lone word as a key
        # ("hello" as {hello: null}) and refuses other single values with an error about Python types.
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        cfg = OmegaConf.load(path) if isinstance(raw, dict) else None
    except Exception as e:  # noqa: BLE001 - YAML errors come in many types
        raw = cfg = None
        problem = f"not valid YAML: {yaml_problem(e)}"
    if problem is None and (raw is None or raw == {}):
        if not run:
            raise LiberoError(f"{path}: the config file is empty; start from a preset such as configs/cpu.yaml")
        problem = "empty"
    if problem is None and not isinstance(cfg, DictConfig):
        shown = repr(raw) if len(repr(raw)) <= 60 else f"{repr(raw)[:50]}... ({len(str(raw))} characters)"
        got = "a list" if isinstance(raw, list) else f"the single value {shown}"
        if not run:
            raise LiberoError(
                f"{path}: a config file is a mapping of settings and sections (name:, seed:, train:, eval:, ...; "
                f"see configs/cpu.yaml), got {got}"
            )
        problem = f"not a mapping of settings: it holds {got}"
    if problem is None:
        return raw, cfg
    if not run:
        raise LiberoError(f"{path}: {problem}")
    what = "is empty" if problem == "empty" else f"is damaged ({problem})"
    raise LiberoError(f"{path}: the run's own config {what} (a run writes it whole as it starts); "
                      f"{saved_config_hint(path.parent)}")


def saved_config_hint(run_dir: str | os.PathLike) -> str:
    """How to get back a run's config.yaml: from the copy its final policy or its saved state holds (the first of
    those that holds one), with the command that writes it; else that no file of the run holds one."""
    import shlex

    run_dir = Path(run_dir)
    for name in (FINAL_POLICY, STATE_FILE):
        if _holds_config(run_dir / name):
            saved, target = run_dir / name, run_dir / "config.yaml"
            code = (f"import torch; from omegaconf import OmegaConf; OmegaConf.save(torch.load({json.dumps(str(saved))}, "
                    f'weights_only=True)["config"], {json.dumps(str(target))})')
            return (f"the run keeps a copy of its config in {saved} (the config it last saved with); write it back "
                    f"to config.yaml with: {shlex.join(['python', '-c', code])}")
    return (f"no file of the run holds a copy of it ({FINAL_POLICY} or {STATE_FILE}, which a run writes as it "
            "saves): put back a copy of config.yaml if there is one")


def _holds_config(path: Path) -> bool:
    """Whether a checkpoint of a run holds its config (a mapping under 'config'); False when it is missing or
    cannot be read."""
    if not path.is_file():
        return False
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - a damaged or foreign file fails in many ways; it then holds nothing
        return False
    return isinstance(ckpt, dict) and isinstance(ckpt.get("config"), dict) and bool(ckpt["config"])


def load_run(path: str | os.PathLike) -> Run:
    """Load a run directory.

    Raises:
        NotEvaluatedYet: a run directory (its config.yaml can be read) without ``success.json``: a run killed,
            or still running, before its first evaluation.
        LiberoError: naming the directory when it does not exist, is a file, lacks ``config.yaml``, or one
            of its files cannot be read.
    """
    from omegaconf import OmegaConf

    path = Path(path)
    check_run_dir(path)
    # Read as every command reads a run's config (train --resume, evaluate): a damaged one is said alike.
    config = OmegaConf.to_container(read_config_file(path / "config.yaml", run=True)[1], resolve=False)
    if not (path / "success.json").is_file():
        raise NotEvaluatedYet(path)
    sweep = None
    if (path / SWEEP_FILE).is_file():
        try:
            sweep = json.loads((path / SWEEP_FILE).read_text())
        except (OSError, ValueError) as e:
            raise LiberoError(f"{path / SWEEP_FILE} cannot be read: {e}") from None
        if not isinstance(sweep, dict):
            raise LiberoError(f"{path / SWEEP_FILE} does not hold a JSON object")
    return Run(path, config, SuccessTensor.load(path / "success.json"), load_resources(path), sweep,
               load_sessions(path), unfinished_stages(path))


def group_runs(runs: Sequence[Run]) -> dict[tuple[str, str, str, str], list[Run]]:
    """Runs grouped by (suite, learner, policy, variant), groups and their runs sorted (runs by seed, then
    path)."""
    groups: dict[tuple[str, str, str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(run.method, []).append(run)
    return {
        key: sorted(groups[key], key=lambda r: (r.seed if r.seed is not None else math.inf, str(r.path)))
        for key in sorted(groups)
    }


def run_started(run: Run) -> float:
    """When a run started (seconds since the epoch): its first session in environment.json, else the time its
    config.yaml was written (at the start); used to tell a rerun from the run it repeats."""
    from datetime import datetime

    if run.sessions:
        try:
            return datetime.fromisoformat(str(run.sessions[0].get("started"))).timestamp()
        except (TypeError, ValueError):
            pass
    try:
        return (run.path / "config.yaml").stat().st_mtime
    except OSError:
        return 0.0


def same_seed_runs(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs of one method (see `group_runs`) that share a seed and a task order: lists of two or more runs, the
    one to report last: the latest started of those that have ended, else the latest started (a run stopped
    partway does not displace a whole one). Such runs are not independent seeds (they repeat one another, or
    differ in settings that do not make a method of their own). Runs without a seed are never paired."""
    by_seed: dict[tuple, list[Run]] = {}
    for run in runs:
        if run.seed is not None:
            by_seed.setdefault((run.seed, run.task_order), []).append(run)
    return [sorted(same, key=lambda r: (r.unfinished is None, run_started(r), str(r.path)))
            for same in by_seed.values() if len(same) > 1]


def task_set(run: Run) -> tuple[str, ...]:
    """A run's tasks whatever their order (a task named twice counts twice)."""
    return tuple(sorted(run.task_order))


def main_task_set(runs: Sequence[Run]) -> tuple[str, ...]:
    """The task set most runs of a method share (on a tie, that of the first run given)."""
    counts: dict[tuple[str, ...], int] = {}
    for run in runs:
        counts[task_set(run)] = counts.get(task_set(run), 0) + 1
    return max(counts, key=lambda t: counts[t]) if counts else ()


# Config keys that say how a run was carried out, not what was learnt: they may differ between runs of one method.
_CONFIG_KEYS_FREE = frozenset({
    "name", "seed", "tasks", "output_dir", "num_threads", "device", "data.dir", "data.collect_workers",
    "eval.workers", "eval.envs_per_worker", "eval.overlap", "train.data_on_device",
})


def _flat_config(config: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flat_config(value, name + "."))
        else:
            out[name] = json.dumps(value, sort_keys=True, default=str)
    return out


# Where a run's config keeps the chosen learner's and policy's own settings, and its presets for each of them.
_OWN_SETTINGS = (("learner", "options"), ("policy", "cfg"))
# The value shown for a run that leaves a learner or policy setting to its default.
DEFAULT_VALUE = "(default)"


def chosen_settings(section: dict, own: str) -> dict:
    """The settings a run gives its chosen learner or policy: `section["by_name"][section["name"]]` (the preset's)
    updated with `section[own]` (`options` of a learner, `cfg` of a policy). `section` is the config's `learner`
    or `policy` as plain dicts."""
    by_name = section.get("by_name") if isinstance(section.get("by_name"), dict) else {}
    preset, mine = by_name.get(section.get("name")), section.get(own)
    return {**(preset if isinstance(preset, dict) else {}), **(mine if isinstance(mine, dict) else {})}


def _effective_config(config: dict) -> dict:
    """The config with `learner.options` and `policy.cfg` holding the chosen learner's and policy's settings as
    the run used them (`chosen_settings`), and `by_name` dropped: a setting differs alike whichever of the two
    places it was given in."""
    out = dict(config)
    for section, own in _OWN_SETTINGS:
        part = out.get(section)
        if isinstance(part, dict):
            out[section] = {**{k: v for k, v in part.items() if k not in ("by_name", own)},
                            own: chosen_settings(part, own)}
    return out


def config_differences(runs: Sequence[Run]) -> dict[str, list[str]]:
    """The config keys whose values differ between runs of one method, each with the runs' values in order
    (as JSON). The chosen learner's and policy's settings are compared as the runs used them, under
    `learner.options.*` and `policy.cfg.*` (wherever the config gave them: there or under `by_name`), a run that
    leaves one to its default showing DEFAULT_VALUE. Keys that do not change what is learnt (seed, task list,
    folders, threads, evaluation workers) and other keys some runs lack (made by an older version) are left
    out."""
    flats = [_flat_config(_effective_config(r.config)) for r in runs]
    if len(flats) < 2:
        return {}
    own = tuple(f"{section}.{key}." for section, key in _OWN_SETTINGS)
    keys = set(flats[0]).intersection(*flats[1:])
    keys |= {k for f in flats for k in f if k.startswith(own)}
    out = {}
    for key in sorted(keys - _CONFIG_KEYS_FREE):
        values = [f.get(key, DEFAULT_VALUE) for f in flats]
        if len(set(values)) > 1:
            out[key] = values
    return out


def single_task_aucs(references: Sequence[Run], task_names: Sequence[str]) -> np.ndarray | None:
    """Per task, the mean ``curve_auc`` of the reference runs that learned it first (from scratch).

    Args:
        references: single-task runs; each contributes the curve of its first task.
        task_names: the tasks wanted.
    Returns:
        (K,) array with NaN for a task no reference learned first; None when ``references`` is empty.
    """
    from libero_ll.evaluation.cl_metrics import curve_auc

    if not references:
        return None
    by_task: dict[str, list[float]] = {}
    for ref in references:
        if ref.tensor.num_tasks:
            t = ref.tensor
            by_task.setdefault(t.task_names[0], []).append(curve_auc(t.eval_epochs[0], t.curves[0]))
    out = np.full(len(task_names), np.nan)
    for k, name in enumerate(task_names):
        values = [v for v in by_task.get(name, []) if not math.isnan(v)]
        if values:
            out[k] = float(np.mean(values))
    return out


def measure_run(
    run: Run, reference: Run | None = None, single_task: Sequence[Run] = (), epsilon: float = 1.0
) -> dict:
    """Every metric of a run (``libero_ll.evaluation.metrics.all_metrics``), with its references.

    Args:
        run: the run.
        reference: a reference (multitask) run for intransigence; tasks are matched by name.
        single_task: single-task runs from scratch for Continual World's forward transfer.
        epsilon: CE's scaling factor ε.
    """
    from libero_ll.evaluation.cl_metrics import reference_success
    from libero_ll.evaluation.metrics import all_metrics

    names = run.tensor.task_names
    r_star = None
    if reference is not None:
        r_star = reference_success(reference.tensor.task_names, reference.tensor.matrix, names)
    sizes = None
    if run.resources is not None:  # as the run recorded them, else from the demo files its config names
        sizes = run.resources.data_sizes(len(names))
        if None in sizes:
            files = run_data_sizes(run.config, names, base=REPO_ROOT)
            sizes = [recorded or read for recorded, read in zip(sizes, files)]
    return all_metrics(
        run.tensor,
        run.resources,
        replay=run.replay,
        data_sizes=sizes,
        reference=r_star,
        single_task_auc=single_task_aucs(list(single_task), names),
        epsilon=epsilon,
        reference_tasks=reference.tensor.task_names if reference is not None else None,
    )
