"""Low-dim inputs are standardised with stored statistics that travel with the weights."""

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
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


def test_lowdim_noise_is_one_offset_per_window_and_key_in_training_only():
    policy = make_policy("resnet_t", {**TINY, "lowdim_noise": 0.5}, META)
    x = torch.zeros(64, 3, 7)
    obs = {"joint_states": x, "gripper_states": torch.zeros(64, 3, 2)}
    policy.train()
    torch.manual_seed(0)
    out = policy.preprocess(obs)["joint_states"]
    # The same offset at every step of a window, a different one per window and number, of about the set size.
    torch.testing.assert_close(out, out[:, :1].expand_as(out))
    assert 0.35 < float(out[:, 0].std()) < 0.65
    policy.eval()
    torch.testing.assert_close(policy.preprocess(obs)["joint_states"], x)
    # Off by default, and a negative size is refused with the key's name.
    plain = make_policy("resnet_t", TINY, META).train()
    torch.testing.assert_close(plain.preprocess(obs)["joint_states"], x)
    with pytest.raises(LiberoError, match="lowdim_noise"):
        make_policy("resnet_t", {**TINY, "lowdim_noise": -0.1}, META)
