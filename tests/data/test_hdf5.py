"""Demo files: layout, round trip, atomic writes, legacy LIBERO/robomimic files, and error messages."""

import json

import h5py
import numpy as np
import pytest

from libero_ll.data.hdf5 import (
    IMAGE_CONVENTION,
    Demo,
    DemoWriter,
    axis_angle_to_rot6,
    image_size,
    read_demos,
    read_info,
)
from libero_ll.errors import LiberoError

HEADER = dict(
    env_name="ToyEnv",
    problem_info={"problem_name": "toy", "language_instruction": "put the bowl on the plate"},
    bddl_file_name="toy.bddl",
    bddl_file_content="(define (problem toy))",
    env_args={"type": 1, "env_name": "ToyEnv", "env_kwargs": {"camera_heights": 8}},
    generator="scripted_expert 0.1.0",
)


def make_demo(T, seed=0, size=8):
    rng = np.random.default_rng(seed)
    return Demo(
        actions=rng.uniform(-1, 1, (T, 7)),
        states=rng.normal(size=(T, 12)),
        robot_states=rng.normal(size=(T, 9)),
        obs={
            "agentview_rgb": rng.integers(0, 256, (T, size, size, 3), dtype=np.uint8),
            "eye_in_hand_rgb": rng.integers(0, 256, (T, size, size, 3), dtype=np.uint8),
            "joint_states": rng.normal(size=(T, 7)),
            "gripper_states": rng.normal(size=(T, 2)),
            "ee_states": rng.normal(size=(T, 6)),
        },
        init_state=rng.normal(size=12),
        model_file=f"<mujoco model='toy{seed}'/>",
        seed=seed,
    )


def write(path, demos, **kw):
    with DemoWriter(path, **HEADER, **kw) as w:
        indices = [w.add(d) for d in demos]
    return indices


def test_round_trip_keeps_every_array_and_attribute(tmp_path):
    path = tmp_path / "task.hdf5"
    demos = [make_demo(5, 0), make_demo(3, 1), make_demo(4, 2)]
    assert write(path, demos) == [0, 1, 2]

    info = read_info(path)
    assert info.env_name == "ToyEnv"
    assert info.problem_info == HEADER["problem_info"]
    assert info.env_args == HEADER["env_args"]
    assert info.bddl_file_name == "toy.bddl" and info.bddl_file_content == HEADER["bddl_file_content"]
    assert (info.num_demos, info.total) == (3, 12)
    assert info.image_convention == IMAGE_CONVENTION == "upright"
    assert info.generator == "scripted_expert 0.1.0"

    back = read_demos(path)
    assert len(back) == 3
    for a, b in zip(demos, back):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.states, b.states)
        np.testing.assert_array_equal(a.robot_states, b.robot_states)
        np.testing.assert_array_equal(a.init_state, b.init_state)
        assert set(b.obs) == set(a.obs)
        for key in a.obs:
            np.testing.assert_array_equal(a.obs[key], b.obs[key])
        assert b.obs["agentview_rgb"].dtype == np.uint8
        assert (b.model_file, b.seed) == (a.model_file, a.seed)


