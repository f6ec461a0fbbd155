"""ResNet-RNN: per-camera ResNet encoders with FiLM language conditioning, an LSTM, a GMM head."""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn

from libero_ll.policies.base import BasePolicy
from libero_ll.policies.encoders import ResNetFiLMEncoder
from libero_ll.policies.registry import register_policy
from libero_ll.policies.resnet_rnn.config import ResNetRNNConfig


def compact_valid_steps(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Index maps that move the valid steps of every window to its front, in order, and back.

    Args:
        mask: (B, T) bool, False on padded steps.

    Returns:
        (order, inverse), both (B, T) int64: ``x.gather(1, order)`` puts the valid steps first and
        ``y.gather(1, inverse)`` restores the original positions.
    """
    # A stable sort on "is padded" keeps the valid steps' order; argsort also works on the meta device.
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)
    return order, torch.argsort(order, dim=1)


def _gather_steps(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return x.gather(1, index[:, :, None].expand(-1, -1, x.shape[-1]))


@register_policy("resnet_rnn")
class ResNetRNNPolicy(BasePolicy):
    """ResNet-RNN of the LIBERO paper (robomimic's BC-RNN with FiLM language conditioning).

    Each step becomes one vector: the camera embeddings, the standardised low-dim inputs and the projected
    task embedding, concatenated. A stacked LSTM reads the valid steps of a window from a zero state; its
    output at every step feeds the GMM head. At run time the LSTM state is carried from step to step.

    Args:
        cfg: a ``ResNetRNNConfig`` (or a mapping of its keys).
        shape_meta: see ``BasePolicy``.
    """

    config_class = ResNetRNNConfig

    def __init__(self, cfg: Any, shape_meta: Mapping[str, Any]):
        super().__init__(cfg, shape_meta)
        c: ResNetRNNConfig = self.cfg
        self.language = nn.Sequential(
            nn.Linear(int(self.shape_meta["task_emb_dim"]), c.language_proj_size),
            nn.ReLU(),
            nn.Linear(c.language_proj_size, c.language_proj_size),
        )
        self.encoders = nn.ModuleDict(
            {
                key: ResNetFiLMEncoder(
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
                for key in self.image_keys
            }
        )
        lowdim_size = sum(self.lowdim_size(k) for k in self.lowdim_keys)
        self.input_size = len(self.image_keys) * c.embed_size + lowdim_size + c.language_proj_size
        self.rnn = nn.LSTM(
            self.input_size,
            c.rnn_hidden_size,
            num_layers=c.rnn_layers,
            batch_first=True,
            dropout=c.rnn_dropout if c.rnn_layers > 1 else 0.0,
        )
        self.head = self.make_head(c.rnn_hidden_size)
        self._state: tuple[torch.Tensor, torch.Tensor] | None = None  # (h, c), each (layers, N, hidden)

    def encode_steps(self, obs: dict[str, torch.Tensor], task_emb: torch.Tensor) -> torch.Tensor:
        """One token per step, (B, T, 1, input_size): cameras, low-dim keys, then the language vector."""
        b, t = next(iter(obs.values())).shape[:2]
        lang = self.language(task_emb)[:, None, :].expand(b, t, -1)  # (B, T, P)
        parts = []
        if self.image_keys:
            cond = lang.reshape(b * t, -1)
            for key in self.image_keys:
                frames = obs[key].reshape(b * t, *obs[key].shape[2:])
                parts.append(self.encoders[key](frames, cond).view(b, t, -1))
        parts += [obs[key] for key in self.lowdim_keys]
        parts.append(lang)
        return torch.cat(parts, dim=-1)[:, :, None, :]

    def temporal(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """LSTM outputs (B, T, rnn_hidden_size); a window's valid steps are read in order from a zero state.

        Padded steps are moved behind the valid ones before the LSTM runs, so a window padded at the
        start of an episode gives exactly what the short history of a fresh rollout gives.
        """
        order, inverse = compact_valid_steps(mask)
        out, _ = self.rnn(_gather_steps(tokens[:, :, 0], order))
        return _gather_steps(out, inverse)

    def reset(self, num_envs: int, env_ids: Any = None) -> None:
        """Forget the rollout history (all envs, or only ``env_ids``): their LSTM state restarts from zero."""
        super().reset(num_envs, env_ids)
        if env_ids is None:
            self._state = None

    def rollout_features(self, new: torch.Tensor) -> torch.Tensor:
        """One LSTM step from the carried state; envs just reset or at a horizon boundary start from zero."""
        steps = self._lengths  # steps taken since each env's last reset
        horizon = self.cfg.state_horizon
        restart = steps == 0 if horizon == 0 else steps % horizon == 0
        n, hidden = new.shape[0], self.cfg.rnn_hidden_size
        if self._state is None:
            zeros = new.new_zeros(self.cfg.rnn_layers, n, hidden)
            state = (zeros, zeros.clone())
        else:
            keep = (~restart).to(new.device, new.dtype)[None, :, None]
            state = (self._state[0] * keep, self._state[1] * keep)
        out, self._state = self.rnn(new[:, :, 0], state)
        self._lengths = steps + 1
        return out[:, -1]
