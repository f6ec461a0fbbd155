"""ResNet-T: per-camera ResNet encoders with FiLM language conditioning, a causal transformer, a GMM head."""

from __future__ import annotations

from torch import nn

from libero_ll.policies.encoders import ResNetFiLMEncoder
from libero_ll.policies.registry import register_policy
from libero_ll.policies.resnet_t.config import ResNetTConfig
from libero_ll.policies.token_policy import TokenTransformerPolicy


@register_policy("resnet_t")
class ResNetTPolicy(TokenTransformerPolicy):
    """ResNet-T of the LIBERO paper: a FiLM-conditioned ResNet per camera on the shared token transformer.

    Args:
        cfg: a ``ResNetTConfig`` (or a mapping of its keys).
        shape_meta: see ``BasePolicy``.
    """

    config_class = ResNetTConfig

    def make_encoder(self, key: str) -> nn.Module:
        c: ResNetTConfig = self.cfg
        return ResNetFiLMEncoder(
            cond_size=c.language_proj_size,
            embed_size=c.embed_size,
            width=c.encoder_width,
            num_blocks=c.encoder_blocks,
            norm=c.encoder_norm,
            pool=c.encoder_pool,
            num_keypoints=c.num_keypoints,
            stem=c.encoder_stem,
            channels_last=c.encoder_channels_last,
            in_channels=int(self.shape_meta["image_shape"][-1]),
        )
