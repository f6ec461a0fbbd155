"""Validation of meaning: every problem is reported, each at the token that caused it."""

import pytest

from libero_ll.bddl import (
    And,
    BddlError,
    Predicate,
    Region,
    TaskSpec,
    check_file,
    load_file,
    parse_string,
    validate,
    validate_with_warnings,
)
from libero_ll.bddl.validate import CategoryFacts

ON_INIT = "(On bowl_1 main_table_bowl_region)"
OPEN_GOAL = "(Open cabinet_1_top_region)"
IN_GOAL = "(In bowl_1 cabinet_1_top_region)"
TOP_SIDE = "(top_side (:target cabinet_1))"
PLATE_INIT = "(On plate_1 main_table_bowl_region)"
CLOSE_INIT = "(Close cabinet_1_top_region)"

CATEGORIES = {
    "table": [],
    "akita_black_bowl": [],
    "plate": [],
    "wooden_cabinet": ["top_region", "middle_region", "bottom_region", "top_side"],
}

# Columns in the cases below are counted on these lines.
BASE = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the bowl in the drawer)
  (:regions
    (bowl_region
      (:target main_table)
      (:ranges ((-0.1 -0.1 0.1 0.1)))
      (:yaw_rotation ((0.0 1.5)))
      (:rgba (0 0 1 0.5)))
    (top_side (:target cabinet_1)))
  (:fixtures main_table - table cabinet_1 - wooden_cabinet)
  (:objects bowl_1 - akita_black_bowl plate_1 - plate)
  (:obj_of_interest bowl_1 cabinet_1)
  (:init (On bowl_1 main_table_bowl_region) (Close cabinet_1_top_region) (On plate_1 main_table_bowl_region))
  (:goal (And (In bowl_1 cabinet_1_top_region) (Open cabinet_1_top_region))))
