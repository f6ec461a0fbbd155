"""Task files written the way LIBERO's generator writes them, one for each thing such files do that our
own files never do. Tests write them into a folder; nothing here is a copy of a LIBERO file."""

from __future__ import annotations

from pathlib import Path

# A region of an object the scene does not have (left over by the generator), and the drawer the task
# is about listed among the objects of interest.
DANGLING_REGION = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language open the top drawer of the cabinet)
    (:regions
      (bowl_region
          (:target main_table)
          (:ranges (
              (-0.06 0.05 -0.04 0.07)
            )
          )
      )
      (plate_region
          (:target main_table)
          (:ranges (
              (0.1 0.22 0.12 0.24)
            )
          )
      )
      (cabinet_region
          (:target main_table)
          (:ranges (
              (0.0 -0.3 0.02 -0.28)
            )
          )
          (:yaw_rotation (
              (3.141592653589793 3.141592653589793)
            )
          )
      )
      (top_region
          (:target wooden_cabinet_1)
      )
      (right_region
          (:target bowl_drainer_1)
          (:ranges (
              (-0.01 -0.01 0.01 0.01)
            )
          )
      )
      (left_region
          (:target bowl_drainer_1)
      )
    )

  (:fixtures
    main_table - table
    wooden_cabinet_1 - wooden_cabinet
  )

  (:objects
    akita_black_bowl_1 - akita_black_bowl
    plate_1 - plate
  )

  (:obj_of_interest
    wooden_cabinet_1_top_region
  )

  (:init
    (On akita_black_bowl_1 main_table_bowl_region)
    (On plate_1 main_table_plate_region)
    (On wooden_cabinet_1 main_table_cabinet_region)
  )

  (:goal
    (And (Open wooden_cabinet_1_top_region))
  )

)
"""

# A plate in a region 2 cm wide with a bowl beside it: their centres are 13.4 cm apart, less than
# our plate's and bowl's radii together (16 cm), more than LIBERO's sampler asks for.
TIGHT_PLATE = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language pick up the black bowl next to the plate and place it on the plate)
    (:regions
      (plate_region
          (:target main_table)
          (:ranges (
              (0.04 0.17 0.06 0.19)
            )
          )
      )
      (next_to_plate_region
          (:target main_table)
          (:ranges (
              (-0.02 0.29 0.0 0.31)
            )
          )
      )
      (ramekin_region
          (:target main_table)
          (:ranges (
              (-0.22 0.17 -0.2 0.19)
            )
          )
      )
      (box_region
          (:target main_table)
          (:ranges (
              (0.06 0.0 0.08 0.02)
            )
          )
      )
    )

  (:fixtures
    main_table - table
  )

  (:objects
    akita_black_bowl_1 akita_black_bowl_2 - akita_black_bowl
    cookies_1 - cookies
    plate_1 - plate
    glazed_rim_porcelain_ramekin_1 - glazed_rim_porcelain_ramekin
  )

  (:obj_of_interest
    akita_black_bowl_1
    plate_1
  )

  (:init
    (On akita_black_bowl_1 main_table_next_to_plate_region)
    (On plate_1 main_table_plate_region)
    (On akita_black_bowl_2 glazed_rim_porcelain_ramekin_1)
    (On glazed_rim_porcelain_ramekin_1 main_table_ramekin_region)
    (On cookies_1 main_table_box_region)
  )

  (:goal
    (And (On akita_black_bowl_1 plate_1))
  )

)
"""

# A white bowl in the corner between a cabinet and a stove: clear of both as a circle, but its square
# footprint reaches into both of theirs.
BOWL_BETWEEN_FIXTURES = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the white bowl on the stove)
    (:regions
      (cabinet_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.001 -0.301 0.001 -0.299)
            )
          )
          (:yaw_rotation (
              (3.141592653589793 3.141592653589793)
            )
          )
      )
      (flat_stove_init_region
          (:target kitchen_table)
          (:ranges (
              (0.355 0.125 0.357 0.127)
            )
          )
      )
      (white_bowl_init_region
          (:target kitchen_table)
          (:ranges (
              (0.155 -0.102 0.163 -0.097)
            )
          )
      )
      (plate_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.2 0.2 -0.18 0.22)
            )
          )
      )
      (cook_region
          (:target flat_stove_1)
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    wooden_cabinet_1 - wooden_cabinet
    flat_stove_1 - flat_stove
  )

  (:objects
    white_bowl_1 - white_bowl
    plate_1 - plate
  )

  (:obj_of_interest
    white_bowl_1
    flat_stove_1
  )

  (:init
    (On wooden_cabinet_1 kitchen_table_cabinet_init_region)
    (On flat_stove_1 kitchen_table_flat_stove_init_region)
    (On white_bowl_1 kitchen_table_white_bowl_init_region)
    (On plate_1 kitchen_table_plate_init_region)
  )

  (:goal
    (And (On white_bowl_1 flat_stove_1_cook_region))
  )

)
"""

# Two bowls in 2 cm regions on either side of a plate in a 2 cm region, all three touching as squares.
PLATE_BETWEEN_BOWLS = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the left bowl on the plate)
    (:regions
      (plate_region
          (:target main_table)
          (:ranges (
              (0.0 -0.01 0.02 0.01)
            )
          )
      )
      (left_bowl_region
          (:target main_table)
          (:ranges (
              (-0.01 -0.14 0.01 -0.12)
            )
          )
      )
      (right_bowl_region
          (:target main_table)
          (:ranges (
              (0.09 0.12 0.11 0.14)
            )
          )
      )
    )

  (:fixtures
    main_table - table
  )

  (:objects
    akita_black_bowl_1 - akita_black_bowl
    white_bowl_1 - white_bowl
    plate_1 - plate
  )

  (:obj_of_interest
    akita_black_bowl_1
    plate_1
  )

  (:init
    (On plate_1 main_table_plate_region)
    (On akita_black_bowl_1 main_table_left_bowl_region)
    (On white_bowl_1 main_table_right_bowl_region)
  )

  (:goal
    (And (On akita_black_bowl_1 plate_1))
  )

)
"""

