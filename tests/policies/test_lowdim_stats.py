"""Low-dim inputs are standardised with stored statistics that travel with the weights."""

import numpy as np
import torch

from libero_ll.policies import make_policy

META = {"image_shape": (16, 16, 3), "lowdim": {"joint_states": 7, "gripper_states": 2}, "action_dim": 7, "task_emb_dim": 4}
TINY = dict(
    image_keys=[], lowdim_keys=["joint_states", "gripper_states"], embed_size=8, extra_embedding_size=8,
    language_proj_size=8, transformer_layers=1, heads=1, head_size=8, mlp_size=8, gmm_hidden=[8], seq_len=3,
)


def test_standardised_inputs_and_state_dict_round_trip():
    policy = make_policy("resnet_t", TINY, META)
    mean, std = np.arange(7, dtype=np.float32), np.full(7, 2.0, np.float32)
    policy.set_lowdim_stats({"joint_states": (mean, std), "gripper_states": (np.zeros(2), np.full(2, 1e-6))})
    x = torch.as_tensor(mean + 2 * std)[None, None]
    out = policy.preprocess({"joint_states": x, "gripper_states": torch.ones(1, 1, 2)})
    torch.testing.assert_close(out["joint_states"], torch.full((1, 1, 7), 2.0))
    # A near-constant input is not blown up: its std is floored.
    assert out["gripper_states"].abs().max() <= 100.0
    fresh = make_policy("resnet_t", TINY, META)
    fresh.load_state_dict(policy.state_dict())
    torch.testing.assert_close(fresh.lowdim_mean_joint_states, torch.as_tensor(mean))
