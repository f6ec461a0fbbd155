"""Parsing task files: every construct of the language, and the position of every syntax error."""

import pickle

import pytest

from libero_ll.bddl import And, BddlError, Loc, Not, Or, Predicate, Region, parse_file, parse_string
from libero_ll.errors import LiberoError

# A file as LIBERO's generator writes it.
LIBERO_FILE = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language open the top drawer of the cabinet)
    (:regions
      (wooden_cabinet_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.01 -0.31 0.01 -0.29)
            )
          )
          (:yaw_rotation (
              (3.141592653589793 3.141592653589793)
            )
          )
      )
      (akita_black_bowl_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.025 -0.025 0.025 0.025)
            )
          )
          (:rgba (0 0 1 0))
      )
      (top_side
          (:target wooden_cabinet_1)
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    wooden_cabinet_1 - wooden_cabinet
  )

  (:objects
    akita_black_bowl_1 - akita_black_bowl
    plate_1 plate_2 - plate
  )

  (:obj_of_interest
    wooden_cabinet_1
  )

  (:init
    (On akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)
    (On wooden_cabinet_1 kitchen_table_wooden_cabinet_init_region)
  )

  (:goal
    (And (Open wooden_cabinet_1_top_region) (On akita_black_bowl_1 wooden_cabinet_1_top_side))
  )

)
"""

# A small valid file; the error cases below change one thing in it.  Columns in the cases are
# counted on these lines.
BASE = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the bowl on the plate)
  (:regions
    (bowl_region
      (:target main_table)
      (:ranges ((-0.1 -0.1 0.1 0.1)))))
  (:fixtures main_table - table)
  (:objects bowl_1 - akita_black_bowl plate_1 - plate)
  (:obj_of_interest bowl_1)
  (:init (On bowl_1 main_table_bowl_region))
  (:goal (And (On bowl_1 plate_1))))
"""


def variant(old, new):
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


# ---------------------------------------------------------------- the LIBERO example


def test_libero_file_parses_to_expected_spec():
    spec = parse_string(LIBERO_FILE, "kitchen.bddl")
    assert spec.problem_class == "LIBERO_Kitchen_Tabletop_Manipulation"
    assert spec.domain == "robosuite"
    assert spec.language == "open the top drawer of the cabinet"
    assert list(spec.regions) == [
        "kitchen_table_wooden_cabinet_init_region",
        "kitchen_table_akita_black_bowl_init_region",
        "wooden_cabinet_1_top_side",
    ]
    cab = spec.regions["kitchen_table_wooden_cabinet_init_region"]
    assert cab == Region(
        "wooden_cabinet_init_region",
        "kitchen_table",
        [(-0.01, -0.31, 0.01, -0.29)],
        [(3.141592653589793, 3.141592653589793)],
    )
    assert spec.regions["kitchen_table_akita_black_bowl_init_region"].rgba == (0.0, 0.0, 1.0, 0.0)
    side = spec.regions["wooden_cabinet_1_top_side"]
    assert (side.name, side.target, side.ranges, side.yaw_rotation, side.rgba) == (
        "top_side", "wooden_cabinet_1", [], [], None)
    assert side.full_name == "wooden_cabinet_1_top_side"
    assert spec.fixtures == {"kitchen_table": "kitchen_table", "wooden_cabinet_1": "wooden_cabinet"}
    assert spec.objects == {"akita_black_bowl_1": "akita_black_bowl", "plate_1": "plate", "plate_2": "plate"}
    assert spec.obj_of_interest == ["wooden_cabinet_1"]
    assert spec.init == [
        Predicate("on", ("akita_black_bowl_1", "kitchen_table_akita_black_bowl_init_region")),
        Predicate("on", ("wooden_cabinet_1", "kitchen_table_wooden_cabinet_init_region")),
    ]
    assert spec.goal == And([
        Predicate("open", ("wooden_cabinet_1_top_region",)),
        Predicate("on", ("akita_black_bowl_1", "wooden_cabinet_1_top_side")),
    ])
    assert spec.path == "kitchen.bddl"


