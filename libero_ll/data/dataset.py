"""The sequence dataset: windows of consecutive demo steps, cut from arrays held in memory.

Every task's demos are decoded once into memory (images stay uint8) and batches are gathered with
index arithmetic, so no HDF5 handle is held and nothing needs pickling into worker processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from libero_ll.data.hdf5 import LOWDIM_SIZES, read_demos
from libero_ll.errors import LiberoError


def host_to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """`tensor` (a small one on the host) on `device`, without making the host wait for a GPU.

    A copy from ordinary (pageable) host memory to a CUDA device waits until the GPU has finished all the
    work queued before it, so that a training step which copies a few indices or random numbers this way
    cannot queue its next kernels while the GPU runs the last ones. A copy from pinned memory is queued like
    a kernel. Elsewhere, and inside a function being compiled (``torch.compile`` cannot trace pinning), this
    is a plain ``tensor.to(device)``."""
    device = torch.device(device)
    if device.type == "cuda" and tensor.device.type == "cpu" and not torch.compiler.is_compiling():
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


@dataclass
class TaskData:
    """The demos of one task, in memory.

    Attributes:
        task_id: the task's position in its suite (also the id batches carry).
        demos: one dict per demo holding the observation keys used and ``"actions"``, arrays (T, ...).
        task_emb: (D,) float32 language embedding of the task's instruction.
    """

    task_id: int
    demos: list[dict[str, np.ndarray]]
    task_emb: np.ndarray

    def num_steps(self) -> int:
        """Total number of steps over the task's demos."""
        return int(sum(len(d["actions"]) for d in self.demos))


def load_task_data(
    path: str | os.PathLike,
    task_id: int,
    task_emb: np.ndarray,
    obs_keys: Sequence[str],
    max_demos: int | None = None,
) -> TaskData:
    """Load one task's demo file into memory.

    Args:
        path: the task's HDF5 demo file.
        task_id: the task's position in its suite.
        task_emb: (D,) language embedding of the task's instruction; stored as float32.
        obs_keys: observation keys to load (each must be in the file).
        max_demos: load at most this many demos (the first ones); None loads all.
    Raises:
        LiberoError: the file is missing, malformed, or lacks one of ``obs_keys``.
    """
    emb = np.asarray(task_emb, dtype=np.float32)
    if emb.ndim != 1:
        raise ValueError(f"task_emb must be a (D,) vector, got shape {emb.shape}")
    demos = []
    for number, demo in enumerate(read_demos(path, obs_keys=list(obs_keys), max_demos=max_demos)):
        entry = {key: demo.obs[key] for key in obs_keys}
        entry["actions"] = demo.actions
        _check_widths(path, number, entry)
        _check_finite(path, number, entry)
        demos.append(entry)
    return TaskData(task_id=int(task_id), demos=demos, task_emb=emb)


def _check_widths(path, number: int, entry: dict[str, np.ndarray]) -> None:
    """Refuse a demo whose actions or low-dim observations are not as wide as the policies read them (a file
    written or imported elsewhere): training then failed deep inside a policy with a broadcasting error."""
    widths = {"actions": 7, **LOWDIM_SIZES}
    for key, arr in entry.items():
        want = widths.get(key)
        if want is not None and (arr.ndim != 2 or arr.shape[1] != want):
            raise LiberoError(
                f"demo file {path}: demo {number} (counting from 0, in index order) has '{key}' of shape "
                f"{tuple(arr.shape)}, where the policies read ({len(arr)}, {want}): fix or remake the file"
            )


def _check_finite(path, number: int, entry: dict[str, np.ndarray]) -> None:
    """Refuse a demo whose actions or low-dim observations hold NaN or infinity (a file written or imported
    elsewhere): one such number makes every training loss NaN from the first step on."""
    for key, arr in entry.items():
        if np.issubdtype(arr.dtype, np.floating) and not np.isfinite(arr).all():
            step = int(np.argwhere(~np.isfinite(arr))[0][0])
            raise LiberoError(
                f"demo file {path}: demo {number} (counting from 0, in index order) has NaN or infinite "
                f"'{key}' at step {step}; training on it would make the loss NaN: fix or remake the file"
            )


# Steps from a closing of the fingers on that still count as part of the grasp (`grasp_weights`).
GRASP_AFTER = 3


