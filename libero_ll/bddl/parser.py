"""Read task files (BDDL) into TaskSpec, stopping at the first problem with ``path:line:col: message``.

The parser checks syntax and shape; cross-references (undeclared names, targets, value ranges,
categories) are checked by :mod:`libero_ll.bddl.validate`, which reports all of them at once.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from libero_ll.bddl.spec import (
    PREDICATE_ARITY,
    PREDICATE_SPELLING,
    PROBLEM_CLASSES,
    And,
    Formula,
    Loc,
    Not,
    Or,
    Predicate,
    Region,
    TaskSpec,
)
from libero_ll.errors import LiberoError

NAME_RE = re.compile(r"[a-z_][a-z0-9_]*\Z")
PROBLEM_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")

SECTIONS = (
    ":domain",
    ":requirements",
    ":language",
    ":regions",
    ":fixtures",
    ":objects",
    ":obj_of_interest",
    ":init",
    ":goal",
)
REGION_ATTRIBUTES = (":target", ":ranges", ":yaw_rotation", ":rgba")
_CONNECTIVES = {"and": "And", "or": "Or", "not": "Not"}
_CANONICAL_CLASS = {c.lower(): c for c in PROBLEM_CLASSES}
_KNOWN_PREDICATES = ", ".join(PREDICATE_SPELLING.values())

# Deeper nesting than any task needs is refused before recursive code could overflow the stack.
MAX_DEPTH = 100

# A comment runs to the end of its line, whichever line ending the file uses.
_TOKEN_RE = re.compile(r"(?P<ws>\s+)|(?P<comment>;[^\r\n]*)|(?P<paren>[()])|(?P<atom>[^\s();]+)")
# A line ends at '\n', '\r\n' or a lone '\r' (old Mac files): each counts as one line break.
_LINE_BREAK_RE = re.compile(r"\r\n?|\n")


class BddlError(LiberoError):
    """A problem in a task file, printed as ``path:line:col: message``.

    Args:
        path: the file (or ``<string>``).
        line: 1-based line of the offending token (0 when unknown).
        col: 1-based column of the offending token (0 when unknown).
        message: what is wrong, in words.
    """

    def __init__(self, path: str, line: int, col: int, message: str):
        super().__init__(f"{path}:{line}:{col}: {message}")
        self.path = path
        self.line = line
        self.col = col
        self.message = message

    @classmethod
    def at(cls, loc: Loc, message: str) -> "BddlError":
        """An error at ``loc`` (a Loc) saying ``message``."""
        return cls(loc.path, loc.line, loc.col, message)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line, self.col)

    def __reduce__(self):
        # Exceptions pickle through self.args, which here is the formatted text, not our arguments.
        return (type(self), (self.path, self.line, self.col, self.message))


# ---------------------------------------------------------------- tokens and the s-expression tree


@dataclass
class _Atom:
    text: str
    loc: Loc
    start: int
    end: int


@dataclass
class _List:
    loc: Loc  # the opening parenthesis
    start: int
    items: list = field(default_factory=list)
    close_loc: Loc | None = None
    end: int = -1  # offset just past the closing parenthesis

    def head(self) -> str | None:
        """The first item's text in lower case when it is an atom."""
        if self.items and isinstance(self.items[0], _Atom):
            return self.items[0].text.lower()
        return None


def _describe(node) -> str:
    return f"'{node.text}'" if isinstance(node, _Atom) else "'('"


