"""ViT-T: patch-based spatial transformers, a causal temporal transformer and a GMM head."""

from libero_ll.policies.vit_t.config import ViTTConfig
from libero_ll.policies.vit_t.model import ViTTPolicy

__all__ = ["ViTTConfig", "ViTTPolicy"]
