"""`libero-ll check`: parse and validate task files, optionally load them in the simulator."""

from __future__ import annotations

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


def register(sub) -> None:
    s = sub.add_parser("check", help="parse and validate task files")
    s.add_argument("files", nargs="+")
    s.add_argument("--load", action="store_true", help="also build, reset and report init/goal predicates")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_check)
