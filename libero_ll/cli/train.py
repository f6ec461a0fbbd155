"""`libero-ll train`: run a lifelong experiment from a config file, or continue a killed one."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
from pathlib import Path

from libero_ll.cli.args import at_least
from libero_ll.errors import LiberoError
from libero_ll.signals import Terminated

# The exit status of a process ended by SIGTERM, as a shell reports it (128 + 15).
EXIT_TERMINATED = 128 + signal.SIGTERM
# And of one ended by Ctrl-C (SIGINT).
EXIT_INTERRUPTED = 128 + signal.SIGINT


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Raise Terminated in this process's main thread on SIGTERM while the block runs. Only this process: the
    evaluation and collection workers are spawned (their own interpreters, with their own handling); a process
    forked from this one that receives SIGTERM ends as it would without the handler."""
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Terminated("SIGTERM (a termination signal: kill, timeout or a batch scheduler)")

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_train(args) -> int:
    run_dir = None
    try:
        # SIGTERM comes as Terminated: the command line's `main` runs every command under sigterm_as_interrupt.
        # Imported here, inside the try: a Ctrl-C while torch loads is told as one before the run began.
        from libero_ll.cli.metrics import print_metrics
        from libero_ll.experiments.config import load_config
        from libero_ll.experiments.lifelong import run_lifelong

        if args.resume:
            if args.config or args.overrides:
                raise LiberoError("--resume continues a run with its own config.yaml; give no config or overrides")
            from libero_ll.evaluation.runs import check_run_dir

            run_dir = check_run_dir(args.resume, "--resume ")
            cfg = load_config(run_dir / "config.yaml", run=True)
            run_dir = run_lifelong(cfg, resume=run_dir, max_stages=args.stages, lock=True)
        else:
            if not args.config:
                raise LiberoError("give a config file (e.g. configs/smoke.yaml) or --resume RUN_DIR")
            cfg = load_config(args.config, args.overrides)
            run_dir = run_lifelong(cfg, max_stages=args.stages, lock=True)
        print_metrics(run_dir, as_json=False)
    except KeyboardInterrupt as e:
        # Ctrl-C, or SIGTERM (Terminated). A new run's folder is known once run_lifelong has made it.
        run_dir = getattr(e, "run_dir", None) or run_dir
        if isinstance(e, Terminated):
            print(stopped_line("terminated", run_dir), file=sys.stderr)
            return EXIT_TERMINATED
        print(stopped_line("interrupted", run_dir), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def stopped_line(word: str, run_dir: Path | None) -> str:
    """What a run stopped by Ctrl-C or SIGTERM (`word`: "interrupted" or "terminated") has kept, read from its
    folder as the stop left it, and the command that goes on from there."""
    if run_dir is None:  # before anything else: the library may not have loaded yet
        return f"{word} before the run began; run the same command again to start it"
    from libero_ll.evaluation.runs import PROGRESS_FILE
    from libero_ll.experiments.checkpoint import FINAL_POLICY
    from libero_ll.experiments.lifelong import STATE_FILE

    resume = shlex.join(["libero-ll", "train", "--resume", str(run_dir)])
    if (run_dir / FINAL_POLICY).exists():
        return (f"{word} after the run had ended: its results are in {run_dir} (libero-ll metrics {run_dir}); "
                f"there is nothing to resume")
    if not (run_dir / STATE_FILE).exists():
        return (f"{word} before the run's first save: nothing it trained is kept (demos it collected are); "
                f"start it again with {resume}")
    try:
        progress = json.loads((run_dir / PROGRESS_FILE).read_text(encoding="utf-8"))
        ended = int(progress["stage"]) >= int(progress["stages"])
    except (OSError, ValueError, KeyError, TypeError):
        ended = False
    if ended:
        return (f"{word} as the run ended, before its final policy was written; {resume} writes it, training "
                f"nothing again")
    return f"{word}: the run is saved at its last completed epoch; continue it with {resume}"


def register(sub) -> None:
    s = sub.add_parser("train", help="run a lifelong experiment from a config file, or continue one (--resume)")
    s.add_argument("config", nargs="?", help="YAML config, e.g. configs/smoke.yaml")
    s.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.epochs=3")
    s.add_argument("--resume", metavar="RUN_DIR", help="continue a killed run from its last completed epoch")
    s.add_argument("--stages", type=at_least(1), metavar="N",
                   help="end this call after N stages (the state between stages saved); --resume goes on")
    s.set_defaults(func=cmd_train)
