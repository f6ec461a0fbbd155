"""LeRobot datasets in as demo files (one HDF5 file per task), so that `libero-ll train` learns from them.

Reads LeRobot's on-disk formats v3.0 (many episodes per parquet and mp4 file, ``meta/episodes/``) and
v2.0/v2.1 (one parquet file per episode, ``meta/episodes.jsonl``), with camera frames stored as video or
as images inside the parquet files. The features are those of LeRobot's LIBERO datasets (and of
`libero-ll export`): two cameras, an 8-number state (hand position, axis-angle, two fingers), optional
joint positions, and 7-number actions. See docs/interop.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from libero_ll.data.hdf5 import HAND_BODY, Demo, DemoWriter
from libero_ll.data.lerobot import CAMERAS, JOINTS_KEY, STATE_KEY, check_flip, flip_images
from libero_ll.errors import LiberoError

VERSIONS = ("v2.0", "v2.1", "v3.0")
GENERATOR = "lerobot import"
# Other names the same features go by in LIBERO datasets converted for LeRobot.
STATE_NAMES = (STATE_KEY, "state", "observation.states")
ACTION_NAMES = ("action", "actions")
JOINTS_NAMES = (JOINTS_KEY, "joint_states", "observation.joint_state")
# Camera feature names read as the agentview and the wrist camera without being told.
KNOWN_CAMERAS = {
    **{feature: key for key, feature in CAMERAS.items()},
    "observation.images.agentview": "agentview_rgb",
    "observation.images.agentview_image": "agentview_rgb",
    "observation.images.wrist_image": "eye_in_hand_rgb",
    "observation.images.eye_in_hand": "eye_in_hand_rgb",
    "image": "agentview_rgb",
    "wrist_image": "eye_in_hand_rgb",
}
# The options that name a camera's feature (cameras= of import_lerobot), by our camera key.
CAMERA_OPTIONS = {"agentview_rgb": "--agentview", "eye_in_hand_rgb": "--wrist"}
# v2's path templates, when info.json lacks them.
V2_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
V2_VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"


@dataclass
class ImportSummary:
    """What was imported: the folder, counts, each task's file and the seconds taken."""

    path: Path
    version: str
    episodes: int
    frames: int
    files: dict[str, Path] = field(default_factory=dict)  # instruction -> demo file
    seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)  # instruction -> episodes left out (skip_unknown)


