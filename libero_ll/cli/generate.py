"""`libero-ll generate`: write a folder of task files (and their fixed initial states) from a short YAML spec."""

from __future__ import annotations

import time
from pathlib import Path

from libero_ll.cli.args import SEED, at_least, output_folder
from libero_ll.errors import LiberoError


def cmd_generate(args) -> int:
    from libero_ll.tasks.generator import (
        SuitePlan,
        build_plan,
        check_task,
        crowded_starts,
        load_plan,
        random_requests,
        write_tasks,
    )

    if bool(args.spec) == (args.random is not None):
        raise LiberoError("give a spec YAML or --random N")
    if args.random is not None:
        plan = SuitePlan("random", random_requests(args.random, args.seed))
    else:
        plan = load_plan(args.spec)
    tasks = build_plan(plan)
    output_folder(args.out, "--out")
    for t in tasks:
        for msg in crowded_starts(t.spec):
            print(f"  note: {t.name}: {msg}; resets may have to retry")
    out = Path(args.out)
    files = write_tasks(tasks, out)
    print(f"{out}: {len(files)} task files written")
    failed: dict[Path, list[str]] = {}
    if not args.no_check:
        for i, f in enumerate(files, 1):
            problems = check_task(f, seeds=range(args.resets))
            if problems:
                failed[f] = problems
                for msg in problems:
                    print(f"  {f.name}: {msg}")
            print(f"  checked {i}/{len(files)}", end="\r", flush=True)
        print()
        # A task that fails its checks is not left in the folder as if it were usable.
        for f in failed:
            _remove(f)
    good = [f for f in files if f not in failed]
    if not args.no_init_states:
        from libero_ll.envs.init_states import write_init_states

        start = time.time()
        for i, f in enumerate(good, 1):
            try:
                write_init_states(f, n=args.n, seed=0, overwrite=True)
            except LiberoError as e:
                failed[f] = [str(e)]
                print(f"  {f.name}: {e}")
                _remove(f)
            print(f"  initial states {i}/{len(good)}", end="\r", flush=True)
        print(f"\n  initial states written in {time.time() - start:.0f} s")
    if args.no_check:
        print(f"{len(files) - len(failed)} tasks written to {out} (not checked in the simulator)")
    else:
        print(f"{len(files) - len(failed)} of {len(files)} tasks passed the checks ({args.resets} resets each)")
    explicit = {t.name for t, r in zip(tasks, plan.requests) if not r.drawn}
    bad = [f.stem for f in failed if f.stem in explicit]
    if bad:
        raise LiberoError(f"{len(bad)} task(s) of the spec failed their checks: {', '.join(bad)}")
    return 0


def _remove(task_file: Path) -> None:
    from libero_ll.envs.init_states import init_states_path

    task_file.unlink(missing_ok=True)
    init_states_path(task_file).unlink(missing_ok=True)


def register(sub) -> None:
    s = sub.add_parser("generate", help="generate task files from a suite spec (YAML) or at random")
    s.add_argument("spec", nargs="?", help="generator YAML (see docs/tasks.md)")
    s.add_argument(
        "--random", type=at_least(1), metavar="N", help="N random tasks from the shipped scene templates"
    )
    s.add_argument("--seed", type=SEED, default=0, help="seed of --random (default 0)")
    s.add_argument("--out", required=True, help="folder for the .bddl and .init.npz files")
    s.add_argument("--no-check", action="store_true", help="skip loading and resetting each task in the simulator")
    s.add_argument("--resets", type=at_least(1), default=3, help="resets per task when checking (default 3)")
    s.add_argument("--no-init-states", action="store_true", help="do not write the fixed initial states")
    s.add_argument("--n", type=at_least(1), default=50, help="fixed initial states per task (default 50)")
    s.set_defaults(func=cmd_generate)
