"""What a config can name, described from the registries themselves: the suites and their tasks, the learners
and their options, the policies and their keys (built-in ones and those of a config's `plugins`), for
`libero-ll list`.

The descriptions come from the code: a learner's class docstring (its first line, and its `Options:` section),
a policy's config dataclasses (each key's default, and the comment written above the key).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass, field

from libero_ll.errors import LiberoError


@dataclass
class Entry:
    """One thing a config may name.

    Attributes:
        name: its name in a config.
        summary: one line on what it is.
        keys: (key, default, description) of its options or config keys, in the order the code gives them.
        source: where it is defined (module, or a file for a suite).
        unreadable: for a suite, the names of its task files that cannot be read (listed among its keys, with
            why); a command that lists them fails.
    """

    name: str
    summary: str
    keys: list[tuple[str, object, str]] = field(default_factory=list)
    source: str = ""
    unreadable: list[str] = field(default_factory=list)


def learners() -> list[Entry]:
    """Every registered learner, with its options and their defaults."""
    import libero_ll.learners  # noqa: F401  (registration)
    from libero_ll.learners.registry import LEARNERS

    out = []
    for name in LEARNERS.names():
        cls = LEARNERS.get(name)
        said = _docstring_section(cls, "Options")
        keys = [(key, default, said.get(key, "")) for key, default in cls.options.items()]
        out.append(Entry(name, _first_line(cls), keys, cls.__module__))
    return out


def policies() -> list[Entry]:
    """Every registered policy, with every key of its config, its default and the comment above it."""
    import libero_ll.policies  # noqa: F401  (registration)
    from libero_ll.policies.registry import POLICIES

    out = []
    for name in POLICIES.names():
        cls = POLICIES.get(name)
        config = cls.config_class
        comments = _field_comments(config)
        keys = []
        for f in dataclasses.fields(config):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            keys.append((f.name, default, comments.get(f.name, "")))
        out.append(Entry(name, _first_line(cls), keys, cls.__module__))
    return out


def suites() -> list[Entry]:
    """The shipped benchmark suites, then the other folders of bddl_tasks/ that hold task files (quickstart)."""
    from libero_ll.experiments.lifelong import REPO_ROOT, suite_tasks
    from libero_ll.tasks.registry import suite_names

    root = REPO_ROOT / "bddl_tasks"
    names = suite_names() + sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in suite_names())
    out = []
    for name in names:
        try:
            count = len(suite_tasks(str(root / name)))
        except LiberoError:
            continue  # a folder without task files
        kind = "benchmark suite" if name in suite_names() else "task folder"
        out.append(Entry(name, f"{kind}, {count} task{'s' if count != 1 else ''}", [], str(root / name)))
    return out


def suite(name: str) -> Entry:
    """A suite's tasks in learning order, each with its instruction (a shipped suite or a folder of task
    files)."""
    from libero_ll.bddl.parser import parse_file
    from libero_ll.experiments.lifelong import suite_dir, suite_tasks

    keys, unreadable = [], []
    for path in suite_tasks(name):
        try:
            language = parse_file(str(path)).language
        except LiberoError as e:
            language = f"(cannot be read: {e})"
            unreadable.append(path.stem)
        keys.append((path.stem, None, language))
    return Entry(name, f"{len(keys)} task{'s' if len(keys) != 1 else ''} in learning order", keys,
                 str(suite_dir(name)), unreadable)


def _first_line(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _docstring_section(cls, title: str) -> dict[str, str]:
    """`key: text` entries of a Google-style docstring section (continuation lines joined)."""
    doc = inspect.getdoc(cls) or ""
    out: dict[str, str] = {}
    inside, key = False, None
    for line in doc.splitlines():
        if line.strip() == f"{title}:":
            inside, key = True, None
            continue
        if not inside:
            continue
        if not line.strip():
            continue
        if not line.startswith(" "):
            break  # the next section
        match = re.match(r"^\s{2,}(\w+): (.*)$", line)
        if match and len(line) - len(line.lstrip()) <= 4:
            key = match.group(1)
            out[key] = match.group(2).strip()
        elif key is not None:
            out[key] += " " + line.strip()
    return out


def _field_comments(config_class) -> dict[str, str]:
    """Key → the `#` comment lines written just above it in the dataclass (and its bases)."""
    out: dict[str, str] = {}
    for cls in reversed(config_class.__mro__):
        if not dataclasses.is_dataclass(cls):
            continue
        try:
            lines = inspect.getsource(cls).splitlines()
        except (OSError, TypeError):
            continue
        comment: list[str] = []
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("#"):
                comment.append(stripped.lstrip("#").strip())
                continue
            match = re.match(r"^(\w+)\s*:", stripped)
            if match and comment and "ClassVar" not in stripped:
                out[match.group(1)] = " ".join(comment)
            comment = []
    return out
