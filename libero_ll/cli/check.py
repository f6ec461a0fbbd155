"""`libero-ll check`: parse and validate task files, optionally load them in the simulator."""

from __future__ import annotations

from libero_ll.cli.args import SEED


def _task_files(given: list[str]) -> list[str]:
    """The files to check: each file given, and the .bddl files in and below each folder given (LIBERO's
    `bddl_files/` holds a folder per suite), by path."""
    from pathlib import Path

    from libero_ll.errors import LiberoError

    out = []
    for f in given:
        if Path(f).is_dir():
            found = sorted(str(p) for p in Path(f).rglob("*.bddl"))
            if not found:
                raise LiberoError(f"{f}: a folder with no .bddl task files in it or below it")
            out += found
        else:
            out.append(f)
    return out


def cmd_check(args) -> int:
    import warnings

    from libero_ll.assets.categories import affordances, category_facts
    from libero_ll.bddl.parser import BddlError
    from libero_ll.bddl.validate import check_file
    from libero_ll.errors import LiberoError

    categories, facts = affordances(), category_facts()
    bad = 0
    for f in _task_files(args.files):
        notes: list = []
        spec, errors = check_file(f, categories, warnings=notes, facts=facts)
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
        from libero_ll.bddl.spec import iter_atoms
        from libero_ll.envs.env import EnvConfig, LiberoEnv
        from libero_ll.envs.placement import PlacementWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                env = LiberoEnv(spec, EnvConfig(render=False))
                try:
                    env.reset(seed=args.seed)
                    init = env.predicate_values(spec.init)
                    # Every atom of the goal once first, for an error at the atom the scene cannot evaluate;
                    # then each part the goal needs, Or and Not included, as the environment judges the goal.
                    env.predicate_values(list(dict.fromkeys(iter_atoms(spec.goal))))
                    goal = [(_text(c), env.geometry.evaluate(c)) for c in _conjuncts(spec.goal)]
                finally:
                    env.close()
            except BddlError as e:
                print(e)  # path:line:col: message, like the validation errors
                bad += 1
                continue
            except LiberoError as e:
                print(f"{f}: error: {str(e).removeprefix(f'{f}: ')}")
                bad += 1
                continue
        # Validation warnings were printed above; what placement says is printed here, once each.
        seen = set()
        for w in caught:
            text = str(w.message)
            if issubclass(w.category, PlacementWarning) and text not in seen:
                seen.add(text)
                print(f"{f}: warning: {text.removeprefix(f'{f}: ')}")
        # A reset that does not set up the init, or whose start already meets the goal, is a broken task.
        problems = [
            f"{_where(p.loc, f)}: init {text} does not hold after the reset (seed {args.seed})"
            for p, (text, holds) in zip(spec.init, init)
            if not holds
        ]
        if all(holds for _, holds in goal):
            loc = spec.goal.loc or spec.decl_locs.get(":goal")
            problems.append(
                f"{_where(loc, f)}: the goal already holds after the reset (seed {args.seed}): "
                "nothing would have to be done"
            )
        print(f"{f}: {'loaded and reset' if problems else 'ok, loaded and reset'}")
        for text, holds in init:
            print(f"  init {text}: {'holds' if holds else 'DOES NOT HOLD'}")
        for text, holds in goal:
            print(f"  goal {text}: {'holds' if holds else 'false'}")
        for line in problems:
            print(line)
        bad += bool(problems)
    return 2 if bad else 0


def _conjuncts(formula) -> list:
    """The parts of a goal that must all hold: the children of its (nested) Ands."""
    from libero_ll.bddl.spec import And

    if isinstance(formula, And):
        return [part for child in formula.children for part in _conjuncts(child)]
    return [formula]


def _text(formula) -> str:
    """A formula as `check --load` prints it: `(on a b)`, `(or (on a b) (not (up b)))`."""
    from libero_ll.bddl.spec import And, Not, Or, Predicate

    if isinstance(formula, Predicate):
        return f"({formula.name} {' '.join(formula.args)})"
    if isinstance(formula, Not):
        return f"(not {_text(formula.child)})"
    word = "and" if isinstance(formula, And) else "or" if isinstance(formula, Or) else None
    if word is None:
        raise TypeError(f"not a formula: {formula!r}")
    return f"({word} {' '.join(_text(c) for c in formula.children)})"


def _where(loc, path) -> str:
    """`path:line:col` of a position in the task file, or the file alone when the position is not known."""
    return str(loc) if loc is not None and loc.line else str(path)


def register(sub) -> None:
    s = sub.add_parser("check", help="parse and validate task files")
    s.add_argument("files", nargs="+", metavar="FILE",
                   help=".bddl task files (ours or LIBERO's), or folders of them (each .bddl in and below it: a suite's "
                   "folder, or LIBERO's bddl_files/ with a folder per suite)")
    s.add_argument("--load", action="store_true", help="also build, reset and report init/goal predicates")
    s.add_argument("--seed", type=SEED, default=0, help="seed of the reset under --load (default 0)")
    s.set_defaults(func=cmd_check)
