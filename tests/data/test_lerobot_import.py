"""LeRobot datasets in: an exported dataset read back (v3.0), and v2 layouts made here with videos per episode
and with images inside the parquet files."""

from __future__ import annotations

import io
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from libero_ll.cli import main
from libero_ll.data.dataset import load_task_data
from libero_ll.data.hdf5 import HAND_BODY, axis_angle_to_matrix, read_demos, read_info
from libero_ll.data.lerobot import export_lerobot
from libero_ll.data.lerobot_import import import_lerobot
from libero_ll.errors import LiberoError
from tests.data.test_lerobot import TASKS, demo, frames

# The v2 datasets made here are at 10 frames per second: their imports warn so (tested below), by design.
pytestmark = pytest.mark.filterwarnings("ignore::libero_ll.data.lerobot_import.FrameRateWarning")

QUICKSTART = Path(__file__).resolve().parents[2] / "bddl_tasks" / "quickstart"
LENGTHS = {"bowl": (12, 9), "soup": (7, 10, 8)}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """Demo files and their LeRobot export (v3.0)."""
    from libero_ll.data.hdf5 import DemoWriter

    root = tmp_path_factory.mktemp("demos")
    for name, Ts in LENGTHS.items():
        with DemoWriter(root / f"{name}.hdf5", env_name="LiberoEnv",
                        problem_info={"language_instruction": TASKS[name]}, bddl_file_name=f"{name}.bddl",
                        bddl_file_content="", env_args={"control_freq": 20}, generator="test") as w:
            for i, T in enumerate(Ts):
                w.add(demo(T, seed=10 * len(name) + i))
    out = tmp_path_factory.mktemp("export") / "lerobot"
    export_lerobot(root, out)
    return root, out


def test_an_exported_dataset_comes_back_as_its_demo_files(source, tmp_path):
    demos, dataset = source
    s = import_lerobot(dataset, tmp_path / "back")
    assert (s.version, s.episodes, s.frames) == ("v3.0", 5, sum(map(sum, LENGTHS.values())))
    for name, task in TASKS.items():
        path = tmp_path / "back" / f"{task.replace(' ', '_')}.hdf5"
        assert s.files[task] == path
        info = read_info(path)
        assert info.problem_info["language_instruction"] == task and info.generator == "lerobot import (v3.0)"
        assert info.env_args["control_freq"] == 20
        # The export wrote the hand body's orientation and the import keeps it so (info.ee_orientation): compared
        # in that frame, it comes back as it went out.
        assert info.ee_orientation == HAND_BODY
        before = read_demos(demos / f"{name}.hdf5", ee_orientation=HAND_BODY)
        after = read_demos(path, ee_orientation=HAND_BODY)
        assert [d.num_steps for d in after] == list(LENGTHS[name])
        for a, b in zip(before, after):
            np.testing.assert_array_equal(b.actions, a.actions.astype(np.float32))
            for key in ("ee_states", "gripper_states", "joint_states"):
                np.testing.assert_array_equal(b.obs[key], a.obs[key])
            for key in ("agentview_rgb", "eye_in_hand_rgb"):
                assert b.obs[key].shape == a.obs[key].shape and b.obs[key].dtype == np.uint8
                # Video is lossy: within a few grey levels, and the moving square where it was.
                assert np.abs(b.obs[key].astype(int) - a.obs[key]).mean() < 8
    # What training reads: the cpu preset's inputs, the hand as the environment observes it (the grip site's).
    task = load_task_data(s.files[TASKS["soup"]], 0, np.zeros(4), ["agentview_rgb", "eye_in_hand_rgb",
                                                                   "gripper_states", "ee_states"])
    assert len(task.demos) == 3
    site = read_demos(s.files[TASKS["soup"]])
    for a, b in zip(read_demos(demos / "soup.hdf5"), site):
        # The same rotations (the vectors may differ where the file's were not canonical: angles above π).
        np.testing.assert_allclose(axis_angle_to_matrix(b.obs["ee_states"][:, 3:]),
                                   axis_angle_to_matrix(a.obs["ee_states"][:, 3:]), atol=1e-5)


