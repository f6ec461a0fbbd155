"""The lifelong loop of the LIBERO paper's protocol: learn tasks in order, evaluate, keep the best, record the
tensor; every epoch's state is saved so that a killed run can be resumed."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from libero_ll import MAX_SEED
from libero_ll.data.hdf5 import LOWDIM_SIZES, task_demo_file
from libero_ll.envs.render import ROBOT_MESHES
from libero_ll.errors import LiberoError
from libero_ll.paths import file_in_the_way, holds_a_path
from libero_ll.processes import not_in_a_worker_starting
from libero_ll.signals import interrupts_held
from libero_ll.experiments.checkpoint import (
    FINAL_POLICY,
    atomic_torch_save,
    derive_seed,
    isolated_rng,
    load_checkpoint,
    load_policy_weights,
    resolve_init_from,
    rng_states,
    set_rng_states,
)
from libero_ll.evaluation.runs import PROGRESS_FILE, STATE_FILE, load_sessions
from libero_ll.experiments.config import ABSENT, first_difference, first_line
from libero_ll.experiments.environment import record_session
from libero_ll.experiments.plugins import changed_plugins, import_plugins, plugin_files, resolved
from libero_ll.experiments.run_files import RunLog, hold_run_dir, keep_task_files, run_task_files
from libero_ll.experiments.resources import forward_macs_per_window, task_entry, write_resources

REPO_ROOT = Path(__file__).resolve().parents[2]


STATE_VERSION = 1
# The "epoch" under which evaluations of earlier tasks after a stage draw their random numbers.
PAST_TASKS_EPOCH = 1_000_000
# The last part of the seed of an evaluation point whose tasks are evaluated together, in place of a task
# number (a trailing 0 would give the stream of task 0).
ALL_TASKS = 999_999


def suite_dir(suite: str) -> Path:
    """The folder of a suite's task files: a path, or a name under the shipped bddl_tasks/.

    A folder of that name where the command runs comes first when it holds task files; one without (the
    checkout's examples/ beside bddl_tasks/examples/) does not hide the shipped suite.
    """
    p = Path(suite)
    shipped = REPO_ROOT / "bddl_tasks" / suite
    if p.is_dir() and (any(p.glob("*.bddl")) or not shipped.is_dir()):
        return p
    if shipped.is_dir():
        return shipped
    known = sorted(d.name for d in (REPO_ROOT / "bddl_tasks").iterdir() if d.is_dir())
    raise LiberoError(f"unknown suite {suite!r}: not a folder, and not one of {', '.join(known)}")


def suite_tasks(suite: str, names: list[str] | None = None) -> list[Path]:
    """Task files of a suite in learning order: the given names, else a shipped suite's registry order,
    else the folder's order file (`libero_ll.tasks.registry.folder_order`: a generated suite's spec order),
    else all files sorted by name."""
    if names is not None:
        problem = repeated_task_problem(names)
        if problem:
            raise LiberoError(f"suite {suite}: {problem}")
    folder = suite_dir(suite)
    files = {f.stem: f for f in sorted(folder.glob("*.bddl"))}
    if not files:
        raise LiberoError(f"{folder}: no .bddl task files")
    if names is None:
        from libero_ll.tasks.registry import get_suite, suite_names

        if suite in suite_names() and folder == REPO_ROOT / "bddl_tasks" / suite:
            # A shipped benchmark suite is learned in its registry order (the paper's).
            names = get_suite(suite).names()
        else:
            from libero_ll.tasks.registry import folder_order

            names = folder_order(folder, list(files))
    missing = [n for n in names if n not in files]
    if missing:
        raise LiberoError(f"suite {suite}: unknown tasks {missing}; known: {', '.join(files)}")
    return [files[n] for n in names]


def repeated_task_problem(names, what: str = "tasks") -> str | None:
    """What is wrong with a list of task names that names one task twice, or None when each is named once.

    A run learns each task once: its demo files, initial states, kept task files, demo digests and scores are
    all found by the task's name, so a second stage of the same task has nothing of its own."""
    seen = set()
    for name in names:
        if name in seen:
            return (f"{what} lists {name} twice; name each task once (a task's demo file, initial states and "
                    f"scores are found by its name)")
        seen.add(name)
    return None


def seed_everything(seed: int) -> None:
    """One seed for numpy, torch and Python's hash-free randomness."""
    import random

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@dataclass
class _Position:
    """Where a run is: the stage, its phase ("start", "train" or "finetune") and the last completed epoch."""

    stage: int = 0
    phase: str = "start"
    epoch: int = 0


def run_lifelong(cfg, log: Callable[[str], None] = print, resume: str | Path | None = None,
                 envs: list | None = None, timings: dict | None = None, run_dir: str | Path | None = None,
                 max_stages: int | None = None, lock: bool = False) -> Path:
    """Run one lifelong experiment end to end (or continue one) and return its run directory.

    Steps: embed instructions, build the policy (optionally from `init_from`), collect missing demos with the
    expert, then for each stage of the learner (one task per stage, or all tasks for MTL): evaluate at
    epoch 0, train `train.epochs` epochs evaluating every `eval.every`, restore the best checkpoint (earliest
    on ties; the log and the checkpoint's "epoch" say which; the weights training ended with, when they are not
    those, are saved too, as checkpoints/taskNN_last.pt), let the learner finish the stage (`end_task`,
    then its post-task epochs), evaluate earlier tasks. After every epoch the whole training state is written
    atomically to RUN_DIR/resume.pt, so a run killed at any moment continues from its last completed epoch; on
    CPU the result equals an uninterrupted run's. The success tensor is saved after every evaluation,
    resources.json after every stage, and TensorBoard scalars (loss, lr, success per task) go to
    RUN_DIR/tensorboard. Every logged line also goes to RUN_DIR/log.txt; the run keeps copies of its task
    files in RUN_DIR/tasks/ (a resume uses them) and what each session ran on in RUN_DIR/environment.json. The tasks of one evaluation point are evaluated together when that can be (see
    `evaluate_tasks`).

    Args:
        cfg: an ExperimentConfig-shaped OmegaConf config (see `load_config`).
        log: receives one line per event.
        resume: a run directory to continue (its config must be `cfg`); None starts a new run.
        envs: already built LiberoEnvs of the run's tasks, in learning order and with the run's env settings,
            to share between several runs in one process (building a scene takes seconds); they are left
            open. None builds each when first needed, keeps those of the few tasks used last and closes the
            rest (`libero_ll.envs.pool.EnvPool`), and closes them all at the end.
        timings: when given, receives the wall-clock seconds this call spent: "demos" (collecting missing
            demos, and reading and checking their actions and low-dim observations; each stage reads its
            images when it starts, counted in "train"), "eval" (evaluations, the start of evaluation workers included), "train"
            (the rest of the lifelong loop: epochs, checkpoints, end-of-stage work) and "total" (the whole
            call, setup included).
        run_dir: start the new run in this directory (created if missing; it must not hold a run yet) instead
            of a fresh `<output_dir>/<name>_<suite>_..._<time>` one; sweeps name their runs this way.
        max_stages: end this call once this many stages have ended in it (a stage resumed in the middle
            counts as one), with the state between stages saved, so that a later `resume` goes on from the
            next stage: a run spread over sessions of limited time. None trains to the end.
        lock: hold the run directory's lock (RUN_DIR/.run.lock, the one a sweep's runs hold) for the whole
            call, from before anything is read of a run to continue (a new run: from before its config.yaml
            is written), failing at once when another process holds it: what `libero-ll train` does. The
            operating system releases it when the process dies, however it dies. A caller that holds the
            lock itself (a sweep's run) leaves this False.

    Raises:
        LiberoError: a setting is wrong, the run directory is in use (`lock`), a run to continue cannot be
            continued (its saved state is missing or damaged, or its config.yaml no longer matches what the
            run was started with), the demos do not fit the config. The demo files already there are checked
            before a new run's directory is made; a new directory that this call made (not `run_dir`'s) and
            that an error found later leaves without a saved state or an evaluation is removed, and the
            message says so.
        KeyboardInterrupt: Ctrl-C (or what a caller raises in its place), with the run directory as its
            `run_dir` attribute once the call has taken one, for the caller to say what is kept there.
    """
    not_in_a_worker_starting()
    taken: list[Path] = []  # the run directory, once this call has taken it

    with contextlib.ExitStack() as held:
        def hold(folder: Path) -> None:
            taken.append(Path(folder))
            if lock:
                held.enter_context(hold_run_dir(folder))

        try:
            return _run_lifelong(cfg, log, resume, envs, timings, run_dir, max_stages, hold)
        except KeyboardInterrupt as e:
            if taken:
                e.run_dir = taken[-1]
            raise
        except LiberoError as e:
            # Only a folder made here (a fresh one under output_dir), never one resumed or named by the caller.
            if taken and resume is None and run_dir is None and _remove_unsaved_run(taken[-1]):
                e.args = (f"{e} (nothing of the run is kept: {taken[-1]} is removed)",)
            raise


