"""Configuration of ResNet-T; the defaults are the paper's values (LIBERO, appendix, table 6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from libero_ll.policies.config import ResNetEncoderConfig, TemporalTransformerConfig


@dataclass
class ResNetTConfig(ResNetEncoderConfig, TemporalTransformerConfig):
    """Every key of the ``resnet_t`` policy config (the shared keys are documented in ``PolicyConfig``,
    ``ResNetEncoderConfig`` and ``TemporalTransformerConfig``)."""

    policy_name: ClassVar[str] = "resnet_t"

    # Width of every token of the temporal transformer (image embeddings included).
    embed_size: int = 64
    # Width of the projected task embedding that conditions FiLM and makes the language token.
    language_proj_size: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_positive("embed_size language_proj_size")
