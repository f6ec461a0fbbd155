"""The `libero-ll` command: parse arguments, load config, call one function per subcommand."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from libero_ll.errors import LiberoError


def cmd_check(args) -> int:
    from libero_ll.assets.categories import affordances
    from libero_ll.bddl.validate import check_file

    bad = 0
    for f in args.files:
        spec, errors = check_file(f, affordances())
        for e in errors:
            print(e)
        if errors:
            bad += 1
            continue
        if args.load:
            from libero_ll.envs.env import EnvConfig, LiberoEnv

            env = LiberoEnv(spec, EnvConfig(render=False))
            try:
                env.reset(seed=args.seed)
                print(f"{f}: ok, loaded and reset")
                for text, holds in env.predicate_values(spec.init):
                    print(f"  init {text}: {'holds' if holds else 'DOES NOT HOLD'}")
                for text, holds in env.predicate_values(spec.goal_predicates()):
                    print(f"  goal {text}: {'holds' if holds else 'false'}")
            finally:
                env.close()
        else:
            print(f"{f}: ok")
    return 2 if bad else 0


def cmd_render(args) -> int:
    import numpy as np
    from PIL import Image

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(args.file, EnvConfig(image_size=args.size, robot_mesh=args.robot_mesh))
    try:
        obs = env.reset(seed=args.seed)
        img = np.concatenate([obs["agentview_rgb"], obs["eye_in_hand_rgb"]], axis=1)
    finally:
        env.close()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp.png")
    Image.fromarray(img).save(tmp)
    tmp.replace(out)
    print(f"wrote {out} (agentview | eye-in-hand, {args.size}x{args.size} each)")
    return 0


def cmd_collect(args) -> int:
    from libero_ll.data.collect import collect_task
    from libero_ll.envs.env import EnvConfig
    from libero_ll.experiments.lifelong import suite_tasks

    if bool(args.suite) == bool(args.task):
        raise LiberoError("give either --suite NAME or --task FILE")
    tasks = suite_tasks(args.suite, args.tasks) if args.suite else [Path(args.task)]
    env_cfg = EnvConfig(image_size=args.image_size, robot_mesh=args.robot_mesh)
    out = Path(args.out) if args.out else Path("datasets") / (args.suite or "tasks")
    rows = []
    for t in tasks:
        path = None if args.dry_run else out / f"{t.stem}.hdf5"
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and not args.overwrite:
                print(f"{path}: exists, skipped (--overwrite to redo)")
                continue
        stats = collect_task(t, path, args.demos, args.seed, env_cfg, max_steps=args.max_steps, progress=_progress)
        rows.append(stats)
        where = "dry run" if path is None else str(path)
        print(
            f"{t.stem}: expert success {stats.success_rate:.0%} ({stats.kept}/{stats.attempts}), "
            f"mean length {stats.mean_length:.0f} steps [{where}]"
        )
    if rows:
        total = sum(r.kept for r in rows) / max(sum(r.attempts for r in rows), 1)
        print(f"{len(rows)} tasks, overall expert success {total:.0%}")
    return 0


def _progress(name: str, done: int, total: int) -> None:
    print(f"\r  {name}: {done}/{total} demos", end="\n" if done == total else "", file=sys.stderr, flush=True)


def cmd_train(args) -> int:
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import run_lifelong

    cfg = load_config(args.config, args.overrides)
    run_dir = run_lifelong(cfg)
    print_metrics(run_dir, as_json=False)
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="libero-ll", description="Lifelong imitation learning for robot manipulation.")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("check", help="parse and validate task files")
    s.add_argument("files", nargs="+")
    s.add_argument("--load", action="store_true", help="also build, reset and report init/goal predicates")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("render", help="write both camera images of a reset to a PNG")
    s.add_argument("file")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--size", type=int, default=128)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--robot-mesh", default="visual", choices=["visual", "collision"])
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("collect", help="write scripted-expert demos for a task or suite")
    s.add_argument("--suite")
    s.add_argument("--task", help="a single .bddl file")
    s.add_argument("--tasks", nargs="*", help="task names within the suite")
    s.add_argument("--demos", type=int, default=50)
    s.add_argument("--out", help="output folder (default datasets/<suite>)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--image-size", type=int, default=128)
    s.add_argument("--robot-mesh", default="visual", choices=["visual", "collision"])
    s.add_argument("--max-steps", type=int, default=400)
    s.add_argument("--dry-run", action="store_true", help="run the expert without writing; print success per task")
    s.add_argument("--overwrite", action="store_true")
    s.set_defaults(func=cmd_collect)

    s = sub.add_parser("train", help="run a lifelong experiment from a config file")
    s.add_argument("config")
    s.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.epochs=3")
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("metrics", help="print a run's success matrix and FWT/NBT/AUC")
    s.add_argument("run_dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_metrics)
    return p


def main(argv: list[str] | None = None) -> int:
    # Spinning OpenMP threads make 2-thread torch many times slower when the simulator shares the cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LiberoError as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