"""


def variant(old, new):
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


def test_base_is_valid_with_and_without_categories():
    spec = parse_string(BASE)
    assert validate(spec) == []
    assert validate(spec, CATEGORIES) == []


CASES = [
    # (id, text, line, col, words the message must contain)
    ("undeclared instance in init", variant("(On bowl_1 main", "(On bowl_9 main"), 14, 14,
     "undeclared instance 'bowl_9' in :init"),
    ("undeclared instance in goal", variant("(In bowl_1 cabinet", "(In mug_1 cabinet"), 15, 19,
     "undeclared instance 'mug_1' in :goal"),
    ("undeclared instance in obj_of_interest", variant("bowl_1 cabinet_1)", "bowl_1 cabinet_2)"), 13, 28,
     "undeclared instance 'cabinet_2' in :obj_of_interest"),
    ("obj_of_interest listed twice", variant("bowl_1 cabinet_1)", "bowl_1 bowl_1)"), 13, 28, "listed twice"),
    ("used region's target does not exist",
     variant(TOP_SIDE, "(top_side (:target cabinet_9))").replace(ON_INIT, "(On bowl_1 cabinet_9_top_side)"),
     10, 24, "region 'top_side' targets 'cabinet_9', which is not a declared fixture or object"),
    ("range x_min > x_max", variant("((-0.1 -0.1 0.1 0.1))", "((0.2 -0.1 0.1 0.1))"), 7, 18,
     "range 1 of region 'bowl_region' has x_min 0.2 > x_max 0.1"),
    ("range y_min > y_max", variant("((-0.1 -0.1 0.1 0.1))", "((-0.1 0.5 0.1 0.1))"), 7, 23,
     "y_min 0.5 > y_max 0.1"),
    ("second range bad", variant("((-0.1 -0.1 0.1 0.1))", "((-0.1 -0.1 0.1 0.1) (0 0 -1 1))"), 7, 38,
     "range 2 of region 'bowl_region' has x_min 0.0 > x_max -1.0"),
    ("yaw min > max", variant("((0.0 1.5))", "((2.0 1.5))"), 8, 24,
     "yaw_rotation 1 of region 'bowl_region' has yaw_min 2.0 > yaw_max 1.5"),
    # Past these a place could not be drawn (a float's width overflowed) or an object stood 1,000 km away.
    ("range beyond 5 m", variant("((-0.1 -0.1 0.1 0.1))", "((-0.1 -0.1 1e6 0.1))"), 7, 28,
     "range 1 of region 'bowl_region' has x_max 1e+06: a region lies within 5 m of its target's centre"),
    ("range of -1e308", variant("((-0.1 -0.1 0.1 0.1))", "((-0.1 -1e308 0.1 0.1))"), 7, 23,
     "has y_min -1e+308"),
    ("yaw beyond 100", variant("((0.0 1.5))", "((0.0 1e9))"), 8, 28,
     "yaw_rotation 1 of region 'bowl_region' has yaw_max 1e+09: yaws are in radians, within 100 of 0"),
    ("rgba above 1", variant("(0 0 1 0.5)", "(0 0 1 1.5)"), 9, 21,
     "rgba value 1.5 of region 'bowl_region' is outside [0, 1]"),
    ("rgba below 0", variant("(0 0 1 0.5)", "(0 -0.2 1 0.5)"), 9, 17, "rgba value -0.2"),
    ("unknown category", variant("plate_1 - plate", "plate_1 - plates"), 12, 49,
     "unknown category 'plates'; known: akita_black_bowl, plate, table, wooden_cabinet"),
    ("unknown region by its short name", variant(ON_INIT, "(On bowl_1 bowl_region)"), 14, 21,
     "unknown region 'bowl_region' in :init: regions are referred to as <target>_<name>; "
     "did you mean 'main_table_bowl_region'?"),
    ("unknown region", variant(ON_INIT, "(On bowl_1 shelf_region)"), 14, 21,
     "unknown region 'shelf_region' in :init"),
    ("unknown affordance region", variant(OPEN_GOAL, "(Open cabinet_1_side_region)"), 15, 54,
     "'side_region' is neither a declared region of 'cabinet_1' nor an affordance region of its category "
     "wooden_cabinet (which has: top_region, middle_region, bottom_region, top_side)"),
    ("undeclared region of a table", variant(ON_INIT, "(On bowl_1 main_table_cup_region)"),
     14, 21, "'cup_region' is neither a declared region of 'main_table'"),
    ("region without ranges is not an affordance", variant("(top_side (:target", "(top_shelf (:target"),
     10, 6,
     "region 'top_shelf' has no :ranges and is not an affordance region of 'cabinet_1'"),
    ("first argument of In is a region", variant("(In bowl_1 cabinet", "(In main_table_bowl_region cabinet"),
     15, 19,
     "the first argument of In must be a fixture or object, but 'main_table_bowl_region' is a region"),
    ("Up of an affordance region", variant(OPEN_GOAL, "(Up cabinet_1_top_region)"), 15, 52,
     "the first argument of Up must be a fixture or object, "
     "but 'cabinet_1_top_region' is an affordance region"),
    ("unknown problem class", variant("LIBERO_Tabletop_Manipulation", "LIBERO_Moon_Manipulation"), 1, 18,
     "unknown problem class 'LIBERO_Moon_Manipulation'; known: LIBERO_Tabletop_Manipulation"),
    ("unknown domain", variant("(:domain robosuite)", "(:domain mujoco)"), 2, 12, "unknown domain 'mujoco'"),
    ("empty language", variant("(:language put the bowl in the drawer)", "(:language)"), 3, 4,
     "the language instruction is empty"),
    ("empty goal", variant("(And (In bowl_1 cabinet_1_top_region) " + OPEN_GOAL + ")", "(And)"), 15, 11,
     "the goal is empty"),
    ("region named like an instance", variant("plate_1 - plate", "plate_1 - plate main_table_bowl_region - plate"),
     5, 6,
     "region 'main_table_bowl_region' has the same name as an instance"),
    ("On of a thing on itself", variant(ON_INIT, "(On bowl_1 bowl_1)"), 14, 21,
     "On relates two different things, but both arguments are 'bowl_1'"),
    ("In of a thing in its own region", variant(IN_GOAL, "(In cabinet_1 cabinet_1_top_region)"), 15, 29,
     "'cabinet_1_top_region' is a region of 'cabinet_1' itself"),
    ("the table on an object", variant(ON_INIT, "(On main_table plate_1)"), 14, 14,
     "'main_table' is a fixture, welded to the world, and cannot be On the object 'plate_1'"),
    ("a fixture on an object", variant(ON_INIT, "(On cabinet_1 bowl_1)"), 14, 14,
     "'cabinet_1' is a fixture, welded to the world, and cannot be On the object 'bowl_1'"),
    ("In an instance", variant(IN_GOAL, "(In bowl_1 plate_1)"), 15, 26,
     "In takes a region of a container (a drawer, basket, compartment: <instance>_<region>) as its second "
     "argument, not the instance 'plate_1'; its category plate has none, so nothing goes In it"),
    ("In a region with ranges", variant(IN_GOAL, "(In bowl_1 main_table_bowl_region)"), 15, 26,
     "'main_table_bowl_region' is a region with :ranges on a surface; use On for it"),
    # What the simulator could only reject at reset, without a position.
    ("init placements in a cycle",
     variant(ON_INIT, "(On bowl_1 plate_1)").replace(PLATE_INIT, "(On plate_1 bowl_1)"), 14, 11,
     "the :init placements form a cycle (bowl_1 -> plate_1 -> bowl_1), so none of them can be placed first: "
     "(On bowl_1 plate_1) here, then (On plate_1 bowl_1) at line 14"),
    ("a thing placed twice", variant(PLATE_INIT, PLATE_INIT + " (On plate_1 cabinet_1_top_side)"), 14, 111,
     "'plate_1' is placed twice in :init: On cabinet_1_top_side here and On main_table_bowl_region at line 14; "
     "it starts in one place only"),
    ("opened and closed in the init", variant(CLOSE_INIT, CLOSE_INIT + " " + OPEN_GOAL), 14, 75,
     "(Open cabinet_1_top_region) contradicts (Close cabinet_1_top_region) at line 14: "
     "'cabinet_1_top_region' cannot start both open and closed"),
    ("opened and closed in the goal", variant(OPEN_GOAL, OPEN_GOAL + " " + CLOSE_INIT), 15, 77,
     "(Close cabinet_1_top_region) contradicts (Open cabinet_1_top_region) at line 15: "
     "the goal can never hold, 'cabinet_1_top_region' cannot be both open and closed"),
    ("Up in the init", variant(CLOSE_INIT, "(Up plate_1) " + CLOSE_INIT), 14, 46,
     "Up cannot be in :init: it says a thing was lifted above where it started, which only a goal can ask; "
     ":init takes On, In, Open, Close, TurnOn and TurnOff"),
]


@pytest.mark.parametrize("text, line, col, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_problem_at_its_token(text, line, col, words):
    spec = parse_string(text, "t.bddl")
    problems = validate(spec, CATEGORIES)
    assert len(problems) == 1, problems
    err = problems[0]
    assert isinstance(err, BddlError)
    assert (err.path, err.line, err.col) == ("t.bddl", line, col), str(err)
    assert words in err.message
    assert str(err) == f"t.bddl:{line}:{col}: {err.message}"


def test_category_checks_are_skipped_without_categories():
    text = variant("plate_1 - plate", "plate_1 - plates").replace("(Open cabinet_1_top_region)",
                                                                "(Open cabinet_1_side_region)")
    spec = parse_string(text)
    assert validate(spec) == []
    assert len(validate(spec, CATEGORIES)) == 2


def test_affordance_of_an_instance_whose_name_prefixes_another():
    # cabinet_1 and cabinet_1_b both prefix the argument; the split that names a real affordance wins.
    text = variant("cabinet_1 - wooden_cabinet)", "cabinet_1 cabinet_1_b - wooden_cabinet)").replace(
        "(Open cabinet_1_top_region)", "(Open cabinet_1_b_top_region)")
    assert validate(parse_string(text), CATEGORIES) == []


def test_all_problems_are_reported_in_file_order(tmp_path):
    text = (variant("((-0.1 -0.1 0.1 0.1))", "((0.2 -0.1 0.1 0.1))")
            .replace("plate_1 - plate", "plate_1 - plates")
            .replace("(Open cabinet_1_top_region)", "(Open drawer_1)")
            .replace("(:rgba (0 0 1 0.5))", "(:rgba (0 0 2 0.5))"))
    path = tmp_path / "t.bddl"
    path.write_text(text, encoding="utf-8")
    spec, problems = check_file(path, CATEGORIES)
    assert spec is not None
    assert [(e.line, e.col) for e in problems] == [(7, 18), (9, 19), (12, 49), (15, 54)]
    assert all(e.path == str(path) for e in problems)
    with pytest.raises(BddlError) as info:
        load_file(path, CATEGORIES)
    assert (info.value.line, info.value.col) == (7, 18)
    assert info.value.message.endswith("(and 3 more problems)")


def test_check_file_with_a_syntax_error(tmp_path):
    path = tmp_path / "t.bddl"
    path.write_text(BASE.replace("(On bowl_1 main", "(Onn bowl_1 main"), encoding="utf-8")
    spec, problems = check_file(path, CATEGORIES)
    assert spec is None
    assert [(e.line, e.col) for e in problems] == [(14, 11)]
    assert "unknown predicate 'Onn'" in problems[0].message


def test_load_file_returns_a_valid_spec(tmp_path):
    path = tmp_path / "t.bddl"
    path.write_text(BASE, encoding="utf-8")
    assert load_file(path, CATEGORIES) == parse_string(BASE)


def test_spec_built_in_code_gets_problems_without_positions():
    spec = TaskSpec(
        problem_class="LIBERO_Tabletop_Manipulation",
        language="lift the bowl",
        regions={"main_table_r": Region("r", "main_table", [(1.0, 0.0, 0.0, 1.0)], rgba=(0, 0, 0, 7))},
        fixtures={"main_table": "table"},
        objects={"bowl_1": "akita_black_bowl"},
        obj_of_interest=["bowl_2"],
        init=[Predicate("on", ("bowl_1", "main_table_r")), Predicate("hover", ("bowl_1",))],
        goal=And([Predicate("up", ("bowl_1", "main_table"))]),
    )
    problems = validate(spec, CATEGORIES)
    assert {(e.path, e.line, e.col) for e in problems} == {("<spec>", 0, 0)}
    messages = " | ".join(e.message for e in problems)
    for words in ("x_min 1.0 > x_max 0.0", "rgba value 7", "undeclared instance 'bowl_2'",
                  "unknown predicate 'hover'", "Up takes 1 argument(s), found 2"):
        assert words in messages
    assert len(problems) == 5


def test_a_yaw_of_more_than_a_full_turn_is_a_warning():
    # (0 90) meant in degrees draws any turn at all, read as radians.
    errors, warnings = validate_with_warnings(parse_string(variant("((0.0 1.5))", "((0 90))"), "t.bddl"), CATEGORIES)
    assert errors == []
    [w] = warnings
    assert (w.line, w.col) == (8, 24)
    assert w.message == ("yaw_rotation 1 of region 'bowl_region' has yaw 90, more than a full turn: yaws are in "
                         "radians (if it is meant in degrees, that is 1.571 rad)")
    assert validate_with_warnings(parse_string(variant("((0.0 1.5))", "((-6.2 6.28))")), CATEGORIES) == ([], [])


def test_unused_region_of_an_undeclared_object_is_a_warning_not_an_error(tmp_path):
    # LIBERO's generator leaves regions of objects that a scene does not have.
    text = variant(TOP_SIDE, TOP_SIDE + "\n    (right_region (:target bowl_drainer_1) (:ranges ((0 0 0.1 0.1))))")
    spec = parse_string(text, "t.bddl")
    errors, warnings = validate_with_warnings(spec, CATEGORIES)
    assert errors == [] and validate(spec, CATEGORIES) == []
    [w] = warnings
    assert (w.line, w.col) == (11, 28)
    assert "region 'right_region' targets 'bowl_drainer_1'" in w.message and "not used" in w.message
    path = tmp_path / "t.bddl"
    path.write_text(text, encoding="utf-8")
    found = []
    spec, problems = check_file(path, CATEGORIES, warnings=found)
    assert problems == [] and [(w.line, w.col) for w in found] == [(11, 28)]
    assert load_file(path, CATEGORIES) == spec


def test_a_region_among_the_objects_of_interest_is_accepted():
    # LIBERO lists the drawer or burner a task is about there.
    for name in ("cabinet_1_top_region", "main_table_bowl_region"):
        spec = parse_string(variant("(:obj_of_interest bowl_1 cabinet_1)", f"(:obj_of_interest bowl_1 {name})"))
        assert validate(spec, CATEGORIES) == []
    spec = parse_string(variant("(:obj_of_interest bowl_1 cabinet_1)", "(:obj_of_interest cabinet_1_lid_region)"))
    [err] = validate(spec, CATEGORIES)
    assert "undeclared instance 'cabinet_1_lid_region' in :obj_of_interest" in err.message


# What the asset library says of each category beyond its regions: its kind and what Open/Close/TurnOn/TurnOff
# move; a stove (a knob) is added to BASE where a case needs one.
FACTS = {
    "table": CategoryFacts("workspace"),
    "akita_black_bowl": CategoryFacts("object"),
    "plate": CategoryFacts("object"),
    "wooden_cabinet": CategoryFacts(
        "fixture",
        {"top_region": "drawer", "middle_region": "drawer", "bottom_region": "drawer"},
        {"top_region": ("in",), "middle_region": ("in",), "bottom_region": ("in",), "top_side": ("on",)},
    ),
    "flat_stove": CategoryFacts("fixture", {"": "knob", "cook_region": "knob"}, {"cook_region": ("on",)}),
    "wooden_two_layer_shelf": CategoryFacts("fixture", {}, {"top_region": ("in", "on"), "top_side": ("on",)}),
}
WITH_STOVE = {**CATEGORIES, "flat_stove": ["cook_region"], "wooden_two_layer_shelf": ["top_region", "top_side"]}


def with_stove(text):
    return text.replace("cabinet_1 - wooden_cabinet)", "cabinet_1 - wooden_cabinet stove_1 - flat_stove)")


FACT_CASES = [
    ("the table on a fixture's region", variant(ON_INIT, "(On main_table cabinet_1_top_side)"), 14, 14,
     "'main_table' is the workspace (table) that everything else stands on: it is never On anything"),
    ("Open of a plate", variant(OPEN_GOAL, "(Open plate_1)"), 15, 54,
     "Open acts on a drawer, door or knob, but 'plate_1' (plate) has none"),
    ("Open of a cabinet, not its drawer", variant(OPEN_GOAL, "(Open cabinet_1)"), 15, 54,
     "'cabinet_1' (wooden_cabinet) is not one; name one of these: 'cabinet_1_top_region', "
     "'cabinet_1_middle_region', 'cabinet_1_bottom_region'"),
    ("Close of a surface", variant(OPEN_GOAL, "(Close cabinet_1_top_side)"), 15, 55,
     "'cabinet_1_top_side' (region top_side of the wooden_cabinet 'cabinet_1') is not one"),
    ("TurnOn of a drawer", variant(OPEN_GOAL, "(TurnOn cabinet_1_top_region)"), 15, 56,
     "'cabinet_1_top_region' is a drawer: it is opened or closed (Open, Close); only a knob is turned on or off"),
    ("Open of a knob", with_stove(variant(OPEN_GOAL, "(Open stove_1)")), 15, 54,
     "'stove_1' is a knob: it is turned on or off (TurnOn, TurnOff), not opened"),
    # A cabinet's top is a surface, its drawers are containers: (In x cabinet_1_top_side) is never meant.
    ("In of a surface the file declares as a region", variant(IN_GOAL, "(In bowl_1 cabinet_1_top_side)"), 15, 26,
     "In takes a region of a container (a drawer, basket, compartment), but 'cabinet_1_top_side' is a surface "
     "(region top_side of the wooden_cabinet 'cabinet_1') that things stand On; use On for it"),
    ("In of a surface in the init", variant(ON_INIT, "(In bowl_1 cabinet_1_top_side)"), 14, 21,
     "'cabinet_1_top_side' is a surface (region top_side of the wooden_cabinet 'cabinet_1')"),
    ("In of a burner", with_stove(variant(IN_GOAL, "(In bowl_1 stove_1_cook_region)")), 15, 26,
     "'stove_1_cook_region' is a surface (region cook_region of the flat_stove 'stove_1') that things stand On"),
]


@pytest.mark.parametrize("text, line, col, words", [c[1:] for c in FACT_CASES], ids=[c[0] for c in FACT_CASES])
def test_one_problem_the_asset_facts_reveal(text, line, col, words):
    spec = parse_string(text, "t.bddl")
    assert validate(spec, WITH_STOVE) == []  # without the facts these are not checked
    [err] = validate(spec, WITH_STOVE, FACTS)
    assert (err.path, err.line, err.col) == ("t.bddl", line, col), str(err)
    assert words in err.message


def test_the_facts_accept_what_the_predicates_can_act_on():
    for text in (BASE, with_stove(variant(OPEN_GOAL, "(TurnOn stove_1)")),
                 with_stove(variant(OPEN_GOAL, "(TurnOff stove_1_cook_region)"))):
        assert validate(parse_string(text), WITH_STOVE, FACTS) == []


def with_shelf(text):
    """BASE with a two-layer shelf, placed in a region of the table."""
    return text.replace("cabinet_1 - wooden_cabinet)", "cabinet_1 - wooden_cabinet shelf_1 - wooden_two_layer_shelf)"
                        ).replace("(Close cabinet_1_top_region)",
                                  "(Close cabinet_1_top_region) (On shelf_1 main_table_bowl_region)")


def test_on_of_a_containers_inside_is_a_warning():
    # On holds over a drawer's region also for a bowl on top of the closed cabinet: In is what is meant.
    spec = parse_string(variant(IN_GOAL, "(On bowl_1 cabinet_1_top_region)"), "t.bddl")
    assert validate_with_warnings(spec, CATEGORIES) == ([], [])  # without the facts, not checked
    errors, warnings = validate_with_warnings(spec, CATEGORIES, FACTS)
    assert errors == []
    [w] = [w for w in warnings if "container" in w.message]
    assert (w.path, w.line, w.col) == ("t.bddl", 15, 26)
    assert w.message == (
        "On of 'cabinet_1_top_region', the inside of a container (region top_region of the wooden_cabinet "
        "'cabinet_1'): things go In it; On also holds for a thing resting above it (on the cabinet over a drawer), "
        "so write In"
    )


def test_a_region_that_takes_both_and_a_surface_take_what_they_should():
    # A shelf's layer: LIBERO's files put a thing In it, ours On it. A cabinet's top: On.
    for goal in ("(In bowl_1 shelf_1_top_region)", "(On bowl_1 shelf_1_top_region)", "(On bowl_1 shelf_1_top_side)",
                 "(On bowl_1 cabinet_1_top_side)", "(In bowl_1 cabinet_1_middle_region)"):
        spec = parse_string(with_shelf(variant(IN_GOAL, goal)))
        errors, warnings = validate_with_warnings(spec, WITH_STOVE, FACTS)
        assert errors == [] and not [w for w in warnings if "container" in w.message], (goal, errors, warnings)
    [err] = validate(parse_string(with_shelf(variant(IN_GOAL, "(In bowl_1 shelf_1_top_side)"))), WITH_STOVE, FACTS)
    assert "'shelf_1_top_side' is a surface (region top_side of the wooden_two_layer_shelf 'shelf_1')" in err.message


def test_an_instance_no_init_predicate_places_is_a_warning_at_its_declaration():
    # The scene builds it but leaves it at the world's origin, under the table: out of reach and out of view.
    spec = parse_string(variant(" (On plate_1 main_table_bowl_region)", ""), "t.bddl")
    errors, [w] = validate_with_warnings(spec, CATEGORIES)
    assert errors == [] and (w.path, w.line, w.col) == ("t.bddl", 12, 39)
    assert w.message == (
        "the object 'plate_1' is declared but no :init predicate places it (On or In something); the scene would "
        "leave it at the world's origin, at floor level (under the table of a table scene)"
    )
    # BASE places its objects. Its cabinet stands nowhere: a fixture is named when the facts tell it from the
    # workspace (the table, which nothing places).
    assert validate_with_warnings(parse_string(BASE), CATEGORIES) == ([], [])
    errors, [w] = validate_with_warnings(parse_string(BASE, "t.bddl"), CATEGORIES, FACTS)
    assert errors == [] and (w.line, w.col) == (11, 33)
    assert w.message.startswith("the fixture 'cabinet_1' is declared but no :init predicate places it")
    placed = parse_string(
        variant("(Close cabinet_1_top_region)", "(Close cabinet_1_top_region) (On cabinet_1 main_table_bowl_region)"))
    assert validate_with_warnings(placed, CATEGORIES, FACTS) == ([], [])


def test_check_names_in_of_a_surface_and_an_unplaced_object_at_their_place(tmp_path, capsys):
    # The whole way, with the asset library's own facts: `libero-ll check` on the kitchen example, changed.
    from pathlib import Path

    from libero_ll.cli import main

    example = Path(__file__).resolve().parents[2] / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"
    text = example.read_text()
    goal = "(In akita_black_bowl_1 wooden_cabinet_1_top_region)"
    plate = "    (On plate_1 kitchen_table_plate_init_region)\n"
    assert text.count(goal) == 1 and text.count(plate) == 1
    lines = text.splitlines()
    goal_at = next((i + 1, line.index(goal) + len("(In akita_black_bowl_1 ") + 1) for i, line in enumerate(lines)
                   if goal in line)
    plate_at = next((i + 1, line.index("plate_1") + 1) for i, line in enumerate(lines) if line.strip() == "plate_1 - plate")
    surface = tmp_path / "in_top_side.bddl"
    surface.write_text(text.replace(goal, "(In akita_black_bowl_1 wooden_cabinet_1_top_side)"))
    drawer = tmp_path / "on_drawer.bddl"
    drawer.write_text(text.replace(goal, "(On akita_black_bowl_1 wooden_cabinet_1_top_region)"))
    unplaced = tmp_path / "unplaced.bddl"
    unplaced.write_text(text.replace(plate, ""))

    assert main(["check", str(surface)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{surface}:{goal_at[0]}:{goal_at[1]}: In takes a region of a container"), out
    assert "'wooden_cabinet_1_top_side' is a surface (region top_side of the wooden_cabinet 'wooden_cabinet_1')" in out
    assert main(["check", str(drawer)]) == 0
    assert capsys.readouterr().out.startswith(
        f"{drawer}:{goal_at[0]}:{goal_at[1]}: warning: On of 'wooden_cabinet_1_top_region', the inside of a container")
    assert main(["check", str(unplaced)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{unplaced}:{plate_at[0]}:{plate_at[1]}: warning: the object 'plate_1' is declared but no :init predicate "
        "places it (On or In something); the scene would leave it at the world's origin, at floor level (under the "
        "table of a table scene)",
        f"{unplaced}: ok",
    ]


def test_every_shipped_task_passes_with_the_asset_librarys_facts():
    # The checks that need the facts must not turn away what LIBERO's own files (and our examples) do.
    from pathlib import Path

    from libero_ll.assets.categories import affordances, category_facts

    files = sorted((Path(__file__).resolve().parents[2] / "bddl_tasks").rglob("*.bddl"))
    assert len(files) >= 130
    categories, facts = affordances(), category_facts()
    assert {f.kind for f in facts.values()} == {"object", "fixture", "workspace"}
    for path in files:
        found = []
        _, problems = check_file(path, categories, facts=facts, warnings=found)
        assert problems == [], problems
        assert found == [], found  # nor warnings: every instance is placed, In and On fit their regions


def test_an_instance_named_like_a_category_is_a_warning():
    # `plate_1 plate - akita_black_bowl` (a " - " missing) declares a bowl named `plate` and makes plate_1 a
    # bowl too: valid, but almost never meant.
    spec = parse_string(variant("plate_1 - plate)", "plate_1 plate - akita_black_bowl)"))
    errors, warnings = validate_with_warnings(spec, CATEGORIES)
    assert errors == []
    # The bowl named `plate` is placed by no :init predicate either.
    [w, unplaced] = warnings
    assert (w.line, w.col) == (unplaced.line, unplaced.col) == (12, 47)
    assert "'plate' is the name of a category, but this instance is of category akita_black_bowl" in w.message
    assert "the object 'plate' is declared but no :init predicate places it" in unplaced.message
    assert validate_with_warnings(parse_string(BASE), CATEGORIES)[1] == []


def test_a_longer_cycle_through_regions_names_every_instance():
    # bowl_1 on plate_1, plate_1 in basket_1's compartment, basket_1 in a region (with ranges) of bowl_1.
    text = (variant(TOP_SIDE, TOP_SIDE + " (rim_region (:target bowl_1) (:ranges ((-0.01 -0.01 0.01 0.01))))")
            .replace("plate_1 - plate)", "plate_1 - plate basket_1 - basket)")
            .replace(ON_INIT, "(On bowl_1 plate_1)")
            .replace(PLATE_INIT, "(In plate_1 basket_1_contain_region) (On basket_1 bowl_1_rim_region)"))
    categories = {**CATEGORIES, "basket": ["contain_region"]}
    [err] = validate(parse_string(text, "t.bddl"), categories)
    assert (err.line, err.col) == (14, 11)
    assert err.message.startswith(
        "the :init placements form a cycle (bowl_1 -> plate_1 -> basket_1 -> bowl_1), so none of them can be "
        "placed first: (On bowl_1 plate_1) here, then (In plate_1 basket_1_contain_region) at line 14, then "
        "(On basket_1 bowl_1_rim_region) at line 14"), err.message
    # The same things stacked on a table region: a chain, not a cycle.
    chain = text.replace("(On basket_1 bowl_1_rim_region)", "(On basket_1 main_table_bowl_region)")
    assert validate(parse_string(chain), categories) == []


def test_a_fixture_is_never_in_a_container():
    # Placement would weld the stove inside the drawer, and In never holds of two welded things (the simulator
    # reports no contact between them). Told by the :fixtures section, or by the facts where they are given.
    message = ("'stove_1' is a fixture, welded to the world, and cannot be In 'cabinet_1_top_region', a region of "
               "the fixture 'cabinet_1'; fixtures stand on the workspace or on other fixtures")
    init = with_stove(variant(CLOSE_INIT, CLOSE_INIT + " (In stove_1 cabinet_1_top_region)"))
    goal = with_stove(variant(IN_GOAL, "(In stove_1 cabinet_1_top_region)"))
    for text, line, col in ((init, 14, 78), (goal, 15, 19)):
        for facts in (None, FACTS):
            [err] = validate(parse_string(text, "t.bddl"), WITH_STOVE, facts)
            assert (err.line, err.col) == (line, col) and err.message == message, err


def test_contradictions_in_a_plain_conjunction_goal():
    def errors(goal):
        return validate(parse_string(with_stove(variant(OPEN_GOAL, goal)), "t.bddl"), WITH_STOVE, FACTS)

    [err] = errors("(TurnOn stove_1) (TurnOff stove_1)")
    assert (err.line, err.col) == (15, 66)
    assert err.message == ("(TurnOff stove_1) contradicts (TurnOn stove_1) at line 15: the goal can never hold, "
                           "'stove_1' cannot be both on and off")
    # Nested Ands are still one conjunction; Or and Not are not reasoned about.
    [err] = errors("(And (TurnOn stove_1) (On plate_1 main_table_bowl_region)) (TurnOff stove_1)")
    assert "contradicts (TurnOn stove_1)" in err.message
    assert errors("(Or (TurnOn stove_1) (TurnOff stove_1))") == []
    assert errors("(TurnOn stove_1) (Not (TurnOn stove_1))") == []
    assert errors("(TurnOn stove_1) (Or (TurnOff stove_1) (Up plate_1))") == []
    # Different drawers, or the same state twice, are fine.
    assert errors("(Open cabinet_1_top_region) (Close cabinet_1_middle_region) (Open cabinet_1_top_region)") == []


def test_check_locates_what_only_the_reset_used_to_reject(tmp_path):
    # The asset library's own facts, on the kitchen example changed five ways: each used to pass `check` and
    # fail only when the simulator loaded the file, without a position.
    from pathlib import Path

    from libero_ll.assets.categories import affordances, category_facts

    example = Path(__file__).resolve().parents[2] / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"
    text = example.read_text()
    bowl = "(On akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)"
    plate = "(On plate_1 kitchen_table_plate_init_region)"
    drawer = "(Open wooden_cabinet_1_top_region)"
    microwave = "(On microwave_1 kitchen_table_microwave_init_region)"
    cases = {
        # name: (the changed text, the predicate the error is at, words of the message)
        "cycle": (text.replace(bowl, "(On akita_black_bowl_1 plate_1)").replace(plate, "(On plate_1 akita_black_bowl_1)"),
                  "(On akita_black_bowl_1 plate_1)", "form a cycle (akita_black_bowl_1 -> plate_1 -> akita_black_bowl_1)"),
        "two_places": (text.replace(plate, plate + "\n    (On plate_1 kitchen_table_akita_black_bowl_init_region)"),
                       "(On plate_1 kitchen_table_akita_black_bowl_init_region)", "'plate_1' is placed twice in :init"),
        "open_and_close": (text.replace(drawer, drawer + "\n    (Close wooden_cabinet_1_top_region)"),
                           "(Close wooden_cabinet_1_top_region)\n", "cannot start both open and closed"),
        "up_in_init": (text.replace("(TurnOff flat_stove_1)", "(TurnOff flat_stove_1)\n    (Up plate_1)"),
                       "(Up plate_1)", "Up cannot be in :init"),
        "fixture_in_drawer": (text.replace(microwave, "(In microwave_1 wooden_cabinet_1_top_region)"),
                              "(In microwave_1 wooden_cabinet_1_top_region)", "'microwave_1' is a fixture"),
    }
    categories, facts = affordances(), category_facts()
    for name, (changed, at, words) in cases.items():
        assert changed.count(at) == 1 and changed != text, name
        before = changed[: changed.index(at)]
        line, col = before.count("\n") + 1, len(before) - before.rfind("\n") + 1
        if name == "fixture_in_drawer":
            col += len("In ")  # at the fixture, like the error for a fixture on an object
        path = tmp_path / f"{name}.bddl"
        path.write_text(changed)
        _, problems = check_file(path, categories, facts=facts)
        assert len(problems) == 1, (name, problems)
        assert str(problems[0]).startswith(f"{path}:{line}:{col}: "), (name, str(problems[0]))
        assert words in problems[0].message, (name, problems[0].message)


def test_a_range_off_the_tables_top_is_an_error_and_one_over_its_edge_a_warning(tmp_path):
    # `check` used to pass a region 4.8 m from the table's centre; only the reset found that the bowl fell.
    from pathlib import Path

    from libero_ll.assets.categories import affordances, category_facts

    soup = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_alphabet_soup_in_the_basket.bddl"
    text = soup.read_text()
    box = "(-0.185 -0.05 -0.165 -0.03)"
    line = text[: text.index(box)].count("\n") + 1
    categories, facts = affordances(), category_facts()
    assert facts["table"].top == (0.4, 0.6) and facts["floor"].top is None
    cases = {
        "far": ("(4.8 -0.05 4.82 -0.03)", 1, 0, "lies wholly off the top of 'main_table' (x -0.4 to 0.4, y -0.6 to 0.6"),
        "left": ("(-0.1 -0.9 0.1 -0.7)", 1, 0, "wholly off"),
        "edge": ("(0.3 -0.05 0.45 -0.03)", 0, 1, "lies partly off the top of 'main_table'"),
        "inside": ("(-0.4 -0.6 0.4 0.6)", 0, 0, ""),
    }
    for name, (changed, errors, warned, words) in cases.items():
        path = tmp_path / f"{name}.bddl"
        path.write_text(text.replace(box, changed))
        found: list = []
        _, problems = check_file(path, categories, facts=facts, warnings=found)
        assert (len(problems), len(found)) == (errors, warned), (name, problems, found)
        for p in problems + found:
            assert str(p).startswith(f"{path}:{line}:") and words in p.message, (name, str(p))
    # Without the asset library's facts nothing is known of the table's size, and nothing is said.
    path = tmp_path / "far.bddl"
    assert check_file(path, categories)[1] == []


# The workspace is never in the placement's poses (nothing places it) and On of it judged it as an object: in
# :init the placement failed with a wrong "cycle" message, in a goal it held only within 4.5 cm of its centre.
@pytest.mark.parametrize(
    "old, new, line, col, name",
    [
        (ON_INIT, "(On bowl_1 main_table)", 14, 21, "On"),
        (IN_GOAL, "(On bowl_1 main_table)", 15, 26, "On"),
        (CLOSE_INIT, CLOSE_INIT + " (On cabinet_1 main_table)", 14, 88, "On"),
        (IN_GOAL, "(In bowl_1 main_table)", 15, 26, "In"),
        (ON_INIT, "(In bowl_1 main_table)", 14, 21, "In"),
    ],
)
def test_on_or_in_the_workspace_itself_is_an_error_naming_its_regions(old, new, line, col, name):
    spec = parse_string(variant(old, new), "t.bddl")
    [err] = validate(spec, CATEGORIES, FACTS)
    assert (err.path, err.line, err.col) == ("t.bddl", line, col), str(err)
    assert err.message == (
        f"{name} of 'main_table', the workspace (table) itself: things stand on the workspace in one of its "
        "regions, with On; name one declared in :regions: main_table_bowl_region"
    ), err.message


def test_on_the_workspace_without_regions_of_it_says_how_to_declare_one():
    text = variant(ON_INIT, "(On bowl_1 main_table)").replace(PLATE_INIT, "(On plate_1 cabinet_1_top_side)")
    text = text.replace("(bowl_region\n      (:target main_table)", "(bowl_region\n      (:target cabinet_1)")
    [err] = validate(parse_string(text, "t.bddl"), CATEGORIES, FACTS)
    assert (err.line, err.col) == (14, 21)
    assert err.message == (
        "On of 'main_table', the workspace (table) itself: things stand on the workspace in one of its regions, "
        "with On; declare one in :regions, e.g. (<name> (:target main_table) (:ranges ((x_min y_min x_max "
        "y_max)))), and name it main_table_<name>"
    ), err.message


def test_up_of_a_fixture_or_the_workspace_is_an_error():
    # Welded to the world, neither ever rises: the goal could never hold.
    for goal, message in (
        ("(Up cabinet_1)", "'cabinet_1' is a fixture, welded to the world: it never rises, so Up of it can never "
                           "hold; Up takes an object"),
        ("(Up main_table)", "'main_table' is the workspace (table), welded to the world: it never rises, so Up of "
                            "it can never hold; Up takes an object"),
    ):
        spec = parse_string(variant(OPEN_GOAL, goal), "t.bddl")
        [err] = validate(spec, CATEGORIES, FACTS)
        assert (err.line, err.col) == (15, 52) and err.message == message, str(err)
    # Without the facts, what the :fixtures section says.
    [err] = validate(parse_string(variant(OPEN_GOAL, "(Up cabinet_1)")), CATEGORIES)
    assert err.message.startswith("'cabinet_1' is a fixture, welded to the world: it never rises"), err.message
    assert validate(parse_string(variant(OPEN_GOAL, "(Up bowl_1)")), CATEGORIES, FACTS) == []


def test_a_lower_case_problem_class_is_read_as_its_registered_spelling():
    # LIBERO's reader lower-cases the whole file, so lower-case files are valid LIBERO input.
    spec = parse_string(variant("LIBERO_Tabletop_Manipulation", "libero_tabletop_manipulation"))
    assert spec.problem_class == "LIBERO_Tabletop_Manipulation"
    assert validate(spec, CATEGORIES, FACTS) == validate(parse_string(BASE), CATEGORIES, FACTS)
    whole = parse_string(BASE.lower())
    assert whole.problem_class == "LIBERO_Tabletop_Manipulation"
    assert validate(whole, CATEGORIES) == []
    # One built in code is not rewritten: it is named with its registered spelling.
    spec.problem_class = "libero_tabletop_manipulation"
    [err] = validate(spec, CATEGORIES)
    assert err.message == (
        "unknown problem class 'libero_tabletop_manipulation'; did you mean 'LIBERO_Tabletop_Manipulation'?"
    ), err.message


def test_a_variant_of_a_scene_family_is_built_as_the_family_with_a_warning():
    # Suites built on LIBERO register a problem class per look of a family's scene (lights, textures).
    from libero_ll.bddl.spec import scene_family

    name = "Libero_Tabletop_Manipulation_tabletop_light_sync_modified_17"
    spec = parse_string(variant("LIBERO_Tabletop_Manipulation", name), "v.bddl")
    assert spec.problem_class == name and spec.scene_family == "LIBERO_Tabletop_Manipulation"
    errors, notes = validate_with_warnings(spec, CATEGORIES, FACTS)
    base_errors, base_notes = validate_with_warnings(parse_string(BASE, "v.bddl"), CATEGORIES, FACTS)
    assert errors == base_errors
    assert [str(n) for n in notes] == [
        f"v.bddl:1:18: problem class '{name}' is a variant of the scene family LIBERO_Tabletop_Manipulation "
        "(its name starts with it), and is built as that family: what the variant changes (its lights, textures or "
        "camera) is not reproduced"
    ] + [str(n) for n in base_notes]
    # The longest family that the name starts with; nothing for a name that only looks like one.
    assert scene_family("LIBERO_Kitchen_Tabletop_Manipulation_texture_3") == "LIBERO_Kitchen_Tabletop_Manipulation"
    assert scene_family("LIBERO_Kitchen_Tabletop_Manipulation") == "LIBERO_Kitchen_Tabletop_Manipulation"
    for other in ("LIBERO_Tabletop_ManipulationX", "LIBERO_Tabletop_Manipulation_", "LIBERO_Moon_Manipulation_1",
                  "libero_tabletop_manipulation"):
        assert scene_family(other) is None, other
    [err] = validate(parse_string(variant("LIBERO_Tabletop_Manipulation", "LIBERO_Tabletop_ManipulationX")), CATEGORIES)
    assert err.message.startswith("unknown problem class 'LIBERO_Tabletop_ManipulationX'")


def test_an_instance_declared_in_the_other_section_than_its_category_is_a_warning(tmp_path):
    # The scene goes by the category, so a plate among the :fixtures stayed movable and a cabinet among the
    # :objects welded, without a word.
    from pathlib import Path

    from libero_ll.assets.categories import affordances, category_facts

    example = Path(__file__).resolve().parents[2] / "bddl_tasks/examples/kitchen_put_the_bowl_in_the_top_drawer_and_close_it.bddl"
    text = example.read_text()
    plate, cabinet = "    plate_1 - plate\n", "    wine_rack_1 - wine_rack\n"
    moved = {
        "plate": (text.replace(plate, "").replace(cabinet, cabinet + plate), "plate_1", "among the :fixtures",
                  "a movable object"),
        "rack": (text.replace(cabinet, "").replace(plate, plate + cabinet), "wine_rack_1", "among the :objects",
                 "a fixture"),
    }
    categories, facts = affordances(), category_facts()
    for name, (changed, inst, section, kind) in moved.items():
        path = tmp_path / f"{name}.bddl"
        path.write_text(changed)
        found: list = []
        check_file(path, categories, facts=facts, warnings=found)
        said = [w for w in found if "declared among" in w.message]
        assert len(said) == 1, (name, [str(w) for w in found])
        line = changed[: changed.index(f"    {inst} - ")].count("\n") + 1
        assert said[0].line == line and section in said[0].message and kind in said[0].message, str(said[0])
    # As the example is, nothing is said.
    found = []
    check_file(example, categories, facts=facts, warnings=found)
    assert found == []
