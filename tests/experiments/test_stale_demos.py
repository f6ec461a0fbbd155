"""A run names the scripted expert's demo files that an older expert or another version of the task file made,
and demo files rendered otherwise than it renders."""

import numpy as np
import pytest

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


def _look_config(folder, **env):
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "data": {"dir": str(folder), "demos_per_task": 2, "collect_seed": 0, "expert_max_steps": 300},
        "env": {"image_size": 8, "robot_mesh": "collision", "shadows": False, "reflections": False, **env},
    })


def _write_with_env_args(path, env_args, generator=EXPERT_VERSION):
    rng = np.random.default_rng(0)
    demo = Demo(actions=rng.uniform(-1, 1, (3, 7)), states=rng.normal(size=(3, 4)),
                robot_states=rng.normal(size=(3, 9)), obs={"agentview_rgb": np.zeros((3, 8, 8, 3), np.uint8)},
                init_state=rng.normal(size=4), model_file="<mujoco/>", seed=0)
    with DemoWriter(path, env_name="toy", problem_info={}, bddl_file_name="toy.bddl", bddl_file_content=TASK_TEXT,
                    env_args=env_args, generator=generator) as w:
        w.add(demo)


def test_demos_rendered_otherwise_than_the_run_are_named(tmp_path):
    # A run never compared how its demo files were rendered with how it renders (only the image size).
    from libero_ll.experiments.lifelong import demo_look_notes

    task = tmp_path / "toy.bddl"
    task.write_text(TASK_TEXT)
    kwargs = {"image_size": 8, "robot_mesh": "visual", "shadows": False, "reflections": False, "controller": "lean"}
    _write_with_env_args(tmp_path / "toy.hdf5", {"env_name": "toy", "env_kwargs": kwargs})
    [note] = demo_look_notes(_look_config(tmp_path), [task])
    assert note.startswith(f"note: {tmp_path / 'toy.hdf5'} was rendered with robot_mesh visual but the run "
                           "renders with env.robot_mesh=collision")
    assert "set env.robot_mesh=visual" in note and "libero-ll collect --task" in note
    assert "--robot-mesh collision" in note
    assert demo_look_notes(_look_config(tmp_path, robot_mesh="visual"), [task]) == []
    [note] = demo_look_notes(_look_config(tmp_path, robot_mesh="visual", shadows=True), [task])
    assert "rendered with shadows false but the run renders with env.shadows=true" in note
    assert "set env.shadows=false" in note
    # Teleoperated files: remade with the setting, never collected over.
    _write_with_env_args(tmp_path / "toy.hdf5", {"env_name": "toy", "env_kwargs": kwargs}, "teleoperation")
    [note] = demo_look_notes(_look_config(tmp_path), [task])
    assert "make the file again with --robot-mesh collision" in note and "libero-ll collect" not in note
    # Files that do not record these settings (LIBERO's own, LeRobot imports) get no note.
    for env_args in ({}, {"env_name": "x", "env_kwargs": {"camera_heights": 128, "has_renderer": False}},
                     {"control_freq": 20, "source": "somewhere"}):
        _write_with_env_args(tmp_path / "toy.hdf5", env_args, "teleoperation")
        assert demo_look_notes(_look_config(tmp_path), [task]) == []


def test_a_run_notes_demos_rendered_with_another_robot_mesh(smoke_data, smoke_envs, make_smoke_config, tmp_path):
    # The smoke preset's demos are rendered with the collision hulls; a run drawing the visual meshes says so.
    from libero_ll.experiments.lifelong import run_lifelong

    class Noted(Exception):
        pass

    cfg = make_smoke_config(tmp_path, smoke_data, "env.robot_mesh=visual", "language_encoder=task_id")

    def log(line):
        if line.startswith("note: ") and "robot_mesh" in line:
            raise Noted(line)

    with pytest.raises(Noted, match=r"was rendered with robot_mesh collision but the run renders with "
                                    r"env.robot_mesh=visual.*set env.robot_mesh=collision"):
        run_lifelong(cfg, log=log, envs=smoke_envs)


def test_demos_recorded_at_another_control_rate_are_named(tmp_path):
    # A 10 Hz dataset imported from LeRobot trained a 20 Hz policy without a word at training time.
    from libero_ll.experiments.lifelong import demo_rate_notes

    task = tmp_path / "toy.bddl"
    task.write_text(TASK_TEXT)
    _write_with_env_args(tmp_path / "toy.hdf5", {"control_freq": 10, "source": "somewhere"}, "lerobot-import")
    [note] = demo_rate_notes(_look_config(tmp_path), [task], 20)
    assert note == (f"note: {tmp_path / 'toy.hdf5'} was recorded at 10 steps per second but the run's policy acts "
                    "20 times a second: its delta actions move the hand about 2 times as fast as in the demos")
    # Ours record it in env_kwargs; the same rate, or none recorded, gets no note.
    for env_args in ({"control_freq": 20}, {"env_name": "toy", "env_kwargs": {"control_freq": 20}}, {}):
        _write_with_env_args(tmp_path / "toy.hdf5", env_args)
        assert demo_rate_notes(_look_config(tmp_path), [task], 20) == []
    _write_with_env_args(tmp_path / "toy.hdf5", {"env_name": "toy", "env_kwargs": {"control_freq": 40}})
    [note] = demo_rate_notes(_look_config(tmp_path), [task], 20)
    assert "recorded at 40 steps per second" in note and "about 0.5 times as fast" in note
