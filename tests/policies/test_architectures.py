"""The three architectures (ResNet-RNN, ResNet-T, ViT-T) through one interface: shapes, learning, rollouts,
determinism, config errors and compute counts."""

import dataclasses

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.policies import POLICIES, ResNetRNNConfig, ViTTConfig, make_policy, policy_flops
from libero_ll.policies.gmm import gmm_mode

H = 32
D = 12
SHAPE_META = {
    "image_shape": (H, H, 3),
    "lowdim": {"joint_states": 7, "gripper_states": 2},
    "action_dim": 7,
    "task_emb_dim": D,
}
HEAD = dict(gmm_hidden=[32], seq_len=5)
TINY = {
    "resnet_rnn": dict(
        embed_size=8, encoder_width=8, encoder_blocks=1, num_keypoints=4, language_proj_size=8,
        rnn_hidden_size=32, rnn_layers=2, **HEAD,
    ),
    "resnet_t": dict(
        embed_size=16, encoder_width=8, encoder_blocks=1, num_keypoints=4, language_proj_size=16,
        extra_embedding_size=16, transformer_layers=1, heads=2, head_size=8, mlp_size=32, dropout=0.0, **HEAD,
    ),
    "vit_t": dict(
        patch_size=8, patch_stem_channels=8, spatial_embed_size=16, spatial_layers=1, spatial_heads=2,
        spatial_head_size=8, spatial_mlp_size=16, spatial_dropout=0.0, embed_size=16, language_proj_size=16,
        extra_embedding_size=16, transformer_layers=1, heads=2, head_size=8, mlp_size=32, dropout=0.0, **HEAD,
    ),
}
NAMES = sorted(TINY)
# Tokens per step and feature width of each tiny policy.
TOKENS = {"resnet_rnn": (1, 2 * 8 + 9 + 8), "resnet_t": (6, 16), "vit_t": (6, 16)}
FEATURES = {"resnet_rnn": 32, "resnet_t": 16, "vit_t": 16}


def tiny_policy(name, seed=0, **overrides):
    torch.manual_seed(seed)
    return make_policy(name, {**TINY[name], **overrides}, SHAPE_META)


