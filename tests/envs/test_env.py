"""The simulated quickstart scene: observations, upright images, placement, predicates, state replay."""

from __future__ import annotations

import numpy as np
import pytest

from libero_ll.envs import thresholds as th
from libero_ll.errors import LiberoError


def test_observation_keys_shapes(soup_env):
    obs = soup_env.reset(seed=0)
    assert obs["agentview_rgb"].shape == (64, 64, 3) and obs["agentview_rgb"].dtype == np.uint8
    assert obs["eye_in_hand_rgb"].shape == (64, 64, 3)
    assert obs["joint_states"].shape == (7,)
    assert obs["gripper_states"].shape == (2,)
    assert obs["ee_states"].shape == (6,)
    assert obs["ee_pos"].shape == (3,) and obs["ee_pos"].dtype == np.float32
    np.testing.assert_allclose(obs["ee_pos"], obs["ee_states"][:3])
    # The continuous orientation code is the one a file's ee_states gives.
    from libero_ll.data.hdf5 import axis_angle_to_rot6

    assert obs["ee_rot6"].shape == (6,)
    np.testing.assert_allclose(obs["ee_rot6"], axis_angle_to_rot6(obs["ee_states"][None, 3:])[0], atol=1e-5)
    assert soup_env.robot_state().shape == (9,)


def test_init_predicates_hold_and_goal_false(soup_env):
    for seed in range(3):
        soup_env.reset(seed=seed)
        assert all(v for _, v in soup_env.predicate_values(soup_env.spec.init))
        assert not soup_env.check_goal()


def test_same_seed_same_state_different_seed_differs(soup_env):
    soup_env.reset(seed=3)
    a = soup_env.get_state()
    soup_env.reset(seed=3)
    b = soup_env.get_state()
    soup_env.reset(seed=4)
    c = soup_env.get_state()
    np.testing.assert_allclose(a, b)
    assert np.abs(a - c).max() > 1e-3


def test_images_upright_and_change_with_scene(soup_env):
    """A bright block lifted high must appear in the upper half of the agentview image, and images follow the scene."""
    soup_env.reset(seed=0)
    before = soup_env.render("agentview", 64).astype(int)
    adr = soup_env._joint_qpos["alphabet_soup_1"]
    import mujoco

    # Raise the can high above the table in front of the camera: it must show up in the top rows.
    soup_env.data.qpos[adr : adr + 3] = [0.1, 0.0, 1.45]
    mujoco.mj_forward(soup_env.model, soup_env.data)
    after = soup_env.render("agentview", 64).astype(int)
    diff = np.abs(after - before).sum(axis=2)
    assert diff.max() > 60, "rendered image did not change when the scene did"
    rows = np.nonzero(diff.max(axis=1) > 60)[0]
    soup_env.data.qpos[adr : adr + 3] = [0.1, 0.0, 0.85]
    mujoco.mj_forward(soup_env.model, soup_env.data)
    low = np.abs(soup_env.render("agentview", 64).astype(int) - before).sum(axis=2)
    low_rows = np.nonzero(low.max(axis=1) > 60)[0]
    # Higher in the world is higher in the picture: row 0 is the top.
    assert rows.mean() < low_rows.mean()


def test_state_round_trip(soup_env):
    soup_env.reset(seed=1)
    for _ in range(3):
        soup_env.step(np.array([0.3, 0, 0, 0, 0, 0, -1]))
    s = soup_env.get_state()
    o1, _, _ = soup_env.step(np.array([0.2, 0.1, 0, 0, 0, 0, 1]))
    soup_env.reset_to(s)
    np.testing.assert_allclose(soup_env.get_state()[1:], s[1:], atol=1e-9)
    with pytest.raises(LiberoError, match="state has"):
        soup_env.reset_to(s[:-1])


