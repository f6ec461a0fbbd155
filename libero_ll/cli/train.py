"""`libero-ll train`: run a lifelong experiment from a config file, or continue a killed one."""

from __future__ import annotations

from pathlib import Path

from libero_ll.errors import LiberoError


def cmd_train(args) -> int:
    from libero_ll.cli.metrics import print_metrics
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import run_lifelong

    if args.resume:
        if args.config or args.overrides:
            raise LiberoError("--resume continues a run with its own config.yaml; give no config or overrides")
        run_dir = Path(args.resume)
        if not (run_dir / "config.yaml").exists():
            raise LiberoError(f"--resume {run_dir}: not a run directory (no config.yaml)")
        cfg = load_config(run_dir / "config.yaml")
        run_dir = run_lifelong(cfg, resume=run_dir, max_stages=args.stages)
    else:
        if not args.config:
            raise LiberoError("give a config file (e.g. configs/smoke.yaml) or --resume RUN_DIR")
        cfg = load_config(args.config, args.overrides)
        run_dir = run_lifelong(cfg, max_stages=args.stages)
    print_metrics(run_dir, as_json=False)
    return 0


def register(sub) -> None:
    s = sub.add_parser("train", help="run a lifelong experiment from a config file, or continue one (--resume)")
    s.add_argument("config", nargs="?", help="YAML config, e.g. configs/smoke.yaml")
    s.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.epochs=3")
    s.add_argument("--resume", metavar="RUN_DIR", help="continue a killed run from its last completed epoch")
    s.add_argument("--stages", type=int, metavar="N",
                   help="end this call after N stages (the state between stages saved); --resume goes on")
    s.set_defaults(func=cmd_train)
