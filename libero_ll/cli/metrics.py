"""`libero-ll metrics`: print a run's success matrix and metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path


def cmd_metrics(args) -> int:
    print_metrics(Path(args.run_dir), as_json=args.json)
    return 0


def print_metrics(run_dir: Path, as_json: bool) -> None:
    """Print a run's success matrix and FWT/NBT/AUC (or the same as JSON)."""
    from libero_ll.evaluation.metrics import libero_metrics
    from libero_ll.evaluation.success import SuccessTensor

    tensor = SuccessTensor.load(Path(run_dir) / "success.json")
    m = libero_metrics(tensor)
    if as_json:
        out = {"run_dir": str(run_dir), "tasks": tensor.task_names, "matrix": _nan_none(tensor.matrix.tolist())}
        out.update({k: _nan_none(v) for k, v in m.items()})
        print(json.dumps(out, indent=2))
        return
    names = tensor.task_names
    print(f"run: {run_dir}")
    print("success matrix (row: after learning task i; column: tested on task j; - not evaluated)")
    print("        " + " ".join(f"  T{j + 1:<3}" for j in range(len(names))))
    for i, row in enumerate(tensor.matrix):
        cells = " ".join("    - " if math.isnan(v) else f"{v:6.2f}" for v in row)
        print(f"  T{i + 1:<4} {cells}")
    for j, n in enumerate(names):
        curve = ", ".join(f"e{e}:{c:.2f}" for e, c in zip(tensor.eval_epochs[j], tensor.curves[j]))
        print(f"  T{j + 1} {n}: {curve}")
    print(f"FWT {m['fwt']:.3f} (higher is better)  NBT {m['nbt']:.3f} (lower is better)  AUC {m['auc']:.3f} (higher is better)")


def _nan_none(v):
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if isinstance(v, list):
        return [_nan_none(x) for x in v]
    return v


def register(sub) -> None:
    s = sub.add_parser("metrics", help="print a run's success matrix and FWT/NBT/AUC")
    s.add_argument("run_dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_metrics)
