"""`libero-ll sweep`: run a grid of configs x seeds x task orders on Ray, restartable, then report on it."""

from __future__ import annotations

import shlex
import sys


def cmd_sweep(args) -> int:
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.sweep import check_existing, load_sweep, run_sweep

    if args.cpus is not None and args.cpus < 1:
        raise LiberoError(f"--cpus must be 1 or more, got {args.cpus}")
    if args.cpus is not None and args.address:
        raise LiberoError("--cpus sets the CPUs of a local Ray; a cluster (--address) has its own: leave one out")
    sweep = load_sweep(args.sweep, args.output, args.overrides)
    if args.list:
        differ = 0
        for r in sweep.runs:
            try:
                check_existing(r)
                print(f"{r.state():8}  {r.run_dir}")
            except LiberoError as e:
                differ += 1
                print(f"{'differs':8}  {r.run_dir}\n          {e}")
        print(f"{len(sweep.runs)} runs" + (f"; {differ} started with another config: the sweep would stop at "
                                          "them" if differ else ""))
        return 1 if differ else 0
    command = "libero-ll " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    result = run_sweep(sweep, address=args.address, cpus=args.cpus, report=not args.no_report, command=command)
    print(f"sweep {sweep.name} finished in {result.seconds / 60:.1f} min: {len(result.finished)} of "
          f"{len(sweep.runs)} runs done, {len(result.failed)} failed")
    for run_dir, msg in result.failed:
        print(f"  failed: {run_dir}: {msg}")
    return 1 if result.failed else 0


def register(sub) -> None:
    s = sub.add_parser(
        "sweep", help="run a sweep file (overrides x seeds x task orders) on Ray; rerun it to continue"
    )
    s.add_argument("sweep", help="sweep YAML, e.g. configs/sweeps/table2_smoke.yaml")
    s.add_argument("overrides", nargs="*", help="key=value overrides of every run, e.g. data.dir=/data/quickstart")
    s.add_argument("-o", "--output", metavar="DIR", help="folder of the run directories (default: the file's output_dir)")
    s.add_argument("--address", help="a running Ray cluster (host:port or auto); default: a local Ray for this sweep")
    s.add_argument("--cpus", type=int, help="CPUs of the local Ray (default: every core)")
    s.add_argument("--list", action="store_true", help="list the runs and their state (new, partial, finished); run none")
    s.add_argument("--no-report", action="store_true", help="do not write OUTPUT/report at the end")
    s.set_defaults(func=cmd_sweep)
