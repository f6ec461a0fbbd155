"""The benchmark registry: the five shipped suites, their tasks in order, and task orders for studies.

A suite's tasks come in the order of its spec (``libero_ll/tasks/suites/<suite>.yaml``, which
follows the LIBERO paper's task list; docs/tasks.md); the files live in ``bddl_tasks/<suite>/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from libero_ll.errors import LiberoError
from libero_ll.registry import Registry

PACKAGE_DIR = Path(__file__).resolve().parent
SUITE_SPEC_DIR = PACKAGE_DIR / "suites"
REPO_ROOT = PACKAGE_DIR.parents[1]
TASKS_ROOT = REPO_ROOT / "bddl_tasks"
DATASETS_ROOT = Path("datasets")
# A folder of task files may hold their learning order, a task name per line (`libero-ll generate` writes the
# spec's order; a run keeps its tasks' order in RUN_DIR/tasks/ under the same name).
ORDER_FILE = "order.txt"


def folder_order(folder: Path, names: list[str]) -> list[str]:
    """The task `names` of a folder in its learning order: those its ORDER_FILE lists, in that order, then any
    it does not list, by name; all of them by name when it has none.

    Raises:
        LiberoError: the order file names a task the folder has no file of.
    """
    path = Path(folder) / ORDER_FILE
    try:
        listed = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        return sorted(names)
    except (OSError, UnicodeDecodeError) as e:
        raise LiberoError(f"{path}: cannot be read as the folder's task order ({e})") from None
    listed = [n for n in listed if n and not n.startswith("#")]
    stray = [n for n in listed if n not in names]
    if stray:
        raise LiberoError(f"{path}: names {', '.join(stray)}, which the folder has no .bddl file of; fix the "
                          "file (a task name per line) or remove it to learn the tasks by name")
    return list(dict.fromkeys(listed)) + sorted(set(names) - set(listed))

SUITES: Registry[Path] = Registry("suite")
for _name in ("libero_spatial", "libero_object", "libero_goal", "libero_90", "libero_10"):
    SUITES.register(_name)(SUITE_SPEC_DIR / f"{_name}.yaml")


@dataclass
class Task:
    """One benchmark task.

    Args:
        suite: the suite it belongs to.
        name: the task name (the file stem).
        instruction: the language instruction.
        file: the .bddl file.
        dataset: where its demonstrations go by default (``datasets/<suite>/<task>.hdf5``, relative
            to the working directory).
    """

    suite: str
    name: str
    instruction: str
    file: Path
    dataset: Path
    _init_states: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def init_states(self) -> np.ndarray:
        """The 50 fixed initial states (n, S), read (and checked against the task file) on first use."""
        if self._init_states is None:
            from libero_ll.envs.init_states import load_init_states

            self._init_states = load_init_states(self.file)
        return self._init_states


@dataclass
class Suite:
    """A suite: its name and its tasks in learning order."""

    name: str
    tasks: list[Task]

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self):
        return iter(self.tasks)

    def names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def task(self, name: str) -> Task:
        """The task called `name`; LiberoError listing the suite's tasks otherwise."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise LiberoError(f"suite {self.name} has no task {name!r}; known: {', '.join(self.names())}")


def suite_names() -> list[str]:
    """The shipped suites, in the order of the paper."""
    return ["libero_spatial", "libero_object", "libero_goal", "libero_90", "libero_10"]


def _suite_entries(name: str) -> list[tuple[str, str]]:
    """(task name, instruction) of a suite, read from its spec without building any task."""
    from libero_ll.tasks.scenes import load_yaml

    path = SUITES.get(name)
    data = load_yaml(path.read_text(encoding="utf-8"))
    return [(str(t["name"]), " ".join(str(t["language"]).split())) for t in data["tasks"]]


def get_suite(name: str, root: str | Path | None = None) -> Suite:
    """The ordered tasks of a shipped suite.

    Args:
        name: libero_spatial, libero_object, libero_goal, libero_90 or libero_10.
        root: folder holding the suites' task folders (default: the repository's bddl_tasks/).

    Raises:
        LiberoError: an unknown suite (the message lists the known ones).
    """
    entries = _suite_entries(name)
    folder = Path(root or TASKS_ROOT) / name
    tasks = [Task(name, n, lang, folder / f"{n}.bddl", DATASETS_ROOT / name / f"{n}.hdf5") for n, lang in entries]
    return Suite(name, tasks)


def task_orders(suite: str, n: int = 1, seed: int = 0) -> list[list[str]]:
    """Task orders of a suite for order-robustness studies: the default order, then seeded permutations.

    Args:
        suite: the suite's name.
        n: how many orders (the first is always the default order).
        seed: seeds the permutations; the same seed gives the same orders.

    Returns:
        n lists of task names, each a permutation of the suite's tasks.
    """
    if n < 1:
        raise LiberoError(f"task_orders: n must be at least 1, got {n}")
    return permuted_orders(get_suite(suite).names(), n, seed)


def permuted_orders(names: list[str], n: int, seed: int = 0) -> list[list[str]]:
    """`names` in their own order, then n - 1 other seeded permutations of them, all different (the same
    seed, the same orders).

    Raises:
        LiberoError: n is more than the number of orders the tasks have.
    """
    import math

    if n > math.factorial(len(names)):
        raise LiberoError(f"{len(names)} tasks have {math.factorial(len(names))} orders, not {n}")
    rng = np.random.default_rng(seed)
    orders = [list(names)]
    while len(orders) < n:
        order = [names[i] for i in rng.permutation(len(names))]
        if order not in orders:
            orders.append(order)
    return orders


def build_suite(name: str):
    """Build every task of a shipped suite from its spec (no simulator): a list of GeneratedTask."""
    from libero_ll.tasks.generator import build_plan, load_plan

    return build_plan(load_plan(SUITES.get(name)))


def write_suite(name: str, root: str | Path | None = None) -> list[Path]:
    """(Re)write a shipped suite's .bddl files under ``<root>/<name>/``; returns the files in suite order."""
    from libero_ll.tasks.generator import write_tasks

    return write_tasks(build_suite(name), Path(root or TASKS_ROOT) / name)
