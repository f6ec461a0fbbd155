"""`libero-ll collect`: scripted-expert demonstrations for a task or a suite."""

from __future__ import annotations

import sys
from pathlib import Path

from libero_ll.errors import LiberoError


def cmd_collect(args) -> int:
    from libero_ll.data.collect import collect_task
    from libero_ll.envs.env import EnvConfig
    from libero_ll.experiments.lifelong import suite_tasks

    if bool(args.suite) == bool(args.task):
        raise LiberoError("give either --suite NAME or --task FILE")
    tasks = suite_tasks(args.suite, args.tasks) if args.suite else [Path(args.task)]
    env_cfg = EnvConfig(image_size=args.image_size, robot_mesh=args.robot_mesh)
    out = Path(args.out) if args.out else Path("datasets") / (args.suite or "tasks")
    rows = []
    for t in tasks:
        path = None if args.dry_run else out / f"{t.stem}.hdf5"
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and not args.overwrite:
                print(f"{path}: exists, skipped (--overwrite to redo)")
                continue
        stats = collect_task(t, path, args.demos, args.seed, env_cfg, max_steps=args.max_steps, progress=_progress)
        rows.append(stats)
        where = "dry run" if path is None else str(path)
        print(
            f"{t.stem}: expert success {stats.success_rate:.0%} ({stats.kept}/{stats.attempts}), "
            f"mean length {stats.mean_length:.0f} steps [{where}]"
        )
    if rows:
        total = sum(r.kept for r in rows) / max(sum(r.attempts for r in rows), 1)
        print(f"{len(rows)} tasks, overall expert success {total:.0%}")
    return 0


def _progress(name: str, done: int, total: int) -> None:
    print(f"\r  {name}: {done}/{total} demos", end="\n" if done == total else "", file=sys.stderr, flush=True)


def register(sub) -> None:
    s = sub.add_parser("collect", help="write scripted-expert demos for a task or suite")
    s.add_argument("--suite")
    s.add_argument("--task", help="a single .bddl file")
    s.add_argument("--tasks", nargs="*", help="task names within the suite")
    s.add_argument("--demos", type=int, default=50)
    s.add_argument("--out", help="output folder (default datasets/<suite>)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--image-size", type=int, default=128)
    s.add_argument("--robot-mesh", default="visual", choices=["visual", "collision"])
    s.add_argument("--max-steps", type=int, default=400)
    s.add_argument("--dry-run", action="store_true", help="run the expert without writing; print success per task")
    s.add_argument("--overwrite", action="store_true")
    s.set_defaults(func=cmd_collect)
