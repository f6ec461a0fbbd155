"""Smoke-preset fixtures shared by the experiment tests: demos collected once, environments built once."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "smoke.yaml"


def smoke_config(tmp_path: Path, data_dir: Path, *overrides: str):
    """The smoke preset writing runs under tmp_path and reading demos from data_dir, plus overrides."""
    from libero_ll.experiments.config import load_config

    return load_config(SMOKE, [f"output_dir={tmp_path / 'runs'}", f"data.dir={data_dir}", *overrides])


@pytest.fixture(scope="session")
def make_smoke_config():
    """`smoke_config` for tests (test modules here are not a package, so they cannot import it)."""
    return smoke_config


class Crash(Exception):
    """Stands for the process dying at the moment a given log line is printed (before that epoch's save)."""


def stopped_run(cfg, at: str, envs=None) -> Path:
    """Run `cfg` until it logs a line starting with `at`, stop it there (raising from its log, before what
    follows that line is saved), and return its run directory."""
    from libero_ll.experiments.lifelong import run_lifelong

    lines = []

    def stop(line: str) -> None:
        lines.append(line)
        if line.startswith(at):
            raise Crash(line)

    with pytest.raises(Crash):
        run_lifelong(cfg, log=stop, envs=envs)
    return Path(lines[0].split(": ", 1)[1])


@pytest.fixture(scope="session")
def stop_run():
    """`stopped_run` for tests."""
    return stopped_run


@pytest.fixture(scope="session")
def smoke_data(tmp_path_factory) -> Path:
    """A folder with the smoke preset's demos of its two tasks (collected by the expert once per session)."""
    from libero_ll.data.collect import collect_task
    from libero_ll.envs.env import EnvConfig
    from libero_ll.experiments.lifelong import suite_tasks

    cfg = smoke_config(tmp_path_factory.mktemp("unused"), Path("unused"))
    out = tmp_path_factory.mktemp("smoke_data")
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh))
    for task in suite_tasks(cfg.suite, list(cfg.tasks)):
        collect_task(task, out / f"{task.stem}.hdf5", int(cfg.data.demos_per_task), int(cfg.data.collect_seed),
                     env_cfg, max_steps=int(cfg.data.expert_max_steps))
    return out


@pytest.fixture(scope="session")
def smoke_envs(tmp_path_factory):
    """The smoke preset's task environments, shared by the runs of a session (building one takes seconds)."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.experiments.lifelong import suite_tasks

    cfg = smoke_config(tmp_path_factory.mktemp("unused"), Path("unused"))
    env_cfg = EnvConfig(image_size=int(cfg.env.image_size), robot_mesh=str(cfg.env.robot_mesh),
                        max_steps=int(cfg.eval.max_steps))
    envs = [LiberoEnv(t, env_cfg) for t in suite_tasks(cfg.suite, list(cfg.tasks))]
    yield envs
    for e in envs:
        e.close()


def descendants_of(pid: int) -> list[int]:
    """Every running process below `pid` (from /proc; zombies left out), deepest last."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


@pytest.fixture(scope="session")
def descendants():
    """`descendants_of`, for the tests (test modules here are not a package, so they cannot import it)."""
    return descendants_of
