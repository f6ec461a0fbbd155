"""Policies: image encoders, language embeddings, a causal temporal core, the GMM head and the architectures."""

from libero_ll.policies.base import BasePolicy
from libero_ll.policies.registry import POLICIES, make_policy, register_policy
from libero_ll.policies.resnet_t import ResNetTConfig, ResNetTPolicy

__all__ = ["POLICIES", "BasePolicy", "ResNetTConfig", "ResNetTPolicy", "make_policy", "register_policy"]