def import_lerobot(
    source: str | os.PathLike,
    out: str | os.PathLike,
    *,
    task_files: Sequence[str | os.PathLike] | None = None,
    flip: str | None = None,
    image_size: int | None = None,
    cameras: dict[str, str] | None = None,
    skip_unknown: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    suite: str | None = None,
) -> ImportSummary:
    """Write the episodes of a LeRobot dataset as demo files in ``out``, one ``<task>.hdf5`` per task.

    Args:
        source: the dataset's folder (the one holding ``meta/info.json``).
        out: folder for the demo files (made when missing).
        task_files: name each task's file after the one of these task files (a suite's) whose
            language instruction is the episode's task, and store that task file's text in it; every
            task must then be found among them. Without them a file is named after its instruction
            (``pick up the soup`` -> ``pick_up_the_soup.hdf5``).
        flip: flip every frame: "rows" (upside down), "columns" (left to right) or "both" (a
            180-degree turn), so that the demo files hold them upright as those collected here do;
            None keeps them as stored (docs/interop.md says which LIBERO datasets need what).
        image_size: resize every frame to image_size x image_size pixels (area averaging when
            shrinking), e.g. LeRobot's 256-pixel LIBERO pictures to a preset's 128; None keeps them.
        cameras: our camera key ("agentview_rgb", "eye_in_hand_rgb") -> the dataset's feature, for
            datasets whose cameras have other names than LeRobot's LIBERO ones (`--agentview` and
            `--wrist` in messages).
        skip_unknown: with `task_files`, leave out the episodes whose task none of them has (a dataset
            of several suites, imported one suite at a time) instead of failing.
        overwrite: replace demo files already in ``out``; without it they are an error, before anything
            is written.
        progress: show a progress bar over episodes.
        suite: the name of the suite `task_files` come from, to name it in messages.

    Each file is written under a temporary name and renamed when complete; on an error no file of this
    import is left in ``out`` and files already there are untouched.

    Raises:
        LiberoError: naming what is missing or unexpected in the dataset, or an output that exists.
    """
    started = time.perf_counter()
    check_flip(flip)
    if image_size is not None and int(image_size) < 1:
        raise LiberoError(f"image_size must be 1 or more pixels, got {image_size}")
    root = Path(source)
    info = _read_info(root)
    version = str(info.get("codebase_version"))
    features = info["features"]
    fps = info["fps"]
    cams = _camera_features(features, cameras, root)
    state = _feature(features, STATE_NAMES, root, "state")
    action = _feature(features, ACTION_NAMES, root, "action")
    joints = next((n for n in JOINTS_NAMES if n in features), None)
    _check_shape(features, state, 8, root, "the hand's position and axis-angle, then the two fingers")
    _check_shape(features, action, 7, root, "the arm's 6 and the gripper's 1")
    if joints is not None and _shape(features, joints, root) != [7]:
        joints = None  # another robot's joints: not read (only the policies that read joint_states need them)

    episodes = _episodes(root, version)
    if not episodes:
        raise LiberoError(f"{root}: the dataset has no episodes")
    names = _file_names([e["task"] for e in episodes], task_files, root, skip_unknown, suite)
    skipped: dict[str, int] = {}
    for e in episodes:
        if e["task"] not in names:
            skipped[e["task"]] = skipped.get(e["task"], 0) + 1
    episodes = [e for e in episodes if e["task"] in names]
    if not episodes:
        its = "its one task is" if len(skipped) == 1 else f"none of its {len(skipped)} tasks is"
        raise LiberoError(f"{root}: {its} the instruction of {'none' if len(skipped) == 1 else 'one'} of "
                          f"{_task_files_named(task_files, suite)}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise LiberoError(f"{out} is a file, not a folder for demo files")
    targets = {task: out / f"{name}.hdf5" for task, (name, _) in names.items()}
    there = sorted(str(p) for p in targets.values() if p.exists())
    if there and not overwrite:
        raise LiberoError(f"{there[0]} exists ({len(there)} of the {len(targets)} files); pass --overwrite to "
                          "replace them")

    _check_frame_rate(fps, root)  # once the dataset is known to be one to import
    frames = _FrameSource(root, info, version, cams, features)
    writers: dict[str, DemoWriter] = {}
    total = 0
    walk = episodes
    if progress:
        from tqdm import tqdm

        walk = tqdm(episodes, desc="import", unit="episode")
    try:
        for ep in walk:
            table = frames.rows(ep)
            T = table.num_rows
            if T == 0:
                raise LiberoError(f"{root}: episode {ep['index']} has no frames")
            _check_frame_order(table, ep, root)
            s = _matrix(table, state, ep, root, 8)
            obs = {"ee_states": s[:, :6], "gripper_states": s[:, 6:8]}
            if joints is not None:
                obs["joint_states"] = _matrix(table, joints, ep, root, 7)
            for key, feature in cams.items():
                images = frames.images(ep, feature, table)
                if len(images) != T:
                    raise LiberoError(f"{root}: episode {ep['index']}: {len(images)} frames of {feature} for "
                                      f"{T} rows")
                obs[key] = flip_images(_resized(images, image_size), flip)
            task = ep["task"]
            if task not in writers:
                name, bddl = names[task]
                writers[task] = DemoWriter(
                    targets[task], env_name="LeRobot", problem_info={"language_instruction": task},
                    bddl_file_name=str(bddl) if bddl else "",
                    bddl_file_content=bddl.read_text(encoding="utf-8") if bddl else "",
                    env_args={"control_freq": fps, "source": str(root.resolve()), "codebase_version": version},
                    generator=f"{GENERATOR} ({version})",
                    # LeRobot's LIBERO datasets hold the hand body's orientation, as LIBERO's files do.
                    ee_orientation=HAND_BODY,
                )
            writers[task].add(Demo(
                actions=_matrix(table, action, ep, root, 7),  # float32, as LeRobot and collected files hold them
                states=np.zeros((T, 0)), robot_states=np.zeros((T, 0)), obs=obs, init_state=np.zeros(0),
            ))
            total += T
        for w in writers.values():
            w.set_attrs({"lerobot_episodes": w.num_demos})
            w.close()
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    finally:
        frames.close()
    return ImportSummary(out, version, len(episodes), total, {t: targets[t] for t in writers},
                         time.perf_counter() - started, skipped)


# ---------------------------------------------------------------- metadata


def _read_info(root: Path) -> dict:
    """meta/info.json, checked: a known version, each feature an object, and a frame rate (read as a float)."""
    path = root / "meta" / "info.json"
    if root.is_file():
        raise LiberoError(f"{root}: a file; give the dataset's folder (the one holding meta/info.json)")
    if not root.is_dir():
        raise LiberoError(f"{root}: no such dataset folder")
    if not path.is_file():
        raise LiberoError(f"{root}: not a LeRobot dataset (no meta/info.json)")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise LiberoError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        raise LiberoError(f"{path}: no features")
    if str(info.get("codebase_version")) not in VERSIONS:
        raise LiberoError(f"{path}: format {info.get('codebase_version')!r}; this reads {', '.join(VERSIONS)}")
    for name, feature in info["features"].items():
        if not isinstance(feature, dict):
            raise LiberoError(f"{path}: feature {name} is {json.dumps(feature)}, not an object with its dtype "
                              "and shape")
    fps = info.get("fps")
    if fps is None:
        raise LiberoError(f"{path}: no frame rate (fps)")
    try:
        info["fps"] = float(fps)
    except (TypeError, ValueError):
        info["fps"] = math.nan
    if isinstance(fps, bool) or not 0 < info["fps"] < math.inf:
        raise LiberoError(f"{path}: fps is {json.dumps(fps)}; the frame rate is a number of frames per second "
                          "above 0")
    return info


def _shape(features: dict, name: str, root: Path) -> list:
    shape = features[name].get("shape") or []
    try:
        return [int(n) for n in shape]
    except (TypeError, ValueError):
        raise LiberoError(f"{root / 'meta/info.json'}: feature {name} has shape {json.dumps(shape)}, not a list "
                          "of sizes") from None


def _feature(features: dict, names: tuple, root: Path, what: str) -> str:
    for n in names:
        if n in features:
            return n
    raise LiberoError(f"{root}: no {what} feature (looked for {', '.join(names)}; the dataset has "
                      f"{', '.join(features)})")


def _check_shape(features: dict, name: str, size: int, root: Path, layout: str) -> None:
    shape = _shape(features, name, root)
    if shape != [size]:
        raise LiberoError(f"{root}: feature {name} has shape {shape}; LIBERO's is [{size}] ({layout})")


def _camera_features(features: dict, given: dict[str, str] | None, root: Path) -> dict[str, str]:
    """Our camera key -> the dataset's feature."""
    pictures = [n for n, f in features.items() if f.get("dtype") in ("video", "image")]
    if given:
        bad = [f"{CAMERA_OPTIONS.get(k, k)} {v}" for k, v in given.items() if v not in pictures]
        if bad:
            what = "is not a camera feature" if len(bad) == 1 else "are not camera features"
            has = f"its camera features: {', '.join(pictures)}" if pictures else "it has no camera features"
            raise LiberoError(f"{' and '.join(bad)} {what} of {root}; {has}")
        if len(set(given.values())) < len(given):
            raise LiberoError(f"{' and '.join(f'{CAMERA_OPTIONS.get(k, k)} {v}' for k, v in given.items())}: "
                              "the two cameras name the same feature; give each its own")
        return dict(given)
    found = {KNOWN_CAMERAS[n]: n for n in pictures if n in KNOWN_CAMERAS}
    if set(found) != {"agentview_rgb", "eye_in_hand_rgb"}:
        raise LiberoError(
            f"{root}: cannot tell the agentview and wrist cameras among {pictures}; name them "
            f"(--agentview FEATURE --wrist FEATURE)"
        )
    return found


def _episodes(root: Path, version: str) -> list[dict]:
    """Every episode in index order: its index, task (the first of its tasks) and the where-abouts of
    its rows and frames (v3.0)."""
    import pyarrow.parquet as pq

    rows = []  # (where the episode is written, its entries)
    if version == "v3.0":
        files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
        if not files:
            raise LiberoError(f"{root}: no meta/episodes/chunk-*/file-*.parquet")
        for f in files:
            try:
                rows.extend((f, e) for e in pq.read_table(str(f)).to_pylist())
            except Exception as e:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
                raise LiberoError(f"{f}: not a readable parquet file ({e})") from None
    else:
        path = root / "meta" / "episodes.jsonl"
        if not path.is_file():
            raise LiberoError(f"{root}: no meta/episodes.jsonl")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise LiberoError(f"{path}: not UTF-8 text ({e})") from None
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"{path}:{n}", json.loads(line)))
                except ValueError:
                    raise LiberoError(f"{path}:{n}: not valid JSON") from None
    out = []
    for where, e in rows:
        if not isinstance(e, dict):
            raise LiberoError(f"{where}: not an episode (a JSON object): {str(e)[:200]}")
        tasks = e.get("tasks")
        if "episode_index" not in e or not tasks:
            raise LiberoError(f"{where}: an episode without episode_index or tasks: {str(e)[:200]}")
        try:
            index = int(e["episode_index"])
        except (TypeError, ValueError):
            raise LiberoError(f"{where}: episode_index {e['episode_index']!r} is not a number") from None
        task = str(tasks[0] if isinstance(tasks, (list, tuple)) else tasks)
        out.append({**e, "index": index, "task": task, "where": where})
    return sorted(out, key=lambda e: e["index"])