def _run_lifelong(cfg, log, resume, envs, timings, run_dir, max_stages, hold) -> Path:
    """`run_lifelong`; `hold(folder)` takes the run directory's lock (or does nothing) until the call ends."""
    from omegaconf import OmegaConf

    from libero_ll.envs.env import load_task, say_task_warnings
    from libero_ll.envs.pool import EnvPool
    from libero_ll.evaluation.success import SuccessTensor
    from libero_ll.experiments.config import learner_options, policy_config
    from libero_ll.learners import TrainConfig, make_learner
    from libero_ll.policies import make_policy
    from libero_ll.policies.language import encode_instructions, release_models

    t_call = time.time()
    import_plugins(cfg.plugins)  # a config built by hand, or sent to a sweep's worker, has not imported them
    if max_stages is not None and int(max_stages) < 1:
        raise LiberoError(f"the number of stages to train in one call must be at least 1, got {max_stages}")
    saved = None
    if resume is not None:
        resume = Path(resume)
        if not (resume / "config.yaml").exists():
            raise LiberoError(f"{resume}: not a run directory (no config.yaml)")
        hold(resume)  # before anything of the run is read: another process may be writing it
        saved = _load_state(resume)
    # A run being continued uses the task files it began with, wherever it is continued from.
    kept = run_task_files(resume) if resume is not None else None
    if resume is not None:
        _check_config_as_started(cfg, saved, resume, kept)
    check_components(cfg, check_init=resume is None, check_suite=kept is None, check_name=resume is None)
    torch.set_num_threads(int(cfg.num_threads))
    seed_everything(int(cfg.seed))
    try:
        device = _device(cfg.device)
    except LiberoError as e:
        if resume is None:
            raise
        raise LiberoError(f"{e} (device is set in {resume / 'config.yaml'}; a resume may change it)") from None
    tasks = kept or suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)
    names = [t.stem for t in tasks]
    if resume is None:
        # Demo files already there of another image size or with too few demos, before any work and before
        # the run directory is made (those collected later are checked once collected).
        check_demo_images(cfg, [t for t in tasks if task_demo_file(cfg.data.dir, t.stem).exists()])
        check_demo_counts(cfg, tasks, existing_only=True)

    env_cfg = env_config(cfg)
    own_envs = envs is None
    if own_envs:
        # Built when first needed (the initial states, rollouts without workers), the last few tasks' kept.
        envs = EnvPool(tasks, env_cfg)
    elif len(envs) != len(tasks):
        raise LiberoError(f"{len(envs)} environments given for {len(tasks)} tasks")
    evaluator = background = None
    writer = None
    log = run_log = RunLog(log)
    try:
        # 1. language and policy (a pretrained architecture mismatch fails here, before any long work)
        say_task_warnings(tasks)
        embs = encode_instructions([load_task(t).language for t in tasks], str(cfg.language_encoder))
        release_models()
        policy_cfg = policy_config(cfg)
        shape_meta = {
            "image_shape": (int(cfg.env.image_size), int(cfg.env.image_size), 3),
            "lowdim": dict(LOWDIM_SIZES),
            "action_dim": 7,
            "task_emb_dim": int(embs.shape[1]),
        }
        policy = make_policy(str(cfg.policy.name), policy_cfg, shape_meta).to(device)
        if saved is not None:
            _check_saved_weights(policy, saved, resume)
        source = None
        if cfg.init_from and saved is None:
            source = _init_from_as_started(cfg, resume)
            pretrained = load_checkpoint(source)
            load_policy_weights(policy, source, pretrained)
            log(f"policy initialised from {source}")
            for note in pretrained_look_notes(cfg, pretrained, source) + untrained_source_notes(source):
                log(note)
        # Every demo file already there holds what the run reads of it, images included (each stage reads
        # its images only when it starts): checked before any work, on a resume too.
        check_demo_keys(cfg, tasks, policy.image_keys + policy.lowdim_keys)
        plugins = plugin_files(cfg.plugins)
        # The run's config.yaml and this session's entry, which names the pretrained file it loaded, are written
        # together: a run stopped between the two would, resumed, pick its pretrained file anew (a glob).
        with interrupts_held():
            run_dir = _open_run_dir(cfg, resume, log, run_dir, hold)
            # The sessions before this one.
            sessions = record_session(run_dir, device, resumed=resume is not None, init_from=source, plugins=plugins)
        run_log.open(run_dir)
        keep_task_files(run_dir, tasks)
        if resume is not None:
            _data_dir_as_started(cfg, sessions, log)
            for change in changed_plugins(sessions[0].get("plugins") if sessions else None, plugins):
                log(f"warning: {change}; the run goes on with the code as it is now")

        # 2. demonstrations
        t_demos = time.time()
        # A run from before runs kept their config in their state (and so before demo counts were checked)
        # may have trained on fewer demos than it says: it goes on with them, with a note.
        task_data = _load_demos(cfg, tasks, embs, policy, env_cfg, log, resumed=resume is not None,
                                few_demos_note=saved is not None and "config" not in saved)
        demo_seconds = time.time() - t_demos
        # What each task's demos are, for a resume to see whether it trains on the same ones (another
        # collection of them, on another machine or by another expert, is used with a warning).
        demo_digests = demo_digests_of(task_data.light, names)
        if saved is not None and saved.get("demos"):
            for line in changed_demo_warnings(saved["demos"], demo_digests, cfg.data.dir, tasks):
                log(line)
            demo_digests = dict(saved["demos"])  # those the run began with, for every later resume to compare

        train_cfg = TrainConfig(**OmegaConf.to_container(cfg.train, resolve=True))
        learner = make_learner(str(cfg.learner.name), policy, train_cfg, learner_options(cfg))
        learner.rng = np.random.default_rng(int(cfg.seed))
        precision, compiled = train_cfg.precision_on(device), train_cfg.compile_on(device)
        # How this session trains, as resolved on this machine: a resume says when it differs from the saved one's.
        training = {"device": device.type, "precision": precision, "compile": compiled}
        if precision != "fp32" or compiled:
            how = [f"{precision} autocast"] if precision != "fp32" else []
            how += [f"compiled ({'default' if compiled is True else compiled}; the first steps compile)"] if compiled else []
            log(f"training on {device}: {', '.join(how)}")
        stages = learner.stages(len(tasks))
        # The rollouts of all the tasks of an evaluation point may be in flight at once (evaluate_tasks).
        point_tasks = max(max(len(st) for st in stages), len(tasks) - 1 if cfg.eval.past_tasks else 1)
        eval_workers = resolve_workers(int(cfg.eval.workers), int(cfg.eval.rollouts) * point_tasks)
        overlap = cfg.eval.overlap if cfg.eval.overlap is not None else device.type == "cuda"
        if not overlap and eval_workers > 1:
            from libero_ll.evaluation.vector_eval import ParallelEvaluator

            # Started before the rest of the set-up: the workers import the simulator meanwhile.
            evaluator = ParallelEvaluator(tasks, env_cfg, eval_workers, int(cfg.eval.envs_per_worker))
        init_states = _init_states(cfg, tasks, envs, names, run_dir, log)
        if not cfg.init_from:
            # Low-dim inputs are standardised with the first stage's statistics only: later tasks are unseen
            # (MTL's one stage holds every task). A pretrained policy keeps the statistics it was trained with.
            first = {k: np.concatenate([d[k] for j in stages[0] for d in task_data.light[j].demos])
                     for k in policy.lowdim_keys}
            policy.set_lowdim_stats({k: (v.mean(0), v.std(0)) for k, v in first.items()})
            # The instructions of every task, known from the start (as LIBERO embeds them all before training).
            # (A resume then loads the saved ones, the same, over them: said at the start only.)
            if policy.cfg.standardize_language and policy.set_language_stats(embs) and saved is None:
                log(f"task embeddings centred on the run's {len(np.unique(embs, axis=0))} distinct instructions "
                    f"and scaled by {float(policy.language_scale):.3g} (policy.cfg.standardize_language)")
        elif saved is None and (policy.cfg.standardize_language or bool(policy.language_mean.any())):
            # Either way round, the setting does not apply to a pretrained policy: say which reading it keeps.
            how = ("centred on its run's instructions" if bool(policy.language_mean.any())
                   else "as the encoder gives them, its run did not standardise them")
            log(f"the task embeddings are read as the pretrained policy read them ({how}), whatever "
                f"policy.cfg.standardize_language says")
        sample = policy.windows([task_data.first_demo(0)])
        macs_per_window = forward_macs_per_window(policy, sample.get_batch(np.arange(min(2, len(sample)))))
        num_params = sum(p.numel() for p in policy.parameters())

        if overlap:
            from libero_ll.experiments.background_eval import BackgroundEvaluator

            # The evaluation process imports the run's plugins itself, from where this process found them.
            sent = {**OmegaConf.to_container(cfg, resolve=True), "plugins": resolved(cfg.plugins)}
            background = BackgroundEvaluator(
                sent, tasks, env_cfg, str(cfg.policy.name), policy_cfg,
                shape_meta, init_states, embs, str(device), eval_workers, int(cfg.eval.envs_per_worker),
            )
            log(f"evaluating alongside training (eval.overlap) in a process of its own with {eval_workers} "
                f"environment worker{'s' if eval_workers > 1 else ''}")

        eval_seconds = 0.0
        # Evaluations alongside training not yet entered: (epoch, global epoch, tickets, weights evaluated).
        pending: list[tuple[int, int, list[int], dict]] = []

        def submit(js: list[int], when: tuple[int, ...]) -> list[int]:
            """Send the evaluation of tasks `js` at point `when` to the evaluation process: one job per
            evaluation context (one for all of `js` when the learner's is the same for them), in `js`'s order."""
            groups = [list(js)] if learner.shares_eval_context(list(js)) else [[j] for j in js]
            tickets = []
            for group in groups:
                with learner.eval_context(group[0]):
                    tickets.append(background.submit(group, when, policy.state_dict()))
            return tickets

        def evaluate(js: list[int], *when: int) -> list[float]:
            nonlocal eval_seconds
            if background is not None:
                t = time.time()
                try:
                    return [v for k in submit(js, when) for v in background.wait(k)]
                finally:
                    eval_seconds += time.time() - t
            t, threads = time.time(), torch.get_num_threads()
            # One torch thread while rollouts run: the simulator (in this process or in the workers) needs the
            # other cores, and OpenMP threads left spinning between the policy's small steps would take them.
            # Training gets all its threads back, spinning between operations as OpenMP does by default.
            torch.set_num_threads(1)
            try:
                return evaluate_tasks(js, when, cfg, policy, learner, init_states, embs, envs, evaluator)
            finally:
                torch.set_num_threads(threads)
                eval_seconds += time.time() - t

        # 3. where to start: the beginning, or the last completed epoch of a killed run
        tensor = SuccessTensor.empty(names)
        pos, global_epoch, resources = _Position(), 0, []
        best, best_index, best_state = -1.0, 0, None
        if saved is not None:
            try:
                policy.load_state_dict(saved["policy"])
            except RuntimeError as e:
                raise LiberoError(_weights_mismatch(run_dir, first_line(e))) from None
            # One task's demos at a time: what the learner rebuilds from each (ER's memory) is its own.
            with task_data.one_at_a_time():
                learner.load_state_dict(saved["learner"], task_data)
            tensor = SuccessTensor.from_dict(saved["tensor"])
            pos = _Position(**saved["position"])
            global_epoch, resources = int(saved["global_epoch"]), list(saved["resources"])
            best, best_index, best_state = float(saved["best"]), int(saved["best_index"]), saved["best_state"]
            tensor.save(run_dir / "success.json")
            write_resources(run_dir / "resources.json", resources, learner.memory_is_samples)
            if pos.stage >= len(stages):
                log(f"resuming {run_dir}: the run had finished, nothing left to train")
            else:
                log(f"resuming {run_dir} at stage {pos.stage + 1}/{len(stages)}, {pos.phase} epoch {pos.epoch}")
                for line in _stream_changes(saved.get("training"), training):
                    log(line)

        from torch.utils.tensorboard import SummaryWriter

        # On resume, drop scalars logged after the saved state (they will be logged again).
        writer = SummaryWriter(str(run_dir / "tensorboard"), purge_step=global_epoch + 1 if saved else None)

        def save_state(stage: int, phase: str, epoch: int) -> None:
            writer.flush()
            learner_state = learner.state_dict()
            if phase == "start":
                # Between stages: the next one starts with a fresh optimiser (start_task) and its own best
                # point, so neither is kept. A paper-size state is then the weights and the learner's
                # memories (about 13 MB with ER) instead of five copies of the weights.
                learner_state["optimizer"] = None
            state = {
                "version": STATE_VERSION,
                "position": {"stage": stage, "phase": phase, "epoch": epoch},
                "global_epoch": global_epoch,
                "policy": policy.state_dict(),
                "learner": learner_state,
                "tensor": tensor.to_dict(),
                "best": best,
                "best_index": best_index,
                "best_state": None if phase == "start" else best_state,
                "resources": resources,
                "rng": rng_states(),
                "demos": demo_digests,
                # Evaluations alongside training still out, oldest first, with the weights each evaluates: a
                # resume sends them again before it trains on.
                "pending": [{"epoch": e, "at": at, "weights": w} for e, at, _, w in pending],
                # What the run is doing, for a resume to check its config.yaml against (_check_config_as_started).
                "config": OmegaConf.to_container(cfg, resolve=True),
                "training": training,
            }
            # Both files or neither: a Ctrl-C or SIGTERM between them left progress.json behind the state (or
            # missing), so that `metrics` and `report` took a stopped run for a finished one.
            with interrupts_held():
                atomic_torch_save(state, run_dir / STATE_FILE)
                write_json(run_dir / PROGRESS_FILE, {"stage": stage, "phase": phase, "epoch": epoch,
                                                       "stages": len(stages), "global_epoch": global_epoch})

        if saved is not None:
            set_rng_states(saved["rng"])
        else:
            # A fixed point for the training streams, whatever setup consumed (e.g. collecting demos).
            seed_everything(derive_seed(int(cfg.seed), 1))

        # 4. the lifelong loop
        epochs, every = int(cfg.train.epochs), max(1, int(cfg.eval.every))
        t_run, paused = time.time(), False
        # A resumed call's times (of the stage it resumed in, and of the run) count from the resume.
        since_resume = " since resuming" if saved is not None else ""
        for s in range(pos.stage, len(stages)):
            stage = stages[s]
            label = names[stage[0]] if len(stage) == 1 else f"all {len(stage)} tasks"
            check_stage_memory(cfg, s, [names[j] for j in stage], [task_data.light[j] for j in stage],
                               len(policy.image_keys), run_dir)
            data_s = task_data[stage[0]] if len(stage) == 1 else [task_data[j] for j in stage]
            dataset = train_cfg.dataset([task_data[j] for j in stage], policy)
            phase, first_epoch = (pos.phase, pos.epoch) if s == pos.stage else ("start", 0)
            t0, eval_before = time.time(), eval_seconds
            alongside_before = background.seconds if background is not None else 0.0

            def record(epoch: int, at: int, scores: list[float], weights: dict) -> None:
                """Enter the stage's evaluation at `epoch` (global epoch `at`) of `weights`; the best so far
                (the earliest on ties; epoch 0 starts the count) is the stage's kept policy."""
                nonlocal best, best_index, best_state
                for j, score in zip(stage, scores):
                    tensor.eval_epochs[j].append(epoch)
                    tensor.curves[j].append(score)
                    writer.add_scalar(f"{names[j]}/success", score, at)
                if epoch == 0 or float(np.mean(scores)) > best:
                    best, best_state = float(np.mean(scores)), weights
                    best_index = len(tensor.curves[stage[0]]) - 1

            def take(wait: bool) -> None:
                """Enter the evaluations alongside training that are in (all of them, waiting, with `wait`),
                oldest first, each with a line of its own."""
                nonlocal eval_seconds
                t = time.time()
                while pending and (wait or all(background.done(k) for k in pending[0][2])):
                    epoch, at, tickets, weights = pending.pop(0)
                    scores = [v for k in tickets for v in background.wait(k)]
                    record(epoch, at, scores, weights)
                    tensor.save(run_dir / "success.json")
                    if epoch == 0:
                        log(f"stage {s + 1}/{len(stages)} {label}: epoch 0 success {_fmt(scores)}")
                    else:
                        log(f"stage {s + 1} epoch {epoch}: success {_fmt(scores)}, curve {_curve(tensor, stage)}")
                if wait:
                    eval_seconds += time.time() - t

            if s == pos.stage and saved is not None and saved.get("pending"):
                # Evaluations that were out when the run was saved: sent again (or run here) in their order, each
                # of the weights it evaluates, and entered before the epochs that follow theirs.
                trained = copy.deepcopy(policy.state_dict())
                for entry in saved["pending"]:
                    policy.load_state_dict(entry["weights"])
                    when = (int(entry["epoch"]), int(entry["at"]))
                    if background is not None:
                        pending.append((*when, submit(stage, (s, when[0])), entry["weights"]))
                    else:
                        record(*when, evaluate(stage, s, when[0]), entry["weights"])
                        tensor.save(run_dir / "success.json")
                policy.load_state_dict(trained)
                saved["pending"] = []

            if phase == "start":
                learner.start_task(s, data_s)
                if background is None:
                    scores = evaluate(stage, s, 0)
                    record(0, global_epoch, scores, copy.deepcopy(policy.state_dict()))
                    tensor.save(run_dir / "success.json")
                    log(f"stage {s + 1}/{len(stages)} {label}: epoch 0 success {_fmt(scores)}")
                else:
                    pending.append((0, global_epoch, submit(stage, (s, 0)), copy.deepcopy(policy.state_dict())))
                phase, first_epoch = "train", 0
                save_state(s, phase, 0)

            if phase == "train":
                for epoch in range(first_epoch + 1, epochs + 1):
                    lr = learner.current_lr()
                    loss = learner.train_epoch(dataset)
                    _check_loss(loss, s, epoch, lr)
                    global_epoch += 1
                    for j in stage:
                        tensor.losses[j].append(loss)
                        writer.add_scalar(f"{names[j]}/loss", loss, global_epoch)
                        writer.add_scalar(f"{names[j]}/lr", lr, global_epoch)
                    line = f"stage {s + 1} epoch {epoch}: loss {loss:.3f}"
                    if epoch % every == 0 or epoch == epochs:
                        # With train.ema_decay the averaged weights are evaluated and kept.
                        with learner.averaged_weights():
                            weights = copy.deepcopy(policy.state_dict())
                            if background is None:
                                scores = evaluate(stage, s, epoch)
                            else:
                                pending.append((epoch, global_epoch, submit(stage, (s, epoch)), weights))
                        if background is None:
                            record(epoch, global_epoch, scores, weights)
                            line += f" success {_fmt(scores)}, curve {_curve(tensor, stage)}"
                    tensor.save(run_dir / "success.json")
                    log(f"{line} ({time.time() - t0:.0f}s)")
                    take(wait=False)
                    save_state(s, "train", epoch)
                take(wait=True)  # the stage keeps its best evaluated weights: all its evaluations are needed

                prefix = f"task{stage[0]:02d}" if len(stage) == 1 else "all_tasks"
                # A run continued from a copy without its checkpoints/ (they are not needed to go on) makes it again.
                (run_dir / "checkpoints").mkdir(exist_ok=True)
                # The weights training ended with (as evaluated: the moving average with train.ema_decay), when the
                # stage keeps an earlier evaluation's: saved beside the kept ones, so that they are not lost.
                last_index = len(tensor.curves[stage[0]]) - 1
                last_file = run_dir / "checkpoints" / f"{prefix}_last.pt"
                last = None

                def save_stage_weights(weights: dict, success: float, epoch: int, path: Path) -> None:
                    atomic_torch_save(
                        {
                            "policy": weights, "tasks": list(stage), "task_names": [names[j] for j in stage],
                            "success": success, "epoch": int(epoch), "policy_name": str(cfg.policy.name),
                            "config": OmegaConf.to_container(cfg),
                        },
                        path,
                    )

                if best_index != last_index:
                    last_epoch = int(tensor.eval_epochs[stage[0]][last_index])
                    last_success = float(np.mean([tensor.curves[j][last_index] for j in stage]))
                    with learner.averaged_weights():
                        save_stage_weights(policy.state_dict(), last_success, last_epoch, last_file)
                    last = (last_epoch, last_success, f"checkpoints/{last_file.name}")
                else:
                    last_file.unlink(missing_ok=True)

                # The kept policy: the best checkpoint, then whatever the learner does at the end of a stage.
                policy.load_state_dict(best_state)
                learner.end_average()
                kept_epoch = tensor.eval_epochs[stage[0]][best_index]
                for j in stage:
                    tensor.kept_epochs[j] = int(kept_epoch)
                log(_kept_line(s, kept_epoch, best, last))
                save_stage_weights(best_state, best, kept_epoch, run_dir / "checkpoints" / f"{prefix}_best.pt")
                learner.end_task(s, data_s)
                phase, first_epoch = "finetune", 0
                save_state(s, phase, 0)

            extra = learner.post_task_epochs()
            for epoch in range(first_epoch + 1, extra + 1):
                loss = learner.train_epoch(dataset)
                _check_loss(loss, s, epoch, learner.current_lr(), "fine-tune epoch")
                global_epoch += 1
                for j in stage:
                    writer.add_scalar(f"{names[j]}/finetune_loss", loss, global_epoch)
                log(f"stage {s + 1} fine-tune epoch {epoch}/{extra}: loss {loss:.3f} ({time.time() - t0:.0f}s)")
                save_state(s, "finetune", epoch)
            # The stage's demos are let go (what the learner keeps of them, ER's memory, is its own).
            dataset = data_s = None
            task_data.release()

            # Success of the kept policy: the stage's best point, then earlier tasks. A stage of several tasks
            # (MTL) has one kept policy for all of them, so it fills every row from each task's own on.
            row = stage[-1]
            if len(stage) == 1:
                tensor.matrix[row, row] = tensor.curves[row][best_index]
            else:
                for j in stage:
                    tensor.matrix[j:, j] = tensor.curves[j][best_index]
            if cfg.eval.past_tasks and stage[0] > 0:
                past = list(range(stage[0]))
                for j, score in zip(past, evaluate(past, s, PAST_TASKS_EPOCH)):
                    tensor.matrix[row, j] = score
                    log(f"after stage {s + 1}: success on task {j + 1} {score:.2f}")
            for j in range(len(tasks)):
                if not np.isnan(tensor.matrix[row, j]):
                    writer.add_scalar(f"{names[j]}/success_after_task", tensor.matrix[row, j], global_epoch)
            tensor.save(run_dir / "success.json")
            # A task's training windows: all of its stage's (replayed ones included), or, in a stage of several
            # tasks, those drawn from it. Forward + backward costs about 3 forward passes.
            for j in stage:
                if len(stage) == 1:
                    windows, extra_windows = sum(learner.samples_by_task.values()), learner.extra_windows()
                else:
                    windows, extra_windows = learner.samples_by_task.get(j, 0), 0
                macs = macs_per_window * 3 * (windows + extra_windows)
                resources.append(task_entry(
                    names[j], j, num_params, learner.params_used(j), learner.memory_bytes(), windows, macs,
                    _data_size(cfg, names[j]),
                ))
            write_resources(run_dir / "resources.json", resources, learner.memory_is_samples)
            save_state(s + 1, "start", 0)
            since = since_resume if s == pos.stage else ""
            log(f"stage {s + 1}/{len(stages)} {label} done in {time.time() - t0:.0f}s{since} "
                f"(evaluation {eval_seconds - eval_before:.0f}s{_alongside(background, alongside_before)})")
            if max_stages is not None and s + 1 - pos.stage >= int(max_stages) and s + 1 < len(stages):
                n = s + 1 - pos.stage
                log(f"paused after {n} stage{'s' if n > 1 else ''} as asked, with stage {s + 2}/{len(stages)} next; "
                    f"continue with: libero-ll train --resume {run_dir}")
                paused = True
                break

        if paused:
            if timings is not None:
                timings.update(demos=demo_seconds, eval=eval_seconds, train=time.time() - t_run - eval_seconds,
                               total=time.time() - t_call)
            return run_dir
        final = {"policy": policy.state_dict(), "policy_name": str(cfg.policy.name), "config": OmegaConf.to_container(cfg)}
        atomic_torch_save(final, run_dir / FINAL_POLICY)
        loop_seconds = time.time() - t_run
        log(f"done: {len(tasks)} task{'s' if len(tasks) != 1 else ''}, {global_epoch} epochs in "
            f"{loop_seconds:.0f}s{since_resume} (evaluation {eval_seconds:.0f}s{_alongside(background, 0.0)}); results in {run_dir}")
        if timings is not None:
            timings.update(demos=demo_seconds, eval=eval_seconds, train=loop_seconds - eval_seconds,
                           total=time.time() - t_call)
            if background is not None:
                timings["eval_alongside"] = background.seconds
    except BaseException as e:
        run_log.stopped(e)
        raise
    finally:
        if writer is not None:
            writer.close()
        if evaluator is not None:
            evaluator.close()
        if background is not None:
            background.close()
        run_log.close()
        if own_envs:
            envs.close()
    return run_dir


