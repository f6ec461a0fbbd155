"""Check a TaskSpec for meaning errors (undeclared names, bad targets, value ranges, categories).

Unlike the parser, which stops at the first problem, validation returns every problem it finds,
each located at the token that caused it. A few things that LIBERO's own files do and that do no
harm (a region nobody uses whose target is not declared) are warnings, not errors.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from libero_ll.bddl.parser import NAME_RE, BddlError, parse_file
from libero_ll.bddl.spec import (
    PREDICATE_ARITY,
    PREDICATE_SPELLING,
    PROBLEM_CLASSES,
    And,
    Loc,
    Predicate,
    Region,
    TaskSpec,
    iter_atoms,
)

# Predicates whose first argument is a thing that moves or is placed, never a region.
_FIRST_ARG_IS_INSTANCE = ("on", "in", "up")


class BddlWarning(UserWarning):
    """A harmless oddity of a task file (issued through Python's warnings when a scene is built)."""


class _Validator:
    def __init__(self, spec: TaskSpec, categories: Mapping[str, Sequence[str]] | None):
        self.spec = spec
        self.categories = categories
        self.errors: list[BddlError] = []
        self.warnings: list[BddlError] = []
        self.unknown = Loc(spec.path or "<spec>", 0, 0)
        self.instances = spec.instances()
        self.used = {a for p in [*spec.init, *iter_atoms(spec.goal)] for a in p.args}

    def add(self, loc: Loc | None, message: str) -> None:
        self.errors.append(BddlError.at(loc or self.unknown, message))

    def warn(self, loc: Loc | None, message: str) -> None:
        self.warnings.append(BddlError.at(loc or self.unknown, message))

    def run(self) -> list[BddlError]:
        spec = self.spec
        locs = spec.decl_locs
        if spec.domain.lower() != "robosuite":
            self.add(locs.get(":domain"), f"unknown domain '{spec.domain}'; task files use robosuite")
        if spec.problem_class not in PROBLEM_CLASSES:
            self.add(
                locs.get(":problem"),
                f"unknown problem class '{spec.problem_class}'; known: " + ", ".join(PROBLEM_CLASSES),
            )
        if not spec.language.strip():
            self.add(locs.get(":language"), "the language instruction is empty")
        self.check_instances()
        for region in spec.regions.values():
            self.check_region(region)
        self.check_interest()
        for p in spec.init:
            self.check_predicate(p, ":init")
        for p in iter_atoms(spec.goal):
            self.check_predicate(p, ":goal")
        if isinstance(spec.goal, And) and not spec.goal.children:
            self.add(spec.goal.loc or locs.get(":goal"), "the goal is empty: nothing would have to be done")
        # File order reads best; errors without a position go last.
        self.warnings.sort(key=lambda e: (e.line == 0, e.line, e.col))
        return sorted(self.errors, key=lambda e: (e.line == 0, e.line, e.col))

    def check_instances(self) -> None:
        spec = self.spec
        for inst in sorted(spec.fixtures.keys() & spec.objects.keys()):
            self.add(spec.decl_locs.get(inst), f"'{inst}' is declared both as a fixture and as an object")
        known = ", ".join(sorted(self.categories)) if self.categories is not None else ""
        for inst, category in self.instances.items():
            if not NAME_RE.match(inst):
                self.add(spec.decl_locs.get(inst), f"bad instance name '{inst}'")
            where = spec.category_locs.get(inst) or spec.decl_locs.get(inst)
            if not NAME_RE.match(category):
                self.add(where, f"bad category name '{category}'")
            elif self.categories is not None and category not in self.categories:
                self.add(where, f"unknown category '{category}'; known: {known}")

    def check_region(self, region: Region) -> None:
        at = region.locs.get
        if region.full_name in self.instances:
            self.add(region.loc, f"region '{region.full_name}' has the same name as an instance")
        if region.target not in self.instances:
            message = (
                f"region '{region.name}' targets '{region.target}', which is not a declared fixture or object"
            )
            if region.full_name in self.used:
                self.add(at("target", region.loc), message)
            else:
                # LIBERO's generator leaves regions of objects it took out of a scene; unused, they do no harm.
                self.warn(at("target", region.loc), message + "; the region is not used, so it is ignored")
        for i, r in enumerate(region.ranges):
            what = f"range {i + 1} of region '{region.name}'"
            if not self.numbers(r, 4, what, at(f"ranges.{i}.0", region.loc)):
                continue
            for axis, lo, hi in (("x", 0, 2), ("y", 1, 3)):
                if r[lo] > r[hi]:
                    self.add(
                        at(f"ranges.{i}.{lo}", region.loc),
                        f"{what} has {axis}_min {r[lo]!r} > {axis}_max {r[hi]!r}",
                    )
        for i, y in enumerate(region.yaw_rotation):
            what = f"yaw_rotation {i + 1} of region '{region.name}'"
            if self.numbers(y, 2, what, at(f"yaw_rotation.{i}.0", region.loc)) and y[0] > y[1]:
                self.add(
                    at(f"yaw_rotation.{i}.0", region.loc), f"{what} has yaw_min {y[0]!r} > yaw_max {y[1]!r}"
                )
        rgba = region.rgba
        if rgba is not None and self.numbers(rgba, 4, f"rgba of region '{region.name}'", region.loc):
            for j, v in enumerate(rgba):
                if not 0.0 <= v <= 1.0:
                    self.add(
                        at(f"rgba.{j}", region.loc),
                        f"rgba value {v!r} of region '{region.name}' is outside [0, 1]",
                    )
        if self.categories is not None and not region.ranges and region.target in self.instances:
            category = self.instances[region.target]
            affordances = self.categories.get(category)
            if affordances is not None and region.name not in affordances:
                self.add(
                    region.loc,
                    f"region '{region.name}' has no :ranges and is not an affordance region of "
                    f"'{region.target}' (category {category} has: {', '.join(affordances) or 'none'})",
                )

    def numbers(self, values, size: int, what: str, loc: Loc | None) -> bool:
        """True when ``values`` holds ``size`` finite numbers; otherwise records why not."""
        try:
            ok = len(values) == size and all(math.isfinite(float(v)) for v in values)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            self.add(loc, f"{what} must be {size} finite numbers, found {values!r}")
        return ok

    def check_interest(self) -> None:
        seen: set[str] = set()
        for i, inst in enumerate(self.spec.obj_of_interest):
            loc = self.spec.interest_locs[i] if i < len(self.spec.interest_locs) else None
            if inst not in self.instances and not self.names_region(inst):
                self.add(loc, f"undeclared instance '{inst}' in :obj_of_interest")
            elif inst in seen:
                self.add(loc, f"'{inst}' is listed twice in :obj_of_interest")
            seen.add(inst)

    def names_region(self, name: str) -> bool:
        """Whether ``name`` is a declared region or an affordance region of a declared instance.

        LIBERO's files list the region a task is about (a drawer, the stove's burner) among the
        objects of interest; nothing reads that list as instances, so a region there is fine.
        """
        if name in self.spec.regions:
            return True
        for inst, category in self.instances.items():
            if name.startswith(inst + "_"):
                if self.categories is None or name[len(inst) + 1 :] in self.categories.get(category, ()):
                    return True
        return False

    def check_predicate(self, p: Predicate, section: str) -> None:
        if p.name not in PREDICATE_ARITY:
            self.add(p.loc, f"unknown predicate '{p.name}' in {section}")
            return
        spelled = PREDICATE_SPELLING[p.name]
        if len(p.args) != PREDICATE_ARITY[p.name]:
            self.add(p.loc, f"{spelled} takes {PREDICATE_ARITY[p.name]} argument(s), found {len(p.args)}")
            return
        for i, arg in enumerate(p.args):
            loc = p.arg_locs[i] if i < len(p.arg_locs) else p.loc
            kind = self.resolve(arg, loc, section)
            if kind is not None and kind != "instance" and i == 0 and p.name in _FIRST_ARG_IS_INSTANCE:
                article = "an" if kind[0] in "aeiou" else "a"
                self.add(
                    loc,
                    f"the first argument of {spelled} must be a fixture or object, "
                    f"but '{arg}' is {article} {kind}",
                )

    def resolve(self, arg: str, loc: Loc | None, section: str) -> str | None:
        """What ``arg`` names: "instance", "region" or "affordance region"; None after recording an error."""
        if arg in self.instances:
            return "instance"
        if arg in self.spec.regions:
            return "region"
        # An affordance region is <instance>_<site>; instance names hold '_' too, so try every split.
        owners = sorted((i for i in self.instances if arg.startswith(i + "_")), key=len, reverse=True)
        if owners:
            if self.categories is None:
                return "affordance region"
            for inst in owners:
                affordances = self.categories.get(self.instances[inst])
                # An unknown category is reported once, at its declaration, not at every use.
                if affordances is None or arg[len(inst) + 1 :] in affordances:
                    return "affordance region"
            inst = owners[0]
            category = self.instances[inst]
            site = arg[len(inst) + 1 :]
            has = ", ".join(self.categories[category]) or "none"
            self.add(
                loc,
                f"unknown region '{arg}' in {section}: '{site}' is neither a declared region of '{inst}' "
                f"nor an affordance region of its category {category} (which has: {has})",
            )
            return None
        same_name = [r.full_name for r in self.spec.regions.values() if r.name == arg]
        if same_name:
            self.add(
                loc,
                f"unknown region '{arg}' in {section}: regions are referred to as <target>_<name>; "
                f"did you mean '{same_name[0]}'?",
            )
        elif arg.endswith(("_region", "_side")):
            self.add(loc, f"unknown region '{arg}' in {section}: no region or instance has this name")
        else:
            self.add(
                loc, f"undeclared instance '{arg}' in {section}: not a declared fixture, object or region"
            )
        return None


def validate(spec: TaskSpec, categories: Mapping[str, Sequence[str]] | None = None) -> list[BddlError]:
    """Every meaning problem in ``spec``, in file order.

    Args:
        spec: the TaskSpec to check (parsed or built in code; the latter gives positions 0:0).
        categories: known category name -> names of its affordance regions, from the asset library;
            None skips the checks that need it (unknown categories, affordance region names).

    Returns a list of BddlError, empty when the spec is valid. Warnings are left out; see
    validate_with_warnings().
    """
    return _Validator(spec, categories).run()


def validate_with_warnings(
    spec: TaskSpec, categories: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[BddlError], list[BddlError]]:
    """``(errors, warnings)`` of ``spec``, each in file order.

    Args:
        spec, categories: as for validate().

    Warnings are located messages like errors (same type, printed ``path:line:col: message``) about
    things that do not stop the task from loading, such as an unused region whose target is not
    declared.
    """
    v = _Validator(spec, categories)
    errors = v.run()
    return errors, v.warnings


def check_file(
    path, categories: Mapping[str, Sequence[str]] | None = None, warnings: list | None = None
) -> tuple[TaskSpec | None, list[BddlError]]:
    """Parse and validate the task file at ``path`` (str or os.PathLike).

    Args:
        path: the task file.
        categories: as for validate().
        warnings: a list that receives the file's warnings (BddlError values), if given.

    Returns ``(spec, problems)``; when the file does not parse, ``(None, [the parse error])``.
    """
    try:
        spec = parse_file(path)
    except BddlError as e:
        return None, [e]
    errors, found = validate_with_warnings(spec, categories)
    if warnings is not None:
        warnings.extend(found)
    return spec, errors


def load_file(path, categories: Mapping[str, Sequence[str]] | None = None) -> TaskSpec:
    """Parse and validate the task file at ``path``; the spec when it is valid.

    Args:
        path: the task file (str or os.PathLike).
        categories: as for validate().

    Raises the first BddlError found; its message says how many more there are.
    """
    spec, problems = check_file(path, categories)
    if problems:
        first = problems[0]
        if len(problems) > 1:
            more = len(problems) - 1
            message = f"{first.message} (and {more} more problem{'s' * (more > 1)})"
            raise BddlError(first.path, first.line, first.col, message)
        raise first
    return spec