def _read_tree(text: str, path: str) -> list:
    """Tokenise ``text`` and nest it by parentheses; the top-level items come back."""
    root: list = []
    stack: list[_List] = []
    line, line_start = 1, 0
    hidden: Loc | None = None  # the first comment that hides a ')' (a ';' in the middle of a line)
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        start = m.start()
        if kind == "ws":
            breaks = list(_LINE_BREAK_RE.finditer(m.group()))
            if breaks:
                line += len(breaks)
                line_start = start + breaks[-1].end()
            continue
        if kind == "comment":
            if hidden is None and ")" in m.group():
                hidden = Loc(path, line, start - line_start + 1)
            continue
        loc = Loc(path, line, start - line_start + 1)
        if kind == "atom":
            (stack[-1].items if stack else root).append(_Atom(m.group(), loc, start, m.end()))
        elif m.group() == "(":
            node = _List(loc, start)
            (stack[-1].items if stack else root).append(node)
            stack.append(node)
            if len(stack) > MAX_DEPTH:
                raise BddlError.at(loc, f"parentheses nested more than {MAX_DEPTH} deep")
        else:
            if not stack:
                first = root[0] if root else None
                if isinstance(first, _List) and first.head() == "define" and len(root) > 1:
                    # Sections follow the end of (define ...): the ')' that ended it early is the extra one.
                    raise BddlError.at(
                        first.close_loc,
                        f"extra ')': it ends (define ...) here, yet the file goes on "
                        f"(the ')' at {loc.line}:{loc.col} then has nothing to close)",
                    )
                raise BddlError.at(loc, "unmatched ')': nothing is open here")
            node = stack.pop()
            node.close_loc, node.end = loc, m.end()
    if stack:
        try:
            defines = [n for n in root if isinstance(n, _List) and n.head() == "define"]
            if defines:
                _check_swallowed_sections(defines[0])
            raise BddlError.at(stack[-1].loc, "'(' is never closed: a ')' is missing")
        except BddlError as e:
            if hidden is None:
                raise
            raise BddlError(e.path, e.line, e.col, f"{e.message}; the ';' at {hidden.line}:{hidden.col} starts a "
                            "comment, which hides the rest of its line and the ')' in it") from None
    return root


def _check_swallowed_sections(define: _List) -> None:
    """Report a section that a missing ')' made swallow the sections after it."""
    for section in define.items[1:]:
        if not isinstance(section, _List) or section.head() not in SECTIONS:
            continue
        inner = _find_nested_section(section.items[1:])
        if inner is not None:
            raise BddlError.at(
                section.loc,
                f"'(' of {section.head()} is not closed before ({inner.head()} at "
                f"{inner.loc.line}:{inner.loc.col}): a ')' is missing",
            )


def _find_nested_section(items: list) -> _List | None:
    for item in items:
        if isinstance(item, _List):
            if item.head() in SECTIONS:
                return item
            found = _find_nested_section(item.items)
            if found is not None:
                return found
    return None


# ---------------------------------------------------------------- sections