def all_tasks_at_once(evaluator, learner, tasks: list[int]) -> bool:
    """Whether the rollouts of `tasks` go into one queue of the ParallelEvaluator `evaluator` (None: no
    workers): there are several tasks and the learner's `eval_context` is the same for all of them."""
    return evaluator is not None and len(tasks) > 1 and learner.shares_eval_context(list(tasks))


def evaluate_tasks(tasks: list[int], when: tuple[int, ...], cfg, policy, learner, init_states: list,
                   embs: np.ndarray, envs: list, evaluator=None) -> list[float]:
    """Success rate of each of `tasks` at one evaluation point, in the order of `tasks`.

    With a ParallelEvaluator, several tasks and a learner whose `eval_context` is the same for all of
    them (`shares_eval_context`), the rollouts of all the tasks are in flight together (the workers take
    them from one queue) under one random stream derived from the evaluation point. Otherwise each task is
    evaluated on its own, in its learner context and under a stream derived from the point and the task.
    Either way evaluation never shifts training's streams, and the same point gives the same results in
    every run (a resumed one too). A policy that samples its actions draws rollout i of task j from a
    stream of its own, seeded by the run's seed, the point, j and i, on either path: sampled or
    deterministic, the results are the same together or task by task (in lock-step, up to the rounding
    of batches of other sizes).

    Args:
        tasks: task indices (positions in the run's task list).
        when: the evaluation point, (stage, epoch); PAST_TASKS_EPOCH for earlier tasks after a stage.
        cfg: the run's config (seed, eval.rollouts, eval.max_steps, eval.still_steps).
        policy: the BasePolicy, evaluated in eval mode without gradients.
        learner: the Learner (its eval contexts).
        init_states: each task's (M, S) fixed initial states.
        embs: (T, D) task embeddings.
        envs: each task's LiberoEnv, used when there is no evaluator.
        evaluator: a ParallelEvaluator over the run's tasks, or None to roll out in `envs` in this process.
    """
    from libero_ll.evaluation.rollout import evaluate_task

    rollouts, max_steps, still = int(cfg.eval.rollouts), int(cfg.eval.max_steps), int(cfg.eval.still_steps)
    seed = int(cfg.seed)
    # Rollout i of task j at this evaluation point draws its sampled actions from a stream of its own, seeded
    # by (run seed, stage, epoch, task) and i: the same however the rollouts are spread over processes.
    if all_tasks_at_once(evaluator, learner, tasks):
        jobs = [(j, init_states[j], embs[j], rollouts, derive_seed(seed, *when, j)) for j in tasks]
        stream = derive_seed(seed, *when, ALL_TASKS)
        with learner.eval_context(tasks[0]), isolated_rng(stream), torch.no_grad():
            policy.eval()
            return evaluator.evaluate_many(policy, jobs, max_steps, still)
    scores = []
    for j in tasks:
        # Own random streams per (stage, epoch, task).
        own = derive_seed(seed, *when, j)
        with learner.eval_context(j), isolated_rng(own), torch.no_grad():
            policy.eval()
            args = (init_states[j], embs[j], rollouts, max_steps, still)
            if evaluator is not None:
                scores.append(evaluator.evaluate(policy, j, *args, seed=own))
            else:
                scores.append(evaluate_task(policy, envs[j], *args, seed=own))
    return scores