def test_locations_are_recorded():
    spec = parse_string(LIBERO_FILE, "k.bddl")
    assert spec.decl_locs["plate_2"] == Loc("k.bddl", 36, 13)
    assert spec.decl_locs[":goal"] == Loc("k.bddl", 48, 4)
    assert spec.decl_locs[":problem"] == Loc("k.bddl", 1, 18)
    assert spec.decl_locs["wooden_cabinet_1_top_side"] == Loc("k.bddl", 24, 8)
    assert spec.category_locs["plate_1"] == Loc("k.bddl", 36, 23)
    assert spec.interest_locs == [Loc("k.bddl", 40, 5)]
    region = spec.regions["kitchen_table_wooden_cabinet_init_region"]
    assert region.loc == Loc("k.bddl", 5, 8)
    assert region.locs["target"] == Loc("k.bddl", 6, 20)
    assert region.locs["ranges.0.2"] == Loc("k.bddl", 8, 28)
    assert region.locs["yaw_rotation.0.1"] == Loc("k.bddl", 12, 34)
    first = spec.init[0]
    assert first.loc == Loc("k.bddl", 44, 6)
    assert first.arg_locs == (Loc("k.bddl", 44, 9), Loc("k.bddl", 44, 28))


def test_spec_helpers():
    spec = parse_string(LIBERO_FILE)
    assert spec.category_of("plate_2") == "plate"
    assert spec.category_of("kitchen_table") == "kitchen_table"
    with pytest.raises(KeyError):
        spec.category_of("kitchen_table_akita_black_bowl_init_region")
    assert list(spec.instances()) == [
        "kitchen_table", "wooden_cabinet_1", "akita_black_bowl_1", "plate_1", "plate_2"]
    assert [p.name for p in spec.goal_predicates()] == ["open", "on"]


# ---------------------------------------------------------------- every construct


def test_comments_mixed_case_requirements_and_typed_lists():
    text = """\
; a task file with every optional feature
(DEFINE (Problem LIBERO_Study_Tabletop_Manipulation) ; trailing comment
  (:Requirements (:strips) :typing)
  (:DOMAIN robosuite)
  (:Language Pick up the book; this part is a comment
      and place it  in the caddy)
  (:REGIONS
    (book_region (:TARGET study_table)
      (:Ranges ((-0.2 -0.3 -0.1 -0.2) (0.1 0.2 0.2 0.3) (1e-3 -.5 2.5E+0 +4)))
      (:Yaw_Rotation ((0 0.5) (-1.5 -1)))
      (:RGBA (1 0.5 0 1)))
    (back_contain_region (:target desk_caddy_1)))
  (:fixtures study_table - study_table)
  (:objects
    black_book_1 black_book_2 - black_book   ; two of one kind
    desk_caddy_1 - desk_caddy)
  (:obj_of_interest black_book_1 desk_caddy_1)
  (:init (ON black_book_1 study_table_book_region) (on black_book_2 black_book_1)
         (TurnOff desk_caddy_1) (turnON desk_caddy_1) (Close desk_caddy_1) (up black_book_2))
  (:Goal (AND (In black_book_1 desk_caddy_1_back_contain_region) (OPEN desk_caddy_1))))
"""
    spec = parse_string(text)
    assert spec.problem_class == "LIBERO_Study_Tabletop_Manipulation"
    assert spec.language == "Pick up the book and place it in the caddy"
    region = spec.regions["study_table_book_region"]
    assert region.ranges == [(-0.2, -0.3, -0.1, -0.2), (0.1, 0.2, 0.2, 0.3), (0.001, -0.5, 2.5, 4.0)]
    assert region.yaw_rotation == [(0.0, 0.5), (-1.5, -1.0)]
    assert region.rgba == (1.0, 0.5, 0.0, 1.0)
    assert spec.regions["desk_caddy_1_back_contain_region"].ranges == []
    assert spec.objects == {
        "black_book_1": "black_book", "black_book_2": "black_book", "desk_caddy_1": "desk_caddy"}
    assert [p.name for p in spec.init] == ["on", "on", "turnoff", "turnon", "close", "up"]
    assert spec.goal == And([
        Predicate("in", ("black_book_1", "desk_caddy_1_back_contain_region")),
        Predicate("open", ("desk_caddy_1",)),
    ])


