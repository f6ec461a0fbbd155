"""Regenerate the shipped suites (bddl_tasks/<suite>/) from their specs in libero_ll/tasks/suites/.

The .bddl files come out byte for byte the same on every run. With --check every task is loaded in
the simulator and reset a few times (init predicates must hold, the goal must be false); with
--init-states the 50 fixed initial states (seed 0) are written for every task whose stored ones are
missing or no longer match the task file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from libero_ll.errors import LiberoError
from libero_ll.tasks.registry import TASKS_ROOT, suite_names, write_suite


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=TASKS_ROOT, help="root folder of the suite folders")
    p.add_argument("--suites", nargs="*", default=suite_names(), help="suites to make (default: all five)")
    p.add_argument("--check", action="store_true", help="load and reset every task in the simulator")
    p.add_argument("--seeds", type=int, default=2, help="resets per task for --check")
    p.add_argument("--init-states", action="store_true", help="write missing or stale fixed initial states")
    args = p.parse_args(argv)
    try:
        failed = 0
        for suite in args.suites:
            files = write_suite(suite, args.out)
            print(f"{suite}: {len(files)} task files in {args.out / suite}")
            if args.check:
                from libero_ll.tasks.generator import check_task

                for f in files:
                    problems = check_task(f, seeds=range(args.seeds))
                    for msg in problems:
                        print(f"  {f.name}: {msg}")
                    failed += bool(problems)
            if args.init_states:
                from libero_ll.envs.init_states import load_init_states, write_init_states

                for f in files:
                    try:
                        load_init_states(f)
                        continue
                    except LiberoError:
                        pass
                    t = time.time()
                    out = write_init_states(f, overwrite=True)
                    print(f"  {out.name}: 50 initial states ({time.time() - t:.1f} s)", flush=True)
        if failed:
            print(f"{failed} task(s) failed the checks", file=sys.stderr)
            return 1
    except LiberoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
