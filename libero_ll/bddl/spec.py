"""The in-memory form of one task file: scene, regions, initial state and goal.

These dataclasses are what the parser produces, the writer consumes and every later layer reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

from libero_ll.errors import LiberoError


@dataclass(frozen=True)
class Loc:
    """A position in a task file: 1-based line and column; line 0 means "not known"."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


#: Predicate name (lower case, the canonical key) -> number of arguments.
PREDICATE_ARITY: dict[str, int] = {
    "on": 2,
    "in": 2,
    "open": 1,
    "close": 1,
    "turnon": 1,
    "turnoff": 1,
    "up": 1,
}

#: How the writer spells each predicate, matching LIBERO files.
PREDICATE_SPELLING: dict[str, str] = {
    "on": "On",
    "in": "In",
    "open": "Open",
    "close": "Close",
    "turnon": "TurnOn",
    "turnoff": "TurnOff",
    "up": "Up",
}

#: The scene families a task file may name in ``(problem ...)``.
PROBLEM_CLASSES: tuple[str, ...] = (
    "LIBERO_Tabletop_Manipulation",
    "LIBERO_Kitchen_Tabletop_Manipulation",
    "LIBERO_Living_Room_Tabletop_Manipulation",
    "LIBERO_Study_Tabletop_Manipulation",
    "LIBERO_Floor_Manipulation",
)


def scene_family(problem_class) -> str | None:
    """The scene family (one of PROBLEM_CLASSES) that a problem class names, or None.

    That is the class itself when it is a family, and for a variant, a name that starts with a family's
    (without case) and goes on after an underscore, the family. Suites built on LIBERO register such
    variants for other lights, textures or camera poses of a family's scene
    (``Libero_Kitchen_Tabletop_Manipulation_kitchen_light_sync_modified_1017``); here they are built as the
    family, and validation says so. A class that differs from a family only by case is not taken: the
    parser spells those as the family, so only one built in code can be one, and the scene families are
    looked up by their own spelling.
    """
    if problem_class in PROBLEM_CLASSES:
        return problem_class
    text = str(problem_class).lower()
    variants = [c for c in PROBLEM_CLASSES if text.startswith(c.lower() + "_") and len(text) > len(c) + 1]
    return max(variants, key=len) if variants else None


def _loc_field():
    return field(default=None, compare=False, repr=False)