def test_or_not_nested_anywhere():
    text = variant(
        "(:goal (And (On bowl_1 plate_1))))",
        "(:goal (And (Or (On bowl_1 plate_1) (Not (Up bowl_1)) (And (Not (Or (Up plate_1)))))\n"
        "         (not (On plate_1 bowl_1)))))",
    )
    spec = parse_string(text)
    on, up_b, up_p = (Predicate("on", ("bowl_1", "plate_1")), Predicate("up", ("bowl_1",)),
                      Predicate("up", ("plate_1",)))
    assert spec.goal == And([
        Or([on, Not(up_b), And([Not(Or([up_p]))])]),
        Not(Predicate("on", ("plate_1", "bowl_1"))),
    ])
    with pytest.raises(LiberoError, match="Or"):
        spec.goal_predicates()


@pytest.mark.parametrize(
    "goal, expected",
    [
        ("(:goal (On bowl_1 plate_1)))", And([Predicate("on", ("bowl_1", "plate_1"))])),
        ("(:goal (Not (Up bowl_1))))", And([Not(Predicate("up", ("bowl_1",)))])),
        ("(:goal (And)))", And([])),
        ("(:goal))", And([])),
    ],
)
def test_goal_top_level_is_always_and(goal, expected):
    spec = parse_string(variant("(:goal (And (On bowl_1 plate_1))))", goal))
    assert spec.goal == expected


def test_nested_and_flattens_in_goal_predicates():
    spec = parse_string(variant("(And (On bowl_1 plate_1))", "(And (Up plate_1) (And (On bowl_1 plate_1)))"))
    assert [p.name for p in spec.goal_predicates()] == ["up", "on"]


def test_empty_sections_and_optional_sections():
    text = """\
(define (problem LIBERO_Floor_Manipulation)
  (:language)
  (:regions)
  (:fixtures)
  (:objects)
  (:obj_of_interest)
  (:init)
  (:goal (And)))
"""
    spec = parse_string(text)
    assert (spec.language, spec.regions, spec.fixtures, spec.objects, spec.obj_of_interest, spec.init) == (
        "", {}, {}, {}, [], [])
    assert spec.domain == "robosuite"
    minimal = "(define (problem P) (:language go) (:goal (Up a)))"
    assert parse_string(minimal).goal == And([Predicate("up", ("a",))])


@pytest.mark.parametrize(
    "language, expected",
    [
        ("Put the bowl (the black one) on the plate", "Put the bowl (the black one) on the plate"),
        ("put it\n      on the  plate's   edge, 2 cm from (the) rim.",
         "put it on the plate's edge, 2 cm from (the) rim."),
        ("pick ( up ) the cup ;a comment\n now", "pick ( up ) the cup now"),
        ("a(b)c ((d))", "a(b)c ((d))"),
    ],
)
def test_language_is_free_text_normalised(language, expected):
    spec = parse_string(variant("(:language put the bowl on the plate)", f"(:language {language})"))
    assert spec.language == expected


def test_crlf_tabs_and_byte_order_mark():
    text = "\ufeff" + BASE.replace("\n", "\r\n").replace("  (:init", "\t(:init")
    spec = parse_string(text)
    assert spec.init[0].loc.col == 10  # the tab counts as one column
    assert spec.decl_locs[":problem"] == Loc("<string>", 1, 18)
    bad = "\ufeff" + BASE.replace("(On bowl_1 plate_1)", "(Onto bowl_1 plate_1)").replace("\n", "\r\n")
    with pytest.raises(BddlError) as e:
        parse_string(bad)
    assert (e.value.line, e.value.col) == (12, 16)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_counts_lines_alike(newline):
    # Old-Mac files (lone CR) put every error on line 1, and a comment ran to the end of the file.
    commented = BASE.replace("  (:obj_of_interest", "  ; the objects of interest\n  (:obj_of_interest")
    spec = parse_string(commented.replace("\n", newline))
    assert spec.init[0].loc == Loc("<string>", 12, 11)
    assert spec.init[0].arg_locs[1] == Loc("<string>", 12, 21)
    assert spec.obj_of_interest == ["bowl_1"]
    bad = commented.replace("(On bowl_1 plate_1)", "(Onto bowl_1 plate_1)").replace("\n", newline)
    with pytest.raises(BddlError) as e:
        parse_string(bad)
    assert (e.value.line, e.value.col) == (13, 16)


