"""`libero-ll evaluate`: roll out a run's saved policy again, with more rollouts, new initial states or videos."""

from __future__ import annotations

import json
import sys

from libero_ll.cli.args import SEED, at_least


def cmd_evaluate(args) -> int:
    from pathlib import Path

    from libero_ll.cli.args import output_file, output_folder
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.evaluate import (
        ACTIONS,
        EvaluationInterrupted,
        check_evaluation,
        evaluate_run,
        save_evaluation,
    )
    from libero_ll.evaluation.runs import check_run_dir

    if args.actions is not None and args.actions not in ACTIONS:
        raise LiberoError(f"--actions {args.actions}: give {' or '.join(ACTIONS)}")
    several = len(args.run_dirs) > 1
    if several and args.out:
        raise LiberoError("--out names one file: give one run directory, or leave --out out (each run's results "
                          "then go to its own evaluations/ folder)")
    for run_dir in args.run_dirs:
        check_run_dir(run_dir)
    # Paths to write are checked before any rollout, so that a typo does not cost the evaluation.
    if args.out:
        out = output_file(args.out, "--out")
        runs = {Path(r).resolve() for r in args.run_dirs}
        if out.exists() and runs & {out.resolve().parent, *out.resolve().parents} and not _evaluation_file(out):
            raise LiberoError(f"--out {out} is a file of the run itself; give a new file name")
        if out.exists() and not args.overwrite:
            raise LiberoError(f"--out {out} already exists; give a new file name, or --overwrite to replace it")
    if args.video:
        output_folder(args.video, "--video")
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    # Several runs' videos go to one folder per run inside --video, named after the run (numbered when two
    # runs of different folders share a name).
    names = [Path(r).resolve().name for r in args.run_dirs]
    folders = [n if names.count(n) == 1 else f"{k + 1}_{n}" for k, n in enumerate(names)]
    videos = [None if args.video is None else (Path(args.video) / folder if several else Path(args.video))
              for folder in folders]
    if several:
        # Every run's checkpoint, tasks, initial states and video folder are checked before the first run's
        # rollouts (each run checks its own again): a stage or task the last run lacks is said at once.
        for run_dir, video in zip(args.run_dirs, videos):
            try:
                check_evaluation(run_dir, args.checkpoint, _split(args.tasks), new_states=args.new_states,
                                 video_dir=video, overwrite=args.overwrite)
            except LiberoError as e:
                raise LiberoError(_of_run(run_dir, e)) from None
    results = []
    for run_dir, video in zip(args.run_dirs, videos):
        try:
            evaluation = evaluate_run(
                run_dir, checkpoint=args.checkpoint, tasks=_split(args.tasks), rollouts=args.rollouts,
                new_states=args.new_states, init_seed=args.init_seed, max_steps=args.max_steps,
                workers=args.workers, video_dir=video, log=log, actions=args.actions, overwrite=args.overwrite,
            )
        except EvaluationInterrupted as e:
            done = e.evaluation.tasks
            path = save_evaluation(e.evaluation, args.out)
            several = len(done) != 1
            print(f"the {len(done)} task{'s' if several else ''} evaluated before the stop "
                  f"({', '.join(str(r.number) for r in done)}) {'are' if several else 'is'} written to {path}, "
                  "marked interrupted", file=sys.stderr)
            raise e.stop from None
        path = save_evaluation(evaluation, args.out)
        results.append(evaluation.to_dict())
        if not args.json:
            _print_table(evaluation)
        log(f"written to {path} ({evaluation.seconds:.0f}s)")
    if args.json:
        print(json.dumps(results if several else results[0], indent=2))
    return 0


def _evaluation_file(path) -> bool:
    """Whether `path` holds an earlier `evaluate --out` result (JSON naming a run and its tasks)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and "run_dir" in data and "tasks" in data


def _of_run(run_dir, error: Exception) -> str:
    """An error's message said of its run: `RUN_DIR: message`, unless it begins with the run's path already."""
    text, head = str(error), str(run_dir).rstrip("/")
    return text if text[len(head):len(head) + 1] in (":", " ", "/") and text.startswith(head) else f"{head}: {text}"


def _print_table(evaluation) -> None:
    print(f"{'task':<6} {'success':>8} {'95% interval':>13} {'rollouts':>9}  name")
    for r in evaluation.tasks:
        print(f"{r.number:<6} {r.rate:>8.2f} {r.low:>6.2f}-{r.high:<6.2f} {r.rollouts:>9}  {r.task}")
    if len(evaluation.tasks) > 1:
        wins = sum(r.successes for r in evaluation.tasks)
        total = sum(r.rollouts for r in evaluation.tasks)
        print(f"{'all':<6} {wins / total:>8.2f} {'':>13} {total:>9}")
    if evaluation.videos:
        print(f"videos in {evaluation.videos}")


def _split(items: list[str] | None) -> list[str] | None:
    """Task arguments, each possibly a comma-separated list."""
    if not items:
        return None
    return [part for item in items for part in item.split(",") if part]


def register(sub) -> None:
    s = sub.add_parser(
        "evaluate",
        help="roll out a run's saved policy (final or a stage's) again: more rollouts, new initial states, videos",
    )
    s.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (e.g. a sweep's, DIR/*)")
    s.add_argument(
        "--checkpoint", default="final",
        help="'final' (the policy after the last stage; default), a task number from 1 (the policy kept "
        "when that task's stage ended), N:last (the weights that stage's training ended with, e.g. 3:last, when "
        "it kept an earlier epoch's) or 'latest' (the weights of the last saved epoch, as the run evaluates "
        "them: a run stopped in mid-stage too)",
    )
    s.add_argument(
        "--tasks", nargs="*", metavar="TASK",
        help="task numbers from 1 or names (default: all for the final policy, the stage's own for a stage's, "
        "the tasks begun for 'latest')",
    )
    s.add_argument("--rollouts", type=at_least(1), help="rollouts per task (default: the run's eval.rollouts)")
    s.add_argument(
        "--new-states", type=at_least(1), metavar="N",
        help="start from N initial states sampled anew (seeded by --init-seed and each task's name, and checked "
        "like `libero-ll init-states`) instead of the run's own (those also picked the kept epoch); --rollouts "
        "defaults to N",
    )
    s.add_argument(
        "--init-seed", type=SEED, help="seed of the new states (default: the run's eval.init_seed + 1000)"
    )
    s.add_argument("--max-steps", type=at_least(1), help="episode cap in policy steps (default: the run's eval.max_steps)")
    s.add_argument("--workers", type=at_least(0), help="evaluation processes, 0 for one per core (default: the run's)")
    s.add_argument(
        "--video", metavar="DIR",
        help="write each rollout's cameras as DIR/<task>/rolloutNNN_<outcome>.mp4 (DIR/<run>/<task>/... for several runs)",
    )
    s.add_argument(
        "--out", metavar="FILE",
        help="write the results here (default: RUN_DIR/evaluations/<checkpoint>_<time>.json)",
    )
    s.add_argument(
        "--actions", metavar="sampled|mode",
        help="act on actions sampled from the policy's head (the paper's protocol) or on its most likely "
        "component's mean (default: as the run did, policy.cfg.deterministic_eval)",
    )
    s.add_argument(
        "--overwrite", action="store_true",
        help="replace an existing --out file, and remove the rollout videos that --video already holds of the "
        "tasks evaluated (all of them, before the new ones are written); without it either is refused",
    )
    s.add_argument("--json", action="store_true", help="print the results as JSON (progress goes to stderr)")
    s.set_defaults(func=cmd_evaluate)
