"""`libero-ll generate`: write a folder of task files (and their fixed initial states) from a short YAML spec."""

from __future__ import annotations

import time
from pathlib import Path

from libero_ll.cli.args import SEED, at_least, output_folder
from libero_ll.errors import LiberoError
from libero_ll.paths import atomic_write_bytes


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

    if args.spec and args.random is not None:
        raise LiberoError("give a spec YAML or --random N, not both")
    if not args.spec and args.random is None:
        raise LiberoError("give a spec YAML or --random N")
    if args.random is not None:
        plan = SuitePlan("random", random_requests(args.random, args.seed))
    else:
        plan = load_plan(args.spec)
    tasks = build_plan(plan)
    output_folder(args.out, "--out")
    out = Path(args.out)
    # What is in --out already is the user's: a task file is written only where none is or where it holds
    # the same text, and initial states only where none are or they are stale for an unchanged task,
    # unless --overwrite. A failing task is removed when this call wrote it, and a file it replaced is put back.
    written, keep_states = _plan_writes(tasks, out, args.overwrite, init_states=not args.no_init_states, n=args.n)
    earlier = _earlier_versions(written)
    there_before = {out / f"{t.name}.bddl" for t in tasks if (out / f"{t.name}.bddl").is_file()}
    for t in tasks:
        for msg in crowded_starts(t.spec):
            print(f"  note: {t.name}: {msg}; resets may have to retry")
    files = write_tasks(tasks, out)
    unchanged = len(files) - len(written)
    print(f"{out}: {len(written)} task files written" + (f", {unchanged} already there as generated" if unchanged
                                                          else ""))
    failed: dict[Path, list[str]] = {}
    try:
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
                _remove(f, written, earlier)
        good = [f for f in files if f not in failed]
        if not args.no_init_states:
            from libero_ll.envs.init_states import write_init_states

            start, todo = time.time(), [f for f in good if f not in keep_states]
            for i, f in enumerate(todo, 1):
                try:
                    write_init_states(f, n=args.n, seed=0, overwrite=True)
                except LiberoError as e:
                    failed[f] = [str(e)]
                    print(f"  {f.name}: {e}")
                    _remove(f, written, earlier)
                print(f"  initial states {i}/{len(todo)}", end="\r", flush=True)
            if todo:
                print(f"\n  initial states of {len(todo)} tasks written in {time.time() - start:.0f} s")
            kept = [f for f in good if f in keep_states]
            if kept:
                print(f"  {len(kept)} tasks' initial states were there and current, kept (--overwrite remakes them)")
    except KeyboardInterrupt:
        from libero_ll.envs.init_states import init_states_current

        if not args.no_init_states:
            missing = [f for f in files if f.exists() and not init_states_current(f)]
            if missing:
                print(f"\nstopped: {len(missing)} task files in {out} have no initial states yet: the same "
                      "command again checks the tasks and makes what is missing")
        raise
    if args.no_init_states:
        from libero_ll.envs.init_states import init_states_path

        for f in sorted(written):
            if init_states_path(f) in earlier:
                print(f"  note: {f.name}: its initial states are the replaced task's, which runs do not use: "
                      f"`libero-ll init-states --overwrite {f}` remakes them")
    _write_order(out, [f.stem for f in files if f not in failed])
    good = [f for f in files if f not in failed]
    if args.no_check:
        done = f"{_tasks(len(good))} not checked in the simulator"
    else:
        done = f"{len(good)} of {_tasks(len(files))} passed the checks ({args.resets} resets each)"
    # --out may hold tasks of earlier calls (order.txt lists them first): the folder's count is said apart.
    added = len([f for f in good if f not in there_before])
    total = len(list(out.glob("*.bddl")))
    print(f"{done}; {out} holds {_tasks(total)}: {added} added" + (f", {total - added} there before"
                                                                    if total > added else ""))
    explicit = {t.name for t, r in zip(tasks, plan.requests) if not r.drawn}
    bad = [f.stem for f in failed if f.stem in explicit]
    if bad:
        raise LiberoError(f"{len(bad)} task(s) of the spec failed their checks: {', '.join(bad)}")
    return 0


