"""ViT-T: per-camera patch-based spatial transformers, a causal temporal transformer, a GMM head."""

from __future__ import annotations

from torch import nn

from libero_ll.policies.encoders import ViTEncoder
from libero_ll.policies.registry import register_policy
from libero_ll.policies.token_policy import TokenTransformerPolicy
from libero_ll.policies.vit_t.config import ViTTConfig


@register_policy("vit_t")
class ViTTPolicy(TokenTransformerPolicy):
    """ViT-T of the LIBERO paper.

    Each camera image is cut into patches that a spatial transformer reads together with a language token;
    its output is down-sampled to one ``embed_size`` token per camera. Each step then holds an action token,
    a language token, the camera tokens and one token per low-dim key, which the temporal transformer reads
    block-causally; the action token's output feeds the GMM head.

    Args:
        cfg: a ``ViTTConfig`` (or a mapping of its keys).
        shape_meta: see ``BasePolicy``.
    """

    config_class = ViTTConfig

    def make_encoder(self, key: str) -> nn.Module:
        c: ViTTConfig = self.cfg
        image_shape = self.shape_meta["image_shape"]
        return ViTEncoder(
            cond_size=c.language_proj_size,
            image_size=(int(image_shape[0]), int(image_shape[1])),
            patch_size=c.patch_size,
            embed_size=c.spatial_embed_size,
            out_size=c.embed_size,
            stem_channels=c.patch_stem_channels,
            num_layers=c.spatial_layers,
            heads=c.spatial_heads,
            head_size=c.spatial_head_size,
            mlp_size=c.spatial_mlp_size,
            dropout=c.spatial_dropout,
            norm=c.patch_norm,
            in_channels=int(image_shape[-1]),
        )
