"""Conv-T: the token transformer of ResNet-T and ViT-T with a plain convolutional image encoder of one's own
(strided 3x3 convolutions, average pooled; no language conditioning in the encoder), as a plugin:

    libero-ll train configs/cpu.yaml plugins=[examples/plugins/conv_t_policy.py] policy.name=conv_t \
        policy.cfg.conv_channels=[16,32,64]

docs/extending.md walks through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn

from libero_ll.policies import register_policy
from libero_ll.policies.config import TemporalTransformerConfig
from libero_ll.policies.token_policy import TokenTransformerPolicy


@dataclass
class ConvTConfig(TemporalTransformerConfig):
    """Every key of `conv_t`: the shared ones (observations, window, head, augmentation; PolicyConfig), the
    temporal transformer's (TemporalTransformerConfig) and these."""

    policy_name: ClassVar[str] = "conv_t"  # how errors name the policy

    # Width of every token of the temporal transformer.
    embed_size: int = 64
    # Width of the projected task embedding that makes the language token.
    language_proj_size: int = 64
    # Output channels of each stride-2 3x3 convolution of the image encoder.
    conv_channels: list[int] = field(default_factory=lambda: [32, 64, 128])

    def __post_init__(self) -> None:
        super().__post_init__()  # checks the shared keys
        self.require_positive("embed_size language_proj_size")
        if not self.conv_channels or any(not isinstance(c, int) or c < 1 for c in self.conv_channels):
            raise self.error(f"conv_channels must be a list of positive integers, got {self.conv_channels!r}")


class ConvEncoder(nn.Module):
    """(N, C, H, W) frames → (N, out_size): stride-2 convolutions with ReLU, a global average, a projection."""

    def __init__(self, in_channels: int, channels: list[int], out_size: int):
        super().__init__()
        layers, width = [], in_channels
        for c in channels:
            layers += [nn.Conv2d(width, c, 3, stride=2, padding=1), nn.ReLU()]
            width = c
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(width, out_size)

    def forward(self, frames: torch.Tensor, language: torch.Tensor) -> torch.Tensor:
        # `language` (N, language_proj_size) is there for encoders that condition on the task (FiLM in
        # ResNet-T); this one leaves the task to the transformer's language token.
        return self.out(self.body(frames).mean(dim=(2, 3)))


@register_policy("conv_t")
class ConvTPolicy(TokenTransformerPolicy):
    """A token-transformer policy whose cameras go through `ConvEncoder`."""

    config_class = ConvTConfig

    def make_encoder(self, key: str) -> nn.Module:
        c: ConvTConfig = self.cfg
        return ConvEncoder(int(self.shape_meta["image_shape"][-1]), list(c.conv_channels), c.embed_size)
