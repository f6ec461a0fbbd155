"""ResNet-T: shapes, learning on a fixed batch, causality, masking, rollouts, the factory."""

import dataclasses

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.policies import ResNetTConfig, make_policy
from libero_ll.policies.gmm import gmm_mode
from test_architectures import step_obs, window

H = 32
D = 12
SHAPE_META = {
    "image_shape": (H, H, 3),
    "lowdim": {"joint_states": 7, "gripper_states": 2, "ee_states": 6},
    "action_dim": 7,
    "task_emb_dim": D,
}
TINY = dict(
    embed_size=16, encoder_width=8, encoder_blocks=2, num_keypoints=8, language_proj_size=16,
    extra_embedding_size=16, transformer_layers=1, heads=2, head_size=8, mlp_size=32, seq_len=5,
    gmm_hidden=[32], dropout=0.0,
)


def tiny_policy(**overrides):
    torch.manual_seed(0)
    return make_policy("resnet_t", {**TINY, **overrides}, SHAPE_META)


def make_batch(b=3, t=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = {
        "agentview_rgb": torch.randint(0, 256, (b, t, H, H, 3), dtype=torch.uint8, generator=g),
        "eye_in_hand_rgb": torch.randint(0, 256, (b, t, H, H, 3), dtype=torch.uint8, generator=g),
        "joint_states": torch.randn(b, t, 7, generator=g),
        "gripper_states": torch.randn(b, t, 2, generator=g),
        "ee_states": torch.randn(b, t, 6, generator=g),
    }
    return {
        "obs": obs,
        "actions": torch.rand(b, t, 7, generator=g) * 2 - 1,
        "mask": torch.ones(b, t, dtype=torch.bool),
        "task_emb": torch.randn(b, D, generator=g),
        "task_id": torch.zeros(b, dtype=torch.long),
    }


def assert_rollout_matches_window(policy, batch):
    """Acting step by step over a batch's windows gives, at the last step, what the whole window gives."""
    policy.cfg.deterministic_eval = True
    policy.reset(len(batch["task_emb"]))
    for step in range(batch["actions"].shape[1]):
        action = policy.act(step_obs(batch, step), batch["task_emb"].numpy())
    with torch.no_grad():
        expected = gmm_mode(policy.head(policy.features(batch)))[:, -1].clamp(-1, 1)
    assert np.allclose(action, expected.numpy(), atol=1e-5)


def test_defaults_are_the_papers():
    c = ResNetTConfig()
    assert (c.embed_size, c.extra_embedding_size, c.transformer_layers) == (64, 128, 4)
    assert (c.heads, c.head_size, c.mlp_size, c.dropout, c.seq_len) == (6, 64, 256, 0.1, 10)
    assert (c.gmm_modes, c.gmm_hidden, c.min_std) == (5, [1024, 1024], 0.05)
    assert c.image_keys == ["agentview_rgb", "eye_in_hand_rgb"]
    assert c.lowdim_keys == ["joint_states", "gripper_states"]
    assert (c.shift_pad, c.jitter, c.deterministic_eval) == (4, [0.3, 0.3, 0.3], False)


def test_shapes_and_finite_loss():
    policy = tiny_policy()
    batch = make_batch()
    obs = policy.preprocess(batch["obs"])
    assert obs["agentview_rgb"].shape == (3, 5, 3, H, H) and obs["agentview_rgb"].dtype == torch.float32
    tokens = policy.encode_steps(obs, batch["task_emb"])
    assert tokens.shape == (3, 5, 6, 16)  # action, language, 2 cameras, 2 low-dim keys
    assert policy.features(batch).shape == (3, 5, 16)
    loss = policy.compute_loss(batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for n, p in policy.named_parameters() if "encoders" in n)


def test_loss_drops_when_overfitting_a_fixed_batch():
    policy = tiny_policy(augment_shift=False, augment_jitter=False)
    batch = make_batch(b=4)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    policy.train()
    losses = []
    for _ in range(40):
        loss = policy.compute_loss(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < losses[0] - 3.0, losses


def test_causality_later_steps_do_not_change_earlier_outputs():
    policy = tiny_policy().eval()
    batch = make_batch()
    changed = make_batch(seed=1)
    t = 3
    for key in batch["obs"]:
        changed["obs"][key][:, :t] = batch["obs"][key][:, :t]
    changed["task_emb"] = batch["task_emb"]
    with torch.no_grad():
        a, b = policy.features(batch), policy.features(changed)
    assert torch.allclose(a[:, :t], b[:, :t], atol=1e-5)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-3)


def test_current_lowdim_keys_reach_their_own_step_only():
    lowdim = ["joint_states", "gripper_states", "ee_states"]
    policy = tiny_policy(lowdim_keys=lowdim, current_lowdim_keys=["ee_states"]).eval()
    batch = make_batch()
    t = 2
    with torch.no_grad():
        base = policy.features(batch)
        batch["obs"]["ee_states"][:, t] += 3.0
        moved_hand = policy.features(batch)
        batch["obs"]["gripper_states"][:, t] += 3.0
        moved_fingers = policy.features(batch)
    changed = (moved_hand - base).abs().sum(-1) > 1e-4
    assert changed[:, t].all() and not changed[:, :t].any() and not changed[:, t + 1 :].any()
    # A key in the window's history changes its own step and every later one.
    later = (moved_fingers - moved_hand).abs().sum(-1) > 1e-4
    assert later[:, t:].all() and not later[:, :t].any()
    # Rollouts give what the window gives.
    assert_rollout_matches_window(policy, batch)
    with pytest.raises(LiberoError, match="current_lowdim_keys"):
        tiny_policy(lowdim_keys=["gripper_states"], current_lowdim_keys=["ee_states"])


def test_language_to_head_adds_the_instruction_next_to_the_transformer():
    lowdim = ["gripper_states", "ee_states"]
    policy = tiny_policy(lowdim_keys=lowdim, current_lowdim_keys=["ee_states"], language_to_head=True).eval()
    batch = make_batch()
    with torch.no_grad():
        feats = policy.features(batch)
        direct = policy.head_language(policy.language(policy._task_emb(batch["task_emb"])))
        policy.head_language.weight.zero_()
        policy.head_language.bias.zero_()
        without = policy.features(batch)
    # The instruction's projection is added to every step's features, on top of what the transformer gives.
    assert torch.allclose(feats - without, direct[:, None, :].expand_as(feats), atol=1e-5)
    assert direct.abs().sum() > 0
    # Rollouts give what the window gives.
    policy = tiny_policy(lowdim_keys=lowdim, current_lowdim_keys=["ee_states"], language_to_head=True).eval()
    assert_rollout_matches_window(policy, batch)
    # Off by default (the paper's network): no extra parameters.
    assert not any("head_language" in name for name in tiny_policy().state_dict())


def test_padded_steps_do_not_affect_the_loss():
    policy = tiny_policy().eval()
    batch = make_batch()
    # Window 0 padded at the episode's start (2 steps), window 1 at its end (1 step).
    batch["mask"][0, :2] = False
    batch["mask"][1, -1:] = False
    # Same valid steps, different padded ones (other observations, absurd actions).
    other = make_batch(seed=7)
    for key, value in batch["obs"].items():
        other["obs"][key][batch["mask"]] = value[batch["mask"]]
    other["actions"][batch["mask"]] = batch["actions"][batch["mask"]]
    other["actions"][~batch["mask"]] = 1e6
    other["mask"], other["task_emb"] = batch["mask"], batch["task_emb"]
    with torch.no_grad():
        assert torch.allclose(policy.compute_loss(batch), policy.compute_loss(other), atol=1e-5)
        # A start-padded window is trained exactly like the short history a rollout has.
        trimmed = {
            "obs": {k: v[:1, 2:] for k, v in batch["obs"].items()},
            "actions": batch["actions"][:1, 2:],
            "mask": batch["mask"][:1, 2:],
            "task_emb": batch["task_emb"][:1],
        }
        padded = {**trimmed, "obs": {k: v[:1] for k, v in batch["obs"].items()},
                  "actions": batch["actions"][:1], "mask": batch["mask"][:1]}
        assert torch.allclose(policy.compute_loss(padded), policy.compute_loss(trimmed), atol=1e-5)


def test_eval_mode_loss_is_deterministic():
    policy = tiny_policy(dropout=0.1).eval()
    batch = make_batch()
    with torch.no_grad():
        assert torch.equal(policy.compute_loss(batch), policy.compute_loss(batch))


def test_act_shapes_range_and_history():
    policy = tiny_policy(deterministic_eval=True)
    policy.train()
    batch = make_batch(b=2, t=5)
    policy.reset(2)
    for t in range(5):
        action = policy.act(step_obs(batch, t), batch["task_emb"].numpy())
        assert action.shape == (2, 7) and action.dtype == np.float32
        assert np.all(np.abs(action) <= 1.0)
    assert policy.training, "act leaves the module's mode as it was"
    # The last action is what the full window gives at its last step.
    with torch.no_grad():
        expected = gmm_mode(policy.eval().head(policy.features(batch)))[:, -1].clamp(-1, 1)
    assert np.allclose(action, expected.numpy(), atol=1e-5)
    # After a reset the history is gone: the first step acts as it did the first time.
    first = policy.act(step_obs(batch, 0), batch["task_emb"][0].numpy())  # (D,) embedding is broadcast
    policy.reset(2)
    again = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    assert not np.allclose(first, again, atol=1e-5)
    with torch.no_grad():
        expected = gmm_mode(policy.head(policy.features(window(batch, 0, 1))))[:, -1]
    assert np.allclose(again, expected.clamp(-1, 1).numpy(), atol=1e-5)


def test_act_keeps_only_the_last_seq_len_steps_and_resets_single_envs():
    policy = tiny_policy(deterministic_eval=True, seq_len=3).eval()
    batch = make_batch(b=2, t=5)
    policy.reset(2)
    for t in range(5):
        action = policy.act(step_obs(batch, t), batch["task_emb"].numpy())
    last3 = window(batch, 2, 5)
    with torch.no_grad():
        expected = gmm_mode(policy.head(policy.features(last3)))[:, -1].clamp(-1, 1)
    assert np.allclose(action, expected.numpy(), atol=1e-5)
    # Env 1 restarts: its next action depends on its new first step only, env 0 keeps its history.
    policy.reset(2, env_ids=[1])
    both = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    fresh = tiny_policy(deterministic_eval=True, seq_len=3).eval()
    alone = fresh.act(step_obs(batch, 0, slice(1, 2)), batch["task_emb"][1:].numpy())
    assert np.allclose(both[1], alone[0], atol=1e-5)
    with pytest.raises(LiberoError, match="reset"):
        policy.act(step_obs(batch, 0, slice(0, 1)), batch["task_emb"][:1].numpy())


def test_sampled_actions_stay_in_range():
    policy = tiny_policy().eval()
    batch = make_batch(b=4)
    policy.reset(4)
    with torch.no_grad():
        policy.head.scale_layer.bias.fill_(3.0)  # wide components, so raw samples leave [-1, 1]
    actions = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    assert actions.shape == (4, 7) and np.all(np.abs(actions) <= 1.0)


def test_factory_and_config_errors():
    with pytest.raises(LiberoError, match="resnet_t"):
        make_policy("no_such_policy", {}, SHAPE_META)
    with pytest.raises(LiberoError, match="embed_sise"):
        make_policy("resnet_t", {"embed_sise": 3}, SHAPE_META)
    with pytest.raises(LiberoError, match="heads"):
        make_policy("resnet_t", {"heads": 0}, SHAPE_META)
    with pytest.raises(LiberoError, match="object_states"):
        make_policy("resnet_t", {**TINY, "lowdim_keys": ["object_states"]}, SHAPE_META)
    from omegaconf import OmegaConf

    policy = make_policy("resnet_t", OmegaConf.create({"name": "resnet_t", **TINY}), SHAPE_META)
    assert dataclasses.asdict(policy.cfg)["embed_size"] == 16
    cfg = ResNetTConfig(**TINY, image_keys=["agentview_rgb"], lowdim_keys=[])
    policy = make_policy("resnet_t", cfg, SHAPE_META)
    tokens = policy.encode_steps(policy.preprocess(make_batch()["obs"]), torch.zeros(3, D))
    assert tokens.shape == (3, 5, 3, 16)
