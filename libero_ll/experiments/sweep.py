"""Sweeps: a grid (or list) of config overrides x seeds x task orders, each an ordinary run directory, run on
Ray (a local Ray started and stopped here, or a cluster), restartable, ending with a report over the runs.

A sweep file is YAML:

    name: table2_cpu                # default: the file's name; a plain folder name (no / or ..)
    config: ../cpu.yaml             # the base config, relative to the sweep file
    overrides:                      # applied to every run (a mapping, or a list of "key=value")
      train.epochs: 10              # (tasks: here sets the tasks whose orders task_orders permutes)
    grid:                           # every combination of these values ...
      learner.name: [seql, er, ewc, packnet, mtl]
    runs:                           # ... and/or a list of override sets (combined with every grid point)
      - {train.lr: 0.001}
    seeds: [100, 200, 300]          # default: the config's seed
    task_orders: 1                  # n orders: the config's, then seeded permutations; or lists of tasks
    order_seed: 0                   # seeds the permutations
    output_dir: runs/sweeps/NAME    # default runs/sweeps/<name>, relative to the current folder
    resources: {cpus: 2, gpus: 0}   # per run; default from the config (threads, evaluation workers, device)

Every run lives in `<output_dir>/<variant>_seed<seed>[_order<k>]`. A sweep that is killed and started again
skips the runs that finished, resumes the ones that were killed (as `libero-ll train --resume`) and starts
the others; a run directory whose config no longer matches the sweep file is an error, never overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from libero_ll.errors import LiberoError
from libero_ll.evaluation.runs import ENVIRONMENT_FILE
from libero_ll.experiments.config import first_difference
from libero_ll.experiments.run_files import RUN_LOCK_FILE, file_lock
from libero_ll.paths import file_in_the_way, holds_a_path

SWEEP_KEYS = ("name", "config", "overrides", "grid", "runs", "seeds", "task_orders", "order_seed", "output_dir",
              "resources")
# Set by the sweep itself: seeds, task orders and run directories have keys of their own in the sweep file.
RESERVED = {"seed": "seeds", "tasks": "task_orders", "output_dir": "output_dir"}
# Part of the method in a report already (runs.Run.method): not repeated in the variant's label.
METHOD_KEYS = ("suite", "learner.name", "policy.name")
LOCK_FILE = ".sweep.lock"
# Environment that the runs need as the sweep's process has it (headless GL, offline language models).
PASSED_ENV = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "OMP_WAIT_POLICY")


@dataclass
class SweepRun:
    """One run of a sweep.

    Attributes:
        key: its directory's name under the sweep's output folder.
        variant: the overrides that set it apart from the sweep's other variants, as "key=value" joined by
            ", " (learner, policy and suite left out: a report names those itself); "" when none.
        overrides: every override of its variant, as (key, value).
        seed: its seed.
        order: its task order's number (1 = the config's order), or None when the sweep has one order.
        cfg: its whole config (an OmegaConf DictConfig).
        run_dir: its run directory.
    """

    key: str
    variant: str
    overrides: list
    seed: int
    order: int | None
    cfg: Any
    run_dir: Path

    def state(self) -> str:
        """"finished", "partial" (started and killed: it will be resumed) or "new"."""
        from libero_ll.experiments.checkpoint import FINAL_POLICY

        if not (self.run_dir / "config.yaml").exists():
            return "new"
        return "finished" if (self.run_dir / FINAL_POLICY).exists() else "partial"

    def record(self, sweep_name: str) -> dict:
        """What sweep.json holds: which sweep, variant and order made the run."""
        return {"sweep": sweep_name, "variant": self.variant, "order": self.order, "seed": self.seed,
                "overrides": [f"{k}={_label(v)}" for k, v in self.overrides]}


@dataclass
class Sweep:
    """A sweep file, expanded.

    Attributes:
        name: the sweep's name.
        path: the sweep file.
        config: the base config file.
        output_dir: the folder of its run directories (and of its report, `<output_dir>/report`).
        runs: every run, in the order they are started.
        cpus: CPUs per run (None: from each run's config).
        gpus: GPUs per run (None: one when the cluster has GPUs and the run's device is not "cpu").
    """

    name: str
    path: Path
    config: Path
    output_dir: Path
    runs: list[SweepRun] = field(default_factory=list)
    cpus: float | None = None
    gpus: float | None = None


def load_sweep(path: str | os.PathLike, output_dir: str | os.PathLike | None = None,
               overrides: list[str] | None = None, check_init: bool = True) -> Sweep:
    """Read a sweep file and expand it into runs, checking every run's config before anything runs.

    Args:
        path: the sweep file (YAML, see the module's docstring).
        output_dir: overrides the file's `output_dir`.
        overrides: "key=value" overrides of every run, after the file's own (e.g. data.dir=/data/quickstart).
        check_init: require that every run's `init_from` names a checkpoint now; False lists a sweep whose
            pretraining run is not there yet (see missing_init_from; run_sweep checks the runs it starts).

    Raises:
        LiberoError: naming the file and the key (or run) that is wrong: bad YAML, an unknown key, a value of
            the wrong kind, an override the config does not have, two runs in one directory, a config file
            that does not exist, an `init_from` that names nothing (with `check_init`).
    """
    import yaml

    path = Path(path)
    if path.is_dir():
        raise LiberoError(f"sweep file {path}: is a folder, not a sweep file")
    if not path.is_file():
        raise LiberoError(f"sweep file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise LiberoError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise LiberoError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(raw, dict):
        raise LiberoError(f"{path}: a sweep file holds a mapping (name, config, grid, seeds, ...)")
    unknown = [k for k in raw if k not in SWEEP_KEYS]
    if unknown:
        raise LiberoError(f"{path}: unknown key {unknown[0]!r}; a sweep file has {', '.join(SWEEP_KEYS)}")

    def fail(key: str, msg: str):
        raise LiberoError(f"{path}: {key}: {msg}")

    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not name:
        fail("name", "expected a non-empty string")
    if name == "." or holds_a_path(name):
        fail("name", f"{name!r} is not a plain folder name (the runs go to runs/sweeps/<name> unless output_dir "
                     "or -o says otherwise): give a name without path separators or '..', or set output_dir to put the "
                     "runs elsewhere")
    if not isinstance(raw.get("config"), str):
        fail("config", "expected the path of a config file (relative to the sweep file), e.g. ../cpu.yaml")
    config = (path.parent / raw["config"]).resolve()
    if config.is_dir():
        fail("config", f"{config} is a folder, not a config file")
    if not config.is_file():
        fail("config", f"{config} does not exist")
    base = _overrides(raw.get("overrides") or {}, "overrides", fail, allow_tasks=True)
    if overrides:
        try:
            base += _overrides(list(overrides), "overrides", fail, allow_tasks=True)
        except LiberoError as e:
            raise LiberoError(f"command line {str(e).replace(f'{path}: ', '', 1)}") from None
    if isinstance(raw.get("task_orders"), list) and any(k == "tasks" for k, _ in base):
        fail("task_orders", "lists the tasks of each order: the overrides cannot set tasks too")
    variants = _variants(raw, fail)
    seeds, orders, order_seed, resources = _settings(raw, fail)
    out = Path(output_dir if output_dir is not None else raw.get("output_dir") or f"runs/sweeps/{name}")
    blocking = file_in_the_way(out)
    if blocking is not None:
        where = "-o" if output_dir is not None else f"{path}: output_dir"
        raise LiberoError(f"{where} {out}: {blocking} is a file, not a folder for the sweep's runs")
    run = _run_dir_at_or_above(out)
    if run is not None:
        where = "-o" if output_dir is not None else f"{path}: output_dir"
        what = "is a run directory" if run == out else f"is inside the run directory {run}"
        raise LiberoError(f"{where} {out}: {what}, not a folder for the sweep's runs, which would be put inside "
                          "that run; give a folder of its own (one a sweep wrote its runs in continues that sweep)")

    sweep = Sweep(name, path, config, out, cpus=resources.get("cpus"), gpus=resources.get("gpus"))
    varying = _varying_keys(variants)
    for variant in variants:
        vkey = [f"{k}={_label(v)}" for k, v in variant if k in varying]
        label = ", ".join(f"{k}={_label(v)}" for k, v in variant if k in varying and k not in METHOD_KEYS)
        first = _run_config(sweep, base + variant, None, None, out, f"run {'_'.join(vkey) or name}", check_init)
        run_orders = _orders(first, orders, order_seed, fail)
        for seed in seeds if seeds is not None else [int(first.seed)]:
            for k, order in enumerate(run_orders):
                parts = vkey + [f"seed{seed}"] + ([f"order{k + 1}"] if len(run_orders) > 1 else [])
                key = _dir_name("_".join(parts))
                cfg = _run_config(sweep, base + variant, seed, order if isinstance(orders, list) or k else None,
                                  out, f"run {key}", check_init)
                sweep.runs.append(SweepRun(key, label, variant, seed, k + 1 if len(run_orders) > 1 else None, cfg,
                                           out / key))
    seen: dict[str, SweepRun] = {}
    for r in sweep.runs:
        other = seen.get(r.key)
        if other is not None:
            if (other.overrides, other.seed, other.order) == (r.overrides, r.seed, r.order):
                why = "the same overrides, seed and order twice"
            else:
                why = (f"{_overrides_text(other.overrides)} and {_overrides_text(r.overrides)} differ only in characters "
                       "a folder name cannot hold; give the values names that differ in letters or digits")
            raise LiberoError(f"{path}: two runs would share the run directory {r.run_dir} ({why})")
        seen[r.key] = r
    return sweep


def _run_dir_at_or_above(folder: Path) -> Path | None:
    """`folder`, or the nearest folder above it, when a run wrote it (config.yaml and environment.json, which a
    run writes as it starts: a folder that holds a config of one's own is not one); None when neither."""
    for at in (folder.absolute(), *folder.absolute().parents):
        if (at / "config.yaml").is_file() and (at / ENVIRONMENT_FILE).is_file():
            return folder if at == folder.absolute() else at
    return None


def _overrides_text(overrides) -> str:
    return ", ".join(f"{k}={_label(v)}" for k, v in overrides) or "(no overrides)"


def _settings(raw: dict, fail) -> tuple:
    """The sweep file's seeds, task_orders, order_seed and resources, checked."""
    seeds = raw.get("seeds")
    if seeds is not None and (not isinstance(seeds, list) or not seeds
                              or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
        fail("seeds", f"expected a list of integers, got {seeds!r}")
    if seeds is not None and len(set(seeds)) != len(seeds):
        fail("seeds", f"a seed is listed twice: {seeds}")
    orders = raw.get("task_orders", 1)
    if isinstance(orders, bool) or not (
        (isinstance(orders, int) and orders >= 1)
        or (isinstance(orders, list) and orders and all(isinstance(o, list) and o for o in orders))
    ):
        fail("task_orders", f"expected a number of orders (1 or more) or a list of task lists, got {orders!r}")
    order_seed = raw.get("order_seed", 0)
    if not isinstance(order_seed, int) or isinstance(order_seed, bool):
        fail("order_seed", f"expected an integer, got {order_seed!r}")
    resources = raw.get("resources") or {}
    if not isinstance(resources, dict) or any(k not in ("cpus", "gpus") for k in resources):
        fail("resources", f"expected a mapping with cpus and/or gpus, got {resources!r}")
    for k in ("cpus", "gpus"):
        v = resources.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf
                              or (k == "cpus" and v == 0)):
            fail(f"resources.{k}", f"expected a {'positive' if k == 'cpus' else 'non-negative'} number, got {v!r}")
    return seeds, orders, order_seed, resources


def _overrides(value, where: str, fail, allow_tasks: bool = False) -> list[tuple[str, Any]]:
    """Overrides as (dotted key, value) from a mapping or a list of "key=value" strings (`tasks` only where
    `allow_tasks`: the tasks whose orders the sweep permutes are the same for every run)."""
    import yaml

    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = []
        for v in value:
            key, eq, text = v.partition("=")
            if not eq or not key.strip():
                fail(where, f"{v!r}: expected key=value")
            items.append((key.strip(), yaml.safe_load(text) if text.strip() else None))
    else:
        fail(where, f"expected a mapping of config keys to values, or a list of key=value, got {value!r}")
    for key, _ in items:
        if not isinstance(key, str):
            fail(where, f"config keys are dotted names like train.epochs, got {key!r}")
        if key in RESERVED and not (allow_tasks and key == "tasks"):
            fail(where, f"{key} is set by the sweep: use the sweep file's {RESERVED[key]} key")
    return items


def _variants(raw: dict, fail) -> list[list[tuple[str, Any]]]:
    """Every combination of the grid, each combined with every entry of `runs` (one empty variant if none)."""
    grid = raw.get("grid") or {}
    if not isinstance(grid, dict):
        fail("grid", f"expected a mapping of config keys to lists of values, got {grid!r}")
    axes = []
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            fail(f"grid.{key}", f"expected a non-empty list of values, got {values!r}")
        _overrides({key: values[0]}, "grid", fail)
        axes.append([(key, v) for v in values])
    points = [list(p) for p in itertools.product(*axes)]
    listed = raw.get("runs")
    if listed is None:
        return points
    if not isinstance(listed, list) or not listed:
        fail("runs", f"expected a non-empty list of override mappings, got {listed!r}")
    entries = [_overrides(e, f"runs[{i}]", fail) for i, e in enumerate(listed)]
    variants = []
    for p in points:
        for e in entries:
            clash = {k for k, _ in p} & {k for k, _ in e}
            if clash:
                fail("runs", f"{sorted(clash)[0]} is set by both grid and runs")
            variants.append(p + e)
    return variants


def _varying_keys(variants: list[list[tuple[str, Any]]]) -> set[str]:
    """Keys whose value is not the same in every variant (a grid axis of one value names no run)."""
    keys = {k for v in variants for k, _ in v}
    out = set()
    for key in keys:
        values = {json.dumps(dict(v).get(key, "\0absent"), sort_keys=True, default=str) for v in variants}
        if len(values) > 1:
            out.add(key)
    return out


def _label(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _dir_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.=,+-]+", "-", text).strip("-") or "run"
    if len(name) > 120:
        name = name[:100] + "-" + hashlib.sha1(name.encode()).hexdigest()[:10]
    return name


def _run_config(sweep: Sweep, overrides: list, seed: int | None, tasks: list[str] | None, out: Path, what: str,
                check_init: bool = True):
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import check_components

    strings = [f"{k}={json.dumps(v)}" for k, v in overrides] + [f"output_dir={json.dumps(str(out))}"]
    if seed is not None:
        strings.append(f"seed={seed}")
    try:
        cfg = load_config(sweep.config, strings)
        if tasks is not None:
            cfg.tasks = list(tasks)
        check_components(cfg, check_init=check_init)
    except LiberoError as e:
        raise LiberoError(f"{sweep.path}: {what}: {e}") from None
    return cfg


def _orders(cfg, orders, order_seed: int, fail) -> list[list[str]]:
    """The task orders of a variant: `orders` lists, or n orders of the config's tasks (its own first)."""
    from libero_ll.experiments.lifelong import repeated_task_problem, suite_tasks
    from libero_ll.tasks.registry import permuted_orders

    if isinstance(orders, list):
        for i, o in enumerate(orders):
            problem = repeated_task_problem([str(t) for t in o], "the order")
            if problem:
                fail(f"task_orders[{i}]", problem)
            try:
                suite_tasks(cfg.suite, [str(t) for t in o])
            except LiberoError as e:
                fail(f"task_orders[{i}]", str(e))
        return [[str(t) for t in o] for o in orders]
    names = [t.stem for t in suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)]
    try:
        return permuted_orders(names, orders, order_seed)
    except LiberoError as e:
        fail("task_orders", str(e))


def missing_init_from(run: SweepRun) -> str | None:
    """Why the run's `init_from` names no checkpoint now (no file or run directory matches, or that run has not
    finished), or None: it names one, or the run has no init_from."""
    from libero_ll.experiments.checkpoint import resolve_init_from

    if not run.cfg.init_from:
        return None
    try:
        resolve_init_from(str(run.cfg.init_from))
    except LiberoError as e:
        return str(e)
    return None


def check_existing(run: SweepRun) -> None:
    """Fail when a started run's config.yaml is not the config the sweep asks for now. The settings a resumed
    run may change (RESUME_MAY_CHANGE: folders, threads, workers; a sweep continued on another machine) may
    differ: `execute_run` gives an unfinished run the sweep's values of them.

    Raises:
        LiberoError: naming the run directory and the first key that differs.
    """
    from omegaconf import OmegaConf

    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import RESUME_MAY_CHANGE

    if not (run.run_dir / "config.yaml").exists():
        return
    stored = OmegaConf.to_container(load_config(run.run_dir / "config.yaml", run=True), resolve=True)
    wanted = OmegaConf.to_container(run.cfg, resolve=True)
    found = first_difference(stored, wanted, ignore=RESUME_MAY_CHANGE)
    if found is not None:
        key, have, want = found
        raise LiberoError(
            f"{run.run_dir} holds a run whose config differs from what the sweep asks for at {key} ({have!r} "
            f"there, {want!r} now); restore the sweep file (and its overrides), or move that run directory away"
        )


def _take_free_settings(run_dir: Path, cfg_container: dict) -> None:
    """Write into an unfinished run's config.yaml the sweep's values of the settings a resume may change
    (RESUME_MAY_CHANGE), so that the resumed run uses them (a new data.dir on another machine)."""
    from omegaconf import OmegaConf

    from libero_ll.experiments.lifelong import RESUME_MAY_CHANGE
    from libero_ll.paths import atomic_write_bytes

    path = run_dir / "config.yaml"
    stored = OmegaConf.load(path)
    wanted = OmegaConf.create(cfg_container)
    changed = False
    for key in RESUME_MAY_CHANGE:
        value = OmegaConf.select(wanted, key, default=None)
        if OmegaConf.select(stored, key, default=None) != value:
            OmegaConf.update(stored, key, value, force_add=True)
            changed = True
    if changed:
        atomic_write_bytes(path, OmegaConf.to_yaml(stored).encode("utf-8"))


def execute_run(cfg_container: dict, run_dir: str, record: dict, cwd: str,
                driver_pid: int | None = None, command: list[str] | None = None) -> tuple[str, float]:
    """Run (or resume, or skip when finished) one run of a sweep in this process; what a Ray task calls.

    The run's output goes to RUN_DIR/log.txt. The run directory is locked while it runs, so that a run still
    shutting down from a killed sweep is never written by two processes: this waits up to two minutes for it.
    With `driver_pid` (a local Ray), the process ends within half a second of that process's end: a killed
    sweep stops its runs, which Ray alone lets go on for a while. `command` (the sweep's command line) is
    what the run's log.txt and environment.json record as its command, not the Ray worker's own; an error
    that ends the run is written to its log.txt too.

    Returns:
        What it did ("finished" when the run had finished before, "resumed" or "ran") and its wall time, s.
    """
    from omegaconf import OmegaConf

    from libero_ll.evaluation.runs import LOG_FILE, SWEEP_FILE
    from libero_ll.experiments.checkpoint import FINAL_POLICY
    from libero_ll.experiments.config import ExperimentConfig, load_config
    from libero_ll.experiments.lifelong import run_lifelong, write_json

    t0 = time.time()
    if driver_pid is not None:
        _exit_with(driver_pid)
    os.chdir(cwd)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(run_dir / RUN_LOCK_FILE, 120.0, f"{run_dir} is in use by another process"):
        if (run_dir / FINAL_POLICY).exists():
            return "finished", time.time() - t0
        with open(run_dir / LOG_FILE, "a", buffering=1) as logf:
            # The run's progress bars, warnings and errors go to its log, not to Ray's files; the lines the run
            # logs, run_lifelong writes there itself (with their times), so they are not printed as well.
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(logf.fileno(), 1)
            os.dup2(logf.fileno(), 2)
            write_json(run_dir / SWEEP_FILE, record)
            if command:
                sys.argv = list(command)  # a Ray worker runs one task (max_calls=1): its argv is the sweep's now
            quiet = lambda line: None  # noqa: E731
            try:
                if (run_dir / "config.yaml").exists():
                    _take_free_settings(run_dir, cfg_container)
                    run_lifelong(load_config(run_dir / "config.yaml", run=True), log=quiet, resume=run_dir)
                    return "resumed", time.time() - t0
                cfg = OmegaConf.merge(OmegaConf.structured(ExperimentConfig), cfg_container)
                run_lifelong(cfg, log=quiet, run_dir=run_dir)
                return "ran", time.time() - t0
            except Exception as e:
                # What the sweep's line points to (the run's log) says why, also when the run failed before
                # it logged anything.
                print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} error: {_error_message(e)}", flush=True)
                raise


def _exit_with(pid: int) -> None:
    """End this process (at once, as a kill would) soon after process `pid` has ended."""
    import threading

    def watch():
        while True:
            time.sleep(0.2)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass

    threading.Thread(target=watch, daemon=True, name="sweep-driver-watch").start()


def default_resources(cfg, cluster_gpus: float) -> tuple[float, float]:
    """CPUs and GPUs a run asks for when the sweep file does not say: its torch threads or its evaluation
    workers, whichever is more; one GPU when there are GPUs and its device may use one."""
    from libero_ll.experiments.lifelong import resolve_workers

    cpus = max(1, int(cfg.num_threads), resolve_workers(int(cfg.eval.workers), 1 << 30))
    gpus = 1.0 if cluster_gpus >= 1 and str(cfg.device) != "cpu" else 0.0
    return float(cpus), gpus


@dataclass
class SweepResult:
    """What a sweep did.

    Attributes:
        finished: run directories of every finished run of the sweep (before or now), in the sweep's order.
        failed: (run directory, error message) of the runs that failed this time.
        report: the report folder, or None when no run has finished.
        seconds: the wall time of this call.
    """

    finished: list[Path]
    failed: list[tuple[Path, str]]
    report: Path | None
    seconds: float


def run_sweep(sweep: Sweep, address: str | None = None, cpus: int | None = None,
              log: Callable[[str], None] = print, report: bool = True, command: str | None = None) -> SweepResult:
    """Run a sweep's unfinished runs on Ray, then write the report over all its finished runs.

    Demos that the runs need and their data folders lack are collected first, once, in this process. Each
    run is a Ray task in a fresh worker process asking for its CPUs and GPUs, so a local Ray packs runs onto
    the machine's cores; with `address` the runs go to that cluster, whose nodes must see the same files
    (datasets, run directories) at the same paths and have libero_ll installed.

    Args:
        sweep: from `load_sweep`.
        address: a Ray cluster's address ("auto" or host:port); None starts a local Ray for this call and
            stops it at the end.
        cpus: CPUs of the local Ray (default: every core of this machine).
        log: receives one line per event (a run finished or failed, the report written).
        report: write `<output_dir>/report` at the end.
        command: the command line shown in the report.

    Raises:
        LiberoError: another sweep is running in the same output folder, a started run's config no longer
            matches, a run to start has an `init_from` that names nothing, a run needs more CPUs or GPUs than
            the cluster has, or the cluster at `address` cannot be reached (nothing answers, or it asks for a
            token the sweep lacks).
    """
    t0 = time.time()
    try:
        import ray  # noqa: F401 - checked before anything is written
    except ImportError:
        raise LiberoError("sweeps run on Ray: pip install ray") from None
    if report:
        check_report_folder(sweep.output_dir / "report")
    created = not sweep.output_dir.exists()
    sweep.output_dir.mkdir(parents=True, exist_ok=True)
    busy = f"another `libero-ll sweep` is running in {sweep.output_dir}; wait for it or stop it first"
    try:
        with file_lock(sweep.output_dir / LOCK_FILE, 0.0, busy):
            return _run_sweep_locked(sweep, address, cpus, log, report, command, t0)
    finally:
        # A sweep that stopped before any run began (no cluster at --address, ...) leaves no folder behind.
        if created and {p.name for p in sweep.output_dir.iterdir()} <= {LOCK_FILE}:
            shutil.rmtree(sweep.output_dir, ignore_errors=True)


def check_report_folder(out: Path) -> None:
    """Fail, before any run, when the sweep's report could not be written at the end: `out` holds
    something that is not a report."""
    from libero_ll.evaluation.report import MARKER, check_replaceable

    if out.exists() and not (out / MARKER).exists() and (not out.is_dir() or any(out.iterdir())):
        raise LiberoError(
            f"{out} exists and is not a report: the sweep writes its report there at the end; move it away, "
            "or run the sweep with --no-report"
        )
    check_replaceable(out, [])


def _run_sweep_locked(sweep: Sweep, address, cpus, log, report: bool, command, t0: float) -> SweepResult:
    """run_sweep's work, with the output folder locked."""
    for r in sweep.runs:
        check_existing(r)
    states = [r.state() for r in sweep.runs]
    for r, state in zip(sweep.runs, states):
        # A sweep loaded without check_init: a run that starts now needs what its init_from names.
        why = missing_init_from(r) if state == "new" else None
        if why is not None:
            raise LiberoError(f"{sweep.path}: run {r.key}: {why}")
    todo = [r for r, s in zip(sweep.runs, states) if s != "finished"]
    log(f"sweep {sweep.name}: {len(sweep.runs)} runs in {sweep.output_dir}: {states.count('finished')} "
        f"finished before, {states.count('partial')} to resume, {states.count('new')} to start")
    failed: list[tuple[Path, str]] = []
    if todo:
        _collect_demos(todo, log)
        failed = _run_on_ray(sweep, todo, address, cpus, log, len(sweep.runs) - len(todo))
    finished = [r.run_dir for r in sweep.runs if r.state() == "finished"]
    out = None
    if report and finished:
        from libero_ll.evaluation.report import generate_report

        out = generate_report(finished, sweep.output_dir / "report", command=command)
        log(f"report of {len(finished)} runs: {out / 'report.html'}")
    return SweepResult(finished, failed, out, time.time() - t0)


def _collect_demos(runs: list[SweepRun], log) -> None:
    """Collect the missing demos of every data folder the runs read, once each, before the runs start, and
    check that every run's demo files have its image size (else every run would fail with it)."""
    from libero_ll.experiments.lifelong import check_demo_images, collect_missing_demos, env_config, suite_tasks

    done = set()
    for r in runs:
        cfg = r.cfg
        tasks = suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)
        key = (str(Path(cfg.data.dir).resolve()), tuple(t.stem for t in tasks), int(cfg.env.image_size))
        if key in done:
            continue
        done.add(key)
        collect_missing_demos(cfg, tasks, env_config(cfg), log)
        try:
            check_demo_images(cfg, tasks)
        except LiberoError as e:
            raise LiberoError(f"run {r.key}: {e}") from None


def _run_on_ray(sweep: Sweep, todo: list[SweepRun], address, cpus, log, done_before: int) -> list:
    import logging

    from omegaconf import OmegaConf
    from tqdm import tqdm

    from libero_ll.evaluation.metrics import metric_text
    from libero_ll.evaluation.runs import LOG_FILE, load_run, measure_run

    try:
        import ray
    except ImportError:
        raise LiberoError("sweeps run on Ray: pip install ray") from None
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    # Ray's own notices (its token authentication, ...) would drown the sweep's lines: errors only.
    init = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                runtime_env={"env_vars": env})
    with _keep_sigterm_handler():
        if address:
            _connect(ray, address, init)
        else:
            # "local": a Ray of the sweep's own, even where another one runs (ray start) or RAY_ADDRESS is set.
            # The runs pass the sweep little more than configs: a small object store, not 30% of the memory.
            ray.init(address="local", num_cpus=cpus or len(os.sched_getaffinity(0)),
                     object_store_memory=100 * 2**20, **init)
    try:
        total = ray.cluster_resources()
        have_cpus, have_gpus = float(total.get("CPU", 0)), float(total.get("GPU", 0))
        log(f"on {f'the Ray cluster at {address}' if address else 'a local Ray'}: {have_cpus:g} CPUs, "
            f"{have_gpus:g} GPUs")
        remote = ray.remote(max_calls=1, max_retries=0)(execute_run)
        wants = []
        for r in todo:  # every request checked before any run starts
            want_cpus, want_gpus = default_resources(r.cfg, have_gpus)
            want_cpus = sweep.cpus if sweep.cpus is not None else min(want_cpus, have_cpus)
            want_gpus = sweep.gpus if sweep.gpus is not None else want_gpus
            if want_cpus > have_cpus or want_gpus > have_gpus or (str(r.cfg.device) == "cuda" and not have_gpus):
                raise LiberoError(
                    f"run {r.key} asks for {want_cpus:g} CPUs and {want_gpus:g} GPUs (device {r.cfg.device}); the "
                    f"Ray cluster has {have_cpus:g} and {have_gpus:g}: lower resources in {sweep.path}"
                )
            wants.append((want_cpus, want_gpus))
        pending = {}
        for r, (want_cpus, want_gpus) in zip(todo, wants):
            ref = remote.options(num_cpus=want_cpus, num_gpus=want_gpus).remote(
                OmegaConf.to_container(r.cfg, resolve=True), str(r.run_dir.resolve()), r.record(sweep.name),
                os.getcwd(), None if address else os.getpid(), list(sys.argv),
            )
            pending[ref] = r
        failed = []
        n = done_before
        with tqdm(total=len(sweep.runs), initial=done_before, desc=f"sweep {sweep.name}", unit="run",
                  dynamic_ncols=True) as bar:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                ref = ready[0]
                r = pending.pop(ref)
                n += 1
                try:
                    how, seconds = ray.get(ref)
                    m = measure_run(load_run(r.run_dir))
                    line = (f"[{n}/{len(sweep.runs)}] {r.key}: FWT {metric_text(m['fwt'])} "
                            f"NBT {metric_text(m['nbt'])} AUC {metric_text(m['auc'])} ({how} in {seconds / 60:.1f} min)")
                except Exception as e:  # noqa: BLE001 - a failed run must not stop the others
                    msg = _error_message(e)
                    failed.append((r.run_dir, msg))
                    line = f"[{n}/{len(sweep.runs)}] {r.key}: FAILED: {msg} (log: {r.run_dir / LOG_FILE})"
                with tqdm.external_write_mode():  # the line above the bar, not through it
                    log(line)
                bar.update(1)
        return failed
    finally:
        ray.shutdown()