def test_tasks_are_named_after_a_suites_task_files_and_keep_their_text(source, tmp_path):
    _, dataset = source
    files = sorted(QUICKSTART.glob("*.bddl"))
    s = import_lerobot(dataset, tmp_path, task_files=files)
    bowl = tmp_path / "put_the_black_bowl_on_the_plate.hdf5"
    assert s.files[TASKS["bowl"]] == bowl
    info = read_info(bowl)
    assert info.bddl_file_content == (QUICKSTART / bowl.with_suffix(".bddl").name).read_text()
    assert (tmp_path / "put_the_alphabet_soup_in_the_basket.hdf5").exists()
    # A task no task file has is named, and nothing is written.
    with pytest.raises(LiberoError, match=re.escape(f"1 of its 2 tasks is the instruction of none of the task "
                                                    f"files in {QUICKSTART}, e.g.")):
        import_lerobot(dataset, tmp_path / "other", task_files=files[1:2])
    assert not (tmp_path / "other").exists()


def test_existing_files_are_kept_unless_overwrite(source, tmp_path):
    _, dataset = source
    target = tmp_path / "put_the_black_bowl_on_the_plate.hdf5"
    target.write_bytes(b"mine")
    with pytest.raises(LiberoError, match="exists.*--overwrite"):
        import_lerobot(dataset, tmp_path)
    assert target.read_bytes() == b"mine" and len(list(tmp_path.iterdir())) == 1
    import_lerobot(dataset, tmp_path, overwrite=True)
    assert read_info(target).num_demos == 2


