"""Configuration of ResNet-RNN; the defaults are the paper's values (LIBERO, appendix, table 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from libero_ll.policies.config import ResNetEncoderConfig, whole_number


@dataclass
class ResNetRNNConfig(ResNetEncoderConfig):
    """Every key of the ``resnet_rnn`` policy config (the shared keys are documented in ``PolicyConfig``
    and ``ResNetEncoderConfig``)."""

    policy_name: ClassVar[str] = "resnet_rnn"

    # Width of each camera's image embedding (the paper's resnet_image_embed_size).
    embed_size: int = 64
    # Width of the projected task embedding that conditions FiLM and joins the LSTM input (text_embed_size).
    language_proj_size: int = 32
    # Hidden (and cell) state width of every LSTM layer.
    rnn_hidden_size: int = 1024
    # Stacked LSTM layers.
    rnn_layers: int = 2
    # Dropout between LSTM layers (no effect with one layer).
    rnn_dropout: float = 0.0
    # At run time the LSTM restarts from a zero state every this many steps, since training windows start
    # from a zero state and span seq_len steps; null means seq_len, 0 keeps the state for the whole episode.
    rnn_horizon: Optional[int] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_positive(
            "embed_size language_proj_size rnn_hidden_size rnn_layers"
        )
        self.require_fraction("rnn_dropout")
        if self.rnn_horizon is not None:
            if whole_number(self.rnn_horizon) is None or whole_number(self.rnn_horizon) < 0:
                raise self.error(f"rnn_horizon must be null, 0 or a number of steps, got {self.rnn_horizon!r}")
            self.rnn_horizon = whole_number(self.rnn_horizon)

    @property
    def state_horizon(self) -> int:
        """Steps between run-time LSTM restarts; 0 for never."""
        return self.seq_len if self.rnn_horizon is None else int(self.rnn_horizon)
