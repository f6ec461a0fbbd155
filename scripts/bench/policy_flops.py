"""Forward GFLOPs and parameter counts of every registered policy at the paper's input size.

Each policy is built with its paper configuration: the dataclass defaults (shared/spec/protocol.md),
overridden by configs/paper.yaml's ``policy.cfg`` when that file names the policy. The input is one
window (batch 1) of 10 steps with two 128×128 cameras, 9-d low-dim states (joints and gripper) and a
768-d task embedding (BERT-base, as in the paper). Counting runs on the meta device: it takes seconds.

Usage: python scripts/bench/policy_flops.py [--config configs/paper.yaml] [--batch 1] [--seq-len 10]
       [--image-size 128] [--task-emb-dim 768]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def paper_overrides(config: Path, name: str) -> dict:
    """The ``policy.cfg`` keys of ``config`` when its ``policy.name`` is ``name``, else none."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(config)
    policy = cfg.get("policy") or {}
    if policy.get("name") == name and policy.get("cfg"):
        return dict(OmegaConf.to_container(policy.cfg, resolve=True))
    return {}


def paper_batch(batch: int, seq_len: int, size: int, task_emb_dim: int) -> dict:
    """A zero batch in the data package's format with the paper's observations."""
    obs = {key: torch.zeros(batch, seq_len, size, size, 3, dtype=torch.uint8)
           for key in ("agentview_rgb", "eye_in_hand_rgb")}
    obs["joint_states"] = torch.zeros(batch, seq_len, 7)
    obs["gripper_states"] = torch.zeros(batch, seq_len, 2)
    return {
        "obs": obs,
        "actions": torch.zeros(batch, seq_len, 7),
        "mask": torch.ones(batch, seq_len, dtype=torch.bool),
        "task_emb": torch.zeros(batch, task_emb_dim),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=REPO / "configs" / "paper.yaml")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq-len", type=int, default=10)
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--task-emb-dim", type=int, default=768)
    a = p.parse_args()

    from libero_ll.policies import POLICIES, make_policy
    from libero_ll.policies.flops import forward_flops, meta_twin

    shape_meta = {
        "image_shape": (a.image_size, a.image_size, 3),
        "lowdim": {"joint_states": 7, "gripper_states": 2},
        "action_dim": 7,
        "task_emb_dim": a.task_emb_dim,
    }
    batch = paper_batch(a.batch, a.seq_len, a.image_size, a.task_emb_dim)
    totals = {}
    for name in POLICIES.names():
        overrides = paper_overrides(a.config, name)
        cfg = {**overrides, "seq_len": a.seq_len}
        with torch.device("meta"):
            policy = make_policy(name, cfg, shape_meta)
        params = sum(t.numel() for t in meta_twin(policy).parameters())
        counts = forward_flops(policy, batch)
        totals[name] = counts["total"]
        source = f"{a.config.name} policy.cfg" if overrides else "defaults"
        print(
            f"{name:<12} forward {counts['total'] / 1e9:7.2f} GFLOPs ({counts['total'] / 2e9:6.2f} GMACs)  "
            f"params {params / 1e6:6.2f} M  config: {source}"
        )
    low, high = min(totals.values()), max(totals.values())
    print(
        f"{len(totals)} policies, batch {a.batch} x {a.seq_len} steps, "
        f"two {a.image_size}x{a.image_size} cameras: "
        f"{low / 1e9:.2f}-{high / 1e9:.2f} GFLOPs (spread {100 * (high - low) / low:.0f}%)"
    )


if __name__ == "__main__":
    main()