def test_in_predicate_thresholds(soup_env):
    import mujoco

    soup_env.reset(seed=0)
    g = soup_env.geometry
    region = g.site_region("basket_1_contain_region")
    adr = soup_env._joint_qpos["alphabet_soup_1"]
    can_half = 0.05
    # Rest the can on the basket floor at the region centre: inside and touching.
    floor = region.center[2] - region.half[2]
    soup_env.data.qpos[adr : adr + 7] = [*region.center[:2], floor + can_half - 0.004, 1, 0, 0, 0]
    soup_env.data.qvel[:] = 0
    for _ in range(30):
        mujoco.mj_step(soup_env.model, soup_env.data)
    assert g.inside("alphabet_soup_1", "basket_1_contain_region")
    # The same can just outside the box horizontally (beyond the tolerance) is not In.
    pos = g.pos("alphabet_soup_1")
    soup_env.data.qpos[adr : adr + 3] = [pos[0] + region.half[0] + th.IN_TOLERANCE + 0.01, pos[1], pos[2]]
    mujoco.mj_forward(soup_env.model, soup_env.data)
    assert not g.inside("alphabet_soup_1", "basket_1_contain_region")


def test_on_object_thresholds(soup_env):
    import mujoco

    soup_env.reset(seed=0)
    g = soup_env.geometry
    plate = g.pos("plate_1")
    adr = soup_env._joint_qpos["cream_cheese_1"]

    def put(dx):
        # Drop the box from just above the plate and let it come to rest.
        soup_env.data.qpos[adr : adr + 7] = [plate[0] + dx, plate[1], plate[2] + 0.035, 1, 0, 0, 0]
        soup_env.data.qvel[:] = 0
        mujoco.mj_forward(soup_env.model, soup_env.data)
        for _ in range(10):
            soup_env.scene.step(np.zeros(7))

    put(th.ON_XY_TOLERANCE - 0.005)
    assert g.on("cream_cheese_1", "plate_1")
    put(th.ON_XY_TOLERANCE + 0.005)
    assert not g.on("cream_cheese_1", "plate_1")


def test_unknown_category_is_named(tmp_path, bowl_task):
    from libero_ll.envs.env import load_task

    text = bowl_task.read_text().replace("plate_1 - plate", "plate_1 - flying_saucer")
    bad = tmp_path / "bad.bddl"
    bad.write_text(text)
    with pytest.raises(LiberoError, match="flying_saucer"):
        load_task(bad)


def test_up_threshold(soup_env):
    import mujoco

    soup_env.reset(seed=0)
    g = soup_env.geometry
    adr = soup_env._joint_qpos["alphabet_soup_1"]
    start = soup_env.data.qpos[adr + 2]
    for dz, expected in [(th.UP_HEIGHT - 0.01, False), (th.UP_HEIGHT + 0.01, True)]:
        soup_env.data.qpos[adr + 2] = start + dz
        mujoco.mj_forward(soup_env.model, soup_env.data)
        assert g.up("alphabet_soup_1") is expected


def test_an_action_with_nan_is_refused_and_infinity_is_clipped(soup_env):
    soup_env.reset(seed=0)
    action = np.zeros(7)
    action[3] = np.nan
    with pytest.raises(LiberoError, match=r"an action holds NaN at step 0: \[0.0, 0.0, 0.0, nan"):
        soup_env.step(action)
    assert soup_env.steps == 0 and np.isfinite(soup_env.data.qpos).all()
    action[3] = np.inf
    soup_env.step(action)
    assert soup_env.steps == 1 and np.isfinite(soup_env.data.qpos).all()


@pytest.mark.parametrize("key, value", [("image_size", 0), ("max_steps", -1), ("control_freq", 2.5),
                                        ("settle_steps", True)])
def test_env_settings_out_of_range_are_named(bowl_task, key, value):
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    with pytest.raises(LiberoError, match=rf"EnvConfig.{key} must be a whole number of at least [01], not {value!r}"):
        LiberoEnv(bowl_task, EnvConfig(**{key: value}))