def make_batch(b=3, t=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = {
        "agentview_rgb": torch.randint(0, 256, (b, t, H, H, 3), dtype=torch.uint8, generator=g),
        "eye_in_hand_rgb": torch.randint(0, 256, (b, t, H, H, 3), dtype=torch.uint8, generator=g),
        "joint_states": torch.randn(b, t, 7, generator=g),
        "gripper_states": torch.randn(b, t, 2, generator=g),
    }
    return {
        "obs": obs,
        "actions": torch.rand(b, t, 7, generator=g) * 2 - 1,
        "mask": torch.ones(b, t, dtype=torch.bool),
        "task_emb": torch.randn(b, D, generator=g),
    }


def window(batch, start, stop):
    """Steps [start, stop) of every window of a batch."""
    return {
        **batch,
        "obs": {k: v[:, start:stop] for k, v in batch["obs"].items()},
        "actions": batch["actions"][:, start:stop],
        "mask": batch["mask"][:, start:stop],
    }


def step_obs(batch, t, envs=slice(None)):
    """One rollout step (numpy, HWC images) cut from a batch at time t."""
    return {k: v[envs, t].numpy() for k, v in batch["obs"].items()}


def window_action(policy, batch):
    """The deterministic action a policy takes at the last step of each window of ``batch``."""
    with torch.no_grad():
        return gmm_mode(policy.head(policy.features(batch)))[:, -1].clamp(-1, 1).numpy()


def rollout(policy, batch, steps, envs=slice(None)):
    emb = batch["task_emb"][envs].numpy()
    return [policy.act(step_obs(batch, t, envs), emb) for t in range(steps)]


def test_all_three_are_registered():
    assert {"resnet_rnn", "resnet_t", "vit_t"} <= set(POLICIES.names())


def test_defaults_are_the_papers():
    rnn, vit = ResNetRNNConfig(), ViTTConfig()
    assert (rnn.embed_size, rnn.language_proj_size, rnn.rnn_hidden_size, rnn.rnn_layers, rnn.rnn_dropout) == (
        64, 32, 1024, 2, 0.0,
    )
    spatial = (vit.spatial_layers, vit.spatial_heads, vit.spatial_head_size, vit.spatial_mlp_size)
    assert spatial == (7, 8, 120, 256)
    assert (vit.spatial_embed_size, vit.embed_size, vit.spatial_dropout) == (128, 64, 0.1)
    assert vit.extra_embedding_size == 128
    temporal = (vit.transformer_layers, vit.heads, vit.head_size, vit.mlp_size, vit.dropout)
    assert temporal == (4, 6, 64, 256, 0.1)
    for c in (rnn, vit):
        assert (c.seq_len, c.gmm_modes, c.gmm_hidden, c.min_std) == (10, 5, [1024, 1024], 0.05)
        assert (c.augment_shift, c.shift_pad, c.augment_jitter, c.jitter) == (True, 4, True, [0.3, 0.3, 0.3])
        assert c.image_keys == ["agentview_rgb", "eye_in_hand_rgb"]
        assert c.lowdim_keys == ["joint_states", "gripper_states"]


@pytest.mark.parametrize("name", NAMES)
def test_shapes_loss_and_gradients(name):
    policy = tiny_policy(name)
    batch = make_batch()
    obs = policy.preprocess(batch["obs"])
    assert obs["agentview_rgb"].shape == (3, 5, 3, H, H) and obs["agentview_rgb"].dtype == torch.float32
    tokens = policy.encode_steps(obs, batch["task_emb"])
    assert tokens.shape == (3, 5, *TOKENS[name])
    assert policy.features(batch).shape == (3, 5, FEATURES[name])
    loss = policy.compute_loss(batch)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    for key in ("agentview_rgb", "eye_in_hand_rgb"):
        grads = [p.grad for p in policy.encoders[key].parameters()]
        assert all(g is not None for g in grads) and any(g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", NAMES)
def test_loss_drops_when_overfitting_a_fixed_batch(name):
    policy = tiny_policy(name, augment_shift=False, augment_jitter=False)
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


@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_causal_and_ignore_padding(name):
    policy = tiny_policy(name).eval()
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
        # A window padded at the episode's start is trained like the short history of a fresh rollout.
        padded = {**batch, "mask": batch["mask"].clone()}
        padded["mask"][:, :2] = False
        trimmed = window(batch, 2, 5)
        assert torch.allclose(policy.features(padded)[:, 2:], policy.features(trimmed), atol=1e-5)
        junk = make_batch(seed=2)
        for key, value in padded["obs"].items():
            value[:, :2] = junk["obs"][key][:, :2]
        assert torch.allclose(policy.features(padded)[:, 2:], policy.features(trimmed), atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_act_follows_the_training_window_and_reset_forgets(name):
    # The LSTM keeps its state past seq_len steps only with rnn_horizon 0 (see the horizon test).
    extra = {"rnn_horizon": 0} if name == "resnet_rnn" else {}
    policy = tiny_policy(name, deterministic_eval=True, **extra)
    policy.train()
    batch = make_batch(b=2, t=5)
    policy.reset(2)
    actions = rollout(policy, batch, 5)
    assert all(a.shape == (2, 7) and a.dtype == np.float32 and np.all(np.abs(a) <= 1) for a in actions)
    assert policy.training, "act leaves the module's mode as it was"
    policy.eval()
    for t in range(5):
        assert np.allclose(actions[t], window_action(policy, window(batch, 0, t + 1)), atol=1e-5)
    # Without a reset the history goes on, so step 0's observation now acts differently.
    carried = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    assert not np.allclose(carried, actions[0], atol=1e-5)
    # After a reset the same observations give the same actions again.
    policy.reset(2)
    again = rollout(policy, batch, 5)
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(actions, again))


@pytest.mark.parametrize("name", NAMES)
def test_reset_of_one_env_keeps_the_others(name):
    policy = tiny_policy(name, deterministic_eval=True).eval()
    batch = make_batch(b=2, t=5)
    policy.reset(2)
    rollout(policy, batch, 3)
    policy.reset(2, env_ids=[1])
    both = policy.act(step_obs(batch, 3), batch["task_emb"].numpy())
    assert np.allclose(both[0], window_action(policy, window(batch, 0, 4))[0], atol=1e-5)
    fresh = tiny_policy(name, deterministic_eval=True).eval()
    alone = fresh.act(step_obs(batch, 3, slice(1, 2)), batch["task_emb"][1:].numpy())
    assert np.allclose(both[1], alone[0], atol=1e-5)
    with pytest.raises(LiberoError, match="reset"):
        policy.act(step_obs(batch, 0, slice(0, 1)), batch["task_emb"][:1].numpy())


@pytest.mark.parametrize("name", NAMES)
def test_sampled_actions_stay_in_range(name):
    policy = tiny_policy(name).eval()
    batch = make_batch(b=4)
    with torch.no_grad():
        policy.head.scale_layer.bias.fill_(3.0)  # wide components, so raw samples leave [-1, 1]
    actions = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    assert actions.shape == (4, 7) and np.all(np.abs(actions) <= 1.0)
    assert np.abs(actions).max() == 1.0


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_under_a_fixed_seed(name):
    batch = make_batch()
    runs = []
    for _ in range(2):
        policy = tiny_policy(name, seed=3, dropout=0.1) if name != "resnet_rnn" else tiny_policy(name, seed=3)
        opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
        policy.train()  # augmentation and dropout draw from the seeded global stream
        losses = []
        for _ in range(2):
            loss = policy.compute_loss(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, policy.state_dict()))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])
    other = tiny_policy(name, seed=4)
    weights = [k for k in runs[0][1] if "lowdim_" not in k]
    assert not all(torch.equal(other.state_dict()[k], runs[0][1][k]) for k in weights)


