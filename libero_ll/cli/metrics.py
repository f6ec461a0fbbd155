"""`libero-ll metrics`: print a run's success matrix and metrics (FWT/NBT/AUC, or every metric with --all)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from libero_ll.cli.args import positive_float
from libero_ll.evaluation.metrics import metric_text


def cmd_metrics(args) -> int:
    import sys

    from libero_ll.evaluation.runs import config_edited, edited_config_warning, load_sessions

    _run_folder(args.run_dir, "")
    if config_edited(args.run_dir, load_sessions(args.run_dir)):
        print(f"warning: {edited_config_warning(args.run_dir)}", file=sys.stderr)
    if args.reference:
        _run_folder(args.reference, "--reference ")
    for path in args.single_task or ():
        _run_folder(path, "--single-task ")
    if not (Path(args.run_dir) / "success.json").is_file():
        from libero_ll.evaluation.runs import NotEvaluatedYet

        raise NotEvaluatedYet(Path(args.run_dir))
    if args.all or args.reference or args.single_task:
        print_all_metrics(Path(args.run_dir), args.json, args.reference, args.single_task or (), args.epsilon)
    else:
        print_metrics(Path(args.run_dir), as_json=args.json)
    return 0


def print_metrics(run_dir: Path, as_json: bool) -> None:
    """Print a run's success matrix and FWT/NBT/AUC (or the same as JSON)."""
    from libero_ll.evaluation.metrics import libero_metrics
    from libero_ll.evaluation.success import SuccessTensor

    tensor = SuccessTensor.load(Path(run_dir) / "success.json")
    m = libero_metrics(tensor)
    if as_json:
        out = {
            "run_dir": str(run_dir),
            "tasks": tensor.task_names,
            "matrix": _nan_none(tensor.matrix.tolist()),
            "unfinished": _unfinished(run_dir),
        }
        out.update({k: _nan_none(v) for k, v in m.items()})
        print(json.dumps(out, indent=2))
        return
    names = tensor.task_names
    print(f"run: {run_dir}")
    if (left := _unfinished(run_dir)) is not None:
        from libero_ll.experiments.run_files import training_now

        pid = training_now(run_dir)
        going = (f"training now{f' (pid {pid})' if pid else ''}" if pid is not None
                 else f"libero-ll train --resume {run_dir} goes on")
        print(f"unfinished: {left['stages_ended']} of {left['stages']} stages ended; the metrics cover the tasks "
              f"learnt so far ({going})")
    print("success matrix (row: after learning task i; column: tested on task j; - not evaluated)")
    print("        " + " ".join(f"  T{j + 1:<3}" for j in range(len(names))))
    for i, row in enumerate(tensor.matrix):
        cells = " ".join("    - " if math.isnan(v) else f"{v:6.2f}" for v in row)
        print(f"  T{i + 1:<4} {cells}")
    for j, n in enumerate(names):
        curve = ", ".join(f"e{e}:{c:.2f}" for e, c in zip(tensor.eval_epochs[j], tensor.curves[j]))
        print(f"  T{j + 1} {n}: {curve}")
    # NaN (nothing to average yet, e.g. NBT of a run stopped after its first task) is "n/a", as with --all.
    print(
        f"FWT {metric_text(m['fwt'])} (higher is better)  NBT {metric_text(m['nbt'])} (lower is better)  "
        f"AUC {metric_text(m['auc'])} (higher is better)"
    )


def _run_folder(path, option: str) -> None:
    """A LiberoError naming `path` (and the option that gave it) when it is not a run directory (`check_run_dir`);
    a folder with a success tensor alone is one here too, since metrics read nothing else."""
    from libero_ll.evaluation.runs import check_run_dir

    if not (Path(path) / "success.json").is_file():
        check_run_dir(path, option)


