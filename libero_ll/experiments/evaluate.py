"""Evaluating a saved policy of a run: more rollouts, fresh initial states, videos, after the run is over.

A run keeps the policy of each stage as it was when the stage ended (``checkpoints/taskNN_best.pt``: the
weights of the stage's best evaluation) and the policy after the last stage (``final_policy.pt``).
`evaluate_run` rolls one of them out on some of the run's tasks with the run's own settings (environment,
language encoder, step cap), from the run's fixed initial states or from new ones, and says how often each
task succeeded with a 95% interval. A run's own evaluations use 10 to 50 rollouts from the states that also
picked the kept epoch, so its figures carry both sampling noise and that selection; more rollouts from
new states measure the kept policy without either.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from libero_ll.errors import LiberoError
from libero_ll.experiments.checkpoint import FINAL_POLICY, derive_seed, isolated_rng, load_checkpoint
from libero_ll.experiments.lifelong import (
    ALL_TASKS,
    STATE_FILE,
    _device,
    all_tasks_at_once,
    env_config,
    resolve_workers,
    suite_tasks,
    write_json,
)
from libero_ll.evaluation.runs import check_run_dir
from libero_ll.experiments.run_files import run_task_files
from libero_ll.processes import not_in_a_worker_starting

# How an evaluation may act: sampled from the action head, or its most likely component's mean.
ACTIONS = ("sampled", "mode")
# The seed parts of an evaluation's random streams (sampled actions), after the run's seed.
EVALUATE_STREAM = 777_777
# Added to the run's eval.init_seed for new initial states when no seed is given: never the run's own.
NEW_STATES_SEED_OFFSET = 1_000


@dataclass
class TaskResult:
    """One task's rollouts.

    Attributes:
        task: the task's name (its file's stem).
        number: the task's position in the run, from 1.
        successes: rollouts whose goal held before the cap.
        rollouts: rollouts run.
        low, high: the Wilson 95% interval of the success rate.
        mean_steps_to_success: mean policy steps of the successful rollouts (None without any).
        outcomes: each rollout's success, in order of its number.
    """

    task: str
    number: int
    successes: int
    rollouts: int
    low: float
    high: float
    mean_steps_to_success: float | None
    outcomes: list[bool] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.successes / self.rollouts if self.rollouts else float("nan")


@dataclass
class Evaluation:
    """What `evaluate_run` measured, and how."""

    run_dir: str
    checkpoint: str
    init_states: str
    max_steps: int
    seconds: float
    tasks: list[TaskResult]
    videos: str | None = None
    # "sampled" (drawn from the action head) or "mode" (the mean of its most likely component).
    actions: str = "sampled"
    # Stopped (Ctrl-C, SIGTERM) before every task asked for was evaluated: `tasks` holds those that were.
    interrupted: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        for t, r in zip(d["tasks"], self.tasks):
            t["rate"] = r.rate
        return d


class EvaluationInterrupted(KeyboardInterrupt):
    """An evaluation stopped by Ctrl-C or SIGTERM after some tasks were evaluated: `evaluation` holds them
    (interrupted=True) and `stop` the interrupt itself (a SIGTERM's `Terminated`), which the caller raises again
    once it has saved them. A KeyboardInterrupt, so that code which does not look for it still stops."""

    def __init__(self, evaluation: Evaluation, stop: KeyboardInterrupt):
        super().__init__("interrupted")
        self.evaluation = evaluation
        self.stop = stop


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate (95% for z = 1.96); (0, 1) for n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _weights_file(run_dir: Path, checkpoint: str, names: list[str]) -> tuple[Path, list[int] | None]:
    """The file of `checkpoint` ("final", "latest", a task number from 1, or "N:last") and the tasks its stage
    learned (None for the final policy and for "latest", the run's resume state)."""
    if checkpoint.endswith(":last"):
        return _last_weights_file(run_dir, checkpoint, names)
    if checkpoint == "latest":
        path = run_dir / STATE_FILE
        if not path.exists():
            raise LiberoError(f"{run_dir} has no {STATE_FILE}: the run has not saved an epoch yet")
        return path, None
    if checkpoint == "final":
        path = run_dir / FINAL_POLICY
        if not path.exists():
            kept = sorted(p.name for p in (run_dir / "checkpoints").glob("*_best.pt"))
            hint = f"; stages kept so far: {', '.join(kept)} (--checkpoint N)" if kept else ""
            raise LiberoError(f"{run_dir} has no {FINAL_POLICY}: the run has not finished{hint}; "
                              f"--checkpoint latest evaluates its last saved epoch")
        return path, None
    try:
        number = int(checkpoint)
    except ValueError:
        raise LiberoError(
            f"checkpoint {checkpoint!r}: give 'final', 'latest', a task number from 1 to {len(names)} or such a "
            f"number followed by ':last' (e.g. '1:last')"
        ) from None
    if not 1 <= number <= len(names):
        raise LiberoError(f"checkpoint {number}: the run has tasks 1 to {len(names)}")
    own = run_dir / "checkpoints" / f"task{number - 1:02d}_best.pt"
    if own.exists():  # a stage of one task (the file is read once, when its weights are loaded)
        return own, [number - 1]
    shared = run_dir / "checkpoints" / "all_tasks_best.pt"  # a stage of several tasks (MTL) names them
    if shared.exists():
        ckpt = load_checkpoint(shared)
        stage = [int(j) for j in (ckpt.get("tasks") if isinstance(ckpt, dict) else None) or []]
        if number - 1 in stage:
            return shared, stage
    kept = sorted(p.name for p in (run_dir / "checkpoints").glob("*_best.pt"))
    raise LiberoError(
        f"{run_dir}: no kept policy of task {number} ({names[number - 1]}) yet; "
        f"kept: {', '.join(kept) if kept else 'none'}"
    )


def _last_weights_file(run_dir: Path, checkpoint: str, names: list[str]) -> tuple[Path, list[int] | None]:
    """The weights that the stage of task N ended its training with ("N:last"): checkpoints/taskNN_last.pt, saved
    when the stage kept an earlier evaluation's weights; the kept file itself when the stage kept its last epoch."""
    number_text = checkpoint[: -len(":last")]
    if number_text in ("final", "latest"):
        raise LiberoError(f"checkpoint {checkpoint!r}: ':last' follows a task number from 1 to {len(names)} "
                          f"(e.g. '1:last')")
    kept_path, stage = _weights_file(run_dir, number_text, names)
    prefix = kept_path.name[: -len("_best.pt")]
    last = kept_path.with_name(f"{prefix}_last.pt")
    if last.exists():
        return last, stage
    kept = load_checkpoint(kept_path)
    kept_epoch = kept.get("epoch") if isinstance(kept, dict) else None
    from libero_ll.experiments.config import load_config

    epochs = int(load_config(run_dir / "config.yaml", run=True).train.epochs)
    if kept_epoch is not None and int(kept_epoch) == epochs:
        return kept_path, stage  # the stage kept the weights its training ended with
    raise LiberoError(
        f"{run_dir}: the stage of task {number_text} ({names[stage[0]]}) kept the weights of epoch {kept_epoch} "
        f"(checkpoints/{kept_path.name}), and the run holds no checkpoints/{last.name} with those training ended "
        f"with (epoch {epochs}): runs made before libero_ll saved them do not have it"
    )


def _task_numbers(spec: list[str] | None, names: list[str], default: list[int]) -> list[int]:
    """Task positions (from 0) named by numbers from 1 or by names; `default` when `spec` is empty."""
    if not spec:
        return default
    out = []
    for item in spec:
        if item in names:
            out.append(names.index(item))
            continue
        try:
            number = int(item)
        except ValueError:
            raise LiberoError(
                f"task {item!r} is not one of the run's tasks: {', '.join(f'{k + 1} {n}' for k, n in enumerate(names))}"
            ) from None
        if not 1 <= number <= len(names):
            raise LiberoError(f"task {number}: the run has tasks 1 to {len(names)}")
        out.append(number - 1)
    return list(dict.fromkeys(out))


def _changed_since(kept: list[Path], cfg) -> list[str]:
    """Tasks whose file in the run's suite now differs from the run's own copy (none when the suite is not
    found from here, as for a run moved to another machine)."""
    try:
        current = suite_tasks(cfg.suite, [t.stem for t in kept])
    except LiberoError:
        return []
    return [k.stem for k, c in zip(kept, current) if k.read_bytes() != c.read_bytes()]


@dataclass
class _Plan:
    """What an evaluation of a run rolls out, read from the run directory before any work."""

    cfg: object
    kept: list[Path]
    task_files: list[Path]
    names: list[str]
    weights: Path
    stage: list[int] | None
    saved: dict | None
    chosen: list[int]
    checkpoint: str


def _plan(run_dir: Path, checkpoint: str, tasks: list[str] | None) -> _Plan:
    """The run's config and task files, the weights file of `checkpoint` and the tasks to evaluate."""
    from libero_ll.evaluation.success import SuccessTensor
    from libero_ll.experiments.config import load_config

    run_dir = check_run_dir(run_dir)
    cfg = load_config(run_dir / "config.yaml", run=True)
    # The task files the run was trained on (its own copies), else those its config names (older runs).
    kept = run_task_files(run_dir)
    task_files = kept or suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)
    names = [t.stem for t in task_files]
    checkpoint = str(checkpoint)
    weights, stage = _weights_file(run_dir, checkpoint, names)
    # The resume state, read once: the latest weights, the tasks begun, PackNet's per-task networks.
    saved = load_checkpoint(weights) if checkpoint == "latest" else None
    if saved is not None:
        try:
            curves = SuccessTensor.from_dict(saved["tensor"]).curves
        except (KeyError, ValueError, TypeError) as e:
            raise LiberoError(f"{weights}: its record of success cannot be read ({e})") from None
        default = [j for j, curve in enumerate(curves) if curve] or list(range(len(names)))
    else:
        default = stage if stage is not None else list(range(len(names)))
    chosen = _task_numbers(tasks, names, default)
    return _Plan(cfg, kept, task_files, names, weights, stage, saved, chosen, checkpoint)


# A rollout video as `RolloutVideos` names it, finished or left half-written by an interrupted evaluation.
_ROLLOUT_VIDEO = re.compile(r"(rollout\d{3,}_(success|failure)|\.rollout\d{3,}\.tmp)\.mp4")


def _old_videos(video_dir: str | Path, task_names: list[str]) -> list[Path]:
    """The rollout videos that `video_dir` already holds of these tasks (video_dir/<task>/rolloutNNN_*.mp4)."""
    out = []
    for name in task_names:
        folder = Path(video_dir) / name
        if folder.is_dir():
            out += sorted(p for p in folder.iterdir() if _ROLLOUT_VIDEO.fullmatch(p.name) and p.is_file())
    return out


def _videos_in_the_way(video_dir: str | Path, old: list[Path]) -> str:
    tasks = sorted({p.parent.name for p in old})
    return (f"video folder {video_dir} already holds {len(old)} rollout video{'s' if len(old) > 1 else ''} of "
            f"{', '.join(tasks)} from an earlier evaluation (e.g. {old[0]}); give another folder, or overwrite "
            f"(--overwrite) to remove the earlier videos of {'these tasks' if len(tasks) > 1 else 'this task'} first")


def check_evaluation(run_dir: str | Path, checkpoint: str = "final", tasks: list[str] | None = None,
                     new_states: int | None = None, video_dir: str | Path | None = None,
                     overwrite: bool = False) -> None:
    """Refuse, before any rollout, what `evaluate_run` with these arguments would refuse of this run: a folder
    that is not a run, a checkpoint or task it does not have, missing or damaged fixed initial states (without
    `new_states`), a video folder that already holds rollout videos of the tasks evaluated (unless
    `overwrite`). `evaluate_run` checks the same of its own run; a caller that evaluates several runs one after
    another calls this for each first, so that the last run's typo does not come after the others' rollouts."""
    plan = _plan(Path(run_dir), str(checkpoint), tasks)
    if new_states is None:
        _fixed_states(Path(run_dir) / "init_states.npz", plan.names, plan.chosen)
    if video_dir is not None:
        old = _old_videos(video_dir, [plan.names[j] for j in plan.chosen])
        if old and not overwrite:
            raise LiberoError(_videos_in_the_way(video_dir, old))


def _fixed_states(path: Path, names: list[str], chosen: list[int]) -> dict[int, np.ndarray]:
    """The run's fixed initial states of the tasks `chosen` (init_states.npz: an array per task name)."""
    if not path.exists():
        raise LiberoError(f"{path.parent} has no init_states.npz; give new_states (--new-states N) to sample "
                          "initial states")
    try:
        with np.load(path) as f:
            missing = [names[j] for j in chosen if names[j] not in f.files]
            if missing:
                raise LiberoError(f"{path} holds no initial states of {', '.join(missing)}; give new_states "
                                  "(--new-states N) to sample initial states")
            states = {j: np.asarray(f[names[j]]) for j in chosen}
    except LiberoError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged archive fails in many ways (zip, pickle, shape)
        raise LiberoError(f"{path}: damaged, not readable as the run's initial states ({type(e).__name__}); give "
                          "new_states (--new-states N) to start from states sampled anew instead") from None
    empty = [names[j] for j, s in states.items() if s.ndim < 2 or len(s) == 0]
    if empty:
        raise LiberoError(f"{path}: damaged: no initial state of {', '.join(empty)}")
    return states


def _recorded_config(ckpt) -> dict:
    """The config that a final or stage checkpoint recorded when it was saved ({} when it holds none)."""
    config = ckpt.get("config") if isinstance(ckpt, dict) else None
    if not isinstance(config, dict):
        return {}
    return {k: v for k, v in config.items() if k in ("learner", "policy", "env") and isinstance(v, dict)}


def _policy_changes(trained: dict, cfg) -> str:
    """The policy settings of the run's config.yaml that differ from those recorded in its checkpoint: the
    chosen policy's keys as the run builds it (`policy.by_name[name]` updated with `policy.cfg`), each named
    where config.yaml sets it now."""
    from omegaconf import OmegaConf

    from libero_ll.evaluation.runs import chosen_settings

    then = trained.get("policy")
    if not then:
        return ""
    now = OmegaConf.to_container(cfg.policy, resolve=True)
    if then.get("name") != now.get("name"):
        return f"policy.name {now.get('name')} (trained: {then.get('name')})"

    was, is_, own = chosen_settings(then, "cfg"), chosen_settings(now, "cfg"), now.get("cfg") or {}
    out = []
    for key in sorted(set(was) | set(is_)):
        a, b = was.get(key), is_.get(key)
        if a != b:
            where = f"policy.cfg.{key}" if key in own else f"policy.by_name.{now.get('name')}.{key}"
            out.append(f"{where} {b} (trained: {a})")
    return ", ".join(out)


def _learner_mismatch(path: Path, run_dir: Path, learner: str, e: Exception) -> LiberoError:
    what = f"no {e.args[0]!r} entry" if isinstance(e, KeyError) and e.args else type(e).__name__
    return LiberoError(
        f"{path}: the learner state saved by the run does not fit learner {learner}, which "
        f"{run_dir / 'config.yaml'} names ({what}): the run's saved policy does not match its config's learner "
        f"(was learner.name edited after the run?)"
    )


def evaluate_run(
    run_dir: str | Path,
    checkpoint: str = "final",
    tasks: list[str] | None = None,
    rollouts: int | None = None,
    new_states: int | None = None,
    init_seed: int | None = None,
    max_steps: int | None = None,
    workers: int | None = None,
    video_dir: str | Path | None = None,
    recorder=None,
    log: Callable[[str], None] = print,
    actions: str | None = None,
    overwrite: bool = False,
) -> Evaluation:
    """Roll out a run's saved policy on its tasks.

    Args:
        run_dir: a run directory (its config.yaml, init_states.npz and checkpoints).
        checkpoint: "final" (the policy after the last stage, with the learner's per-task networks for
            PackNet), a task number from 1 (the policy kept when that task's stage ended), "N:last" (the weights
            that stage's training ended with, which it saves when it keeps an earlier epoch's) or "latest" (the
            weights of the run's last saved epoch, from its resume state, as its evaluations see them: the
            moving average with train.ema_decay; a run stopped in mid-stage can be evaluated so).
        tasks: task numbers from 1 or task names; default every task for the final policy, the stage's
            own tasks for a stage's policy, the tasks the run has begun for "latest".
        rollouts: rollouts per task; default the run's eval.rollouts, or `new_states` when that is given.
        new_states: when given, start the rollouts from this many initial states sampled anew (seed
            `init_seed`) and checked (the task's init predicates hold, its goal does not) instead of the run's
            own; rollout i starts from state i % M either way.
        init_seed: the seed of the new states, with each task's name (`task_init_seed`: a task gets the same
            states whatever its number in the run); default the run's eval.init_seed + 1000.
        max_steps: episode cap in policy steps; default the run's eval.max_steps.
        workers: evaluation processes (0: one per core); default the run's eval.workers.
        video_dir: when given, each rollout's camera images go to an MP4 under video_dir/<task>/. A task folder
            there that already holds rollout videos (of an earlier evaluation) is refused unless `overwrite`.
        recorder: instead of `video_dir`, any rollout recorder (``frame(task, i, obs)`` and
            ``end(task, i, success)``, task numbers from 0; see `libero_ll.evaluation.video`).
        log: receives progress lines, one per task as soon as it is done. With several workers and one policy
            for every task (all learners but PackNet's final policy), the tasks' rollouts are in flight
            together, so tasks may be done out of order; they run one after another otherwise.
        actions: "sampled" (drawn from the policy's action head, the paper's protocol) or "mode" (the mean of
            its most likely component); default the run's own (`policy.cfg.deterministic_eval`).
        overwrite: remove the rollout videos of the evaluated tasks already in `video_dir` (all of them, so
            that no earlier rollout's file is left beside the new ones) just before the rollouts start.

    Raises:
        LiberoError: what is wrong with the run directory or the arguments, before any rollout.
        EvaluationInterrupted: Ctrl-C or SIGTERM after at least one task was evaluated (a KeyboardInterrupt
            holding those tasks' results); before that, the interrupt itself.
    """
    from libero_ll.envs.init_states import sample_init_states, task_init_seed
    from libero_ll.envs.pool import EnvPool
    from libero_ll.evaluation.rollout import run_rollouts

    not_in_a_worker_starting()
    t_start = time.time()
    run_dir = Path(run_dir)
    if actions is not None and actions not in ACTIONS:
        raise LiberoError(f"actions must be one of {', '.join(ACTIONS)}, got {actions!r}")
    if init_seed is not None and int(init_seed) < 0:
        raise LiberoError(f"init_seed must be 0 or more, got {init_seed}")
    plan = _plan(run_dir, checkpoint, tasks)
    cfg, task_files, names, weights, chosen = plan.cfg, plan.task_files, plan.names, plan.weights, plan.chosen
    changed = _changed_since(plan.kept, cfg) if plan.kept else []
    for value, what in ((rollouts, "rollouts"), (new_states, "new_states"), (max_steps, "max_steps")):
        if value is not None and int(value) < 1:
            raise LiberoError(f"{what} must be 1 or more, got {value}")
    if workers is not None and int(workers) < 0:
        raise LiberoError(f"workers must be 0 (one per CPU core) or more, got {workers}")
    n_rollouts = int(rollouts if rollouts is not None else (new_states or cfg.eval.rollouts))
    cap = int(max_steps if max_steps is not None else cfg.eval.max_steps)
    if video_dir is not None and recorder is not None:
        raise LiberoError("give video_dir or a recorder, not both")
    old_videos = _old_videos(video_dir, [names[j] for j in chosen]) if video_dir is not None else []
    if old_videos and not overwrite:
        raise LiberoError(_videos_in_the_way(video_dir, old_videos))
    states = _fixed_states(run_dir / "init_states.npz", names, chosen) if new_states is None else {}

    env_cfg = env_config(cfg)
    env_cfg.max_steps = cap
    loaded = _load(plan, run_dir, actions)
    policy, learner, embs = loaded.policy, loaded.learner, loaded.task_embs
    acting = "mode" if policy.cfg.deterministic_eval else "sampled"

    envs = EnvPool(task_files, env_cfg)  # without workers: each task's environment, built when first needed
    evaluator, videos = None, None
    try:
        if new_states is None:
            where = f"the run's {len(next(iter(states.values())))} fixed initial states"
        else:
            seed = int(init_seed) if init_seed is not None else int(cfg.eval.init_seed) + NEW_STATES_SEED_OFFSET
            states = {}
            for j in chosen:
                # Seeded by the task's name, not its number: a task gets the same new states in any run.
                try:
                    states[j] = sample_init_states(envs[j], int(new_states), task_init_seed(names[j], seed))
                except LiberoError as e:
                    raise LiberoError(f"{e}; new initial states are sampled with seed {seed} and the task's "
                                      "name") from None
            where = f"{new_states} new initial states (seed {seed} with each task's name)"
        n_workers = resolve_workers(int(workers if workers is not None else cfg.eval.workers), n_rollouts)
        if video_dir is not None:
            from libero_ll.evaluation.video import RolloutVideos

            for path in old_videos:  # only with overwrite: an earlier evaluation's videos of these tasks
                path.unlink(missing_ok=True)
            recorder = videos = RolloutVideos(video_dir, names, policy.image_keys)
        if n_workers > 1:
            from libero_ll.evaluation.vector_eval import ParallelEvaluator

            evaluator = ParallelEvaluator(task_files, env_cfg, n_workers, int(cfg.eval.envs_per_worker))
        log(f"evaluating {weights.relative_to(run_dir)} of {run_dir}: {n_rollouts} rollouts per task from {where}, "
            f"at most {cap} steps, {n_workers} worker{'s' if n_workers > 1 else ''}, "
            f"{'the most likely' if acting == 'mode' else 'sampled'} actions")
        for name in changed:
            log(f"note: the suite's task file {name}.bddl has changed since the run; the run's own copy is used")
        threads = torch.get_num_threads()
        if evaluator is not None:
            torch.set_num_threads(1)  # the workers need the cores
        results: list[TaskResult] = []

        def keep(j: int, done: list, when: str) -> None:
            wins = [r for r in done if r.success]
            low, high = wilson_interval(len(wins), len(done))
            results.append(TaskResult(
                task=names[j], number=j + 1, successes=len(wins), rollouts=len(done), low=low, high=high,
                mean_steps_to_success=float(np.mean([r.steps for r in wins])) if wins else None,
                outcomes=[bool(r.success) for r in done],
            ))
            log(f"task {j + 1} {names[j]}: {len(wins)}/{len(done)} = {len(wins) / len(done):.2f} "
                f"(95% {low:.2f}-{high:.2f}) {when}")

        # Rollout i of task j draws its sampled actions from its own stream (seed `streams[j]`, i): the same
        # with any number of workers, with --video, and task by task or with the other tasks.
        streams = {j: derive_seed(int(cfg.seed), EVALUATE_STREAM, j) for j in chosen}
        try:
            if all_tasks_at_once(evaluator, learner, chosen):
                # Every task's rollouts in one queue: no worker waits for another at the end of each task,
                # and a worker keeps to the tasks whose environments it has built. Each task is reported
                # as soon as its last rollout ends.
                t0 = time.time()
                jobs = [(j, states[j], embs[j], n_rollouts, streams[j]) for j in chosen]
                everything = derive_seed(int(cfg.seed), EVALUATE_STREAM, ALL_TASKS)
                with learner.eval_context(chosen[0]), isolated_rng(everything), torch.no_grad():
                    policy.eval()
                    evaluator.rollouts_many(
                        policy, jobs, cap, int(cfg.eval.still_steps), recorder=recorder,
                        on_done=lambda k, done: keep(chosen[k], done, f"after {time.time() - t0:.0f}s"),
                    )
            else:
                for j in chosen:
                    t0 = time.time()
                    with learner.eval_context(j), isolated_rng(streams[j]), torch.no_grad():
                        policy.eval()
                        args = (states[j], embs[j], n_rollouts, cap, int(cfg.eval.still_steps))
                        if evaluator is not None:
                            done = evaluator.rollouts(policy, j, *args, recorder=recorder, seed=streams[j])
                        else:
                            done = run_rollouts(policy, envs[j], *args, recorder=recorder, task=j,
                                                seed=streams[j])
                    keep(j, done, f"in {time.time() - t0:.0f}s")
            results.sort(key=lambda r: r.number)
        except KeyboardInterrupt as stop:
            if not results:
                raise
            results.sort(key=lambda r: r.number)
            # The tasks evaluated so far are not lost: the caller saves them, marked, then stops.
            raise EvaluationInterrupted(Evaluation(
                run_dir=str(run_dir), checkpoint=str(weights.relative_to(run_dir)), init_states=where,
                max_steps=cap, seconds=time.time() - t_start, tasks=results,
                videos=str(video_dir) if video_dir is not None else None, actions=acting, interrupted=True,
            ), stop) from None
        finally:
            torch.set_num_threads(threads)
        return Evaluation(
            run_dir=str(run_dir), checkpoint=str(weights.relative_to(run_dir)), init_states=where, max_steps=cap,
            seconds=time.time() - t_start, tasks=results, videos=str(video_dir) if video_dir is not None else None,
            actions=acting,
        )
    finally:
        if videos is not None:
            videos.close()
        if evaluator is not None:
            evaluator.close()
        envs.close()


@dataclass
class RunPolicy:
    """A run's saved policy ready to act, from `load_run_policy`.

    Attributes:
        policy: the BasePolicy with the checkpoint's weights, in evaluation mode, on the GPU when there is one.
        learner: the run's learner around it: `learner.eval_context(j)` makes the policy task j's (PackNet's
            masks; nothing for the other built-in learners). Act inside it.
        config: the run's config.
        task_files: the run's task files (its own copies), in the run's order.
        names: their names.
        task_embs: (T, D) the tasks' instruction embeddings, as `policy.act` takes them.
        weights: the file the weights came from.
        run_dir: the run directory.
    """

    policy: object
    learner: object
    config: object
    task_files: list[Path]
    names: list[str]
    task_embs: np.ndarray
    weights: Path
    run_dir: Path

    def env_config(self):
        """The EnvConfig of the run's environments (image size, rendering, controller, episode cap)."""
        return env_config(self.config)

    def init_states(self, j: int) -> np.ndarray:
        """(M, S) the fixed initial states the run evaluated task j (from 0) from, for `LiberoEnv.reset_to`."""
        return _fixed_states(self.run_dir / "init_states.npz", self.names, [j])[j]


def load_run_policy(run_dir: str | Path, checkpoint: str = "final", actions: str | None = None) -> RunPolicy:
    """A run's saved policy, to roll out or study from Python as `evaluate_run` does.

    Args:
        run_dir: a run directory.
        checkpoint: "final", a task number from 1, "N:last" or "latest", as `evaluate_run` takes them.
        actions: "sampled", "mode", or None for the run's own (`policy.cfg.deterministic_eval`).

    Raises:
        LiberoError: what is wrong with the run directory, before anything is built.
    """
    run_dir = Path(run_dir)
    if actions is not None and actions not in ACTIONS:
        raise LiberoError(f"actions must be one of {', '.join(ACTIONS)}, got {actions!r}")
    return _load(_plan(run_dir, str(checkpoint), None), run_dir, actions)


def _load(plan: _Plan, run_dir: Path, actions: str | None) -> RunPolicy:
    """`load_run_policy` of an evaluation's plan."""
    from omegaconf import OmegaConf

    from libero_ll.data.hdf5 import LOWDIM_SIZES
    from libero_ll.experiments.checkpoint import load_policy_weights
    from libero_ll.experiments.config import learner_options, policy_config
    from libero_ll.learners import TrainConfig, make_learner
    from libero_ll.policies import make_policy
    from libero_ll.policies.language import encode_instructions

    cfg, task_files, names, weights, stage, saved, chosen = (
        plan.cfg, plan.task_files, plan.names, plan.weights, plan.stage, plan.saved, plan.chosen)
    checkpoint = plan.checkpoint
    ckpt = saved if saved is not None else load_checkpoint(weights)
    recorded = ckpt.get("config") if isinstance(ckpt, dict) and isinstance(ckpt.get("config"), dict) else {}
    encoder = recorded.get("language_encoder")
    if encoder is not None and str(encoder) != str(cfg.language_encoder):
        # The same width would load and roll out without a word, the policy conditioned on vectors it never saw.
        raise LiberoError(
            f"{run_dir / 'config.yaml'} sets language_encoder to {cfg.language_encoder!r}, but the run's saved policy "
            f"{weights} was trained with {encoder!r} (was config.yaml edited after the run?); set it back to "
            f"{encoder!r}"
        )
    embs = encode_instructions([_language(t) for t in task_files], str(cfg.language_encoder))
    shape_meta = {
        "image_shape": (int(cfg.env.image_size), int(cfg.env.image_size), 3),
        "lowdim": dict(LOWDIM_SIZES),
        "action_dim": 7,
        "task_emb_dim": int(embs.shape[1]),
    }
    keys = policy_config(cfg)
    if actions is not None:
        keys["deterministic_eval"] = actions == "mode"
    policy = make_policy(str(cfg.policy.name), keys, shape_meta)
    trained = _recorded_config(ckpt)
    learner_name = str(cfg.learner.name)
    if trained.get("learner", {}).get("name") not in (None, learner_name):
        raise LiberoError(
            f"{run_dir / 'config.yaml'} names learner {learner_name}, but the run's saved policy {weights} was "
            f"trained by learner {trained['learner']['name']}: the saved policy does not match its config's learner "
            f"(was config.yaml edited after the run?); set learner.name back to {trained['learner']['name']}"
        )
    if "env" in trained:
        # The scenes the policy saw (image size, robot meshes, ...): rolled out in others, it would be measured on
        # inputs it was not trained on, and say nothing of it.
        from libero_ll.experiments.config import first_difference

        # Only the keys both know: a key added to EnvConfig since the run was made is read at its default.
        now = OmegaConf.to_container(cfg.env, resolve=True)
        change = first_difference({k: v for k, v in trained["env"].items() if k in now},
                                  {k: v for k, v in now.items() if k in trained["env"]}, prefix="env.")
        if change is not None:
            key, was, now = change
            raise LiberoError(
                f"{run_dir / 'config.yaml'} sets {key} to {now!r}, but the run's saved policy {weights} was trained "
                f"with {key} {was!r} (was config.yaml edited after the run?); set it back to {was!r}"
            )
    try:
        load_policy_weights(policy, weights, ckpt, loading="checkpoint to evaluate")
    except LiberoError as e:
        changed_keys = _policy_changes(trained, cfg)
        if not changed_keys:
            raise
        raise LiberoError(f"{e}; {run_dir / 'config.yaml'} now differs from the policy settings the checkpoint was "
                          f"trained with: {changed_keys} (was config.yaml edited after the run?)") from None
    policy.to(_device("auto"))  # the GPU when there is one, whatever the run trained on
    train_cfg = TrainConfig(**OmegaConf.to_container(cfg.train, resolve=True))
    learner = make_learner(str(cfg.learner.name), policy, train_cfg, learner_options(cfg))
    if saved is not None:
        # What the run's own evaluations rolled out: the moving average, when the run kept one.
        try:
            learner.load_averaged_weights(saved.get("learner") or {})
        except LiberoError as e:
            raise LiberoError(f"{weights}: {e}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise _learner_mismatch(weights, run_dir, learner_name, e) from None
    if learner.per_task_networks and stage is not None and any(j not in stage for j in chosen):
        raise LiberoError(
            f"checkpoint {checkpoint}: {cfg.learner.name} makes each task a network of its own at the end of its "
            f"stage, so a stage's kept weights are no other task's network; evaluate the final policy instead"
        )
    if learner.per_task_networks and stage is None:
        if not (run_dir / STATE_FILE).exists():
            raise LiberoError(
                f"{run_dir} has no {STATE_FILE}, which holds what {cfg.learner.name} needs to make each task's "
                f"network from the final weights"
            )
        state_file = weights if saved is not None else run_dir / STATE_FILE
        state = saved if saved is not None else load_checkpoint(state_file)
        try:
            learner.load_eval_state(state["learner"])
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise _learner_mismatch(state_file, run_dir, learner_name, e) from None

    policy.eval()
    return RunPolicy(policy, learner, cfg, list(task_files), list(names), embs, weights, run_dir)


def _language(task_file: Path) -> str:
    """A task file's instruction, as the run embedded it."""
    from libero_ll.bddl.parser import parse_file

    return parse_file(task_file).language


def save_evaluation(evaluation: Evaluation, path: str | Path | None = None) -> Path:
    """Write `evaluation` as JSON (atomically): to `path`, or to RUN_DIR/evaluations/<checkpoint>_<time>.json.
    Nothing the run wrote is touched."""
    if path is None:
        stem = Path(evaluation.checkpoint).stem
        folder = Path(evaluation.run_dir) / "evaluations"
        folder.mkdir(exist_ok=True)
        path = folder / f"{stem}_{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{stem}_{datetime.now().strftime('%Y%m%d-%H%M%S')}-{n}.json"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, evaluation.to_dict())
    return path
