"""LeRobot export: a small dataset written, read back with pyarrow and a video decoder, and compared
with its demo files."""

from __future__ import annotations

import json
import os
import re

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from libero_ll.cli import main
from libero_ll.data.hdf5 import GRIP_SITE, HAND_BODY, Demo, DemoWriter, read_demos
from libero_ll.data.lerobot import CAMERAS, export_lerobot
from libero_ll.errors import LiberoError

SIZE = 32
TASKS = {"bowl": "put the black bowl on the plate", "soup": "put the alphabet soup in the basket"}


def frames(T: int, seed: int) -> np.ndarray:
    """Smooth pictures with a bright square that moves: lossy video keeps them recognisable."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    out = np.empty((T, SIZE, SIZE, 3), np.uint8)
    for t in range(T):
        out[t, ..., 0] = (xx * 6 + seed * 40) % 256
        out[t, ..., 1] = (yy * 6) % 256
        out[t, ..., 2] = 40 + 12 * t
        x = 2 * t  # demos here have at most 12 steps: the square never wraps around
        out[t, 8:16, x : x + 8] = (250, 250, 40)
    return out


def demo(T: int, seed: int) -> Demo:
    rng = np.random.default_rng(seed)
    return Demo(
        actions=rng.uniform(-1, 1, (T, 7)),
        states=rng.normal(size=(T, 20)),
        robot_states=rng.normal(size=(T, 9)),
        obs={
            "agentview_rgb": frames(T, seed),
            "eye_in_hand_rgb": frames(T, seed + 100)[:, ::-1],
            "joint_states": rng.normal(size=(T, 7)).astype(np.float32),
            "gripper_states": rng.normal(size=(T, 2)).astype(np.float32),
            "ee_states": rng.normal(size=(T, 6)).astype(np.float32),
        },
        init_state=rng.normal(size=20),
        seed=seed,
    )


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("demos")
    lengths = {"bowl": (12, 9), "soup": (7, 10, 8)}
    for name, Ts in lengths.items():
        with DemoWriter(
            root / f"{name}.hdf5",
            env_name="LiberoEnv",
            problem_info={"language_instruction": TASKS[name]},
            bddl_file_name=f"{name}.bddl",
            bddl_file_content="",
            env_args={"control_freq": 20},
            generator="test",
        ) as w:
            for i, T in enumerate(Ts):
                w.add(demo(T, seed=10 * len(name) + i))
    return root


@pytest.fixture(scope="module")
def exported(demo_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "lerobot"
    summary = export_lerobot(demo_dir, out)
    return out, summary


def decode(path) -> tuple[np.ndarray, list[float]]:
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        got = [(float(f.pts * stream.time_base), f.to_ndarray(format="rgb24")) for f in c.decode(stream)]
    return np.stack([g[1] for g in got]), [g[0] for g in got]


def test_layout_and_metadata(exported):
    out, summary = exported
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (5, 46, 2)
    assert info["fps"] == 20 and info["splits"] == {"train": "0:5"}
    assert (summary.episodes, summary.frames) == (5, 46)
    for key in CAMERAS.values():
        feature = info["features"][key]
        assert feature["dtype"] == "video" and feature["shape"] == [SIZE, SIZE, 3]
        assert feature["info"]["video.codec"] == "av1"
        assert (out / info["video_path"].format(video_key=key, chunk_index=0, file_index=0)).is_file()
    assert info["features"]["observation.state"]["shape"] == [8]
    tasks = pq.read_table(out / "meta/tasks.parquet").to_pydict()
    assert tasks == {"task_index": [0, 1], "task": [TASKS["bowl"], TASKS["soup"]]}
    stats = json.loads((out / "meta/stats.json").read_text())
    assert stats["action"]["count"] == [46] and len(stats["action"]["mean"]) == 7
    assert np.array(stats["observation.images.image"]["mean"]).shape == (3, 1, 1)
    assert not any(p.name.endswith(".tmp") for p in out.parent.iterdir())


def test_frames_actions_and_states_match_the_demo_files(exported, demo_dir):
    out, _ = exported
    info = json.loads((out / "meta/info.json").read_text())
    episodes = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    data = pq.read_table(out / info["data_path"].format(chunk_index=0, file_index=0)).to_pydict()
    videos = {
        key: decode(out / info["video_path"].format(video_key=key, chunk_index=0, file_index=0))
        for key in CAMERAS.values()
    }
    # The hand's orientation goes out as LIBERO's files and LeRobot's LIBERO datasets hold it, the hand body's.
    demos = [(name, d) for name in ("bowl", "soup")
             for d in read_demos(demo_dir / f"{name}.hdf5", ee_orientation=HAND_BODY)]
    assert not np.allclose(demos[0][1].obs["ee_states"], read_demos(demo_dir / "bowl.hdf5")[0].obs["ee_states"])
    assert len(episodes) == len(demos)
    for ep, (name, d) in zip(episodes, demos):
        T = d.num_steps
        assert ep["tasks"] == [TASKS[name]] and ep["length"] == T
        rows = slice(ep["dataset_from_index"], ep["dataset_to_index"])
        np.testing.assert_allclose(np.array(data["action"][rows]), d.actions, rtol=1e-6, atol=1e-6)
        state = np.concatenate([d.obs["ee_states"], d.obs["gripper_states"]], 1)
        np.testing.assert_allclose(np.array(data["observation.state"][rows]), state, rtol=1e-6)
        np.testing.assert_allclose(np.array(data["observation.joint_states"][rows]), d.obs["joint_states"])
        assert data["frame_index"][rows] == list(range(T))
        assert set(data["episode_index"][rows]) == {ep["episode_index"]}
        assert set(data["task_index"][rows]) == {0 if name == "bowl" else 1}
        assert data["next.done"][rows] == [False] * (T - 1) + [True]
        for ours, key in CAMERAS.items():
            decoded, stamps = videos[key]
            start = round(ep[f"videos/{key}/from_timestamp"] * 20)
            assert round(ep[f"videos/{key}/to_timestamp"] * 20) - start == T
            np.testing.assert_allclose(stamps[start : start + T], start / 20 + np.arange(T) / 20, atol=1e-6)
            got = decoded[start : start + T].astype(int)
            want = d.obs[ours].astype(int)
            assert np.abs(got - want).mean() < 8, key
            # Each decoded frame is nearest to its own picture, not a neighbour's (order kept).
            for t in range(T):
                errors = [np.abs(got[t] - want[u]).mean() for u in range(T)]
                assert int(np.argmin(errors)) == t


def test_cli_refuses_to_overwrite_and_replaces_only_when_asked(demo_dir, tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["export", str(demo_dir / "bowl.hdf5"), "--out", str(out), "--quiet"]) == 0
    assert "2 episodes, 21 frames, 1 task," in capsys.readouterr().out
    assert main(["export", str(demo_dir), "--out", str(out), "--quiet"]) == 2
    assert "exists" in capsys.readouterr().err
    assert json.loads((out / "meta/info.json").read_text())["total_episodes"] == 2
    assert (
        main(["export", str(demo_dir), "--out", str(out), "--quiet", "--overwrite", "--vcodec", "libx264"])
        == 0
    )
    info = json.loads((out / "meta/info.json").read_text())
    assert (
        info["total_episodes"] == 5
        and info["features"]["observation.images.image"]["info"]["video.codec"] == "h264"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_overwrite_never_replaces_the_demos_being_exported(demo_dir, tmp_path):
    # `export DIR --out DIR --overwrite` replaced the demo folder with the dataset: the demos were gone.
    import shutil

    demos = tmp_path / "demos"
    shutil.copytree(demo_dir, demos)
    before = sorted(p.name for p in demos.iterdir())
    for out in (demos, demos / "bowl.hdf5", tmp_path):
        source = demos / "bowl.hdf5" if out.name == "bowl.hdf5" else demos
        with pytest.raises(LiberoError, match="is or holds a demo file being exported"):
            export_lerobot(source, out, overwrite=True)
    assert sorted(p.name for p in demos.iterdir()) == before
    assert len(read_demos(demos / "bowl.hdf5")) == 2


def test_video_settings_out_of_range_are_refused_before_writing(demo_dir, tmp_path):
    from libero_ll.data.lerobot import VideoOptions

    with pytest.raises(LiberoError, match="libsvtav1 takes a crf from 0 to 63"):
        export_lerobot(demo_dir, tmp_path / "o", video=VideoOptions(crf=99))
    with pytest.raises(LiberoError, match="fps must be 1 or more"):
        export_lerobot(demo_dir, tmp_path / "o", fps=-3)
    # A codec's name leaves the encoder to the FFmpeg build: encoders are given by their own names.
    with pytest.raises(LiberoError, match="video codec 'h264' is not supported; use one of libsvtav1, libx264"):
        export_lerobot(demo_dir, tmp_path / "o", video=VideoOptions(vcodec="h264"))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_without_demos_is_a_clear_error(tmp_path):
    with pytest.raises(LiberoError, match="no demo files"):
        export_lerobot(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_libero_file_is_exported_upright_with_its_instruction(tmp_path):
    """LIBERO's files hold images in OpenGL order (bottom row first) and the instruction in problem_info."""
    import h5py

    path = tmp_path / "libero.hdf5"
    raw = frames(6, seed=1)[:, ::-1]
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["problem_info"] = json.dumps({"language_instruction": "open the top drawer"})
        data.attrs["env_args"] = json.dumps({"env_name": "Libero_Tabletop_Manipulation"})
        g = data.create_group("demo_0")
        g.create_dataset("actions", data=np.zeros((6, 7)))
        for key, width in (("ee_states", 6), ("gripper_states", 2), ("joint_states", 7)):
            g.create_dataset(f"obs/{key}", data=np.zeros((6, width)))
        g.create_dataset("obs/agentview_rgb", data=raw)
        g.create_dataset("obs/eye_in_hand_rgb", data=raw)
    out = tmp_path / "ds"
    export_lerobot(path, out)
    assert pq.read_table(out / "meta/tasks.parquet").column("task").to_pylist() == ["open the top drawer"]
    decoded, _ = decode(out / "videos/observation.images.image/chunk-000/file-000.mp4")
    upright = raw[:, ::-1].astype(int)
    assert np.abs(decoded.astype(int) - upright).mean() < 8
    assert np.abs(decoded.astype(int) - raw.astype(int)).mean() > 30


