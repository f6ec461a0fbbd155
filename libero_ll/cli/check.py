"""`libero-ll check`: parse and validate task files, optionally load them in the simulator."""

from __future__ import annotations

from libero_ll.cli.args import SEED


def cmd_check(args) -> int:
    import warnings

    from libero_ll.assets.categories import affordances
    from libero_ll.bddl.validate import check_file
    from libero_ll.errors import LiberoError

    bad = 0
    for f in args.files:
        notes: list = []
        spec, errors = check_file(f, affordances(), warnings=notes)
        for e in errors:
            print(e)
        for n in notes:
            print(f"{n.path}:{n.line}:{n.col}: warning: {n.message}")
        if errors:
            bad += 1
            continue
        if not args.load:
            print(f"{f}: ok")
            continue
        from libero_ll.envs.env import EnvConfig, LiberoEnv
        from libero_ll.envs.placement import PlacementWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                env = LiberoEnv(spec, EnvConfig(render=False))
                try:
                    env.reset(seed=args.seed)
                    init = env.predicate_values(spec.init)
                    goal = env.predicate_values(spec.goal_predicates())
                finally:
                    env.close()
            except LiberoError as e:
                print(f"{f}: error: {e}")
                bad += 1
                continue
        # Validation warnings were printed above; what placement says is printed here, once each.
        seen = set()
        for w in caught:
            text = str(w.message)
            if issubclass(w.category, PlacementWarning) and text not in seen:
                seen.add(text)
                print(f"{f}: warning: {text.removeprefix(f'{f}: ')}")
        print(f"{f}: ok, loaded and reset")
        for text, holds in init:
            print(f"  init {text}: {'holds' if holds else 'DOES NOT HOLD'}")
        for text, holds in goal:
            print(f"  goal {text}: {'holds' if holds else 'false'}")
    return 2 if bad else 0


def register(sub) -> None:
    s = sub.add_parser("check", help="parse and validate task files")
    s.add_argument("files", nargs="+")
    s.add_argument("--load", action="store_true", help="also build, reset and report init/goal predicates")
    s.add_argument("--seed", type=SEED, default=0, help="seed of the reset under --load (default 0)")
    s.set_defaults(func=cmd_check)
