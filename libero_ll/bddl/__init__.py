"""The task language: TaskSpec dataclasses, and reading, writing and checking task files (BDDL).

Nothing here imports the simulator; category knowledge comes in as a plain mapping.
"""

from libero_ll.bddl.parser import BddlError, parse_file, parse_string
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
    iter_atoms,
)
from libero_ll.bddl.validate import BddlWarning, check_file, load_file, validate, validate_with_warnings
from libero_ll.bddl.writer import write_file, write_string

__all__ = [
    "PREDICATE_ARITY",
    "PREDICATE_SPELLING",
    "PROBLEM_CLASSES",
    "And",
    "BddlError",
    "BddlWarning",
    "Formula",
    "Loc",
    "Not",
    "Or",
    "Predicate",
    "Region",
    "TaskSpec",
    "check_file",
    "iter_atoms",
    "load_file",
    "parse_file",
    "parse_string",
    "validate",
    "validate_with_warnings",
    "write_file",
    "write_string",
]
