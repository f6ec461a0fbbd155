"""Videos of evaluation rollouts: one MP4 per rollout, its cameras side by side, named by its outcome.

`RolloutVideos` is a rollout recorder: `run_rollouts` and `ParallelEvaluator.rollouts_many` call its `frame`
with every observation of a rollout (the first after the reset, then one per step) and its `end` when the
rollout is over. Frames are encoded as they come (nothing is held in memory); a rollout's file is written
under a temporary name and renamed to ``<task>/rollout<NNN>_<success|failure>.mp4`` when it ends, so a
killed evaluation leaves no file that looks finished.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Sequence

import numpy as np

from libero_ll.errors import LiberoError


class RolloutVideos:
    """Writes each rollout's camera images as an H.264 MP4.

    Args:
        out_dir: folder for the videos; each task gets a subfolder named after it.
        task_names: the name of each task number the rollouts are called with.
        camera_keys: observation keys of the images to show, left to right (uint8 H×W×3 each).
        fps: frame rate of the files (the control rate, 20 Hz, plays in real time).
    """

    def __init__(self, out_dir: str | os.PathLike, task_names: Sequence[str], camera_keys: Sequence[str],
                 fps: int = 20):
        if not camera_keys:
            raise LiberoError("a rollout video needs at least one camera key")
        self.out_dir = Path(out_dir)
        self.task_names = list(task_names)
        self.camera_keys = list(camera_keys)
        self.fps = int(fps)
        # (task, index) -> (container, stream, temporary path, [frames written])
        self._open: dict[tuple[int, int], tuple] = {}
        self.written: list[Path] = []

    def _frame_of(self, obs: dict) -> np.ndarray:
        try:
            images = [np.asarray(obs[k]) for k in self.camera_keys]
        except KeyError as e:
            raise LiberoError(f"rollout video: the observation has no {e.args[0]!r} image") from None
        frame = np.concatenate(images, axis=1)
        # H.264 in yuv420p needs even sides: pad one black row or column where needed.
        h, w = frame.shape[:2]
        if h % 2 or w % 2:
            frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))
        return np.ascontiguousarray(frame, dtype=np.uint8)

    def frame(self, task: int, index: int, obs: dict) -> None:
        """Append the images of ``obs`` to rollout ``index`` of task number ``task`` (opening its file)."""
        import av

        frame = self._frame_of(obs)
        key = (int(task), int(index))
        if key not in self._open:
            folder = self.out_dir / self.task_names[key[0]]
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".rollout{key[1]:03d}.tmp.mp4"
            container = av.open(str(tmp), "w")
            stream = container.add_stream("libx264", rate=self.fps, options={"crf": "20"})
            stream.height, stream.width = frame.shape[:2]
            stream.pix_fmt = "yuv420p"
            stream.time_base = Fraction(1, self.fps)
            self._open[key] = (container, stream, tmp, [0])
        container, stream, _, count = self._open[key]
        vf = av.VideoFrame.from_ndarray(frame, format="rgb24")
        vf.pts = count[0]
        vf.time_base = Fraction(1, self.fps)
        for packet in stream.encode(vf):
            container.mux(packet)
        count[0] += 1

    def end(self, task: int, index: int, success: bool) -> Path | None:
        """Close rollout ``index`` of task ``task`` and give its file its final name; the path, or None if
        the rollout had no frame."""
        entry = self._open.pop((int(task), int(index)), None)
        if entry is None:
            return None
        container, stream, tmp, _ = entry
        for packet in stream.encode():
            container.mux(packet)
        container.close()
        path = tmp.with_name(f"rollout{int(index):03d}_{'success' if success else 'failure'}.mp4")
        os.replace(tmp, path)
        self.written.append(path)
        return path

    def close(self) -> None:
        """Drop the files of rollouts that never ended (an interrupted evaluation)."""
        for container, _, tmp, _ in self._open.values():
            try:
                container.close()
            except Exception:  # noqa: BLE001 - a half-written file is removed either way
                pass
            tmp.unlink(missing_ok=True)
        self._open.clear()
