"""A run names the scripted expert's demo files that an older expert or another version of the task file made."""

import numpy as np

from libero_ll.data.hdf5 import Demo, DemoWriter
from libero_ll.experiments.lifelong import stale_demo_notes
from libero_ll.experts.expert import EXPERT_VERSION

TASK_TEXT = """(define (problem toy)
  (:domain robosuite)
  (:language put the soup in the basket)
  (:regions (soup_init_region (:target main_table) (:ranges ((-0.2 0.09 -0.18 0.11)))))
)
"""


def write_demos(path, task_text, generator):
    rng = np.random.default_rng(0)
    demo = Demo(
        actions=rng.uniform(-1, 1, (3, 7)),
        states=rng.normal(size=(3, 4)),
        robot_states=rng.normal(size=(3, 9)),
        obs={"agentview_rgb": np.zeros((3, 8, 8, 3), np.uint8)},
        init_state=rng.normal(size=4),
        model_file="<mujoco/>",
        seed=0,
    )
    with DemoWriter(path, env_name="LiberoEnv", problem_info={}, bddl_file_name="toy.bddl",
                    bddl_file_content=task_text, env_args={}, generator=generator) as w:
        w.add(demo)


def test_current_demos_get_no_note(tmp_path):
    task = tmp_path / "toy.bddl"
    task.write_text(TASK_TEXT)
    # Whitespace alone does not make a task file another version.
    write_demos(tmp_path / "toy.hdf5", TASK_TEXT.replace("  ", "    "), EXPERT_VERSION)
    assert stale_demo_notes(tmp_path, [task]) == []


def test_a_changed_task_file_is_named(tmp_path):
    task = tmp_path / "toy.bddl"
    write_demos(tmp_path / "toy.hdf5", TASK_TEXT, EXPERT_VERSION)
    task.write_text(TASK_TEXT.replace("-0.2 0.09 -0.18 0.11", "-0.22 0.075 -0.17 0.125"))
    notes = stale_demo_notes(tmp_path, [task])
    assert len(notes) == 1
    assert str(tmp_path / "toy.hdf5") in notes[0] and str(task) in notes[0]
    assert "task files differ" in notes[0]
    # The file is only named, never removed.
    assert (tmp_path / "toy.hdf5").exists()


def test_an_older_expert_is_named_and_other_makers_are_not(tmp_path):
    task = tmp_path / "toy.bddl"
    task.write_text(TASK_TEXT)
    write_demos(tmp_path / "toy.hdf5", TASK_TEXT, "scripted-expert 0.1")
    notes = stale_demo_notes(tmp_path, [task])
    assert len(notes) == 1 and "scripted-expert 0.1" in notes[0] and EXPERT_VERSION in notes[0]

    # Teleoperated or imported demos hold another file's text and are taken as they are.
    write_demos(tmp_path / "toy.hdf5", "(define (problem other))", "teleoperation")
    assert stale_demo_notes(tmp_path, [task]) == []