def test_a_missing_or_pictureless_video_fails_naming_it_and_leaves_nothing(source, tmp_path):
    _, dataset = source
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    video = next((broken / "videos").rglob("*.mp4"))
    video.unlink()
    with pytest.raises(LiberoError, match=f"{video.name}: missing"):
        import_lerobot(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    # Sound only (this ended in an IndexError).
    with av.open(str(video), "w") as out:
        stream = out.add_stream("aac", rate=8000)
        sound = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        sound.sample_rate = 8000
        for packet in [*stream.encode(sound), *stream.encode()]:
            out.mux(packet)
    with pytest.raises(LiberoError, match=f"{video.name}: holds no video stream"):
        import_lerobot(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_bad_values_in_info_json_are_named(source, tmp_path, capsys):
    # A text or list fps ended in a ValueError or TypeError, a null feature in an AttributeError.
    _, dataset = source
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    path = broken / "meta/info.json"
    info = json.loads(path.read_text())
    features = info["features"]
    for change, message in (
        ({"fps": "twenty"}, 'fps is "twenty"; the frame rate is a number of frames per second above 0'),
        ({"fps": [20]}, "fps is [20]; the frame rate"),
        ({"features": {**features, "action": None}}, "feature action is null, not an object with its dtype"),
        ({"features": {**features, "action": {"dtype": "float32", "shape": "x"}}},
         'feature action has shape "x", not a list of sizes'),
    ):
        path.write_text(json.dumps({**info, **change}))
        assert main(["import", str(broken), "--out", str(tmp_path / "out"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {path}: {message}"), err
    assert not (tmp_path / "out").exists()


def test_unreadable_episode_tables_are_named(source, tmp_path, capsys):
    # A truncated meta/episodes parquet file ended in pyarrow's ArrowInvalid.
    _, dataset = source
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    episodes = broken / "meta/episodes/chunk-000/file-000.parquet"
    table = pq.read_table(episodes)
    episodes.write_bytes(episodes.read_bytes()[:500])
    assert main(["import", str(broken), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {episodes}: not a readable parquet file (")
    # An episode that does not say where its frames are.
    pq.write_table(table.drop_columns(["data/file_index"]), episodes)
    with pytest.raises(LiberoError, match=re.escape(f"{episodes}: episode 0 has no data/file_index")):
        import_lerobot(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ---------------------------------------------------------------- v2 layouts


def write_v2(root: Path, images: str, version: str = "v2.1", state_size: int = 8) -> dict:
    """A v2 dataset of three episodes of two tasks; cameras as per-episode mp4 ("video") or PNG in the
    parquet ("image"). Returns the frames and states written, per episode."""
    cams = {"observation.images.image": 0, "observation.images.wrist_image": 100}
    kind = {"dtype": images, "shape": [16, 16, 3], "names": ["height", "width", "channels"]}
    info = {
        "codebase_version": version, "fps": 10, "chunks_size": 1000,
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": {
            **{c: kind for c in cams},
            "observation.state": {"dtype": "float32", "shape": [state_size]},
            "action": {"dtype": "float32", "shape": [7]},
            "episode_index": {"dtype": "int64", "shape": [1]},
            "frame_index": {"dtype": "int64", "shape": [1]},
        },
    }
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info))
    tasks = ["pick up the soup", "open the drawer", "pick up the soup"]
    (root / "meta" / "episodes.jsonl").write_text(
        "\n".join(json.dumps({"episode_index": i, "tasks": [t], "length": 5}) for i, t in enumerate(tasks))
    )
    rng = np.random.default_rng(0)
    written = {}
    for ep in range(3):
        T = 5
        pictures = {c: frames(T, ep + off)[:, 8:24, 8:24] for c, off in cams.items()}
        state = rng.normal(size=(T, state_size)).astype(np.float32)
        action = rng.uniform(-1, 1, (T, 7)).astype(np.float32)
        # Rows out of order: frame_index says where each belongs.
        order = np.arange(T)[::-1]
        columns = {
            "observation.state": pa.array(state[order].tolist(), pa.list_(pa.float32())),
            "action": pa.array(action[order].tolist(), pa.list_(pa.float32())),
            "frame_index": pa.array(order.copy()),
            "episode_index": pa.array(np.full(T, ep)),
        }
        for c, pics in pictures.items():
            if images == "image":
                pngs = []
                for p in pics[order]:
                    buf = io.BytesIO()
                    Image.fromarray(p).save(buf, format="PNG")
                    pngs.append({"bytes": buf.getvalue(), "path": None})
                columns[c] = pa.array(pngs)
            else:
                path = root / f"videos/chunk-000/{c}/episode_{ep:06d}.mp4"
                path.parent.mkdir(parents=True, exist_ok=True)
                with av.open(str(path), "w") as out:
                    stream = out.add_stream("libx264", rate=10, options={"crf": "10"})
                    stream.width = stream.height = 16
                    stream.pix_fmt = "yuv420p"
                    for t, p in enumerate(pics):
                        f = av.VideoFrame.from_ndarray(np.ascontiguousarray(p), format="rgb24")
                        f.pts, f.time_base = t, Fraction(1, 10)
                        for packet in stream.encode(f):
                            out.mux(packet)
                    for packet in stream.encode():
                        out.mux(packet)
        path = root / f"data/chunk-000/episode_{ep:06d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), str(path))
        written[ep] = (tasks[ep], state, action, pictures)
    return written


@pytest.mark.parametrize("images", ["image", "video"])
def test_a_v2_dataset_with_images_or_videos_per_episode(tmp_path, images):
    written = write_v2(tmp_path / "v2", images)
    s = import_lerobot(tmp_path / "v2", tmp_path / "out", flip="both")
    assert (s.version, s.episodes, s.frames) == ("v2.1", 3, 15)
    # As stored: the hand body's orientation of LeRobot's LIBERO datasets.
    soup = read_demos(tmp_path / "out" / "pick_up_the_soup.hdf5", ee_orientation=HAND_BODY)
    drawer = read_demos(tmp_path / "out" / "open_the_drawer.hdf5", ee_orientation=HAND_BODY)
    for ep, d in ((0, soup[0]), (1, drawer[0]), (2, soup[1])):
        _, state, action, pictures = written[ep]
        np.testing.assert_array_equal(d.actions, action)
        np.testing.assert_array_equal(d.obs["ee_states"], state[:, :6])
        np.testing.assert_array_equal(d.obs["gripper_states"], state[:, 6:])
        for key, feature in (("agentview_rgb", "observation.images.image"),
                             ("eye_in_hand_rgb", "observation.images.wrist_image")):
            turned = pictures[feature][:, ::-1, ::-1]
            if images == "image":  # PNG is lossless
                np.testing.assert_array_equal(d.obs[key], turned)
            else:
                assert np.abs(d.obs[key].astype(int) - turned).mean() < 8
                # Turned, not as stored: the unturned pictures are much further off.
                assert np.abs(d.obs[key].astype(int) - pictures[feature]).mean() > 20


def test_bad_datasets_are_named(tmp_path):
    with pytest.raises(LiberoError, match="not a LeRobot dataset"):
        import_lerobot(tmp_path, tmp_path / "out")
    write_v2(tmp_path / "v9", "image", version="v9.0")
    with pytest.raises(LiberoError, match="format 'v9.0'"):
        import_lerobot(tmp_path / "v9", tmp_path / "out")
    write_v2(tmp_path / "state", "image", state_size=9)
    with pytest.raises(LiberoError, match=r"observation.state has shape \[9\]; LIBERO's is \[8\]"):
        import_lerobot(tmp_path / "state", tmp_path / "out")
    write_v2(tmp_path / "cams", "image")
    info = json.loads((tmp_path / "cams/meta/info.json").read_text())
    info["features"]["observation.images.top"] = info["features"].pop("observation.images.image")
    (tmp_path / "cams/meta/info.json").write_text(json.dumps(info))
    with pytest.raises(LiberoError, match="cannot tell the agentview and wrist cameras"):
        import_lerobot(tmp_path / "cams", tmp_path / "out")
    # An episodes.jsonl line that is not an object, and a picture that is not one: named, no traceback.
    write_v2(tmp_path / "lines", "image")
    with (tmp_path / "lines/meta/episodes.jsonl").open("a") as f:
        f.write("\n[3, 4]\n")
    with pytest.raises(LiberoError, match=r"episodes.jsonl:4: not an episode \(a JSON object\)"):
        import_lerobot(tmp_path / "lines", tmp_path / "out")
    write_v2(tmp_path / "pngs", "image")
    frames_0 = tmp_path / "pngs/data/chunk-000/episode_000000.parquet"
    table = pq.read_table(frames_0)
    garbage = pa.array([{"bytes": b"not a png", "path": None}] * table.num_rows)
    pq.write_table(table.set_column(table.column_names.index("observation.images.image"),
                                    "observation.images.image", garbage), frames_0)
    with pytest.raises(LiberoError, match="episode 0: an image of observation.images.image is not a readable "
                                          "picture"):
        import_lerobot(tmp_path / "pngs", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_imports_and_checks_its_arguments(tmp_path, capsys):
    write_v2(tmp_path / "v2", "image")
    assert main(["import", str(tmp_path / "v2"), "--out", str(tmp_path / "out"), "--quiet",
                 "--agentview", "observation.images.image", "--wrist", "observation.images.wrist_image"]) == 0
    assert "3 episodes, 15 frames" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "v2"), "--out", str(tmp_path / "o2"), "--agentview", "x"]) == 2
    assert "name both cameras" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "v2"), "--out", str(tmp_path / "o3"), "--quiet",
                 "--agentview", "observation.images.image", "--wrist", "observation.state"]) == 2
    # Said with the options, not as a dict of our camera keys.
    assert capsys.readouterr().err == (
        f"error: --wrist observation.state is not a camera feature of {tmp_path / 'v2'}; its camera features: "
        "observation.images.image, observation.images.wrist_image\n"
    )
    assert main(["import", str(tmp_path / "v2"), "--out", str(tmp_path / "o4"), "--quiet",
                 "--agentview", "observation.images.image", "--wrist", "observation.images.image"]) == 2
    assert "the two cameras name the same feature; give each its own" in capsys.readouterr().err


def test_verify_says_an_imported_demo_has_nothing_to_replay(source, tmp_path, capsys):
    _, dataset = source
    import_lerobot(dataset, tmp_path, task_files=sorted(QUICKSTART.glob("*.bddl")))
    assert main(["verify", str(tmp_path / "put_the_black_bowl_on_the_plate.hdf5")]) == 1
    assert "holds no simulator states (imported from another tool's dataset)" in capsys.readouterr().out


@pytest.mark.parametrize("flip", ["rows", "columns", "both"])
def test_each_flip_on_the_way_in_and_out(tmp_path, flip):
    from libero_ll.data.lerobot import flip_images

    pictures = frames(3, 0)
    rows, columns = flip in ("rows", "both"), flip in ("columns", "both")
    expected = pictures[:, ::-1] if rows else pictures
    expected = expected[:, :, ::-1] if columns else expected
    np.testing.assert_array_equal(flip_images(pictures, flip), expected)
    # Flipped twice the same way: as they were.
    np.testing.assert_array_equal(flip_images(flip_images(pictures, flip), flip), pictures)
    written = write_v2(tmp_path / "v2", "image")
    import_lerobot(tmp_path / "v2", tmp_path / "out", flip=flip)
    got = read_demos(tmp_path / "out" / "open_the_drawer.hdf5")[0].obs["agentview_rgb"]
    np.testing.assert_array_equal(got, flip_images(written[1][3]["observation.images.image"], flip))


def test_an_export_flipped_comes_back_upright_when_flipped_back(source, tmp_path, capsys):
    demos, _ = source
    export_lerobot(demos, tmp_path / "mirrored", flip="columns")
    import_lerobot(tmp_path / "mirrored", tmp_path / "back", flip="columns")
    original = read_demos(demos / "bowl.hdf5")[0].obs["agentview_rgb"]
    back = read_demos(tmp_path / "back" / "put_the_black_bowl_on_the_plate.hdf5")[0].obs["agentview_rgb"]
    assert np.abs(back.astype(int) - original).mean() < 8
    assert np.abs(back.astype(int) - original[:, :, ::-1]).mean() > 20
    assert main(["import", str(tmp_path / "mirrored"), "--out", str(tmp_path / "x"), "--flip", "sideways"]) == 2
    assert "flip must be one of rows, columns, both, got 'sideways'" in capsys.readouterr().err


def test_pictures_are_resized_by_area(tmp_path):
    written = write_v2(tmp_path / "v2", "image")
    import_lerobot(tmp_path / "v2", tmp_path / "out", image_size=8)
    got = read_demos(tmp_path / "out" / "open_the_drawer.hdf5")[0].obs["eye_in_hand_rgb"]
    stored = written[1][3]["observation.images.wrist_image"].astype(float)
    means = stored.reshape(5, 8, 2, 8, 2, 3).mean(axis=(2, 4))
    assert got.shape == (5, 8, 8, 3) and np.abs(got - means).max() <= 1
    with pytest.raises(LiberoError, match="image_size must be 1 or more"):
        import_lerobot(tmp_path / "v2", tmp_path / "o2", image_size=0)


def test_a_dataset_of_several_suites_is_imported_one_suite_at_a_time(source, tmp_path, capsys):
    _, dataset = source
    bowl_only = [QUICKSTART / "put_the_black_bowl_on_the_plate.bddl"]
    s = import_lerobot(dataset, tmp_path / "out", task_files=bowl_only, skip_unknown=True)
    assert list(s.files) == [TASKS["bowl"]] and s.episodes == 2 and s.skipped == {TASKS["soup"]: 3}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["put_the_black_bowl_on_the_plate.hdf5"]
    assert main(["import", str(dataset), "--out", str(tmp_path / "o2"), "--skip-unknown"]) == 2
    assert "give --suite too" in capsys.readouterr().err
    assert main(["import", str(dataset), "--out", str(tmp_path / "o3"), "--suite", "quickstart", "--skip-unknown",
                 "--quiet"]) == 0
    assert "left out" not in capsys.readouterr().out
    # A suite given as a folder of one of the two tasks; the counts of one in the singular.
    suite = tmp_path / "bowl_suite"
    suite.mkdir()
    shutil.copy(bowl_only[0], suite)
    assert main(["import", str(dataset), "--out", str(tmp_path / "o4"), "--suite", str(suite), "--skip-unknown",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"left out: 3 episodes of 1 task that suite {suite} does not have" in out
    assert "2 episodes, 21 frames of a LeRobot dataset (v3.0) in 1 demo file," in out


def test_suite_messages_name_the_suite_and_where_its_task_files_are(source, tmp_path, capsys):
    # They said "the task files" without naming the suite.
    _, dataset = source
    folder = QUICKSTART.parent / "libero_object"
    assert main(["import", str(dataset), "--out", str(tmp_path / "o"), "--suite", "libero_object", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (f"error: {dataset}: 2 of its 2 tasks are the instruction of none of the task files of suite "
            f"libero_object (in {folder}), e.g. 'put the black bowl on the plate'") in err
    assert main(["import", str(dataset), "--out", str(tmp_path / "o"), "--suite", "libero_object", "--skip-unknown",
                 "--quiet"]) == 2
    assert capsys.readouterr().err == (f"error: {dataset}: none of its 2 tasks is the instruction of one of the task "
                                       f"files of suite libero_object (in {folder})\n")
    assert not (tmp_path / "o").exists()


def test_episodes_spread_over_several_data_and_video_files(source, tmp_path):
    demos, _ = source
    # Tiny limits: a new parquet and mp4 file after each episode or two.
    export_lerobot(demos, tmp_path / "many", data_file_size_mb=1e-4, video_file_size_mb=1e-4)
    assert len(list((tmp_path / "many" / "data").rglob("*.parquet"))) > 1
    assert len(list((tmp_path / "many" / "videos").rglob("*.mp4"))) > 2
    s = import_lerobot(tmp_path / "many", tmp_path / "back")
    assert s.episodes == 5
    for name, task in TASKS.items():
        before = read_demos(demos / f"{name}.hdf5")
        after = read_demos(s.files[task])
        for a, b in zip(before, after):
            np.testing.assert_array_equal(b.actions, a.actions.astype(np.float32))
            assert np.abs(b.obs["agentview_rgb"].astype(int) - a.obs["agentview_rgb"]).mean() < 8


def test_long_instructions_get_file_names_a_file_system_takes(tmp_path):
    # An instruction of 300 characters made a file name the file system refused ("File name too long").
    from libero_ll.data.lerobot_import import MAX_NAME, _file_names

    long_a, long_b = "pick up the soup " * 18 + "and stop", "pick up the soup " * 18 + "and go"
    names = _file_names([long_a, long_b, "open the drawer"], None, tmp_path)
    (a, _), (b, _), (short, _) = names[long_a], names[long_b], names["open the drawer"]
    assert short == "open_the_drawer" and a != b and len(a) <= MAX_NAME and len(b) <= MAX_NAME
    assert a.startswith("pick_up_the_soup_pick_up")
    for n in (a, b):
        (tmp_path / f".{n}.hdf5.partial.tmp").write_text("")  # the longest name collection writes
    with pytest.raises(LiberoError, match="a file; give the dataset's folder"):
        import_lerobot(tmp_path / f".{a}.hdf5.partial.tmp", tmp_path / "out")


def test_imported_actions_are_float32_as_collected_files_hold_them(source, tmp_path):
    # They came back float64 (value-equal): collected files and LeRobot's parquet files hold float32.
    import h5py

    _, dataset = source
    s = import_lerobot(dataset, tmp_path / "back")
    write_v2(tmp_path / "v2", "image")
    s2 = import_lerobot(tmp_path / "v2", tmp_path / "back2")
    for path in [*s.files.values(), *s2.files.values()]:
        assert all(d.actions.dtype == np.float32 for d in read_demos(path)), path
        with h5py.File(path, "r") as f:
            assert f["data/demo_0/actions"].dtype == np.float32


def test_a_dataset_without_joint_states_comes_back_and_exports_again(tmp_path):
    # The imported files have no joint states; exporting them again failed ("has no 'joint_states' dataset").
    from libero_ll.data.lerobot import JOINTS_KEY

    written = write_v2(tmp_path / "v2", "image")
    import_lerobot(tmp_path / "v2", tmp_path / "back")
    soup = tmp_path / "back" / "pick_up_the_soup.hdf5"
    assert "joint_states" not in read_demos(soup)[0].obs
    s = export_lerobot(tmp_path / "back", tmp_path / "again")
    assert (s.episodes, s.frames) == (3, 15)
    assert JOINTS_KEY not in json.loads((tmp_path / "again/meta/info.json").read_text())["features"]
    s = import_lerobot(tmp_path / "again", tmp_path / "back2")
    for ep, (path, i) in ((0, ("pick_up_the_soup", 0)), (1, ("open_the_drawer", 0)), (2, ("pick_up_the_soup", 1))):
        d = read_demos(tmp_path / "back2" / f"{path}.hdf5", ee_orientation=HAND_BODY)[i]
        _, state, action, pictures = written[ep]
        assert "joint_states" not in d.obs
        np.testing.assert_array_equal(d.actions, action)
        np.testing.assert_array_equal(d.obs["ee_states"], state[:, :6])
        # Lossless PNG in, lossy video out: 16-pixel pictures with sharp edges, so only roughly alike.
        assert np.abs(d.obs["agentview_rgb"].astype(int) - pictures["observation.images.image"]).mean() < 16


def test_a_dataset_exported_with_the_old_action_names_imports_the_same(source, tmp_path):
    # Exports before named the turn droll, dpitch, dyaw; the import reads the action by its feature's name only.
    demos, dataset = source
    old = tmp_path / "old"
    shutil.copytree(dataset, old)
    info = json.loads((old / "meta/info.json").read_text())
    assert info["features"]["action"]["names"][3:6] == ["drot_x", "drot_y", "drot_z"]
    info["features"]["action"]["names"] = ["dx", "dy", "dz", "droll", "dpitch", "dyaw", "gripper"]
    (old / "meta/info.json").write_text(json.dumps(info))
    s = import_lerobot(old, tmp_path / "back")
    before = read_demos(demos / "bowl.hdf5")
    after = read_demos(s.files[TASKS["bowl"]])
    for a, b in zip(before, after):
        np.testing.assert_array_equal(b.actions, a.actions.astype(np.float32))


def test_frames_of_another_width_or_with_a_gap_are_named(tmp_path):
    # An action column 6 wide under an info.json that says 7 imported (exit 0) and failed in training with a
    # traceback; a frame left out shifted every later picture against its state and action.
    write_v2(tmp_path / "narrow", "image")
    path = tmp_path / "narrow/data/chunk-000/episode_000001.parquet"
    table = pq.read_table(path)
    narrow = pa.array([row[:6] for row in table.column("action").to_pylist()], pa.list_(pa.float32()))
    pq.write_table(table.set_column(table.column_names.index("action"), "action", narrow), path)
    with pytest.raises(LiberoError, match="episode 1: column action holds 6 numbers per frame, where "
                                          "meta/info.json gives 7"):
        import_lerobot(tmp_path / "narrow", tmp_path / "out")
    # A frame left out of the middle of an episode, and its last one.
    for name, episode, frame, said in [
        ("gap", 0, 2, r"episode 0: its rows are not frames 0 to 3 in turn \(row 2 holds frame 3\)"),
        ("short", 2, 4, "episode 2: 4 rows of frames, where its entry in meta/ says 5"),
    ]:
        write_v2(tmp_path / name, "image")
        path = tmp_path / f"{name}/data/chunk-000/episode_{episode:06d}.parquet"
        table = pq.read_table(path)
        pq.write_table(table.take([i for i, f in enumerate(table.column("frame_index").to_pylist()) if f != frame]),
                       path)
        with pytest.raises(LiberoError, match=said):
            import_lerobot(tmp_path / name, tmp_path / "out")
    assert not list(tmp_path.glob("out/*")) and not list(tmp_path.glob("out/.*"))  # no file of the imports left


def test_a_dataset_at_another_frame_rate_is_imported_with_a_warning(source, tmp_path):
    from libero_ll.data.lerobot_import import FrameRateWarning

    write_v2(tmp_path / "v2", "image")  # 10 frames per second
    with pytest.warns(FrameRateWarning, match=r"recorded at 10 frames per second, where the simulator's policy "
                                              r"steps at 20 Hz .* about 2 times as fast as in the demos"):
        import_lerobot(tmp_path / "v2", tmp_path / "out10", suite=None, skip_unknown=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", FrameRateWarning)
        import_lerobot(source[1], tmp_path / "out20")  # exported from our 20 Hz demos


def test_verify_goes_on_past_a_file_it_cannot_replay(source, tmp_path, capsys):
    # One imported file without a task (no --suite) stopped the whole verify with an error and no summary.
    _, dataset = source
    import_lerobot(dataset, tmp_path / "plain")  # no task files: no scene to rebuild
    import_lerobot(dataset, tmp_path / "tasks", task_files=sorted(QUICKSTART.glob("*.bddl")))
    plain = sorted((tmp_path / "plain").glob("*.hdf5"))[0]
    with_task = tmp_path / "tasks" / "put_the_black_bowl_on_the_plate.hdf5"
    assert main(["verify", str(plain), str(with_task)]) == 1
    out = capsys.readouterr().out
    assert f"FAILED: demo file {plain}: no task text (bddl_file_content), so its scene cannot be rebuilt " \
           "(imported from another tool's dataset: it holds no simulator states either, nothing to replay)" in out
    assert "holds no simulator states (imported from another tool's dataset)" in out  # the second file, reached
    assert out.strip().splitlines()[-1].startswith(f"failed: {plain} (cannot be replayed), ")
