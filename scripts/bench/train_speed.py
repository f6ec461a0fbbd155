"""Training throughput of every registered policy on this machine: windows/s of whole optimisation steps.

Each policy is built as a preset builds it (``policy.by_name[name]`` of the config, then its ``policy.cfg``
when the config names that policy) and trained on random windows of the preset's shape: batch size, image
size, two cameras, the policy's own low-dim keys and window length. A step is a learner's own
(`Learner.observe` with the preset's train settings): the loss, backward, gradient clip, the fused AdamW
step, and the moving average of the weights where the preset keeps one (train.ema_decay). The device is the
GPU when there is one, else the CPU with torch's default thread count.

With ``--data DIR`` (demo files at the config's image size) each policy is also timed on batches gathered
from those demos, as training gathers them: from host memory and moved to the device each step ("host
data"), and from a copy held on the device (``train.data_on_device``; "device data").

With ``--precision bf16`` and ``--compile [MODE]`` the steps run as ``train.precision`` and ``train.compile``
say (compiling happens in the untimed warm-up steps). ``--profile STEPS`` then profiles that many steps of
each policy with torch's profiler: the operators that take the most device time, and on a GPU the kernels
launched per step and the GPU's busy time per step beside the wall time (a step whose GPU is busy for much
less than its wall time is bound by launching work, not by doing it).
With ``--compile`` a line after each policy's says how many graphs were compiled, recompiled, and (on a
GPU) skipped by CUDA graphs. ``--syncs STEPS`` counts, on a GPU, the operations in that many steps that make the host wait for the GPU
(torch's CUDA sync debug mode) and prints where they are; a training step needs none, and each one keeps the
host from queueing work while the GPU runs.

Config overrides (``key=value``, as ``libero-ll train`` takes them) change the preset first, e.g.
``policy.cfg.encoder_channels_last=false`` or ``train.ema_decay=0``.

Usage: python scripts/bench/train_speed.py [--config configs/cpu.yaml] [--steps 30] [--batch N]
       [--policies resnet_t vit_t] [--data DIR] [--precision fp32|bf16] [--compile [MODE]]
       [--cudnn-benchmark] [--profile STEPS] [--syncs STEPS] [key=value ...]
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
    out = {
        "obs": obs,
        "actions": torch.rand(batch, t, 7, device=device) * 2 - 1,
        "mask": torch.ones(batch, t, dtype=torch.bool, device=device),
        "task_emb": torch.randn(batch, task_emb_dim, device=device),
        "task_id": torch.zeros(batch, dtype=torch.int64),  # on the host, as the data package gives it
    }
    if policy.action_chunk > 1:  # the actions after each window, which a chunked policy's loss reads
        out["next_actions"] = torch.rand(batch, policy.action_chunk - 1, 7, device=device) * 2 - 1
        out["next_mask"] = torch.ones(batch, policy.action_chunk - 1, dtype=torch.bool, device=device)
    return out


def training_step(policy, batch, train):
    """One optimisation step as training makes it, as a function, and the windows in a step's batch.

    The step is `Learner.observe` of a SeqL learner with the train settings `train` (a TrainConfig, as the
    preset's `train` section makes it): the loss (train.precision, train.compile), backward, the gradient clip,
    the fused AdamW step and the moving average of the weights when train.ema_decay is set. `batch` is one
    batch or a callable giving one per step."""
    from libero_ll.learners import make_learner

    learner = make_learner("seql", policy, train, {})
    learner.start_task(0, None)
    policy.train()
    next_batch = batch if callable(batch) else (lambda: batch)

    def step() -> None:
        learner.observe(next_batch())

    return step, next_batch()["actions"].shape[0]


def synchronize(policy) -> None:
    """Wait for the policy's device to finish its queued work (nothing to wait for on a CPU)."""
    if next(policy.parameters()).is_cuda:
        torch.cuda.synchronize()


def windows_per_second(policy, batch, steps: int, train, warmup: int = 3) -> float:
    """Windows per second of `steps` optimisation steps after `warmup` untimed ones (`training_step` with the
    train settings `train`); compiling happens in the untimed steps."""
    step, batch_size = training_step(policy, batch, train)
    for _ in range(warmup):
        step()
    synchronize(policy)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize(policy)
    return steps * batch_size / (time.perf_counter() - t0)


def profile(policy, batch, steps: int, train, rows: int = 25) -> None:
    """Print where `steps` optimisation steps (after 3 untimed ones) spend their time, by torch's profiler:
    the operators taking the most time on the device (the GPU, else the CPU), and per step the number of
    kernels launched on the GPU and the time each side was busy."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    step, _ = training_step(policy, batch, train)
    for _ in range(3):
        step()
    synchronize(policy)
    cuda = next(policy.parameters()).is_cuda
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    t0 = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        synchronize(policy)
    wall = (time.perf_counter() - t0) / steps
    events = prof.key_averages()
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    print(events.table(sort_by=key, row_limit=rows))
    line = f"profiled {steps} steps: {1000 * wall:.1f} ms per step (wall, profiler on)"
    if cuda:
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        busy = sum(k.time_range.elapsed_us() for k in kernels) / steps / 1000
        line += f"; {len(kernels) / steps:.0f} GPU kernels and {busy:.1f} ms of GPU time per step"
    print(line, flush=True)


def count_syncs(policy, batch, steps: int, train, rows: int = 8) -> None:
    """Print how often `steps` optimisation steps (after 3 untimed ones) make the host wait for the GPU, and
    from where: each operation that synchronises (a blocking copy, reading a value, an index computed on the
    GPU and sized on the host) keeps the host from queueing the next kernels while the GPU works, which is
    what a step bound by launching work cannot afford. Counted by torch's CUDA sync debug mode."""
    import warnings
    from collections import Counter

    if not next(policy.parameters()).is_cuda:
        print("syncs: no GPU here, nothing to count", flush=True)
        return
    step, _ = training_step(policy, batch, train)
    for _ in range(3):
        step()
    synchronize(policy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    print(f"syncs: {len(syncs) / steps:.1f} per step over {steps} steps", flush=True)
    for (where, line), n in Counter((w.filename, w.lineno) for w in syncs).most_common(rows):
        print(f"  {n / steps:5.1f} per step  {where}:{line}")


def compile_counts() -> str:
    """What torch.compile did so far in this process: graphs compiled, recompilations, and on a GPU the graphs
    CUDA graphs ("reduce-overhead") skipped (with TORCH_LOGS=cudagraphs torch prints why)."""
    from torch._dynamo.utils import counters

    stats, inductor = counters["stats"], counters["inductor"]
    line = (f"  compiled: {stats.get('unique_graphs', 0)} graphs, {counters['recompiles'].total()} "
            f"recompilations")
    if torch.cuda.is_available():
        line += f", {inductor.get('cudagraph_skips', 0)} skipped by CUDA graphs"
    return line


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
                    else v if k == "task_id" else v.to(device, non_blocking=True)) for k, v in batch.items()}

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
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="let cuDNN time its convolution algorithms for each new shape and keep the fastest")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="after timing, profile this many steps of each policy and print where the time goes")
    p.add_argument("--syncs", type=int, default=0, metavar="STEPS",
                   help="on a GPU, count the operations that make the host wait for it in this many steps, "
                   "and where they are (of batches from --data's device copy when given)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. train.ema_decay=0")
    a = p.parse_args()

    from omegaconf import OmegaConf

    from libero_ll.experiments.config import load_config
    from libero_ll.learners import TrainConfig
    from libero_ll.policies import POLICIES, make_policy

    cfg = load_config(a.config, a.overrides)
    train = {**OmegaConf.to_container(cfg.train, resolve=True), "precision": a.precision, "compile": a.compile}
    timing = {"train": TrainConfig(**train)}
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch_size = a.batch or int(cfg.train.batch_size)
    size = int(cfg.env.image_size)
    names = a.policies or sorted(POLICIES.names())
    where = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    compiled = "" if not a.compile else f", compiled ({'default' if a.compile is True else a.compile})"
    tuned = ", cuDNN benchmark" if a.cudnn_benchmark else ""
    ema = f", weights averaged ({timing['train'].ema_decay})" if timing["train"].ema_decay else ""
    changed = f", {' '.join(a.overrides)}" if a.overrides else ""
    print(f"{a.config.name}{changed}: batch {batch_size}, {size} px, {where}, {a.precision}{compiled}{tuned}{ema}")
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
        if a.compile:
            print(compile_counts(), flush=True)
        if a.profile:
            profile(policy, batch, a.profile, **timing)
        if a.syncs:
            source = demo_batches(policy, a.data, batch_size, device, True) if a.data else batch
            count_syncs(policy, source, a.syncs, **timing)


if __name__ == "__main__":
    from libero_ll.errors import LiberoError

    try:
        main()
    except LiberoError as err:
        raise SystemExit(f"train_speed: {err}") from None