def test_hand_position_is_read_from_ee_states_when_a_file_lacks_it(tmp_path):
    path = tmp_path / "task.hdf5"
    demo = make_demo(5)
    write(path, [demo])
    back = read_demos(path, obs_keys=["ee_pos", "ee_rot6", "gripper_states"])[0]
    np.testing.assert_array_equal(back.obs["ee_pos"], demo.obs["ee_states"][:, :3])
    assert back.obs["ee_pos"].flags["C_CONTIGUOUS"]
    # The orientation's code: the first two columns of the rotation, the same for both axis-angle vectors
    # of a half turn (where ee_states jumps), and orthonormal.
    rot6 = back.obs["ee_rot6"]
    assert rot6.shape == (5, 6)
    np.testing.assert_allclose(np.linalg.norm(rot6[:, :3], axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(np.sum(rot6[:, :3] * rot6[:, 3:], axis=1), 0, atol=1e-6)
    half_turn = np.array([[0.0, 0.0, np.pi], [0.0, 0.0, -np.pi], [0.0, 0.0, np.pi / 2]])
    expected = [[-1, 0, 0, 0, -1, 0], [-1, 0, 0, 0, -1, 0], [0, 1, 0, -1, 0, 0]]
    np.testing.assert_allclose(axis_angle_to_rot6(half_turn), expected, atol=1e-6)
    # A file that has the key keeps its own.
    demo.obs["ee_pos"] = np.full((5, 3), 7.0)
    write(path, [demo])
    np.testing.assert_array_equal(read_demos(path, obs_keys=["ee_pos"])[0].obs["ee_pos"], demo.obs["ee_pos"])
    # Neither there: the message names the key.
    del demo.obs["ee_pos"], demo.obs["ee_states"]
    write(path, [demo])
    with pytest.raises(LiberoError, match="no 'ee_pos'"):
        read_demos(path, obs_keys=["ee_pos"])


def test_env_args_carry_robomimics_environment_type(tmp_path):
    # robomimic reads env_args["type"] first (1: a robosuite environment); writers that leave it out get it.
    header = {**HEADER, "env_args": {"env_name": "ToyEnv", "env_kwargs": {}}}
    with DemoWriter(tmp_path / "a.hdf5", **header) as w:
        w.add(make_demo(3))
    assert read_info(tmp_path / "a.hdf5").env_args == {"type": 1, "env_name": "ToyEnv", "env_kwargs": {}}
    header["env_args"] = {"type": 3, "env_name": "ToyEnv"}
    with DemoWriter(tmp_path / "b.hdf5", **header) as w:
        w.add(make_demo(3))
    assert read_info(tmp_path / "b.hdf5").env_args["type"] == 3


def test_file_follows_the_documented_layout(tmp_path):
    path = tmp_path / "task.hdf5"
    write(path, [make_demo(4)], compression="lzf")
    with h5py.File(path, "r") as f:
        data = f["data"]
        assert json.loads(data.attrs["problem_info"]) == HEADER["problem_info"]
        assert json.loads(data.attrs["env_args"]) == HEADER["env_args"]
        demo = data["demo_0"]
        assert demo.attrs["num_samples"] == 4 and demo.attrs["seed"] == 0
        np.testing.assert_array_equal(demo["rewards"][()], [0, 0, 0, 1])
        np.testing.assert_array_equal(demo["dones"][()], [0, 0, 0, 1])
        assert demo["actions"].shape == (4, 7) and demo["robot_states"].shape == (4, 9)
        assert demo["states"].dtype == np.float64
        img = demo["obs/agentview_rgb"]
        assert img.dtype == np.uint8 and img.chunks == (1, 8, 8, 3) and img.compression == "lzf"


def test_demos_come_back_in_numeric_order_and_can_be_limited(tmp_path):
    path = tmp_path / "task.hdf5"
    write(path, [make_demo(2, seed=i, size=2) for i in range(12)])
    assert [d.seed for d in read_demos(path)] == list(range(12))
    some = read_demos(path, obs_keys=["joint_states"], max_demos=3)
    assert [d.seed for d in some] == [0, 1, 2]
    assert list(some[0].obs) == ["joint_states"]


def test_large_model_file_is_stored(tmp_path):
    path = tmp_path / "task.hdf5"
    demo = make_demo(2, size=2)
    demo.model_file = "<mujoco>" + "x" * 200_000 + "</mujoco>"
    write(path, [demo])
    assert read_demos(path)[0].model_file == demo.model_file


def test_failed_write_leaves_existing_file_untouched_and_no_temp_files(tmp_path):
    path = tmp_path / "task.hdf5"
    write(path, [make_demo(3, seed=7, size=2)])
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with DemoWriter(path, **HEADER) as w:
            w.add(make_demo(2, size=2))
            raise RuntimeError("expert crashed")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task.hdf5"]


def test_file_appears_only_on_close(tmp_path):
    path = tmp_path / "sub" / "task.hdf5"
    w = DemoWriter(path, **HEADER)
    w.add(make_demo(2, size=2))
    assert not path.exists()
    w.close()
    assert path.exists() and read_info(path).num_demos == 1
    assert [p.name for p in path.parent.iterdir()] == ["task.hdf5"]


def test_images_must_be_uint8(tmp_path):
    demo = make_demo(2, size=2)
    demo.obs["agentview_rgb"] = demo.obs["agentview_rgb"].astype(np.float32)
    with pytest.raises(ValueError, match="agentview_rgb"):
        with DemoWriter(tmp_path / "t.hdf5", **HEADER) as w:
            w.add(demo)
    assert list(tmp_path.iterdir()) == []


def test_legacy_file_without_new_attributes_is_read_and_flipped_upright(tmp_path):
    path = tmp_path / "libero.hdf5"
    frames = np.arange(2 * 3 * 2 * 3, dtype=np.uint8).reshape(2, 3, 2, 3)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": "Libero_Tabletop_Manipulation"})
        for i in (0, 1):
            g = data.create_group(f"demo_{i}")
            g.create_dataset("actions", data=np.zeros((2, 7)))
            g.create_dataset("states", data=np.ones((2, 4)))
            g.create_dataset("obs/agentview_rgb", data=frames)
    info = read_info(path)
    assert info.env_name == "Libero_Tabletop_Manipulation"
    assert (info.generator, info.image_convention, info.problem_info) == (None, None, {})
    assert (info.num_demos, info.total) == (2, 4)
    demo = read_demos(path)[0]
    np.testing.assert_array_equal(demo.obs["agentview_rgb"], frames[:, ::-1])
    np.testing.assert_array_equal(demo.init_state, np.ones(4))
    assert demo.robot_states.shape == (2, 0) and demo.seed is None
    raw = read_demos(path, upright=False)[0]
    np.testing.assert_array_equal(raw.obs["agentview_rgb"], frames)


def test_missing_file_is_a_libero_error_naming_it(tmp_path):
    path = tmp_path / "nope.hdf5"
    for reader in (read_info, read_demos):
        with pytest.raises(LiberoError, match="nope.hdf5"):
            reader(path)


def test_non_hdf5_file_is_a_libero_error(tmp_path):
    path = tmp_path / "text.hdf5"
    path.write_text("not hdf5")
    with pytest.raises(LiberoError, match="text.hdf5"):
        read_demos(path)


def test_missing_data_group_or_key_is_named(tmp_path):
    path = tmp_path / "empty.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("other")
    with pytest.raises(LiberoError, match=r"empty\.hdf5.*'data'"):
        read_info(path)

    path = tmp_path / "task.hdf5"
    write(path, [make_demo(2, size=2)])
    with pytest.raises(LiberoError, match=r"task\.hdf5.*demo_0/obs.*'wrist_depth'"):
        read_demos(path, obs_keys=["joint_states", "wrist_depth"])
    with h5py.File(path, "a") as f:
        del f["data/demo_0/actions"]
    with pytest.raises(LiberoError, match=r"task\.hdf5.*'actions'"):
        read_demos(path)


def test_length_statistics_and_extra_attributes_are_stored(tmp_path):
    path = tmp_path / "task.hdf5"
    with DemoWriter(path, **HEADER) as w:
        for T in (5, 3, 4):
            w.add(make_demo(T, size=2))
        w.set_attrs({"expert_success_rate": 0.75, "collect_seed": 3, "failed_demo_indices": np.zeros(0, int),
                     "settings": {"a": 1}})
        with pytest.raises(ValueError, match="num_demos"):
            w.set_attrs({"num_demos": 9})
    stats = read_info(path).stats
    assert stats["demo_lengths"] == [5, 3, 4]
    assert (stats["length_mean"], stats["length_min"], stats["length_max"]) == (4.0, 3, 5)
    assert stats["expert_success_rate"] == 0.75 and stats["collect_seed"] == 3
    assert stats["failed_demo_indices"] == [] and json.loads(stats["settings"]) == {"a": 1}
    assert "num_demos" not in stats and "generator" not in stats


def test_copied_demo_is_identical_to_an_added_one(tmp_path):
    demos = [make_demo(4, seed=1), make_demo(3, seed=2)]
    for i, d in enumerate(demos):
        write(tmp_path / f"one_{i}.hdf5", [d])
    with DemoWriter(tmp_path / "copied.hdf5", **HEADER) as w:
        assert [w.copy_demo(tmp_path / f"one_{i}.hdf5") for i in range(2)] == [0, 1]
    write(tmp_path / "added.hdf5", demos)
    with h5py.File(tmp_path / "copied.hdf5") as a, h5py.File(tmp_path / "added.hdf5") as b:
        for name in ("demo_0", "demo_1"):
            assert dict(a["data"][name].attrs).keys() == dict(b["data"][name].attrs).keys()
            for key in ("actions", "states", "obs/agentview_rgb", "rewards"):
                np.testing.assert_array_equal(a["data"][name][key][()], b["data"][name][key][()])
    info = read_info(tmp_path / "copied.hdf5")
    assert (info.num_demos, info.total, info.stats["demo_lengths"]) == (2, 7, [4, 3])


def test_written_file_is_not_private(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        write(tmp_path / "task.hdf5", [make_demo(2, size=2)])
    finally:
        os.umask(umask)
    assert (tmp_path / "task.hdf5").stat().st_mode & 0o777 == 0o644


# ---------------------------------------------------------------- layouts written by LIBERO and robomimic


def test_robomimic_layout_mask_group_next_obs_and_camera_names(tmp_path):
    """robomimic: filter keys in a root `mask` group, `next_obs` beside `obs`, its own camera names,
    no num_demos (counted) and no language."""
    from libero_ll.data.hdf5 import demo_names

    path = tmp_path / "robomimic.hdf5"
    image = np.arange(3 * 4 * 4 * 3, dtype=np.uint8).reshape(3, 4, 4, 3)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["total"] = 6
        data.attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1, "env_kwargs": {"control_freq": 20}})
        for i in (10, 2):
            g = data.create_group(f"demo_{i}")
            g.attrs["num_samples"] = 3
            g.create_dataset("actions", data=np.full((3, 7), i, dtype=np.float32))
            g.create_dataset("states", data=np.zeros((3, 5)))
            g.create_dataset("obs/agentview_image", data=image)
            g.create_dataset("obs/robot0_eef_pos", data=np.zeros((3, 3)))
            g.create_dataset("next_obs/agentview_image", data=image)
        f.create_dataset("mask/train", data=np.array([b"demo_2"]))
        f.create_dataset("mask/valid", data=np.array([b"demo_10"]))
    info = read_info(path)
    assert (info.env_name, info.num_demos, info.total, info.problem_info) == ("Lift", 2, 6, {})
    assert demo_names(path) == ["demo_2", "demo_10"]
    demos = read_demos(path)
    assert [d.actions[0, 0] for d in demos] == [2, 10]
    assert set(demos[0].obs) == {"agentview_image", "robot0_eef_pos"}
    np.testing.assert_array_equal(demos[0].obs["agentview_image"], image[:, ::-1])
    # Asked for this project's camera name, the error lists what the demo holds and names robosuite's.
    with pytest.raises(LiberoError) as e:
        read_demos(path, obs_keys=["agentview_rgb"])
    assert str(e.value) == (
        f"demo file {path}: data/demo_2/obs has no 'agentview_rgb' dataset (it holds: agentview_image, "
        "robot0_eef_pos); 'agentview_image' is robosuite's name for it: a file recorded from robosuite's "
        "observations (as robomimic's are) needs its readings renamed to this project's names "
        "('agentview_image' to 'agentview_rgb')")
    with pytest.raises(LiberoError, match=r"has no 'gripper_states' dataset \(it holds: agentview_image, "
                       r"robot0_eef_pos\)$"):
        read_demos(path, obs_keys=["gripper_states"])


def test_libero_layout_language_extra_observations_and_flipped_images(tmp_path):
    """LIBERO: the instruction in problem_info, the task file's text, ee_pos/ee_ori beside ee_states,
    per-demo model_file and init_state, and images in OpenGL order without saying so."""
    from libero_ll.data.hdf5 import iter_demos

    path = tmp_path / "libero.hdf5"
    image = np.zeros((2, 4, 4, 3), np.uint8)
    image[:, 0] = 255  # the first stored row: the bottom of the picture
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["problem_info"] = json.dumps(
            {"problem_name": "libero_tabletop_manipulation", "domain_name": "robosuite",
             "language_instruction": "put the bowl on the plate"})
        data.attrs["bddl_file_name"] = "put_the_bowl_on_the_plate.bddl"
        data.attrs["bddl_file_content"] = "(define (problem LIBERO_Tabletop_Manipulation))"
        data.attrs["env_args"] = json.dumps({"env_name": "Libero_Tabletop_Manipulation", "type": 1})
        data.attrs["num_demos"] = 1
        data.attrs["total"] = 2
        g = data.create_group("demo_0")
        g.attrs["num_samples"] = 2
        g.attrs["model_file"] = "<mujoco model='libero'/>"
        g.attrs["init_state"] = np.arange(6.0)
        g.create_dataset("actions", data=np.zeros((2, 7)))
        g.create_dataset("states", data=np.ones((2, 6)))
        g.create_dataset("robot_states", data=np.zeros((2, 9)))
        g.create_dataset("rewards", data=np.array([0, 1], np.uint8))
        g.create_dataset("dones", data=np.array([0, 1], np.uint8))
        for key, width in (("ee_pos", 3), ("ee_ori", 3), ("ee_states", 6), ("gripper_states", 2),
                           ("joint_states", 7)):
            g.create_dataset(f"obs/{key}", data=np.zeros((2, width)))
        g.create_dataset("obs/agentview_rgb", data=image)
        g.create_dataset("obs/eye_in_hand_rgb", data=image)
    info = read_info(path)
    assert info.problem_info["language_instruction"] == "put the bowl on the plate"
    assert info.env_name == "Libero_Tabletop_Manipulation" and info.image_convention is None
    [demo] = list(iter_demos(path))
    assert {"ee_pos", "ee_ori", "ee_states"} <= set(demo.obs)
    assert demo.model_file == "<mujoco model='libero'/>"
    np.testing.assert_array_equal(demo.init_state, np.arange(6.0))
    assert (demo.obs["agentview_rgb"][:, -1] == 255).all() and (demo.obs["agentview_rgb"][:, 0] == 0).all()


def test_text_attributes_stored_as_bytes_are_read_as_text(tmp_path):
    """Older writers store strings as fixed-length bytes."""
    path = tmp_path / "bytes.hdf5"
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["env_name"] = np.bytes_(b"Libero_Kitchen_Tabletop_Manipulation")
        data.attrs["problem_info"] = np.bytes_(json.dumps({"language_instruction": "open the drawer"}).encode())
        data.attrs["image_convention"] = np.bytes_(b"opengl")
        g = data.create_group("demo_0")
        g.attrs["model_file"] = np.bytes_(b"<mujoco/>")
        g.create_dataset("actions", data=np.zeros((1, 7)))
    info = read_info(path)
    assert info.env_name == "Libero_Kitchen_Tabletop_Manipulation"
    assert info.problem_info == {"language_instruction": "open the drawer"}
    assert info.image_convention == "opengl"
    [demo] = read_demos(path)
    assert demo.model_file == "<mujoco/>" and demo.obs == {} and demo.states.shape == (1, 0)


@pytest.mark.parametrize("attr", ["image_convention", "macros_image_convention"])
def test_an_unknown_image_convention_is_refused(tmp_path, attr):
    # Ours, and LIBERO's (robosuite's macro IMAGE_CONVENTION).
    path = tmp_path / "odd.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("data").attrs[attr] = "sideways"
    with pytest.raises(LiberoError, match=f"data.{attr} is 'sideways'"):
        read_info(path)


def test_iter_demos_gives_the_demos_of_read_demos_one_at_a_time(tmp_path):
    from libero_ll.data.hdf5 import iter_demos

    path = tmp_path / "task.hdf5"
    write(path, [make_demo(3, seed=s, size=2) for s in range(4)])
    it = iter_demos(path, ["joint_states"], max_demos=3)
    first = next(it)
    assert first.seed == 0 and list(first.obs) == ["joint_states"]
    rest = list(it)
    assert [d.seed for d in rest] == [1, 2]
    for a, b in zip([first, *rest], read_demos(path, ["joint_states"], max_demos=3)):
        np.testing.assert_array_equal(a.actions, b.actions)


def test_image_size_is_read_from_the_first_demo_without_loading(tmp_path):
    path = tmp_path / "d.hdf5"
    write(path, [make_demo(3, size=12), make_demo(2, seed=1, size=12)])
    assert image_size(path) == 12
    assert image_size(path, "eye_in_hand_rgb") == 12
    assert image_size(path, "joint_states") is None  # not images
    assert image_size(path, "no_such_key") is None
    with pytest.raises(LiberoError, match="missing.hdf5"):
        image_size(tmp_path / "missing.hdf5")


def _episode_in_both_frames(task, steps=60):
    """One episode of random hand motions from a reset (the hand pointing down): what the environment records
    (the grip site's orientation) and what LIBERO's files would hold of it (the hand body's, robosuite's way)."""
    from robosuite.utils import transform_utils as T

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(task, EnvConfig(render=False))
    try:
        obs = env.reset(seed=4)
        rng = np.random.default_rng(0)
        site = {"ee_states": [], "ee_rot6": [], "robot": []}
        body = {"ee_states": [], "robot": []}
        joints = []
        for _ in range(steps):
            site["ee_states"].append(obs["ee_states"])
            site["ee_rot6"].append(obs["ee_rot6"])
            site["robot"].append(env.robot_state())
            quat = T.convert_quat(env.scene.sim.data.get_body_xquat("robot0_right_hand"), to="xyzw")
            body["ee_states"].append(np.r_[env.robot_proprio()["ee_pos"], T.quat2axisangle(quat.copy())])  # float64
            body["robot"].append(np.r_[env.robot_state()[:5], quat])
            joints.append(obs["joint_states"])
            obs, _, _ = env.step(np.r_[rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3), 0.0])
        return {k: np.stack(v) for k, v in site.items()}, {k: np.stack(v) for k, v in body.items()}, np.stack(joints)
    finally:
        env.close()