def test_overwrite_replaces_only_a_dataset(demo_dir, tmp_path, monkeypatch, capsys):
    # `export ... --out FOLDER --overwrite` deleted whatever FOLDER held; now only a LeRobot dataset is replaced.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("important")
    note = tmp_path / "note.txt"
    note.write_text("mine too")
    for out in (mine, note):
        assert main(["export", str(demo_dir), "--out", str(out), "--quiet", "--overwrite"]) == 2
        assert "is not a LeRobot dataset" in capsys.readouterr().err
    assert (mine / "thesis.txt").read_text() == "important" and note.read_text() == "mine too"
    # "." names the current folder, which has no name of its own to write beside: a message, no traceback.
    monkeypatch.chdir(mine)
    assert main(["export", str(demo_dir), "--out", ".", "--quiet", "--overwrite"]) == 2
    assert f"{mine} exists and is not a LeRobot dataset" in capsys.readouterr().err
    assert main(["export", str(demo_dir), "--out", "", "--quiet"]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["export", str(demo_dir), "--out", str(note / "ds"), "--quiet"]) == 2
    assert f"{note} is a file, not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "note.txt"]
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.txt"]


def test_an_empty_folder_is_written_without_overwrite(demo_dir, tmp_path, monkeypatch, capsys):
    # An empty --out was refused ("exists; pass --overwrite"), and with --overwrite as "not a LeRobot dataset".
    import shutil

    empty = tmp_path / "empty"
    for overwrite in ([], ["--overwrite"]):
        empty.mkdir()
        assert main(["export", str(demo_dir / "bowl.hdf5"), "--out", str(empty), "--quiet", *overwrite]) == 0
        assert f"{empty}: LeRobot dataset (v3.0), 2 episodes" in capsys.readouterr().out
        assert json.loads((empty / "meta/info.json").read_text())["total_episodes"] == 2
        shutil.rmtree(empty)
    # The current folder, empty: the dataset is written into it, so the shell is not left in a removed folder.
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["export", str(demo_dir / "bowl.hdf5"), "--out", ".", "--quiet"]) == 0
    assert os.path.samefile(os.getcwd(), here) and (here / "meta/info.json").is_file()
    assert sorted(p.name for p in here.iterdir()) == ["data", "meta", "videos"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]  # no temporary folder left beside