class _Parser:
    def __init__(self, text: str, path: str):
        # A byte-order mark would shift every column of the first line.
        self.text = text[1:] if text.startswith("\ufeff") else text
        self.path = path
        self.decl_locs: dict[str, Loc] = {}
        # Section keys all start with ':' so that they never meet an instance name.
        self.section_locs: dict[str, Loc] = {}
        self.problem_class: str | None = None
        self.domain = "robosuite"
        self.language: str | None = None
        self.regions: dict[str, Region] = {}
        self.fixtures: dict[str, str] = {}
        self.objects: dict[str, str] = {}
        self.category_locs: dict[str, Loc] = {}
        self.obj_of_interest: list[str] = []
        self.interest_locs: list[Loc] = []
        self.init: list[Predicate] = []
        self.goal: Formula | None = None

    def error(self, node_or_loc, message: str) -> BddlError:
        loc = node_or_loc if isinstance(node_or_loc, Loc) else node_or_loc.loc
        return BddlError.at(loc, message)

    def parse(self) -> TaskSpec:
        root = _read_tree(self.text, self.path)
        if not root:
            raise BddlError(self.path, 1, 1, "empty file: expected (define (problem ...) ...)")
        define = root[0]
        if isinstance(define, _Atom):
            raise self.error(define, f"expected '(define' at the start, found {_describe(define)}")
        if not define.items:
            raise self.error(define, "expected '(define' at the start, found '()'")
        keyword = define.items[0]
        if isinstance(keyword, _List) or keyword.text.lower() != "define":
            raise self.error(keyword, f"expected 'define', found {_describe(keyword)}")
        if len(root) > 1:
            raise self.error(root[1], f"unexpected {_describe(root[1])} after the end of (define ...)")

        _check_swallowed_sections(define)
        handlers = {
            "problem": self.section_problem,
            ":domain": self.section_domain,
            ":requirements": lambda node: None,
            ":language": self.section_language,
            ":regions": self.section_regions,
            ":fixtures": lambda node: self.section_typed(node, self.fixtures),
            ":objects": lambda node: self.section_typed(node, self.objects),
            ":obj_of_interest": self.section_interest,
            ":init": self.section_init,
            ":goal": self.section_goal,
        }
        for node in define.items[1:]:
            if isinstance(node, _Atom):
                raise self.error(
                    node, f"unexpected {_describe(node)}: expected a section such as (:init ...)"
                )
            if not node.items:
                raise self.error(node, "empty section '()'")
            head = node.items[0]
            if isinstance(head, _List):
                raise self.error(head, "expected a section name after '(', found '('")
            key = head.text.lower()
            if key not in handlers:
                raise self.error(
                    head, f"unknown section '{head.text}'; known: (problem ...), " + ", ".join(SECTIONS)
                )
            section = ":problem" if key == "problem" else key
            if section in self.section_locs and key != ":requirements":
                first = self.section_locs[section]
                raise self.error(head, f"duplicate section {key} (first at {first.line}:{first.col})")
            self.section_locs[section] = head.loc
            handlers[key](node)

        for key, what in ((":problem", "(problem <ProblemClass>)"), (":language", "(:language ...)"),
                          (":goal", "(:goal ...)")):
            if key not in self.section_locs:
                raise self.error(keyword, f"missing {what} section")
        self.decl_locs.update(self.section_locs)
        return TaskSpec(
            problem_class=self.problem_class,
            language=self.language,
            regions=self.regions,
            fixtures=self.fixtures,
            objects=self.objects,
            obj_of_interest=self.obj_of_interest,
            init=self.init,
            goal=self.goal,
            domain=self.domain,
            path=self.path,
            decl_locs=self.decl_locs,
            category_locs=self.category_locs,
            interest_locs=self.interest_locs,
        )

    # -- helpers

    def one_atom(self, node: _List, what: str, pattern: re.Pattern) -> _Atom:
        """The single argument of ``(keyword arg)``, checked against ``pattern``."""
        args = node.items[1:]
        if not args:
            raise self.error(node.items[0], f"{node.items[0].text} needs a {what}")
        if len(args) > 1:
            raise self.error(
                args[1], f"{node.items[0].text} takes one {what}, found another: {_describe(args[1])}"
            )
        return self.atom(args[0], what, pattern)

    def atom(self, node, what: str, pattern: re.Pattern = NAME_RE) -> _Atom:
        if isinstance(node, _List):
            article = "an" if what[0] in "aeiou" else "a"
            raise self.error(node, f"expected {article} {what}, found '('")
        if not pattern.match(node.text):
            if pattern is NAME_RE:
                rule = "names are lower-case identifiers: a-z, 0-9 and '_', not starting with a digit"
            else:
                rule = "it must be an identifier: letters, digits and '_', not starting with a digit"
            raise self.error(node, f"bad {what} '{node.text}': {rule}")
        return node

    def name(self, node, what: str) -> str:
        return self.atom(node, what).text

    def number(self, node) -> float:
        if isinstance(node, _List):
            raise self.error(node, "expected a number, found '('")
        if not NUMBER_RE.match(node.text):
            raise self.error(node, f"expected a number, found '{node.text}'")
        value = float(node.text)
        if not math.isfinite(value):
            shown = node.text
            if len(shown) > 40:  # a number of thousands of digits is not echoed whole
                shown = f"{shown[:20]}...{shown[-8:]} ({len(shown)} characters)"
            raise self.error(node, f"the number {shown} is too large")
        return value

    # -- sections

    # For the one-value sections the value's position is kept, since that is what a later error names.

    def section_problem(self, node: _List) -> None:
        value = self.one_atom(node, "problem class", PROBLEM_RE)
        # Compared without case, as LIBERO's reader lower-cases the whole file, and kept in its registered
        # spelling, which is what the scene families are looked up by; an unknown one is kept as written, for
        # the validator to name.
        self.problem_class = _CANONICAL_CLASS.get(value.text.lower(), value.text)
        self.section_locs[":problem"] = value.loc

    def section_domain(self, node: _List) -> None:
        value = self.one_atom(node, "domain name", PROBLEM_RE)
        # The domain is a keyword like any other: compared, and kept, in lower case.
        self.domain = value.text.lower()
        self.section_locs[":domain"] = value.loc

    def section_language(self, node: _List) -> None:
        # The instruction is free text: rebuild it from the tokens, keeping a space exactly where the
        # file had whitespace or a comment between two tokens.
        tokens: list[tuple[str, int, int]] = []

        def flatten(items):
            for item in items:
                if isinstance(item, _Atom):
                    tokens.append((item.text, item.start, item.end))
                else:
                    tokens.append(("(", item.start, item.start + 1))
                    flatten(item.items)
                    tokens.append((")", item.end - 1, item.end))

        flatten(node.items[1:])
        parts: list[str] = []
        prev_end = None
        for text, start, end in tokens:
            if prev_end is not None and start > prev_end:
                parts.append(" ")
            parts.append(text)
            prev_end = end
        self.language = "".join(parts)

    def section_typed(self, node: _List, into: dict[str, str]) -> None:
        pending: list[_Atom] = []
        items = node.items[1:]
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, _List):
                raise self.error(item, "expected an instance name, found '('")
            if item.text == "-":
                if not pending:
                    raise self.error(item, "'-' with no instance names before it")
                if i + 1 >= len(items):
                    raise self.error(item, "missing category after '-'")
                category = self.name(items[i + 1], "category name")
                for inst in pending:
                    self.declare(inst, category, items[i + 1].loc, into)
                pending = []
                i += 2
                continue
            self.atom(item, "instance name")
            pending.append(item)
            i += 1
        if pending:
            names = " ".join(a.text for a in pending)
            raise self.error(pending[0], f"'{names}' has no category: write '{names} - <category>'")

    def declare(self, inst: _Atom, category: str, category_loc: Loc, into: dict[str, str]) -> None:
        if inst.text in self.fixtures or inst.text in self.objects:
            first = self.decl_locs[inst.text]
            raise self.error(
                inst, f"duplicate instance '{inst.text}' (first declared at {first.line}:{first.col})"
            )
        into[inst.text] = category
        self.decl_locs[inst.text] = inst.loc
        self.category_locs[inst.text] = category_loc

    def section_interest(self, node: _List) -> None:
        for item in node.items[1:]:
            self.obj_of_interest.append(self.name(item, "instance name"))
            self.interest_locs.append(item.loc)

    def section_regions(self, node: _List) -> None:
        for item in node.items[1:]:
            if isinstance(item, _Atom):
                raise self.error(
                    item, f"expected a region (<name> (:target ...) ...), found {_describe(item)}"
                )
            if not item.items:
                raise self.error(item, "expected a region name after '(', found '()'")
            region = self.region(item)
            key = region.full_name
            if key in self.regions:
                first = self.regions[key].loc
                raise self.error(region.loc, f"duplicate region '{key}' (first at {first.line}:{first.col})")
            self.regions[key] = region
            self.decl_locs.setdefault(key, region.loc)

    def region(self, node: _List) -> Region:
        name_node = node.items[0]
        name = self.name(name_node, "region name")
        seen: dict[str, Loc] = {}
        locs: dict[str, Loc] = {}
        target = None
        ranges: list[tuple] = []
        yaws: list[tuple] = []
        rgba = None
        for attr in node.items[1:]:
            if isinstance(attr, _Atom) or not attr.items or isinstance(attr.items[0], _List):
                where = attr if isinstance(attr, _Atom) or not attr.items else attr.items[0]
                raise self.error(
                    where, f"expected a region attribute such as (:target ...), found {_describe(where)}"
                )
            head = attr.items[0]
            key = head.text.lower()
            if key not in REGION_ATTRIBUTES:
                hint = "" if key.startswith(":") else " (is a ')' missing before it?)"
                raise self.error(
                    head,
                    f"unknown region attribute '{head.text}'{hint}; known: " + ", ".join(REGION_ATTRIBUTES),
                )
            if key in seen:
                first = seen[key]
                raise self.error(
                    head, f"duplicate {key} in region '{name}' (first at {first.line}:{first.col})"
                )
            seen[key] = head.loc
            if key == ":target":
                target_node = self.one_atom(attr, "target instance name", NAME_RE)
                target = target_node.text
                locs["target"] = target_node.loc
            elif key == ":ranges":
                ranges = self.number_lists(attr, "ranges", 4, "(x_min y_min x_max y_max)", locs, name)
            elif key == ":yaw_rotation":
                yaws = self.number_lists(attr, "yaw_rotation", 2, "(yaw_min yaw_max)", locs, name)
            else:
                rgba = self.rgba(attr, locs)
        if target is None:
            raise self.error(name_node, f"region '{name}' has no (:target <instance>)")
        return Region(name, target, ranges, yaws, rgba, loc=name_node.loc, locs=locs)

    def number_lists(
        self, attr: _List, what: str, size: int, shape: str, locs: dict[str, Loc], region: str
    ) -> list[tuple]:
        """``(:what ((n ...) (n ...)))``: one wrapping list holding lists of ``size`` numbers."""
        head = attr.items[0]
        usage = f"write (:{what} ({shape} ...))"
        if len(attr.items) < 2:
            raise self.error(head, f"{head.text} needs a list of {shape}: {usage}")
        wrapper = attr.items[1]
        if isinstance(wrapper, _Atom) or any(isinstance(x, _Atom) for x in wrapper.items):
            if isinstance(wrapper, _Atom):
                bad = wrapper
            else:
                bad = next(x for x in wrapper.items if isinstance(x, _Atom))
            raise self.error(bad, f"{head.text} holds a list of lists, found {_describe(bad)}: {usage}")
        if len(attr.items) > 2:
            raise self.error(attr.items[2], f"{head.text} takes one list of {shape}: {usage}")
        if what == "ranges" and not wrapper.items:
            raise self.error(
                wrapper,
                f"{head.text} of region '{region}' is empty: give at least one {shape}, or leave {head.text} out "
                "for an affordance region",
            )
        out = []
        for i, group in enumerate(wrapper.items):
            values = [self.number(x) for x in group.items]
            if len(values) != size:
                raise self.error(group, f"each of {what} has {size} numbers {shape}, found {len(values)}")
            for j, x in enumerate(group.items):
                locs[f"{what}.{i}.{j}"] = x.loc
            out.append(tuple(values))
        return out

    def rgba(self, attr: _List, locs: dict[str, Loc]) -> tuple:
        head = attr.items[0]
        if len(attr.items) != 2 or isinstance(attr.items[1], _Atom):
            where = attr.items[1] if len(attr.items) > 1 else head
            raise self.error(where, f"{head.text} takes one list of 4 numbers: write (:rgba (r g b a))")
        group = attr.items[1]
        values = [self.number(x) for x in group.items]
        if len(values) != 4:
            raise self.error(group, f"rgba has 4 numbers (r g b a), found {len(values)}")
        for j, x in enumerate(group.items):
            locs[f"rgba.{j}"] = x.loc
        return tuple(values)

    def section_init(self, node: _List) -> None:
        for item in node.items[1:]:
            if isinstance(item, _List) and item.head() in _CONNECTIVES:
                raise self.error(
                    item.items[0],
                    f"(:init ...) lists predicates only; {item.items[0].text} is not allowed here",
                )
            self.init.append(self.predicate(item))

    def section_goal(self, node: _List) -> None:
        items = node.items[1:]
        if not items:
            self.goal = And([], loc=node.items[0].loc)
            return
        goal = self.formula(items[0])
        if len(items) > 1:
            raise self.error(items[1], "(:goal ...) takes one formula; wrap several in (And ...)")
        self.goal = goal if isinstance(goal, And) else And([goal], loc=goal.loc)

    # -- formulas

    def formula(self, node) -> Formula:
        if isinstance(node, _Atom):
            hint = f" (write ({node.text} ...))" if node.text.lower() in _CONNECTIVES else ""
            raise self.error(node, f"expected a formula such as (On a b), found '{node.text}'{hint}")
        key = node.head()
        if key not in _CONNECTIVES:
            return self.predicate(node, connectives=True)
        head = node.items[0]
        children = node.items[1:]
        if key == "not":
            if len(children) != 1:
                raise self.error(head, f"{head.text} takes exactly one formula, found {len(children)}")
            return Not(self.formula(children[0]), loc=head.loc)
        if key == "or" and not children:
            raise self.error(head, f"{head.text} needs at least one formula")
        built = [self.formula(c) for c in children]
        return And(built, loc=head.loc) if key == "and" else Or(built, loc=head.loc)

    def predicate(self, node, connectives: bool = False) -> Predicate:
        if isinstance(node, _Atom):
            raise self.error(node, f"expected a predicate such as (On a b), found '{node.text}'")
        if not node.items:
            raise self.error(node, "empty predicate '()'")
        head = node.items[0]
        if isinstance(head, _List):
            raise self.error(head, "expected a predicate name after '(', found '('")
        key = head.text.lower()
        if key in SECTIONS:
            raise self.error(head, f"section {head.text} cannot appear here: is a ')' missing before it?")
        if key not in PREDICATE_ARITY:
            known = _KNOWN_PREDICATES + (", And, Or, Not" if connectives else "")
            raise self.error(head, f"unknown predicate '{head.text}'; known: {known}")
        args = node.items[1:]
        arity = PREDICATE_ARITY[key]
        if len(args) != arity:
            plural = "argument" if arity == 1 else "arguments"
            raise self.error(
                head, f"{PREDICATE_SPELLING[key]} takes {arity} {plural}, found {len(args)}"
            )
        names = tuple(self.name(a, "argument name") for a in args)
        return Predicate(key, names, loc=head.loc, arg_locs=tuple(a.loc for a in args))


# ---------------------------------------------------------------- public functions


def parse_string(text: str, path: str = "<string>") -> TaskSpec:
    """Parse the text of a task file.

    Args:
        text: the whole file content.
        path: name used in error messages and stored as ``TaskSpec.path``.

    Returns the TaskSpec; raises BddlError at the first problem found.
    """
    return _Parser(text, str(path)).parse()


def parse_file(path) -> TaskSpec:
    """Parse the task file at ``path`` (str or os.PathLike, UTF-8).

    Raises BddlError for an unreadable file (at 1:1) and for any problem in its content.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BddlError(path, 1, 1, f"cannot read file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[: e.start].decode("utf-8", errors="replace")
        breaks = list(_LINE_BREAK_RE.finditer(before))
        line = len(breaks) + 1
        col = len(before) - (breaks[-1].end() if breaks else 0) + 1
        raise BddlError(path, line, col, "the file is not valid UTF-8 text") from None
    return parse_string(text, path)
