"""Training throughput of every registered policy on this machine: windows/s of whole optimisation steps.

Each policy is built as a preset builds it (``policy.by_name[name]`` of the config, then its ``policy.cfg``
when the config names that policy) and trained on random windows of the preset's shape: batch size, image
size, two cameras, the policy's own low-dim keys and window length. A step is what the learners do: the
loss, backward, gradient clip and an AdamW step (fused where the device allows, as the learners' is). The
device is the GPU when there is one, else the CPU with torch's default thread count.

With ``--data DIR`` (demo files at the config's image size) each policy is also timed on batches gathered
from those demos, as training gathers them: from host memory and moved to the device each step ("host
data"), and from a copy held on the device (``train.data_on_device``; "device data").

With ``--precision bf16`` and ``--compile [MODE]`` the steps run as ``train.precision`` and ``train.compile``
say (compiling happens in the untimed warm-up steps).

Usage: python scripts/bench/train_speed.py [--config configs/cpu.yaml] [--steps 30] [--batch N]
       [--policies resnet_t vit_t] [--data DIR] [--precision fp32|bf16] [--compile [MODE]]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from libero_ll.data.hdf5 import LOWDIM_SIZES
from libero_ll.learners.base import COMPILE_MODES, PRECISIONS

REPO = Path(__file__).resolve().parents[2]


def policy_keys(cfg, name: str) -> dict:
    """The keys a preset gives policy ``name``: ``by_name[name]``, then ``cfg`` if it names that policy."""
    from omegaconf import OmegaConf

    section = OmegaConf.to_container(cfg.get("policy") or {}, resolve=True)
    keys = dict((section.get("by_name") or {}).get(name) or {})
    if section.get("name") == name:
        keys.update(section.get("cfg") or {})
    return keys


def random_batch(policy, batch: int, size: int, task_emb_dim: int, device) -> dict:
    """Random windows in the data package's format (images uint8 HWC), already on ``device``."""
    t = policy.seq_len
    obs = {key: torch.randint(0, 256, (batch, t, size, size, 3), dtype=torch.uint8, device=device)
           for key in policy.image_keys}
    for key in policy.lowdim_keys:
        obs[key] = torch.randn(batch, t, LOWDIM_SIZES[key], device=device)
    return {
        "obs": obs,
        "actions": torch.rand(batch, t, 7, device=device) * 2 - 1,
        "mask": torch.ones(batch, t, dtype=torch.bool, device=device),
        "task_emb": torch.randn(batch, task_emb_dim, device=device),
    }


def windows_per_second(policy, batch, steps: int, warmup: int = 3, precision: str = "fp32",
                       compile_mode: bool | str = False) -> float:
    """Windows per second of `steps` optimisation steps after `warmup` untimed ones, on one batch or on
    the batches a callable returns (one call per step). The loss is the learners' own (`Learner.loss`), with
    train.precision and train.compile as given; compiling happens in the untimed steps."""
    from libero_ll.learners import TrainConfig, make_learner
    from libero_ll.learners.base import adamw

    opt = adamw(policy.parameters(), lr=1e-4, weight_decay=1e-4)
    learner = make_learner("seql", policy, TrainConfig(precision=precision, compile=compile_mode), {})
    policy.train()
    next_batch = batch if callable(batch) else (lambda: batch)
    first = next_batch()

    def step() -> None:
        loss = learner.loss(next_batch())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 100.0)
        opt.step()

    for _ in range(warmup):
        step()
    sync = torch.cuda.synchronize if next(policy.parameters()).is_cuda else (lambda: None)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return steps * first["actions"].shape[0] / (time.perf_counter() - t0)


def demo_batches(policy, data_dir: Path, batch_size: int, device, on_device: bool):
    """A callable giving random batches of the demos in `data_dir` (50 per file at most), gathered on the
    host and moved to `device`, or gathered on `device` from a copy held there."""
    import numpy as np

    from libero_ll.data.dataset import load_task_data

    keys = policy.image_keys + policy.lowdim_keys
    files = sorted(Path(data_dir).glob("*.hdf5"))
    if not files:
        raise SystemExit(f"--data {data_dir}: no .hdf5 demo files there")
    tasks = [load_task_data(f, k, np.zeros(policy.shape_meta["task_emb_dim"], np.float32), keys, 50) for k, f in enumerate(files)]
    data = policy.windows(tasks, device=device if on_device else None)
    rng = np.random.default_rng(0)

    def draw() -> dict:
        batch = data.get_batch(rng.integers(len(data), size=batch_size))
        return {k: ({kk: vv.to(device, non_blocking=True) for kk, vv in v.items()} if isinstance(v, dict)
                    else v.to(device, non_blocking=True)) for k, v in batch.items()}

    return draw


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=REPO / "configs" / "cpu.yaml")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=None, help="windows per step (default: the config's)")
    p.add_argument("--policies", nargs="*", default=None, help="default: every registered policy")
    p.add_argument("--task-emb-dim", type=int, default=384)
    p.add_argument("--data", type=Path, default=None, help="also time batches gathered from these demo files")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help="train.precision")
    p.add_argument("--compile", nargs="?", const=True, default=False, choices=COMPILE_MODES, metavar="MODE",
                   help="train.compile: torch.compile the loss (default mode, or MODE, e.g. reduce-overhead)")
    a = p.parse_args()
    timing = {"precision": a.precision, "compile_mode": a.compile}

    from libero_ll.experiments.config import load_config
    from libero_ll.policies import POLICIES, make_policy

    cfg = load_config(a.config)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch_size = a.batch or int(cfg.train.batch_size)
    size = int(cfg.env.image_size)
    names = a.policies or sorted(POLICIES.names())
    where = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    compiled = "" if not a.compile else f", compiled ({'default' if a.compile is True else a.compile})"
    print(f"{a.config.name}: batch {batch_size}, {size} px, {where}, {a.precision}{compiled}")
    extra = f" {'host data':>10} {'device data':>11}" if a.data else ""
    print(f"{'policy':<12} {'params':>9} {'seq_len':>7} {'windows/s':>10} {'steps/s':>8}{extra}")
    for name in names:
        torch.manual_seed(0)
        shape = {
            "image_shape": (size, size, 3),
            "lowdim": LOWDIM_SIZES,
            "action_dim": 7,
            "task_emb_dim": a.task_emb_dim,
        }
        policy = make_policy(name, policy_keys(cfg, name), shape).to(device)
        batch = random_batch(policy, batch_size, size, a.task_emb_dim, device)
        wps = windows_per_second(policy, batch, a.steps, **timing)
        params = sum(q.numel() for q in policy.parameters())
        line = f"{name:<12} {params:>9,} {policy.seq_len:>7} {wps:>10.1f} {wps / batch_size:>8.2f}"
        if a.data:
            host = windows_per_second(policy, demo_batches(policy, a.data, batch_size, device, False), a.steps, **timing)
            on_dev = windows_per_second(policy, demo_batches(policy, a.data, batch_size, device, True), a.steps, **timing)
            line += f" {host:>10.1f} {on_dev:>11.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
