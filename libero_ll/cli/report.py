"""`libero-ll report`: tables and figures over many runs, grouped by method across seeds."""

from __future__ import annotations

import shlex
import sys

from libero_ll.cli.args import SEED, open_fraction, positive_float


def cmd_report(args) -> int:
    from pathlib import Path

    from libero_ll.cli.args import output_folder
    from libero_ll.evaluation.report import generate_report

    output_folder(Path(args.output).parent, "-o", shown=args.output)

    command = "libero-ll " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if args.show_command else None
    reported: list = []
    out = generate_report(
        args.run_dirs,
        args.output,
        reference=args.reference,
        single_task=args.single_task or (),
        epsilon=args.epsilon,
        confidence=args.confidence,
        alpha=args.alpha,
        seed=args.seed,
        command=command,
        unfinished=args.unfinished,
        log=print,
        reported=reported,
    )
    print(f"report: {out / 'report.html'} ({len(reported)} run{'s' if len(reported) != 1 else ''}; tables also in report.md and *.csv)")
    return 0


def register(sub) -> None:
    s = sub.add_parser(
        "report", help="HTML/Markdown/CSV report over runs, grouped by suite, learner and policy"
    )
    s.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    s.add_argument(
        "-o", "--output", required=True, metavar="OUT_DIR", help="report folder (replaced atomically)"
    )
    s.add_argument("--reference", metavar="RUN_DIR", help="reference (multitask) run for intransigence I_k")
    s.add_argument(
        "--single-task", nargs="+", metavar="RUN_DIR", help="single-task runs for Continual World's FT"
    )
    s.add_argument("--epsilon", type=positive_float, default=1.0, help="CE's scaling factor (default 1)")
    s.add_argument(
        "--confidence", type=open_fraction, default=0.9, help="bootstrap interval coverage (default 0.9)"
    )
    s.add_argument(
        "--alpha", type=open_fraction, default=0.05, help="Welch's t-test significance level (default 0.05)"
    )
    s.add_argument("--seed", type=SEED, default=0, help="seed of the bootstrap (default 0)")
    s.add_argument(
        "--unfinished",
        action="store_true",
        help="report runs that have not ended as they stand (by default they are left out and named)",
    )
    s.add_argument(
        "--no-command",
        dest="show_command",
        action="store_false",
        help="do not print the command in the report",
    )
    s.set_defaults(func=cmd_report)