def _check_loss(loss: float, stage: int, epoch: int, lr: float, what: str = "epoch") -> None:
    """Stop a run whose training loss is no longer a number: its weights have diverged, every later epoch and
    evaluation would be wasted, and a saved state from after it would only diverge again. The run keeps what
    it saved up to the epoch before."""
    if math.isfinite(loss):
        return
    raise LiberoError(
        f"stage {stage + 1} {what} {epoch}: the training loss is {loss} (the policy's weights diverged at a "
        f"learning rate of {lr:.3g}); the run is kept as saved after the epoch before, and continuing it would "
        "diverge again: start a new run with a lower train.lr (or train.grad_clip), and check the demos "
        "(`libero-ll verify`)"
    )


def _kept_line(stage: int, epoch: int, success: float, last: tuple[int, float, str] | None = None) -> str:
    """The log line that says which evaluated weights a stage keeps (the best; the earliest on ties), and where the
    weights training ended with went when they are not those (`last`: their epoch, success and file)."""
    if epoch == 0:
        line = (f"stage {stage + 1}: kept the weights the stage began with (epoch 0, success {success:.2f}): "
                f"no evaluation after training did better, so this stage's training is not in the kept policy")
    else:
        line = f"stage {stage + 1}: kept the weights of epoch {epoch} (success {success:.2f})"
    if last is not None:
        line += f"; the weights training ended with (epoch {last[0]}, success {last[1]:.2f}) are in {last[2]}"
    return line


def _alongside(background, before: float) -> str:
    """What the evaluation process did alongside training (eval.overlap), for a log line; "" without it."""
    if background is None:
        return ""
    return f" waited for; the evaluation process worked {background.seconds - before:.0f}s alongside training"


def _fmt(scores: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in scores)


_CURVE_POINTS = 8  # a curve with more points is shortened to its first one and its last _CURVE_TAIL
_CURVE_TAIL = 6


def _curve(tensor, stage: list[int]) -> str:
    """The stage's success curve so far, "epoch:success" at each evaluation (the mean over a stage's tasks).

    A long curve (more than _CURVE_POINTS evaluations) keeps its first point and its last _CURVE_TAIL, with its
    best point after them, so that a line stays short however many epochs are evaluated; success.json has every
    point.
    """
    epochs = tensor.eval_epochs[stage[0]]
    means = np.mean([tensor.curves[j] for j in stage], axis=0)
    points = [f"{e}:{v:.2f}" for e, v in zip(epochs, means)]
    if len(points) <= _CURVE_POINTS:
        return " ".join(points)
    line = f"{points[0]} ... {' '.join(points[-_CURVE_TAIL:])}"
    if np.isnan(means).all():
        return line
    best = int(np.nanargmax(means))
    return f"{line} (best {means[best]:.2f} at epoch {epochs[best]})"


def env_config(cfg):
    """The EnvConfig of a run's environments (the evaluation cap is their episode length)."""
    from libero_ll.envs.env import EnvConfig

    return EnvConfig(
        image_size=int(cfg.env.image_size),
        robot_mesh=str(cfg.env.robot_mesh),
        shadows=bool(cfg.env.shadows),
        reflections=bool(cfg.env.reflections),
        max_steps=int(cfg.eval.max_steps),
    )


def _open_run_dir(cfg, resume, log, run_dir=None, hold=lambda folder: None) -> Path:
    """The run directory: `resume`'s, or a new one (`run_dir`, or a fresh folder under output_dir) with the
    config written to it, its lock taken with `hold` before that."""
    from omegaconf import OmegaConf

    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").exists():
            raise LiberoError(f"{run_dir}: not a run directory (no config.yaml)")
        return run_dir
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        hold(run_dir)
        if (run_dir / "config.yaml").exists():
            raise LiberoError(f"{run_dir} already holds a run; continue it with resume instead")
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        base = f"{cfg.name}_{Path(cfg.suite).name}_{cfg.learner.name}_{cfg.policy.name}_seed{cfg.seed}_{stamp}"
        run_dir = Path(cfg.output_dir) / base
        n = 1
        while run_dir.exists():  # two runs started in the same second
            n += 1
            run_dir = Path(cfg.output_dir) / f"{base}-{n}"
        (run_dir / "checkpoints").mkdir(parents=True)
        # Before its config.yaml is there, nothing can resume the run: held from here, it is never shared.
        hold(run_dir)
    tmp = run_dir / ".config.yaml.tmp"
    OmegaConf.save(cfg, tmp)
    os.replace(tmp, run_dir / "config.yaml")
    log(f"run directory: {run_dir}")
    return run_dir