@pytest.mark.parametrize("name", NAMES)
def test_config_errors_name_the_key(name):
    with pytest.raises(LiberoError, match="embed_sise"):
        make_policy(name, {"embed_sise": 3}, SHAPE_META)
    with pytest.raises(LiberoError, match=f"{name}: embed_size"):
        make_policy(name, {"embed_size": 0}, SHAPE_META)
    with pytest.raises(LiberoError, match="object_states"):
        make_policy(name, {**TINY[name], "lowdim_keys": ["object_states"]}, SHAPE_META)
    with pytest.raises(LiberoError, match="resnet_rnn"):
        make_policy(name, {"name": "resnet_rnn" if name != "resnet_rnn" else "vit_t"}, SHAPE_META)
    from omegaconf import OmegaConf

    # Not a mapping (a list or a number from a config built in Python): said so, with what was given.
    for given in ([1], OmegaConf.create([1]), 3):
        with pytest.raises(LiberoError, match=r"is a mapping of its keys to values, not (list|int) (\[1\]|3)"):
            make_policy(name, given, SHAPE_META)

    # A config file's policy section: the name plus overrides of the defaults.
    policy = make_policy(name, OmegaConf.create({"name": name, **TINY[name]}), SHAPE_META)
    assert dataclasses.asdict(policy.cfg)["embed_size"] == TINY[name]["embed_size"]


