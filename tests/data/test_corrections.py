"""Displaced-object corrections: the object moved, the images redrawn, the labels the expert's rule."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def made(reference_demos, tmp_path_factory):
    """The corrections of the reference bowl demos (copied, so the shared file's folder stays as it is)."""
    import shutil

    from libero_ll.data.corrections import CorrectionSettings, make_corrections

    src, _ = reference_demos
    path = tmp_path_factory.mktemp("corr") / src.name
    shutil.copy(src, path)
    settings = CorrectionSettings(per_demo=2, seed=0, demos=2)
    out, fragments, steps = make_corrections(path, settings)
    return path, out, settings, fragments, steps


def _env_for(path):
    from libero_ll.bddl.parser import parse_string
    from libero_ll.data.hdf5 import read_info
    from libero_ll.data.verify import env_config_of
    from libero_ll.envs.env import LiberoEnv

    info = read_info(path)
    return LiberoEnv(parse_string(info.bddl_file_content, "t"), env_config_of(info.env_args, render=True))


def test_pick_events():
    from libero_ll.data.corrections import _pick_events

    grip = np.array([-1, -1, -1, 1, 1, 1, -1, -1, 1, 1, -1], dtype=float)
    actions = np.zeros((len(grip), 7))
    actions[:, 6] = grip
    assert _pick_events(actions) == [(0, 3), (6, 8)]


def test_fragments_move_the_object_and_redraw_it(made):
    """Each fragment shows the demo's states with the grasped object moved sideways by 0.5 to 3 cm (nothing
    else moved), and its images differ from the demo's where the object moved."""
    from libero_ll.data.corrections import MAX_SHIFT, MIN_SHIFT, _pick_events
    from libero_ll.data.hdf5 import axis_angle_to_rot6, read_demos, read_info

    path, out, settings, fragments, steps = made
    demos = read_demos(path)
    frags = read_demos(out)
    assert len(frags) == fragments == 2 * 2  # two demos, one pick each, two displacements
    assert sum(f.num_steps for f in frags) == steps
    info = read_info(out)
    assert info.generator.startswith("displaced-object corrections")
    assert info.stats["per_demo"] == 2 and info.stats["source_demos"] == 2
    env = _env_for(path)
    try:
        obj_adr = list(env._joint_qpos.values())
        for k, frag in enumerate(frags):
            demo = demos[k // 2]
            start, close = _pick_events(demo.actions)[0]
            assert frag.num_steps <= close - start
            sim = np.asarray(env.scene.sim.get_state().flatten()).shape[0]
            shifts = []
            for t in range(frag.num_steps):
                d = frag.states[t][:sim] - demo.states[start + t][:sim]
                # qpos follows time (index 0): one loose object's x and y differ, nothing else.
                moved = [a for a in obj_adr if np.abs(d[1 + a: 3 + a]).max() > 1e-9]
                assert len(moved) == 1
                a = moved[0]
                rest = np.delete(d, [1 + a, 2 + a])
                assert np.abs(rest).max() < 1e-12
                shifts.append(d[1 + a: 3 + a])
            shifts = np.array(shifts)
            assert np.allclose(shifts, shifts[0])  # one displacement for the whole fragment
            assert MIN_SHIFT - 1e-9 <= np.linalg.norm(shifts[0]) <= MAX_SHIFT + 1e-9
            for key in ("agentview_rgb", "eye_in_hand_rgb"):
                changed = [np.any(frag.obs[key][t] != demo.obs[key][start + t]) for t in range(frag.num_steps)]
                assert np.mean(changed) > 0.5, key
            # The hand and fingers are the demo's (a step's observation is computed within MuJoCo's last
            # substep, a fraction of a millimetre before the state it is stored with; these from the state).
            same = slice(start, start + frag.num_steps)
            assert np.allclose(frag.obs["gripper_states"], demo.obs["gripper_states"][same], atol=3e-3)
            assert np.allclose(frag.obs["ee_states"][:, :3], demo.obs["ee_states"][same, :3], atol=3e-3)
            # The orientation in its continuous code: near a half turn the axis-angle form flips sign between
            # the two.
            assert np.allclose(axis_angle_to_rot6(frag.obs["ee_states"][:, 3:]),
                               axis_angle_to_rot6(demo.obs["ee_states"][same, 3:]), atol=1e-2)
    finally:
        env.close()


def test_labels_follow_the_moved_object(made):
    """At the approach height the label heads for the point above the moved grasp; lower down it heads for
    the moved grasp point, sideways and down at once; no fragment step has the open hand below the
    object's top while off to the side."""
    from libero_ll.assets.categories import get_model
    from libero_ll.data.corrections import ALIGNED, APPROACH_BAND, TOP_MARGIN, _pick_events
    from libero_ll.data.hdf5 import read_demos
    from libero_ll.experts.expert import APPROACH_HEIGHT

    path, out, *_ = made
    demos = read_demos(path, obs_keys=[])
    frags = read_demos(out)
    env = _env_for(path)
    sideways = 0
    try:
        for k, frag in enumerate(frags):
            demo = demos[k // 2]
            _, close = _pick_events(demo.actions)[0]
            env.show_state(demo.states[close])
            grasp = env.robot_proprio()["ee_pos"].copy()
            before = {i: env.geometry.pos(i).copy() for i in env.loose_objects()}
            env.show_state(frag.states[0])
            inst = max(before, key=lambda i: np.linalg.norm(env.geometry.pos(i)[:2] - before[i][:2]))
            before = before[inst]
            env.show_state(frag.states[0])
            d = env.geometry.pos(inst)[:2] - before[:2]
            moved = grasp + np.array([d[0], d[1], 0.0])
            half_z = get_model(env.spec.instances()[inst]).half_size[2]
            for t in range(frag.num_steps):
                env.show_state(frag.states[t])
                hand = env.robot_proprio()["ee_pos"]
                a = frag.actions[t]
                assert a[6] == -1.0
                off = moved[:2] - hand[:2]
                top = env.geometry.pos(inst)[2] + half_z
                if hand[2] < top + TOP_MARGIN:
                    assert np.linalg.norm(off) <= ALIGNED
                if hand[2] < moved[2] + APPROACH_HEIGHT - APPROACH_BAND and np.linalg.norm(off) > ALIGNED:
                    assert a[2] < 0  # down toward the moved grasp point while moving over it
                    assert float(a[:2] @ off) > 0
                    sideways += 1
                if np.linalg.norm(off) > 0.01:
                    assert float(a[:2] @ off) > 0  # toward the moved object, never away
    finally:
        env.close()
    assert sideways > 0


def test_current_settings_and_remaking(made, tmp_path):
    """A file made with other settings (or from another number of demos) is made again; a current one is kept."""
    import shutil

    from libero_ll.data.corrections import CorrectionSettings, corrections_path, ensure_corrections, is_current

    path, out, settings, fragments, _ = made
    assert out == corrections_path(path) and is_current(path, settings)
    assert not is_current(path, CorrectionSettings(per_demo=1, seed=0, demos=2))
    assert not is_current(path, CorrectionSettings(per_demo=2, seed=1, demos=2))
    # Asking for more demos than the file holds uses all it holds: the same file.
    assert is_current(path, CorrectionSettings(per_demo=2, seed=0, demos=50))
    local = tmp_path / path.name
    shutil.copy(path, local)
    other = CorrectionSettings(per_demo=1, seed=0, demos=1)
    [result] = ensure_corrections([local], other, workers=1)
    assert result is not None and result[1] == 1 and is_current(local, other)
    assert ensure_corrections([local], other, workers=1) == [None]


def _copy_with(src, path, edit, demos=1):
    """A demo file of the first `demos` demos of `src`, each changed by `edit(demo)` (returns the demo)."""
    from libero_ll.data.hdf5 import DemoWriter, read_demos, read_info

    info = read_info(src)
    with DemoWriter(path, env_name=info.env_name, problem_info=info.problem_info,
                    bddl_file_name=info.bddl_file_name, bddl_file_content=info.bddl_file_content,
                    env_args=info.env_args, generator="test") as w:
        for demo in read_demos(src, max_demos=demos):
            w.add(edit(demo))
    return path


def test_a_file_without_a_grasp_gets_no_corrections_and_is_not_looked_at_again(tmp_path, reference_demos):
    """A task that only opens a drawer or turns a knob has no loose object to move: an empty file, no error."""
    from libero_ll.data.corrections import CorrectionSettings, ensure_corrections, is_current
    from libero_ll.data.hdf5 import Demo, read_info

    def never_close(demo):
        demo.actions[:, 6] = -1.0  # the fingers never close
        return Demo(demo.actions, demo.states, demo.robot_states, demo.obs, demo.init_state)

    bad = _copy_with(reference_demos[0], tmp_path / "open.hdf5", never_close)
    settings = CorrectionSettings(per_demo=1, demos=1)
    [(out, fragments, steps)] = ensure_corrections([bad], settings)
    assert (fragments, steps) == (0, 0) and read_info(out).num_demos == 0
    assert is_current(bad, settings) and ensure_corrections([bad], settings) == [None]


def test_a_file_without_states_is_named(tmp_path, reference_demos):
    """Demos imported from elsewhere may hold no simulator states: named, through the worker process too."""
    from libero_ll.data.corrections import CorrectionSettings, ensure_corrections
    from libero_ll.data.hdf5 import Demo
    from libero_ll.errors import LiberoError

    def no_states(demo):
        T = demo.num_steps
        return Demo(demo.actions, np.zeros((T, 0)), demo.robot_states, demo.obs, np.zeros(0))

    bad = _copy_with(reference_demos[0], tmp_path / "imported.hdf5", no_states)
    with pytest.raises(LiberoError, match=r"imported.hdf5: demo 0 \(counting from 0\) holds no simulator states.*"
                                          r"data.corrections_per_demo=0"):
        ensure_corrections([bad], CorrectionSettings(per_demo=1, demos=1))


def test_corrections_of_demos_collected_again_are_made_again(tmp_path, made):
    """Same settings, other demos (collected again, another image size, a teleop file in their place): the
    corrections of the old demos are not kept."""
    import shutil

    from libero_ll.data.corrections import corrections_path, is_current
    from libero_ll.data.hdf5 import Demo

    path, out, settings, _, _ = made
    local = tmp_path / path.name
    corrections_path(local).parent.mkdir()
    shutil.copy(out, corrections_path(local))

    def shifted(demo):
        demo.actions[:, 0] += 0.01
        return Demo(demo.actions, demo.states, demo.robot_states, demo.obs, demo.init_state)

    _copy_with(path, local, lambda d: d, demos=2)
    assert is_current(local, settings)  # the same demos, written again: still current
    local.unlink()
    _copy_with(path, local, shifted, demos=2)
    assert not is_current(local, settings)
