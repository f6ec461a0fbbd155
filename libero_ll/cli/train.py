"""`libero-ll train`: run a lifelong experiment from a config file."""

from __future__ import annotations

def cmd_train(args) -> int:
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import run_lifelong

    cfg = load_config(args.config, args.overrides)
    run_dir = run_lifelong(cfg)
    from libero_ll.cli.metrics import print_metrics

    print_metrics(run_dir, as_json=False)
    return 0


def register(sub) -> None:
    s = sub.add_parser("train", help="run a lifelong experiment from a config file")
    s.add_argument("config")
    s.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.epochs=3")
    s.set_defaults(func=cmd_train)
