"""Generate demonstrations of tasks with the scripted expert and write them in the HDF5 layout.

Collection is resumable and parallel. Every demo index of a task is settled on its own: its episode
is fixed by (task, demo index, attempt, collection seed), so any number of worker processes gives
the same demos. Each settled index is written at once to its own small file in a folder beside the
target, ``<task>.hdf5.partial/`` (``demo_<i>.hdf5`` for a kept demo, ``demo_<i>.failed`` for an index
whose every attempt failed); when a task's indices are all settled, the demos are copied in index
order into ``<task>.hdf5`` (written atomically) and the folder is removed. Running the same
collection again after a crash or kill picks up the settled indices and runs only the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from libero_ll.data.hdf5 import Demo, DemoWriter, new_record, read_info, record_step
from libero_ll.envs.env import EnvConfig, LiberoEnv, load_task, say_task_warnings
from libero_ll.errors import LiberoError, SceneError
from libero_ll.experts.expert import EXPERT_VERSION, ScriptedExpert
from libero_ll.processes import WarningsOnce, not_in_a_worker_starting, pass_warnings, spawn_context

# The expert's episode cap, policy steps: the evaluation cap of the paper's protocol. Over 20 starts of each
# of the 130 benchmark tasks (docs/expert_success.md) the expert's longest successful episode took 586 steps
# (the microwave task of libero_10, 524 on average); a lower cap loses the long tasks' demos.
EXPERT_MAX_STEPS = 600
# Each demo index gets up to this many fresh starts (new seeds) before the collection gives up on it.
MAX_ATTEMPTS = 5
# Suffix of the folder beside a task's file that holds its settled demo indices until it is complete.
PARTIAL_SUFFIX = ".partial"
# In a partial folder: the process id of the collection holding it.
HOLDER_FILE = ".holder"
# Bumped when the per-demo files change, so that an old unfinished collection is not mixed in.
PARTIAL_FORMAT = 1


@dataclass
class CollectStats:
    """What one task's collection did.

    Attributes:
        task: task name (the task file's stem).
        kept: successful demos kept (written to the file, or, in a dry run, successful episodes).
        attempts: expert episodes tried.
        success_rate: kept / attempts.
        mean_length: mean length of the kept demos, policy steps.
        requested: demos asked for.
        failed: demo indices whose every attempt failed (the file holds fewer demos than requested).
        lengths: length of each kept demo, in file order, policy steps.
        path: the file written; None for a dry run, or when nothing was kept.
        resumed: demo indices taken from an earlier, interrupted run of the same collection.
        skipped: an existing complete file was kept (not overwritten); nothing was collected.
        error: why the task could not be collected (a SceneError: its layout cannot be placed, say), when
            `collect` was told to go on with the other tasks; no file is written for it then.
    """

    task: str
    kept: int
    attempts: int
    success_rate: float
    mean_length: float
    requested: int = 0
    failed: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    path: Path | None = None
    resumed: int = 0
    skipped: bool = False
    error: str | None = None


def demo_seed(task_name: str, index: int, attempt: int, seed: int) -> int:
    """A seed fixed by (task, demo index, attempt, collection seed): demos are reproducible one by one."""
    return zlib.crc32(f"{task_name}|{index}|{attempt}|{seed}".encode()) & 0x7FFFFFFF


def run_expert_episode(env: LiberoEnv, seed: int, max_steps: int, record: bool) -> tuple[bool, dict]:
    """Reset with `seed`, run the expert until the goal holds or `max_steps`; optionally record everything.

    The episode starts from ``env.reset_to`` of the sampled initial state, as a replay of the demo and
    an evaluation rollout do: ``reset_to`` clears what ``get_state`` does not hold (the gripper's
    command, the contact solver's warm start), so the recorded actions replay the states exactly.
    Actions are applied as they are stored (float32) for the same reason.

    Returns:
        (success, record) where record holds per-step lists (obs, actions, states, robot_states),
        the initial state ``init_state`` and the number of steps taken, ``steps``.
    """
    env.reset(seed=seed)
    init_state = env.get_state()
    obs = env.reset_to(init_state)
    if env.check_goal():
        # A demo would be one step of nothing; `libero-ll check --load` names the same task as broken.
        raise SceneError(f"the goal already holds when the scene is reset (seed {seed}): there is nothing to "
                          "demonstrate; `libero-ll check --load` on the task file says so too")
    expert = ScriptedExpert(env, np.random.default_rng(seed))
    rec = new_record(init_state)
    success = False
    for _ in range(max_steps):
        action = np.asarray(expert.act(), dtype=np.float32)
        if record:
            record_step(rec, env, obs, action)
        obs, _, info = env.step(action)
        if info["success"]:
            success = True
            break
    rec["steps"] = env.steps
    return success, rec


# ---------------------------------------------------------------------------------------- the work


@dataclass(frozen=True)
class _Job:
    """Everything a process needs to settle demo indices of one task (plain values: it is pickled)."""

    task_file: str
    name: str
    bddl_text: str
    problem_info: dict
    partial: str | None  # folder for the per-demo files; None: dry run, nothing written
    seed: int
    env_kwargs: dict
    max_steps: int
    max_attempts: int
    compression: str | None

    def header(self) -> dict:
        """The dataset-level attributes of the task's file (and of each per-demo file)."""
        return dict(
            env_name=self.name,
            problem_info=self.problem_info,
            bddl_file_name=self.task_file,
            bddl_file_content=self.bddl_text,
            env_args={"env_name": self.name, "env_kwargs": self.env_kwargs},
            generator=EXPERT_VERSION,
        )


class _Collector:
    """Settles demo indices, one at a time, keeping one environment built (the last task's)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._env: LiberoEnv | None = None
        self._model_xml = ""

    def _env_for(self, job: _Job) -> LiberoEnv:
        key = (job.task_file, json.dumps(job.env_kwargs, sort_keys=True))
        if key != self._key:
            self.close()
            self._env = LiberoEnv(job.task_file, EnvConfig(**job.env_kwargs))
            self._key = key
            self._model_xml = self._env.model_xml() if job.partial is not None else ""
        return self._env

    def run(self, job: _Job, index: int) -> dict:
        """Try demo `index` up to `job.max_attempts` times; write the outcome into the partial folder."""
        env = self._env_for(job)
        record = job.partial is not None
        for attempt in range(job.max_attempts):
            s = demo_seed(job.name, index, attempt, job.seed)
            success, rec = run_expert_episode(env, s, job.max_steps, record=record)
            if success:
                if record:
                    _write_demo(job, index, attempt + 1, s, rec, self._model_xml)
                return {"index": index, "kept": True, "attempts": attempt + 1, "length": rec["steps"]}
        if record:
            _atomic_write_text(_failed_path(job.partial, index), json.dumps({"attempts": job.max_attempts}))
        return {"index": index, "kept": False, "attempts": job.max_attempts, "length": 0}

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
        self._env = None
        self._key = None


def _demo_path(partial: str | Path, index: int) -> Path:
    return Path(partial) / f"demo_{index}.hdf5"


def _failed_path(partial: str | Path, index: int) -> Path:
    return Path(partial) / f"demo_{index}.failed"


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_demo(job: _Job, index: int, attempts: int, seed: int, rec: dict, model_xml: str) -> None:
    with DemoWriter(_demo_path(job.partial, index), **job.header(), compression=job.compression) as w:
        w.add(Demo.from_record(rec, model_xml, seed))
        w.set_attrs({"demo_index": index, "attempts": attempts})


# ------------------------------------------------------------------------------- worker processes

_WORKER: _Collector | None = None


def _worker_main(jobs, results) -> None:
    """A worker process: settle (job, index) units from `jobs` until None, answering on `results`."""
    import signal
    import traceback
    import warnings

    from libero_ll.bddl.validate import BddlWarning

    # Ctrl-C reaches the whole process group; the parent handles it and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent validated every task file and said its warnings once; each worker would say them again. Its
    # other warnings (placement's) go to the parent, which says each once however many workers meet it.
    warnings.simplefilter("ignore", BddlWarning)
    pass_warnings(results)
    collector = _Collector()
    try:
        while (unit := jobs.get()) is not None:
            job, index = unit
            try:
                out = collector.run(job, index)
            except LiberoError as e:
                out = {"index": index, "error": str(e), "user_error": True, "scene_error": isinstance(e, SceneError)}
            except Exception:
                out = {"index": index, "error": traceback.format_exc(), "user_error": False}
            out["task"] = job.name
            results.put(out)
    finally:
        collector.close()


def _run_in_workers(units: list[tuple[_Job, int]], workers: int) -> Iterator[dict]:
    """Settle units in `workers` spawned processes, yielding results as they come (in any order)."""
    import queue

    ctx = spawn_context()
    jobs, results = ctx.Queue(), ctx.Queue()
    for unit in units:
        jobs.put(unit)
    for _ in range(workers):
        jobs.put(None)
    procs = [ctx.Process(target=_worker_main, args=(jobs, results), daemon=True) for _ in range(workers)]
    say = WarningsOnce()
    try:
        for p in procs:
            p.start()
        for _ in range(len(units)):
            while True:
                try:
                    out = results.get(timeout=1.0)
                    if "warning" in out:
                        say(out["warning"])
                        continue
                    break
                except queue.Empty:
                    dead = [p for p in procs if p.exitcode not in (None, 0)]
                    if dead:
                        raise LiberoError(
                            f"a collection worker died (exit code {dead[0].exitcode}; out of memory?); the "
                            "demos settled so far are kept: run the same command again to continue"
                        ) from None
            if "error" in out and not out["user_error"]:
                raise RuntimeError(f"collection worker failed on task {out['task']}, demo {out['index']}:\n"
                                   f"{out['error']}")
            yield out  # a LiberoError's message too, for `collect` to say or to go on past
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join()
        # Units still queued for the stopped workers (a collection stopped by Ctrl-C, SIGTERM or an error) are
        # dropped: otherwise the queue's feeder thread, blocked on a full pipe that nobody reads any more, kept the
        # process from exiting. A finished collection has none left.
        jobs.cancel_join_thread()
        jobs.close()
        results.close()


def _run_units(units: list[tuple[_Job, int]], workers: int) -> Iterator[dict]:
    if not units:
        return
    workers = min(workers, len(units))
    if workers > 1:
        yield from _run_in_workers(units, workers)
        return
    collector = _Collector()
    try:
        for job, index in units:
            try:
                out = collector.run(job, index)
            except LiberoError as e:  # as the workers pass it on
                out = {"index": index, "error": str(e), "user_error": True, "scene_error": isinstance(e, SceneError)}
            yield {**out, "task": job.name}
    finally:
        collector.close()


# ---------------------------------------------------------------------------------- the collection


@dataclass
class _TaskRun:
    job: _Job
    out_path: Path | None
    requested: int
    pending: list[int]
    settled: dict[int, dict] = field(default_factory=dict)  # index -> {"kept", "attempts", "length"}
    resumed: int = 0
    error: str | None = None  # the first SceneError of one of its demos (`collect(keep_going=True)`)
    errored: set[int] = field(default_factory=set)  # the demo indices that met one


def _settings(job: _Job) -> dict:
    """What fixes a task's demos: an unfinished collection is resumed only with the same settings."""
    return {
        "format": PARTIAL_FORMAT,
        "generator": EXPERT_VERSION,
        "bddl_sha1": hashlib.sha1(job.bddl_text.encode()).hexdigest(),
        "seed": job.seed,
        "env_kwargs": job.env_kwargs,
        "max_steps": job.max_steps,
        "max_attempts": job.max_attempts,
        "compression": job.compression,
    }


def _hold(partial: Path, locks: list[tuple[int, Path]], wait: Callable[[Path], None] | None) -> bool:
    """Take the partial folder for this process (its descriptor appended to `locks`, closed by the caller when
    the collection ends). Another collection of the task into the same file may hold it (the two would take each
    other's demos and remove the folder under each other): without `wait` that is an error; with it, this one
    waits for the other to end, and False says that the other finished the task (its folder is gone)."""
    import fcntl

    while True:
        partial.mkdir(parents=True, exist_ok=True)
        fd = os.open(partial, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if _holder(partial) == os.getppid():
                os.close(fd)
                # Waiting would never end: the holder waits for this process's demos.
                raise LiberoError(
                    f"{partial}: this process was started by the collection that holds the folder: a script that "
                    "collects demos (or trains) must start its work under `if __name__ == '__main__':`, since the "
                    "collection's worker processes import the script again"
                ) from None
            if wait is None:
                os.close(fd)
                raise LiberoError(
                    f"{partial}: another collection of this task into the same file is running; wait for it to end "
                    "(or stop it), then run this one again"
                ) from None
            wait(partial)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(partial))
            except FileNotFoundError:
                same = False
            if not same:  # the other ended and removed the folder: done, or to be started again
                os.close(fd)
                if Path(str(partial)[: -len(PARTIAL_SUFFIX)]).is_file():
                    return False
                continue
        locks.append((fd, partial))
        _atomic_write_text(partial / HOLDER_FILE, str(os.getpid()))
        return True


def _holder(partial: Path) -> int | None:
    """The process id of the collection holding `partial`, as it wrote it; None when unknown."""
    try:
        return int((partial / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return None


def _resume(job: _Job, overwrite: bool, locks: list[tuple[int, Path]],
            wait: Callable[[Path], None] | None = None) -> dict[int, dict] | None:
    """Open (or create) a task's partial folder, held for this process, and return the demo indices already
    settled there (made with the same settings); None when another process, waited for, wrote the task's file."""
    partial = Path(job.partial)
    settings_file = partial / "collection.json"
    settings = json.loads(json.dumps(_settings(job)))
    if not _hold(partial, locks, wait):
        return None
    if settings_file.is_file():
        try:
            before = json.loads(settings_file.read_text())
        except (OSError, json.JSONDecodeError):
            before = None
        if before != settings:
            if not overwrite:
                if not isinstance(before, dict):
                    raise LiberoError(
                        f"{settings_file}: the settings of an unfinished collection cannot be read (a damaged "
                        "file); pass --overwrite (overwrite=True in Python) to discard that collection and start "
                        "it again, or delete its folder"
                    )
                changed = sorted(k for k in settings if before.get(k) != settings[k])
                raise LiberoError(
                    f"{partial}: an unfinished collection made with other settings ({', '.join(changed)}) is "
                    "there; run it with its own settings to finish it, or pass --overwrite (overwrite=True in "
                    "Python) to discard it, or delete the folder"
                )
            _empty(partial)  # the folder itself stays: it is what this process holds
    if not settings_file.is_file():
        _atomic_write_text(settings_file, json.dumps(settings, indent=1, sort_keys=True))
    # Temporary files of a write that was killed halfway.
    for tmp in partial.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
    settled: dict[int, dict] = {}
    for path in partial.iterdir():
        stem, suffix = path.stem, path.suffix
        if not stem.startswith("demo_") or not stem[5:].isdigit():
            continue
        index = int(stem[5:])
        try:
            if suffix == ".hdf5":
                info = read_info(path)
                if not _made_as(info, job):
                    raise ValueError("a demo made with other settings")
                stats = info.stats
                attempts, length = int(stats["attempts"]), int(stats["length_max"])
                settled[index] = {"kept": True, "attempts": attempts, "length": length}
            elif suffix == ".failed":
                attempts = int(json.loads(path.read_text())["attempts"])
                settled[index] = {"kept": False, "attempts": attempts, "length": 0}
        except (LiberoError, KeyError, ValueError, TypeError, OSError):
            # Unreadable (a disk that filled up, a machine that crashed mid-write), or made with other settings
            # (a folder whose collection.json was lost): settle it again.
            path.unlink(missing_ok=True)
    return settled


def _made_as(info, job: _Job) -> bool:
    """Whether a per-demo file was written by a collection of `job`'s task with its expert and scene settings
    (each file holds them, as the task's file will)."""
    header = job.header()
    args = info.env_args if isinstance(info.env_args, dict) else {}
    return (info.generator == header["generator"] and info.bddl_file_content == header["bddl_file_content"]
            and args.get("env_kwargs") == json.loads(json.dumps(job.env_kwargs)))


def _empty(folder: Path) -> None:
    """Remove what `folder` holds but its holder's id, keeping the folder."""
    for path in folder.iterdir():
        if path.name == HOLDER_FILE:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _finish(run: _TaskRun) -> CollectStats:
    """Settle a task whose demo indices are all done: write its file (unless a dry run) and sum up; a task given
    up for an error (`_given_up`) writes none."""
    job = run.job
    if run.error is not None:
        return _given_up(run)
    indices = range(run.requested)
    kept = [i for i in indices if run.settled[i]["kept"]]
    failed = [i for i in indices if not run.settled[i]["kept"]]
    attempts = sum(run.settled[i]["attempts"] for i in indices)
    lengths = [run.settled[i]["length"] for i in kept]
    rate = len(kept) / max(attempts, 1)
    path = None
    if job.partial is not None and kept:
        with DemoWriter(run.out_path, **job.header(), compression=job.compression) as w:
            for i in kept:
                w.copy_demo(_demo_path(job.partial, i))
            w.set_attrs(
                {
                    "expert_success_rate": rate,
                    "attempts": attempts,
                    "max_attempts": job.max_attempts,
                    "demos_requested": run.requested,
                    "failed_demo_indices": np.asarray(failed, dtype=np.int64),
                    "collect_seed": job.seed,
                    "image_size": int(job.env_kwargs["image_size"]),
                    "max_steps": job.max_steps,
                }
            )
        path = run.out_path
        # Only once the complete file is in place: the per-demo files are its only other copy.
        shutil.rmtree(job.partial)
    elif job.partial is not None:
        # Every index failed: nothing to keep, and the next run (with a larger cap, say) tries them again.
        shutil.rmtree(job.partial)
    return CollectStats(
        task=job.name,
        kept=len(kept),
        attempts=attempts,
        success_rate=rate,
        mean_length=float(np.mean(lengths)) if lengths else 0.0,
        requested=run.requested,
        failed=failed,
        lengths=lengths,
        path=path,
        resumed=run.resumed,
    )


def collect(
    tasks: Sequence[tuple[str | Path, str | Path | None]],
    num_demos: int,
    seed: int = 0,
    env_config: EnvConfig | None = None,
    max_steps: int = EXPERT_MAX_STEPS,
    *,
    workers: int = 1,
    max_attempts: int = MAX_ATTEMPTS,
    overwrite: bool = False,
    compression: str | None = "gzip",
    progress: Callable[[str, int, int], None] | None = None,
    wait: Callable[[Path], None] | None = None,
    keep_going: bool = False,
) -> list[CollectStats]:
    """Collect `num_demos` successful expert demos of each task, resumably, in `workers` processes.

    Args:
        tasks: (task file, output HDF5 file) pairs; an output of None runs the expert without writing
            (a dry run: one attempt per demo index, no rendering).
        num_demos: demos wanted per task (in a dry run: episodes to try).
        seed: collection seed; with the task, demo index and attempt it fixes every episode.
        env_config: simulation and image settings (stored in the file's env_args).
        max_steps: episode cap for the expert, policy steps.
        workers: processes collecting at once (each builds its own environments); the files do not
            depend on it.
        max_attempts: episodes (fresh seeds) tried per demo index before the index is given up; a task
            then holds fewer demos (see CollectStats.failed), and no file when it kept none.
        overwrite: replace existing complete files (otherwise they are kept and the task is skipped),
            and discard an unfinished collection made with other settings (otherwise an error).
        compression: image and state compression, see DemoWriter.
        progress: optional callable(task name, settled demo indices, requested) called as indices
            settle (also once at the start for indices resumed from an interrupted run).
        wait: with it, a task that another collection (another process) is collecting into the same file is
            waited for, `wait(partial folder)` called once as the wait begins, and then kept as that collection
            wrote it; without it, such a task is an error.
        keep_going: a task whose scene cannot be set up as its file asks (a SceneError: a layout our models cannot
            take, a goal that holds at the start) is given up, its CollectStats saying why (`error`), and the other
            tasks are collected; without it, such an error stops the collection, as any other LiberoError does.
    Returns:
        One CollectStats per task, in the order given.
    Raises:
        LiberoError: bad arguments, a missing or invalid task file, or an unfinished collection with
            other settings. What was settled before an error or interruption stays on disk; a partial
            folder that settled nothing is removed, with the folders above it that the call made.
    """
    not_in_a_worker_starting()
    for what, value in (("demos", num_demos), ("workers", workers), ("max attempts", max_attempts),
                        ("max steps", max_steps)):
        if int(value) < 1:
            raise LiberoError(f"the number of {what} must be at least 1, got {value}")
    env_config = env_config or EnvConfig()
    if env_config.image_size < 1:
        raise LiberoError(f"image size must be at least 1 pixel, got {env_config.image_size}")
    names = [Path(t).stem for t, _ in tasks]
    if len(set(names)) != len(names):
        twice = sorted(n for n in set(names) if names.count(n) > 1)
        raise LiberoError(f"two tasks of one collection have the same name: {', '.join(twice)}")
    runs: list[_TaskRun | CollectStats] = []
    made: list[Path] = []  # folders this call creates (partial folders and the folders above them)
    locks: list[tuple[int, Path]] = []  # the partial folders this call holds: two collections of a task cannot mix
    say_task_warnings(t for t, _ in tasks)
    try:
        for task_file, out_path in tasks:
            task_file = Path(task_file)
            if not task_file.is_file():
                what = "is a folder, not a task file" if task_file.is_dir() else "does not exist"
                raise LiberoError(f"task file {task_file} {what}")
            spec = load_task(task_file)
            name = task_file.stem
            dry = out_path is None
            if not dry and Path(out_path).is_dir():
                raise LiberoError(f"{out_path} is a folder: the demo file of {name} cannot be written there")
            if not dry and Path(out_path).exists() and not overwrite:
                runs.append(_kept_file(name, Path(out_path)))
                continue
            job = _Job(
                task_file=str(task_file),
                name=name,
                bddl_text=task_file.read_text(),
                problem_info={"problem_name": spec.problem_class, "language_instruction": spec.language},
                partial=None if dry else str(Path(out_path)) + PARTIAL_SUFFIX,
                seed=int(seed),
                env_kwargs=asdict(EnvConfig(**{**asdict(env_config), "render": not dry})),
                max_steps=int(max_steps),
                max_attempts=1 if dry else int(max_attempts),
                compression=compression,
            )
            if not dry:
                partial = Path(job.partial)
                made.extend(p for p in (partial, *partial.parents) if not p.exists())
            settled = {} if dry else _resume(job, overwrite, locks, wait)
            if settled is None:  # another process collected the task while this one waited
                runs.append(_kept_file(name, Path(out_path)))
                continue
            beyond = sorted(i for i, s in settled.items() if i >= num_demos and s["kept"])
            if beyond:
                raise LiberoError(
                    f"{job.partial}: an unfinished collection of {name} holds {len(beyond)} demo(s) beyond the "
                    f"{num_demos} asked for now (indices {_index_list(beyond)}), which writing the file would "
                    f"discard; ask for {beyond[-1] + 1} or more demos to use them, or pass --overwrite "
                    "(overwrite=True in Python) to discard that collection"
                )
            settled = {i: s for i, s in settled.items() if i < num_demos}
            runs.append(
                _TaskRun(job, None if dry else Path(out_path), num_demos,
                         [i for i in range(num_demos) if i not in settled], settled, len(settled))
            )

        by_name = {r.job.name: r for r in runs if isinstance(r, _TaskRun)}
        results: dict[str, CollectStats] = {}
        for run in by_name.values():
            if run.resumed and progress:
                progress(run.job.name, run.resumed, run.requested)
            if not run.pending:
                results[run.job.name] = _finish(run)
        units = [(run.job, i) for run in by_name.values() for i in run.pending]
        outcomes = _run_units(units, workers)
        try:
            for out in outcomes:
                run = by_name[out["task"]]
                if "error" in out:
                    if not (keep_going and out["scene_error"]):
                        raise LiberoError(f"task {out['task']}, demo {out['index']}: {out['error']}")
                    run.error = run.error or out["error"]
                    run.errored.add(out["index"])
                else:
                    run.settled[out["index"]] = {k: out[k] for k in ("kept", "attempts", "length")}
                if progress:
                    progress(run.job.name, len(run.settled) + len(run.errored), run.requested)
                if len(run.settled) + len(run.errored) == run.requested:
                    results[run.job.name] = _finish(run)
        finally:
            outcomes.close()  # stops the workers now, also when this raises or is interrupted
        if any(r.error for r in by_name.values()):
            _remove_unsettled(runs, made)  # the folders made for tasks given up that hold nothing
        return [r if isinstance(r, CollectStats) else results[r.job.name] for r in runs]
    except BaseException:
        # A collection that stops (an error, Ctrl-C) keeps every settled demo index for the next run, and leaves
        # no folder behind that holds none.
        _remove_unsettled(runs, made)
        raise
    finally:
        for fd, partial in locks:
            (partial / HOLDER_FILE).unlink(missing_ok=True)
            os.close(fd)


def _given_up(run: _TaskRun) -> CollectStats:
    """The stats of a task given up for an error: no file; the demos it settled stay in its unfinished collection
    for a run of the same command (after the task file is mended, its settings differ and they are collected
    anew), which is removed when it holds none."""
    kept = [i for i, s in run.settled.items() if s["kept"]]
    if run.job.partial is not None and not _settles_something(Path(run.job.partial)):
        shutil.rmtree(run.job.partial, ignore_errors=True)
    return CollectStats(
        task=run.job.name,
        kept=len(kept),
        attempts=sum(s["attempts"] for s in run.settled.values()),
        success_rate=len(kept) / max(sum(s["attempts"] for s in run.settled.values()), 1),
        mean_length=float(np.mean([run.settled[i]["length"] for i in kept])) if kept else 0.0,
        requested=run.requested,
        resumed=run.resumed,
        error=run.error,
    )


def _index_list(indices: list[int], most: int = 8) -> str:
    """Sorted demo indices for a message: the first few, then how many more."""
    shown = ", ".join(str(i) for i in indices[:most])
    return shown + (f" and {len(indices) - most} more" if len(indices) > most else "")


def _kept_file(name: str, path: Path) -> CollectStats:
    """The stats of a task whose file is there and kept as it is, readable or not: the caller says what it holds
    (`libero-ll collect` names one that cannot be read), and the other tasks are collected."""
    try:
        held = read_info(path).num_demos
    except LiberoError:
        held = 0
    return CollectStats(name, held, 0, 0.0, 0.0, path=path, skipped=True)


def _settles_something(partial: Path) -> bool:
    """Whether a partial folder holds a settled demo index (a kept demo, or an index given up)."""
    for path in partial.iterdir():
        stem = path.stem
        if path.suffix in (".hdf5", ".failed") and stem.startswith("demo_") and stem[5:].isdigit():
            return True
    return False


def _remove_unsettled(runs: list, made: list[Path]) -> None:
    """After a collection stopped: remove the partial folders that settle no demo index (their settings file
    alone is worth nothing), then the folders above them that the collection made and that are now empty."""
    partials = [Path(r.job.partial) for r in runs if isinstance(r, _TaskRun) and r.job.partial is not None]
    made_partials = [p for p in made if p.name.endswith(PARTIAL_SUFFIX)]
    for partial in dict.fromkeys(partials + made_partials):
        try:
            if partial.is_dir() and not _settles_something(partial):
                shutil.rmtree(partial)
        except OSError:
            pass  # a folder that cannot be read or removed is left as it is
    for folder in sorted(set(made), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            pass


def collect_task(
    task_file: str | Path,
    out_path: str | Path | None,
    num_demos: int,
    seed: int = 0,
    env_config: EnvConfig | None = None,
    max_steps: int = EXPERT_MAX_STEPS,
    progress=None,
    *,
    workers: int = 1,
    max_attempts: int = MAX_ATTEMPTS,
    overwrite: bool = False,
) -> CollectStats:
    """Collect `num_demos` successful expert demos of one task into `out_path` (None: dry run).

    A file already at `out_path` is an error unless `overwrite` (then it is replaced once the new one is
    complete), as with `libero-ll collect`; an interrupted earlier call with the same settings is resumed, and
    one with other settings is an error unless `overwrite` (then it is discarded). See `collect` for the other
    arguments and errors.
    """
    if out_path is not None and Path(out_path).exists() and not overwrite:
        raise LiberoError(f"{out_path} exists; pass overwrite=True to replace it")
    return collect(
        [(task_file, out_path)], num_demos, seed, env_config, max_steps,
        workers=workers, max_attempts=max_attempts, overwrite=overwrite, progress=progress,
    )[0]