@contextlib.contextmanager
def _keep_sigterm_handler():
    """Keep this process's own SIGTERM handler (the command line's, which stops the sweep as Ctrl-C does) across
    `ray.init`, which puts Ray's in its place: a sys.exit while it connects, then its core worker's, which prints
    a stack dump. Where this process has no handler of its own, or in another thread than the main one, Ray's
    stay."""
    previous = signal.getsignal(signal.SIGTERM)
    ours = callable(previous) and threading.current_thread() is threading.main_thread()
    try:
        yield
    except SystemExit as e:
        if not (ours and e.code == signal.SIGTERM):
            raise
        # SIGTERM while ray.init ran, taken by Ray's handler: stop as the handler of this process says.
        try:
            previous(signal.SIGTERM, None)
        except BaseException as stop:
            raise stop from None
        raise
    finally:
        if ours:
            signal.signal(signal.SIGTERM, previous)


def _connect(ray, address: str, init: dict) -> None:
    """Connect to the Ray cluster at `address`, or say clearly why not (Ray itself retries a dead address for
    minutes and answers a missing token with a traceback)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if address != "auto":
        if not host or not port.isdigit():
            raise LiberoError(f"--address {address!r}: expected host:port (e.g. 10.0.0.5:6379) or auto")
        try:
            socket.create_connection((host, int(port)), timeout=5.0).close()
        except OSError as e:
            raise LiberoError(
                f"--address {address}: no Ray cluster answers there ({e.strerror or e}); start one with "
                f"`ray start --head` and give the address it prints"
            ) from None
        if not address.startswith("ray://"):
            _check_token(address)
    try:
        ray.init(address=address, **init)
    except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ... wrapped in each other
        raise LiberoError(_connect_error(address, e)) from None


def _check_token(address: str) -> None:
    """Ask the cluster at `address` once whether it takes this process's token, as `ray status` does: `ray.init`
    retries a refused token for 20 s, a warning a second, before it fails. Anything else the question meets
    is left for `ray.init` to meet and report."""
    try:
        from ray._raylet import GcsClient
    except ImportError:
        return
    try:
        GcsClient(address=address)
    except Exception as e:  # noqa: BLE001 - only a refused token is this check's to report
        if type(e).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(e):
            raise LiberoError(_connect_error(address, e)) from None


def _connect_error(address: str, e: BaseException) -> str:
    """The message for a failed `ray.init(address=...)`: the cluster's token when that is what failed."""
    chain = []
    while e is not None and len(chain) < 10:
        chain.append(e)
        e = e.__cause__ or e.__context__
    text = " ".join(str(c) for c in chain)
    if any(type(c).__name__ == "AuthenticationError" for c in chain) or "InvalidAuthToken" in text:
        return (f"the Ray cluster at {address} asks for its authentication token: run the sweep with "
                f"RAY_AUTH_MODE=token (Ray reads the token from ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or "
                f"RAY_AUTH_TOKEN)")
    first = str(chain[0]).strip().splitlines()
    return f"could not connect to the Ray cluster at {address}: {first[0] if first else type(chain[0]).__name__}"


def _error_message(e: Exception) -> str:
    """The user-facing message of a run's error (the LiberoError inside Ray's wrapper when there is one)."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, LiberoError):
        return str(cause)
    text = str(cause or e).strip().splitlines()
    return text[-1] if text else type(e).__name__
