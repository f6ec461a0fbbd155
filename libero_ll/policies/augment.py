"""Image augmentation for training windows: random shift and colour jitter, sampled once per window.

The functions take images (B, T, C, H, W), float in [0, 1] (the shift also takes uint8), and draw one set of
random parameters per window b, shared by its T frames, so that a window stays a consistent clip of one scene.
"""

from __future__ import annotations

import torch

from libero_ll.data.dataset import host_to_device


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Shift each window by a random integer offset in [-pad, pad] pixels, replicating the border.

    Equivalent to padding by ``pad`` pixels (replicate) and cropping back to H×W at a random place.

    Args:
        images: (B, T, C, H, W) images of any dtype.
        pad: largest shift in pixels along each axis; 0 returns the input.
        generator: optional torch generator for the offsets.

    Returns:
        A tensor of the same shape and dtype.
    """
    if pad <= 0:
        return images
    b, t, c, h, w = images.shape
    device = images.device
    offsets = _draw(lambda where: torch.randint(0, 2 * pad + 1, (2, b), generator=generator, device=where),
                    device, generator) - pad
    # Clamping source indices to the image reproduces replicate padding without building the padded copy.
    rows = (torch.arange(h, device=device)[None, :] + offsets[0][:, None]).clamp_(0, h - 1)  # (B, H)
    cols = (torch.arange(w, device=device)[None, :] + offsets[1][:, None]).clamp_(0, w - 1)  # (B, W)
    rows = rows[:, None, None, :, None].expand(b, t, c, h, w)
    shifted = images.gather(3, rows)
    cols = cols[:, None, None, None, :].expand(b, t, c, h, w)
    return shifted.gather(4, cols)


def _draw(sample, device: torch.device, generator: torch.Generator | None) -> torch.Tensor:
    """Random numbers `sample(where)` for a batch on `device`.

    Drawn on the host, the same numbers on every device for a seeded generator, then queued to the device;
    but inside a function being compiled (train.compile) without a generator, on the device itself: a draw
    on the host and its copy would be a CPU operation in the compiled graph, which CUDA graphs
    ("reduce-overhead") cannot hold, so the graph would be split around it (or not captured at all)."""
    if generator is None and torch.compiler.is_compiling() and torch.device(device).type != "cpu":
        return sample(device)
    return host_to_device(sample("cpu"), device)


def _grey(images: torch.Tensor) -> torch.Tensor:
    """Luma (ITU-R 601) of RGB images (..., 3, H, W), shape (..., 1, H, W)."""
    r, g, b = images.unbind(dim=-3)
    return (0.299 * r + 0.587 * g + 0.114 * b).unsqueeze(-3)


def _factors(b: int, strength: float, device, dtype, generator) -> torch.Tensor:
    """Per-window factors uniform in [1 - strength, 1 + strength], shaped to broadcast over (T, C, H, W)."""
    u = _draw(lambda where: torch.rand(b, generator=generator, device=where), device, generator).to(dtype)
    return (1.0 + strength * (2.0 * u - 1.0)).view(b, 1, 1, 1, 1)


def color_jitter(
    images: torch.Tensor,
    brightness: float = 0.3,
    contrast: float = 0.3,
    saturation: float = 0.3,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Randomly scale brightness, contrast and saturation of each window (one draw per window).

    Args:
        images: (B, T, 3, H, W) float RGB images in [0, 1].
        brightness, contrast, saturation: strengths s; each factor is uniform in [1 - s, 1 + s];
            0 disables it.
        generator: optional torch generator for the factors.

    Returns:
        Jittered images of the same shape, clipped to [0, 1].
    """
    b = images.shape[0]
    out = images
    # In-place steps on one working copy: the same arithmetic as out = clamp(m + f * (out - m)), without
    # a fresh full-size tensor per operation (on a CPU, allocation costs as much as the arithmetic).
    if brightness > 0:
        out = (out * _factors(b, brightness, out.device, out.dtype, generator)).clamp_(0.0, 1.0)
    if contrast > 0:
        # Each frame is blended with its own mean grey level, as a photo editor's contrast slider does.
        mean = _grey(out).mean(dim=(-3, -2, -1), keepdim=True)
        f = _factors(b, contrast, out.device, out.dtype, generator)
        out = _blend_(out if out is not images else out.clone(), mean, f)
    if saturation > 0:
        grey = _grey(out)
        f = _factors(b, saturation, out.device, out.dtype, generator)
        out = _blend_(out if out is not images else out.clone(), grey, f)
    return out


def _blend_(out: torch.Tensor, base: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """clamp(base + factor * (out - base), 0, 1), computed in ``out``'s own memory."""
    return out.sub_(base).mul_(factor).add_(base).clamp_(0.0, 1.0)


class WindowAugment(torch.nn.Module):
    """Random shift then colour jitter on (B, T, C, H, W) images; only the conversion to float in eval mode.

    Images come in as uint8 (0..255) or float in [0, 1] and go out as float in [0, 1]. The shift is done
    before the conversion, on the smaller uint8 tensor; the result is the same as shifting afterwards.

    Args:
        shift_pad: largest shift in pixels (0 disables the shift).
        jitter: (brightness, contrast, saturation) strengths (zeros disable the jitter).
    """

    def __init__(self, shift_pad: int = 4, jitter: tuple[float, float, float] = (0.3, 0.3, 0.3)):
        super().__init__()
        self.shift_pad = int(shift_pad)
        self.jitter = tuple(float(j) for j in jitter)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = random_shift(images, self.shift_pad) if self.training else images
        out = out.float().div_(255.0) if out.dtype == torch.uint8 else out.float()
        if self.training and any(self.jitter):
            out = color_jitter(out, *self.jitter)
        return out