def grasp_weights(actions: np.ndarray, lengths: Sequence[int], weight: float, before: int) -> np.ndarray:
    """Loss weight per demo step: `weight` around every closing of the fingers, 1 elsewhere.

    A closing is a step whose gripper command (the last action dimension) is positive where the step
    before it, if any, was not. The `before` steps leading up to it and the GRASP_AFTER steps from it
    on get `weight`.

    Args:
        actions: (N, A) the actions of consecutive demos, concatenated.
        lengths: the demos' step counts, summing to N.
        weight: the weight of a grasp's steps.
        before: steps before a closing that are weighted.

    Returns:
        (N,) float32.
    """
    out = np.ones(len(actions), dtype=np.float32)
    closed = np.asarray(actions)[:, -1] > 0
    start = 0
    for n in lengths:
        c = closed[start:start + n]
        for t in np.nonzero(c & ~np.r_[False, c[:-1]])[0]:
            out[start + max(0, t - before):start + min(n, t + GRASP_AFTER)] = weight
        start += n
    return out


def _gather_in_place(parts: list[np.ndarray], owners: list[dict], key: str) -> np.ndarray:
    """One uint8 array of `parts` end to end, each demo's `key` in `owners` made a view into it.

    The demos' images are then held once, by this array, and not also by the demos: each part is copied in
    and its demo given the view straight away, so that a part nobody else holds is freed before the next is
    copied (the whole never needs twice its size, as a concatenation would).
    """
    out = np.empty((sum(len(p) for p in parts), *parts[0].shape[1:]), dtype=np.uint8)
    at = 0
    for i, part in enumerate(parts):
        if part.shape[1:] != out.shape[1:]:
            raise ValueError(f"'{key}' arrays of {out.shape[1:]} and {part.shape[1:]} per step cannot be held together")
        view = out[at:at + len(part)]
        view[...] = part
        parts[i] = None  # the list's hold on the part, so that it goes once its demo lets go of it
        if owners[i].get(key) is part:
            owners[i][key] = view
        at += len(part)
    return out


