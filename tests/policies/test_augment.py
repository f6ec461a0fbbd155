"""Window augmentation: one shift and one colour draw per window, the identity in eval mode."""

import pytest
import torch
import torch.nn.functional as F

from libero_ll.policies.augment import WindowAugment, color_jitter, random_shift


def _windows(b=6, t=4, h=12, w=12):
    torch.manual_seed(0)
    base = torch.rand(b, 1, 3, h, w)
    # Frames differ by a constant, so a shared shift keeps that difference exactly.
    return base + torch.arange(t).view(1, t, 1, 1, 1).float()


def test_random_shift_is_pad_replicate_then_crop():
    x = _windows()
    pad = 2
    out = random_shift(x, pad)
    assert out.shape == x.shape and out.dtype == x.dtype
    padded = F.pad(x.flatten(0, 1), (pad,) * 4, mode="replicate").view(6, 4, 3, 16, 16)
    shifts = set()
    for b in range(x.shape[0]):
        matches = [
            (dy, dx)
            for dy in range(2 * pad + 1)
            for dx in range(2 * pad + 1)
            if torch.equal(out[b], padded[b, :, :, dy : dy + 12, dx : dx + 12])
        ]
        assert matches, "every window is a crop of its replicate-padded self"
        shifts.add(matches[0])
    assert len(shifts) > 1, "offsets are drawn per window"


def test_random_shift_is_the_same_for_all_frames_of_a_window():
    x = _windows()
    out = random_shift(x, 4)
    for t in range(x.shape[1]):
        assert torch.allclose(out[:, t] - t, out[:, 0], atol=1e-5)


def test_random_shift_works_on_uint8():
    x = torch.randint(0, 255, (2, 3, 3, 8, 8), dtype=torch.uint8)
    out = random_shift(x, 4)
    assert out.dtype == torch.uint8 and out.shape == x.shape


def test_color_jitter_is_shared_by_frames_and_stays_in_range():
    torch.manual_seed(1)
    frame = torch.rand(5, 1, 3, 8, 8)
    x = frame.expand(5, 3, 3, 8, 8).contiguous()
    out = color_jitter(x, 0.3, 0.3, 0.3)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert out.min() >= 0 and out.max() <= 1
    assert torch.allclose(out[:, 1], out[:, 0]) and torch.allclose(out[:, 2], out[:, 0])
    assert not torch.allclose(out, x)


def test_window_augment_only_in_training_mode():
    aug = WindowAugment(4, (0.3, 0.3, 0.3))
    x = torch.rand(2, 3, 3, 16, 16)
    aug.eval()
    assert aug(x) is x
    aug.train()
    out = aug(x)
    assert out.shape == x.shape and out.dtype == torch.float32
    assert not torch.equal(out, x)
    off = WindowAugment(0, (0.0, 0.0, 0.0)).train()
    assert torch.equal(off(x), x)


@pytest.mark.parametrize("compiling, drawn_on", [(False, "cpu"), (True, "meta")])
def test_random_numbers_are_drawn_on_the_device_inside_a_compiled_step(monkeypatch, compiling, drawn_on):
    # Drawn on the host and copied, the numbers put a CPU operation into a compiled training step, which CUDA
    # graphs cannot hold; eagerly they stay drawn on the host (the same numbers on every device).
    import libero_ll.policies.augment as augment

    devices = []
    for name in ("randint", "rand"):
        real = getattr(torch, name)
        monkeypatch.setattr(augment.torch, name,
                            lambda *a, _real=real, **k: devices.append(str(k.get("device"))) or _real(*a, **k))
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: compiling)
    images = torch.empty(3, 2, 3, 8, 8, device="meta")
    assert random_shift(images, 2).shape == images.shape
    assert color_jitter(images).shape == images.shape
    assert devices and set(devices) == {drawn_on}
    # A seeded generator's numbers are the host's, compiled or not.
    devices.clear()
    random_shift(images, 2, generator=torch.Generator().manual_seed(0))
    assert devices == ["cpu"]
