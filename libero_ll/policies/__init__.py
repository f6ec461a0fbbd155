"""Policies: image encoders, language embeddings, temporal cores (LSTM, causal transformer), the GMM head and
the three architectures of the benchmark (ResNet-RNN, ResNet-T, ViT-T)."""

from libero_ll.policies.base import BasePolicy
from libero_ll.policies.config import PolicyConfig
from libero_ll.policies.flops import policy_flops
from libero_ll.policies.registry import POLICIES, make_policy, register_policy
from libero_ll.policies.resnet_rnn import ResNetRNNConfig, ResNetRNNPolicy
from libero_ll.policies.resnet_t import ResNetTConfig, ResNetTPolicy
from libero_ll.policies.vit_t import ViTTConfig, ViTTPolicy

__all__ = [
    "POLICIES",
    "BasePolicy",
    "PolicyConfig",
    "ResNetRNNConfig",
    "ResNetRNNPolicy",
    "ResNetTConfig",
    "ResNetTPolicy",
    "ViTTConfig",
    "ViTTPolicy",
    "make_policy",
    "policy_flops",
    "register_policy",
]