def _remove_unsaved_run(run_dir: Path) -> bool:
    """Remove the folder of a new run stopped by an error before its first save, holding only what the start of
    a run writes (config.yaml, log.txt, environment.json, its task files, initial states); True when it is
    gone. A folder with a saved state, progress, a checkpoint or an evaluation is kept."""
    if (run_dir / STATE_FILE).exists() or (run_dir / "success.json").exists() or _progress_shown(run_dir):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return not run_dir.exists()


def _init_from_as_started(cfg, resume) -> Path:
    """The pretrained file to load: for a run resumed before its first save, the one its first session loaded
    (environment.json), which a glob or a relative `init_from` may no longer name from here; else the one
    `init_from` names now."""
    if resume is not None:
        loaded = next((s["init_from"] for s in load_sessions(resume) if s.get("init_from")), None)
        if loaded is not None:
            if not Path(loaded).is_file():
                raise LiberoError(f"init_from: {loaded}, which this run was started from, no longer exists")
            return Path(loaded)
    return resolve_init_from(str(cfg.init_from)).resolve()


def _data_dir_as_started(cfg, sessions: list[dict], log) -> None:
    """A run continued from another folder than it was started from reads a relative `data.dir` that is not
    found from here where the run found it (the first session's folder), instead of collecting it anew."""
    given = Path(str(cfg.data.dir))
    if given.is_absolute() or given.is_dir() or not sessions:
        return
    start = Path(str(sessions[0].get("cwd", "")))
    there = start / given
    if start.is_absolute() and there.is_dir():
        cfg.data.dir = str(there)
        log(f"data.dir {given} is read from {there}, the folder the run was started from")


def _load_state(run_dir: Path) -> dict | None:
    """The saved state of a run to continue; None for a run killed before its first save (it starts over in
    the same directory).

    Raises:
        LiberoError: the state is missing from a run that had got further (its progress.json, a stage's
            checkpoint or its final policy show it): starting over would overwrite its results.
    """
    path = run_dir / STATE_FILE
    if not path.exists():
        shown = _progress_shown(run_dir)
        if not shown:
            return None  # killed before its first save: start over in the same directory
        if (run_dir / FINAL_POLICY).exists():
            raise LiberoError(
                f"{path} is missing from a run that has finished ({'; '.join(shown)}): there is nothing to "
                f"continue, and its results stand as they are (libero-ll metrics {run_dir})"
            )
        raise LiberoError(
            f"{path} is missing, but the run had got past its first save ({'; '.join(shown)}): it cannot be "
            f"continued without it, and starting it over here would overwrite its results; put {STATE_FILE} "
            f"back if there is a copy (where the run was moved from, say), or start a new run with libero-ll "
            f"train {run_dir / 'config.yaml'}"
        )
    try:
        state = load_checkpoint(path)
    except LiberoError as e:
        shown = [s for s in _progress_shown(run_dir) if s.startswith("checkpoints/")]
        kept = f"; its stages' kept weights are in {shown[0]}" if shown else ""
        raise LiberoError(
            f"{e}: the run cannot be continued without a whole {STATE_FILE}; put it back if there is a copy "
            f"(where the run was moved from, say), or start a new run with libero-ll train "
            f"{run_dir / 'config.yaml'} (its results so far stay readable: libero-ll metrics {run_dir}{kept})"
        ) from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise LiberoError(f"{path}: not a resume state of this version of libero_ll")
    return state


def _progress_shown(run_dir: Path) -> list[str]:
    """What in a run directory shows that the run got past its first save (each as a short phrase); [] for a
    run killed before it (a run directory where the run can start over)."""
    shown = []
    progress = run_dir / PROGRESS_FILE
    if progress.exists():
        try:
            p = json.loads(progress.read_text())
            at = (int(p["stage"]), str(p["phase"]), int(p["epoch"]))
        except (OSError, ValueError, KeyError, TypeError):
            shown.append(f"{PROGRESS_FILE} is there")
        else:
            stages = p.get("stages", "?")
            if isinstance(stages, int) and at[0] >= stages:
                shown.append(f"{PROGRESS_FILE} says all {stages} stages had ended")
            elif at[1] == "start" and at[0] > 0:
                shown.append(f"{PROGRESS_FILE} says {at[0]} of {stages} stages had ended")
            elif at != (0, "start", 0):
                shown.append(f"{PROGRESS_FILE} says stage {at[0] + 1}/{stages}, {at[1]} epoch {at[2]}")
    checkpoints = sorted((run_dir / "checkpoints").glob("*.pt")) if (run_dir / "checkpoints").is_dir() else []
    if checkpoints:
        shown.append(", ".join(f"checkpoints/{c.name}" for c in checkpoints[:3])
                     + (f" and {len(checkpoints) - 3} more" if len(checkpoints) > 3 else ""))
    if (run_dir / FINAL_POLICY).exists():
        shown.append(f"{FINAL_POLICY} is there")
    return shown


# Keys of a run's config.yaml that may differ, on resume, from what the run was started with: where and how fast
# the run goes on, never what it learns, so that a run killed or paused (train --stages) can be continued on
# another machine (README: "a run spread over sessions of limited time or over machines"):
#   device                another machine's GPU, or none
#   num_threads           its cores
#   output_dir            not read by a resume (the run directory is named)
#   data.dir              the same demos at another path (a relative one is also read from where the run began)
#   data.collect_workers  the demo files do not depend on it
#   eval.workers, eval.envs_per_worker
#                         how rollouts are spread over processes: the results do not depend on it (on a GPU, in
#                         lock-step, up to the rounding of batches of another size)
#   eval.overlap          evaluating in a process of its own: the same scores and kept weights
#   train.data_on_device  where the training windows are held: the same batches
#   train.compile         a compiled copy of the same loss, for the machine's device (it draws dropout masks
#                         otherwise: with this or device changed, a resume says that the run is no longer an
#                         uninterrupted run's copy bit for bit)
# Every other difference (the learner, the policy, epochs, tasks, seeds, data.demos_per_task, ...) is an error.
RESUME_MAY_CHANGE = (
    "device", "num_threads", "output_dir", "data.dir", "data.collect_workers", "eval.workers",
    "eval.envs_per_worker", "eval.overlap", "train.data_on_device", "train.compile",
)


def _stream_changes(before: dict | None, now: dict) -> list[str]:
    """Notes on how a resumed session trains otherwise than the one that saved the state, as each resolved them
    on its machine (`device: auto`, `train.compile: null` and `train.precision: null` resolve by the machine):
    another device type, precision or compiled loss draws training's random numbers (dropout, augmentation)
    by other code, so that the resumed run goes on as well, but is no longer an uninterrupted run's copy bit
    for bit. Nothing for a state saved before runs recorded it."""
    if not isinstance(before, dict):
        return []
    words = {"device": "device", "precision": "train.precision", "compile": "train.compile"}
    return [f"note: the run trained with {words[key]} {_setting_text(before.get(key))} and this session with "
            f"{_setting_text(now.get(key))}: training's random draws (dropout, augmentation) come from other code "
            "from here on, so the run is not an uninterrupted run's copy bit for bit"
            for key in words if before.get(key) != now.get(key)]


def _check_config_as_started(cfg, saved: dict | None, run_dir: Path, kept: list[Path] | None) -> None:
    """Check a resumed run's config (its config.yaml) against what the run was doing when it saved its state
    (kept in resume.pt since runs keep it) and its tasks against the run's own task list (tasks/order.txt).

    Raises:
        LiberoError: naming the first key that differs, with both values, unless it is one of
            RESUME_MAY_CHANGE.
    """
    from omegaconf import OmegaConf

    where = run_dir / "config.yaml"
    restore = "restore it to continue the run, or start a new run with the new settings"
    if kept is not None and cfg.tasks:
        order = [t.stem for t in kept]
        if list(cfg.tasks) != order:
            raise LiberoError(
                f"{where}: tasks is {list(cfg.tasks)}, but the run learns {order} (its "
                f"{kept[0].parent.name}/order.txt): a run goes on with the tasks it began with; {restore}"
            )
    started = saved.get("config") if saved is not None else None
    if started is None:
        return  # saved before runs kept their config: continued as it is
    change = first_difference(started, OmegaConf.to_container(cfg, resolve=True), ignore=RESUME_MAY_CHANGE)
    if change is not None:
        key, was, now = change
        was = "absent" if was == ABSENT else repr(was)
        now = "absent" if now == ABSENT else repr(now)
        raise LiberoError(
            f"{where} no longer matches the config the run was started with: {key} was {was}, it is {now} now; "
            f"a run goes on with the settings it began with (on resume only {', '.join(RESUME_MAY_CHANGE)} may "
            f"change): {restore}"
        )


def _check_saved_weights(policy, saved: dict, run_dir: Path) -> None:
    """Check that the saved policy weights fit the policy the run's config builds, naming the first that does
    not (before any long work)."""
    have, stored = policy.state_dict(), saved["policy"]
    optional = getattr(policy, "optional_state", ())
    for key in list(stored) + [k for k in have if k not in stored and k not in optional]:
        if key not in have:
            problem = f"{key} is in {STATE_FILE} but not in the policy the config builds"
        elif key not in stored:
            problem = f"{key} of the policy the config builds is not in {STATE_FILE}"
        elif tuple(stored[key].shape) != tuple(have[key].shape):
            problem = (f"{key} is {tuple(stored[key].shape)} in {STATE_FILE} but {tuple(have[key].shape)} in the "
                       f"policy the config builds")
        else:
            continue
        raise LiberoError(_weights_mismatch(run_dir, problem))


def _weights_mismatch(run_dir: Path, problem: str) -> str:
    return (f"{run_dir / 'config.yaml'} no longer matches the run's saved weights ({problem}): its policy "
            f"settings (policy.name, policy.cfg, policy.by_name, language_encoder) were changed since the run "
            f"was saved; restore them to continue the run")


