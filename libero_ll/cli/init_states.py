"""`libero-ll init-states`: sample and store the fixed initial states of task files."""

from __future__ import annotations

from pathlib import Path

from libero_ll.errors import LiberoError


def cmd_init_states(args) -> int:
    from libero_ll.envs.init_states import init_states_path, write_init_states
    from libero_ll.experiments.lifelong import suite_tasks

    if bool(args.suite) == bool(args.files):
        raise LiberoError("give task files or --suite NAME")
    tasks = suite_tasks(args.suite) if args.suite else [Path(f) for f in args.files]
    for t in tasks:
        if init_states_path(t).exists() and not args.overwrite:
            print(f"{init_states_path(t)}: exists, skipped (--overwrite to remake)")
            continue
        out = write_init_states(t, args.n, args.seed, overwrite=args.overwrite)
        print(f"{out}: {args.n} initial states (seed {args.seed})")
    return 0


def register(sub) -> None:
    s = sub.add_parser("init-states", help="sample and store the fixed initial states of task files")
    s.add_argument("files", nargs="*", help=".bddl task files")
    s.add_argument("--suite", help="every task of a suite")
    s.add_argument("--n", type=int, default=50, help="how many states (default 50)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--overwrite", action="store_true")
    s.set_defaults(func=cmd_init_states)