def write_demos(path, task: str, Ts, seed: int, joints: bool = True, freq: int = 20) -> None:
    """A demo file of one task; without `joints`, its demos hold no obs/joint_states, as files imported from a
    LeRobot dataset without them (which hold the hand body's orientation, as LeRobot's LIBERO datasets do)."""
    with DemoWriter(path, env_name="LiberoEnv", problem_info={"language_instruction": task},
                    bddl_file_name="", bddl_file_content="", env_args={"control_freq": freq}, generator="test",
                    ee_orientation=GRIP_SITE if joints else HAND_BODY) as w:
        for i, T in enumerate(Ts):
            d = demo(T, seed + i)
            if not joints:
                d.obs.pop("joint_states")
            w.add(d)


def test_action_dimensions_are_named_as_the_axis_angle_delta_they_are(exported):
    # They were named droll, dpitch, dyaw: the controller turns the hand by an axis-angle vector, not by Euler angles.
    out, _ = exported
    info = json.loads((out / "meta/info.json").read_text())
    assert info["features"]["action"]["names"] == ["dx", "dy", "dz", "drot_x", "drot_y", "drot_z", "gripper"]


def test_files_without_joint_states_export_without_the_feature(tmp_path):
    # Export asked every file for obs/joint_states: one imported from a LeRobot dataset without them failed
    # ("has no 'joint_states' dataset").
    from libero_ll.data.lerobot import JOINTS_KEY

    write_demos(tmp_path / "bowl.hdf5", TASKS["bowl"], (6, 5), seed=1, joints=False)
    write_demos(tmp_path / "soup.hdf5", TASKS["soup"], (4,), seed=7, joints=False)
    out = tmp_path / "ds"
    summary = export_lerobot([tmp_path / "bowl.hdf5", tmp_path / "soup.hdf5"], out)
    assert (summary.episodes, summary.frames) == (3, 15)
    info = json.loads((out / "meta/info.json").read_text())
    assert JOINTS_KEY not in info["features"] and "observation.state" in info["features"]
    data = pq.read_table(out / info["data_path"].format(chunk_index=0, file_index=0))
    assert JOINTS_KEY not in data.column_names and data.num_rows == 15
    stats = json.loads((out / "meta/stats.json").read_text())
    assert JOINTS_KEY not in stats and stats["action"]["count"] == [15]
    episodes = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet")
    assert not [c for c in episodes.column_names if JOINTS_KEY in c]
    assert "stats/action/mean" in episodes.column_names