def test_the_hands_orientation_is_read_in_the_frame_asked_for(tmp_path, bowl_task):
    # LIBERO's files hold the hand body's orientation (robosuite's robot0_eef_quat), turned 90 degrees about the
    # hand's axis from the grip site's that the environment observes: a policy trained on LIBERO's files read
    # another hand than its rollouts showed it.
    from libero_ll.data.hdf5 import GRIP_SITE, HAND_BODY

    site, body, joints = _episode_in_both_frames(bowl_task)
    T = len(joints)
    assert np.abs(site["ee_states"][:, 3:] - body["ee_states"][:, 3:]).max() > 0.5  # the frames differ

    # A file of LIBERO's (no attribute, images in OpenGL order) is read in the environment's frame.
    libero = tmp_path / "libero.hdf5"
    with h5py.File(libero, "w") as f:
        g = f.create_group("data").create_group("demo_0")
        g.create_dataset("actions", data=np.zeros((T, 7)))
        g.create_dataset("robot_states", data=body["robot"])
        g.create_dataset("obs/ee_states", data=body["ee_states"])
        g.create_dataset("obs/joint_states", data=joints)
    assert read_info(libero).ee_orientation == HAND_BODY
    back = read_demos(libero, obs_keys=["ee_states", "ee_rot6", "ee_pos"])[0]
    np.testing.assert_allclose(back.obs["ee_states"], site["ee_states"], atol=1e-5)
    np.testing.assert_allclose(back.obs["ee_rot6"], site["ee_rot6"], atol=1e-5)
    np.testing.assert_allclose(back.robot_states, site["robot"], atol=2e-5)
    # Without ee_states asked for (a replay), only robot_states is turned.
    np.testing.assert_allclose(read_demos(libero, obs_keys=[])[0].robot_states, site["robot"], atol=2e-5)
    raw = read_demos(libero, obs_keys=["ee_states"], ee_orientation=HAND_BODY)[0]
    np.testing.assert_array_equal(raw.obs["ee_states"], body["ee_states"])

    # A file made here holds the environment's frame, says so, and is read in LIBERO's when asked (the sign of
    # the body's quaternion, which the angle follows up to 2π, from the joints).
    demo = Demo(actions=np.zeros((T, 7)), states=np.zeros((T, 3)), robot_states=site["robot"],
                obs={"joint_states": joints, "ee_states": site["ee_states"]}, init_state=np.zeros(3))
    ours = tmp_path / "ours.hdf5"
    write(ours, [demo])
    with h5py.File(ours, "r") as f:
        assert f["data"].attrs["ee_orientation"] == GRIP_SITE
    as_libero = read_demos(ours, obs_keys=["ee_states"], ee_orientation=HAND_BODY)[0]
    np.testing.assert_allclose(as_libero.obs["ee_states"], body["ee_states"], atol=1e-5)
    np.testing.assert_allclose(as_libero.robot_states, body["robot"], atol=2e-5)
    np.testing.assert_array_equal(read_demos(ours, obs_keys=["ee_states"])[0].obs["ee_states"], site["ee_states"])

    # Files made before the attribute: ours by what made them; LeRobot imports (LIBERO's datasets) the body's.
    for generator, frame in (("scripted-expert 0.18", GRIP_SITE), ("lerobot import (v3.0)", HAND_BODY)):
        old = tmp_path / f"{frame}.hdf5"
        with DemoWriter(old, **{**HEADER, "generator": generator}) as w:
            w.add(make_demo(3))
        with h5py.File(old, "r+") as f:
            del f["data"].attrs["ee_orientation"]
        assert read_info(old).ee_orientation == frame
    # A demo is not copied between files of different frames (it would be read wrong), and a frame is checked.
    with pytest.raises(LiberoError, match="'hand_body'.*'grip_site'"):
        with DemoWriter(tmp_path / "copy.hdf5", **HEADER) as w:
            w.copy_demo(libero)
    assert not (tmp_path / "copy.hdf5").exists()
    # Turning a site's orientation into the body's needs the joints.
    lacking = tmp_path / "lacking.hdf5"
    write(lacking, [Demo(actions=np.zeros((T, 7)), states=np.zeros((T, 3)), robot_states=site["robot"],
                         obs={"ee_states": site["ee_states"]}, init_state=np.zeros(3))])
    with pytest.raises(LiberoError, match="no obs/joint_states"):
        read_demos(lacking, ee_orientation=HAND_BODY)
    with h5py.File(ours, "r+") as f:
        f["data"].attrs["ee_orientation"] = "wrist"
    with pytest.raises(LiberoError, match="ee_orientation is 'wrist'"):
        read_info(ours)


