"""Config keys every policy shares (observations, window, GMM head, augmentation, run-time action) and checks.

Each architecture's config dataclass derives from ``PolicyConfig``, adds its own documented keys and calls
the helpers here to validate them, so a bad value fails with ``<policy>: <key> ...`` before any training.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Iterable

from libero_ll.errors import LiberoError


@dataclass
class PolicyConfig:
    """The keys shared by all policies; the defaults are the paper's values but for the head's floor, min_std
    (0.05 where the paper has 1e-4; why is said where it is defined)."""

    # Name used in error messages (the registry name of the architecture); not a config key.
    policy_name: ClassVar[str] = "policy"

    # Observation keys fed to the policy: one image encoder per camera, one input per low-dim key. A run takes
    # the cameras of the demo files (libero_ll.data.hdf5.IMAGE_KEYS) and the keys of LOWDIM_SIZES there.
    image_keys: list[str] = field(default_factory=lambda: ["agentview_rgb", "eye_in_hand_rgb"])
    lowdim_keys: list[str] = field(default_factory=lambda: ["joint_states", "gripper_states"])
    # Which numbers of a low-dim key the policy reads, by position (from 0): {key: [i, ...]}. A key not
    # named here is read whole (the paper's). With {ee_states: [2, 3, 4, 5]} the policy reads the hand's
    # height and orientation but not where it is over the table, which it must then see in the images
    # (measured in docs/policies.md; no preset uses it).
    lowdim_components: dict[str, list[int]] = field(default_factory=dict)
    # Steps per training window (and, for the transformers, the longest history used at run time).
    seq_len: int = 10
    # Components of the Gaussian-mixture head.
    gmm_modes: int = 5
    # Hidden widths of the head's MLP.
    gmm_hidden: list[int] = field(default_factory=lambda: [1024, 1024])
    # Lower bound on every component's standard deviation, in action units. Not the paper's 1e-4: on a
    # scripted expert's demos the gripper command is exactly -1 or +1 and the rotation commands vary by a
    # few thousandths, so with a floor that low their likelihood grows without bound, their gradients
    # (which scale as 1/std²) swamp the hand's motion, and the mixture never commits to a component
    # (docs/policies.md). 0.05 is above the expert's action noise (0.02): every dimension then gains at
    # most the same amount from precision. Sampled actions carry that much noise: 2.5 mm and 0.025 rad.
    min_std: float = 0.05
    # Random shift of training images (per window).
    augment_shift: bool = True
    # Largest shift in pixels (replicate padding).
    shift_pad: int = 4
    # Standard deviation of a random offset added to the standardised low-dim inputs in training, one offset
    # per window and key (0: none, the paper's). The images are left true, so the policy learns to act on
    # what it sees where the hand's reading is off (docs/policies.md).
    lowdim_noise: float = 0.0
    # Read the task embeddings centred on the mean of the run's instructions and scaled to their spread
    # (`BasePolicy.set_language_stats`; saved with the weights, kept from a pretrained policy) instead of as
    # the encoder gives them (False, the paper's). Instructions that differ by a word or two, as
    # libero_spatial's do, then lose the part they share: with MiniLM and the cpu preset, ER forgot the first
    # libero_spatial task as soon as the second was learnt without it, and kept it with it (docs/policies.md,
    # "Instructions that differ by a word or two").
    standardize_language: bool = False
    # Colour jitter of training images (per window).
    augment_jitter: bool = True
    # Jitter strengths: brightness, contrast, saturation.
    jitter: list[float] = field(default_factory=lambda: [0.3, 0.3, 0.3])
    # At run time take the mean of the most likely component instead of sampling.
    deterministic_eval: bool = False
    # Actions predicted at each step: this step's and the next action_chunk - 1 (1: the paper's). Every
    # predicted action is trained against the demo's; at run time each step executes the mean of the
    # predictions made for it at this and the earlier action_chunk - 1 steps (temporal ensembling).
    action_chunk: int = 1

    def __post_init__(self) -> None:
        self.image_keys = self.string_list("image_keys")
        self.lowdim_keys = self.string_list("lowdim_keys")
        self.gmm_hidden = self._items("gmm_hidden", "whole numbers", whole_number)
        self.jitter = self._items("jitter", "numbers", finite_number)
        self.lowdim_components = self._check_components(self.lowdim_components)
        self.require_positive("seq_len gmm_modes action_chunk")
        self.require_bool("augment_shift augment_jitter deterministic_eval standardize_language")
        if any(h < 1 for h in self.gmm_hidden):
            raise self.error(f"gmm_hidden widths must be at least 1, got {self.gmm_hidden}")
        self.min_std = self.require_number("min_std", above=0.0)
        self.lowdim_noise = self.require_number("lowdim_noise", at_least=0.0)
        self.shift_pad = self.require_whole("shift_pad", at_least=0)
        if len(self.jitter) != 3 or min(self.jitter) < 0:
            raise self.error(f"jitter must be 3 non-negative strengths, got {self.jitter}")

    def _check_components(self, components) -> dict[str, list[int]]:
        """``lowdim_components`` as {key: [int, ...]}: keys among lowdim_keys, each a non-empty list of
        distinct positions ≥ 0 (whether they fit the key's size is checked when the policy is built)."""
        if components is None:
            return {}
        if not hasattr(components, "items"):
            raise self.error(f"lowdim_components must map low-dim keys to lists of positions, got {components!r}")
        out: dict[str, list[int]] = {}
        for key, positions in components.items():
            key = str(key)
            if key not in self.lowdim_keys:
                raise self.error(f"lowdim_components names {key!r}, which is not in lowdim_keys {self.lowdim_keys}")
            if isinstance(positions, (str, bytes)) or not hasattr(positions, "__iter__"):
                raise self.error(f"lowdim_components.{key} must be a list of positions, got {positions!r}")
            try:
                chosen = [int(i) for i in positions]
            except (TypeError, ValueError):
                raise self.error(f"lowdim_components.{key} must be a list of integers, got {list(positions)!r}") from None
            if not chosen:
                raise self.error(f"lowdim_components.{key} is empty; leave {key} out of lowdim_keys instead")
            if min(chosen) < 0 or len(set(chosen)) != len(chosen):
                raise self.error(f"lowdim_components.{key} must be distinct positions from 0, got {chosen}")
            out[key] = chosen
        return out

    # ---- helpers for the architectures' own checks -------------------------------------------------

    def error(self, message: str) -> LiberoError:
        """A LiberoError prefixed with the policy's name."""
        return LiberoError(f"{self.policy_name}: {message}")

    def require_positive(self, names: str) -> None:
        """Check that every key named in the space-separated ``names`` is an integer of at least 1."""
        for name in names.split():
            value = getattr(self, name)
            try:
                whole = not isinstance(value, bool) and int(value) == value
            except (TypeError, ValueError):
                whole = False
            if not whole or int(value) < 1:
                raise self.error(f"{name} must be a whole number of at least 1, got {value!r}")

    def require_fraction(self, names: str) -> None:
        """Check that every key named in ``names`` is a probability in [0, 1) (dropout rates)."""
        for name in names.split():
            value = getattr(self, name)
            try:
                inside = not isinstance(value, bool) and 0.0 <= float(value) < 1.0
            except (TypeError, ValueError):
                inside = False
            if not inside:
                raise self.error(f"{name} must be a number in [0, 1), got {value!r}")

    def require_bool(self, names: str) -> None:
        """Check that every key named in ``names`` is true or false (a quoted "false" is not)."""
        for name in names.split():
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise self.error(f"{name} must be true or false, got {value!r}")

    def require_number(self, name: str, above: float | None = None, at_least: float | None = None) -> float:
        """The key ``name`` as a finite float, checked against a bound; a LiberoError names a bad value."""
        value = getattr(self, name)
        number = finite_number(value)
        if number is None or (above is not None and not number > above) or (
                at_least is not None and not number >= at_least):
            bound = f" above {above:g}" if above is not None else f" of at least {at_least:g}" if (
                at_least is not None) else ""
            raise self.error(f"{name} must be a number{bound}, got {value!r}")
        return number

    def require_whole(self, name: str, at_least: int = 0) -> int:
        """The key ``name`` as an int of at least ``at_least``; a LiberoError names a bad value."""
        value = getattr(self, name)
        whole = whole_number(value)
        if whole is None or whole < at_least:
            raise self.error(f"{name} must be a whole number of at least {at_least}, got {value!r}")
        return whole

    def string_list(self, name: str) -> list[str]:
        """The key ``name`` as a list of names (a bare name, which would be read letter by letter, is not)."""
        value = getattr(self, name)
        if not _is_list(value):
            raise self.error(f"{name} must be a list of names, e.g. [{value!s}], got {value!r}")
        out = []
        for item in value:
            if not isinstance(item, str) or not item:
                raise self.error(f"{name} must be a list of names, got {item!r} in it")
            out.append(item)
        return out

    def _items(self, name: str, what: str, convert) -> list:
        value = getattr(self, name)
        if not _is_list(value):
            raise self.error(f"{name} must be a list of {what}, got {value!r}")
        out = [convert(v) for v in value]
        if any(v is None for v in out):
            raise self.error(f"{name} must be a list of {what}, got {list(value)!r}")
        return out

    def require_choice(self, name: str, allowed: Iterable[str]) -> None:
        """Check that the key ``name`` is one of ``allowed``."""
        allowed = tuple(allowed)
        if getattr(self, name) not in allowed:
            raise self.error(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")


@dataclass
class ResNetEncoderConfig(PolicyConfig):
    """The keys of the FiLM-conditioned ResNet image encoder, shared by ResNet-T and ResNet-RNN."""

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
    # First layer of the encoder: "conv" (5×5 stride-2 convolution, 3×3 stride-2 max pool) or "patch"
    # (a 4×4 stride-4 convolution; the same quarter resolution, cheaper on a CPU).
    encoder_stem: str = "conv"
    # Hold the encoder's weights and feature maps channels-last (faster on a CPU); false keeps PyTorch's
    # default layout, in which a GPU's GroupNorm returns its output. The same function either way.
    encoder_channels_last: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self.require_positive("encoder_width encoder_blocks num_keypoints")
        self.require_choice("encoder_stem", ("conv", "patch"))
        self.require_choice("encoder_norm", ("batch", "group", "none"))
        self.require_choice("encoder_pool", ("avg", "spatial_softmax"))
        self.require_bool("encoder_channels_last")


@dataclass
class TemporalTransformerConfig(PolicyConfig):
    """The keys of the block-causal temporal transformer and the low-dim embeddings, shared by ResNet-T
    and ViT-T (defaults: the paper's)."""

    # Hidden width of the MLP embedding each low-dim input (the paper's extra_info_hidden_size).
    extra_embedding_size: int = 128
    # Layers of the temporal transformer.
    transformer_layers: int = 4
    # Attention heads per temporal layer.
    heads: int = 6
    # Width of each temporal attention head.
    head_size: int = 64
    # Hidden width of each temporal layer's MLP.
    mlp_size: int = 256
    # Dropout probability in the temporal transformer.
    dropout: float = 0.1
    # Step position encoding of the temporal transformer: "sinusoidal" or "learned".
    position_encoding: str = "sinusoidal"
    # Low-dim keys (among lowdim_keys) that the policy sees at the current step only: their embedding is
    # added to the transformer's output for that step instead of being a token of every step in the
    # window. Empty (the paper's): every low-dim key is a token. The history of a hand's position tells
    # the policy its previous actions, and a policy trained on smooth demos then copies them rather than
    # react to what it sees (docs/policies.md).
    current_lowdim_keys: list[str] = field(default_factory=list)
    # Also add a projection of the instruction to the action token's output, next to the transformer, so
    # the head reads the task directly (false: the paper's, where the task reaches the head only through
    # the transformer and the image encoders' FiLM). Without it a policy trained on one task, then another
    # under replay, carried the second task's object to the first task's goal: once an object is in the
    # hand, the pose and the images say little about which task it is (docs/policies.md).
    language_to_head: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.current_lowdim_keys = self.string_list("current_lowdim_keys")
        stray = [k for k in self.current_lowdim_keys if k not in self.lowdim_keys]
        if stray:
            raise self.error(f"current_lowdim_keys {stray} are not in lowdim_keys {self.lowdim_keys}")
        self.require_positive("extra_embedding_size transformer_layers heads head_size mlp_size")
        self.require_fraction("dropout")
        self.require_choice("position_encoding", ("learned", "sinusoidal"))
        self.require_bool("language_to_head")


def finite_number(value) -> float | None:
    """`value` as a finite float (an int, a float, or text of one), or None; true and false are not numbers."""
    import math

    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def whole_number(value) -> int | None:
    """`value` as an int when it is a whole number (2, 2.0), or None (2.5, "abc", true)."""
    number = finite_number(value)
    return int(number) if number is not None and number == int(number) else None


def _is_list(value) -> bool:
    """Whether a config value is a list (a YAML sequence): not a bare word, which iterates letter by letter,
    nor a mapping."""
    return not isinstance(value, (str, bytes)) and hasattr(value, "__iter__") and not hasattr(value, "items")
