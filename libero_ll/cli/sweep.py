"""`libero-ll sweep`: run a grid of configs x seeds x task orders on Ray, restartable, then report on it."""

from __future__ import annotations

import shlex
import signal
import sys


def cmd_sweep(args) -> int:
    from libero_ll.cli.train import EXIT_TERMINATED, sigterm_as_interrupt
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.sweep import check_existing, load_sweep, missing_init_from, run_sweep

    if args.cpus is not None and args.cpus < 1:
        raise LiberoError(f"--cpus must be 1 or more, got {args.cpus}")
    if args.cpus is not None and args.address:
        raise LiberoError("--cpus sets the CPUs of a local Ray; a cluster (--address) has its own: leave one out")
    # Listing works before the runs that init_from names exist (a pretraining run not made yet); a sweep does not.
    sweep = load_sweep(args.sweep, args.output, args.overrides, check_init=not args.list)
    if args.list:
        differ = waiting = 0
        for r in sweep.runs:
            try:
                check_existing(r)
                print(f"{r.state():8}  {r.run_dir}")
            except LiberoError as e:
                differ += 1
                print(f"{'differs':8}  {r.run_dir}\n          {e}")
            why = missing_init_from(r)
            if why is not None:
                waiting += 1
                print(f"          {why}")
        notes = [f"{differ} started with another config: the sweep would stop at them"] if differ else []
        if waiting:
            notes.append(f"{waiting} start from an init_from that is not there yet: the sweep refuses to start "
                         "until it is")
        print(f"{len(sweep.runs)} runs" + "".join(f"; {n}" for n in notes))
        return 1 if differ else 0
    command = "libero-ll " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    terminated: list[int] = []
    try:
        with sigterm_as_interrupt():
            _note_sigterm(terminated)
            result = run_sweep(sweep, address=args.address, cpus=args.cpus, report=not args.no_report,
                               command=command)
    except KeyboardInterrupt:
        # Ray turns what a signal handler raises during its calls into a plain KeyboardInterrupt: the note says
        # whether it was SIGTERM.
        if not terminated:
            raise
        print(f"terminated: each run is saved at its last completed epoch; continue the sweep with {command}",
              file=sys.stderr)
        return EXIT_TERMINATED
    print(f"sweep {sweep.name} finished in {result.seconds / 60:.1f} min: {len(result.finished)} of "
          f"{len(sweep.runs)} runs done, {len(result.failed)} failed")
    for run_dir, msg in result.failed:
        print(f"  failed: {run_dir}: {msg}")
    return 1 if result.failed else 0


def _note_sigterm(came: list[int]) -> None:
    """Make the SIGTERM handler in place (sigterm_as_interrupt's, which restores its predecessor at its end) also
    append the signal to `came`; nothing when no Python handler is in place (not the main thread)."""
    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler):
        return

    def noting(signum, frame):
        came.append(signum)
        handler(signum, frame)

    signal.signal(signal.SIGTERM, noting)


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