def test_ctrl_c_while_the_simulator_closes_comes_once_it_is_closed(bowl_task):
    # A Ctrl-C in the middle of robosuite's freeing left a half-freed simulator whose later collection printed
    # tracebacks (`MjSim.free`, `_render_context_offscreen`); it is now raised when the close is done.
    import signal

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(bowl_task, EnvConfig(render=False))
    real, closed = env.scene.close, []

    def close_with_ctrl_c():
        signal.raise_signal(signal.SIGINT)  # Python runs its handler before the next line
        real()
        closed.append(True)

    env.scene.close = close_with_ctrl_c
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        env.close()
    assert closed == [True] and env.scene.sim is None  # freed wholly before the interrupt
    assert signal.getsignal(signal.SIGINT) is handler


def test_the_grip_site_is_a_quarter_turn_from_the_hand_body_of_robosuites_eef_quat(soup_env):
    # LIBERO's files hold robosuite's robot0_eef_pos (the grip site) and robot0_eef_quat (the hand's body); the
    # environment observes the grip site's orientation, a quarter turn about the hand's axis from the body's.
    import mujoco
    from robosuite.utils import transform_utils as T

    from libero_ll.data.hdf5 import SITE_IN_HAND
    from libero_ll.envs.env import rotation_to_axis_angle

    env = soup_env
    obs = env.reset(seed=2)
    name = env.scene.robots[0].robot_model.eef_name["right"]
    rng = np.random.default_rng(1)
    body_id = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY, name)
    for _ in range(20):
        p = env.robot_proprio()
        body = env.data.xmat[body_id].reshape(3, 3)
        np.testing.assert_allclose(T.quat2mat(T.convert_quat(env.scene.sim.data.get_body_xquat(name), to="xyzw")),
                                   body, atol=1e-6)  # robosuite's eef_quat is this body's
        np.testing.assert_allclose(body.T @ p["ee_rot"], SITE_IN_HAND, atol=1e-9)
        np.testing.assert_allclose(obs["ee_states"][3:], rotation_to_axis_angle(p["ee_rot"]), atol=1e-6)
        obs, _, _ = env.step(np.r_[rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3), 0.0])


def test_the_robot_is_not_compiled_alone_and_robosuite_is_left_as_it_was(soup_env):
    # robosuite compiled the robot on its own for every environment and kept that model, which nothing reads:
    # about 50 MB per environment. Building ours must leave robosuite's own behaviour as it was for others.
    from robosuite.models.robots import Panda
    from robosuite.models.robots.robot_model import RobotModel

    from libero_ll.envs import scene

    assert soup_env.scene.robots[0].robot_model.mujoco_model is None
    assert RobotModel.set_mujoco_model is not scene._no_robot_only_model
    panda = Panda(idn=3)
    panda.set_mujoco_model()
    assert panda.mujoco_model is not None and panda.mujoco_model.nbody > 1