def _entry(ep: dict, key: str, kind: type = int) -> int | float:
    """An entry of an episode's row in meta/episodes (v3.0: where its rows and frames lie) as a number."""
    if key not in ep:
        raise LiberoError(f"{ep['where']}: episode {ep['index']} has no {key}")
    try:
        value = kind(ep[key])
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise LiberoError(f"{ep['where']}: episode {ep['index']}: {key} is {ep[key]!r}, not a number")
    return value


def _normal(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").strip().rstrip(".").split())


# Longest file name (without .hdf5) made from an instruction: file systems take 255 bytes, and the
# collection's partial folder and temporary files add their suffixes.
MAX_NAME = 180


def _file_name(instruction: str) -> str:
    """An instruction in snake case; a long one is cut and given a hash of the whole, to stay unique."""
    name = re.sub(r"[^a-z0-9]+", "_", instruction.lower()).strip("_") or "task"
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(instruction.encode()).hexdigest()[:10]
        name = f"{name[:MAX_NAME - 11].rstrip('_')}_{digest}"
    return name


def _task_files_named(task_files, suite: str | None) -> str:
    """The task files in words: their suite and the folder that holds them."""
    folders = sorted({str(Path(f).parent) for f in task_files})
    where = folders[0] if len(folders) == 1 else f"{len(folders)} folders"
    if not suite:
        return f"the task files in {where}"
    # A suite given as a folder is where its task files are; a suite's name is not.
    return f"the task files of suite {suite}" + ("" if Path(suite) == Path(where) else f" (in {where})")


def _file_names(tasks: list[str], task_files, root: Path, skip_unknown: bool = False,
                suite: str | None = None) -> dict:
    """Instruction -> (file name without .hdf5, its task file or None); with `skip_unknown`, instructions
    that no task file has are left out."""
    unique = list(dict.fromkeys(tasks))
    if task_files is None:
        names = {t: (_file_name(t), None) for t in unique}
        clash = {}
        for t, (n, _) in names.items():
            clash.setdefault(n, []).append(t)
        twice = [ts for ts in clash.values() if len(ts) > 1]
        if twice:
            raise LiberoError(f"{root}: the tasks {twice[0]} would share a file name; import with --suite")
        return names
    from libero_ll.bddl.parser import parse_file

    by_language: dict[str, list[Path]] = {}
    for f in map(Path, task_files):
        by_language.setdefault(_normal(parse_file(f).language), []).append(f)
    names, unknown = {}, []
    for t in unique:
        found = by_language.get(_normal(t), [])
        if len(found) > 1:
            raise LiberoError(f"task {t!r} is the instruction of {len(found)} of "
                              f"{_task_files_named(task_files, suite)} ({', '.join(f.stem for f in found)}): "
                              "import without --suite")
        if not found:
            unknown.append(t)
        else:
            names[t] = (found[0].stem, found[0])
    if unknown and not skip_unknown:
        are = "is" if len(unknown) == 1 else "are"
        raise LiberoError(f"{root}: {len(unknown)} of its {len(unique)} tasks {are} the instruction of none of "
                          f"{_task_files_named(task_files, suite)}, e.g. {unknown[0]!r} (--skip-unknown leaves "
                          "their episodes out)")
    return names


# ---------------------------------------------------------------- rows and frames


class FrameRateWarning(UserWarning):
    """A dataset recorded at another rate than the simulator's policy steps."""


def _check_frame_rate(fps, root: Path) -> None:
    """Warn when the dataset's frames come at another rate than our policy steps (EnvConfig.control_freq): each of
    its delta actions then stands for another stretch of time, so a policy trained on them moves at another
    speed here."""
    import warnings

    from libero_ll.envs.env import EnvConfig

    ours = EnvConfig().control_freq
    try:
        theirs = float(fps)
    except (TypeError, ValueError):
        return  # _read_info names a bad fps
    if theirs != ours:
        warnings.warn(
            f"{root}: recorded at {fps:g} frames per second, where the simulator's policy steps at {ours} Hz "
            f"(EnvConfig.control_freq): its delta actions, taken {ours} times a second, move the hand about "
            f"{ours / theirs:.3g} times as fast as in the demos; they are imported as they are",
            FrameRateWarning, stacklevel=3)


def _matrix(table, name: str, ep: dict, root: Path, width: int) -> np.ndarray:
    """Column `name` of an episode's rows as a (frames, width) float32 array; a LiberoError naming the episode
    and column when it is missing, not a vector per frame, or of another width than meta/info.json gives."""
    if name not in table.column_names:
        raise LiberoError(f"{root}: episode {ep['index']}: the frames have no column {name}")
    values = table.column(name).to_pylist()
    try:
        out = np.asarray(values, dtype=np.float32).reshape(len(values), -1)
    except (TypeError, ValueError):
        raise LiberoError(f"{root}: episode {ep['index']}: column {name} is not a vector per frame") from None
    if out.shape[1] != width:
        raise LiberoError(f"{root}: episode {ep['index']}: column {name} holds {out.shape[1]} numbers per frame, "
                          f"where meta/info.json gives {width}")
    return out


def _check_frame_order(table, ep: dict, root: Path) -> None:
    """A LiberoError when an episode's rows are not its frames 0, 1, ..., T-1 (one left out shifts every later
    picture against its state and action), or are fewer or more than the episode's recorded length."""
    T = table.num_rows
    if "frame_index" in table.column_names:
        index = np.asarray(table.column("frame_index").to_pylist())
        if not np.array_equal(index, np.arange(T)):
            gap = int(np.flatnonzero(index != np.arange(T))[0])
            raise LiberoError(f"{root}: episode {ep['index']}: its rows are not frames 0 to {T - 1} in turn (row "
                              f"{gap} holds frame {index[gap]}): a frame is missing or repeated")
    length = ep.get("length")
    if isinstance(length, (int, np.integer)) and not isinstance(length, bool) and int(length) != T:
        raise LiberoError(f"{root}: episode {ep['index']}: {T} rows of frames, where its entry in meta/ says "
                          f"{length}")


class _FrameSource:
    """An episode's rows and camera frames, reading each data and video file in order, once where the
    episodes are asked for in order."""

    def __init__(self, root: Path, info: dict, version: str, cams: dict[str, str], features: dict):
        self.root, self.info, self.version, self.features = root, info, version, features
        try:
            self.chunks = int(info.get("chunks_size") or 1000)
        except (TypeError, ValueError):
            raise LiberoError(f"{root / 'meta/info.json'}: chunks_size is {json.dumps(info['chunks_size'])}, not a "
                              "number") from None
        self.fps = float(info["fps"])
        self._table = (None, None)  # path, table
        self._videos = {feature: _VideoFrames() for feature in cams.values()}

    def _path(self, key: str, default: str, **fields) -> Path:
        template = str(self.info.get(key) or default)
        try:
            return self.root / template.format(**fields)
        except (KeyError, IndexError, ValueError):
            raise LiberoError(f"{self.root / 'meta/info.json'}: {key} {template!r} is not a path template "
                              "this reads") from None

    def rows(self, ep: dict):
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        if self.version == "v3.0":
            path = self._path("data_path", "", chunk_index=_entry(ep, "data/chunk_index"),
                              file_index=_entry(ep, "data/file_index"))
        else:
            path = self._path("data_path", V2_DATA_PATH, episode_chunk=ep["index"] // self.chunks,
                              episode_index=ep["index"])
        if self._table[0] != path:
            if not path.is_file():
                raise LiberoError(f"{path}: missing (the frames of episode {ep['index']})")
            try:
                self._table = (path, pq.read_table(str(path)))
            except Exception as e:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
                raise LiberoError(f"{path}: not a readable parquet file ({e})") from None
        table = self._table[1]
        if "episode_index" in table.column_names:
            table = table.filter(pc.equal(table.column("episode_index"), ep["index"]))
        if "frame_index" in table.column_names:
            table = table.sort_by("frame_index")
        return table

    def images(self, ep: dict, feature: str, table) -> np.ndarray:
        if self.features[feature].get("dtype") == "image":
            return _decode_images(table, feature, ep, self.root)
        n = table.num_rows
        if self.version == "v3.0":
            path = self._path("video_path", "", video_key=feature,
                              chunk_index=_entry(ep, f"videos/{feature}/chunk_index"),
                              file_index=_entry(ep, f"videos/{feature}/file_index"))
            start = int(round(_entry(ep, f"videos/{feature}/from_timestamp", float) * self.fps))
        else:
            path = self._path("video_path", V2_VIDEO_PATH, episode_chunk=ep["index"] // self.chunks,
                              video_key=feature, episode_index=ep["index"])
            start = 0
        return self._videos[feature].read(path, start, n)

    def close(self) -> None:
        for v in self._videos.values():
            v.close()


def _resized(frames: np.ndarray, size: int | None) -> np.ndarray:
    """Frames (T, H, W, 3) at size x size pixels (PIL's box filter: each pixel the mean of the area it
    covers when shrinking), or as they are."""
    if size is None or frames.shape[1:3] == (size, size):
        return frames
    from PIL import Image

    return np.stack([np.asarray(Image.fromarray(f).resize((size, size), Image.BOX)) for f in frames])


def _decode_images(table, feature: str, ep: dict, root: Path) -> np.ndarray:
    import io

    from PIL import Image

    if feature not in table.column_names:
        raise LiberoError(f"{root}: episode {ep['index']}: the frames have no column {feature}")
    out = []
    for value in table.column(feature).to_pylist():
        data = value.get("bytes") if isinstance(value, dict) else value
        if not data:
            raise LiberoError(f"{root}: episode {ep['index']}: an image of {feature} holds no bytes")
        try:
            out.append(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
        except Exception as e:  # noqa: BLE001 - PIL raises many kinds for bad bytes
            raise LiberoError(f"{root}: episode {ep['index']}: an image of {feature} is not a readable picture "
                              f"({e})") from None
    if len({a.shape for a in out}) > 1:
        raise LiberoError(f"{root}: episode {ep['index']}: the images of {feature} differ in size")
    return np.stack(out)


class _VideoFrames:
    """Frames of one camera's video files, decoded in order; reopened only to go back or to another file."""

    def __init__(self):
        self.path = None
        self.container = None
        self.frames = None
        self.position = 0

    def read(self, path: Path, start: int, n: int) -> np.ndarray:
        import av

        if path != self.path or start < self.position:
            self.close()
            if not path.is_file():
                raise LiberoError(f"{path}: missing (video frames)")
            try:
                self.container = av.open(str(path))
            except av.error.FFmpegError as e:
                raise LiberoError(f"{path}: not a readable video ({e})") from None
            if not self.container.streams.video:
                raise LiberoError(f"{path}: holds no video stream")
            self.frames = self.container.decode(video=0)
            self.path, self.position = path, 0
        out = []
        try:
            for frame in self.frames:
                self.position += 1
                if self.position > start:
                    out.append(frame.to_ndarray(format="rgb24"))
                    if len(out) == n:
                        break
        except av.error.FFmpegError as e:
            raise LiberoError(f"{path}: a frame could not be decoded ({e})") from None
        if len(out) != n:
            raise LiberoError(f"{path}: {n} frames from frame {start} asked for, the video has "
                              f"{self.position} in all")
        return np.stack(out)

    def close(self) -> None:
        if self.container is not None:
            self.container.close()
        self.path, self.container, self.frames, self.position = None, None, None, 0
