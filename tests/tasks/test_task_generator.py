"""The task generator: goals agree with the behaviours, instructions compose, errors name what is wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from libero_ll.bddl.parser import parse_file, parse_string
from libero_ll.bddl.spec import Predicate
from libero_ll.errors import LiberoError
from libero_ll.tasks.behaviours import BEHAVIOURS
from libero_ll.tasks.generator import (
    TaskRequest,
    build_plan,
    build_task,
    parse_plan,
    random_requests,
)
from libero_ll.tasks.scenes import load_scene, scene_names

REPO = Path(__file__).resolve().parents[2]


def _task(scene: str, goal, **kw):
    from libero_ll.tasks.generator import _steps

    return build_task(TaskRequest(load_scene(scene), _steps(goal, ""), **kw))


def test_every_scene_template_loads_and_names_known_categories():
    names = scene_names()
    for prefix, n in (("KITCHEN_SCENE", 10), ("LIVING_ROOM_SCENE", 6), ("STUDY_SCENE", 4)):
        assert all(f"{prefix}{i}" in names for i in range(1, n + 1))
    assert {"SPATIAL_SCENE", "OBJECT_SCENE", "GOAL_SCENE"} <= set(names)
    for name in names:
        scene = load_scene(name)
        assert scene.instances
        # Fixtures with drawers, doors or knobs face the robot.
        for f in scene.fixtures():
            if scene.model(f).parts or scene.instances[f].category == "desk_caddy":
                assert scene.instances[f].placement.yaw == [(3.141592653589793, 3.141592653589793)], (name, f)


def test_put_in_a_drawer_and_close_it_starts_with_the_drawer_open():
    t = _task("KITCHEN_SCENE4", [{"put_in": {"object": "akita_black_bowl_1", "target": "white_cabinet_1_bottom_region"}},
                                 {"close": "white_cabinet_1_bottom_region"}])
    assert t.spec.goal_predicates() == [
        Predicate("in", ("akita_black_bowl_1", "white_cabinet_1_bottom_region")),
        Predicate("close", ("white_cabinet_1_bottom_region",)),
    ]
    assert Predicate("open", ("white_cabinet_1_bottom_region",)) in t.spec.init
    assert t.spec.language == "put the black bowl in the bottom drawer of the cabinet and close it"
    assert t.name == "KITCHEN_SCENE4_put_the_black_bowl_in_the_bottom_drawer_of_the_cabinet_and_close_it"
    # The written text parses back to the same task.
    assert parse_string(t.text, "<t>") == t.spec


def test_open_then_put_in_starts_closed_and_uses_a_pronoun():
    t = _task("KITCHEN_SCENE1", [{"open": "wooden_cabinet_1_top_region"},
                                 {"put_in": {"object": "akita_black_bowl_1", "target": "wooden_cabinet_1_top_region"}}])
    assert Predicate("close", ("wooden_cabinet_1_top_region",)) in t.spec.init
    assert Predicate("open", ("wooden_cabinet_1_top_region",)) not in t.spec.init
    assert t.spec.language == "open the top drawer of the cabinet and put the black bowl in it"
    t = _task("KITCHEN_SCENE3", [{"turn_on": "flat_stove_1"}, {"put_on": {"object": "moka_pot_1", "target": "flat_stove_1"}}])
    assert t.spec.language == "turn on the stove and put the moka pot on it"
    assert t.spec.goal_predicates() == [Predicate("turnon", ("flat_stove_1",)),
                                        Predicate("on", ("moka_pot_1", "flat_stove_1_cook_region"))]
    assert Predicate("turnoff", ("flat_stove_1",)) in t.spec.init


def test_side_regions_lie_next_to_where_the_reference_starts():
    scene = load_scene("LIVING_ROOM_SCENE6")
    px, py = scene.instances["plate_1"].placement.centre()
    for side, check in (("right", lambda x, y: y < py - 0.097), ("left", lambda x, y: y > py + 0.097),
                        ("front", lambda x, y: x < px - 0.097), ("back", lambda x, y: x > px + 0.097)):
        t = _task("LIVING_ROOM_SCENE6", {"place_next_to": {"object": "chocolate_pudding_1", "side": side, "reference": "plate_1"}})
        region = t.spec.regions[f"living_room_table_plate_1_{side}_region"]
        x0, y0, x1, y1 = region.ranges[0]
        assert check(x0, y0) and check(x1, y1), side
        assert t.spec.goal_predicates() == [Predicate("on", ("chocolate_pudding_1", region.full_name))]
        assert t.spec.language == f"put the chocolate pudding to the {side} of the plate"


def test_put_on_a_fixture_uses_its_surface():
    t = _task("KITCHEN_SCENE1", {"put_on": {"object": "akita_black_bowl_1", "target": "wooden_cabinet_1"}})
    assert t.spec.goal_predicates() == [Predicate("on", ("akita_black_bowl_1", "wooden_cabinet_1_top_side"))]
    assert t.spec.language == "put the black bowl on top of the cabinet"
    t = _task("LIVING_ROOM_SCENE2", {"put_both_in": {"objects": ["alphabet_soup_1", "tomato_sauce_1"], "target": "basket_1"}})
    assert t.spec.language == "put both the alphabet soup and the tomato sauce in the basket"
    assert [p.args[1] for p in t.spec.goal_predicates()] == ["basket_1_contain_region"] * 2


def test_text_is_deterministic():
    goal = {"put_in": {"object": "black_book_1", "target": "desk_caddy_1_back_contain_region"}}
    assert _task("STUDY_SCENE1", goal).text == _task("STUDY_SCENE1", goal).text


_STOVE = [{"turn_on": "flat_stove_1"}]


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"scene": "KITCHEN_SCENE1", "count": 2, "colour": "red"}, "unknown key 'colour'"),
        ({"scene": "KITCHEN_SCENE1", "count": 2, "behaviours": ["juggle"]}, "unknown behaviour 'juggle'"),
        ({"scene": "KITCHEN_SCENE1", "count": 2, "objects": ["spaceship"]}, "unknown category 'spaceship'"),
        ({"scene": "KITCHEN_SCENE99", "count": 1}, "unknown scene 'KITCHEN_SCENE99'"),
        ({"scene": "KITCHEN_SCENE1", "tasks": [{"goal": {"juggle": "plate_1"}}]}, "unknown behaviour 'juggle'"),
        ({"scene": "KITCHEN_SCENE1", "tasks": [{"goal": {"open": "plate_1"}, "colour": 1}]}, "unknown key 'colour'"),
        ({"scene": "KITCHEN_SCENE1", "tasks": [{"goal": {"put_on": {"object": "akita_black_bowl_1", "onto": "plate_1"}}}]},
         "unknown argument 'onto'"),
        ({"scene": "KITCHEN_SCENE1", "tasks": [{"goal": {"put_on": {"object": "teapot_1", "target": "plate_1"}}}]},
         "'teapot_1' is not an instance"),
        ({"scene": "KITCHEN_SCENE1", "tasks": [{"goal": {"open": "plate_1"}}]}, "no drawer or door"),
        ({"scene": {"name": "S", "problem_class": "LIBERO_Floor_Manipulation",
                    "objects": {"x_1": {"category": "spaceship", "at": [0, 0]}}}, "count": 1}, "unknown category 'spaceship'"),
        ({"scene": {"name": "S", "problem_class": "LIBERO_Floor_Manipulation",
                    "objects": {"x_1": {"category": "butter", "at": [0, 0], "size": 3}}}, "count": 1}, "unknown key 'size'"),
        # Each of these was written as a task that could never be set up or never succeed.
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": {"put_on": {"object": "moka_pot_1", "target": "moka_pot_1"}}}]},
         "tasks[0]: goal[0]: put_on: an object cannot be put on itself: object and target are both 'moka_pot_1'"),
        ({"scene": "LIVING_ROOM_SCENE1", "tasks": [{"goal": {"put_both_in": {"objects": ["ketchup_1", "ketchup_1"],
                                                                              "target": "basket_1"}}}]},
         "goal[0]: put_both_in: objects: give two different objects, got 'ketchup_1' twice"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": [{"turn_on": "flat_stove_1"}, {"turn_off": "flat_stove_1"}]}]},
         "tasks[0]: the steps leave flat_stove_1 both on and off"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"on": "moka_pot_1"}}}]},
         "tasks[0]: moka_pot_1: it would stand on or in itself (moka_pot_1 -> moka_pot_1)"),
        # Before: "has no knob to act on" for an instance the scene does not have.
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": [{"turn_on": "stove_9"}]}]},
         "tasks[0]: goal[0]: turn_on: scene KITCHEN_SCENE3: target 'stove_9' is not an instance of the scene"),
        # Before: said without the task; then: balanced parentheses were written, which LIBERO's reader cannot read.
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "language": "turn (on) the stove)"}]},
         "tasks[0]: language: 'turn (on) the stove)' holds parentheses, which LIBERO's reader cannot read in "
         ":language; write it without them"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "language": "turn on the stove (the flat one)"}]},
         "tasks[0]: language: 'turn on the stove (the flat one)' holds parentheses"),
        # A task's own changes are named as the task's, not as the scene's.
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "joints": {"ghost_1": "open"}}]},
         "tasks[0]: joints: 'ghost_1' has no drawer, door or knob"),
        # Before: the goal's need silently replaced the task's own setting (the file started the stove off).
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "joints": {"flat_stove_1": "on"}}]},
         "tasks[0]: joints: flat_stove_1 is set to on, but the goal needs it off at the start; leave it out of "
         "joints, or set it off"),
        # Before: a ValueError or TypeError traceback; a negative spread wrote a region whose minimum is above its
        # maximum, and a place out of reach a region, both of which the task file's reader refuses (with --no-check
        # the file stayed).
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"at": [0.1, 0], "spread": "x"}}}]},
         "tasks[0]: place: moka_pot_1: spread: expected a number of metres, 0 or more, got 'x'"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"at": [0.1, 0], "spread": [1]}}}]},
         "tasks[0]: place: moka_pot_1: spread: expected a number of metres, 0 or more, got [1]"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"at": [0.1, 0], "spread": -0.5}}}]},
         "tasks[0]: place: moka_pot_1: spread: expected a number of metres, 0 or more, got -0.5"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"at": [100, 0]}}}]},
         "tasks[0]: place: moka_pot_1: at: [100, 0] reaches past 5 m from the workspace's centre"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"moka_pot_1": {"range": [0, 0, 7, 0.1]}}}]},
         "tasks[0]: place: moka_pot_1: range: [0, 0, 7, 0.1] reaches past 5 m from the workspace's centre"),
        # Before: "scene KITCHEN_SCENE3: tasks[0]: place: ...", the task after the scene.
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": {"teapot_1": {"at": [0, 0]}}}]},
         "tasks[0]: scene KITCHEN_SCENE3: place: 'teapot_1' is not an instance of the scene"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "remove": ["teapot_1"]}]},
         "tasks[0]: scene KITCHEN_SCENE3: remove: 'teapot_1' is not an instance of the scene"),
    ],
)
def test_bad_specs_name_what_is_wrong(data, needle):
    with pytest.raises(LiberoError, match=re.escape(needle)):
        parse_plan(data)


def test_removing_a_fixture_takes_its_joint_presets_with_it():
    # Before: "joints: 'flat_stove_1' has no drawer, door or knob", from the scene's own preset of the stove.
    plan = parse_plan({"scene": "GOAL_SCENE", "tasks": [
        {"goal": {"put_on": {"object": "akita_black_bowl_1", "target": "plate_1"}}, "remove": ["flat_stove_1"]},
        {"goal": {"put_on": {"object": "akita_black_bowl_1", "target": "plate_1"}},
         "remove": ["wooden_cabinet_1"]},
    ]})
    for req, gone in zip(plan.requests, ("flat_stove_1", "wooden_cabinet_1")):
        assert gone not in req.scene.instances
        assert not [k for k in req.scene.joints if k.startswith(gone)]
        assert gone not in build_task(req).text
    # A task's own setting of a removed fixture is still an error.
    with pytest.raises(LiberoError, match="tasks\\[0\\]: joints: 'flat_stove_1' has no drawer, door or knob"):
        parse_plan({"scene": "GOAL_SCENE", "tasks": [
            {"goal": {"put_on": {"object": "akita_black_bowl_1", "target": "plate_1"}}, "remove": ["flat_stove_1"],
             "joints": {"flat_stove_1": "on"}}]})


@pytest.mark.parametrize(
    "data, needle",
    [
        # Each of these was a TypeError or ValueError traceback, or a message about one letter of a string.
        ({"scene": "KITCHEN_SCENE3", "tasks": 5}, "tasks: expected a list"),
        ({"scenes": "KITCHEN_SCENE3", "count": 1}, "scenes: expected a list"),
        ({"scene": "KITCHEN_SCENE3", "count": 1, "behaviours": "put_on"}, "behaviours: expected a list"),
        ({"scene": "KITCHEN_SCENE3", "count": 1, "objects": "moka_pot"}, "objects: expected a list"),
        ({"scene": "KITCHEN_SCENE3", "count": 1, "seed": "abc"}, "seed: expected a whole number >= 0"),
        ({"scene": "KITCHEN_SCENE3", "count": 1, "seed": -1}, "seed: expected a whole number >= 0"),
        ({"scene": "KITCHEN_SCENE3", "count": True}, "count: expected a whole number >= 0"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "language": ["x"]}]},
         "language: expected a sentence"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "place": [1, 2]}]},
         "place: expected a mapping"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "remove": "moka_pot_1"}]},
         "remove: expected a list"),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "name": 5}]}, "name: expected a plain name"),
        # Before: an empty instruction silently became the templates', and a list a suite named "['a']".
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "language": " "}]}, "language: expected a sentence"),
        ({"suite": ["a"], "scene": "KITCHEN_SCENE3", "count": 1}, "suite: expected a name, got ['a']"),
    ],
)
def test_wrongly_typed_spec_values_name_their_key(data, needle):
    with pytest.raises(LiberoError, match=re.escape(needle)):
        parse_plan(data, where="spec.yaml: ")


def test_a_task_name_cannot_write_outside_the_output_folder(tmp_path):
    # The name becomes <out>/<name>.bddl: a name with folders in it wrote the file elsewhere.
    data = {"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE, "name": "../../escaped"}]}
    with pytest.raises(LiberoError, match="name: expected a plain name"):
        parse_plan(data)


def test_inline_scene_and_explicit_tasks():
    scene = {
        "name": "MY_FLOOR",
        "problem_class": "LIBERO_Floor_Manipulation",
        "objects": {
            "basket_1": {"category": "basket", "at": [-0.05, 0.18]},
            "butter_1": {"category": "butter", "at": [-0.2, -0.1], "yaw": [0, 90]},
        },
    }
    plan = parse_plan({"scene": scene, "tasks": [{"goal": {"put_in": {"object": "butter_1", "target": "basket_1"}}}]})
    (t,) = [build_task(r) for r in plan.requests]
    assert t.name == "MY_FLOOR_put_the_butter_in_the_basket"
    assert t.spec.regions["floor_butter_1_init_region"].yaw_rotation == [(0.0, 1.5707963267948966)]


def test_crowded_starts_are_found():
    from libero_ll.tasks.generator import crowded_starts

    objects = {"plate_1": {"category": "plate", "at": [-0.1, 0.0]}, "butter_1": {"category": "butter", "at": [-0.1, 0.12]}}
    scene = {"name": "TIGHT", "problem_class": "LIBERO_Floor_Manipulation", "objects": objects}
    plan = parse_plan({"scene": scene, "tasks": [{"goal": {"put_on": {"object": "butter_1", "target": "plate_1"}}}]})
    (msg,) = crowded_starts(build_task(plan.requests[0]).spec)
    assert "plate_1 and butter_1" in msg
    objects["butter_1"]["at"] = [-0.1, 0.2]
    plan = parse_plan({"scene": scene, "tasks": [{"goal": {"put_on": {"object": "butter_1", "target": "plate_1"}}}]})
    assert crowded_starts(build_task(plan.requests[0]).spec) == []


def test_random_tasks_are_seeded_distinct_and_use_known_behaviours():
    a = random_requests(40, seed=3)
    b = random_requests(40, seed=3)
    names = [r.name for r in a]
    assert names == [r.name for r in b]
    assert len(set(names)) == 40
    assert names != [r.name for r in random_requests(40, seed=4)]
    for r in a:
        assert all(step in BEHAVIOURS for step, _ in r.steps)
        build_task(r)
    with pytest.raises(LiberoError, match="distinct tasks"):
        random_requests(10**6)


def test_wanted_behaviours_and_objects_restrict_random_tasks():
    plan = parse_plan({"scenes": ["LIVING_ROOM_SCENE1", "LIVING_ROOM_SCENE2"], "count": 4, "seed": 1,
                       "behaviours": ["put_in"], "objects": ["butter", "milk"]})
    assert len(plan.requests) == 4
    for r in plan.requests:
        ((behaviour, args),) = r.steps
        assert behaviour == "put_in" and r.scene.instances[args["object"]].category in ("butter", "milk")


def test_cli_generate_writes_files_and_reports_bad_yaml(tmp_path):
    spec = tmp_path / "suite.yaml"
    spec.write_text(
        "suite: mine\nscene: KITCHEN_SCENE7\ntasks:\n"
        "  - goal: {put_on: {object: white_bowl_1, target: plate_1}}\n"
        "  - name: open_it\n    language: open the microwave door\n    goal: {open: microwave_1}\n"
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "libero_ll.cli", "generate", str(spec), "--out", str(out), "--no-check", "--no-init-states"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in out.glob("*.bddl"))
    assert files == ["KITCHEN_SCENE7_put_the_white_bowl_on_the_plate.bddl", "open_it.bddl"]
    assert parse_file(str(out / "open_it.bddl")).language == "open the microwave door"
    spec.write_text("scene: KITCHEN_SCENE7\ncount: 1\nbehaviors: [open]\n")
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2
    assert "error:" in res.stderr and "unknown key 'behaviors'" in res.stderr and "Traceback" not in res.stderr


def test_cli_generate_keeps_what_the_folder_held(tmp_path, capsys):
    # `generate` used to replace a task file of the same name in --out, and then delete it (and its initial
    # states) when the generated task failed its checks. Files there now change only with --overwrite.
    from libero_ll.cli import main
    from libero_ll.envs.init_states import init_states_path

    spec = tmp_path / "suite.yaml"
    spec.write_text("suite: mine\nscene: KITCHEN_SCENE7\ntasks:\n"
                    "  - name: bowl\n    goal: {put_on: {object: white_bowl_1, target: plate_1}}\n")
    out = tmp_path / "out"
    args = ["generate", str(spec), "--out", str(out), "--no-check", "--n", "1"]
    assert main(args) == 0
    task, states = out / "bowl.bddl", init_states_path(out / "bowl.bddl")
    generated, stored = task.read_text(), states.read_bytes()
    capsys.readouterr()
    # Again: nothing to write, the current initial states kept.
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "0 task files written, 1 already there as generated" in said and "current, kept" in said
    assert states.read_bytes() == stored
    # Another --n: those states are not what is asked for (they were kept silently, 1 state for --n 2).
    assert main(args[:-1] + ["2"]) == 2
    assert re.search(r"1 files there would be replaced \(bowl.init.npz\).*or not 2 of them \(--n\); pass "
                     r"--overwrite", capsys.readouterr().err)
    assert states.read_bytes() == stored
    # A task file edited by hand is the user's: refused before anything is written, named.
    task.write_text(generated + "; my note\n")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "would be replaced (bowl.bddl, bowl.init.npz)" in err and "--overwrite" in err
    assert task.read_text() == generated + "; my note\n" and states.read_bytes() == stored
    assert main([*args, "--overwrite"]) == 0
    assert task.read_text() == generated and states.is_file()
    # Replaced without new initial states: the old ones, which no run uses, are pointed out.
    task.write_text(generated + "; my note\n")
    assert main([*args, "--overwrite", "--no-init-states"]) == 0
    said = capsys.readouterr().out
    assert "note: bowl.bddl: its initial states are the replaced task's, which runs do not use" in said
    assert f"1 task not checked in the simulator; {out} holds 1 task: 0 added, 1 there before" in said
    assert main([*args, "--overwrite"]) == 0
    # Where a failing task would have been removed, the user's file of that name stays.
    task.write_text("mine")
    states.unlink()
    assert main(["generate", str(spec), "--out", str(out), "--resets", "1", "--n", "1"]) == 2
    assert task.read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["bowl.bddl", "order.txt"]


def test_a_generated_suite_is_learnt_in_its_specs_order(tmp_path, capsys):
    """The spec's order was lost: a folder's tasks were learnt by file name. `generate` keeps it in order.txt,
    which runs, `list` and `collect --suite` follow."""
    from libero_ll.cli import main
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.lifelong import suite_tasks

    spec = tmp_path / "suite.yaml"
    spec.write_text("scene: KITCHEN_SCENE7\ntasks:\n"
                    "  - name: zeta\n    goal: {put_on: {object: white_bowl_1, target: plate_1}}\n"
                    "  - name: alpha\n    language: open the microwave door\n    goal: {open: microwave_1}\n")
    out = tmp_path / "my_suite"
    args = ["generate", str(spec), "--out", str(out), "--no-check", "--no-init-states"]
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"2 tasks not checked in the simulator; {out} holds 2 tasks: 2 added"
    assert (out / "order.txt").read_text() == "zeta\nalpha\n"
    assert [t.stem for t in suite_tasks(str(out))] == ["zeta", "alpha"]
    # A second spec into the same folder adds its tasks after the first's.
    spec.write_text("scene: KITCHEN_SCENE7\ntasks:\n"
                    "  - name: beta\n    language: close the microwave door\n    goal: {close: microwave_1}\n"
                    "  - name: zeta\n    goal: {put_on: {object: white_bowl_1, target: plate_1}}\n")
    assert main(args) == 0
    # The closing line counts the folder's tasks apart from this call's (before: "2 tasks in DIR", holding 3).
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"2 tasks not checked in the simulator; {out} holds 3 tasks: 1 added, 2 there before"
    assert [t.stem for t in suite_tasks(str(out))] == ["zeta", "alpha", "beta"]
    assert main(["list", str(out)]) == 0
    listed = capsys.readouterr().out
    assert listed.index("zeta") < listed.index("alpha") < listed.index("beta")
    # A task file added by hand comes after the listed ones; a listed task without a file is named.
    (out / "aaa.bddl").write_text((out / "alpha.bddl").read_text())
    assert [t.stem for t in suite_tasks(str(out))] == ["zeta", "alpha", "beta", "aaa"]
    (out / "beta.bddl").unlink()
    with pytest.raises(LiberoError, match="order.txt: names beta, which the folder has no .bddl file of"):
        suite_tasks(str(out))


def test_cli_generate_overwrite_puts_back_the_file_a_failing_task_replaced(tmp_path, capsys, monkeypatch):
    # `generate --overwrite` replaced the user's task file, and when the new task failed its checks deleted it
    # and its initial states, saying nothing: --overwrite promises to replace a file, not to remove it.
    import libero_ll.tasks.generator as generator
    from libero_ll.cli import main
    from libero_ll.envs.init_states import init_states_path

    spec = tmp_path / "suite.yaml"
    spec.write_text("suite: mine\nscene: KITCHEN_SCENE7\ntasks:\n"
                    "  - name: bowl\n    goal: {put_on: {object: white_bowl_1, target: plate_1}}\n")
    out = tmp_path / "out"
    out.mkdir()
    task, states = out / "bowl.bddl", init_states_path(out / "bowl.bddl")
    task.write_text("mine")
    states.write_bytes(b"my states")
    monkeypatch.setattr(generator, "check_task", lambda f, seeds: ["the scene does not reset"])
    assert main(["generate", str(spec), "--out", str(out), "--overwrite", "--resets", "1", "--n", "1"]) == 2
    said = capsys.readouterr().out
    assert "bowl.bddl: the file it replaced is put back, with its initial states" in said
    assert task.read_text() == "mine" and states.read_bytes() == b"my states"
    assert sorted(p.name for p in out.iterdir()) == ["bowl.bddl", "bowl.init.npz"]
    # A failing task that replaced nothing is removed, as before.
    task.unlink()
    states.unlink()
    assert main(["generate", str(spec), "--out", str(out), "--resets", "1", "--n", "1"]) == 2
    assert list(out.iterdir()) == []


def test_random_tasks_leave_out_the_specs_own_tasks(tmp_path):
    # docs/tasks.md's spec without its optional name and language: the random draw picked the explicit task
    # again, and the spec failed with "two tasks are named ...".
    text = (REPO / "docs/tasks.md").read_text().split("## Generator specs", 1)[1]
    from libero_ll.tasks.scenes import load_yaml

    data = load_yaml(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    del data["tasks"][0]["name"], data["tasks"][0]["language"]
    tasks = build_plan(parse_plan(data, where="spec.yaml: "))
    assert len(tasks) == 3 and len({repr(t.spec.goal) for t in tasks}) == 3
    # Fewer tasks left to draw than asked for: said, naming the spec's count.
    data["objects"] = ["moka_pot"]
    with pytest.raises(LiberoError, match=re.escape("spec.yaml: count: only 1 distinct tasks can be drawn")):
        parse_plan(data, where="spec.yaml: ")


def test_cli_generate_names_an_unreadable_spec(tmp_path, capsys):
    from libero_ll.cli import main

    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00junk")
    (tmp_path / "broken.yaml").write_text("suite: mine\ntasks: [a,\n  b: 2\n")
    # Before: the second `scene:` silently won.
    (tmp_path / "twice.yaml").write_text("suite: s\nscene: KITCHEN_SCENE3\nscene: KITCHEN_SCENE1\ncount: 1\n")
    for name, message in (("binary.yaml", "binary.yaml: not a text file"), ("broken.yaml", "broken.yaml:4:1: not valid YAML"),
                          ("twice.yaml", "twice.yaml:3:1: not valid YAML (found duplicate key 'scene')"),
                          (".", "a folder, not a generator YAML file")):
        assert main(["generate", str(tmp_path / name), "--out", str(tmp_path / "o")]) == 2
        assert message in capsys.readouterr().err
    assert main(["generate", str(tmp_path / "broken.yaml"), "--random", "1", "--out", str(tmp_path / "o")]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_spec_in_docs_passes_its_checks(tmp_path, capsys):
    # docs/tasks.md's example spec placed the moka pot against the frypan and asked for more random tasks
    # than the scene allows: the example failed its own checks.
    from libero_ll.cli import main

    text = (REPO / "docs/tasks.md").read_text().split("## Generator specs", 1)[1]
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert main(["generate", str(spec), "--out", str(tmp_path / "out"), "--resets", "1", "--n", "1"]) == 0
    said = capsys.readouterr().out
    assert "3 of 3 tasks passed the checks" in said
    assert (tmp_path / "out/heat_the_pot.init.npz").is_file()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"scene": "KITCHEN_SCENE99", "count": 1}, "spec.yaml: scene: unknown scene 'KITCHEN_SCENE99'; known: "),
        ({"scenes": ["KITCHEN_SCENE1", "KITCHEN_SCENE99"], "count": 1},
         "spec.yaml: scenes[1]: unknown scene 'KITCHEN_SCENE99'; known: "),
        ({"scene": "KITCHEN_SCENE3", "tasks": [{"goal": _STOVE}, {"scene": "NOWHERE", "goal": _STOVE}]},
         "spec.yaml: tasks[1]: scene: unknown scene 'NOWHERE'; known: "),
    ],
)
def test_an_unknown_scene_is_named_with_the_spec_and_where_it_is_written(data, message):
    # Before: "unknown scene ..." alone, the one generator error without the spec file's name.
    with pytest.raises(LiberoError) as e:
        parse_plan(data, where="spec.yaml: ")
    assert str(e.value).startswith(message), str(e.value)
    assert "KITCHEN_SCENE1, " in str(e.value)


def test_cli_generate_names_the_spec_of_an_unknown_scene(tmp_path, capsys):
    from libero_ll.cli import main

    spec = tmp_path / "bad_scene.yaml"
    spec.write_text("suite: s\nscene: KITCHEN_SCENE99\ntasks:\n  - goal: {turn_on: flat_stove_1}\n")
    assert main(["generate", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert f"{spec}: scene: unknown scene 'KITCHEN_SCENE99'; known: " in capsys.readouterr().err