def test_the_first_environment_of_a_process_records_the_same_model_xml_as_the_next(bowl_task):
    # MuJoCo notes the type of the mesh files it takes from its cache of files read before in the process: the
    # first environment's XML (the robot's meshes read from their files) differed from the next ones', and so
    # did the model_file of demos collected first in a worker.
    import subprocess
    import sys

    code = (
        "from libero_ll.envs.env import EnvConfig, LiberoEnv\n"
        f"first = LiberoEnv({str(bowl_task)!r}, EnvConfig(image_size=16, robot_mesh='collision', render=False))\n"
        f"second = LiberoEnv({str(bowl_task)!r}, EnvConfig(image_size=16, robot_mesh='collision', render=False))\n"
        "print(first.model_xml() == second.model_xml(), 'robot0_link0' in first.model_xml())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def test_environments_built_in_two_threads_each_record_their_own_model_xml(monkeypatch):
    # MuJoCo writes out the XML of the model loaded last in the process, whichever thread loaded it: an environment
    # built while another thread loaded a scene recorded that scene's XML (its demos' model_file, its renderer's
    # simplified shapes).
    import threading
    from pathlib import Path

    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.envs.scene import TaskScene

    tasks = Path(__file__).resolve().parents[2] / "bddl_tasks"
    files = {"milk_1": tasks / "libero_object/pick_up_the_milk_and_place_it_in_the_basket.bddl",
             "wooden_cabinet_1": tasks / "libero_90/KITCHEN_SCENE10_close_the_top_drawer_of_the_cabinet.bddl"}
    style, load = LiberoEnv._style_rendering, TaskScene._load_model
    first, other_loaded, turn = [], threading.Event(), threading.Lock()

    def loading(self):
        load(self)
        with turn:
            if first and first[0] is not threading.current_thread():
                other_loaded.set()

    def waiting_style(self):
        # Between the first scene's load and the reading of its XML, the other thread loads its scene, unless
        # something holds it back (then the wait gives up after 2 s and the first goes on).
        with turn:
            waits = not first
            first.append(threading.current_thread())
        if waits:
            other_loaded.wait(timeout=2)
        style(self)

    monkeypatch.setattr(TaskScene, "_load_model", loading)
    monkeypatch.setattr(LiberoEnv, "_style_rendering", waiting_style)
    built, failed = {}, []

    def build(word):
        try:
            built[word] = LiberoEnv(files[word], EnvConfig(image_size=16, robot_mesh="collision", render=False))
        except BaseException as e:  # noqa: BLE001 - shown by the assertion below
            failed.append(e)

    threads = [threading.Thread(target=build, args=(word,)) for word in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not failed, failed
        for word, other in (("milk_1", "wooden_cabinet_1"), ("wooden_cabinet_1", "milk_1")):
            xml = built[word].model_xml()
            assert f'"{word}' in xml and f'"{other}' not in xml, word
    finally:
        for env in built.values():
            env.close()


def test_closing_an_environment_frees_its_simulator_without_a_full_garbage_collection(bowl_task, monkeypatch):
    # robosuite's freeing ended with gc.collect(): 0.13 s of the 0.15 s a close took in a process holding torch.
    import gc
    import weakref

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(bowl_task, EnvConfig(render=False))
    sim = weakref.ref(env.scene.sim)
    collections = []
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(a) or 0)
    env.close()
    assert collections == [] and env.scene.sim is None
    monkeypatch.undo()
    del env
    gc.collect()
    assert sim() is None  # the simulator itself goes, at the latest with the next collection


def test_a_warning_shared_by_a_suites_files_is_said_once_with_how_many_more_files(tmp_path, bowl_task):
    import warnings

    from libero_ll.bddl.validate import BddlWarning
    from libero_ll.envs.env import load_task, say_task_warnings

    # Four files with the same stray region (word for word the same warning), one with a warning of its own.
    stray = "    (stray_region\n      (:target ghost_1)\n      (:ranges ((0 0 0.01 0.01)))\n    )\n"
    text = bowl_task.read_text().replace("  (:regions\n", "  (:regions\n" + stray, 1)
    files = []
    for i in range(4):
        files.append(tmp_path / f"shared_{i}.bddl")
        files[-1].write_text(text)
    files.append(tmp_path / "own.bddl")
    files[-1].write_text(text.replace("ghost_1", "spectre_1"))
    files.append(tmp_path / "broken.bddl")
    files[-1].write_text("(define (problem")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        say_task_warnings(files)
        for f in files[:-1]:
            load_task(f)  # says nothing more
    said = [str(w.message) for w in caught if issubclass(w.category, BddlWarning)]
    assert len(said) == 2, said
    assert said[0].startswith(f"{files[0]}:") and "ghost_1" in said[0]
    assert said[0].endswith(
        "(the same in 3 more files: shared_1.bddl, shared_2.bddl, shared_3.bddl)"
    ), said[0]
    assert said[1].startswith(f"{files[4]}:") and "spectre_1" in said[1] and "the same in" not in said[1]
    # The broken file's problem is raised where it is loaded, as before.
    with pytest.raises(LiberoError, match="broken.bddl"):
        load_task(files[-1])
