"""Writing task files: canonical layout, exact round trips, and atomic file writes."""

import os
import random

import pytest

from libero_ll.bddl import (
    And,
    Not,
    Or,
    Predicate,
    Region,
    TaskSpec,
    parse_file,
    parse_string,
    write_file,
    write_string,
)
from libero_ll.errors import LiberoError

CANONICAL = """\
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
              (0.1 0.2 0.15 0.25)
            )
          )
          (:rgba (0.0 0.0 1.0 0.0))
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
    akita_black_bowl_2 - akita_black_bowl
  )

  (:obj_of_interest
    wooden_cabinet_1
    akita_black_bowl_1
  )

  (:init
    (On akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)
    (On wooden_cabinet_1 kitchen_table_wooden_cabinet_init_region)
    (Close wooden_cabinet_1_top_region)
  )

  (:goal
    (And (Open wooden_cabinet_1_top_region) (On akita_black_bowl_1 wooden_cabinet_1_top_side))
  )

)
"""

MESSY = """\
; same task as CANONICAL, written carelessly
(DEFINE (problem LIBERO_Kitchen_Tabletop_Manipulation) (:requirements)
 (:language   open the top   drawer
      of the cabinet)
 (:objects akita_black_bowl_1 - akita_black_bowl plate_1 - plate plate_2 - plate
    akita_black_bowl_2 - akita_black_bowl)
 (:fixtures kitchen_table - kitchen_table wooden_cabinet_1 - wooden_cabinet)
 (:regions (wooden_cabinet_init_region (:yaw_rotation ((3.141592653589793 31.41592653589793e-1)))
     (:ranges ((-1e-2 -0.31 .01 -0.290))) (:target kitchen_table))
   (akita_black_bowl_init_region (:target kitchen_table) (:RGBA (0.0 0 1.0 0))
     (:ranges ((-0.025 -0.025 0.025 0.025) (0.1 0.2 0.15 0.25))))
   (top_side (:target wooden_cabinet_1)))
 (:obj_of_interest wooden_cabinet_1 akita_black_bowl_1)
 (:goal (and (OPEN wooden_cabinet_1_top_region) (on akita_black_bowl_1 wooden_cabinet_1_top_side)))
 (:init (on akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)
        (on wooden_cabinet_1 kitchen_table_wooden_cabinet_init_region) (close wooden_cabinet_1_top_region))
 (:domain ROBOSUITE))
"""


def test_canonical_file_is_written_back_byte_for_byte():
    assert write_string(parse_string(CANONICAL)) == CANONICAL


def test_messy_file_is_written_in_canonical_layout():
    messy = parse_string(MESSY)
    assert messy == parse_string(CANONICAL)
    assert write_string(messy) == CANONICAL


def test_round_trip_of_every_construct():
    spec = TaskSpec(
        problem_class="LIBERO_Living_Room_Tabletop_Manipulation",
        language="put both mugs, the red one first, on the plate: then lift it!",
        regions={
            "living_room_table_mug_region": Region(
                "mug_region", "living_room_table",
                ranges=[(-0.1, -0.2, 0.0, 0.1), (0.3, 0.3, 0.35, 0.4)],
                yaw_rotation=[(-3.14, 3.14), (0.0, 0.0)],
                rgba=(0.25, 0.5, 0.75, 1.0),
            ),
            "basket_1_contain_region": Region("contain_region", "basket_1"),
        },
        fixtures={"living_room_table": "living_room_table"},
        objects={"red_coffee_mug_1": "red_coffee_mug", "porcelain_mug_1": "porcelain_mug", "plate_1": "plate",
                 "basket_1": "basket"},
        obj_of_interest=["red_coffee_mug_1", "plate_1"],
        init=[Predicate("on", ("red_coffee_mug_1", "living_room_table_mug_region")),
              Predicate("turnoff", ("basket_1",))],
        goal=And([
            Or([Predicate("on", ("red_coffee_mug_1", "plate_1")),
                Predicate("in", ("red_coffee_mug_1", "basket_1_contain_region"))]),
            Not(And([Predicate("up", ("plate_1",)), Not(Predicate("turnon", ("basket_1",)))])),
            And([]),
        ]),
    )
    text = write_string(spec)
    back = parse_string(text)
    assert back == spec
    assert write_string(back) == text
    assert "(And (Or (On red_coffee_mug_1 plate_1) (In red_coffee_mug_1 basket_1_contain_region)) " \
           "(Not (And (Up plate_1) (Not (TurnOn basket_1)))) (And))" in text
    assert "    red_coffee_mug_1 - red_coffee_mug\n    porcelain_mug_1 - porcelain_mug\n" in text