def test_mixed_line_endings_count_each_break_once():
    text = BASE.replace("\n", "\r", 3).replace("\n", "\r\n", 3)
    assert parse_string(text).init[0].loc == Loc("<string>", 11, 11)


def test_parse_file_reads_utf8(tmp_path):
    path = tmp_path / "task.bddl"
    path.write_text(BASE.replace("put the bowl", "put the café bowl"), encoding="utf-8")
    spec = parse_file(path)
    assert spec.language == "put the café bowl on the plate"
    assert spec.path == str(path)


# ---------------------------------------------------------------- errors


# Pieces of BASE that the cases below change.
INTEREST = "  (:obj_of_interest bowl_1)"
INIT = "(:init (On bowl_1 main_table_bowl_region))"
ON_INIT = "(On bowl_1 main_table_bowl_region)"
ON_GOAL = "(On bowl_1 plate_1)"
GOAL = "(:goal (And (On bowl_1 plate_1)))"
RANGE = "((-0.1 -0.1 0.1 0.1))"
REGION_END = "(:ranges ((-0.1 -0.1 0.1 0.1)))))"
REGION_OPEN = "    (bowl_region\n"
FIXTURES = "(:fixtures main_table - table)"
PROBLEM = "(problem LIBERO_Tabletop_Manipulation)"


def region_attr(line):
    """BASE with one more attribute line at the end of the region (line 8)."""
    return variant(REGION_END, "(:ranges ((-0.1 -0.1 0.1 0.1)))\n      " + line)


