"""Configuration of ViT-T; the defaults are the paper's values (LIBERO, appendix, table 7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libero_ll.policies.config import TemporalTransformerConfig


@dataclass
class ViTTConfig(TemporalTransformerConfig):
    """Every key of the ``vit_t`` policy config (the shared keys are documented in ``PolicyConfig`` and
    ``TemporalTransformerConfig``)."""

    policy_name: ClassVar[str] = "vit_t"

    # Side of a square image patch in pixels; the image size must be a multiple of it.
    patch_size: int = 16
    # Channels of the stride-2 convolution in front of the patch embedding; 0 embeds raw pixel patches.
    patch_stem_channels: int = 16
    # Normalisation in that stem: "group" (per sample, no running statistics), "batch" or "none".
    patch_norm: str = "group"
    # Width of the spatial transformer's tokens (the paper's img_embed_size).
    spatial_embed_size: int = 128
    # Layers of the spatial transformer.
    spatial_layers: int = 7
    # Attention heads per spatial layer.
    spatial_heads: int = 8
    # Width of each spatial attention head.
    spatial_head_size: int = 120
    # Hidden width of each spatial layer's MLP.
    spatial_mlp_size: int = 256
    # Dropout probability in the spatial transformer.
    spatial_dropout: float = 0.1
    # Width of each camera's embedding after the spatial transformer, and of every temporal token
    # (the paper's spatial_down_sample_embed_size).
    embed_size: int = 64
    # Hidden width of the MLP projecting the task embedding into the spatial and temporal language tokens.
    language_proj_size: int = 128

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_positive(
            "patch_size spatial_embed_size spatial_layers spatial_heads spatial_head_size spatial_mlp_size "
            "embed_size language_proj_size"
        )
        self.patch_stem_channels = self.require_whole("patch_stem_channels", at_least=0)
        self.require_fraction("spatial_dropout")
        self.require_choice("patch_norm", ("batch", "group", "none"))
