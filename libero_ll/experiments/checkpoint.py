"""Checkpoints of a run: atomic writes, the random-number states, and loading pretrained policy weights."""

from __future__ import annotations

import contextlib
import glob
import os
import random
from pathlib import Path

import numpy as np
import torch

from libero_ll.errors import LiberoError
from libero_ll.evaluation.runs import FINAL_POLICY
from libero_ll.signals import interrupts_held


def atomic_torch_save(obj, path: Path) -> None:
    """Write `obj` with torch.save to a temporary name in the same folder, flush it to disk, rename it into place.

    A Ctrl-C or SIGTERM that comes meanwhile is raised once the file is in place: cut in half, torch's writer
    failed with an error of its own ("unexpected pos") in place of the interrupt, so that a stopped run printed a
    traceback instead of what it had kept."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with interrupts_held():
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict:
    """A checkpoint written by a run (tensors, numbers, strings and containers only; nothing is executed)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise LiberoError(f"{path}: no such checkpoint") from None
    except IsADirectoryError:
        raise LiberoError(f"{path}: is a folder, not a checkpoint file") from None
    except Exception as e:  # noqa: BLE001 - a truncated or foreign file fails in many ways
        # Only the kind of failure: torch's own message advises loading with weights_only=False, which would run
        # whatever code a damaged or foreign file holds.
        raise LiberoError(
            f"{path}: not a readable checkpoint (damaged or not written by libero_ll; {type(e).__name__})"
        ) from None


def rng_states() -> dict:
    """The global random states of python, numpy and torch (CPU and CUDA), in a weights_only-loadable form."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
        "numpy": {
            "name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached": float(cached),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(states: dict) -> None:
    """Restore what `rng_states` returned."""
    py = states["python"]
    random.setstate((py["version"], tuple(py["internal"]), py["gauss"]))
    n = states["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"]))
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


@contextlib.contextmanager
def isolated_rng(seed: int):
    """Run the block with all global random generators seeded by `seed`, then put the previous states back.

    Evaluation runs inside this, so it neither consumes the training streams (a resumed run draws the
    same numbers as an uninterrupted one) nor depends on how much training happened before it.
    """
    saved = rng_states()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        set_rng_states(saved)


def derive_seed(*parts: int) -> int:
    """A 63-bit seed that depends on every part (e.g. run seed, stage, epoch, task)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def resolve_init_from(spec: str) -> Path:
    """The checkpoint file named by `init_from`: a file, a run directory, or a glob of run directories.

    Raises:
        LiberoError: nothing matches, or a run directory has no final policy yet.
    """
    if any(c in spec for c in "*?["):
        matches = sorted(glob.glob(spec))
        if not matches:
            raise LiberoError(f"init_from={spec!r}: no file or run directory matches")
        spec = matches[-1]
    path = Path(spec)
    if path.is_dir():
        final = path / FINAL_POLICY
        if not final.exists():
            raise LiberoError(f"init_from={spec!r}: {path} has no {FINAL_POLICY} (did the run finish?)")
        return final
    if not path.exists():
        raise LiberoError(f"init_from={spec!r}: no such checkpoint file or run directory")
    return path


def load_policy_weights(policy: torch.nn.Module, path: Path, ckpt: dict | None = None,
                        loading: str = "init_from") -> None:
    """Load a run's policy weights into `policy`, which must have the same architecture.

    Args:
        policy: the freshly built policy.
        path: a checkpoint holding {"policy": state_dict, ...} (a task's best, the final policy, or resume.pt).
        ckpt: the checkpoint's contents when the caller has already read them (then `path` only names it).
        loading: what the weights are loaded as, named before the file in an error (default "init_from": the
            pretrained weights a run starts from; `evaluate` names the checkpoint it evaluates).

    Raises:
        LiberoError: naming the checkpoint and the first mismatching parameters.
    """
    ckpt = load_checkpoint(path) if ckpt is None else ckpt
    state = ckpt.get("policy") if isinstance(ckpt, dict) else None
    if not isinstance(state, dict):
        raise LiberoError(f"{path}: holds no policy weights (no 'policy' entry)")
    own = policy.state_dict()
    missing = sorted(set(own) - set(state) - set(getattr(policy, "optional_state", ())))
    unexpected = sorted(set(state) - set(own))
    shapes = [
        f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}"
        for k in sorted(set(own) & set(state))
        if tuple(state[k].shape) != tuple(own[k].shape)
    ]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        if unexpected:
            parts.append(f"unexpected {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}")
        if shapes:
            parts.append(f"shape mismatch (checkpoint vs policy) {shapes[:5]}{' ...' if len(shapes) > 5 else ''}")
        trained = ckpt.get("policy_name")
        hint = f" (checkpoint is a {trained} policy)" if trained else ""
        if any(s.split(" ")[0].split(".")[0] == "language" for s in shapes):
            config = ckpt.get("config") if isinstance(ckpt.get("config"), dict) else {}
            encoder = config.get("language_encoder")
            parts.append("the task embeddings are of another width" + (
                f" than those of language_encoder {encoder!r} the checkpoint was trained with" if encoder else "")
                + " (with task_id the width is the number of distinct instructions)")
        raise LiberoError(
            f"{loading} {path}: the policy architecture does not match the checkpoint{hint}: " + "; ".join(parts)
        )
    policy.load_state_dict(state)
