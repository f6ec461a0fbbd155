"""ResNet-T: ResNet encoders with FiLM, a causal temporal transformer and a GMM head."""

from libero_ll.policies.resnet_t.config import ResNetTConfig
from libero_ll.policies.resnet_t.model import ResNetTPolicy

__all__ = ["ResNetTConfig", "ResNetTPolicy"]
