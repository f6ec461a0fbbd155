"""Write a TaskSpec as a task file in one canonical layout that LIBERO's own reader also accepts.

The output is deterministic, and parsing it gives back an equal TaskSpec (floats are written with
repr(), which round-trips exactly). A goal using the Or/Not extension is the one thing written that
LIBERO's reader does not take.
"""

from __future__ import annotations

import math
import os
import tempfile

from libero_ll.bddl.parser import NAME_RE, PROBLEM_RE
from libero_ll.bddl.spec import (
    PREDICATE_ARITY,
    PREDICATE_SPELLING,
    And,
    Formula,
    Not,
    Or,
    Predicate,
    TaskSpec,
)
from libero_ll.errors import LiberoError


def _name(text: str, what: str, pattern=NAME_RE) -> str:
    if not isinstance(text, str) or not pattern.match(text):
        raise LiberoError(f"cannot write {what} {text!r}: not a valid name")
    return text


def _number(x) -> str:
    value = float(x)
    if not math.isfinite(value):
        raise LiberoError(f"cannot write the number {x!r}: task files hold finite numbers only")
    # repr() is the shortest text that reads back as the same float, and is what LIBERO files hold.
    return repr(value)


def _numbers(values, size: int, what: str) -> str:
    values = tuple(values)
    if len(values) != size:
        raise LiberoError(f"cannot write {what} {values!r}: it needs {size} numbers")
    return "(" + " ".join(_number(v) for v in values) + ")"


def _language(text: str) -> str:
    # The reader rebuilds the instruction from tokens, so anything that would not survive that trip
    # is refused here rather than silently changed.
    if text != " ".join(text.split()):
        raise LiberoError(f"cannot write the instruction {text!r}: it must be whitespace-normalised")
    if ";" in text:
        raise LiberoError(f"cannot write the instruction {text!r}: ';' starts a comment in task files")
    if "(" in text or ")" in text:
        # Our reader takes them as text, but LIBERO's keeps a parenthesised part as a nested list, and joining the
        # instruction's words then fails: the file would not load there.
        raise LiberoError(
            f"cannot write the instruction {text!r}: LIBERO's reader cannot read parentheses in :language; "
            "write it without them"
        )
    return text


def _predicate(p: Predicate) -> str:
    if p.name not in PREDICATE_ARITY:
        raise LiberoError(f"cannot write unknown predicate {p.name!r}")
    if len(p.args) != PREDICATE_ARITY[p.name]:
        raise LiberoError(f"cannot write {p.name}{p.args!r}: it takes {PREDICATE_ARITY[p.name]} arguments")
    args = " ".join(_name(a, "argument") for a in p.args)
    return f"({PREDICATE_SPELLING[p.name]} {args})"


def _formula(f: Formula) -> str:
    if isinstance(f, Predicate):
        return _predicate(f)
    if isinstance(f, Not):
        return f"(Not {_formula(f.child)})"
    if isinstance(f, (And, Or)):
        keyword = "And" if isinstance(f, And) else "Or"
        if isinstance(f, Or) and not f.children:
            raise LiberoError("cannot write an empty Or")
        return "(" + " ".join([keyword] + [_formula(c) for c in f.children]) + ")"
    raise LiberoError(f"cannot write {f!r}: not a formula")


def _typed(instances: dict[str, str]) -> list[str]:
    # Consecutive instances of one category share a line, as in LIBERO files; order is kept.
    lines: list[str] = []
    run: list[str] = []
    category = None
    for inst, cat in instances.items():
        _name(inst, "instance")
        _name(cat, "category")
        if run and cat != category:
            lines.append(f"    {' '.join(run)} - {category}")
            run = []
        run.append(inst)
        category = cat
    if run:
        lines.append(f"    {' '.join(run)} - {category}")
    return lines


def write_string(spec: TaskSpec) -> str:
    """The text of the task file for ``spec`` (a TaskSpec), ending in a newline.

    Raises LiberoError when the spec holds something a task file cannot express (a bad name, a
    non-finite number, an instruction with ';' or parentheses, which LIBERO's reader cannot read there).
    Goals with Or or Not (this project's extension) are written as they are; LIBERO's reader does not take them.
    """
    out = [
        f"(define (problem {_name(spec.problem_class, 'problem class', PROBLEM_RE)})",
        f"  (:domain {_name(spec.domain, 'domain', PROBLEM_RE)})",
        f"  (:language {_language(spec.language)})" if spec.language else "  (:language)",
        "    (:regions",
    ]
    for key, region in spec.regions.items():
        if key != region.full_name:
            raise LiberoError(f"region keyed {key!r} has full name {region.full_name!r}; they must agree")
        out.append(f"      ({_name(region.name, 'region')}")
        out.append(f"          (:target {_name(region.target, 'region target')})")
        if region.ranges:
            out.append("          (:ranges (")
            for r in region.ranges:
                out.append("              " + _numbers(r, 4, "range"))
            out += ["            )", "          )"]
        if region.yaw_rotation:
            out.append("          (:yaw_rotation (")
            for y in region.yaw_rotation:
                out.append("              " + _numbers(y, 2, "yaw rotation"))
            out += ["            )", "          )"]
        if region.rgba is not None:
            out.append(f"          (:rgba {_numbers(region.rgba, 4, 'rgba')})")
        out.append("      )")
    out += ["    )", "", "  (:fixtures", *_typed(spec.fixtures), "  )", ""]
    out += ["  (:objects", *_typed(spec.objects), "  )", ""]
    interest = [f"    {_name(o, 'object of interest')}" for o in spec.obj_of_interest]
    out += ["  (:obj_of_interest", *interest, "  )", ""]
    out += ["  (:init", *[f"    {_predicate(p)}" for p in spec.init], "  )", ""]
    goal = spec.goal if isinstance(spec.goal, And) else And([spec.goal])
    out += ["  (:goal", f"    {_formula(goal)}", "  )", "", ")", ""]
    return "\n".join(out)


def write_file(spec: TaskSpec, path) -> None:
    """Write ``spec`` (a TaskSpec) to ``path`` (str or os.PathLike) atomically.

    The text goes to a temporary file in the same folder, which then replaces ``path``, so a reader
    never sees half a file.
    """
    path = os.fspath(path)
    text = write_string(spec)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        # mkstemp makes the file private (0600); a task file is shared data, so keep the old file's
        # mode, or make a new one readable by all.
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            os.fchmod(f.fileno(), mode)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