# Scalar metrics printed by --all: key, label, which way is better.
ALL_SCALARS = (
    ("fwt", "FWT (LIBERO)", "higher"),
    ("nbt", "NBT (LIBERO)", "lower"),
    ("auc", "AUC (LIBERO)", "higher"),
    ("A", "A, accuracy", "higher"),
    ("BWT", "BWT, backward transfer", "higher"),
    ("REM", "REM, remembering", "higher"),
    ("BWT_plus", "BWT+, positive backward transfer", "higher"),
    ("FWT_prime", "FWT', zero-shot forward transfer", "higher"),
    ("MS", "MS, model size efficiency", "higher"),
    ("SSS", "SSS, sample storage efficiency", "higher"),
    ("CE", "CE, computational efficiency", "higher"),
    ("CL_score", "CL_score, equal weights", "higher"),
    ("CL_score_W2", "CL_score, weights W2", "higher"),
    ("CL_score_W3", "CL_score, weights W3", "higher"),
    ("R_final", "R_K, mean success after the last task", "higher"),
    ("F_final", "F_K, forgetting after the last task", "lower"),
    ("I", "I, intransigence (mean over tasks)", "lower"),
    ("FT", "FT, Continual World forward transfer", "higher"),
)
PER_TASK = (
    ("fwt_per_task", "FWT_k"),
    ("nbt_per_task", "NBT_k"),
    ("auc_per_task", "AUC_k"),
    ("R_per_task", "R_k"),
    ("F_per_task", "F_k"),
    ("train_auc_per_task", "curve AUC_k"),
    ("I_per_task", "I_k"),
    ("FT_per_task", "FT_k"),
)


def print_all_metrics(
    run_dir: Path, as_json: bool, reference: str | None = None, single_task=(), epsilon: float = 1.0
) -> None:
    """Print every metric of a run (docs/metrics.md), or the same as JSON.

    Args:
        run_dir: the run directory.
        as_json: print one JSON object instead of text.
        reference: a reference (multitask) run directory, for intransigence.
        single_task: single-task run directories, for Continual World's forward transfer.
        epsilon: CE's scaling factor.
    """
    from libero_ll.evaluation.runs import load_run, measure_run

    run = load_run(run_dir)
    ref = load_run(reference) if reference else None
    singles = [load_run(p) for p in single_task]
    m = measure_run(run, ref, singles, epsilon)
    if as_json:
        out = {
            "run_dir": str(run_dir),
            "tasks": run.tensor.task_names,
            "matrix": _nan_none(run.tensor.matrix.tolist()),
            "unfinished": _unfinished(run_dir),
        }
        out.update({k: _nan_none(v) for k, v in m.items()})
        print(json.dumps(out, indent=2))
        return
    print_metrics(run_dir, as_json=False)
    print(f"method: suite {run.suite}, learner {run.learner}, policy {run.policy}, seed {run.seed}")
    for key, label, better in ALL_SCALARS:
        value = m[key]
        text = metric_text(value, "8.4f", "     n/a")
        why = f"  (n/a: {m['not_recorded'][key]})" if key in m["not_recorded"] else ""
        if key in m.get("partial", {}):
            why = f"  ({m['partial'][key]})"
        print(f"  {label:<42} {text}  {better} is better{why}")
    print(f"  CL_score criteria used: {', '.join(m['CL_score_criteria']) or 'none'}")
    print("per task:     " + " ".join(f"{'T' + str(j + 1):>7}" for j in range(m["K"])))
    for key, label in PER_TASK:
        cells = " ".join(metric_text(v, "7.3f", "    n/a") for v in m[key])
        print(f"  {label:<12}{cells}")


def _unfinished(run_dir) -> dict | None:
    """{"stages_ended", "stages"} of a run that has not ended (killed, or paused with `train --stages`)."""
    from libero_ll.evaluation.runs import unfinished_stages

    left = unfinished_stages(run_dir)
    return None if left is None else {"stages_ended": left[0], "stages": left[1]}


def _nan_none(v):
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if isinstance(v, list):
        return [_nan_none(x) for x in v]
    if isinstance(v, dict):
        return {k: _nan_none(x) for k, x in v.items()}
    return v


def register(sub) -> None:
    s = sub.add_parser(
        "metrics", help="print a run's success matrix and FWT/NBT/AUC (every metric with --all)"
    )
    s.add_argument("run_dir")
    s.add_argument("--json", action="store_true", help="print JSON instead of text")
    s.add_argument("--all", action="store_true", help="every metric of docs/metrics.md, not only FWT/NBT/AUC")
    s.add_argument(
        "--reference",
        metavar="RUN_DIR",
        help="reference (multitask) run for intransigence I_k; implies --all",
    )
    s.add_argument(
        "--single-task",
        nargs="+",
        metavar="RUN_DIR",
        help="single-task runs for Continual World's forward transfer; implies --all",
    )
    s.add_argument("--epsilon", type=positive_float, default=1.0, help="CE's scaling factor (default 1)")
    s.set_defaults(func=cmd_metrics)
