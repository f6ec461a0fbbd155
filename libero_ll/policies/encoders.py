"""Image encoders for the policies: a ResNet-style encoder with FiLM language conditioning, and a patch-based
vision transformer that reads the language as one more token.

The blocks (FiLM, basic residual block, spatial softmax, patch embedding) are separate so that other policies
can reuse them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from libero_ll.errors import LiberoError
from libero_ll.policies.temporal import TransformerLayer


def make_norm(kind: str, channels: int) -> nn.Module:
    """A normalisation layer for ``channels`` feature maps.

    Args:
        kind: "group" (GroupNorm, per sample: padded frames and replayed data never leak into other
            samples' statistics), "batch" (BatchNorm2d, with running statistics) or "none".
        channels: number of channels.
    """
    if kind == "group":
        groups = next(g for g in (8, 4, 2, 1) if channels % g == 0)
        return GroupNorm(groups, channels)
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    if kind == "none":
        return nn.Identity()
    raise LiberoError(f"unknown norm {kind!r}; known: batch, group, none")


class GroupNorm(nn.GroupNorm):
    """``nn.GroupNorm`` that normalises channels-last feature maps on a CPU in the default layout.

    PyTorch's CPU kernel for channels-last input is slow when a group holds few channels (2 in the cpu
    preset's encoders): for 200 maps of 16 channels at 12x12, forward 1.9 ms against 0.2 ms in the default
    layout. So such input is copied to the default layout, normalised there and copied back: the values
    are those of the default layout's kernel, bit for bit, and a whole cpu-preset training step is faster
    (docs/speed.md). Other input (the default layout, a GPU) goes to the parent class unchanged. The
    parameters and state dict are ``nn.GroupNorm``'s.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channels_last = x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
        if x.device.type != "cpu" or not channels_last:
            return super().forward(x)
        y = F.group_norm(x.contiguous(), self.num_groups, self.weight, self.bias, self.eps)
        return y.contiguous(memory_format=torch.channels_last)


class FiLM(nn.Module):
    """Feature-wise linear modulation: x * (1 + gamma(c)) + beta(c), per channel.

    Starts as the identity (zero-initialised projection), so conditioning is learned on top of a
    working encoder.

    Args:
        cond_size: width of the conditioning vector.
        channels: number of channels to modulate.
    """

    def __init__(self, cond_size: int, channels: int):
        super().__init__()
        self.proj = nn.Linear(cond_size, 2 * channels)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.proj(cond)[:, :, None, None].chunk(2, dim=1)
        return torch.addcmul(beta, x, 1.0 + gamma)


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with a residual connection (ResNet's basic block).

    Args:
        in_channels, out_channels: channel counts.
        stride: stride of the first convolution (2 halves the resolution).
        norm: normalisation kind, see ``make_norm``.
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1, norm: str = "group"):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.norm1 = make_norm(norm, out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.norm2 = make_norm(norm, out_channels)
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.skip = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), make_norm(norm, out_channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In place where autograd allows it: a norm's output is not needed for its backward pass.
        h = F.relu(self.norm1(self.conv1(x)), inplace=True)
        h = self.norm2(self.conv2(h))
        return F.relu(h.add_(self.skip(x)), inplace=True)


class SpatialSoftmax(nn.Module):
    """Soft keypoints: per keypoint map, the softmax-weighted mean (x, y) position in [-1, 1].

    Args:
        in_channels: channels of the input feature map.
        num_keypoints: number of keypoint maps (a 1×1 convolution makes them).
    """

    def __init__(self, in_channels: int, num_keypoints: int = 32):
        super().__init__()
        self.keypoints = nn.Conv2d(in_channels, num_keypoints, 1)
        # A learned temperature lets the softmax sharpen as training goes.
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.out_size = 2 * num_keypoints
        self._grids: dict = {}  # not state: made again from the sizes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, C, H, W) feature maps → (N, 2K): the K keypoints' x coordinates, then their y coordinates."""
        n, c, h, w = x.shape
        k = self.keypoints.out_channels
        # The 1x1 convolution as one batched product over the positions, the temperature folded into its
        # (K, C) weights rather than dividing the N x K x H x W maps, and each keypoint's expected position
        # as a product with the grid of coordinates: the same function up to rounding, with fewer passes
        # over the maps (on a CPU, forward and backward in a third of the time; docs/speed.md).
        if x.is_contiguous():
            feats = x.flatten(2)  # (N, C, HW), a view
        else:  # channels-last: (N, H, W, C) in memory, so this is a view too
            feats = x.permute(0, 2, 3, 1).flatten(1, 2).transpose(1, 2)
        scale = self.log_temperature.neg().exp()
        weight = (self.keypoints.weight.reshape(k, c) * scale).to(feats.dtype)
        bias = (self.keypoints.bias * scale).to(feats.dtype)
        maps = torch.baddbmm(bias[None, :, None].expand(n, k, 1), weight.expand(n, k, c), feats)
        attn = torch.softmax(maps, dim=-1)  # (N, K, HW)
        return (attn @ self._grid(h, w, attn)).transpose(1, 2).reshape(n, 2 * k)

    def _grid(self, h: int, w: int, like: torch.Tensor) -> torch.Tensor:
        """(HW, 2): each position's x and y in [-1, 1], kept for each size, device and dtype: remade at every
        step, it was a fifth of a cpu-size policy's action on one rollout. One made in inference mode serves
        only there (autograd refuses such tensors), and a compiled graph makes its own."""
        compiling = torch.compiler.is_compiling()
        key = None if compiling else (h, w, like.device, like.dtype, torch.is_inference_mode_enabled())
        grid = self._grids.get(key)
        if grid is None:
            ys = torch.linspace(-1.0, 1.0, h, device=like.device, dtype=like.dtype)
            xs = torch.linspace(-1.0, 1.0, w, device=like.device, dtype=like.dtype)
            grid = torch.stack([xs.repeat(h), ys.repeat_interleave(w)], dim=1)
            if not compiling:
                self._grids[key] = grid
        return grid


class GlobalAvgPool(nn.Module):
    """Mean over the spatial positions of each channel."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.out_size = in_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


class ResNetFiLMEncoder(nn.Module):
    """ResNet-style image encoder with FiLM conditioning after every residual block.

    Layout: a stride-2 stem convolution and 3×3 max pool (a quarter of the resolution), then
    ``num_blocks`` basic blocks in stages of two; each stage after the first doubles the channels and
    halves the resolution. The feature map is pooled (spatial softmax or global average) and projected
    to ``embed_size``.

    Args:
        cond_size: width of the conditioning (language) vector.
        embed_size: width of the output embedding.
        width: channels of the stem and first stage.
        num_blocks: number of basic residual blocks (≥ 1).
        norm: "group", "batch" or "none" (see ``make_norm``).
        pool: "spatial_softmax" or "avg".
        num_keypoints: keypoint maps for the spatial softmax.
        in_channels: image channels (3 for RGB).
        stem: "conv" (a 5×5 stride-2 convolution and a 3×3 stride-2 max pool) or "patch" (a 4×4 stride-4
            convolution: the same quarter resolution without the half-resolution map in between, about a
            fifth cheaper per training step on a CPU).
        channels_last: hold the weights and feature maps channels-last (markedly faster on a CPU); False keeps
            them in PyTorch's default layout. The same function either way, up to rounding.
    """

    def __init__(
        self,
        cond_size: int,
        embed_size: int = 64,
        width: int = 64,
        num_blocks: int = 4,
        norm: str = "group",
        pool: str = "spatial_softmax",
        num_keypoints: int = 32,
        in_channels: int = 3,
        stem: str = "conv",
        channels_last: bool = True,
    ):
        super().__init__()
        if num_blocks < 1:
            raise LiberoError(f"encoder needs at least one residual block, got {num_blocks}")
        if stem == "conv":
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, width, 5, 2, 2, bias=False),
                make_norm(norm, width),
                nn.ReLU(),
                nn.MaxPool2d(3, 2, 1),
            )
        elif stem == "patch":
            self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 4, 4, 0, bias=False), make_norm(norm, width), nn.ReLU())
        else:
            raise LiberoError(f"unknown stem {stem!r}; known: conv, patch")
        blocks, films = [], []
        channels = width
        for i in range(num_blocks):
            stage = i // 2
            out_channels = width * 2**stage
            stride = 2 if (i % 2 == 0 and stage > 0) else 1
            blocks.append(BasicBlock(channels, out_channels, stride, norm))
            films.append(FiLM(cond_size, out_channels))
            channels = out_channels
        self.blocks = nn.ModuleList(blocks)
        self.films = nn.ModuleList(films)
        if pool == "spatial_softmax":
            self.pool: nn.Module = SpatialSoftmax(channels, num_keypoints)
        elif pool == "avg":
            self.pool = GlobalAvgPool(channels)
        else:
            raise LiberoError(f"unknown pool {pool!r}; known: avg, spatial_softmax")
        self.proj = nn.Linear(self.pool.out_size, embed_size)
        self.embed_size = embed_size
        # Channels-last convolutions are markedly faster on a CPU (oneDNN). On a GPU, PyTorch's GroupNorm has
        # returned its output in the default layout, so each norm may cost two layout copies there.
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.to(memory_format=self.memory_format)

    def forward(self, images: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """Embed images.

        Args:
            images: (N, C, H, W) float images in [0, 1].
            cond: (N, cond_size) conditioning vectors, one per image.

        Returns:
            (N, embed_size) embeddings.
        """
        x = self.stem((images * 2.0 - 1.0).contiguous(memory_format=self.memory_format))
        for block, film in zip(self.blocks, self.films):
            x = film(block(x), cond)
        return self.proj(self.pool(x))


class PatchEmbedding(nn.Module):
    """Cut an image into non-overlapping patches and embed each one: (N, C, H, W) → (N, P, embed_size).

    With ``stem_channels`` > 0 a stride-2 7×7 convolution (with norm and ReLU) first makes a half-resolution
    feature map and a (patch/2)×(patch/2) strided convolution embeds it; with 0, one patch×patch strided
    convolution embeds the raw pixels (a linear patch embedding).

    Args:
        image_size: (H, W) of the input; both must be multiples of ``patch_size``.
        patch_size: side of a square patch in pixels (even when a stem is used).
        embed_size: width of each patch token.
        stem_channels: channels of the convolutional stem, 0 for none.
        norm: normalisation of the stem, see ``make_norm``.
        in_channels: image channels (3 for RGB).
    """

    def __init__(
        self,
        image_size: tuple[int, int],
        patch_size: int = 16,
        embed_size: int = 128,
        stem_channels: int = 64,
        norm: str = "group",
        in_channels: int = 3,
    ):
        super().__init__()
        h, w = (int(s) for s in image_size)
        if patch_size < 1 or h % patch_size or w % patch_size:
            raise LiberoError(
                f"images of {h}x{w} pixels cannot be cut into patches of {patch_size}x{patch_size}"
            )
        if stem_channels > 0:
            if patch_size % 2:
                raise LiberoError(f"patch_size must be even with a convolutional stem, got {patch_size}")
            half = patch_size // 2
            self.stem: nn.Module = nn.Sequential(
                nn.Conv2d(in_channels, stem_channels, 7, 2, 3, bias=False),
                make_norm(norm, stem_channels),
                nn.ReLU(),
            )
            self.proj = nn.Conv2d(stem_channels, embed_size, half, half)
        else:
            self.stem = nn.Identity()
            self.proj = nn.Conv2d(in_channels, embed_size, patch_size, patch_size)
        self.num_patches = (h // patch_size) * (w // patch_size)
        self.to(memory_format=torch.channels_last)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.proj(self.stem(images.contiguous(memory_format=torch.channels_last)))
        return x.flatten(2).transpose(1, 2)


class ViTEncoder(nn.Module):
    """Patch-based spatial transformer: patch tokens and a language token → one down-sampled image embedding.

    The language token (a projection of the conditioning vector) joins the patch tokens, so every layer's
    attention can depend on the task. The outputs of the patch tokens are averaged and projected to
    ``out_size``.

    Args:
        cond_size: width of the conditioning (language) vector.
        image_size: (H, W) of the input images.
        patch_size: side of a square patch in pixels.
        embed_size: width of the spatial tokens.
        out_size: width of the output embedding (the down-sampled embedding).
        stem_channels: channels of the patch embedding's convolutional stem, 0 for a linear embedding.
        num_layers, heads, head_size, mlp_size, dropout: the transformer's shape (see ``TransformerLayer``).
        norm: normalisation of the convolutional stem, see ``make_norm``.
        in_channels: image channels (3 for RGB).
    """

    def __init__(
        self,
        cond_size: int,
        image_size: tuple[int, int],
        patch_size: int = 16,
        embed_size: int = 128,
        out_size: int = 64,
        stem_channels: int = 64,
        num_layers: int = 7,
        heads: int = 8,
        head_size: int = 120,
        mlp_size: int = 256,
        dropout: float = 0.1,
        norm: str = "group",
        in_channels: int = 3,
    ):
        super().__init__()
        self.patches = PatchEmbedding(image_size, patch_size, embed_size, stem_channels, norm, in_channels)
        self.positions = nn.Parameter(torch.randn(self.patches.num_patches, embed_size) * 0.02)
        self.language_token = nn.Linear(cond_size, embed_size)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            TransformerLayer(embed_size, heads, head_size, mlp_size, dropout) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(embed_size)
        self.proj = nn.Linear(embed_size, out_size)
        self.embed_size = out_size

    def forward(self, images: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """Embed images.

        Args:
            images: (N, C, H, W) float images in [0, 1].
            cond: (N, cond_size) conditioning vectors, one per image.

        Returns:
            (N, out_size) embeddings.
        """
        patches = self.patches(images * 2.0 - 1.0) + self.positions
        x = self.drop(torch.cat([self.language_token(cond)[:, None, :], patches], dim=1))
        for layer in self.layers:
            x = layer(x, None)
        return self.proj(self.norm(x)[:, 1:].mean(dim=1))