def collect_missing_demos(cfg, tasks: list[Path], env_cfg, log: Callable[[str], None] = print) -> None:
    """Collect with the expert the demo files of `tasks` that `cfg.data.dir` lacks (`data.*` settings).

    Raises:
        LiberoError: the expert kept no demo of a task.
    """
    from libero_ll.data.collect import collect

    data_dir = Path(cfg.data.dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    missing = [(t, f) for t in tasks if not (f := task_demo_file(data_dir, t.stem)).exists()]
    if missing:
        t0 = time.time()
        stats = collect(
            missing, int(cfg.data.demos_per_task), int(cfg.data.collect_seed), env_cfg,
            max_steps=int(cfg.data.expert_max_steps),
            workers=resolve_workers(int(cfg.data.collect_workers), len(missing) * int(cfg.data.demos_per_task)),
            # Another run on the same data.dir collecting the same task: its demos are waited for, then used.
            wait=lambda partial: log(f"waiting for another process collecting into {partial}"),
        )
        for s in stats:
            if s.skipped:
                log(f"{s.path}: collected by another process meanwhile ({s.kept} demos)")
                continue
            log(f"collected {s.kept} demos of {s.task} (expert success {s.success_rate:.0%}, "
                f"mean length {s.mean_length:.0f})")
            if s.path is None or not Path(s.path).exists():
                raise LiberoError(f"the expert kept no demo of {s.task}; see `libero-ll collect --dry-run`")
        log(f"collected the demos of {len(missing)} task{'s' if len(missing) != 1 else ''} in {time.time() - t0:.0f}s")


def _load_demos(cfg, tasks: list[Path], embs, policy, env_cfg, log, resumed: bool = False,
                few_demos_note: bool = False):
    """Collect the demos missing, check them, and return a DemoStore of them: each task's images are read
    when its stage needs them (the actions and low-dim observations of all are read and checked here)."""
    from libero_ll.data.dataset import TaskData
    from libero_ll.data.store import DemoStore

    collect_missing_demos(cfg, tasks, env_cfg, log)
    data_dir = Path(cfg.data.dir)
    for note in stale_demo_notes(data_dir, tasks):
        log(note)
    check_demo_images(cfg, tasks)
    for note in demo_look_notes(cfg, tasks) + demo_rate_notes(cfg, tasks, env_cfg.control_freq):
        log(note)
    check_demo_counts(cfg, tasks, resumed=resumed, note=log if few_demos_note else None)
    obs_keys = policy.image_keys + policy.lowdim_keys
    extra = _ensure_corrections(cfg, tasks, log) if int(cfg.data.corrections_per_demo) > 0 else None
    store = DemoStore([task_demo_file(data_dir, t.stem) for t in tasks], embs, obs_keys,
                      int(cfg.data.demos_per_task), light_keys=policy.lowdim_keys, extra=extra)
    if not resumed:  # a resumed run said so when it started
        # The demos as trained on, less their corrections (whose lengths say nothing of the task's).
        plain = [TaskData(d.task_id, d.demos[:n], d.task_emb) for d, n in zip(store.light, store.own_demos)]
        for note in short_rollout_notes(cfg, tasks, plain):
            log(note)
    return store


def available_memory() -> int | None:
    """Bytes of memory that can be had without swapping (Linux's MemAvailable), or None where that is unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_stage_memory(cfg, s: int, names: list[str], light: list, cameras: int, run_dir: Path,
                       available: int | None = None) -> None:
    """Refuse to read a stage's demos whose images alone take more memory than the machine has free: the
    kernel would kill the run without a word part-way through. `light` is the stage's tasks' demos without
    images (DemoStore.light), `cameras` how many images a step holds.

    Raises:
        LiberoError: naming the stage, the size and what to change (the run keeps what it saved before).
    """
    available = available_memory() if available is None else available
    if available is None:
        return
    size = int(cfg.env.image_size)
    steps = sum(len(d["actions"]) for data in light for d in data.demos)
    need = steps * cameras * size * size * 3
    if need <= available:
        return
    what = names[0] if len(names) == 1 else f"all {len(names)} tasks"
    # A run stopped before its first save is removed: it can only be started again.
    go_on = (f"continue the run from this stage where there is more memory (libero-ll train --resume {run_dir}), "
             "or start again" if (run_dir / STATE_FILE).exists() else "run it where there is more memory, or")
    raise LiberoError(
        f"stage {s + 1} ({what}) would hold {need / 2**30:.1f} GiB of demo images ({steps} steps, {cameras} "
        f"cameras at {size}x{size}), more than the {available / 2**30:.1f} GiB of memory free on this machine; "
        f"{go_on} with fewer demos (data.demos_per_task), smaller images (env.image_size) or fewer tasks"
    )


def demo_digests_of(task_data: list, names: list[str]) -> dict[str, str]:
    """A short hash of each task's demos as trained on (their count, and each one's actions in order): two
    collections of a task give the same one when, and only when, their demos act alike step for step."""
    import hashlib

    digests = {}
    for name, data in zip(names, task_data):
        h = hashlib.sha256(str(len(data.demos)).encode())
        for demo in data.demos:
            actions = np.ascontiguousarray(demo["actions"], dtype=np.float64)
            h.update(str(actions.shape).encode())
            h.update(actions.tobytes())
        digests[name] = h.hexdigest()[:16]
    return digests


def changed_demo_warnings(began: dict, now: dict, data_dir, tasks: list[Path]) -> list[str]:
    """Warnings for the tasks of a resumed run whose demos differ from those it began with (`began` and `now`
    as `demo_digests_of` gives them)."""
    return [
        f"warning: the demos of {t.stem} ({task_demo_file(data_dir, t.stem)}) are not those the run began with "
        "(another collection: their actions differ); the run goes on with them, so from here it trains on "
        "other data than an uninterrupted run did"
        for t in tasks if t.stem in began and began[t.stem] != now.get(t.stem)
    ]


def short_rollout_notes(cfg, tasks: list[Path], data: list) -> list[str]:
    """Notes on the tasks whose longest demo (of those trained on) is longer than eval.max_steps: their
    rollouts stop before a policy as quick as the demos could finish, and a success rate measured so
    says little."""
    from libero_ll.data.collect import EXPERT_MAX_STEPS

    cap = int(cfg.eval.max_steps)
    notes = []
    for t, d in zip(tasks, data):
        longest = max((len(demo["actions"]) for demo in d.demos), default=0)
        if longest > cap:
            # The protocol's cap, which every benchmark task's demos fit in, else the longest demo.
            enough = max(EXPERT_MAX_STEPS, longest)
            notes.append(f"note: the longest demo of {t.stem} takes {longest} steps, more than eval.max_steps "
                         f"({cap}): its rollouts stop before a policy as quick as the demos finishes; set "
                         f"eval.max_steps={enough} to measure it")
    return notes


def _data_size(cfg, name: str):
    """Task `name`'s training data as the resource metrics measure it (`task_data_size`), recorded with the
    run so that its SSS and CE do not need the demo files later; None when the file cannot be read."""
    from libero_ll.evaluation.resources import task_data_size

    try:
        return task_data_size(task_demo_file(cfg.data.dir, name), int(cfg.data.demos_per_task),
                              int(cfg.train.window_stride))
    except LiberoError:
        return None


def stale_demo_notes(data_dir: Path, tasks: list[Path]) -> list[str]:
    """Notes on the scripted expert's demo files in `data_dir` of `tasks` that were made by another version
    of the expert or from another version of their task file; such files are used as they are, never
    deleted."""
    from libero_ll.data.hdf5 import read_info
    from libero_ll.experts.expert import EXPERT_VERSION

    notes = []
    for t in tasks:
        path = task_demo_file(data_dir, t.stem)
        info = read_info(path)
        made_by = info.generator or ""
        if not made_by.startswith("scripted-expert"):
            # Teleoperated, converted or imported files (LIBERO's own) are taken as they are.
            continue
        if made_by != EXPERT_VERSION:
            notes.append(f"note: {path} was collected by {made_by}, not the current {EXPERT_VERSION}; delete "
                         f"it (or use another data.dir) to train on the current expert's demos")
        if info.bddl_file_content and info.bddl_file_content.split() != t.read_text(encoding="utf-8").split():
            notes.append(f"note: {path} was collected from another version of {t} (the task files differ); "
                         f"delete it (or use another data.dir) to train on demos of the task as it is now")
    return notes


# The env.* settings that change the camera images besides their size (which `check_demo_images` checks), as a
# demo file's env_args["env_kwargs"] records them (libero_ll.envs.env.EnvConfig).
IMAGE_SETTINGS = ("robot_mesh", "shadows", "reflections")


def _setting_text(value) -> str:
    """A setting as an override writes it: true/false for a switch."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def demo_look_notes(cfg, tasks: list[Path]) -> list[str]:
    """Notes on the demo files of `tasks` in `cfg.data.dir` rendered otherwise than the run renders: a setting of
    IMAGE_SETTINGS that a file's env_args record with another value than the run's env.* (`libero-ll collect`
    draws the robot's visual meshes by default, the cpu and smoke presets its collision hulls). Training on one
    look and evaluating on another may be deliberate, so it is a note, not an error. Files that record none of
    these settings (LIBERO's own, LeRobot imports) get none; files not there yet are collected as the run
    renders."""
    from libero_ll.data.hdf5 import read_info

    notes = []
    for t in tasks:
        path = task_demo_file(cfg.data.dir, t.stem)
        if not path.exists():
            continue
        info = read_info(path)
        kwargs = info.env_args.get("env_kwargs") if isinstance(info.env_args, dict) else None
        if not isinstance(kwargs, dict):
            continue
        expert = (info.generator or "").startswith("scripted-expert")
        for key in IMAGE_SETTINGS:
            if key not in kwargs:
                continue
            have, want = _setting_text(kwargs[key]), _setting_text(cfg.env[key])
            if have == want:
                continue
            if key == "robot_mesh" and expert:
                remake = f"or collect the demos again with --robot-mesh {want}: {_collect_command(cfg, t)}"
            elif key == "robot_mesh":
                remake = f"or make the file again with --robot-mesh {want}"
            elif expert:
                remake = ("or delete the file (or use another data.dir) and the run collects the demos as it "
                          "renders")
            else:
                remake = "or make the file again with that setting"
            notes.append(f"note: {path} was rendered with {key} {have} but the run renders with env.{key}={want}: "
                         f"the policy trains on images of one look and is evaluated on another; to match, set "
                         f"env.{key}={have}, {remake}")
    return notes