@pytest.mark.parametrize("name", NAMES)
def test_lowdim_components_leave_the_other_numbers_unread(name):
    from omegaconf import OmegaConf

    # Through a config file's section, as a preset gives it.
    cfg = OmegaConf.create({**TINY[name], "lowdim_components": {"joint_states": [0, 2]}})
    torch.manual_seed(0)
    policy = make_policy(name, cfg, SHAPE_META).eval()
    assert policy.cfg.lowdim_components == {"joint_states": [0, 2]}
    assert policy.lowdim_size("joint_states") == 2 and policy.lowdim_size("gripper_states") == 2
    batch = make_batch()
    with torch.no_grad():
        base = policy.features(batch)
        batch["obs"]["joint_states"][..., [1, 3, 4, 5, 6]] += 5.0
        hidden = policy.features(batch)
        batch["obs"]["joint_states"][..., 2] += 5.0
        shown = policy.features(batch)
    assert torch.equal(base, hidden)
    assert (shown - base).abs().sum() > 1e-3
    # Rollouts read the same numbers from whole observations.
    emb = batch["task_emb"].numpy()
    policy.reset(3)
    assert policy.act(step_obs(batch, 0), emb).shape == (3, 7)
    # Fewer inputs, not the same inputs zeroed: the first layer is smaller.
    assert sum(p.numel() for p in policy.parameters()) < sum(p.numel() for p in tiny_policy(name).parameters())


@pytest.mark.parametrize(
    "components, message",
    [
        ({"joint_states": [7]}, "positions \\[7\\] do not fit joint_states, which has 7"),
        ({"joint_states": []}, "lowdim_components.joint_states is empty"),
        ({"joint_states": [1, 1]}, "distinct positions"),
        ({"joint_states": [-1]}, "distinct positions"),
        ({"joint_states": ["x"]}, "list of integers"),
        ({"joint_states": 3}, "lowdim_components.joint_states must be a list"),
        ({"ee_states": [0]}, "names 'ee_states', which is not in lowdim_keys"),
        ([1, 2], "must map low-dim keys"),
    ],
)
def test_lowdim_components_errors_say_what_is_wrong(components, message):
    with pytest.raises(LiberoError, match=message):
        make_policy("resnet_t", {**TINY["resnet_t"], "lowdim_components": components}, SHAPE_META)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("gmm_hidden", 512, "gmm_hidden must be a list of whole numbers, got 512"),
        ("gmm_hidden", [512.5], "gmm_hidden must be a list of whole numbers"),
        ("jitter", 0.3, "jitter must be a list of numbers, got 0.3"),
        ("min_std", "abc", "min_std must be a number above 0, got 'abc'"),
        ("min_std", None, "min_std must be a number above 0, got None"),
        ("min_std", float("nan"), "min_std must be a number above 0"),
        ("lowdim_noise", "abc", "lowdim_noise must be a number of at least 0, got 'abc'"),
        ("shift_pad", 2.5, "shift_pad must be a whole number of at least 0, got 2.5"),
        ("shift_pad", "abc", "shift_pad must be a whole number of at least 0"),
        # A quoted "false" was taken as true: augmentation on, sampled actions off.
        ("augment_shift", "false", "augment_shift must be true or false, got 'false'"),
        ("augment_jitter", 1, "augment_jitter must be true or false, got 1"),
        ("deterministic_eval", "abc", "deterministic_eval must be true or false"),
        ("language_to_head", "yes", "language_to_head must be true or false"),
        ("encoder_channels_last", "no", "encoder_channels_last must be true or false"),
        # A bare name was read letter by letter.
        ("image_keys", "agentview_rgb", "image_keys must be a list of names, e.g. \\[agentview_rgb\\]"),
        ("current_lowdim_keys", "joint_states", "current_lowdim_keys must be a list of names"),
        ("lowdim_keys", [3], "lowdim_keys must be a list of names, got 3 in it"),
    ],
)
def test_shared_config_values_of_the_wrong_kind_are_named(key, value, message):
    with pytest.raises(LiberoError, match=f"resnet_t: {message}"):
        make_policy("resnet_t", {**TINY["resnet_t"], key: value}, SHAPE_META)