@dataclass
class Predicate:
    """One atom such as ``On(bowl_1, plate_1)``.

    Args:
        name: canonical lower-case predicate name, a key of PREDICATE_ARITY.
        args: instance names, region full names or affordance region names.
        loc: where the predicate name was written.
        arg_locs: where each argument was written (empty for specs built in code).
    """

    name: str
    args: tuple[str, ...]
    loc: Loc | None = _loc_field()
    arg_locs: tuple[Loc, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        self.name = self.name.lower()
        self.args = tuple(self.args)
        self.arg_locs = tuple(self.arg_locs)

    # Atoms are compared by value, so they can also live in sets and dict keys (e.g. goal bookkeeping).
    def __hash__(self) -> int:
        return hash((self.name, self.args))


@dataclass
class And:
    """Conjunction: holds when every child holds (an empty And always holds)."""

    children: list["Formula"]
    loc: Loc | None = _loc_field()


@dataclass
class Or:
    """Disjunction, an extension over LIBERO: holds when at least one child holds."""

    children: list["Formula"]
    loc: Loc | None = _loc_field()


@dataclass
class Not:
    """Negation, an extension over LIBERO."""

    child: "Formula"
    loc: Loc | None = _loc_field()


Formula = Union[Predicate, And, Or, Not]


def iter_atoms(formula: Formula) -> Iterator[Predicate]:
    """Yield every Predicate inside ``formula`` (a Formula), left to right, at any depth."""
    if isinstance(formula, Predicate):
        yield formula
    elif isinstance(formula, (And, Or)):
        for child in formula.children:
            yield from iter_atoms(child)
    elif isinstance(formula, Not):
        yield from iter_atoms(formula.child)
    else:
        raise TypeError(f"not a formula: {formula!r}")


@dataclass
class Region:
    """A named area attached to a fixture or object, where things are placed or must end up.

    Args:
        name: the name as declared, e.g. ``plate_init_region``.
        target: instance name of the fixture or object the region belongs to.
        ranges: boxes ``(x_min, y_min, x_max, y_max)`` in metres, in the target's frame; empty for an
            affordance region whose geometry comes from the asset.
        yaw_rotation: ``(yaw_min, yaw_max)`` pairs in radians.
        rgba: colour used when drawing the region, each channel in [0, 1].
        loc: where the region name was written.
        locs: where its parts were written, keyed ``"target"``, ``"ranges.i.j"``,
            ``"yaw_rotation.i.j"`` and ``"rgba.j"`` (empty for regions built in code).
    """

    name: str
    target: str
    ranges: list[tuple[float, float, float, float]] = field(default_factory=list)
    yaw_rotation: list[tuple[float, float]] = field(default_factory=list)
    rgba: tuple[float, float, float, float] | None = None
    loc: Loc | None = _loc_field()
    locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.ranges = [tuple(r) for r in self.ranges]
        self.yaw_rotation = [tuple(y) for y in self.yaw_rotation]
        if self.rgba is not None:
            self.rgba = tuple(self.rgba)

    @property
    def full_name(self) -> str:
        """The name other sections use: ``<target>_<name>``."""
        return f"{self.target}_{self.name}"


@dataclass
class TaskSpec:
    """One task: what is in the scene, where it starts, and what must hold at the end.

    Args:
        problem_class: scene family, e.g. ``LIBERO_Tabletop_Manipulation``.
        language: the instruction, whitespace-normalised.
        regions: regions keyed by full name, in declaration order.
        fixtures: fixture instance -> category, in declaration order.
        objects: object instance -> category, in declaration order.
        obj_of_interest: instances the task is about.
        init: atoms that hold at the start.
        goal: what must hold at the end; always an And at the top (anything else is wrapped).
        domain: always ``robosuite`` for valid files.
        path: file the spec came from, if any.
        decl_locs: where each instance, region (by full name) and section was declared. Section keys
            start with ':' (``:problem``, ``:domain``, ``:init``, ...) and point at the section keyword,
            except ``:problem`` and ``:domain``, which point at their value.
        category_locs: where each instance's category was written, keyed by instance.
        interest_locs: where each entry of obj_of_interest was written.
    """

    problem_class: str
    language: str
    regions: dict[str, Region]
    fixtures: dict[str, str]
    objects: dict[str, str]
    obj_of_interest: list[str]
    init: list[Predicate]
    goal: Formula
    domain: str = "robosuite"
    path: str | None = field(default=None, compare=False)
    decl_locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False)
    category_locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False)
    interest_locs: list[Loc] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.obj_of_interest = list(self.obj_of_interest)
        self.init = list(self.init)
        if not isinstance(self.goal, And):
            self.goal = And([self.goal], loc=getattr(self.goal, "loc", None))

    def category_of(self, instance: str) -> str:
        """The category of ``instance`` (a fixture or object name); KeyError if it is neither."""
        if instance in self.fixtures:
            return self.fixtures[instance]
        if instance in self.objects:
            return self.objects[instance]
        raise KeyError(instance)

    def instances(self) -> dict[str, str]:
        """Every instance -> category, fixtures first, then objects."""
        return {**self.fixtures, **self.objects}

    @property
    def scene_family(self) -> str:
        """The scene family the task is built in: its problem class, or the family a variant's name starts
        with (see `scene_family`)."""
        return scene_family(self.problem_class) or self.problem_class

    def goal_predicates(self) -> list[Predicate]:
        """The atoms of the goal when it is a pure conjunction (nested Ands are flattened).

        Raises LiberoError when the goal uses Or or Not, which have no list-of-atoms form.
        """
        out: list[Predicate] = []
        stack: list[Formula] = [self.goal]
        while stack:
            f = stack.pop()
            if isinstance(f, Predicate):
                out.append(f)
            elif isinstance(f, And):
                stack.extend(reversed(f.children))
            else:
                where = f" at {f.loc}" if f.loc else ""
                raise LiberoError(
                    f"the goal uses {type(f).__name__}{where}; "
                    "only a conjunction of predicates has a list form"
                )
        return out
