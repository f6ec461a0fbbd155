"""Building blocks shared by the policies: the FiLM ResNet encoder and the block-causal transformer."""

import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.policies.encoders import FiLM, GroupNorm, ResNetFiLMEncoder, SpatialSoftmax
from libero_ll.policies.temporal import TemporalTransformer


@pytest.mark.parametrize("size,norm,pool", [(32, "group", "spatial_softmax"), (64, "batch", "avg")])
def test_encoder_output_shape(size, norm, pool):
    torch.manual_seed(0)
    enc = ResNetFiLMEncoder(
        cond_size=5, embed_size=12, width=8, num_blocks=3, norm=norm, pool=pool, num_keypoints=4
    )
    out = enc(torch.rand(4, 3, size, size), torch.randn(4, 5))
    assert out.shape == (4, 12) and torch.isfinite(out).all()


def test_patch_stem_gives_the_conv_stems_resolution():
    images = torch.rand(2, 3, 64, 64).contiguous(memory_format=torch.channels_last)
    maps = {}
    for stem in ("conv", "patch"):
        enc = ResNetFiLMEncoder(cond_size=5, embed_size=12, width=8, num_blocks=1, num_keypoints=4, stem=stem)
        maps[stem] = enc.stem(images).shape
        assert enc(images, torch.randn(2, 5)).shape == (2, 12)
    assert maps["conv"] == maps["patch"] == (2, 8, 16, 16)
    with pytest.raises(LiberoError, match="stem"):
        ResNetFiLMEncoder(cond_size=5, stem="pixel")


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_spatial_softmax_gives_each_keypoints_expected_position(layout):
    """Keypoint k's output is the mean (x, y) over the map's positions, weighted by the softmax of its 1x1
    convolution divided by the temperature; written out plainly here, forward and backward, in both layouts."""
    torch.manual_seed(0)
    pool = SpatialSoftmax(6, num_keypoints=4)
    with torch.no_grad():
        pool.log_temperature.fill_(-0.7)
    x = torch.randn(3, 6, 5, 7).contiguous(memory_format=layout).requires_grad_()
    got = pool(x)
    w, b, t = pool.keypoints.weight[:, :, 0, 0], pool.keypoints.bias, pool.log_temperature.exp()
    logits = (torch.einsum("kc,nchw->nkhw", w, x) + b[:, None, None]) / t
    attn = torch.softmax(logits.flatten(2), dim=-1).view(3, 4, 5, 7)
    ys, xs = torch.linspace(-1, 1, 5), torch.linspace(-1, 1, 7)
    want = torch.cat([(attn * xs).sum(dim=(2, 3)), (attn * ys[:, None]).sum(dim=(2, 3))], dim=1)
    assert got.shape == (3, 8)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    params = [x, pool.keypoints.weight, pool.keypoints.bias, pool.log_temperature]
    # Gradients: a loss that weighs every output differently, so that a swapped x and y would show.
    weights = torch.randn(3, 8)
    grads = [torch.autograd.grad((out * weights).sum(), params) for out in (got, want)]
    for name, a, b in zip(("x", "weight", "bias", "log_temperature"), *grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}")


def test_spatial_softmax_used_in_inference_mode_still_trains():
    """The grid of positions is kept from call to call; one kept from an action taken in inference mode (as
    rollouts take them) must not reach training, where autograd refuses such tensors, nor change any value."""
    torch.manual_seed(0)
    pool = SpatialSoftmax(6, num_keypoints=4)
    x = torch.randn(2, 6, 5, 7)
    with torch.inference_mode():
        acted = pool(x)
    trained = pool(x.clone().requires_grad_())
    trained.sum().backward()
    assert pool.log_temperature.grad is not None
    torch.testing.assert_close(trained.detach(), acted, rtol=0, atol=0)
    with torch.inference_mode():
        torch.testing.assert_close(pool(x), acted, rtol=0, atol=0)
    assert pool(torch.randn(2, 6, 4, 3)).shape == (2, 8)  # another size