ERROR_CASES = [
    # (id, text, line, col, words the message must contain)
    ("empty file", "", 1, 1, "empty file"),
    ("only comments", "; nothing here\n\n   ; still nothing\n", 1, 1, "empty file"),
    ("not define", variant("(define", "(defin"), 1, 2, "expected 'define', found 'defin'"),
    ("atom before define", "hello\n" + BASE, 1, 1, "expected '(define' at the start, found 'hello'"),
    ("empty list first", "()", 1, 1, "found '()'"),
    ("missing problem", variant(" " + PROBLEM, ""), 1, 2, "missing (problem"),
    ("problem without name", variant(PROBLEM, "(problem)"), 1, 10, "problem needs a problem class"),
    ("problem with two names", variant(PROBLEM, "(problem A B)"), 1, 20, "takes one problem class"),
    ("bad problem name", variant("LIBERO_Tabletop_Manipulation", "LIBERO-Tabletop"), 1, 18,
     "bad problem class 'LIBERO-Tabletop'"),
    ("unknown section", variant(INTEREST, "  (:colour blue)"), 10, 4, "unknown section ':colour'"),
    ("section without colon", variant(INTEREST, "  (objects blue)"), 10, 4, "unknown section 'objects'"),
    ("duplicate section", variant(INTEREST, "  (:language again)"), 10, 4,
     "duplicate section :language (first at 3:4)"),
    ("duplicate problem", variant(INTEREST, "  (problem X)"), 10, 4, "duplicate section problem"),
    ("stray token in define", variant(INTEREST, "  junk"), 10, 3, "unexpected 'junk': expected a section"),
    ("empty section", variant(INTEREST, "  ()"), 10, 3, "empty section"),
    ("stray token at top level", BASE + "junk\n", 13, 1, "unexpected 'junk' after the end of (define ...)"),
    ("second form at top level", BASE + "(define)\n", 13, 1, "unexpected '(' after the end of (define ...)"),
    ("missing close at end", BASE[:-2] + "\n", 1, 1, "'(' is never closed"),
    ("missing close of a section", variant(ON_INIT + ")", ON_INIT), 11, 3,
     "'(' of :init is not closed before (:goal at 12:3)"),
    ("missing close innermost", "(define (problem X)\n  (:goal (And (On a b", 2, 15, "'(' is never closed"),
    ("extra close at end", BASE + ")\n", 13, 1, "unmatched ')'"),
    ("extra close in the middle", variant(ON_INIT + ")", ON_INIT + "))"), 11, 45,
     "extra ')': it ends (define ...) here"),
    ("extra close, balanced later",
     variant(INIT, INIT[:-1]).replace("plate_1))))", "plate_1)))))"), 11, 3,
     "'(' of :init is not closed before (:goal"),
    ("unknown predicate", variant(ON_INIT, "(Onto bowl_1 main_table_bowl_region)"), 11, 11,
     "unknown predicate 'Onto'; known: On, In, Open, Close, TurnOn, TurnOff, Up"),
    ("unknown predicate in goal", variant(ON_GOAL, "(Near bowl_1 plate_1)"), 12, 16,
     "unknown predicate 'Near'"),
    ("wrong arity binary", variant(ON_INIT, "(On bowl_1)"), 11, 11, "On takes 2 arguments, found 1"),
    ("wrong arity unary", variant(ON_GOAL, "(Open bowl_1 plate_1)"), 12, 16,
     "Open takes 1 argument, found 2"),
    ("predicate argument is a list", variant(ON_GOAL, "(On (bowl_1) plate_1)"), 12, 19,
     "expected an argument name, found '('"),
    ("bad argument name", variant(ON_GOAL, "(On bowl-1 plate_1)"), 12, 19, "bad argument name 'bowl-1'"),
    ("empty predicate", variant("(And " + ON_GOAL + ")", "(And ())"), 12, 15, "empty predicate"),
    ("And in init", variant(INIT, f"(:init (And {ON_INIT}))"), 11, 11, "predicates only; And is not allowed"),
    ("atom in init", variant(INIT, "(:init On bowl_1 main_table_bowl_region)"), 11, 10,
     "expected a predicate such as (On a b), found 'On'"),
    ("Not with two formulas", variant("(And " + ON_GOAL + ")", f"(Not {ON_GOAL} (Up bowl_1))"), 12, 11,
     "Not takes exactly one formula, found 2"),
    ("Not of a name", variant("(And " + ON_GOAL + ")", "(Not bowl_1)"), 12, 15,
     "expected a formula such as (On a b), found 'bowl_1'"),
    ("And without parentheses", variant(GOAL, f"(:goal And {ON_GOAL})"), 12, 10, "write (And ...)"),
    ("empty Or", variant("(And " + ON_GOAL + ")", "(And (Or))"), 12, 16, "Or needs at least one formula"),
    ("two goal formulas", variant(GOAL, f"(:goal {ON_GOAL} (Up bowl_1))"), 12, 30,
     "takes one formula; wrap several in (And ...)"),
    ("missing goal", variant("  " + GOAL + ")", "  )"), 1, 2, "missing (:goal ...) section"),
    ("missing language", variant("  (:language put the bowl on the plate)\n", ""), 1, 2,
     "missing (:language ...) section"),
    ("range with 3 numbers", variant(RANGE, "((-0.1 -0.1 0.1))"), 7, 17,
     "each of ranges has 4 numbers (x_min y_min x_max y_max), found 3"),
    ("range with 5 numbers", variant(RANGE, "((-0.1 -0.1 0.1 0.1 0.2))"), 7, 17, "found 5"),
    ("non-number in range", variant(RANGE, "((-0.1 abc 0.1 0.1))"), 7, 23, "expected a number, found 'abc'"),
    ("not-a-number in range", variant(RANGE, "((-0.1 -0.1 nan 0.1))"), 7, 28,
     "expected a number, found 'nan'"),
    ("ranges not nested", variant("(:ranges " + RANGE + ")", "(:ranges (-0.1 -0.1 0.1 0.1))"), 7, 17,
     "holds a list of lists, found '-0.1'"),
    ("ranges empty keyword", variant("(:ranges " + RANGE + ")", "(:ranges)"), 7, 8, ":ranges needs a list"),
    # Before: "region 'bowl_region' has no :ranges and is not an affordance region", at the region's name.
    ("ranges empty list", variant("(:ranges " + RANGE + ")", "(:ranges ())"), 7, 16,
     ":ranges of region 'bowl_region' is empty: give at least one (x_min y_min x_max y_max), or leave :ranges "
     "out for an affordance region"),
    ("yaw with one number", region_attr("(:yaw_rotation ((0.0)))))"), 8, 23,
     "each of yaw_rotation has 2 numbers"),
    ("rgba with three numbers", region_attr("(:rgba (1 0 0))))"), 8, 14,
     "rgba has 4 numbers (r g b a), found 3"),
    ("rgba not a list", region_attr("(:rgba 1 0 0 1)))"), 8, 14, "write (:rgba (r g b a))"),
    ("region without target", variant("      (:target main_table)\n", ""), 5, 6,
     "region 'bowl_region' has no (:target <instance>)"),
    # A ';' starts a comment: in the instruction it hid the ')' with no word of it.
    ("semicolon in the language", variant("(:language put the bowl on the plate)",
                                          "(:language put the bowl; on the plate)"), 3, 3,
     "'(' of :language is not closed before (:regions at 4:3): a ')' is missing; the ';' at 3:26 starts a "
     "comment, which hides the rest of its line and the ')' in it"),
    ("unknown region attribute", variant("(:target main_table)", "(:target main_table) (:size 1)"), 6, 29,
     "unknown region attribute ':size'"),
    ("duplicate region attribute",
     variant("(:target main_table)", "(:target main_table) (:target plate_1)"), 6, 29,
     "duplicate :target in region 'bowl_region' (first at 6:8)"),
    ("region missing close swallows next",
     variant(REGION_OPEN, "    (other_region (:target main_table)\n" + REGION_OPEN)
     .replace(")))))\n", "))))))\n"),
     6, 6, "'bowl_region' (is a ')' missing before it?)"),
    ("region is a bare name", variant(REGION_OPEN, "    bowl_region (x\n"), 5, 5,
     "expected a region (<name> (:target ...) ...), found 'bowl_region'"),
    ("bad region name", variant("(bowl_region", "(Bowl_Region"), 5, 6, "bad region name 'Bowl_Region'"),
    ("duplicate region", variant(REGION_OPEN, "    (bowl_region (:target main_table))\n" + REGION_OPEN), 6, 6,
     "duplicate region 'main_table_bowl_region' (first at 5:6)"),
    ("duplicate instance", variant("plate_1 - plate", "bowl_1 - plate"), 9, 39,
     "duplicate instance 'bowl_1' (first declared at 9:13)"),
    ("instance both fixture and object", variant(FIXTURES, "(:fixtures bowl_1 main_table - table)"), 9, 13,
     "duplicate instance 'bowl_1' (first declared at 8:14)"),
    ("bad instance name", variant("bowl_1 - akita", "Bowl_1 - akita"), 9, 13,
     "bad instance name 'Bowl_1': names are lower-case identifiers"),
    ("instance name starting with digit", variant("plate_1 - plate", "1plate - plate"), 9, 39,
     "bad instance name '1plate'"),
    ("bad category name", variant("- plate)", "- Plate)"), 9, 49, "bad category name 'Plate'"),
    ("missing type", variant("plate_1 - plate)", "plate_1 plate_2)"), 9, 39,
     "'plate_1 plate_2' has no category: write 'plate_1 plate_2 - <category>'"),
    ("missing category after dash", variant("plate_1 - plate)", "plate_1 -)"), 9, 47,
     "missing category after '-'"),
    ("dash without names", variant(FIXTURES, "(:fixtures - table)"), 8, 14,
     "'-' with no instance names before it"),
    ("list in typed list", variant(FIXTURES, "(:fixtures (main_table) - table)"), 8, 14,
     "expected an instance name, found '('"),
    ("number too large", variant(RANGE, "((-0.1 -0.1 1e999 0.1))"), 7, 28, "the number 1e999 is too large"),
    ("number of 400 digits", variant(RANGE, "((-0.1 -0.1 " + "9" * 400 + " 0.1))"), 7, 28,
     "the number 99999999999999999999...99999999 (400 characters) is too large"),
    ("nested too deep", variant(GOAL, "(:goal " + "(Not " * 120 + ON_GOAL + ")" * 121), 12, 10 + 5 * 98,
     "nested more than 100 deep"),
    ("bad name in obj_of_interest", variant(INTEREST, "  (:obj_of_interest Bowl)"), 10, 21,
     "bad instance name 'Bowl'"),
]