FILES = {
    "open_the_top_drawer_of_the_cabinet": DANGLING_REGION,
    "pick_up_the_black_bowl_next_to_the_plate": TIGHT_PLATE,
    "put_the_white_bowl_on_the_stove": BOWL_BETWEEN_FIXTURES,
    "put_the_left_bowl_on_the_plate": PLATE_BETWEEN_BOWLS,
}
# Which of them need placement's fallback for regions too tight for our footprints.
TIGHT = {
    "pick_up_the_black_bowl_next_to_the_plate",
    "put_the_white_bowl_on_the_stove",
    "put_the_left_bowl_on_the_plate",
}
# Which of them turn a fixture's front away from the robot as our models face (a stove given no yaw).
FACING_AWAY = {"put_the_white_bowl_on_the_stove"}

# A kitchen laid out for LIBERO's models: its cabinet opens towards -y of its frame (yaw 0 puts the drawers
# towards the table's middle from its left), its stove has the knob at the -x end (no yaw: towards the
# robot) and its shelf opens towards -y (yaw pi: the middle, from the right). Our models face +x, so loaded as
# it is the cabinet's drawers face away from the robot and our shelf, long where LIBERO's is deep, stands in
# the frying pan; `libero-ll convert-tasks` turns them (libero_ll/tasks/libero_files.py).
FACING = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language turn on the stove)
    (:regions
      (white_cabinet_init_region
          (:target kitchen_table)
          (:ranges (
              (0.14 0.31 0.16 0.33)
            )
          )
          (:yaw_rotation (
              (0.0 0.0)
            )
          )
      )
      (flat_stove_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.21 0.29 -0.19 0.31)
            )
          )
      )
      (shelf_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.01 -0.26 0.01 -0.24)
            )
          )
          (:yaw_rotation (
              (3.141592653589793 3.141592653589793)
            )
          )
      )
      (frypan_init_region
          (:target kitchen_table)
          (:ranges (
              (0.03 -0.02 0.07 0.02)
            )
          )
          (:yaw_rotation (
              (0.0 0.0)
            )
          )
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    white_cabinet_1 - white_cabinet
    flat_stove_1 - flat_stove
    wooden_two_layer_shelf_1 - wooden_two_layer_shelf
  )

  (:objects
    chefmate_8_frypan_1 - chefmate_8_frypan
  )

  (:obj_of_interest
    flat_stove_1
  )

  (:init
    (On white_cabinet_1 kitchen_table_white_cabinet_init_region)
    (On flat_stove_1 kitchen_table_flat_stove_init_region)
    (On wooden_two_layer_shelf_1 kitchen_table_shelf_init_region)
    (On chefmate_8_frypan_1 kitchen_table_frypan_init_region)
  )

  (:goal
    (And (Turnon flat_stove_1))
  )

)
"""

# LIBERO's microwave (yaw 0: its door on the -y side of its frame, towards the table's middle from the left) stands
# open, its door swung out towards the robot beside a mug: the layout of LIBERO-90's KITCHEN_SCENE6.
MICROWAVE_OPEN = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the yellow and white mug to the front of the white mug)
    (:regions
      (microwave_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.01 0.34 0.01 0.36)
            )
          )
          (:yaw_rotation (
              (0 0)
            )
          )
      )
      (white_yellow_mug_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.025 -0.025 0.025 0.025)
            )
          )
      )
      (porcelain_mug_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.125 -0.275 -0.075 -0.225)
            )
          )
      )
      (porcelain_mug_front_region
          (:target kitchen_table)
          (:ranges (
              (-0.05 -0.3 0.05 -0.2)
            )
          )
      )
      (heating_region
          (:target microwave_1)
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    microwave_1 - microwave
  )

  (:objects
    porcelain_mug_1 - porcelain_mug
    white_yellow_mug_1 - white_yellow_mug
  )

  (:obj_of_interest
    white_yellow_mug_1
  )

  (:init
    (On porcelain_mug_1 kitchen_table_porcelain_mug_init_region)
    (On white_yellow_mug_1 kitchen_table_white_yellow_mug_init_region)
    (On microwave_1 kitchen_table_microwave_init_region)
    (Open microwave_1)
  )

  (:goal
    (And (On white_yellow_mug_1 kitchen_table_porcelain_mug_front_region))
  )

)
"""