def test_encoder_layout_changes_the_memory_not_the_function():
    """`encoder_channels_last: false` keeps the default layout throughout (a GPU's GroupNorm returns it) and
    computes what the channels-last encoder computes, forward and backward."""
    from libero_ll.policies import make_policy

    torch.manual_seed(0)
    kwargs = dict(cond_size=5, embed_size=12, width=8, num_blocks=3, num_keypoints=4)
    last, plain = ResNetFiLMEncoder(**kwargs), ResNetFiLMEncoder(**kwargs, channels_last=False)
    for film in last.films:
        torch.nn.init.normal_(film.proj.weight, std=0.5)
    plain.load_state_dict(last.state_dict())
    assert last.stem[0].weight.is_contiguous(memory_format=torch.channels_last)
    weight = plain.stem[0].weight
    assert weight.is_contiguous() and not weight.is_contiguous(memory_format=torch.channels_last)
    images, cond = torch.rand(3, 3, 32, 32), torch.randn(3, 5)
    maps = {}
    for name, enc in (("last", last), ("plain", plain)):
        enc.blocks[-1].register_forward_hook(lambda m, i, o, name=name: maps.__setitem__(name, o))
        enc(images, cond).square().sum().backward()
    assert maps["last"].is_contiguous(memory_format=torch.channels_last) and maps["plain"].is_contiguous()
    torch.testing.assert_close(maps["plain"], maps["last"], rtol=1e-4, atol=1e-5)
    for (name, a), b in zip(last.named_parameters(), plain.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5, msg=name)
    # The policies' key, checked.
    meta = {"image_shape": (32, 32, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": 4}
    small = {"lowdim_keys": ["gripper_states"], "encoder_width": 8, "encoder_blocks": 1}
    policy = make_policy("resnet_t", {**small, "encoder_channels_last": False}, meta)
    assert policy.encoders["agentview_rgb"].memory_format == torch.contiguous_format
    with pytest.raises(LiberoError, match="encoder_channels_last"):
        make_policy("resnet_rnn", {**small, "encoder_channels_last": "no"}, meta)


def test_group_norm_of_channels_last_maps_is_the_default_layouts_bit_for_bit():
    """On a CPU the encoders' GroupNorm normalises channels-last maps in the default layout (PyTorch's kernel
    for channels-last input is several times slower with 2 channels a group): the same values and gradients
    as the default layout's kernel, exactly, and the output stays channels-last for the next convolution."""
    torch.manual_seed(0)
    norm = GroupNorm(8, 16)
    torch.nn.init.normal_(norm.weight)
    torch.nn.init.normal_(norm.bias)
    x = (torch.randn(6, 16, 12, 12) * 3 + 1).contiguous(memory_format=torch.channels_last).requires_grad_()
    plain = x.detach().contiguous().requires_grad_()
    upstream = torch.randn(6, 16, 12, 12)
    got = norm(x)
    got.backward(upstream)
    got_grads = [x.grad, norm.weight.grad.clone(), norm.bias.grad.clone()]
    norm.zero_grad()
    want = torch.nn.functional.group_norm(plain, 8, norm.weight, norm.bias, norm.eps)
    want.backward(upstream)
    assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()
    assert torch.equal(got, want)
    for name, a, b in zip(("input", "weight", "bias"), got_grads, [plain.grad, norm.weight.grad, norm.bias.grad]):
        assert torch.equal(a, b), name
    # Default-layout input takes the parent's path; so does the state dict.
    assert torch.equal(norm(plain.detach()), torch.nn.GroupNorm.forward(norm, plain.detach()))
    assert set(norm.state_dict()) == {"weight", "bias"}
    encoder = ResNetFiLMEncoder(cond_size=5, width=8, num_blocks=1)
    assert type(encoder.stem[1]) is GroupNorm and type(encoder.blocks[0].norm1) is GroupNorm


def test_film_starts_as_identity_and_conditions_after_training_starts():
    film = FiLM(3, 6)
    x = torch.randn(2, 6, 4, 4)
    assert torch.equal(film(x, torch.randn(2, 3)), x)
    torch.nn.init.normal_(film.proj.weight)
    cond = torch.randn(2, 3)
    assert not torch.allclose(film(x, cond), x)


def test_encoder_depends_on_language_once_film_is_trained():
    torch.manual_seed(0)
    enc = ResNetFiLMEncoder(cond_size=5, embed_size=12, width=8, num_blocks=2, num_keypoints=4)
    for film in enc.films:
        torch.nn.init.normal_(film.proj.weight, std=0.5)
    img = torch.rand(1, 3, 32, 32).expand(2, -1, -1, -1)
    out = enc(img, torch.randn(2, 5))
    assert not torch.allclose(out[0], out[1])


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_transformer_is_block_causal_and_ignores_padded_keys(positions):
    torch.manual_seed(0)
    tr = TemporalTransformer(dim=8, num_layers=2, heads=2, head_size=4, mlp_size=16, dropout=0.0, max_len=6,
                             position_encoding=positions).eval()
    x = torch.randn(2, 6, 3, 8)
    y = x.clone()
    y[:, 4:] = torch.randn(2, 2, 3, 8)
    a, b = tr(x), tr(y)
    assert a.shape == (2, 6, 3, 8)
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    # Tokens of the same step see each other: a change at step 4 moves every token of step 4.
    assert not torch.allclose(a[:, 4], b[:, 4], atol=1e-4)
    # Left padding: the valid steps give what the unpadded window gives.
    mask = torch.tensor([[False, False, True, True, True, True]] * 2)
    z = x.clone()
    z[:, :2] = 100.0
    assert torch.allclose(tr(z, mask)[:, 2:], tr(x[:, 2:]), atol=1e-5)
    with pytest.raises(LiberoError, match="max_len"):
        tr(torch.randn(1, 7, 3, 8))
