"""ResNet-RNN: ResNet encoders with FiLM, an LSTM over the steps and a GMM head."""

from libero_ll.policies.resnet_rnn.config import ResNetRNNConfig
from libero_ll.policies.resnet_rnn.model import ResNetRNNPolicy

__all__ = ["ResNetRNNConfig", "ResNetRNNPolicy"]