def demo_rate_notes(cfg, tasks: list[Path], rate: float) -> list[str]:
    """Notes on the demo files of `tasks` in `cfg.data.dir` recorded at another control rate than `rate`, the
    run's policy steps per second (a LeRobot dataset at 10 or 30 frames per second, imported): each delta action
    then stands for another stretch of time, so the policy moves the hand faster or slower than the demos did.
    Files that do not say their rate get none."""
    from libero_ll.data.hdf5 import read_info

    notes = []
    for t in tasks:
        path = task_demo_file(cfg.data.dir, t.stem)
        if not path.exists():
            continue
        theirs = read_info(path).control_freq
        if theirs is not None and theirs > 0 and theirs != rate:
            notes.append(f"note: {path} was recorded at {theirs:g} steps per second but the run's policy acts "
                         f"{rate:g} times a second: its delta actions move the hand about {rate / theirs:.3g} "
                         "times as fast as in the demos")
    return notes


def pretrained_look_notes(cfg, ckpt, source: Path) -> list[str]:
    """Notes on the scene settings (image size, robot meshes, shadows, reflections: `env.*`) that the pretrained
    policy `ckpt` (read from `source`) was trained with and the run sets otherwise: the run starts from weights
    made for other pictures, which may be meant, so it is a note. Likewise another `language_encoder`, and
    task ids shared by both runs (each run numbers its own instructions, so ids name other tasks across
    suites). A checkpoint that records no config gets none."""
    from omegaconf import OmegaConf

    config = ckpt.get("config") if isinstance(ckpt, dict) else None
    if not isinstance(config, dict):
        return []
    notes = []
    was = config.get("env")
    if isinstance(was, dict):
        now = OmegaConf.to_container(cfg.env, resolve=True)
        notes += [
            f"note: the pretrained policy {source} was trained with env.{key}={_setting_text(was[key])}, this run "
            f"renders with env.{key}={_setting_text(value)}: it starts from weights made for other pictures"
            for key, value in now.items() if key in was and was[key] != value
        ]
    encoder = config.get("language_encoder")
    if encoder is not None and str(encoder) != str(cfg.language_encoder):
        notes.append(f"note: the pretrained policy {source} was trained with language_encoder {encoder}, this run "
                     f"embeds its instructions with {cfg.language_encoder}: its language layers start from weights "
                     "made for other vectors")
    elif (encoder is not None and str(encoder).startswith("task_id")
          and (config.get("suite"), config.get("tasks")) != (str(cfg.suite), _plain(cfg.tasks))):
        notes.append(f"note: both runs use {encoder}, whose ids count each run's own instructions: this run's "
                     "k-th instruction gets the vector the pretrained run gave its own k-th one, another task's")
    return notes


def _plain(value):
    """A config value as plain Python (an OmegaConf list as a list), to compare with a recorded config's."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def untrained_source_notes(source: Path) -> list[str]:
    """A note when `source` is the final policy of a run that kept, in every stage, the weights the stage
    began with (no evaluation after training did better than epoch 0): it then holds the weights that run
    started from, and starting from it is starting over. Nothing for a checkpoint of an epoch, or a run whose
    success.json cannot be read or records no kept epochs."""
    from libero_ll.evaluation.runs import FINAL_POLICY
    from libero_ll.evaluation.success import SuccessTensor

    if source.name != FINAL_POLICY:
        return []
    try:
        kept = SuccessTensor.load(source.parent / "success.json").kept_epochs
    except (OSError, ValueError, KeyError, TypeError, LiberoError):
        return []
    if not kept or any(e is None or e != 0 for e in kept):
        return []
    return [f"note: the run {source.parent} kept, in every stage, the weights the stage began with (its "
            "evaluations after training never did better than epoch 0), so its final policy holds the weights "
            "that run started from: this run starts from untrained weights (or from that run's own init_from)"]


def _collect_command(cfg, task: Path, more: str = "") -> str:
    """The `libero-ll collect` command that writes the demo file of `task` as the run `cfg` would collect it."""
    import shlex

    return " ".join([
        "libero-ll collect --task", shlex.quote(str(task)), f"--demos {int(cfg.data.demos_per_task)} --out",
        shlex.quote(str(cfg.data.dir)), f"--seed {int(cfg.data.collect_seed)} --image-size {int(cfg.env.image_size)}",
        f"--robot-mesh {shlex.quote(str(cfg.env.robot_mesh))} --max-steps {int(cfg.data.expert_max_steps)}"
        f"{more} --overwrite",
    ])


def _ensure_corrections(cfg, tasks: list[Path], log) -> list[Path]:
    """Each task's file of displaced-object corrections, to be appended to its demos, making those missing or
    stale (`data.corrections_per_demo`)."""
    from libero_ll.data.corrections import CorrectionSettings, corrections_path, ensure_corrections

    data_cfg = cfg.data
    settings = CorrectionSettings(
        int(data_cfg.corrections_per_demo), int(data_cfg.collect_seed), int(data_cfg.demos_per_task)
    )
    files = [task_demo_file(cfg.data.dir, t.stem) for t in tasks]
    t0 = time.time()
    made = ensure_corrections(files, settings, resolve_workers(int(cfg.data.collect_workers), len(files)))
    for t, m in zip(tasks, made):
        if m is not None and m[1] == 0:
            log(f"no displaced-object corrections of {t.stem}: its demos grasp no loose object")
        elif m is not None:
            log(f"made {m[1]} displaced-object corrections ({m[2]} steps) of {t.stem}")
    if any(m is not None for m in made):
        n = sum(m is not None for m in made)
        log(f"made the corrections of {n} task{'s' if n != 1 else ''} in {time.time() - t0:.0f}s")
    return [corrections_path(f) for f in files]


def check_demo_images(cfg, tasks: list[Path]) -> None:
    """Check that the demo files of `tasks` in `cfg.data.dir` hold images of `env.image_size` (from the first
    demo's agentview dataset's shape, nothing loaded).

    Raises:
        LiberoError: naming the file, its image size and the config's.
    """
    from libero_ll.data.hdf5 import image_size

    for t in tasks:
        path = task_demo_file(cfg.data.dir, t.stem)
        have = image_size(path)
        if have is not None and have != int(cfg.env.image_size):
            raise LiberoError(
                f"{path}: images are {have}x{have} but env.image_size is {cfg.env.image_size}; set "
                f"env.image_size={have}, use another data.dir, or delete the file to re-collect (files from "
                f"`libero-ll import`: import again with --image-size {cfg.env.image_size})"
            )


def check_demo_keys(cfg, tasks: list[Path], obs_keys: list[str]) -> None:
    """Check that the demo files of `tasks` already in `cfg.data.dir` hold what a run loads of the demos it trains
    on (the first `data.demos_per_task`): their actions and the observations `obs_keys` (a derived key, or the
    key it is read from), from the files' layout, nothing loaded. Files not there yet are left to the run.

    Raises:
        LiberoError: naming the file, the demo and the dataset it lacks (as loading it would).
    """
    import h5py

    from libero_ll.data.hdf5 import DERIVED_OBS, demo_names, missing_obs_error

    for t in tasks:
        path = task_demo_file(cfg.data.dir, t.stem)
        if not path.exists():
            continue
        names = demo_names(path)[: int(cfg.data.demos_per_task)]
        with h5py.File(path, "r") as f:
            for name in names:
                demo = f["data"][name]
                if not isinstance(demo, h5py.Group):
                    raise LiberoError(f"demo file {path}: data/{name} is not a group of datasets")
                if "actions" not in demo:
                    raise LiberoError(f"demo file {path}: data/{name} has no 'actions' dataset")
                obs = demo.get("obs")
                for key in obs_keys:
                    if obs is None or (key not in obs and DERIVED_OBS.get(key, (key,))[0] not in obs):
                        raise missing_obs_error(path, name, key, obs)


def check_demo_counts(cfg, tasks: list[Path], existing_only: bool = False, resumed: bool = False,
                      note: Callable[[str], None] | None = None) -> None:
    """Check that the demo file of each of `tasks` in `cfg.data.dir` holds at least `data.demos_per_task` demos
    (a run would otherwise train on fewer than it says): files imported with fewer episodes, collected with a
    smaller --demos, or whose collection left out demos the expert failed. `existing_only`: skip the files
    not there yet (the run collects them). `note`: receives a note instead of the error (a run continued that
    may have trained on those demos from its start).

    Raises:
        LiberoError: naming the file, the demos it holds and those asked for, why it holds fewer when the
            file says, and the ways out (collecting more, with the exact command, or asking for fewer).
    """
    from libero_ll.data.hdf5 import demo_names, read_info

    want = int(cfg.data.demos_per_task)
    for t in tasks:
        path = task_demo_file(cfg.data.dir, t.stem)
        if existing_only and not path.exists():
            continue
        have = len(demo_names(path))
        if have < want and note is not None:
            note(f"note: {path} holds {have} demo{'s' if have != 1 else ''}, fewer than data.demos_per_task "
                 f"({want}); the run goes on with them (it was started before runs checked this)")
        elif have < want:
            raise LiberoError(_too_few_demos(cfg, t, path, have, want, read_info(path), resumed))


def _too_few_demos(cfg, task: Path, path: Path, have: int, want: int, info, resumed: bool) -> str:
    """The message of `check_demo_counts` for one file."""
    from libero_ll.data.collect import MAX_ATTEMPTS

    made_by, stats = info.generator or "", info.stats
    failed = [int(i) for i in np.ravel(stats.get("failed_demo_indices") or [])]
    attempts = int(stats.get("max_attempts") or MAX_ATTEMPTS)
    requested = stats.get("demos_requested")
    delete = "or delete the file, and the run collects the demos itself"
    more_attempts = ""
    if made_by.startswith("scripted-expert") and failed:
        why = (f"its collection asked for {requested} and left out demo{'s' if len(failed) > 1 else ''} "
               f"{', '.join(map(str, failed))}, whose {attempts} attempts by the expert all failed")
        more_attempts = f" --max-attempts {2 * attempts}"
        delete = ("more attempts try new seeds where those failed (deleting the file for the run to collect it "
                  "would fail the same demos again)")
    elif made_by.startswith("scripted-expert"):
        why = f"its collection asked for {requested}" if requested else "it was collected with fewer"
    elif made_by.startswith("lerobot import"):
        episodes = stats.get("lerobot_episodes", have)
        why = f"it was imported from a LeRobot dataset with {episodes} episode{'s' if episodes != 1 else ''} of the task"
        delete = ("the expert's demos then replace the imported ones; " + delete
                  + "; or import a dataset with more episodes of the task")
    else:
        why = f"it was made by {made_by}" if made_by else "it holds no more"
        delete = "the expert's demos then replace the file's; " + delete
    command = _collect_command(cfg, task, more_attempts)
    fewer = (f"put back the demo file the run was started with (data.demos_per_task is {want} in its config.yaml)"
             if resumed else f"set data.demos_per_task={have} to train on the {have} there")
    return (f"{path} holds {have} demo{'s' if have != 1 else ''} of {task.stem}, but data.demos_per_task is {want} "
            f"({why}). Either collect {want}: {command} ({delete}); or {fewer}")


def _init_states(cfg, tasks: list[Path], envs, names: list[str], run_dir: Path, log) -> list[np.ndarray]:
    """The fixed initial states of every task, kept in RUN_DIR/init_states.npz (a resumed run reuses them).

    A task's shipped states (`<task>.init.npz` beside its task file) are used when they are current and
    hold enough states; otherwise `eval.init_states` states are sampled with the seed
    `task_init_seed(task name, eval.init_seed)`, which does not depend on where the task sits in the run, and
    checked (the init predicates hold, the goal does not).

    Raises:
        LiberoError: a sampled start fails that check (naming the task file and the state).
    """
    from libero_ll.envs.init_states import has_init_states, load_init_states, sample_init_states, task_init_seed

    path = run_dir / "init_states.npz"
    if path.exists():
        try:
            with np.load(path) as f:
                return [np.asarray(f[n]) for n in names]
        except Exception as e:  # noqa: BLE001 - a truncated or overwritten file fails in many ways
            raise LiberoError(
                f"{path} is damaged and cannot be read ({type(e).__name__}: {first_line(e)}); delete it and "
                f"resume again: the run makes it again the way it first did (from the initial states kept with "
                f"its task files in {run_dir / 'tasks'}, else sampled with eval.init_seed and the task's name; sampled "
                f"states of a run begun before they were seeded by the task's name come out different)"
            ) from None
    n = int(cfg.eval.init_states)
    states = []
    for j, (task, name) in enumerate(zip(tasks, names)):
        if has_init_states(task):
            # No environment is built for stored states (building one takes a second or two, in a process that
            # may never step it): their file's fingerprint vouches for the task and its models, and a state of
            # another size would be refused by the first rollout's reset (`LiberoEnv.reset_to`).
            try:
                states.append(load_init_states(task, n))
                continue
            except LiberoError as e:
                log(f"not using the stored initial states: {e}")
        env = envs[j]
        # Seeded by the task's name, not its place in the run: the same task starts from the same states under
        # any task order or subset. Runs begun before sampled task k with eval.init_seed + k; they keep those
        # (a resumed run reads its init_states.npz above).
        seed = task_init_seed(name, int(cfg.eval.init_seed))
        try:
            states.append(sample_init_states(env, n, seed))
        except LiberoError as e:
            raise LiberoError(
                f"{e}; the run samples the fixed initial states of a task without current stored ones (seed from "
                f"eval.init_seed {int(cfg.eval.init_seed)} and the task's name)"
            ) from None
    tmp = run_dir / ".init_states.npz.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **{name: st for name, st in zip(names, states)})
    os.replace(tmp, path)
    return states


def write_json(path: Path, obj) -> None:
    """Write `obj` as JSON to `path` atomically (a temporary file renamed into place)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


