"""Configuration of ResNet-T; the defaults are the paper's values (LIBERO, appendix, table 6)."""

from __future__ import annotations

from dataclasses import dataclass, field

from libero_ll.errors import LiberoError


@dataclass
class ResNetTConfig:
    """Every key of the ``resnet_t`` policy config."""

    # Observation keys fed to the policy: one ResNet encoder per camera, one token per low-dim key.
    image_keys: list[str] = field(default_factory=lambda: ["agentview_rgb", "eye_in_hand_rgb"])
    lowdim_keys: list[str] = field(default_factory=lambda: ["joint_states", "gripper_states"])
    # Width of every token of the temporal transformer (image embeddings included).
    embed_size: int = 64
    # Channels of the encoder's stem and first stage; later stages double it every two blocks.
    encoder_width: int = 64
    # Number of basic residual blocks in each image encoder (stages of two).
    encoder_blocks: int = 4
    # Normalisation in the encoder: "group" (per sample, no running statistics), "batch" or "none".
    encoder_norm: str = "group"
    # Pooling of the last feature map: "spatial_softmax" (soft keypoints) or "avg".
    encoder_pool: str = "spatial_softmax"
    # Keypoint maps of the spatial softmax.
    num_keypoints: int = 32
    # Width of the projected task embedding that conditions FiLM and makes the language token.
    language_proj_size: int = 64
    # Hidden width of the MLP embedding each low-dim input (the paper's extra_info_hidden_size).
    extra_embedding_size: int = 128
    # Layers of the temporal transformer.
    transformer_layers: int = 4
    # Attention heads per layer.
    heads: int = 6
    # Width of each attention head.
    head_size: int = 64
    # Hidden width of each transformer layer's MLP.
    mlp_size: int = 256
    # Dropout probability in the transformer.
    dropout: float = 0.1
    # Steps per training window and the longest history used at run time (the transformer's context).
    seq_len: int = 10
    # Step position encoding: "sinusoidal" or "learned".
    position_encoding: str = "sinusoidal"
    # Components of the Gaussian-mixture head.
    gmm_modes: int = 5
    # Hidden widths of the head's MLP.
    gmm_hidden: list[int] = field(default_factory=lambda: [1024, 1024])
    # Lower bound on every component's standard deviation, in action units.
    min_std: float = 1e-4
    # Random shift of training images (per window).
    augment_shift: bool = True
    # Largest shift in pixels (replicate padding).
    shift_pad: int = 4
    # Colour jitter of training images (per window).
    augment_jitter: bool = True
    # Jitter strengths: brightness, contrast, saturation.
    jitter: list[float] = field(default_factory=lambda: [0.3, 0.3, 0.3])
    # At run time take the mean of the most likely component instead of sampling.
    deterministic_eval: bool = False

    def __post_init__(self) -> None:
        self.image_keys = list(self.image_keys)
        self.lowdim_keys = list(self.lowdim_keys)
        self.gmm_hidden = [int(h) for h in self.gmm_hidden]
        self.jitter = [float(j) for j in self.jitter]
        positive = (
            "embed_size encoder_width encoder_blocks num_keypoints language_proj_size extra_embedding_size "
            "transformer_layers heads head_size mlp_size seq_len gmm_modes"
        ).split()
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise LiberoError(f"resnet_t: {name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise LiberoError(f"resnet_t: dropout must be in [0, 1), got {self.dropout}")
        if self.min_std <= 0:
            raise LiberoError(f"resnet_t: min_std must be positive, got {self.min_std}")
        if self.shift_pad < 0:
            raise LiberoError(f"resnet_t: shift_pad must be ≥ 0, got {self.shift_pad}")
        if len(self.jitter) != 3 or min(self.jitter) < 0:
            raise LiberoError(f"resnet_t: jitter must be 3 non-negative strengths, got {self.jitter}")
        for name, allowed in (
            ("encoder_norm", ("batch", "group", "none")),
            ("encoder_pool", ("avg", "spatial_softmax")),
            ("position_encoding", ("learned", "sinusoidal")),
        ):
            if getattr(self, name) not in allowed:
                raise LiberoError(
                    f"resnet_t: {name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}"
                )
