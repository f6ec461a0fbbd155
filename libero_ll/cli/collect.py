"""`libero-ll collect`: scripted-expert demonstrations for a task or a suite."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from libero_ll.cli.args import SEED, at_least, output_folder
from libero_ll.envs.env import ROBOT_MESHES
from libero_ll.errors import LiberoError


def cmd_collect(args) -> int:
    from tqdm import tqdm

    from libero_ll.data.collect import EXPERT_MAX_STEPS, MAX_ATTEMPTS, collect
    from libero_ll.envs.env import EnvConfig
    from libero_ll.experiments.lifelong import suite_tasks

    max_attempts = MAX_ATTEMPTS if args.max_attempts is None else args.max_attempts
    max_steps = EXPERT_MAX_STEPS if args.max_steps is None else args.max_steps
    if bool(args.suite) == bool(args.task):
        raise LiberoError("give either --suite NAME or --task FILE")
    if args.tasks is not None and not args.suite:
        raise LiberoError("--tasks names tasks within a suite; give --suite too")
    if args.tasks is not None and not args.tasks:
        raise LiberoError("--tasks names no task; give task names of the suite, or leave --tasks out for all")
    if args.task and not Path(args.task).is_file():
        what = "is a folder, not a task file" if Path(args.task).is_dir() else "does not exist"
        raise LiberoError(f"task file {args.task} {what}")
    tasks = suite_tasks(args.suite, args.tasks) if args.suite else [Path(args.task)]
    env_cfg = EnvConfig(image_size=args.image_size, robot_mesh=args.robot_mesh)
    # A suite given as a folder's path (a generated suite) names datasets/<its folder's name>, not the folder.
    out = Path(args.out) if args.out else Path("datasets") / (Path(args.suite).name if args.suite else "tasks")
    if not args.dry_run:
        output_folder(out, "--out")
    pairs = [(t, None if args.dry_run else out / f"{t.stem}.hdf5") for t in tasks]

    t0 = time.time()
    bar = None
    done: dict[str, int] = {}

    def progress(name: str, settled: int, requested: int) -> None:
        nonlocal bar
        if bar is None:  # made at the first settled demo, so that argument errors print alone
            bar = tqdm(total=len(tasks) * args.demos, unit="demo", desc="collect", dynamic_ncols=True)
        bar.set_postfix_str(f"{name} {settled}/{requested}", refresh=False)
        bar.update(settled - done.get(name, 0))
        done[name] = settled

    stopped = None
    there_before = {path for _, path in pairs if path is not None and path.exists()}
    try:
        stats = collect(
            pairs, args.demos, args.seed, env_cfg, max_steps, workers=args.workers,
            max_attempts=max_attempts, overwrite=args.overwrite, progress=progress, keep_going=True,
        )
    except KeyboardInterrupt as e:
        stats, stopped = None, e
    finally:
        if bar is not None:
            bar.close()
    if stats is None:  # Ctrl-C or SIGTERM: said here once, with what is kept (not again by the command line's handler)
        from libero_ll.cli.train import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

        word = "terminated" if isinstance(stopped, Terminated) else "interrupted"
        if args.dry_run:
            print(word, file=sys.stderr)
        else:
            written = [p for _, p in pairs if p is not None and p not in there_before and p.is_file()]
            files = (f"{len(written)} task file{'s' if len(written) != 1 else ''} written "
                     f"({', '.join(p.name for p in written)}); " if written else "")
            print(f"{word}: {files}the demos settled so far are kept; run the same command again to continue",
                  file=sys.stderr)
        return EXIT_TERMINATED if isinstance(stopped, Terminated) else EXIT_INTERRUPTED

    empty, given_up = [], []
    for s in stats:
        if s.skipped:
            print(f"{s.path}: {_kept(s.path, args.demos, args.image_size)}")
            continue
        if s.error is not None:
            given_up.append(s)
            continue
        where = "dry run" if args.dry_run else str(s.path) if s.path else "no file written"
        resumed = f", {s.resumed} resumed" if s.resumed else ""
        print(
            f"{s.task}: expert success {s.success_rate:.0%} ({s.kept}/{s.attempts}), "
            f"{s.kept}/{s.requested} demos kept{resumed}, mean length {s.mean_length:.0f} steps [{where}]"
        )
        if s.failed and not args.dry_run:
            print(
                f"warning: {s.task}: demo indices {', '.join(map(str, s.failed))} failed all "
                f"{max_attempts} attempts; the task has {s.kept} of {s.requested} demos"
            )
        if s.kept == 0 and not args.dry_run:
            empty.append(s.task)
    rows = [s for s in stats if not s.skipped and s.error is None]
    wall = time.time() - t0
    if rows:
        kept = sum(r.kept for r in rows)
        attempts = sum(r.attempts for r in rows)
        mean = sum(r.mean_length * r.kept for r in rows) / max(kept, 1)
        print(
            f"{len(rows)} task{'s' if len(rows) != 1 else ''}, overall expert success {kept / max(attempts, 1):.0%}, "
            f"{kept} demo{'s' if kept != 1 else ''} kept, "
            f"mean length {mean:.0f} steps, wall time {wall:.1f} s"
        )
    elif not given_up:
        files = "the file exists" if len(stats) == 1 else f"all {len(stats)} files exist"
        print(f"nothing collected: {files} (--overwrite to redo)")
    for s in given_up:
        # Said last, where they are seen: the other tasks were collected meanwhile.
        kept = (f"; its {s.kept} demo{'s' if s.kept != 1 else ''} settled so far are kept for a run of the same "
                "command" if s.kept and not args.dry_run else "")
        print(f"error: {s.task}: {s.error}; {'given up' if args.dry_run else 'no file written for it'}{kept}",
              file=sys.stderr)
    if empty:
        them = "it" if len(empty) == 1 else "them"
        print(f"error: no demo kept for {', '.join(empty)}; no file written for {them}")
    return 1 if given_up or empty else 0


def _kept(path: Path, demos: int, size: int) -> str:
    """What is said of a demo file left as it is, and how it differs from the `demos` demos at `size` px asked
    for, if it does (a run of another image size refuses it; one wanting more demos says so)."""
    from libero_ll.data.hdf5 import demo_names, image_size

    try:
        held, px = len(demo_names(path)), image_size(path)
    except LiberoError as e:
        return f"exists but cannot be read ({e}); skipped (--overwrite to redo)"
    if held < demos or px != size:
        return (f"exists with {held} demo{'s' if held != 1 else ''} at {px} px, not the {demos} at {size} px asked "
                "for; skipped (--overwrite to redo)")
    return "exists, skipped (--overwrite to redo)"


def register(sub) -> None:
    s = sub.add_parser(
        "collect",
        help="write scripted-expert demos for a task or suite",
        description="Write scripted-expert demos, one HDF5 file per task. Resumable: each settled demo is "
        "kept in <task>.hdf5.partial/ until the task is complete, and running the same command again "
        "continues an interrupted collection. The files do not depend on --workers. A demo index whose "
        "every attempt fails is left out with a warning; a task with no demo at all gets no file "
        "(exit 1).",
    )
    s.add_argument("--suite")
    s.add_argument("--task", help="a single .bddl file")
    s.add_argument("--tasks", nargs="*", help="task names within the suite")
    s.add_argument("--demos", type=at_least(1), default=50)
    s.add_argument("--out", help="output folder (default datasets/<suite>; for a suite's folder, its name)")
    s.add_argument("--seed", type=SEED, default=0, help="base seed of the demos' episodes (default 0)")
    s.add_argument("--image-size", type=at_least(1), default=128)
    s.add_argument("--robot-mesh", default="visual", choices=ROBOT_MESHES)
    s.add_argument(
        "--max-steps", type=at_least(1),
        help="the expert's episode cap, policy steps (default: EXPERT_MAX_STEPS of libero_ll/data/collect.py, "
        "600, the evaluation cap)",
    )
    s.add_argument("--workers", type=at_least(1), default=1, help="processes collecting at once (default 1)")
    s.add_argument(
        "--max-attempts", type=at_least(1),
        help="episodes (new seeds) tried per demo before it is left out (default: MAX_ATTEMPTS of "
        "libero_ll/data/collect.py, 5)",
    )
    s.add_argument(
        "--dry-run", action="store_true", help="run the expert without writing; print success per task"
    )
    s.add_argument(
        "--overwrite", action="store_true",
        help="replace existing files (and discard unfinished collections made with other settings)",
    )
    s.set_defaults(func=cmd_collect)
