"""Demo files out as a LeRobot dataset (on-disk format v3.0), for training policies with LeRobot.

The layout (see docs/interop.md): ``data/chunk-000/file-000.parquet`` holds the frames of many
episodes (actions, states, indices, timestamps); ``videos/<camera>/chunk-000/file-000.mp4`` holds
each camera's frames of the same episodes one after another; ``meta/info.json`` the schema,
``meta/tasks.parquet`` the instructions, ``meta/episodes/chunk-000/file-000.parquet`` where each
episode lies in those files, and ``meta/stats.json`` statistics for normalisation. Each demo is one
episode, and its task's language instruction is the episode's task.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from libero_ll.data.hdf5 import HAND_BODY, IMAGE_KEYS, demo_files, demo_names, iter_demos, read_info
from libero_ll.errors import LiberoError

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_FILE_SIZE_MB = 100
VIDEO_FILE_SIZE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
INFO_PATH = "meta/info.json"
# Our cameras under the names LeRobot's LIBERO environment gives them.
CAMERAS = {"agentview_rgb": "observation.images.image", "eye_in_hand_rgb": "observation.images.image2"}
# LeRobot's LIBERO state: end-effector position and axis-angle, then the two finger positions.
STATE_KEY = "observation.state"
STATE_NAMES = [
    "eef_x",
    "eef_y",
    "eef_z",
    "eef_axis_angle_x",
    "eef_axis_angle_y",
    "eef_axis_angle_z",
    "gripper_left",
    "gripper_right",
]
JOINTS_KEY = "observation.joint_states"
# The arm's delta-pose action (robosuite's operational-space controller, libero_ll/envs/control.py): the hand's
# move (0.05 m per unit) and its turn as an axis-angle vector (0.5 rad per unit), both in the arm base's frame,
# then the gripper. Exports before these names called the turn droll, dpitch, dyaw; the import reads the action
# by its feature's name, never by these.
ACTION_NAMES = ["dx", "dy", "dz", "drot_x", "drot_y", "drot_z", "gripper"]
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
# Encoder name -> the codec name LeRobot records in info.json. Encoders by their own names: a codec's name
# ("h264") leaves the encoder, and so the options it takes, to the FFmpeg build.
VIDEO_CODECS = {"libsvtav1": "av1", "libx264": "h264"}
# The CRF range each encoder accepts.
MAX_CRF = {"libsvtav1": 63, "libx264": 51}
# The highest frame rate an encoder accepts (SVT-AV1 refuses more; x264 has no such limit).
MAX_FPS = {"libsvtav1": 240}
DEFAULT_FPS = 20
# How pictures can be flipped on the way out or in: upside down, left to right, or both (a 180-degree turn).
FLIPS = ("rows", "columns", "both")


def check_flip(flip: str | None) -> None:
    """A LiberoError unless `flip` is None or one of FLIPS (checked before any work)."""
    if flip is not None and flip not in FLIPS:
        raise LiberoError(f"flip must be one of {', '.join(FLIPS)}, got {flip!r}")


def flip_images(frames: np.ndarray, flip: str | None) -> np.ndarray:
    """Frames (T, H, W, C) flipped as `flip` says (one of FLIPS), or as they are for None."""
    check_flip(flip)
    if flip is None:
        return frames
    rows = slice(None, None, -1) if flip in ("rows", "both") else slice(None)
    columns = slice(None, None, -1) if flip in ("columns", "both") else slice(None)
    return np.ascontiguousarray(frames[:, rows, columns])


@dataclass
class VideoOptions:
    """How camera frames are encoded (LeRobot's defaults: AV1, yuv420p, a key frame every 2 frames).

    Args:
        vcodec: encoder: "libsvtav1" (AV1, LeRobot's default) or "libx264" (H.264).
        crf: quality; lower is better and larger.
        g: key frame interval, frames (small keeps random access to a frame cheap).
        preset: encoder speed preset (SVT-AV1: 0-13, x264: a name such as "medium").
    """

    vcodec: str = "libsvtav1"
    crf: int = 30
    g: int = 2
    preset: str | int | None = None

    def options(self) -> dict[str, str]:
        opts = {"g": str(self.g), "crf": str(self.crf)}
        # SVT-AV1's presets above 10 are meant for real time; 8 is its balance of speed and size.
        preset = 8 if self.preset is None and self.vcodec == "libsvtav1" else self.preset
        if preset is not None:
            opts["preset"] = str(preset)
        return opts


@dataclass
class ExportSummary:
    """What was exported: folder, counts, bytes on disk and seconds taken."""

    path: Path
    episodes: int
    frames: int
    tasks: list[str]
    bytes: int
    seconds: float
    files: list[Path] = field(default_factory=list)


def task_of(path: Path) -> str:
    """The language instruction of a demo file's task (the task file's :language)."""
    info = read_info(path)
    text = info.problem_info.get("language_instruction")
    if not text and info.bddl_file_content:
        from libero_ll.bddl.parser import BddlError, parse_string

        try:
            text = parse_string(info.bddl_file_content, info.bddl_file_name or str(path)).language
        except BddlError:
            text = None
    if not text:
        raise LiberoError(
            f"demo file {path}: no language instruction (problem_info or task file) to name the task"
        )
    return " ".join(str(text).split())


# ---------------------------------------------------------------- statistics


class _Stats:
    """Running statistics of one low-dimensional feature: all values kept (they are small)."""

    def __init__(self):
        self.chunks: list[np.ndarray] = []

    def add(self, values: np.ndarray) -> None:
        self.chunks.append(np.asarray(values, dtype=np.float64).reshape(len(values), -1))

    def result(self) -> dict[str, list]:
        return _describe(np.concatenate(self.chunks))


def _describe(x: np.ndarray) -> dict[str, list]:
    out = {
        "min": x.min(0).tolist(),
        "max": x.max(0).tolist(),
        "mean": x.mean(0).tolist(),
        "std": x.std(0).tolist(),
        "count": [int(len(x))],
    }
    for q in QUANTILES:
        out[f"q{round(q * 100):02d}"] = np.quantile(x, q, axis=0).tolist()
    return out


class _ImageStats:
    """Per-channel statistics of uint8 frames from exact 256-bin histograms, in LeRobot's units
    (values scaled to [0, 1], shaped (3, 1, 1))."""

    def __init__(self):
        self.hist = np.zeros((3, 256), dtype=np.int64)
        self.frames = 0

    def add(self, frames: np.ndarray) -> None:
        for c in range(3):
            self.hist[c] += np.bincount(frames[..., c].reshape(-1), minlength=256)
        self.frames += len(frames)

    def result(self) -> dict[str, list]:
        levels = np.arange(256) / 255.0
        n = self.hist.sum(1)
        mean = (self.hist * levels).sum(1) / n
        std = np.sqrt(np.maximum((self.hist * levels**2).sum(1) / n - mean**2, 0.0))
        cum = np.cumsum(self.hist, 1)

        def shaped(v) -> list:
            return np.asarray(v, dtype=np.float64).reshape(3, 1, 1).tolist()

        out = {
            "min": shaped([levels[np.nonzero(h)[0][0]] for h in self.hist]),
            "max": shaped([levels[np.nonzero(h)[0][-1]] for h in self.hist]),
            "mean": shaped(mean),
            "std": shaped(std),
            "count": [int(self.frames)],
        }
        for q in QUANTILES:
            out[f"q{round(q * 100):02d}"] = shaped(
                [levels[int(np.searchsorted(cum[c], q * n[c]))] for c in range(3)]
            )
        return out


# ---------------------------------------------------------------- writers


class _VideoWriter:
    """One camera's mp4 files: episodes appended frame after frame, a new file past the size limit."""

    def __init__(self, root: Path, key: str, fps: int, options: VideoOptions, limit_mb: float):
        self.root, self.key, self.fps, self.options, self.limit = root, key, fps, options, limit_mb * 2**20
        self.chunk, self.file = 0, -1
        self.container = None
        self.stream = None
        self.frames = 0  # in the open file
        self.bytes = 0  # of the packets written to the open file
        self.last_dts = None  # of the last packet written to the open file, in frames
        self.paths: list[Path] = []

    def _open(self, width: int, height: int) -> None:
        import av

        self.file += 1
        if self.file == CHUNKS_SIZE:
            self.chunk, self.file = self.chunk + 1, 0
        path = self.root / VIDEO_PATH.format(video_key=self.key, chunk_index=self.chunk, file_index=self.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.paths.append(path)
        self.container = av.open(str(path), "w")
        self.stream = self.container.add_stream(
            self.options.vcodec, rate=self.fps, options=self.options.options()
        )
        self.stream.width, self.stream.height, self.stream.pix_fmt = width, height, "yuv420p"
        self.stream.time_base = Fraction(1, self.fps)
        self.frames = self.bytes = 0
        self.last_dts = None

    def _mux(self, packet) -> None:
        """Write one encoded packet. A decoding time that does not come after the last one's is moved to just after
        it, as ffmpeg's own command line does for every stream, instead of the container refusing the packet
        (errno 22, "non monotonically increasing dts"); a presentation time before it moves with it."""
        if packet.dts is not None:
            if self.last_dts is not None and packet.dts <= self.last_dts:
                warnings.warn(
                    f"{self.paths[-1].relative_to(self.root)}: the {self.options.vcodec} encoder gave a packet the "
                    f"decoding time {packet.dts} (in frames), not after the one before it ({self.last_dts}); it is "
                    f"written at {self.last_dts + 1}", stacklevel=2)
                if packet.pts is not None and packet.pts >= packet.dts:
                    packet.pts = max(packet.pts, self.last_dts + 1)
                packet.dts = self.last_dts + 1
            self.last_dts = packet.dts
        self.bytes += packet.size
        self.container.mux(packet)

    def add(self, frames: np.ndarray) -> dict:
        """Append one episode's frames (T, H, W, 3) uint8; returns its entries of the episode table."""
        import av

        if self.container is not None and self.bytes >= self.limit:
            self.close()
        if self.container is None:
            self._open(frames.shape[2], frames.shape[1])
        start = self.frames
        for frame in frames:
            vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            vf.pts = self.frames
            vf.time_base = Fraction(1, self.fps)
            for packet in self.stream.encode(vf):
                self._mux(packet)
            self.frames += 1
        return {
            f"videos/{self.key}/chunk_index": self.chunk,
            f"videos/{self.key}/file_index": self.file,
            f"videos/{self.key}/from_timestamp": start / self.fps,
            f"videos/{self.key}/to_timestamp": self.frames / self.fps,
        }

    def close(self) -> None:
        if self.container is not None:
            for packet in self.stream.encode():
                self._mux(packet)
            self.container.close()
            self.container = None


def _video_error(error, writer: _VideoWriter, where: str) -> LiberoError:
    """A LiberoError for an encoder's or muxer's error while `writer` wrote the frames of `where`."""
    said = error.log[2].strip() if error.log else ""
    return LiberoError(
        f"{where}: encoding camera {writer.key} with {writer.options.vcodec} into "
        f"{writer.paths[-1].relative_to(writer.root)} failed: {error.strerror}"
        f"{f' ({said})' if said else ''}; nothing was written: export again, or with --vcodec libx264"
    )


class _ParquetFiles:
    """Rows appended to numbered parquet files, one row group per call, a new file past the size limit."""

    def __init__(self, root: Path, template: str, limit_mb: float):
        self.root, self.template, self.limit = root, template, limit_mb * 2**20
        self.chunk, self.file = 0, -1
        self.writer = None
        self.rows = 0  # in the open file
        self.paths: list[Path] = []

    def add(self, table) -> tuple[int, int, int]:
        """Write one table; returns (chunk, file, first row's index in that file)."""
        import pyarrow.parquet as pq

        if self.writer is not None and self.paths[-1].stat().st_size >= self.limit:
            self.close()
        if self.writer is None:
            self.file += 1
            if self.file == CHUNKS_SIZE:
                self.chunk, self.file = self.chunk + 1, 0
            path = self.root / self.template.format(chunk_index=self.chunk, file_index=self.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(str(path), table.schema)
            self.rows = 0
            self.paths.append(path)
        first = self.rows
        self.writer.write_table(table)
        self.rows += table.num_rows
        return self.chunk, self.file, first

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


# ---------------------------------------------------------------- export


def _vector(values: np.ndarray, dtype) -> "object":
    import pyarrow as pa

    values = np.ascontiguousarray(values, dtype=dtype)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def _features(height: int, width: int, fps: int, codec: str, joints: bool = True) -> dict:
    video = {
        "dtype": "video",
        "shape": [height, width, 3],
        "names": ["height", "width", "channels"],
        "info": {
            "video.height": height,
            "video.width": width,
            "video.codec": codec,
            "video.pix_fmt": "yuv420p",
            "video.is_depth_map": False,
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
        },
    }
    one = {"shape": [1], "names": None}
    return {
        **{key: dict(video) for key in CAMERAS.values()},
        STATE_KEY: {"dtype": "float32", "shape": [8], "names": STATE_NAMES},
        **(
            {JOINTS_KEY: {"dtype": "float32", "shape": [7], "names": [f"joint_{i}" for i in range(1, 8)]}}
            if joints
            else {}
        ),
        "action": {"dtype": "float32", "shape": [len(ACTION_NAMES)], "names": ACTION_NAMES},
        "next.reward": {"dtype": "float32", **one},
        "next.done": {"dtype": "bool", **one},
        "timestamp": {"dtype": "float32", **one},
        "frame_index": {"dtype": "int64", **one},
        "episode_index": {"dtype": "int64", **one},
        "index": {"dtype": "int64", **one},
        "task_index": {"dtype": "int64", **one},
    }


def export_lerobot(
    source,
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    fps: int | None = None,
    video: VideoOptions | None = None,
    robot_type: str = "panda",
    data_file_size_mb: float = DATA_FILE_SIZE_MB,
    video_file_size_mb: float = VIDEO_FILE_SIZE_MB,
    flip: str | None = None,
    progress: bool = False,
) -> ExportSummary:
    """Write the demos of a suite as a LeRobot dataset (format v3.0) in the folder ``out``.

    Args:
        source: a folder of demo files (every ``*.hdf5`` in it, in name order), one file, or a list.
        out: the dataset folder to create, or an empty folder. It appears complete or not at all
            (written under a temporary name beside it, then renamed).
        overwrite: replace an existing dataset ``out`` (only once the new dataset is complete); a folder
            that holds anything else is never replaced.
        fps: frames per second; None reads the control frequency from the files (default 20 Hz).
        video: how camera frames are encoded (VideoOptions; default AV1 as LeRobot records).
        robot_type: recorded in meta/info.json.
        data_file_size_mb, video_file_size_mb: a new parquet / mp4 file is started past this size.
        flip: flip the (upright) pictures as they are written: "rows", "columns" or "both" (FLIPS);
            None writes them upright.
        progress: show a progress bar over demo files.

    Returns an ExportSummary (episodes, frames, tasks, size in bytes, seconds).

    Raises:
        LiberoError: no demo files, ``out`` exists (and is not empty) without overwrite or is not a
        dataset, a file lacks a camera or the robot's observations, some demos hold joint states and
        others not, actions or robot readings hold NaN or infinity, or the files' images differ in size.
        Nothing is left behind (folders made for ``out`` included).

    Joint states (``obs/joint_states``) are exported as ``observation.joint_states`` when every demo holds
    them, and the feature is left out when none does (files imported from a dataset without it).
    """
    started = time.perf_counter()
    video = video or VideoOptions()
    if video.vcodec not in VIDEO_CODECS:
        raise LiberoError(
            f"video codec {video.vcodec!r} is not supported; use one of {', '.join(VIDEO_CODECS)}"
        )
    if not 0 <= video.crf <= MAX_CRF[video.vcodec]:
        raise LiberoError(f"crf {video.crf}: {video.vcodec} takes a crf from 0 to {MAX_CRF[video.vcodec]}")
    if fps is not None and fps < 1:
        raise LiberoError(f"fps must be 1 or more, got {fps}")
    if fps is not None:
        _check_fps(fps, video.vcodec, "")
    check_flip(flip)
    files = demo_files(source)
    if not str(out).strip():
        raise LiberoError("the dataset folder to write is empty; give a path")
    out = Path(out)
    if not out.name:  # "." or "/": the folder's own name is needed to write beside it
        out = out.resolve()
    # An empty folder (made beforehand for the dataset) holds nothing to lose: it is replaced as a missing one.
    taken = out.exists() and not _empty_folder(out)
    if taken and not overwrite:
        raise LiberoError(f"{out} exists; pass --overwrite to replace it")
    # Replacing `out` would delete the demo files being exported when they lie in it (or are it).
    inside = [f for f in files if out.resolve() == f.resolve() or out.resolve() in f.resolve().parents]
    if inside:
        raise LiberoError(
            f"{out} is or holds a demo file being exported ({inside[0]}); replacing it would delete the "
            "demos: write the dataset to another folder"
        )
    if taken and not (out / INFO_PATH).is_file():
        # --overwrite replaces a dataset, never some other folder or file that happens to be named.
        raise LiberoError(
            f"{out} exists and is not a LeRobot dataset (no {INFO_PATH}); --overwrite replaces only a dataset: "
            "choose another folder"
        )
    tasks = [task_of(f) for f in files]
    joints = _joint_states_in(files)
    _check_finite(files, ["actions", "obs/ee_states", "obs/gripper_states", *(["obs/joint_states"] if joints else [])])
    if not fps:
        fps = _common_fps(files)
        _check_fps(fps, video.vcodec, " (the demos' control rate)")
    # The folders above `out` that this call makes, removed again (deepest first) when it fails.
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    # SVT-AV1 prints its settings on stderr for every file unless told otherwise.
    svt_log = os.environ.get("SVT_LOG")
    os.environ["SVT_LOG"] = "1"
    # The muxer's and encoders' error messages, kept so that a failure can say what went wrong (PyAV's logging
    # is off by default, and an error then says only "Invalid argument").
    import av.logging

    av_level = av.logging.get_level()
    av.logging.set_level(av.logging.ERROR)
    av_logs = av.logging.Capture()
    av_logs.__enter__()
    videos: dict[str, _VideoWriter] = {}
    data = _ParquetFiles(tmp, DATA_PATH, data_file_size_mb)
    try:
        # A task is numbered when its first episode is written: a file without demos adds no task.
        task_index: dict[str, int] = {}
        stats = {
            k: _Stats()
            for k in (
                STATE_KEY,
                *((JOINTS_KEY,) if joints else ()),
                "action",
                "next.reward",
                "next.done",
                "timestamp",
                "frame_index",
                "episode_index",
                "index",
                "task_index",
            )
        }
        image_stats = {key: _ImageStats() for key in CAMERAS.values()}
        episodes: list[dict] = []
        size = None
        index = 0
        walk = files
        if progress:
            from tqdm import tqdm

            walk = tqdm(files, desc="export", unit="file")
        for path, task in zip(walk, tasks):
            obs_keys = [*CAMERAS, "ee_states", "gripper_states", *(["joint_states"] if joints else [])]
            # The hand's orientation as LIBERO's files and LeRobot's LIBERO datasets hold it (the hand body's).
            for k, demo in enumerate(iter_demos(path, obs_keys, ee_orientation=HAND_BODY)):
                T = demo.num_steps
                if T == 0:
                    name = demo_names(path)[k]
                    raise LiberoError(f"demo file {path}: data/{name} has no steps; an episode needs one or more")
                _check_export_shapes(path, demo_names(path)[k], demo, obs_keys)
                frames = {CAMERAS[k]: flip_images(demo.obs[k], flip) for k in IMAGE_KEYS}
                shapes = {f.shape[1:] for f in frames.values()}
                if len(shapes) != 1 or (size is not None and shapes != {size}):
                    raise LiberoError(
                        f"demo file {path}: images of {sorted(shapes)} pixels, the dataset's are "
                        f"{size}: export files collected at one image size"
                    )
                size = next(iter(shapes))
                if size[0] % 2 or size[1] % 2:
                    raise LiberoError(
                        f"demo file {path}: images of {size[0]}x{size[1]} pixels; video needs even sizes"
                    )
                ep = len(episodes)
                columns = _columns(demo, fps, ep, index, task_index.setdefault(task, len(task_index)), joints)
                chunk, file, _ = data.add(_table(columns))
                row = {
                    "episode_index": ep,
                    "tasks": [task],
                    "length": T,
                    "data/chunk_index": chunk,
                    "data/file_index": file,
                    "dataset_from_index": index,
                    "dataset_to_index": index + T,
                }
                for key, f in frames.items():
                    if key not in videos:
                        videos[key] = _VideoWriter(tmp, key, fps, video, video_file_size_mb)
                    try:
                        row.update(videos[key].add(f))
                    except av.FFmpegError as e:
                        raise _video_error(e, videos[key], f"demo file {path}: data/{demo_names(path)[k]}") from None
                    one = _ImageStats()
                    one.add(f)
                    image_stats[key].add(f)
                    row.update({f"stats/{key}/{s}": v for s, v in one.result().items()})
                for name, values in columns.items():
                    stats[name].add(values)
                    row.update(
                        {
                            f"stats/{name}/{s}": v
                            for s, v in _describe(np.asarray(values, dtype=np.float64).reshape(T, -1)).items()
                        }
                    )
                row["meta/episodes/chunk_index"] = 0
                row["meta/episodes/file_index"] = 0
                episodes.append(row)
                index += T
        data.close()
        for w in videos.values():
            try:
                w.close()
            except av.FFmpegError as e:
                raise _video_error(e, w, "the last episode's frames") from None
        if not episodes:
            raise LiberoError(f"{', '.join(map(str, files))}: no demos to export")
        _write_episodes(tmp, episodes)
        _write_tasks(tmp, list(task_index))
        all_stats = {name: s.result() for name, s in stats.items()}
        all_stats.update({key: s.result() for key, s in image_stats.items()})
        _write_json(tmp / "meta/stats.json", all_stats)
        info = {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": robot_type,
            "total_episodes": len(episodes),
            "total_frames": index,
            "total_tasks": len(task_index),
            "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": data_file_size_mb,
            "video_files_size_in_mb": video_file_size_mb,
            "fps": fps,
            "splits": {"train": f"0:{len(episodes)}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH,
            "features": _features(size[0], size[1], fps, VIDEO_CODECS[video.vcodec], joints),
        }
        _write_json(tmp / INFO_PATH, info)
        _move_into_place(tmp, out, overwrite)
    except BaseException:
        data.close()
        for w in videos.values():
            try:
                w.close()
            except Exception:  # the file is discarded anyway
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # something else was put there meanwhile: kept
                break
        raise
    finally:
        av_logs.__exit__(None, None, None)
        av.logging.set_level(av_level)
        if svt_log is None:
            os.environ.pop("SVT_LOG", None)
        else:
            os.environ["SVT_LOG"] = svt_log
    written = sorted(p for p in out.rglob("*") if p.is_file())
    return ExportSummary(
        path=out,
        episodes=len(episodes),
        frames=index,
        tasks=list(task_index),
        bytes=sum(p.stat().st_size for p in written),
        seconds=time.perf_counter() - started,
        files=written,
    )


def _joint_states_in(files: list[Path]) -> bool:
    """Whether the demos of `files` hold joint states: True when all do (or there are none), False when none
    does. A dataset's episodes share one set of features, so some with and some without is a LiberoError
    naming a demo of each."""
    import h5py

    have = lack = None  # (file, demo) of the first demo found with and without
    for path in files:
        names = demo_names(path)  # checks the file (exists, HDF5, has data)
        with h5py.File(path, "r") as f:
            for name in names:
                group = f["data"][name]
                if not isinstance(group, h5py.Group):  # as reading it would say, before the joint states are asked
                    raise LiberoError(f"demo file {path}: data/{name} is not a group of datasets")
                obs = group.get("obs")
                found = isinstance(obs, h5py.Group) and "joint_states" in obs
                if found and have is None:
                    have = (path, name)
                elif not found and lack is None:
                    lack = (path, name)
                if have and lack:
                    raise LiberoError(
                        f"demo file {lack[0]}: data/{lack[1]} has no joint states (obs/joint_states), but "
                        f"data/{have[1]} of {have[0]} has: the episodes of a dataset share their features, so "
                        "export files whose demos all hold joint states, or none does"
                    )
    return lack is None


def _check_finite(files: list[Path], keys: list[str]) -> None:
    """A LiberoError naming the file, demo and dataset of the first of `keys` (paths in a demo group) that holds
    NaN or infinity, before anything is written: training and `verify` refuse such demos, and a dataset made
    of them would pass them on without a word. Datasets a demo lacks are left to the reading that follows."""
    import h5py

    for path in files:
        with h5py.File(path, "r") as f:
            data = f["data"]
            for name in demo_names(path):
                group = data[name]
                for key in keys:
                    arr = group.get(key) if isinstance(group, h5py.Group) else None
                    if not isinstance(arr, h5py.Dataset) or not np.issubdtype(arr.dtype, np.floating):
                        continue
                    bad = ~np.isfinite(arr[()])
                    if bad.any():
                        step = int(np.argwhere(bad)[0][0]) if bad.ndim else 0
                        raise LiberoError(
                            f"demo file {path}: data/{name}/{key} holds NaN or infinity (step {step}); a dataset "
                            "takes finite numbers only: fix or remake the file"
                        )


def _check_export_shapes(path: Path, name: str, demo, obs_keys: list[str]) -> None:
    """A LiberoError naming the dataset of a demo whose actions, robot readings or pictures are not as wide as a
    LeRobot dataset's features hold them (a file written or imported elsewhere): the frame table failed to build
    with pyarrow's traceback."""
    from libero_ll.data.hdf5 import LOWDIM_SIZES

    widths = {"actions": demo.actions, **{k: demo.obs[k] for k in obs_keys if k not in IMAGE_KEYS}}
    for key, arr in widths.items():
        want = len(ACTION_NAMES) if key == "actions" else LOWDIM_SIZES[key]
        if arr.ndim != 2 or arr.shape[1] != want:
            where = key if key == "actions" else f"obs/{key}"
            raise LiberoError(
                f"demo file {path}: data/{name}/{where} has shape {tuple(arr.shape)}, where a dataset holds "
                f"({len(arr)}, {want}): fix or remake the file"
            )
    for key in IMAGE_KEYS:
        arr = demo.obs[key]
        if arr.ndim != 4 or arr.shape[3] != 3:
            raise LiberoError(
                f"demo file {path}: data/{name}/obs/{key} has shape {tuple(arr.shape)}; pictures are "
                "(steps, height, width, 3): fix or remake the file"
            )


def _columns(
    demo, fps: int, episode: int, first: int, task: int, joints: bool = True
) -> dict[str, np.ndarray]:
    """The frame table's columns for one demo, each (T, n); joint states only with `joints`."""
    T = demo.num_steps
    last = np.arange(T) == T - 1
    return {
        STATE_KEY: np.concatenate([demo.obs["ee_states"], demo.obs["gripper_states"]], 1),
        **({JOINTS_KEY: demo.obs["joint_states"]} if joints else {}),
        "action": demo.actions,
        "next.reward": last.astype(np.float32)[:, None],
        "next.done": last[:, None],
        "timestamp": (np.arange(T) / fps).astype(np.float32)[:, None],
        "frame_index": np.arange(T, dtype=np.int64)[:, None],
        "episode_index": np.full((T, 1), episode, dtype=np.int64),
        "index": np.arange(first, first + T, dtype=np.int64)[:, None],
        "task_index": np.full((T, 1), task, dtype=np.int64),
    }


def _table(columns: dict[str, np.ndarray]):
    """A pyarrow table of the columns: vectors as fixed-size float32 lists, the rest as scalars."""
    import pyarrow as pa

    arrays = [
        _vector(v, np.float32) if name in (STATE_KEY, JOINTS_KEY, "action") else pa.array(v[:, 0])
        for name, v in columns.items()
    ]
    return pa.table(arrays, names=list(columns))


def _check_fps(fps: int, vcodec: str, source: str) -> None:
    """LiberoError when the encoder `vcodec` cannot write videos at `fps` frames per second."""
    most = MAX_FPS.get(vcodec)
    if most is not None and fps > most:
        others = [c for c in VIDEO_CODECS if c not in MAX_FPS]
        raise LiberoError(f"fps {fps}{source}: {vcodec} takes at most {most} frames per second; give a lower fps"
                          + (f", or use {' or '.join(others)}" if others else ""))


def _common_fps(files: list[Path]) -> int:
    """The control frequency the files were collected at, which becomes the dataset's frame rate; files
    collected at different ones are a LiberoError naming two of them (one dataset has one frame rate)."""
    first = None
    for path in files:
        rate = _fps_of(path)
        if first is None:
            first = (path, rate)
        elif rate != first[1]:
            raise LiberoError(
                f"demo file {path} was collected at {rate} Hz but {first[0]} at {first[1]} Hz: a dataset has "
                "one frame rate: export the files of each rate on their own"
            )
    return first[1] if first else DEFAULT_FPS


def _fps_of(path: Path) -> int:
    rate = read_info(path).control_freq
    return DEFAULT_FPS if rate is None else int(rate)


def _write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=4) + "\n")


def _write_tasks(root: Path, tasks: list[str]) -> None:
    """meta/tasks.parquet: task_index by task, stored so that pandas reads the task as the index."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())}
    )
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
    table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    path = root / "meta/tasks.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))


def _write_episodes(root: Path, episodes: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for name in episodes[0]:
        values = [e[name] for e in episodes]
        if name == "tasks":
            columns[name] = pa.array(values, pa.list_(pa.string()))
        elif name.startswith("stats/"):
            flat = [np.asarray(v, dtype=np.float64).reshape(-1).tolist() for v in values]
            columns[name] = pa.array(flat, pa.list_(pa.int64() if name.endswith("/count") else pa.float64()))
        elif isinstance(values[0], float):
            columns[name] = pa.array(values, pa.float64())
        else:
            columns[name] = pa.array(values, pa.int64())
    path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), str(path))


def _empty_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _move_into_place(tmp: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished dataset to ``out``, which may be an empty folder; an old dataset there is removed
    only after the rename."""
    # mkdtemp made the folder private; the dataset gets the usual permissions.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    if _empty_folder(out) and out.resolve() == Path.cwd().resolve():
        # Replacing the current folder would leave the shell in a removed one: the dataset moves into it
        # instead, meta/ (what makes the folder a dataset) last.
        for entry in sorted(tmp.iterdir(), key=lambda p: p.name == "meta"):
            os.replace(entry, out / entry.name)
        tmp.rmdir()
        return
    if not out.exists() or _empty_folder(out):
        try:
            os.replace(tmp, out)  # the system replaces an empty folder, and refuses one that is not
        except OSError:
            if not out.exists() or _empty_folder(out):
                raise
            raise LiberoError(f"{out}: something was written into it while exporting; it is kept as it is, and "
                              "the dataset is not written") from None
        return
    if not overwrite:
        raise LiberoError(f"{out} appeared while exporting; pass --overwrite to replace it")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