@pytest.mark.parametrize(
    "text, line, col, words", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_error_position_and_message(text, line, col, words):
    with pytest.raises(BddlError) as info:
        parse_string(text, "task.bddl")
    err = info.value
    assert (err.path, err.line, err.col) == ("task.bddl", line, col), str(err)
    assert words in err.message
    assert str(err) == f"task.bddl:{line}:{col}: {err.message}"


def test_error_cases_are_distinct():
    texts = [c[1] for c in ERROR_CASES]
    assert len(set(texts)) == len(texts)


def test_unreadable_file(tmp_path):
    missing = tmp_path / "nope.bddl"
    with pytest.raises(BddlError) as info:
        parse_file(missing)
    assert (info.value.path, info.value.line, info.value.col) == (str(missing), 1, 1)
    assert "cannot read file" in info.value.message
    with pytest.raises(BddlError, match="cannot read file"):
        parse_file(tmp_path)  # a folder


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_file_that_is_not_utf8(tmp_path, end):
    path = tmp_path / "bad.bddl"
    path.write_bytes(b"(define (problem P)" + end + b"  (:language caf\xe9)" + end)
    with pytest.raises(BddlError) as info:
        parse_file(path)
    assert (info.value.line, info.value.col) == (2, 17)
    assert "UTF-8" in info.value.message


def test_problem_class_is_read_case_insensitively_as_its_registered_spelling():
    for spelled in ("libero_tabletop_manipulation", "LIBERO_TABLETOP_MANIPULATION", "Libero_Tabletop_Manipulation"):
        spec = parse_string(variant("LIBERO_Tabletop_Manipulation", spelled))
        assert spec.problem_class == "LIBERO_Tabletop_Manipulation"
    # An unknown one is kept as written, for the validator to name.
    assert parse_string(variant("LIBERO_Tabletop_Manipulation", "libero_moon")).problem_class == "libero_moon"


def test_bddl_error_is_a_libero_error_and_pickles():
    err = BddlError("a.bddl", 3, 7, "something is wrong")
    assert isinstance(err, LiberoError)
    assert str(err) == "a.bddl:3:7: something is wrong"
    assert err.loc == Loc("a.bddl", 3, 7)
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.col, back.message, str(back)) == (
        "a.bddl", 3, 7, "something is wrong", str(err))


def test_instance_may_be_named_like_a_keyword():
    text = variant("plate_1 - plate", "problem - plate").replace("plate_1))", "problem))")
    spec = parse_string(text)
    assert spec.objects["problem"] == "plate"
    assert spec.decl_locs["problem"] == Loc("<string>", 9, 39)
    assert spec.decl_locs[":problem"] == Loc("<string>", 1, 18)


def test_predicates_compare_by_value_and_hash():
    a = parse_string(BASE, "one.bddl").init[0]
    b = Predicate("On", ["bowl_1", "main_table_bowl_region"])
    assert a == b and a.loc != b.loc
    assert {a, b} == {a}