class SequenceDataset:
    """Windows of ``seq_len`` consecutive steps, cut from demos held in memory (uint8 images).

    There is one window per (demo, start step t), t = 0..T-1. A window running past its demo's end is
    padded by repeating the last step, and its mask is False on the padded steps. The images are copied into
    one array per camera, and each demo's images become views into it (the same values): they are held once.

    Args:
        tasks: the tasks whose demos to hold; their embeddings must share one size D.
        seq_len: steps per window (10 in the LIBERO protocol).
        obs_keys: observation keys to hold; every demo must have them.
        grasp_weight, grasp_steps: with a grasp_weight other than 1, batches carry a ``"weight"`` per step
            (`grasp_weights`: grasp_weight on the grasp_steps steps before each closing of the fingers
            and a few after, 1 elsewhere), by which the policy's loss weights each step.
        gripper_lead: the fingers' command (the last action dimension) of each step is taken from this many
            steps later in its demo (its last step's beyond the end): the fingers start to close, and to open,
            that many steps before the demo's did. 0 keeps the demos' actions as they are.
        device: None to hold the data in host memory (numpy) and gather batches there; or a torch device to
            hold it there (images still uint8) and gather batches on it, so that a GPU's batches never
            cross the bus. The batches are the same either way (`"task_id"` stays on the host).
        next_actions: with N > 0, batches also carry the N actions that follow each window
            (``"next_actions"`` (B, N, A), ``"next_mask"`` (B, N), False past the demo's end): the targets
            of a policy whose steps predict chunks of actions reaching past the window.
    """

    def __init__(
        self,
        tasks: Sequence[TaskData],
        seq_len: int,
        obs_keys: Sequence[str],
        grasp_weight: float = 1.0,
        grasp_steps: int = 15,
        device: torch.device | str | None = None,
        next_actions: int = 0,
        gripper_lead: int = 0,
    ) -> None:
        if seq_len < 1:
            raise ValueError(f"seq_len must be at least 1, got {seq_len}")
        if next_actions < 0:
            raise ValueError(f"next_actions must be at least 0, got {next_actions}")
        if gripper_lead < 0:
            raise ValueError(f"gripper_lead must be at least 0, got {gripper_lead}")
        self.seq_len = int(seq_len)
        self.next_actions = int(next_actions)
        self.obs_keys = tuple(obs_keys)
        if "actions" in self.obs_keys:
            raise ValueError("'actions' is not an observation key")
        if not tasks:
            raise ValueError("SequenceDataset needs at least one task")
        dims = {np.asarray(t.task_emb).shape for t in tasks}
        if len(dims) != 1 or len(next(iter(dims))) != 1:
            raise ValueError(
                f"task embeddings must all be (D,) vectors of one size, got shapes {sorted(dims)}"
            )

        keys = (*self.obs_keys, "actions")
        parts: dict[str, list[np.ndarray]] = {key: [] for key in keys}
        lengths, demo_task, demo_pos, owners = [], [], [], []
        for task_pos, task in enumerate(tasks):
            for d, demo in enumerate(task.demos):
                for key in keys:
                    if key not in demo:
                        raise ValueError(f"task {task.task_id} demo {d} has no '{key}' array")
                T = len(demo["actions"])
                for key in keys:
                    if len(demo[key]) != T:
                        raise ValueError(
                            f"task {task.task_id} demo {d}: '{key}' has {len(demo[key])} steps, "
                            f"actions have {T}"
                        )
                    parts[key].append(demo[key])
                lengths.append(T)
                demo_task.append(task_pos)
                demo_pos.append(d)
                owners.append(demo)
        if sum(lengths) == 0:
            raise ValueError("SequenceDataset needs at least one demo step")

        # One array per key over all demos, so a batch is a single gather per key.
        self._arrays: dict[str, np.ndarray] = {}
        for key in keys:
            if all(part.dtype == np.uint8 for part in parts[key]):
                self._arrays[key] = _gather_in_place(parts[key], owners, key)
            else:
                # Low-dim observations and actions: float32 copies (small beside the images).
                self._arrays[key] = np.concatenate(parts[key], axis=0).astype(np.float32, copy=False)
        del parts

        lengths_a = np.asarray(lengths, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths_a)[:-1]])
        # Per window: global index of its first step, of its demo's last step, and where it comes from.
        self._start = np.arange(int(lengths_a.sum()), dtype=np.int64)
        self._last = np.repeat(offsets + lengths_a - 1, lengths_a)
        demo_of_step = np.repeat(np.arange(len(lengths_a)), lengths_a)
        self._index = np.stack(
            [
                np.asarray(demo_task, dtype=np.int64)[demo_of_step],
                np.asarray(demo_pos, dtype=np.int64)[demo_of_step],
                self._start - np.repeat(offsets, lengths_a),
            ],
            axis=1,
        )
        task_ids = np.asarray([t.task_id for t in tasks], dtype=np.int64)
        self._task_id = task_ids[self._index[:, 0]]
        self._task_pos = self._index[:, 0]
        self._task_emb = np.stack([np.asarray(t.task_emb, dtype=np.float32) for t in tasks])
        if gripper_lead:
            actions = self._arrays["actions"]  # this dataset's own copy
            actions[:, -1] = actions[np.minimum(self._start + int(gripper_lead), self._last), -1]
        self._offsets = np.arange(self.seq_len, dtype=np.int64)
        self._next_offsets = np.arange(self.seq_len, self.seq_len + self.next_actions, dtype=np.int64)
        self._weight = (
            grasp_weights(self._arrays["actions"], lengths, float(grasp_weight), int(grasp_steps))
            if float(grasp_weight) != 1.0
            else None
        )
        self.device = None
        if device is not None:
            self.to_device(device)

    def to_device(self, device: torch.device | str) -> SequenceDataset:
        """Hold the data on `device` from now on and gather batches there (see the class); returns self."""
        if self.device is not None:
            raise ValueError(f"the dataset is already on {self.device}")
        self.device = torch.device(device)
        # Everything a batch is gathered from moves to the device once; the host copies are dropped.
        self._arrays = {k: torch.from_numpy(a).to(self.device) for k, a in self._arrays.items()}
        self._dev = {
            "start": torch.from_numpy(self._start).to(self.device),
            "last": torch.from_numpy(self._last).to(self.device),
            "offsets": torch.from_numpy(self._offsets).to(self.device),
            "next_offsets": torch.from_numpy(self._next_offsets).to(self.device),
            "task_emb": torch.from_numpy(self._task_emb).to(self.device),
            "task_pos": torch.from_numpy(self._task_pos).to(self.device),
        }
        if self._weight is not None:
            self._dev["weight"] = torch.from_numpy(self._weight).to(self.device)
        return self

    def __len__(self) -> int:
        return int(len(self._start))

    def window_index(self) -> np.ndarray:
        """(N, 3) int64 array: (task position in ``tasks``, demo index in the task, start step) per window."""
        return self._index.copy()

    def get_batch(self, indices: np.ndarray | Sequence[int]) -> dict:
        """Gather the windows at ``indices`` (window numbers in 0..len-1) into torch tensors.

        Returns:
            ``{"obs": {key: (B, seq_len, ...)}, "actions": (B, seq_len, A) float32,
            "mask": (B, seq_len) bool, "task_emb": (B, D) float32, "task_id": (B,) int64}``, and
            ``"weight"`` (B, seq_len) float32 when the dataset has a grasp_weight, ``"next_actions"``
            (B, N, A) and ``"next_mask"`` (B, N) when it has next_actions N > 0. Images stay uint8
            (B, seq_len, H, W, 3); low-dimensional observations are float32. Steps past a demo's end
            repeat its last step and have mask False.
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if self.device is not None:
            return self._get_batch_on_device(idx)
        B, L = len(idx), self.seq_len
        steps = self._start[idx, None] + self._offsets[None, :]
        last = self._last[idx, None]
        mask = steps <= last
        flat = np.minimum(steps, last).reshape(-1)

        def gather(key: str) -> torch.Tensor:
            arr = self._arrays[key]
            return torch.from_numpy(np.take(arr, flat, axis=0).reshape(B, L, *arr.shape[1:]))

        batch = {
            "obs": {key: gather(key) for key in self.obs_keys},
            "actions": gather("actions"),
            "mask": torch.from_numpy(mask),
            "task_emb": torch.from_numpy(self._task_emb[self._task_pos[idx]]),
            "task_id": torch.from_numpy(self._task_id[idx]),
        }
        if self._weight is not None:
            batch["weight"] = torch.from_numpy(self._weight[flat].reshape(B, L))
        if self.next_actions:
            after = self._start[idx, None] + self._next_offsets[None, :]
            batch["next_actions"] = torch.from_numpy(
                np.take(self._arrays["actions"], np.minimum(after, last).reshape(-1), axis=0).reshape(B, self.next_actions, -1)
            )
            batch["next_mask"] = torch.from_numpy(after <= last)
        return batch

    def _get_batch_on_device(self, idx: np.ndarray) -> dict:
        """`get_batch` with every gather on the dataset's device (the same numbers as the host's)."""
        d = self._dev
        B, L = len(idx), self.seq_len
        at = host_to_device(torch.from_numpy(idx), self.device)
        steps = d["start"][at, None] + d["offsets"][None, :]
        last = d["last"][at, None]
        mask = steps <= last
        flat = torch.minimum(steps, last).reshape(-1)

        def gather(key: str) -> torch.Tensor:
            arr = self._arrays[key]
            return arr.index_select(0, flat).reshape(B, L, *arr.shape[1:])

        batch = {
            "obs": {key: gather(key) for key in self.obs_keys},
            "actions": gather("actions"),
            "mask": mask,
            "task_emb": d["task_emb"].index_select(0, d["task_pos"][at]),
            "task_id": torch.from_numpy(self._task_id[idx]),
        }
        if "weight" in d:
            batch["weight"] = d["weight"].index_select(0, flat).reshape(B, L)
        if self.next_actions:
            after = d["start"][at, None] + d["next_offsets"][None, :]
            flat_after = torch.minimum(after, last).reshape(-1)
            batch["next_actions"] = self._arrays["actions"].index_select(0, flat_after).reshape(B, self.next_actions, -1)
            batch["next_mask"] = after <= last
        return batch

    def num_steps(self) -> int:
        """Total number of demo steps held."""
        return int(len(self._start))

    def nbytes(self) -> int:
        """Bytes held by the dataset's arrays (data, embeddings and window index), for memory budgets."""
        held = [*self._arrays.values(), self._task_emb, self._start, self._last, self._index, self._task_id]
        return int(sum(a.nbytes if isinstance(a, np.ndarray) else a.numel() * a.element_size() for a in held))