def test_config_numbers_written_as_text_or_whole_floats_are_taken():
    """What a YAML file or an override may give: 2.0 for a whole number, "1e-4" for a float."""
    cfg = make_policy("resnet_t", {**TINY["resnet_t"], "shift_pad": 2.0, "min_std": "1e-4"}, SHAPE_META).cfg
    assert (cfg.shift_pad, type(cfg.shift_pad), cfg.min_std) == (2, int, 1e-4)


def test_architecture_specific_config_errors():
    with pytest.raises(LiberoError, match="rnn_dropout"):
        ResNetRNNConfig(rnn_dropout=1.5)
    with pytest.raises(LiberoError, match="rnn_horizon"):
        ResNetRNNConfig(rnn_horizon=-1)
    with pytest.raises(LiberoError, match="rnn_horizon must be null, 0 or a number of steps, got 'abc'"):
        ResNetRNNConfig(rnn_horizon="abc")
    with pytest.raises(LiberoError, match="patch_stem_channels must be a whole number of at least 0, got 'abc'"):
        ViTTConfig(patch_stem_channels="abc")
    with pytest.raises(LiberoError, match="spatial_heads"):
        ViTTConfig(spatial_heads=0)
    with pytest.raises(LiberoError, match="patch_norm"):
        ViTTConfig(patch_norm="layer")
    with pytest.raises(LiberoError, match="patches of 12x12"):
        tiny_policy("vit_t", patch_size=12)
    with pytest.raises(LiberoError, match="even"):
        make_policy("vit_t", {**TINY["vit_t"], "patch_size": 1}, {**SHAPE_META, "image_shape": (5, 5, 3)})


def test_rnn_restarts_its_state_every_horizon():
    batch = make_batch(b=2, t=5)
    policy = tiny_policy("resnet_rnn", deterministic_eval=True, rnn_horizon=2).eval()
    policy.reset(2)
    actions = rollout(policy, batch, 5)
    # Steps 2-3 and 4 start from a zero state, like fresh windows.
    assert np.allclose(actions[3], window_action(policy, window(batch, 2, 4)), atol=1e-5)
    assert np.allclose(actions[4], window_action(policy, window(batch, 4, 5)), atol=1e-5)
    # By default the horizon is seq_len: after seq_len steps the next one acts like a first step.
    policy = tiny_policy("resnet_rnn", deterministic_eval=True, seq_len=3).eval()
    policy.reset(2)
    actions = rollout(policy, batch, 4)
    assert np.allclose(actions[3], window_action(policy, window(batch, 3, 4)), atol=1e-5)
    # Horizon 0 keeps the state for the whole episode, past seq_len steps.
    policy = tiny_policy("resnet_rnn", deterministic_eval=True, rnn_horizon=0, seq_len=2).eval()
    policy.reset(2)
    actions = rollout(policy, batch, 5)
    assert np.allclose(actions[4], window_action(policy, batch), atol=1e-5)