def _tasks(n: int) -> str:
    return f"{n} task{'s' if n != 1 else ''}"


def _write_order(out: Path, names: list[str]) -> None:
    """Keep the folder's learning order (ORDER_FILE): the tasks it lists already, then this spec's new ones in
    the spec's order; a listed task whose file is gone leaves the list."""
    from libero_ll.tasks.generator import write_text
    from libero_ll.tasks.registry import ORDER_FILE

    path = out / ORDER_FILE
    try:
        before = [n.strip() for n in path.read_text(encoding="utf-8").splitlines() if n.strip()]
    except (OSError, UnicodeDecodeError):
        before = []
    order = [n for n in before if (out / f"{n}.bddl").is_file()]
    order += [n for n in names if n not in order]
    if order != before:
        write_text(path, "".join(f"{n}\n" for n in order))


def _plan_writes(tasks, out: Path, overwrite: bool, init_states: bool, n: int = 50) -> tuple[set[Path], set[Path]]:
    """Which task files this call writes, and which tasks keep the initial states already beside them (those
    current and `n` in number).

    Raises LiberoError, before anything is written, when a file in `out` would be replaced without
    `overwrite`: a task file of another text, or initial states that are not those of the generated task or
    not `n` of them.
    """
    from libero_ll.envs.init_states import init_states_path, load_init_states

    def states_kept(path: Path) -> bool:
        try:
            return len(load_init_states(path)) == n
        except LiberoError:
            return False

    written, keep_states, replaced = set(), set(), []
    for t in tasks:
        path = out / f"{t.name}.bddl"
        if path.is_dir() or init_states_path(path).is_dir():
            raise LiberoError(f"--out {out}: {path.name} or its initial states is a folder")
        same = path.is_file() and path.read_text(encoding="utf-8", errors="replace") == t.text
        if not same:
            written.add(path)
            if path.exists():
                replaced.append(path.name)
        if init_states and init_states_path(path).exists():
            if same and states_kept(path) and not overwrite:
                keep_states.add(path)
            else:
                replaced.append(init_states_path(path).name)
    if replaced and not overwrite:
        shown = ", ".join(replaced[:5]) + (f" and {len(replaced) - 5} more" if len(replaced) > 5 else "")
        raise LiberoError(
            f"--out {out}: {len(replaced)} files there would be replaced ({shown}): they differ from the generated "
            f"tasks or are initial states of another version or not {n} of them (--n); pass --overwrite to "
            "replace them, or choose another --out"
        )
    return written, keep_states


def _earlier_versions(written: set[Path]) -> dict[Path, bytes]:
    """The bytes of the task files this call replaces (--overwrite) and of their initial states, to put
    back if the new task fails."""
    from libero_ll.envs.init_states import init_states_path

    return {p: p.read_bytes() for f in written for p in (f, init_states_path(f)) if p.is_file()}


def _remove(task_file: Path, written: set[Path], earlier: dict[Path, bytes]) -> None:
    """Take a failed task out of the folder when this call wrote it, putting back the file (and initial
    states) it replaced; a task file that was there before, unchanged, is left."""
    from libero_ll.envs.init_states import init_states_path

    if task_file not in written:
        print(f"  {task_file.name}: was there before this call, left in place although it failed")
        return
    for path in (task_file, init_states_path(task_file)):
        if path in earlier:
            atomic_write_bytes(path, earlier[path])
        else:
            path.unlink(missing_ok=True)
    if task_file in earlier:
        print(f"  {task_file.name}: the file it replaced is put back"
              + (", with its initial states" if init_states_path(task_file) in earlier else ""))


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
    s.add_argument(
        "--overwrite",
        action="store_true",
        help="replace task files in --out that differ from the generated ones, and remake initial states "
        "that are there (without it such files stop the command before anything is written)",
    )
    s.set_defaults(func=cmd_generate)
