"""SeqL and ER on the shared loop: training steps, replay mixing, option checking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners import TrainConfig, make_learner
from libero_ll.policies import make_policy

TINY = {
    "image_keys": ["agentview_rgb"], "lowdim_keys": ["gripper_states"], "embed_size": 8, "encoder_width": 4,
    "encoder_blocks": 1, "extra_embedding_size": 8, "language_proj_size": 8, "transformer_layers": 1,
    "heads": 1, "head_size": 8, "mlp_size": 8, "gmm_hidden": [16], "num_keypoints": 4, "seq_len": 4,
}
META = {"image_shape": (16, 16, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": 5}


def _task(task_id: int, demos: int = 3, steps: int = 12) -> TaskData:
    rng = np.random.default_rng(task_id)
    return TaskData(
        task_id,
        [
            {
                "agentview_rgb": rng.integers(0, 255, (steps, 16, 16, 3), dtype=np.uint8),
                "gripper_states": rng.normal(size=(steps, 2)).astype(np.float32),
                "actions": rng.uniform(-1, 1, (steps, 7)).astype(np.float32),
            }
            for _ in range(demos)
        ],
        np.eye(5, dtype=np.float32)[task_id],
    )


def test_seql_epoch_changes_weights_and_returns_loss():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("seql", policy, TrainConfig(epochs=1, batch_size=4, lr=1e-3), {})
    data = _task(0)
    ds = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"])
    before = [p.detach().clone() for p in policy.parameters()]
    learner.start_task(0, data)
    loss = learner.train_epoch(ds)
    assert np.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_er_mixes_replay_of_earlier_tasks():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("er", policy, TrainConfig(epochs=1, batch_size=4), {"replay_batch_size": 3, "memory_demos": 2})
    t0, t1 = _task(0), _task(1)
    learner.start_task(0, t0)
    learner.end_task(0, t0)
    assert learner.replay is not None and len(learner.memory[0].demos) == 2
    assert learner.memory_bytes() > 0
    seen = {}
    original = policy.compute_loss

    def spy(batch):
        seen["task_id"] = batch["task_id"].clone()
        return original(batch)

    policy.compute_loss = spy
    learner.start_task(1, t1)
    ds = SequenceDataset([t1], 4, ["agentview_rgb", "gripper_states"])
    learner.observe(ds.get_batch(np.arange(4)))
    ids = seen["task_id"].tolist()
    assert ids.count(1) == 4 and ids.count(0) == 3


def test_unknown_learner_and_option_are_named():
    policy = make_policy("resnet_t", TINY, META)
    with pytest.raises(LiberoError, match="seql"):
        make_learner("nope", policy, TrainConfig(), {})
    with pytest.raises(LiberoError, match="replay_size"):
        make_learner("er", policy, TrainConfig(), {"replay_size": 3})
