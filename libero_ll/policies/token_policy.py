"""The shared body of ResNet-T and ViT-T: per-step tokens read by a block-causal transformer, a GMM head.

Each step becomes ``M`` tokens of width ``embed_size``: a learned action token, the language token, one
token per camera (from the architecture's own image encoder) and one per low-dim key. The temporal
transformer reads them block-causally over the window and the action token's output feeds the GMM head.
Low-dim keys listed in ``current_lowdim_keys`` come last and skip the transformer: their embeddings are
added to the action token's output of their own step. With ``language_to_head`` a second projection of the
instruction skips the transformer the same way, so the head reads the task directly. The two policies
differ only in their image encoder (`make_encoder`).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn

from libero_ll.policies.base import BasePolicy
from libero_ll.policies.temporal import TemporalTransformer


class TokenTransformerPolicy(BasePolicy):
    """Base class: subclasses set `config_class` and implement `make_encoder`.

    The config must have embed_size, language_proj_size, extra_embedding_size, the temporal transformer's
    keys (transformer_layers, heads, head_size, mlp_size, dropout, seq_len, position_encoding) and the
    head's (gmm_modes, gmm_hidden, min_std).
    """

    def __init__(self, cfg: Any, shape_meta: Mapping[str, Any]):
        super().__init__(cfg, shape_meta)
        c = self.cfg
        e = c.embed_size
        self.language = nn.Sequential(
            nn.Linear(int(self.shape_meta["task_emb_dim"]), c.language_proj_size),
            nn.ReLU(),
            nn.Linear(c.language_proj_size, c.language_proj_size),
        )
        self.language_token = nn.Linear(c.language_proj_size, e)
        self.head_language = nn.Linear(c.language_proj_size, e) if c.language_to_head else None
        self.action_token = nn.Parameter(torch.randn(e) * 0.02)
        self.encoders = nn.ModuleDict({key: self.make_encoder(key) for key in self.image_keys})
        self.lowdim = nn.ModuleDict(
            {
                key: nn.Sequential(
                    nn.Linear(self.lowdim_size(key), c.extra_embedding_size),
                    nn.ReLU(),
                    nn.Linear(c.extra_embedding_size, e),
                )
                for key in self.lowdim_keys
            }
        )
        self.transformer = TemporalTransformer(
            dim=e,
            num_layers=c.transformer_layers,
            heads=c.heads,
            head_size=c.head_size,
            mlp_size=c.mlp_size,
            dropout=c.dropout,
            max_len=c.seq_len,
            position_encoding=c.position_encoding,
        )
        self.head = self.make_head(e)

    def make_encoder(self, key: str) -> nn.Module:
        """The image encoder of one camera: (N, C, H, W) frames and (N, P) language → (N, embed_size)."""
        raise NotImplementedError

    def encode_steps(self, obs: dict[str, torch.Tensor], task_emb: torch.Tensor) -> torch.Tensor:
        """Tokens (B, T, M, embed_size) in the order: action, language, cameras, low-dim keys (those of
        ``current_lowdim_keys`` last), then the head's language token when ``language_to_head`` is set."""
        b, t = next(iter(obs.values())).shape[:2]
        lang = self.language(task_emb)  # (B, P)
        tokens = [
            self.action_token.expand(b, t, -1),
            self.language_token(lang)[:, None, :].expand(b, t, -1),
        ]
        if self.image_keys:
            cond = lang[:, None, :].expand(b, t, -1).reshape(b * t, -1)
            for key in self.image_keys:
                frames = obs[key].reshape(b * t, *obs[key].shape[2:])
                tokens.append(self.encoders[key](frames, cond).view(b, t, -1))
        current = self.cfg.current_lowdim_keys
        history = [key for key in self.lowdim_keys if key not in current]
        for key in history + current:
            tokens.append(self.lowdim[key](obs[key]))
        if self.head_language is not None:
            tokens.append(self.head_language(lang)[:, None, :].expand(b, t, -1))
        return torch.stack(tokens, dim=2)

    def temporal(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The action token's output at every step plus the embeddings that skip the transformer (the
        current-step-only low-dim keys and the head's language token), (B, T, embed_size)."""
        n_skip = len(self.cfg.current_lowdim_keys) + int(self.head_language is not None)
        if not n_skip:
            return self.transformer(tokens, mask)[:, :, 0]
        seen = tokens[:, :, :-n_skip]
        return self.transformer(seen, mask)[:, :, 0] + tokens[:, :, -n_skip:].sum(dim=2)
