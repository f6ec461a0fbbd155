"""Task files written the way LIBERO writes them load, reset with their init predicates true and their
goal false, and say what they needed (tests/envs/libero_files.py has one file per kind)."""

from __future__ import annotations

import warnings

import libero_files
import pytest

from libero_ll.bddl.validate import BddlWarning
from libero_ll.cli import main
from libero_ll.envs.env import EnvConfig, LiberoEnv
from libero_ll.envs.placement import PlacementWarning


def test_check_load_passes_every_file_of_the_folder(tmp_path, capsys):
    paths = libero_files.write_folder(tmp_path / "libero_style")
    assert main(["check", "--load", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok, loaded and reset") == len(paths)
    lines = out.splitlines()
    assert not any(line.startswith("  init") and line.endswith("DOES NOT HOLD") for line in lines)
    goals = [line for line in lines if line.startswith("  goal")]
    assert len(goals) == len(paths) and all(line.endswith(": false") for line in goals)
    dangling = next(p for p in paths if p.stem == "open_the_top_drawer_of_the_cabinet")
    line = dangling.read_text().split("\n").index("          (:target bowl_drainer_1)") + 1
    assert f"{dangling}:{line}:20: warning: region 'right_region' targets 'bowl_drainer_1'" in out
    for p in paths:
        tight = f"{p}: warning: region" in out
        assert tight == (p.stem in libero_files.TIGHT), p.stem


@pytest.mark.parametrize("name", sorted(libero_files.FILES))
def test_resets_hold_init_and_not_goal(tmp_path, name):
    path = libero_files.write_folder(tmp_path)[sorted(libero_files.FILES).index(name)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = LiberoEnv(path, EnvConfig(render=False))
        try:
            for seed in (1, 2):
                env.reset(seed=seed)
                bad = [text for text, holds in env.predicate_values(env.spec.init) if not holds]
                assert bad == [], (seed, bad)
                assert not env.check_goal()
        finally:
            env.close()
    categories = {w.category for w in caught}
    assert (BddlWarning in categories) == (name == "open_the_top_drawer_of_the_cabinet")
    assert (PlacementWarning in categories) == (name in libero_files.TIGHT)