@pytest.mark.parametrize("macro, flipped", [("opengl", True), ("opencv", False), (b"opencv", False), (None, True)])
def test_libero_files_say_their_image_order_and_are_flipped_only_when_it_is_opengls(tmp_path, macro, flipped):
    # LIBERO's files write robosuite's macro IMAGE_CONVENTION into data.attrs; an "opencv" file was flipped too.
    path = tmp_path / "libero.hdf5"
    frames = np.arange(2 * 3 * 2 * 3, dtype=np.uint8).reshape(2, 3, 2, 3)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        if macro is not None:
            data.attrs["macros_image_convention"] = macro
        g = data.create_group("demo_0")
        g.create_dataset("actions", data=np.zeros((2, 7)))
        g.create_dataset("obs/agentview_rgb", data=frames)
    info = read_info(path)
    assert info.image_convention is None and info.image_rows == ("opengl" if flipped else "upright")
    want = frames[:, ::-1] if flipped else frames
    np.testing.assert_array_equal(read_demos(path)[0].obs["agentview_rgb"], want)


def _replace(f, key, value):
    del f[key]
    f[key] = value


@pytest.mark.parametrize(
    "change, says",
    [
        # Before: exported with pyarrow's "Column 2 named action expected length 5 but got length 3" traceback, and
        # read for training with its windows running past the shorter datasets.
        (lambda f: _replace(f, "data/demo_1/actions", f["data/demo_1/actions"][:3]),
         "data/demo_1/states holds 5 rows for 3 actions; each dataset of a demo holds one row per step"),
        (lambda f: _replace(f, "data/demo_1/obs/agentview_rgb", f["data/demo_1/obs/agentview_rgb"][:4]),
         "data/demo_1/obs/agentview_rgb holds 4 rows for 5 actions"),
        (lambda f: _replace(f, "data/demo_1/robot_states", np.zeros(())),
         "data/demo_1/robot_states holds a single value for 5 actions"),
        (lambda f: _replace(f, "data/demo_1/actions", np.zeros(5)),
         "data/demo_1/actions has shape (5,); actions are (steps, action size)"),
        # Before: "data/demo_1 has no 'actions' dataset", of a demo that is a dataset itself.
        (lambda f: _replace(f, "data/demo_1", np.zeros(3)), "data/demo_1 is not a group of datasets"),
    ],
)
def test_a_demo_whose_datasets_disagree_in_steps_is_named(tmp_path, change, says):
    path = tmp_path / "task.hdf5"
    write(path, [make_demo(4, 0, size=2), make_demo(5, 1, size=2)])
    with h5py.File(path, "a") as f:
        change(f)
    with pytest.raises(LiberoError) as e:
        read_demos(path)
    assert str(e.value).startswith(f"demo file {path}: {says}"), str(e.value)
