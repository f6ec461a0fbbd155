"""Check a TaskSpec for meaning errors (undeclared names, bad targets, value ranges, categories).

Unlike the parser, which stops at the first problem, validation returns every problem it finds,
each located at the token that caused it. A few things that LIBERO's own files do and that do no
harm (a region nobody uses whose target is not declared) are warnings, not errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

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
    scene_family,
)

# Predicates whose first argument is a thing that moves or is placed, never a region.
_FIRST_ARG_IS_INSTANCE = ("on", "in", "up")
# Predicates that act on a moving part: a drawer, a door or a knob.
_JOINT_PREDICATES = ("open", "close", "turnon", "turnoff")
# What :init can set up: placements and joint states. Up says a thing was lifted above where it started, which
# never holds at the start: it only makes sense in a goal.
_INIT_PREDICATES = ("on", "in", *_JOINT_PREDICATES)
# Joint states that exclude each other, and how each reads in a message.
_OPPOSITE = {"open": "close", "close": "open", "turnon": "turnoff", "turnoff": "turnon"}
_STATE_WORD = {"open": "open", "close": "closed", "turnon": "on", "turnoff": "off"}
# Bounds on a region's numbers: its ranges in metres from its target's centre (a scene is a few metres across;
# past them a float's width overflows when a place is drawn), its yaws in radians.
MAX_RANGE = 5.0
MAX_YAW = 100.0
# A fixture worked from its front faces away from the robot when its front points within 60 degrees of +x.
FACING_AWAY_COS = 0.5
_RANGE_FIELDS = ("x_min", "y_min", "x_max", "y_max")


@dataclass(frozen=True)
class CategoryFacts:
    """What validation may know of a category besides its affordance regions (from the asset library).

    Args:
        kind: "object" (movable), "fixture" (welded to the world) or "workspace" (the table or floor
            everything else stands on).
        controls: what Open/Close/TurnOn/TurnOff of an instance act on: a region name of the category
            ("top_region" for a cabinet's top drawer), or "" for the instance itself, mapped to the kind of
            joint they move ("drawer", "door" or "knob").
        relations: region name of the category → the predicates that put a thing there: ("on",) for a
            surface (a cabinet's top_side), ("in",) for the inside of a container (a drawer, a basket),
            ("in", "on") for either (a shelf's layer); a region left out is not checked.
        top: for a table (kind "workspace"), half its top's length and width in metres, about the centre
            that the ranges of regions on it are measured from; None where there is no edge to fall off
            (the floor) or it is not known.
        front: the robot works the category from the +x side of its model frame (a cabinet's drawers,
            a microwave's door): a yaw that turns that side away from the robot is warned of.
    """

    kind: str
    controls: Mapping[str, str] = field(default_factory=dict)
    relations: Mapping[str, Sequence[str]] = field(default_factory=dict)
    top: tuple[float, float] | None = None
    front: bool = False


class BddlWarning(UserWarning):
    """A harmless oddity of a task file (issued through Python's warnings when a scene is built)."""


class _Validator:
    def __init__(
        self,
        spec: TaskSpec,
        categories: Mapping[str, Sequence[str]] | None,
        facts: Mapping[str, CategoryFacts] | None = None,
    ):
        self.spec = spec
        self.categories = categories
        self.facts = facts if facts is not None else {}
        self.errors: list[BddlError] = []
        self.warnings: list[BddlError] = []
        self.unknown = Loc(spec.path or "<spec>", 0, 0)
        self.instances = spec.instances()
        self.used = {a for p in [*spec.init, *iter_atoms(spec.goal)] for a in p.args}
        self.sound_init: list[Predicate] = []  # the :init predicates no error was reported at

    def add(self, loc: Loc | None, message: str) -> None:
        self.errors.append(BddlError.at(loc or self.unknown, message))

    def warn(self, loc: Loc | None, message: str) -> None:
        self.warnings.append(BddlError.at(loc or self.unknown, message))

    def run(self) -> list[BddlError]:
        spec = self.spec
        locs = spec.decl_locs
        if spec.domain.lower() != "robosuite":
            self.add(locs.get(":domain"), f"unknown domain '{spec.domain}'; task files use robosuite")
        family = scene_family(spec.problem_class)
        if family is not None and family != spec.problem_class:
            self.warn(
                locs.get(":problem"),
                f"problem class '{spec.problem_class}' is a variant of the scene family {family} (its name starts "
                f"with it), and is built as that family: what the variant changes (its lights, textures or "
                f"camera) is not reproduced",
            )
        elif spec.problem_class not in PROBLEM_CLASSES:
            # The parser reads the class without case, into its registered spelling; one built in code is not
            # rewritten, since the scene family is looked up by that spelling.
            same = [c for c in PROBLEM_CLASSES if c.lower() == str(spec.problem_class).lower()]
            self.add(
                locs.get(":problem"),
                f"unknown problem class '{spec.problem_class}'; "
                + (f"did you mean '{same[0]}'?" if same else "known: " + ", ".join(PROBLEM_CLASSES)),
            )
        if not spec.language.strip():
            self.add(locs.get(":language"), "the language instruction is empty")
        self.check_instances()
        for region in spec.regions.values():
            self.check_region(region)
        self.check_interest()
        for p in spec.init:
            before = len(self.errors)
            self.check_predicate(p, ":init")
            if len(self.errors) == before:
                self.sound_init.append(p)
        self.check_placed()
        self.check_placed_once()
        self.check_facing()
        self.check_no_cycle()
        self.check_contradictions(self.sound_init, ":init")
        for p in iter_atoms(spec.goal):
            self.check_predicate(p, ":goal")
        self.check_contradictions(list(_conjuncts(spec.goal)), ":goal")
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
            elif (facts := self.facts.get(category)) is not None and self.wrong_section(inst, facts.kind):
                # The scene goes by the category: a plate among the :fixtures still moves, a cabinet among the
                # :objects is still welded.
                section, kind = (":fixtures", "movable object") if inst in spec.fixtures else (":objects", "fixture")
                self.warn(
                    spec.decl_locs.get(inst),
                    f"'{inst}' is declared among the {section}, but its category {category} is a {kind}, which "
                    f"the scene makes it whatever the section: declare it among the "
                    f"{':objects' if section == ':fixtures' else ':fixtures'}",
                )
            elif self.categories is not None and inst != category and inst in self.categories:
                # `plate_1 plate - basket` (a missing " - ") declares an instance named `plate` a basket.
                self.warn(
                    spec.decl_locs.get(inst),
                    f"'{inst}' is the name of a category, but this instance is of category {category}: "
                    f"is a ' - ' missing before '{inst}' on its line?",
                )

    def wrong_section(self, inst: str, kind: str) -> bool:
        """Whether `inst` is declared in the section that does not hold things of its category's kind (objects
        among :objects; fixtures and the workspace among :fixtures)."""
        return (inst in self.spec.fixtures and kind == "object") or (inst in self.spec.objects and kind != "object")

    def check_placed(self) -> None:
        """Every object, and every fixture but the workspace (known from the facts), is placed by an :init On
        or In. The scene builds one that is not, but leaves it where its model was made: at the world's origin,
        at floor level (under the table of a table scene), out of the robot's reach and view."""
        spec = self.spec
        placed = {p.args[0] for p in spec.init if p.name in ("on", "in") and p.args}
        for inst, category in self.instances.items():
            if inst in placed:
                continue
            facts = self.facts.get(category)
            if facts is not None and facts.kind == "workspace":
                continue
            if inst in spec.objects:
                what = "object"
            elif facts is not None and facts.kind == "fixture":
                what = "fixture"
            else:
                continue  # a fixture that may be the workspace: without the facts, nothing to say
            self.warn(
                spec.decl_locs.get(inst),
                f"the {what} '{inst}' is declared but no :init predicate places it (On or In something); the "
                "scene would leave it at the world's origin, at floor level (under the table of a table scene)",
            )

    def placements(self) -> list[tuple[Predicate, str]]:
        """The :init On and In predicates that no error was reported at, each with the instance it places
        the first argument on or in (the second argument, or the instance its region belongs to)."""
        out = []
        for p in self.sound_init:
            if p.name in ("on", "in"):
                where = p.args[1]
                out.append((p, self.owner(where, self.resolve(where, None, ":init"))[0]))
        return out

    def check_placed_once(self) -> None:
        """No instance is placed by two :init predicates: placement would put it at both places in turn."""
        first: dict[str, Predicate] = {}
        for p, _ in self.placements():
            a = p.args[0]
            if a not in first:
                first[a] = p
                continue
            other = first[a]
            self.add(
                p.loc,
                f"'{a}' is placed twice in :init: {PREDICATE_SPELLING[p.name]} {p.args[1]} here and "
                f"{PREDICATE_SPELLING[other.name]} {other.args[1]}{_at_line(other)}; it starts in one place only",
            )

    def check_facing(self) -> None:
        """A fixture the robot works from its front (facts.front) is not turned to face away from the robot,
        which stands at -x of the workspace: in our models' frames the front is +x, so yaw pi faces the robot.
        A file written for LIBERO's models, whose fronts face other ways, turns ours away; it converts with
        `libero-ll convert-tasks`."""
        for p, support in self.placements():
            inst, where = p.args[0], p.args[1]
            facts = self.facts.get(self.instances.get(inst, ""))
            region = self.spec.regions.get(where)
            if p.name != "on" or facts is None or not facts.front or region is None or not region.ranges:
                continue
            if support not in self.instances or not self.is_workspace(support):
                continue
            for i, pair in enumerate(region.yaw_rotation or [(0.0, 0.0)]):
                try:
                    lo, hi = float(pair[0]), float(pair[1])
                except (TypeError, ValueError, IndexError):
                    continue  # check_region reported it
                # The front's direction is (cos yaw, sin yaw); away from the robot is +x.
                worst = max((lo, hi, (lo + hi) / 2), key=math.cos)
                if math.cos(worst) <= FACING_AWAY_COS:
                    continue
                loc = region.locs.get(f"yaw_rotation.{i}.0", region.loc) if region.yaw_rotation else region.loc
                self.warn(
                    loc,
                    f"region '{region.name}' turns {inst} ({self.instances[inst]}) with its front away from the "
                    f"robot (yaw {worst:.4g}; in our models' frames the front is +x, and yaw pi faces the robot). "
                    f"If the file was written for LIBERO's models, whose fronts face other ways, convert it: "
                    f"`libero-ll convert-tasks FILE --out DIR` (docs/interop.md)",
                )
                break

    def check_no_cycle(self) -> None:
        """No :init placements form a cycle (a On b, b On a): each needs what it stands on placed first."""
        supports: dict[str, list[tuple[str, Predicate]]] = {}
        for p, support in self.placements():
            supports.setdefault(p.args[0], []).append((support, p))
        done: set[str] = set()
        path: list[Predicate] = []  # the placements followed from the first instance visited
        on_path: dict[str, int] = {}  # instance on the path -> index in path of the placement leaving it

        def visit(inst: str) -> None:
            on_path[inst] = len(path)
            for support, p in supports.get(inst, ()):
                if support in on_path:
                    self.report_cycle(path[on_path[support] :] + [p])
                elif support not in done:
                    path.append(p)
                    visit(support)
                    path.pop()
            del on_path[inst]
            done.add(inst)

        for inst in supports:
            if inst not in done:
                visit(inst)

    def report_cycle(self, cycle: list[Predicate]) -> None:
        """Report placements that form a cycle at the one written first, naming them in cycle order from it."""
        first = min(range(len(cycle)), key=lambda i: _position(cycle[i]))
        cycle = cycle[first:] + cycle[:first]
        names = " -> ".join([p.args[0] for p in cycle] + [cycle[0].args[0]])
        steps = [f"{_written(cycle[0])} here"] + [f"{_written(p)}{_at_line(p)}" for p in cycle[1:]]
        self.add(
            cycle[0].loc,
            f"the :init placements form a cycle ({names}), so none of them can be placed first: "
            + ", then ".join(steps),
        )

    def check_contradictions(self, atoms: Sequence[Predicate], section: str) -> None:
        """No two of ``atoms`` (all required at once) set the same joint to opposite states (Open and Close,
        TurnOn and TurnOff of the same argument)."""
        seen: dict[tuple[str, str], Predicate] = {}
        for p in atoms:
            if p.name not in _OPPOSITE or len(p.args) != 1:
                continue
            (x,) = p.args
            other = seen.get((_OPPOSITE[p.name], x))
            if other is not None:
                one, two = sorted((other.name, p.name), key=list(_STATE_WORD).index)
                states = f"both {_STATE_WORD[one]} and {_STATE_WORD[two]}"
                if section == ":init":
                    why = f"'{x}' cannot start {states}"
                else:
                    why = f"the goal can never hold, '{x}' cannot be {states}"
                self.add(p.loc, f"{_written(p)} contradicts {_written(other)}{_at_line(other)}: {why}")
            seen.setdefault((p.name, x), p)

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
            ordered = True
            for axis, lo, hi in (("x", 0, 2), ("y", 1, 3)):
                if r[lo] > r[hi]:
                    ordered = False
                    self.add(
                        at(f"ranges.{i}.{lo}", region.loc),
                        f"{what} has {axis}_min {r[lo]!r} > {axis}_max {r[hi]!r}",
                    )
            far = [j for j, v in enumerate(r) if abs(float(v)) > MAX_RANGE]
            if far:
                j = far[0]
                self.add(
                    at(f"ranges.{i}.{j}", region.loc),
                    f"{what} has {_RANGE_FIELDS[j]} {float(r[j]):g}: a region lies within {MAX_RANGE:g} m of its "
                    f"target's centre (the robot reaches about 0.85 m from its base)",
                )
            elif ordered:
                self.check_on_top(region, i, [float(v) for v in r])
        for i, y in enumerate(region.yaw_rotation):
            what = f"yaw_rotation {i + 1} of region '{region.name}'"
            if not self.numbers(y, 2, what, at(f"yaw_rotation.{i}.0", region.loc)):
                continue
            if y[0] > y[1]:
                self.add(
                    at(f"yaw_rotation.{i}.0", region.loc), f"{what} has yaw_min {y[0]!r} > yaw_max {y[1]!r}"
                )
            for j, v in enumerate(y):
                if abs(float(v)) > MAX_YAW:
                    self.add(at(f"yaw_rotation.{i}.{j}", region.loc),
                             f"{what} has {('yaw_min', 'yaw_max')[j]} {float(v):g}: yaws are in radians, "
                             f"within {MAX_YAW:g} of 0")
                    break
            else:
                turn = [v for v in y if abs(float(v)) > 2 * math.pi + 0.01]  # 6.2832 written for a full turn is one
                if turn:
                    self.warn(at(f"yaw_rotation.{i}.0", region.loc),
                              f"{what} has yaw {float(turn[0]):g}, more than a full turn: yaws are in radians "
                              f"(if it is meant in degrees, that is {math.radians(float(turn[0])):.4g} rad)")
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

    def check_on_top(self, region: Region, i: int, box: list[float]) -> None:
        """A range of a region on a table must lie on the table's top: wholly off it, nothing placed there
        stands on the table (an error); partly off it, a thing may be placed over the edge (a warning)."""
        facts = self.facts.get(self.instances.get(region.target, ""))
        if facts is None or facts.kind != "workspace" or facts.top is None:
            return
        hx, hy = facts.top
        x0, y0, x1, y1 = box
        where = (
            f"range {i + 1} of region '{region.name}' (x {x0:g} to {x1:g}, y {y0:g} to {y1:g}) lies "
            f"{{how}} off the top of '{region.target}' (x {-hx:g} to {hx:g}, y {-hy:g} to {hy:g} about its centre)"
        )
        loc = region.locs.get(f"ranges.{i}.0", region.loc)
        if x1 < -hx or x0 > hx or y1 < -hy or y0 > hy:
            self.add(loc, where.format(how="wholly") + ": nothing placed there would stand on it")
        elif x0 < -hx or x1 > hx or y0 < -hy or y1 > hy:
            self.warn(loc, where.format(how="partly") + ": a thing placed there may fall off")

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
        if section == ":init" and p.name not in _INIT_PREDICATES:
            self.add(
                p.loc,
                f"{spelled} cannot be in :init: it says a thing was lifted above where it started, which only a "
                "goal can ask; :init takes On, In, Open, Close, TurnOn and TurnOff",
            )
            return
        if len(p.args) != PREDICATE_ARITY[p.name]:
            self.add(p.loc, f"{spelled} takes {PREDICATE_ARITY[p.name]} argument(s), found {len(p.args)}")
            return
        kinds = []
        for i, arg in enumerate(p.args):
            loc = self.arg_loc(p, i)
            kind = self.resolve(arg, loc, section)
            if kind is not None and kind != "instance" and i == 0 and p.name in _FIRST_ARG_IS_INSTANCE:
                article = "an" if kind[0] in "aeiou" else "a"
                self.add(
                    loc,
                    f"the first argument of {spelled} must be a fixture or object, "
                    f"but '{arg}' is {article} {kind}",
                )
                kind = None
            kinds.append(kind)
        if None in kinds:
            return  # already reported
        if len(p.args) == 2:
            self.check_pair(p, kinds[1])
        elif p.name in _JOINT_PREDICATES:
            self.check_joint(p, kinds[0])
        elif p.name == "up":
            self.check_up(p)

    def check_up(self, p: Predicate) -> None:
        """Up(a): a can rise, so not a fixture nor the workspace, which are welded to the world."""
        (a,) = p.args
        if not self.is_fixture(a):
            return
        if self.is_workspace(a):
            what = f"the workspace ({self.instances[a]})"
        else:
            what = "a fixture"
        self.add(
            self.arg_loc(p, 0),
            f"'{a}' is {what}, welded to the world: it never rises, so Up of it can never hold; Up takes an object",
        )

    @staticmethod
    def arg_loc(p: Predicate, i: int) -> Loc | None:
        return p.arg_locs[i] if i < len(p.arg_locs) else p.loc

    def owner(self, arg: str, kind: str) -> tuple[str, str]:
        """(instance, region name) that a resolved argument belongs to; region name "" for an instance."""
        if kind == "instance":
            return arg, ""
        region = self.spec.regions.get(arg)
        if region is not None:
            return region.target, region.name
        owners = sorted((i for i in self.instances if arg.startswith(i + "_")), key=len, reverse=True)
        for inst in owners:
            site = arg[len(inst) + 1 :]
            if self.categories is None or site in self.categories.get(self.instances[inst], ()):
                return inst, site
        return owners[0], arg[len(owners[0]) + 1 :]

    def check_pair(self, p: Predicate, where_kind: str) -> None:
        """On(a, b) and In(a, b): two different things, something that can carry a, a container for In (and
        a warning for On of a container's inside)."""
        spelled = PREDICATE_SPELLING[p.name]
        a, b = p.args
        if a == b:
            self.add(
                self.arg_loc(p, 1), f"{spelled} relates two different things, but both arguments are '{a}'"
            )
            return
        support, site = self.owner(b, where_kind)
        if support not in self.instances:
            return  # a region whose target is not declared: reported at the region
        if support == a:
            self.add(
                self.arg_loc(p, 1),
                f"'{b}' is a region of '{a}' itself: nothing is {spelled} a region of its own",
            )
            return
        if self.is_workspace(a):
            self.add(
                self.arg_loc(p, 0),
                f"'{a}' is the workspace ({self.instances[a]}) that everything else stands on: "
                f"it is never {spelled} anything",
            )
            return
        if where_kind == "instance" and self.is_workspace(b):
            # Nothing places a thing on the workspace as a whole (placement samples a pose in a region), and On of
            # it would hold only near the workspace's centre.
            self.add(self.arg_loc(p, 1), f"{spelled} of {self.workspace_hint(b)}")
            return
        if (a in self.spec.fixtures and support in self.spec.objects) or (p.name == "in" and self.is_fixture(a)):
            # Welded to the world, a fixture stands on the workspace or on another fixture; nor is it ever In a
            # container: In needs contact, and the simulator reports none between two welded things.
            kind = "object" if support in self.spec.objects else "fixture"
            what = f"the {kind} '{b}'" if where_kind == "instance" else f"'{b}', a region of the {kind} '{support}'"
            self.add(
                self.arg_loc(p, 0),
                f"'{a}' is a fixture, welded to the world, and cannot be {spelled} {what}; "
                "fixtures stand on the workspace or on other fixtures",
            )
            return
        region = self.spec.regions.get(b)
        relations = None  # the predicates the asset library says put a thing at an affordance region
        if where_kind != "instance" and not (region is not None and region.ranges):
            support_facts = self.facts.get(self.instances[support])
            relations = support_facts.relations.get(site) if support_facts is not None else None
        whose = f"region {site} of the {self.instances[support]} '{support}'"
        if p.name != "in":
            if relations is not None and "on" not in relations:
                self.warn(
                    self.arg_loc(p, 1),
                    f"On of '{b}', the inside of a container ({whose}): things go In it; On also holds for a "
                    "thing resting above it (on the cabinet over a drawer), so write In",
                )
            return
        listed = self.categories.get(self.instances[support], ()) if self.categories is not None else None
        if where_kind == "instance":
            hint = ""
            if listed is not None:
                regions = [f"{b}_{r}" for r in listed]
                hint = (
                    f"; its category {self.instances[b]} has "
                    + (f"these: {', '.join(regions)}" if regions else "none, so nothing goes In it")
                )
            self.add(
                self.arg_loc(p, 1),
                f"In takes a region of a container (a drawer, basket, compartment: <instance>_<region>) "
                f"as its second argument, not the instance '{b}'{hint}",
            )
        elif region is not None and region.ranges and (listed is None or site not in listed):
            self.add(
                self.arg_loc(p, 1),
                f"In takes a region of a container (a drawer, basket, compartment), but '{b}' is a region "
                "with :ranges on a surface; use On for it",
            )
        elif relations is not None and "in" not in relations:
            self.add(
                self.arg_loc(p, 1),
                f"In takes a region of a container (a drawer, basket, compartment), but '{b}' is a surface "
                f"({whose}) that things stand On; use On for it",
            )

    def is_workspace(self, inst: str) -> bool:
        """Whether the facts say ``inst`` is the workspace (the table or floor); False where they do not tell."""
        facts = self.facts.get(self.instances[inst])
        return facts is not None and facts.kind == "workspace"

    def workspace_hint(self, ws: str) -> str:
        """What to name instead of the workspace ``ws`` itself: the regions of it the file declares."""
        said = (
            f"'{ws}', the workspace ({self.instances[ws]}) itself: things stand on the workspace in one of its "
            "regions, with On; "
        )
        declared = [r.full_name for r in self.spec.regions.values() if r.target == ws]
        if declared:
            more = f" (and {len(declared) - 5} more)" if len(declared) > 5 else ""
            return said + "name one declared in :regions: " + ", ".join(declared[:5]) + more
        return (
            said + f"declare one in :regions, e.g. (<name> (:target {ws}) (:ranges ((x_min y_min x_max y_max)))), "
            f"and name it {ws}_<name>"
        )

    def is_fixture(self, inst: str) -> bool:
        """Whether ``inst`` is welded to the world: what its category is, where the facts tell, else whether it
        is declared among the :fixtures."""
        facts = self.facts.get(self.instances[inst])
        if facts is not None:
            return facts.kind != "object"
        return inst in self.spec.fixtures

    def check_joint(self, p: Predicate, kind: str) -> None:
        """Open/Close/TurnOn/TurnOff: the argument has a drawer, door or knob of the right kind."""
        spelled = PREDICATE_SPELLING[p.name]
        (x,) = p.args
        inst, site = self.owner(x, kind)
        if inst not in self.instances:
            return  # a region whose target is not declared: reported at the region
        category = self.instances[inst]
        facts = self.facts.get(category)
        if facts is None:
            return
        joint = facts.controls.get(site)
        if joint is None:
            what = f"'{x}' ({category})" if not site else f"'{x}' (region {site} of the {category} '{inst}')"
            names = [f"'{inst}_{r}'" if r else f"'{inst}'" for r in facts.controls]
            if names:
                said = f"{what} is not one; name one of these: {', '.join(names)}"
            else:
                said = f"{what} has none"
            self.add(self.arg_loc(p, 0), f"{spelled} acts on a drawer, door or knob, but {said}")
        elif p.name in ("open", "close") and joint == "knob":
            self.add(
                self.arg_loc(p, 0),
                f"'{x}' is a knob: it is turned on or off (TurnOn, TurnOff), not "
                + ("opened" if p.name == "open" else "closed"),
            )
        elif p.name in ("turnon", "turnoff") and joint != "knob":
            self.add(
                self.arg_loc(p, 0),
                f"'{x}' is a {joint}: it is opened or closed (Open, Close); only a knob is turned on or off",
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


def _conjuncts(formula) -> Iterator[Predicate]:
    """The atoms that ``formula`` requires through And alone, left to right; Or and Not are not looked into."""
    if isinstance(formula, Predicate):
        yield formula
    elif isinstance(formula, And):
        for child in formula.children:
            yield from _conjuncts(child)


def _written(p: Predicate) -> str:
    """A predicate as a task file writes it: ``(On bowl_1 plate_1)``."""
    return "(" + " ".join([PREDICATE_SPELLING.get(p.name, p.name), *p.args]) + ")"


def _position(p: Predicate) -> tuple[int, int]:
    return (p.loc.line, p.loc.col) if p.loc is not None else (0, 0)


def _at_line(p: Predicate) -> str:
    """" at line N" where the predicate was written, or "" for one built in code."""
    return f" at line {p.loc.line}" if p.loc is not None and p.loc.line else ""


def validate(
    spec: TaskSpec,
    categories: Mapping[str, Sequence[str]] | None = None,
    facts: Mapping[str, CategoryFacts] | None = None,
) -> list[BddlError]:
    """Every meaning problem in ``spec``, in file order.

    Args:
        spec: the TaskSpec to check (parsed or built in code; the latter gives positions 0:0).
        categories: known category name -> names of its affordance regions, from the asset library;
            None skips the checks that need it (unknown categories, affordance region names).
        facts: category name -> its CategoryFacts, from the asset library; None (or a category left
            out) skips the checks that need them: the workspace placed On or In something, or named
            as what something is On or In, Up of the workspace (of another fixture, the :fixtures
            section tells), and Open/Close/TurnOn/TurnOff of a thing without a drawer, door or knob
            of that kind.

    Returns a list of BddlError, empty when the spec is valid. Warnings are left out; see
    validate_with_warnings().
    """
    return _Validator(spec, categories, facts).run()


def validate_with_warnings(
    spec: TaskSpec,
    categories: Mapping[str, Sequence[str]] | None = None,
    facts: Mapping[str, CategoryFacts] | None = None,
) -> tuple[list[BddlError], list[BddlError]]:
    """``(errors, warnings)`` of ``spec``, each in file order.

    Args:
        spec, categories, facts: as for validate().

    Warnings are located messages like errors (same type, printed ``path:line:col: message``) about
    things that do not stop the task from loading, such as an unused region whose target is not
    declared.
    """
    v = _Validator(spec, categories, facts)
    errors = v.run()
    return errors, v.warnings


def check_file(
    path,
    categories: Mapping[str, Sequence[str]] | None = None,
    warnings: list | None = None,
    facts: Mapping[str, CategoryFacts] | None = None,
) -> tuple[TaskSpec | None, list[BddlError]]:
    """Parse and validate the task file at ``path`` (str or os.PathLike).

    Args:
        path: the task file.
        categories, facts: as for validate().
        warnings: a list that receives the file's warnings (BddlError values), if given.

    Returns ``(spec, problems)``; when the file does not parse, ``(None, [the parse error])``.
    """
    try:
        spec = parse_file(path)
    except BddlError as e:
        return None, [e]
    errors, found = validate_with_warnings(spec, categories, facts)
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