def test_vit_encoder_reads_the_language_token_and_works_without_a_stem():
    policy = tiny_policy("vit_t", patch_stem_channels=0).eval()
    assert policy.encoders["agentview_rgb"].patches.num_patches == 16
    frames = torch.rand(1, 3, H, H).expand(2, -1, -1, -1)
    with torch.no_grad():
        out = policy.encoders["agentview_rgb"](frames, torch.randn(2, 16))
    assert out.shape == (2, 16) and not torch.allclose(out[0], out[1], atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_policy_flops_scale_with_the_batch_and_leave_the_policy_alone(name):
    policy = tiny_policy(name).train()
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    rng = torch.random.get_rng_state()
    one = policy_flops(policy, make_batch(b=1))
    three = policy_flops(policy, make_batch(b=3))
    assert one > 0 and three == 3 * one
    assert torch.equal(rng, torch.random.get_rng_state()), "counting draws no random numbers"
    assert policy.training and all(torch.equal(before[k], v) for k, v in policy.state_dict().items())


def test_policy_flops_match_a_hand_count_for_the_rnn():
    # Low-dim inputs only: language MLP once per window; per step two LSTM layers and the GMM head.
    hidden, p, b, t = 32, 8, 2, 5
    policy = tiny_policy("resnet_rnn", image_keys=[])
    inp = 9 + p
    language = D * p + p * p
    lstm = 4 * hidden * (inp + hidden) + 4 * hidden * (hidden + hidden)
    head = hidden * 32 + 32 * (5 * 7) * 2 + 32 * 5
    assert policy_flops(policy, make_batch(b=b, t=t)) == b * language + b * t * (lstm + head)


@pytest.mark.parametrize("name", NAMES)
def test_a_compiled_training_loss_runs_wholly_on_the_policys_device(name):
    # CUDA graphs (train.compile "reduce-overhead") cannot hold an operation on the host: the random shift's
    # offsets, drawn on the host and copied, put two such operations into every compiled step. Traced with the
    # policy and its batch on the meta device, no tensor of the graph may be on the CPU.
    policy = tiny_policy(name, augment_shift=True, augment_jitter=True, lowdim_noise=0.1, action_chunk=2).to("meta")
    policy.train()
    batch = make_batch()
    batch = {k: ({kk: vv.to("meta") for kk, vv in v.items()} if isinstance(v, dict) else v.to("meta"))
             for k, v in batch.items()}
    on_cpu, graphs = [], []

    def inspect(gm, example_inputs):
        graphs.append(gm)
        for node in gm.graph.nodes:
            value = node.meta.get("example_value")
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, torch.Tensor) and v.device.type == "cpu":
                    on_cpu.append(f"{node.target} ({(node.meta.get('stack_trace') or '').strip().splitlines()[-2:]})")
        return gm.forward

    torch._dynamo.reset()
    try:
        # Dynamo leaves the LSTM out of its graphs (the graphs around it are compiled).
        torch.compile(policy.compute_loss, backend=inspect, fullgraph=name != "resnet_rnn")(batch)
    finally:
        torch._dynamo.reset()
    assert graphs and on_cpu == []


def test_actions_sampled_from_streams_follow_the_mixture():
    """Each env's sampled action comes from its own stream: the first uniform picks the component, the next
    normals its noise; over many envs the components come in proportion to their weights."""
    from libero_ll.policies.gmm import gmm_distribution

    policy = tiny_policy("resnet_t")
    n = 20000
    logits = torch.log(torch.tensor([0.2, 0.5, 0.3])).expand(n, 3)
    means = torch.tensor([[-0.6, 0.0], [0.0, 0.5], [0.7, -0.4]]).expand(n, 3, 2)
    stds = torch.tensor([[0.05, 0.1], [0.05, 0.05], [0.1, 0.05]]).expand(n, 3, 2)
    policy.use_streams([np.random.default_rng(i) for i in range(n)])
    x = policy._sample_from_streams(gmm_distribution(logits, means, stds), n)
    nearest = ((x[:, None, :] - means[0]) ** 2).sum(-1).argmin(-1)
    assert torch.allclose(torch.bincount(nearest, minlength=3).float() / n, torch.tensor([0.2, 0.5, 0.3]), atol=0.01)
    for k in range(3):
        assert torch.allclose(x[nearest == k].std(0), stds[0, k], rtol=0.05)
    # Env 0's action, by hand from its stream: the uniform, then the normals.
    rng = np.random.default_rng(0)
    u, z = rng.random(), rng.standard_normal(2)
    k = int(np.searchsorted(np.cumsum([0.2, 0.5, 0.3]), u, side="right"))
    expected = means[0, k] + stds[0, k] * torch.tensor(z, dtype=torch.float32)
    assert torch.allclose(x[0], expected, atol=1e-6)
    with pytest.raises(LiberoError, match="act got 3 envs but 20000 random streams"):
        policy._sample_from_streams(gmm_distribution(logits[:3], means[:3], stds[:3]), 3)
    policy.use_streams(None)