def test_files_with_and_without_joint_states_are_refused_naming_the_file(tmp_path):
    # A dataset's episodes share their features: some with joint states and some without is an error, before
    # anything is written.
    write_demos(tmp_path / "bowl.hdf5", TASKS["bowl"], (6,), seed=1)
    write_demos(tmp_path / "soup.hdf5", TASKS["soup"], (4,), seed=7, joints=False)
    message = (f"demo file {tmp_path / 'soup.hdf5'}: data/demo_0 has no joint states (obs/joint_states), but "
               f"data/demo_0 of {tmp_path / 'bowl.hdf5'} has")
    with pytest.raises(LiberoError, match=re.escape(message)):
        export_lerobot(tmp_path, tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bowl.hdf5", "soup.hdf5"]


def _two_demos_one_damaged(tmp_path, damage):
    """A folder of one task's two demos whose second, data/demo_1, `damage(h5py group "data")` has changed."""
    import h5py

    folder = tmp_path / "demos"
    folder.mkdir()
    write_demos(folder / "bowl.hdf5", TASKS["bowl"], [6, 5], seed=1)
    with h5py.File(folder / "bowl.hdf5", "r+") as f:
        damage(f["data"])
    return folder


def _replace(group, key: str, value) -> None:
    del group[key]
    group[key] = value


def test_a_demo_that_is_not_a_group_is_named_as_such(tmp_path, capsys):
    # Before: "data/demo_1 has no joint states (obs/joint_states), but data/demo_0 ... has".

    folder = _two_demos_one_damaged(tmp_path, lambda data: _replace(data, "demo_1", np.zeros(3)))
    assert main(["export", str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: demo file {folder / 'bowl.hdf5'}: data/demo_1 is not a group of datasets\n"
    assert [p.name for p in tmp_path.iterdir()] == ["demos"]


def test_a_demo_without_steps_is_named_not_a_traceback(tmp_path, capsys):
    # It ended in an IndexError from the image statistics of an empty demo.
    import h5py

    folder = tmp_path / "demos"
    folder.mkdir()
    with DemoWriter(folder / "bowl.hdf5", env_name="LiberoEnv", problem_info={"language_instruction": TASKS["bowl"]},
                    bddl_file_name="bowl.bddl", bddl_file_content="", env_args={"control_freq": 20},
                    generator="test") as w:
        w.add(demo(6, seed=1))
        w.add(demo(5, seed=2))
    with h5py.File(folder / "bowl.hdf5", "r+") as f:
        group = f["data/demo_1"]
        for name in list(group.keys()):
            if isinstance(group[name], h5py.Dataset):
                data = group[name][:0]
                del group[name]
                group[name] = data
        for name in list(group["obs"].keys()):
            data = group["obs"][name][:0]
            del group["obs"][name]
            group["obs"][name] = data
    assert main(["export", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"error: demo file {folder / 'bowl.hdf5'}: data/demo_1 has no steps; an episode needs one or more" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_file_without_demos_adds_no_task(tmp_path):
    # Its task was listed in meta/tasks.parquet (and total_tasks) with no episode.
    write_demos(tmp_path / "bowl.hdf5", TASKS["bowl"], (), seed=1)
    write_demos(tmp_path / "soup.hdf5", TASKS["soup"], (4, 5), seed=7)
    summary = export_lerobot(tmp_path, tmp_path / "ds")
    assert summary.tasks == [TASKS["soup"]] and summary.episodes == 2
    info = json.loads((tmp_path / "ds/meta/info.json").read_text())
    assert info["total_tasks"] == 1
    tasks = pq.read_table(tmp_path / "ds/meta/tasks.parquet").to_pydict()
    assert tasks["task"] == [TASKS["soup"]] and tasks["task_index"] == [0]
    data = pq.read_table(tmp_path / "ds" / info["data_path"].format(chunk_index=0, file_index=0))
    assert set(data.column("task_index").to_pylist()) == {0}


def test_files_of_different_control_rates_are_refused_unless_fps_is_given(tmp_path):
    # The first file's rate labelled every episode: a 10 Hz file's timestamps came out twice as fast.
    write_demos(tmp_path / "bowl.hdf5", TASKS["bowl"], (6,), seed=1, freq=20)
    write_demos(tmp_path / "soup.hdf5", TASKS["soup"], (4,), seed=7, freq=10)
    message = (f"demo file {tmp_path / 'soup.hdf5'} was collected at 10 Hz but {tmp_path / 'bowl.hdf5'} at 20 Hz")
    with pytest.raises(LiberoError, match=re.escape(message)):
        export_lerobot(tmp_path, tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    export_lerobot(tmp_path, tmp_path / "ds", fps=20)
    assert json.loads((tmp_path / "ds/meta/info.json").read_text())["fps"] == 20


def test_export_chooses_the_gl_backend_before_it_imports_mujoco(demo_dir, tmp_path):
    # Turning the hand's orientation into LIBERO's frame imported MuJoCo (and robosuite, whose start-up warnings
    # export printed) before a GL backend was chosen: a scene built later in the same process could not draw.
    import subprocess
    import sys

    from pathlib import Path

    task = Path(__file__).resolve().parents[2] / "bddl_tasks/quickstart/put_the_black_bowl_on_the_plate.bddl"
    code = f"""
import numpy as np
from libero_ll.data.lerobot import export_lerobot
export_lerobot({str(demo_dir)!r}, {str(tmp_path / 'ds')!r})
from libero_ll.envs.env import EnvConfig, LiberoEnv
obs = LiberoEnv({str(task)!r}, EnvConfig(image_size=32, robot_mesh="collision")).reset(seed=0)
print("drawn", float(np.asarray(obs["agentview_rgb"]).std()))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split("drawn")[1]) > 1.0  # a picture, not a blank
    assert "robosuite WARNING" not in out.stderr


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("actions", np.zeros((5, 3), np.float32), "data/demo_1/actions has shape (5, 3), where a dataset holds (5, 7)"),
        ("obs/gripper_states", np.zeros((5, 1), np.float32),
         "data/demo_1/obs/gripper_states has shape (5, 1), where a dataset holds (5, 2)"),
        ("obs/agentview_rgb", np.zeros((5, 8, 8), np.uint8),
         "data/demo_1/obs/agentview_rgb has shape (5, 8, 8); pictures are (steps, height, width, 3)"),
    ],
)
def test_a_demo_of_the_wrong_widths_is_named_not_a_traceback(tmp_path, capsys, key, value, says):
    # Before: pyarrow's "Table schema does not match schema used to create file" traceback (actions, robot
    # readings), or "images of [(8, 8), (8, 8, 3)] pixels, the dataset's are None" (pictures).

    folder = _two_demos_one_damaged(tmp_path, lambda data: _replace(data, f"demo_1/{key}", value))
    assert main(["export", str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: demo file {folder / 'bowl.hdf5'}: {says}"), err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["demos"]  # no temporary dataset left beside it


@pytest.mark.parametrize("key, step, value", [("actions", 3, np.nan), ("obs/ee_states", 0, np.inf),
                                              ("obs/joint_states", 4, -np.inf)])
def test_nan_or_infinite_numbers_are_refused_before_anything_is_written(tmp_path, capsys, key, step, value):
    # Before: exported without a word, though training and verify refuse such demos.

    def damage(data):
        data[f"demo_1/{key}"][step, 1] = value

    folder = _two_demos_one_damaged(tmp_path, damage)
    out = tmp_path / "new" / "place" / "ds"
    assert main(["export", str(folder), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: demo file {folder / 'bowl.hdf5'}: data/demo_1/{key} holds NaN or infinity (step "
                   f"{step}); a dataset takes finite numbers only: fix or remake the file\n")
    assert [p.name for p in tmp_path.iterdir()] == ["demos"]  # nor the folders --out would have been put in


def test_a_failed_export_removes_the_folders_it_made(tmp_path, capsys):
    # A demo found wrong while the dataset was being written left the folders made for --out behind.

    folder = _two_demos_one_damaged(tmp_path, lambda data: _replace(data, "demo_1/actions", np.zeros((5, 3), np.float32)))
    assert main(["export", str(folder), "--out", str(tmp_path / "new" / "ds"), "--quiet"]) == 2
    assert "data/demo_1/actions has shape (5, 3)" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["demos"]


def _encode_with(monkeypatch, change):
    """Make each video file's encoder pass its packets through `change(packets)` before they are written."""
    from libero_ll.data import lerobot

    open_ = lerobot._VideoWriter._open

    def opened(self, width, height):
        open_(self, width, height)
        encode = self.stream.encode
        self.stream = _Stream(self.stream, lambda *frame: change(list(encode(*frame))))

    monkeypatch.setattr(lerobot._VideoWriter, "_open", opened)


class _Stream:
    """A PyAV stream whose encode is another function."""

    def __init__(self, stream, encode):
        self._stream, self.encode = stream, encode

    def __getattr__(self, name):
        return getattr(self._stream, name)


def test_a_decoding_time_not_after_the_last_is_moved_after_it_with_a_warning(demo_dir, tmp_path, monkeypatch):
    # An encoder's packet whose decoding time repeats the one before made the mp4 muxer refuse it ("Invalid
    # argument", errno 22): the export failed with PyAV's traceback. It is moved on as ffmpeg's command line does.
    seen = []

    def repeat_a_time(packets):
        for p in packets:
            seen.append(p.dts)
            if len(seen) == 5:  # the fifth packet encoded repeats the fourth's decoding time
                p.dts = seen[3]
        return packets

    _encode_with(monkeypatch, repeat_a_time)
    with pytest.warns(UserWarning, match="not after the one before"):
        export_lerobot(demo_dir, tmp_path / "ds", video=_x264())
    for key in CAMERAS.values():
        pictures, times = decode(tmp_path / "ds" / f"videos/{key}/chunk-000/file-000.mp4")
        assert len(pictures) == 12 + 9 + 7 + 10 + 8
        assert times == sorted(set(times))


def test_an_encoder_error_names_the_demo_and_the_muxers_reason_and_writes_nothing(demo_dir, tmp_path, monkeypatch,
                                                                                   capsys):
    from libero_ll.data import lerobot

    def refused(self, packet):  # a packet the muxer refuses, past the repair of decoding times
        if self.frames >= 3:
            packet.dts = -5
        self.container.mux(packet)

    monkeypatch.setattr(lerobot._VideoWriter, "_mux", refused)
    out = tmp_path / "ds"
    assert main(["export", str(demo_dir), "--out", str(out), "--vcodec", "libx264", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: demo file {demo_dir / 'bowl.hdf5'}: data/demo_0: encoding camera "
                          "observation.images.image with libx264 into videos/observation.images.image/chunk-000/"
                          "file-000.mp4 failed: Invalid argument (Application provided invalid, non monotonically "
                          "increasing dts"), err
    assert "Traceback" not in err and err.endswith("export again, or with --vcodec libx264\n")
    assert list(tmp_path.iterdir()) == []


def _x264():
    from libero_ll.data.lerobot import VideoOptions

    return VideoOptions(vcodec="libx264", crf=23)