# LIBERO's two-layer shelf (yaw 0: open towards -y of its frame) on the left of a study table, its open face
# beside the robot, and a book standing in front of the robot: LIBERO-90's STUDY_SCENE4.
SHELF_BESIDE = """\
(define (problem LIBERO_Study_Tabletop_Manipulation)
  (:domain robosuite)
  (:language pick up the book and place it on the cabinet shelf)
    (:regions
      (yellow_book_init_region
          (:target study_table)
          (:ranges (
              (-0.01 -0.01 0.01 0.01)
            )
          )
          (:yaw_rotation (
              (0.0 0.0)
            )
          )
      )
      (wooden_two_layer_shelf_init_region
          (:target study_table)
          (:ranges (
              (-0.01 0.27 0.01 0.29)
            )
          )
          (:yaw_rotation (
              (0 0)
            )
          )
      )
      (top_region
          (:target wooden_two_layer_shelf_1)
      )
    )

  (:fixtures
    study_table - study_table
    wooden_two_layer_shelf_1 - wooden_two_layer_shelf
  )

  (:objects
    yellow_book_1 - yellow_book
  )

  (:obj_of_interest
    yellow_book_1
  )

  (:init
    (On wooden_two_layer_shelf_1 study_table_wooden_two_layer_shelf_init_region)
    (On yellow_book_1 study_table_yellow_book_init_region)
  )

  (:goal
    (And (In yellow_book_1 wooden_two_layer_shelf_1_top_region))
  )

)
"""


# LIBERO's white cabinet (yaw 0: drawers on the -y side of its frame) on the right of a kitchen table, its bottom
# drawer open towards the table's middle, a bowl in front of it and a wine bottle beside: LIBERO-10's
# KITCHEN_SCENE4 (the bowl's and the bottle's regions narrowed to 2 cm).
BOTTOM_DRAWER = """\
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the black bowl in the bottom drawer of the cabinet and close it)
    (:regions
      (white_cabinet_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.01 0.29 0.01 0.31)
            )
          )
          (:yaw_rotation (
              (0.0 0.0)
            )
          )
      )
      (akita_black_bowl_init_region
          (:target kitchen_table)
          (:ranges (
              (0.04 -0.06 0.06 -0.04)
            )
          )
      )
      (wine_bottle_init_region
          (:target kitchen_table)
          (:ranges (
              (-0.14 0.02 -0.12 0.04)
            )
          )
      )
      (bottom_region
          (:target white_cabinet_1)
      )
    )

  (:fixtures
    kitchen_table - kitchen_table
    white_cabinet_1 - white_cabinet
  )

  (:objects
    akita_black_bowl_1 - akita_black_bowl
    wine_bottle_1 - wine_bottle
  )

  (:obj_of_interest
    akita_black_bowl_1
    white_cabinet_1
  )

  (:init
    (On akita_black_bowl_1 kitchen_table_akita_black_bowl_init_region)
    (On wine_bottle_1 kitchen_table_wine_bottle_init_region)
    (On white_cabinet_1 kitchen_table_white_cabinet_init_region)
    (Open white_cabinet_1_bottom_region)
  )

  (:goal
    (And (Close white_cabinet_1_bottom_region) (In akita_black_bowl_1 white_cabinet_1_bottom_region))
  )

)
"""


def write_folder(folder: Path) -> list[Path]:
    """Write every file into `folder` as <name>.bddl; returns their paths in name order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in sorted(FILES.items()):
        path = folder / f"{name}.bddl"
        path.write_text(text)
        paths.append(path)
    return paths

# LIBERO's wooden cabinet on the plain table, turned (yaw pi) so that its drawers open towards the table's middle
# from the right, with a wine bottle (24 cm tall) 20 cm to the robot's side of it: the layout of LIBERO-Goal's
# "open the middle drawer of the cabinet".
MIDDLE_DRAWER_BESIDE_BOTTLE = """\
(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language open the middle drawer of the cabinet)
    (:regions
      (wine_bottle_region
          (:target main_table)
          (:ranges (
              (-0.21 -0.06 -0.19 -0.04)
            )
          )
      )
      (cabinet_region
          (:target main_table)
          (:ranges (
              (0.02 -0.25 0.04 -0.23)
            )
          )
          (:yaw_rotation (
              (3.141592653589793 3.141592653589793)
            )
          )
      )
      (middle_region
          (:target wooden_cabinet_1)
      )
    )

  (:fixtures
    main_table - table
    wooden_cabinet_1 - wooden_cabinet
  )

  (:objects
    wine_bottle_1 - wine_bottle
  )

  (:obj_of_interest
    wooden_cabinet_1
  )

  (:init
    (On wine_bottle_1 main_table_wine_bottle_region)
    (On wooden_cabinet_1 main_table_cabinet_region)
  )

  (:goal
    (And (Open wooden_cabinet_1_middle_region))
  )

)
"""