def test_lone_goal_is_written_inside_and():
    spec = TaskSpec("LIBERO_Floor_Manipulation", "lift it", {}, {}, {"milk_1": "milk"}, [], [],
                    Predicate("up", ("milk_1",)))
    assert spec.goal == And([Predicate("up", ("milk_1",))])
    text = write_string(spec)
    assert "    (And (Up milk_1))\n" in text
    assert parse_string(text) == spec


def test_empty_spec_round_trips():
    spec = TaskSpec("LIBERO_Floor_Manipulation", "", {}, {}, {}, [], [], And([]))
    text = write_string(spec)
    assert "  (:language)\n" in text
    assert parse_string(text) == spec


def test_floats_round_trip_exactly():
    rng = random.Random(1234)
    specials = [0.1 + 0.2, 1e-300, -0.0, 5e-324, 1e20, 123456789.123456789, -2.5, 1.0, 3.0e16, 2.0 ** 60]
    values = specials + [rng.uniform(-10, 10) for _ in range(200)]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-20, 20) for _ in range(200)]
    ranges = [tuple(values[i:i + 4]) for i in range(0, len(values) - 3, 4)]
    spec = TaskSpec("LIBERO_Tabletop_Manipulation", "x", {"main_table_r": Region("r", "main_table", ranges)},
                    {"main_table": "table"}, {}, [], [], And([]))
    back = parse_string(write_string(spec))
    got = back.regions["main_table_r"].ranges
    assert got == ranges
    assert [repr(v) for r in got for v in r] == [repr(float(v)) for r in ranges for v in r]  # keeps -0.0 too


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(language="put it; then stop"), "';' starts a comment"),
        # LIBERO's reader keeps a parenthesised part as a nested list, and " ".join() of it fails.
        (dict(language="put it (there"), "LIBERO's reader cannot read parentheses in :language"),
        (dict(language="put it) (there"), "LIBERO's reader cannot read parentheses in :language"),
        (dict(language="put the bowl (the black one) on the plate"),
         r"cannot write the instruction 'put the bowl \(the black one\) on the plate': LIBERO's reader cannot read "
         r"parentheses in :language; write it without them"),
        (dict(language="put  it"), "whitespace-normalised"),
        (dict(problem_class="has space"), "problem class"),
        (dict(objects={"Bowl": "bowl"}), "instance 'Bowl'"),
        (dict(objects={"bowl_1": "black bowl"}), "category 'black bowl'"),
        (dict(init=[Predicate("near", ("a", "b"))]), "unknown predicate"),
        (dict(init=[Predicate("on", ("a",))]), "takes 2 arguments"),
        (dict(goal=And([Or([])])), "empty Or"),
        (dict(regions={"t_r": Region("r", "t", [(0.0, 0.0, float("nan"), 1.0)])}), "finite"),
        (dict(regions={"t_r": Region("r", "t", [(0.0, 0.0, 1.0)])}), "needs 4 numbers"),
        (dict(regions={"wrong_key": Region("r", "t")}), "must agree"),
    ],
)
def test_writer_refuses_what_a_file_cannot_hold(change, words):
    base = dict(problem_class="LIBERO_Tabletop_Manipulation", language="go", regions={}, fixtures={},
                objects={}, obj_of_interest=[], init=[], goal=And([]))
    base.update(change)
    with pytest.raises(LiberoError, match=words):
        write_string(TaskSpec(**base))


def test_write_file_is_atomic_and_readable(tmp_path):
    spec = parse_string(CANONICAL)
    path = tmp_path / "task.bddl"
    write_file(spec, path)
    assert path.read_text(encoding="utf-8") == CANONICAL
    assert parse_file(path) == spec
    assert os.listdir(tmp_path) == ["task.bddl"]
    assert os.stat(path).st_mode & 0o777 == 0o644


def test_write_file_failure_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "task.bddl"
    path.write_text("old content", encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        write_file(parse_string(CANONICAL), path)
    assert path.read_text(encoding="utf-8") == "old content"
    assert os.listdir(tmp_path) == ["task.bddl"]


def test_write_file_does_not_touch_disk_for_an_unwritable_spec(tmp_path):
    spec = parse_string(CANONICAL)
    spec.language = "bad; language"
    with pytest.raises(LiberoError):
        write_file(spec, tmp_path / "task.bddl")
    assert os.listdir(tmp_path) == []


def test_no_shipped_instruction_holds_parentheses():
    # The writer refuses them; every shipped task must still be written back as it is.
    from pathlib import Path

    files = sorted((Path(__file__).resolve().parents[2] / "bddl_tasks").rglob("*.bddl"))
    assert len(files) >= 130
    for path in files:
        spec = parse_file(path)
        assert "(" not in spec.language and ")" not in spec.language, path
        assert parse_string(write_string(spec)) == spec
