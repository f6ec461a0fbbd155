"""The action head must learn the scripted expert's actions: a regression test for a collapsing GMM head.

A small ResNet-T with each preset's head is trained for a few hundred steps on expert demos of one
quickstart task and must reproduce the actions of held-out demos, both the mixture's mode and the action
it takes at run time (sampled, unless the preset acts deterministically). The paper's own head (5 modes,
std floor 1e-4) collapses on the expert's nearly noise-free gripper and rotation commands: their
likelihood grows without bound and swamps the rest (docs/policies.md has the errors of a cpu-size network;
this small one is hit less, and less reliably, so the test does not rest on it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "bddl_tasks" / "quickstart" / "put_the_alphabet_soup_in_the_basket.bddl"
LOWDIM = ["joint_states", "gripper_states", "ee_states"]
DEMOS, HELD_OUT, STEPS = 10, 2, 600
# A body small enough to train in seconds; the head's keys come from the preset under test.
BODY = dict(
    lowdim_keys=LOWDIM,
    embed_size=32,
    encoder_width=8,
    encoder_blocks=1,
    extra_embedding_size=16,
    language_proj_size=16,
    transformer_layers=1,
    heads=2,
    head_size=16,
    mlp_size=64,
    num_keypoints=16,
    shift_pad=3,
)
HEAD_KEYS = ("gmm_modes", "gmm_hidden", "min_std", "deterministic_eval")
# Mean absolute error on held-out steps, in action units: of the hand's motion (x, y, z; the expert moves
# at up to 0.6) and of the gripper command (-1 or +1: 0.25 is one step in eight with the wrong sign).
# Measured here (torch 2.13, expert 0.22's demos): the paper preset's head (one component, floor 0.05,
# sampled) 0.067 / 0.065 (mode) and 0.107 / 0.089 (sampled); five components with that floor (its head
# before) 0.065 / 0.072 and 0.109 / 0.180; the cpu preset's 0.062 / 0.052 (it acts with the mode); the
# paper's own floor 0.067 / 0.089 and 0.112 / 0.240, its mode's motion error having moved between 0.077 and
# 0.122 before on demos that differed by 1e-6: too close to the tolerance to test on.
MODE_TOLERANCE = {"motion": 0.10, "gripper": 0.25}
RUN_TIME_TOLERANCE = {"motion": 0.16, "gripper": 0.35}


@pytest.fixture(scope="module")
def expert_demos(tmp_path_factory):
    """Expert demos of the soup task at 32x32, collected once for the module."""
    from libero_ll.data.collect import collect_task
    from libero_ll.data.dataset import load_task_data
    from libero_ll.envs.env import EnvConfig

    out = tmp_path_factory.mktemp("head_demos") / "soup.hdf5"
    collect_task(
        TASK, out, DEMOS, seed=0, env_config=EnvConfig(image_size=32, robot_mesh="collision"), max_steps=300
    )
    emb = np.zeros(4, np.float32)
    emb[0] = 1.0
    return load_task_data(out, 0, emb, ["agentview_rgb", "eye_in_hand_rgb", *LOWDIM])


def preset_head(preset: str) -> dict:
    """The head keys a preset gives ResNet-T."""
    from libero_ll.experiments.config import load_config, policy_config
    from libero_ll.policies.resnet_t import ResNetTConfig

    keys = {**vars(ResNetTConfig()), **policy_config(load_config(REPO / "configs" / f"{preset}.yaml"))}
    return {k: keys[k] for k in HEAD_KEYS}


def held_out_errors(task_data, head: dict, steps: int = STEPS) -> tuple[dict, dict]:
    """Train a small policy with `head` on all but the last demos; mean absolute errors of the mode and of
    the run-time action on every step of the held-out demos."""
    from libero_ll.data.dataset import SequenceDataset, TaskData
    from libero_ll.learners.base import adamw
    from libero_ll.policies import make_policy
    from libero_ll.policies.gmm import gmm_mode

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    train = TaskData(0, task_data.demos[:-HELD_OUT], task_data.task_emb)
    held = TaskData(0, task_data.demos[-HELD_OUT:], task_data.task_emb)
    shape = {
        "image_shape": (32, 32, 3),
        "lowdim": {"joint_states": 7, "gripper_states": 2, "ee_states": 6},
        "action_dim": 7,
        "task_emb_dim": 4,
    }
    policy = make_policy("resnet_t", {**BODY, **head}, shape)
    stats = {k: np.concatenate([d[k] for d in train.demos]) for k in LOWDIM}
    policy.set_lowdim_stats({k: (v.mean(0), v.std(0)) for k, v in stats.items()})
    keys = [*policy.image_keys, *LOWDIM]
    data = SequenceDataset([train], policy.seq_len, keys)
    optimizer = adamw(policy.parameters(), 1e-3, 1e-4)  # fused, as the learners train
    policy.train()
    for _ in range(steps):
        loss = policy.compute_loss(data.get_batch(rng.integers(len(data), size=16)))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 100.0)
        optimizer.step()

    policy.eval()
    test = SequenceDataset([held], policy.seq_len, keys)
    batch = test.get_batch(np.arange(0, len(test), policy.seq_len))
    with torch.no_grad():
        dist = policy.head(policy.features(batch))
        mode = gmm_mode(dist).clamp(-1, 1)
        acted = mode if policy.cfg.deterministic_eval else dist.sample().clamp(-1, 1)
    mask, actions = batch["mask"], batch["actions"]

    def errors(pred: torch.Tensor) -> dict:
        err = (pred - actions)[mask].abs().mean(0)
        return {"motion": float(err[:3].mean()), "gripper": float(err[6])}

    return errors(mode), errors(acted)


@pytest.mark.parametrize("preset", ["paper", "cpu"])
def test_preset_head_reproduces_held_out_expert_actions(expert_demos, preset):
    mode, acted = held_out_errors(expert_demos, preset_head(preset))
    for name, tol in MODE_TOLERANCE.items():
        assert mode[name] < tol, f"{preset} head: mode {name} error {mode[name]:.3f} (tolerance {tol})"
    for name, tol in RUN_TIME_TOLERANCE.items():
        assert acted[name] < tol, f"{preset} head: run-time {name} error {acted[name]:.3f} (tolerance {tol})"


def test_the_check_fails_for_a_head_that_has_not_learned(expert_demos):
    # The tolerances are tight enough to fail: a head whose mode does not follow the demos (here after a
    # few steps) misses them.
    mode, acted = held_out_errors(expert_demos, preset_head("paper"), steps=20)
    misses = [f"mode {k}" for k, tol in MODE_TOLERANCE.items() if mode[k] >= tol]
    misses += [f"run-time {k}" for k, tol in RUN_TIME_TOLERANCE.items() if acted[k] >= tol]
    assert len(misses) >= 2, f"a barely trained head reproduced the demos: mode {mode}, run time {acted}"
