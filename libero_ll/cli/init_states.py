"""`libero-ll init-states`: sample and store the fixed initial states of task files, or convert LIBERO's."""

from __future__ import annotations

import sys
from pathlib import Path

from libero_ll.cli.args import SEED, about, at_least
from libero_ll.errors import LiberoError


def cmd_init_states(args) -> int:
    from libero_ll.envs.init_states import init_states_path, write_init_states

    if args.suite and args.files:
        raise LiberoError("give task files or --suite NAME, not both")
    if not (args.suite or args.files):
        raise LiberoError("give task files or --suite NAME")
    if args.suite:
        from libero_ll.experiments.lifelong import suite_tasks

        tasks = suite_tasks(args.suite)
    else:
        tasks = [Path(f) for f in args.files]
        for t in tasks:
            if not t.is_file():
                raise LiberoError(f"{t}: {'a folder, not a task file' if t.is_dir() else 'no such task file'}")
    for t in tasks:
        if init_states_path(t).is_dir():
            raise LiberoError(f"{init_states_path(t)}: a folder where the initial states of {t.name} go")
    if args.libero:
        return _convert(tasks, Path(args.libero), args)
    failed = []
    for t in tasks:
        if init_states_path(t).exists() and not args.overwrite:
            print(f"{init_states_path(t)}: {_kept(t, args.n, args.seed)}")
            continue
        try:
            out = write_init_states(t, args.n, args.seed, overwrite=args.overwrite)
        except LiberoError as e:
            # One task that cannot be set up does not stop the others; each is named.
            print(about(t, e), file=sys.stderr)
            failed.append(t.name)
            continue
        print(f"{out}: {args.n} initial states (seed {args.seed})")
    if failed:
        raise LiberoError(f"{len(failed)} of {len(tasks)} tasks have no initial states (above): {', '.join(failed)}")
    return 0


def _convert(tasks: list[Path], source: Path, args) -> int:
    """Convert LIBERO's initial-states file of each task; exit 1 when a converted start fails init."""
    from libero_ll.envs.init_states import LIBERO_SUFFIXES, convert_libero_init_states, init_states_path

    if source.is_file() and len(tasks) > 1:
        raise LiberoError(f"--libero {source} is one file; give a folder to convert {len(tasks)} tasks")
    if not source.exists():
        raise LiberoError(f"--libero {source}: no such file or folder")
    status = 0
    for t in tasks:
        if source.is_dir():
            found = [source / (t.stem + s) for s in LIBERO_SUFFIXES if (source / (t.stem + s)).is_file()]
            if not found:
                raise LiberoError(f"{source}: no {t.stem}{LIBERO_SUFFIXES[0]} for task {t}")
            libero_file = found[0]
        else:
            libero_file = source
        if init_states_path(t).exists() and not args.overwrite:
            print(f"{init_states_path(t)}: {_kept(t)}")
            continue
        r = convert_libero_init_states(t, libero_file, seed=args.seed, overwrite=args.overwrite)
        print(
            f"{r.path}: {r.count} initial states from {libero_file.name}; init holds in "
            f"{r.count - len(r.init_false)}, goal false in {r.count - len(r.goal_true)}; "
            f"{len(r.pushed)} moved apart where our models are larger"
        )
        for what, which in (("init does not hold", r.init_false), ("goal already holds", r.goal_true)):
            if which:
                status = 1
                print(f"  {what} in states {', '.join(map(str, which))}")
    return status


def _kept(task: Path, n: int | None = None, seed: int | None = None) -> str:
    """What is said of an existing file left alone: why runs will not use it, if they will not, and how it
    differs from the `n` states of `seed` asked for, if it does."""
    from libero_ll.envs.init_states import init_states_path, load_init_states

    try:
        states, stored_seed = load_init_states(task, with_seed=True)
    except LiberoError as e:
        reason = str(e).removeprefix(f"{init_states_path(task)}: ").split("; remake it", 1)[0]
        return f"exists but runs will not use it: {reason}; skipped (--overwrite to remake)"
    if n is not None and (len(states) != n or stored_seed != seed):
        held = f"{len(states)} state{'s' if len(states) != 1 else ''}"
        return f"exists with {held} of seed {stored_seed}, not the {n} of seed {seed} asked for; skipped " \
               "(--overwrite to remake)"
    return "exists, skipped (--overwrite to remake)"


def register(sub) -> None:
    s = sub.add_parser("init-states", help="sample and store the fixed initial states of task files")
    s.add_argument("files", nargs="*", help=".bddl task files")
    s.add_argument("--suite", help="every task of a suite")
    s.add_argument("--n", type=at_least(1), default=50, help="how many states (default 50)")
    s.add_argument("--seed", type=SEED, default=0, help="seed of the sampling (default 0)")
    s.add_argument("--overwrite", action="store_true",
                   help="remake initial-states files that are there (without it they are kept, and said so)")
    s.add_argument(
        "--libero",
        metavar="PATH",
        help="convert LIBERO's fixed initial states instead of sampling: its .pruned_init file of the task, "
        "or a folder holding <task>.pruned_init for each task",
    )
    s.set_defaults(func=cmd_init_states)