# Whole-number settings outside the train section (TrainConfig checks its own): key, least value, and what
# the value must be, as the error says it. A seed is at most MAX_SEED.
COUNTS = (
    ("seed", 0, "a whole number from 0 to 2**63-1"),
    ("num_threads", 1, "1 or more"),
    ("data.demos_per_task", 1, "1 or more"),
    ("data.collect_seed", 0, "a whole number from 0 to 2**63-1"),
    ("data.expert_max_steps", 1, "1 or more"),
    ("data.collect_workers", 0, "0 (one per CPU core) or more"),
    ("data.corrections_per_demo", 0, "0 (none) or more"),
    ("env.image_size", 1, "a positive number of pixels"),
    ("eval.every", 1, "1 or more (epochs between evaluations)"),
    ("eval.rollouts", 1, "1 or more"),
    ("eval.max_steps", 1, "1 or more"),
    ("eval.init_states", 1, "1 or more"),
    ("eval.init_seed", 0, "a whole number from 0 to 2**63-1"),
    ("eval.workers", 0, "0 (one per CPU core) or more"),
    ("eval.envs_per_worker", 1, "1 or more"),
    ("eval.still_steps", 0, "0 (off) or a number of steps"),
)


# Settings that take one of a few words: key, the words (checked with COUNTS, before any work).
CHOICES = (("env.robot_mesh", ROBOT_MESHES),)


def choice_problem(key: str, value) -> str | None:
    """What is wrong with `value` of the CHOICES setting `key`, or None when it is one of its words."""
    words = dict(CHOICES)[key]
    if isinstance(value, str) and value in words:
        return None
    return f"{key} must be one of {', '.join(words)}, got {value!r}"


def is_count(key: str, value, least: int) -> bool:
    """Whether `value` is a whole number >= least, and for a seed at most MAX_SEED (see COUNTS)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        return False
    return not key.endswith("seed") or value <= MAX_SEED


def check_components(cfg, check_init: bool = True, check_suite: bool = True, check_name: bool = True) -> None:
    """Fail before any work is done when the policy, its keys (an image key that is not a camera of the demo
    files among them), the learner or its options are unknown, when a setting is out of its range (a batch of
    0, a negative seed), when `device` is not one a run can use, when
    the suite or its tasks (checked unless `check_suite` is False: a run continued from its own task files) are
    unknown, when `init_from` (checked unless `check_init` is False) names nothing, or when `name` (checked
    unless `check_name` is False: a run continued, whose folder exists) would put the run's folder outside
    output_dir."""
    from omegaconf import OmegaConf

    import libero_ll.learners  # noqa: F401  (registration)
    import libero_ll.policies  # noqa: F401
    from libero_ll.learners.registry import LEARNERS
    from libero_ll.policies.base import coerce_config
    from libero_ll.policies.registry import POLICIES

    from libero_ll.experiments.config import learner_options, policy_config

    name = str(cfg.name)
    if check_name and holds_a_path(name):
        raise LiberoError(
            f"name {name!r}: a run's name begins the name of its folder under output_dir, so it cannot hold a "
            f"path separator or '..'; to put runs elsewhere, set output_dir"
        )
    check_device_name(cfg.device)
    policy_cls = POLICIES.get(str(cfg.policy.name))
    try:
        _check_image_keys(coerce_config(policy_cls.config_class, policy_config(cfg)))
    except LiberoError as e:
        said = str(e).removeprefix(f"{cfg.policy.name}: ")  # a policy's own checks name it already
        raise LiberoError(
            f"policy {cfg.policy.name}: {said} (the keys under policy.cfg go to whichever policy is chosen; those "
            f"under policy.by_name.NAME only to that one)"
        ) from None
    for name, keys in OmegaConf.to_container(cfg.policy.by_name, resolve=True).items():
        try:
            _check_image_keys(coerce_config(POLICIES.get(str(name)).config_class, keys or {}))
        except LiberoError as e:
            raise LiberoError(f"policy.by_name.{name}: {e}") from None

    LEARNERS.get(str(cfg.learner.name)).check_options(learner_options(cfg))
    for name, opts in OmegaConf.to_container(cfg.learner.by_name, resolve=True).items():
        try:
            LEARNERS.get(str(name)).check_options(opts or {})
        except LiberoError as e:
            raise LiberoError(f"learner.by_name.{name}: {e}") from None
    from libero_ll.learners.base import TrainConfig

    TrainConfig(**OmegaConf.to_container(cfg.train, resolve=True))  # its own range checks
    for key, least, meaning in COUNTS:
        value = OmegaConf.select(cfg, key)
        if not is_count(key, value, least):
            raise LiberoError(f"{key} must be {meaning}, got {value!r}")
    for key, _ in CHOICES:
        problem = choice_problem(key, OmegaConf.select(cfg, key))
        if problem:
            raise LiberoError(problem)
    if cfg.tasks is not None and len(cfg.tasks) == 0:
        raise LiberoError("tasks is an empty list: name at least one task, or leave tasks out for the whole suite")
    if check_suite:
        suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)
    for key in ("data.dir", "output_dir"):
        path = Path(str(OmegaConf.select(cfg, key)))
        blocking = file_in_the_way(path)
        if blocking is not None:
            raise LiberoError(f"{key} {path}: {blocking} is a file, not a folder")
    if check_init and cfg.init_from:
        resolve_init_from(str(cfg.init_from))
    from libero_ll.policies.language import check_encoder

    try:
        check_encoder(str(cfg.language_encoder))
    except LiberoError as e:
        raise LiberoError(f"language_encoder: {e}") from None


def _check_image_keys(policy_cfg) -> None:
    """Check that a policy's `image_keys` are cameras that a demo file holds and a run's scenes render
    (`libero_ll.data.hdf5.IMAGE_KEYS`): another name would be found missing only once demos are collected."""
    from libero_ll.data.hdf5 import IMAGE_KEYS

    for key in getattr(policy_cfg, "image_keys", None) or []:
        if key not in IMAGE_KEYS:
            raise LiberoError(f"image_keys names {key!r}, which is not a camera of the demo files and scenes "
                              f"(they have {', '.join(IMAGE_KEYS)})")


def resolve_workers(workers: int, jobs: int) -> int:
    """Worker processes to use: ``workers``, or for 0 one per CPU core this process may use; never more
    than ``jobs`` (the rollouts or demos to make) and never fewer than 1."""
    if workers == 0:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(workers, jobs))


DEVICES = "auto (a CUDA GPU when there is one, else the CPU), cpu, cuda or cuda:N (the CUDA GPU of index N)"


def check_device_name(name) -> None:
    """Check that `device` names a device a run can train on (DEVICES); whether this machine has it is for
    `_device` (a sweep's runs may go to other machines).

    Raises:
        LiberoError: naming the value and what is accepted.
    """
    import re

    if not isinstance(name, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", name):
        raise LiberoError(f"device must be {DEVICES}, got {name!r}")


def _device(name: str) -> torch.device:
    """The torch device a run trains on, checked to be there on this machine."""
    check_device_name(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise LiberoError(f"device={name} but no CUDA GPU is available here; use device=auto or device=cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= count:
            there = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise LiberoError(f"device={name} but this machine has {count} CUDA GPU{'s' if count > 1 else ''} "
                              f"({there}); use one of those, cuda or device=auto")
    return torch.device(name)


