"""`libero-ll list`: the suites and their tasks, the learners and their options, the policies and their keys."""

from __future__ import annotations

import textwrap

WIDTH = 110


def cmd_list(args) -> int:
    from libero_ll.experiments import catalog
    from libero_ll.experiments.config import load_config

    what, overrides = args.what, list(args.overrides or [])
    if what is not None and "=" in what:  # `libero-ll list plugins=[...]`
        what, overrides = None, [what, *overrides]
    ignored = [o for o in overrides if o.partition("=")[0].strip() != "plugins"]
    if ignored:
        from libero_ll.errors import LiberoError

        raise LiberoError(f"list takes plugins=[FILE.py] only (what it lists does not depend on settings); got "
                          f"{', '.join(ignored)}")
    load_config(None, overrides)  # imports the plugins it names, whose learners and policies are listed too
    if what is None:
        print("suites (suite=NAME):")
        _names(catalog.suites())
        print("\nlearners (learner.name=NAME; `libero-ll list learners` for their options):")
        _names(catalog.learners())
        print("\npolicies (policy.name=NAME; `libero-ll list policies` for their keys):")
        _names(catalog.policies())
        return 0
    if what in ("learners", "policies"):
        entries = catalog.learners() if what == "learners" else catalog.policies()
        where = "learner.options.KEY=VALUE" if what == "learners" else "policy.cfg.KEY=VALUE"
        print(f"{what} and their {'options' if what == 'learners' else 'keys'} ({where}), with their defaults")
        for entry in entries:
            print(f"\n{entry.name}: {entry.summary}  [{entry.source}]")
            if not entry.keys:
                print("  (no options)")
            heads = [f"{key} = {_value(default)}" for key, default, _ in entry.keys]
            column = min(max((len(h) for h in heads), default=0), 34)
            for head, (_, _, text) in zip(heads, entry.keys):
                _key(head, text, column)
        return 0
    entry = catalog.suite(what)
    print(f"{entry.name}: {entry.summary}  [{entry.source}]")
    heads = [f"{i:>3} {key}" for i, (key, _, _) in enumerate(entry.keys, 1)]
    column = max((len(h) for h in heads), default=0)
    for head, (_, _, text) in zip(heads, entry.keys):
        _key(head, text, column)
    if entry.unreadable:
        import sys

        n = len(entry.unreadable)
        print(f"error: {n} task file{'s' if n != 1 else ''} of {entry.source} cannot be read: "
              f"{', '.join(entry.unreadable)}", file=sys.stderr)
        return 2
    return 0


def _names(entries) -> None:
    width = max((len(e.name) for e in entries), default=0)
    for e in entries:
        print(f"  {e.name:<{width}}  {e.summary}")


def _key(head: str, text: str, column: int = 40) -> None:
    if not text:
        print(f"  {head}")
        return
    lines = textwrap.wrap(text, WIDTH - column - 4) or [""]
    if len(head) > column:
        print(f"  {head}")
        first, rest = lines[0], lines[1:]
        print(f"  {'':<{column}}  {first}")
    else:
        print(f"  {head:<{column}}  {lines[0]}")
        rest = lines[1:]
    for line in rest:
        print(f"  {'':<{column}}  {line}")


def _value(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else str(v)


def register(sub) -> None:
    s = sub.add_parser(
        "list",
        help="the suites, learners and policies a config can name; a suite's tasks; every learner's options or "
             "policy's keys",
        description="Without WHAT: the suites, learners and policies. WHAT: a suite or folder of task files (its "
                    "tasks, in learning order, with their instructions), `learners` (each one's options) or "
                    "`policies` (each one's keys). plugins=[FILE.py] lists those of your own code too.",
    )
    s.add_argument("what", nargs="?", metavar="WHAT", help="a suite or task folder, learners, or policies")
    s.add_argument("overrides", nargs="*", metavar="plugins=[FILE.py]", help="code of your own to import first")
    s.set_defaults(func=cmd_list)
