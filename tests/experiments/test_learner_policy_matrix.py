"""Every registered learner with every registered policy trains and evaluates on the smoke preset."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import libero_ll.learners  # noqa: F401  (registration)
import libero_ll.policies  # noqa: F401
from libero_ll.learners.registry import LEARNERS
from libero_ll.policies.registry import POLICIES

# Small values for config keys the architectures share names for; keys a policy lacks are skipped and keys
# not listed keep their defaults, so a newly registered policy is picked up as it is.
TINY = {
    "image_keys": ["agentview_rgb"], "lowdim_keys": ["gripper_states"], "embed_size": 8, "encoder_width": 4,
    "encoder_blocks": 1, "num_keypoints": 4, "language_proj_size": 8, "extra_embedding_size": 8,
    "transformer_layers": 1, "heads": 1, "head_size": 8, "mlp_size": 8, "gmm_hidden": [16], "gmm_modes": 2,
    "seq_len": 4, "rnn_hidden_size": 16, "rnn_layers": 1, "patch_size": 8, "patch_stem_channels": 4,
    "spatial_embed_size": 8, "spatial_layers": 1, "spatial_heads": 1, "spatial_head_size": 8,
    "spatial_mlp_size": 8,
}


def tiny_policy_cfg(name: str) -> dict:
    fields = {f.name for f in dataclasses.fields(POLICIES.get(name).config_class)}
    return {k: v for k, v in TINY.items() if k in fields}


@pytest.mark.parametrize("policy", POLICIES.names())
@pytest.mark.parametrize("learner", LEARNERS.names())
def test_learner_trains_and_evaluates_policy(learner, policy, tmp_path, smoke_data, smoke_envs, make_smoke_config):
    from libero_ll.experiments.lifelong import run_lifelong

    cfg = make_smoke_config(
        tmp_path, smoke_data, f"learner.name={learner}", f"policy.name={policy}", "train.epochs=1",
        "eval.max_steps=3", "eval.init_states=1", "language_encoder=task_id",
    )
    cfg.policy.cfg = tiny_policy_cfg(policy)
    run_dir = run_lifelong(cfg, log=lambda line: None, envs=smoke_envs)

    success = json.loads((run_dir / "success.json").read_text())
    matrix = np.array([[np.nan if v is None else v for v in row] for row in success["matrix"]])
    assert np.isfinite(np.diag(matrix)).all() and np.isfinite(matrix[1, 0])
    assert all(len(c) == 2 for c in success["curves"])  # epochs 0 and 1 of each task
    resources = json.loads((run_dir / "resources.json").read_text())
    assert [t["index"] for t in resources["tasks"]] == [0, 1]
    from libero_ll.data.hdf5 import task_demo_file
    from libero_ll.evaluation.resources import task_data_size

    for entry in resources["tasks"]:
        assert set(entry) == {"task", "index", "params", "params_used", "memory_bytes", "samples_seen", "train_macs",
                              "data_bytes", "data_windows"}
        assert entry["samples_seen"] > 0 and entry["train_macs"] > 0
        # The task's training data as the resource metrics measure it, recorded so that they need no demo files.
        size = task_data_size(task_demo_file(cfg.data.dir, entry["task"]), int(cfg.data.demos_per_task),
                              int(cfg.train.window_stride))
        assert (entry["data_bytes"], entry["data_windows"]) == (size.nbytes, size.windows) and size.nbytes > 0
        assert 0 < entry["params_used"] <= entry["params"]
    if learner == "packnet":
        assert resources["tasks"][0]["params_used"] < resources["tasks"][1]["params_used"] < resources["tasks"][0]["params"]
    if learner == "seql":
        assert all(t["memory_bytes"] == 0 for t in resources["tasks"])
    else:
        assert resources["tasks"][-1]["memory_bytes"] > 0
    if learner == "mtl":
        # One kept policy for all tasks: every row from a task's own on holds its success, nothing above.
        assert matrix[1, 0] == matrix[0, 0] and np.isnan(matrix[0, 1])

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    for task in success["task_names"]:
        assert {f"{task}/loss", f"{task}/success", f"{task}/lr"} <= set(events.Tags()["scalars"])

    from libero_ll.cli.metrics import print_metrics

    print_metrics(run_dir, as_json=True)  # the metrics read every learner's tensor


@pytest.mark.parametrize("learner", ["er", "ewc"])
def test_a_chunked_policy_trains_on_the_actions_after_each_window(learner, tmp_path, smoke_data, smoke_envs,
                                                                  make_smoke_config, monkeypatch):
    """With action_chunk C, every batch the policy's loss sees (the task's windows, the replayed ones, EWC's
    Fisher batches) carries the C - 1 actions after each window, so the last steps' chunks have targets."""
    from libero_ll.experiments.lifelong import run_lifelong
    from libero_ll.policies.base import BasePolicy

    seen = []
    original = BasePolicy.compute_loss

    def spy(self, batch):
        seen.append(None if "next_actions" not in batch else tuple(batch["next_actions"].shape))
        return original(self, batch)

    monkeypatch.setattr(BasePolicy, "compute_loss", spy)
    cfg = make_smoke_config(
        tmp_path, smoke_data, f"learner.name={learner}", "policy.name=resnet_t", "train.epochs=1",
        "eval.max_steps=3", "eval.init_states=1", "language_encoder=task_id",
    )
    cfg.policy.cfg = {**tiny_policy_cfg("resnet_t"), "action_chunk": 3}
    run_lifelong(cfg, log=lambda line: None, envs=smoke_envs)
    assert seen and all(shape is not None and shape[1:] == (2, 7) for shape in seen)
